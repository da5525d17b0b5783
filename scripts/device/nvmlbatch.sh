#!/bin/bash
# One nvmlDeviceGetFieldValues batch against the calls check --fast makes one by one for the same
# values (issue 24, item 7): scripts/device/nvml_batch.c built here, eight interleaved rounds of
# each in fresh processes (the first a warm-up), every line kept; and the dynamic loader's share of
# gpuvet's start-up (LD_DEBUG=statistics, gpuvet --version). ~5 s.
#   bash scripts/device-run.sh scripts/device/nvmlbatch.sh      (build/ and .devlib/ carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvmlbatch
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
B=$(mktemp -d /tmp/gpuvet-nb.XXXXXX)
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
if ! gcc -O2 -I"$CUDA_INC" -o "$B/nvml_batch" scripts/device/nvml_batch.c -L/usr/lib/x86_64-linux-gnu -l:libnvidia-ml.so.1 2> "$OUT/build.txt"; then
	cat "$OUT/build.txt"
	exit 1
fi
for r in 0 1 2 3 4 5 6 7; do
	for m in calls batch; do
		echo "== round $r"
		"$B/nvml_batch" $m
	done
done > "$OUT/batch.txt" 2>&1
grep -E "^(calls|batch):" "$OUT/batch.txt" | tail -14
sed -n '/round 7/,$p' "$OUT/batch.txt"
for i in 1 2 3; do LD_DEBUG=statistics "$G" --version 2>&1 | grep -E "total startup|relocation:|load objects"; done > "$OUT/ld-stats.txt"
cat "$OUT/ld-stats.txt"
grep -m1 "MHz" /proc/cpuinfo >> "$OUT/ld-stats.txt"
exit 0
