# Eight ranks of a training job, and the GPU under rank 1 fell off the bus: every rank prints the
# same CUDA error, then NCCL's.
echo "epoch 3: step 1200"
for r in 0 1 2 3 4 5 6 7; do
	echo "[rank$r]: RuntimeError: CUDA error: an illegal memory access was encountered" >&2
	echo "[rank$r]: CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect." >&2
done
for r in 0 2 3; do
	echo "[rank$r]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5" >&2
done
exit 1
