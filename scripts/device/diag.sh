#!/bin/bash
# On the GPU machine: gpuvet diag's levels 1 and 2, ten level-1 runs on the healthy GPU (no false
# fail), --inject gemm and --inject memory (each must fail the GPU and say where), the anchors of
# the same call (a torch bf16 GEMM loop with nvidia-smi's power beside it, a torch fill-and-compare),
# and level 3; DIAG_PART=a|b|c picks the part (each fits one device call).
# Output under $OUT/diag. Run: bash scripts/device-run.sh scripts/device/diag.sh
set -u
OUT=${OUT:-/tmp/gpuvet-out}/diag
mkdir -p "$OUT"
G=${GPUVET:-build/gpuvet}
export GPUVET_NO_HISTORY=1 NCCL_NVLS_ENABLE=0
PY=${PYTHON:-python3}
smi() { nvidia-smi --query-gpu=timestamp,power.draw,power.limit,clocks.sm,temperature.gpu,clocks_event_reasons.active --format=csv,noheader -lms 1000 > "$1" 2>&1 & echo $!; }
timed() { local name=$1; shift; local t0=$(date +%s.%N); "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; local rc=$?; local t1=$(date +%s.%N);
	printf '%s rc=%d %.2f s\n' "$name" $rc "$(awk "BEGIN{print $t1-$t0}")" | tee -a "$OUT/summary.txt"; }
case "${DIAG_PART:-a}" in
a) # level 1 ten times on the healthy GPU, the injections, level 2
	timed l1_first "$G" diag -r 1
	for i in 1 2 3 4 5 6 7 8 9 10; do timed l1_$i "$G" diag -r 1 --json; done
	timed inject_gemm "$G" diag -r 1 --inject gemm
	timed inject_memory "$G" diag -r 1 --inject memory
	timed inject_memory_json "$G" diag -r 1 --inject memory --json
	timed l2 "$G" diag -r 2 --json --junit "$OUT/l2.junit.xml"
	timed l2_text "$G" diag -r 2 --test gemm,bandwidth --duration 12
	for f in "$OUT"/l1_[0-9]*.out; do grep -o '"exit_code": *[0-9]*' "$f"; done | sort | uniq -c | tee -a "$OUT/summary.txt"
	;;
b) # the anchors beside diag's power and memory tests, the interrupt
	p=$(smi "$OUT/smi_burn.csv")
	timed anchor_burn $PY scripts/device/torch_burn.py 60 8192
	kill $p
	p=$(smi "$OUT/smi_diagpower.csv")
	timed diag_power "$G" diag --test power --duration 60 --json
	kill $p
	timed anchor_memfill $PY scripts/device/torch_memfill.py 0.95
	timed diag_memory_95 "$G" diag -r 3 --test memory --json
	# SIGINT 5 s into a level 2: the exit status, how long it took to stop, what it printed
	( "$G" diag -r 2 > "$OUT/sigint.out" 2>&1 & pid=$!; sleep 5; t0=$(date +%s.%N); kill -INT $pid; wait $pid; rc=$?; echo "rc=$rc after $(awk "BEGIN{print $(date +%s.%N)-$t0}") s" ) >> "$OUT/sigint.out" 2>&1
	tail -1 "$OUT/sigint.out" | tee -a "$OUT/summary.txt"
	nvidia-smi --query-gpu=memory.used --format=csv | tee -a "$OUT/summary.txt"
	;;
c) # level 3, nvidia-smi sampling power and the SM clock every second beside it
	timed anchor_memfill $PY scripts/device/torch_memfill.py 0.95
	p=$(smi "$OUT/smi_l3.csv")
	timed l3 "$G" diag -r 3 --json --junit "$OUT/l3.junit.xml"
	kill $p
	;;
esac
