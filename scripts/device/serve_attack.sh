#!/bin/sh
# On the GPU machine: the exporter under attack with the real NVML, and gpuvet tune killed by
# SIGKILL with the real PyTorch probe on the GPU.
#  1. tests/integration/test_serve_attack.py with GPUVET_ATTACK_REAL_NVML=1: idle, trickling
#     and non-reading clients (bounded, 127.0.0.1 only) while a scraper asks 20 times a second;
#     >= 99% of the scrapes answered within 1 s, descriptors back afterwards (its figures are in
#     the log: scrapes answered, p99, fds and RSS before/peak/after).
#  2. gpuvet tune --models mlp --budget 60 started, killed by SIGKILL once its probe holds the
#     GPU: the probe must be gone within 10 s (nvidia-smi --query-compute-apps lists it no more)
#     and its $TMPDIR/gpuvet-tune-* directory must be removed by the next gpuvet tune.
# Needs build/ and .devlib/ carried; python3 with torch on the GPU machine for part 2 (skipped
# without). Talks to 127.0.0.1 only; changes no clocks, limits or modes. Logs under $OUT/serve_attack.
#   bash scripts/device-run.sh scripts/device/serve_attack.sh
set -u
OUT=${OUT:-/tmp/gpuvet-out}/serve_attack
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
G=${GPUVET:-./build/gpuvet}
status=0

# --- 1. the exporter under attack, real NVML
GPUVET_ATTACK_REAL_NVML=1 timeout 150 python3 tests/integration/test_serve_attack.py "$G" real > "$OUT/attack.txt" 2>&1
rc=$?
echo "attack test exit $rc" | tee -a "$OUT/verdict.txt"
[ $rc = 0 ] || status=1
grep -E "scrapes answered|^ok|^FAIL" "$OUT/attack.txt"

# --- 2. tune killed by SIGKILL
if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
	echo "tune kill: skipped (no python3 with CUDA torch)" | tee -a "$OUT/verdict.txt"
	exit $status
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/gpuvet-attack-tmp.XXXXXX")
TMPDIR=$T "$G" tune --models mlp --budget 60 --python python3 > "$OUT/tune-killed.out" 2> "$OUT/tune-killed.err" &
tpid=$!
probe=""
for _ in $(seq 1 120); do # up to 60 s for torch to import and take the GPU
	probe=$(pgrep -P $tpid | head -1)
	if [ -n "$probe" ] && nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$probe"; then
		break
	fi
	sleep 0.5
done
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$OUT/apps-before-kill.csv" 2>&1
ls -la "$T" > "$OUT/tmp-before-kill.txt" 2>&1
echo "tune pid $tpid probe pid ${probe:-none}" >> "$OUT/verdict.txt"
kill -KILL $tpid
wait $tpid 2>/dev/null
gone=no
for _ in $(seq 1 20); do
	if ! kill -0 "$probe" 2>/dev/null && ! nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$probe"; then
		gone=yes
		break
	fi
	sleep 0.5
done
nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv > "$OUT/apps-after-kill.csv" 2>&1
echo "probe gone within 10 s of SIGKILL: $gone" | tee -a "$OUT/verdict.txt"
[ "$gone" = yes ] || { status=1; kill -KILL "$probe" 2>/dev/null; }
left=$(ls "$T" | grep -c '^gpuvet-tune-')
echo "directories left by the killed run: $left" | tee -a "$OUT/verdict.txt"
TMPDIR=$T timeout 120 "$G" tune --models mlp --budget 10 --python python3 > "$OUT/tune-next.out" 2> "$OUT/tune-next.err"
echo "next tune exit $?" >> "$OUT/verdict.txt"
after=$(ls "$T" | grep -c '^gpuvet-tune-')
echo "directories left after the next run: $after" | tee -a "$OUT/verdict.txt"
[ "$left" -ge 1 ] && [ "$after" = 0 ] || status=1
rm -rf "$T"
exit $status
