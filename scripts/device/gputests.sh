#!/bin/bash
# On the GPU machine: the CTest gpu-labelled C tests (tests/gpu/test_*.c), run from build/tests
# as CTest would (exit 77 where no GPU is usable). Output in $OUT/gputests: NAME.log, exit.txt.
# Run: bash scripts/device-run.sh scripts/device/gputests.sh (carry build/gpuvet, build/tests/test_*_gpu*, .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/gputests
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
fail=0
for src in tests/gpu/test_*.c; do
	name=$(basename "$src" .c)
	[ -x "build/tests/$name" ] || { echo "$name: not carried" >> "$OUT/exit.txt"; fail=1; continue; }
	timeout 600 "build/tests/$name" > "$OUT/$name.log" 2>&1
	rc=$?
	echo "$name exit $rc" >> "$OUT/exit.txt"
	tail -5 "$OUT/$name.log"
	[ $rc -eq 0 ] || fail=1
done
cat "$OUT/exit.txt"
exit $fail
