echo "epoch 0: loading data"
echo "Traceback (most recent call last):" >&2
echo "RuntimeError: No CUDA GPUs are available" >&2
exit 1
