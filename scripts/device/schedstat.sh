#!/bin/bash
# Whether the GPU machine's kernel keeps schedstats (the job doctor's CPU demand: on-CPU + waiting
# from /proc/PID/task/TID/schedstat; without them, voluntary_ctxt_switches): a spinning thread's
# schedstat and status over one second. Output under $OUT/schedstat.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/schedstat
mkdir -p "$OUT"
python3 -c "while True: pass" & p=$!
sleep 0.2
{ cat /proc/$p/schedstat; grep ctxt /proc/$p/status; sleep 1; cat /proc/$p/schedstat; grep ctxt /proc/$p/status
  cat /proc/sys/kernel/sched_schedstats 2>&1; uname -r; } > "$OUT/spin.txt" 2>&1
kill $p
cat "$OUT/spin.txt"
