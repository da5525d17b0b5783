#!/bin/sh
# End-to-end check of the fatbin reader on code nvcc compiles now (not a committed fixture):
# a site-packages tree whose torch/lib/libtorch_cuda.so carries sm_80, sm_90a and compute_90, and
# an extension with the same code; gpuvet must report exactly those architectures.
# usage: nvcc_fatbin_test.sh GPUVET   (exit 77 when nvcc is not installed)
set -eu
gpuvet=$1
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$NVCC" ] || { echo "nvcc not found: skipped"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'extern "C" __global__ void k(float *a) { a[threadIdx.x] *= 2.0f; }\n' > "$tmp/k.cu"
site="$tmp/root/venv/lib/python3.12/site-packages"
mkdir -p "$site/torch/lib" "$site/myext" "$tmp/root/venv/bin"
printf 'home = /usr/bin\nversion = 3.12.3\n' > "$tmp/root/venv/pyvenv.cfg"
printf '#!/bin/sh\nexit 0\n' > "$tmp/root/venv/bin/python3"
chmod +x "$tmp/root/venv/bin/python3"
printf "__version__ = '2.11.0+cu130'\ncuda = '13.0'\n" > "$site/torch/version.py"
"$NVCC" -shared -Xcompiler -fPIC -cudart none -o "$site/torch/lib/libtorch_cuda.so" "$tmp/k.cu" \
	-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_90,code=compute_90
cp "$site/torch/lib/libtorch_cuda.so" "$site/myext/_C.so"   # one nvcc run: it takes seconds
out=$(GPUVET_NO_HISTORY=1 VIRTUAL_ENV=/venv PATH=/usr/bin:/bin "$gpuvet" --root "$tmp/root" check --json --no-python | tr -d '\n\t' || true)
fail=0
want() {
	if printf '%s' "$out" | grep -q "$1"; then echo "ok: $1"; else echo "not ok: $1"; fail=1; fi
}
want '"torch.arch":{"value":"sm_80 sm_90a compute_90"'
want '"ext.0.arch":{"value":"sm_80 sm_90a compute_90"'
want '"ext.0.package":{"value":"myext"'
[ $fail = 0 ] || printf '%s\n' "$out" | head -c 4000
exit $fail
