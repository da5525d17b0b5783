#!/bin/bash
# gpuvet run and gpuvet explain on the GPU machine (run through scripts/device-run.sh), around
# real PyTorch scripts that fail. What it must show:
#   (a) CUDA_VISIBLE_DEVICES hiding the GPU ("" and -1): the script's own traceback passes through
#       unchanged, its exit status is kept (1), and the explanation recognises torch.no-cuda-gpus
#       (or torch.cuda-unknown-error) with env.visible-devices as the cause that holds;
#   (b) an extension built with torch.utils.cpp_extension.load_inline for sm_80 only
#       (TORCH_CUDA_ARCH_LIST=8.0) on the H200 (9.0): "no kernel image is available" is recognised
#       (cuda.no-kernel-image); ext.arch-missing holds (the module under TORCH_EXTENSIONS_DIR
#       carries sm_80 only) and so does env.arch-list (the variable lacks 9.0);
#       torch.arch-unsupported is ruled out (torch 2.11 covers sm_90);
#   (c) the log of (b) piped into `gpuvet explain -` and `--json` in a shell without
#       TORCH_CUDA_ARCH_LIST: ext.arch-missing holds, env.arch-list is ruled out;
#   (b') without ninja (load_inline needs it), the same fault through nvcc -arch=sm_80 and ctypes:
#       a kernel library for sm_80 only whose launch error the script raises (RuntimeError: CUDA
#       error: no kernel image ...): cuda.no-kernel-image recognised; env.arch-list holds;
#   (d) a 40 s matmul loop under `gpuvet run --min-seconds 20`: exit 0, no explanation, and the
#       utilization verdict for GPU 0 (busy); (e) a 40 s loop that mostly sleeps: the verdict says
#       the GPU waited (under 70%).
# It changes no GPU setting; the faults are environment variables and an extension built here.
set -u
G=${GPUVET:-build/gpuvet}
OUT=${OUT:-/tmp/gpuvet-out}
PY=$(command -v python3)
export NCCL_NVLS_ENABLE=0
W=$(mktemp -d /tmp/gpuvet-explain.XXXXXX)
trap 'rm -rf "$W"' EXIT
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
"$PY" -c "import torch; print('torch', torch.__version__, torch.version.cuda, torch.cuda.get_arch_list())"

cat >"$W/cuda_hidden.py" <<'PY'
import torch
print("cuda available:", torch.cuda.is_available(), flush=True)
x = torch.zeros(4).cuda()
print(x)
PY
for cvd in "" "-1"; do
	echo
	echo "== (a) CUDA_VISIBLE_DEVICES='$cvd' gpuvet run -- python3 cuda_hidden.py"
	CUDA_VISIBLE_DEVICES="$cvd" "$G" run --no-watch -- "$PY" "$W/cuda_hidden.py"
	echo "exit $?"
done

cat >"$W/wrong_arch.py" <<'PY'
import os, torch
from torch.utils.cpp_extension import load_inline
cuda_src = r"""
__global__ void add_one(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += 1.0f; }
void run(torch::Tensor x) {
    add_one<<<(x.numel() + 255) / 256, 256>>>(x.data_ptr<float>(), (int)x.numel());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""
cpp_src = "void run(torch::Tensor x);"
m = load_inline(name="gpuvet_wrong_arch", cpp_sources=cpp_src, cuda_sources=cuda_src, functions=["run"],
                extra_include_paths=[], verbose=False,
                extra_cuda_cflags=["-include", "c10/cuda/CUDAException.h"])
x = torch.zeros(1024, device="cuda")
m.run(x)
torch.cuda.synchronize()
print("sum", x.sum().item())
PY
echo
echo "== (b) TORCH_CUDA_ARCH_LIST=8.0 gpuvet run -- python3 wrong_arch.py (extension for sm_80 on sm_90)"
export TORCH_EXTENSIONS_DIR="$W/ext"
TORCH_CUDA_ARCH_LIST=8.0 "$G" run --no-watch -- "$PY" "$W/wrong_arch.py" 2>&1 | tee "$W/wrong_arch.log"
echo "exit ${PIPESTATUS[0]}"
echo "extension built for:"
find "$W/ext" -name '*.so' -exec sh -c 'cuobjdump --list-elf "$1" 2>/dev/null | head -3' _ {} \;

echo
echo "== (c) the log of (b) through gpuvet explain - and --json, TORCH_CUDA_ARCH_LIST unset"
env -u TORCH_CUDA_ARCH_LIST "$G" explain - <"$W/wrong_arch.log" | head -40
env -u TORCH_CUDA_ARCH_LIST "$G" explain --json --file "$W/wrong_arch.log" >"$OUT/explain-wrong-arch.json"
echo "exit $?"
"$PY" - "$OUT/explain-wrong-arch.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
for e in d["errors"]:
    print(e["signature"], "line", e["line"], "holds", e["holds"])
    for c in e["causes"]:
        print("   ", c["id"], c["state"], (c.get("why") or c.get("finding", {}).get("title", ""))[:160])
print("check ran:", d["check_ran"])
PYEOF

echo
echo "== (b') nvcc -arch=sm_80 kernel library loaded with ctypes, on the H200"
cat >"$W/k.cu" <<'CU'
#include <cuda_runtime.h>
__global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }
extern "C" const char *run(void)
{
	float *d = 0;
	cudaMalloc(&d, 256 * sizeof(float));
	add_one<<<1, 256>>>(d);
	cudaError_t e = cudaGetLastError();
	cudaFree(d);
	return e == cudaSuccess ? 0 : cudaGetErrorString(e);
}
CU
if nvcc -arch=sm_80 -shared -Xcompiler -fPIC -o "$W/libk.so" "$W/k.cu" 2>"$W/nvcc.err"; then
	cat >"$W/ctypes_arch.py" <<'PY'
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
lib.run.restype = ctypes.c_char_p
err = lib.run()
if err:
    raise RuntimeError("CUDA error: " + err.decode())
print("kernel ran")
PY
	TORCH_CUDA_ARCH_LIST=8.0 "$G" run --no-watch -- "$PY" "$W/ctypes_arch.py" "$W/libk.so"
	echo "exit $?"
else
	echo "nvcc failed:"; cat "$W/nvcc.err"
fi

cat >"$W/busy.py" <<'PY'
import sys, time, torch
mode = sys.argv[1]
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t0 = time.time()
while time.time() - t0 < 40:
    if mode == "busy":
        for _ in range(20):
            a = (a @ a).clamp_(-1, 1)
        torch.cuda.synchronize()
    else:
        (a @ a).sum().item()
        time.sleep(0.5)
print("done", mode)
PY
for mode in busy idle; do
	echo
	echo "== ($([ $mode = busy ] && echo d || echo e)) gpuvet run --min-seconds 20 -- python3 busy.py $mode"
	"$G" run --min-seconds 20 -- "$PY" "$W/busy.py" $mode
	echo "exit $?"
done
