#!/bin/sh
# On the GPU machine: a history made of real runs (check, a quick bench, a short tune, a watch
# --record while a bf16 GEMM load and then an idle spell run), then `gpuvet report` from it and
# from the JSON documents, so that the page can be looked at (a screenshot is taken here, with
# chromium, from the HTML that comes back; the machine has no browser).
# Run it through scripts/device-run.sh (carry build, .devlib):
#   bash scripts/device-run.sh scripts/device/report.sh
# About 2.5 minutes. Writes under $OUT/report: history.db, check.json, bench.json, tune.json,
# report.html (from the history), report-docs.html (from the documents), log.txt.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/report
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET_DB="$OUT/history.db"
G=${GPUVET:-./build/gpuvet}
PY=${PYTHON:-python3}
log() { echo "[$(date -u +%T)] $*" | tee -a "$OUT/log.txt"; }

log "check"
"$G" check > "$OUT/check.txt" 2>&1; log "check exit $?"
"$G" check --json --no-history > "$OUT/check.json" 2>>"$OUT/log.txt"
log "bench --quick"
"$G" bench --quick --json > "$OUT/bench.json" 2>>"$OUT/log.txt"; log "bench exit $?"
log "tune (short: resnet50 and bert, no CPU steps, no DataLoader test)"
"$G" tune --models resnet50,bert --no-cpu --no-pipeline --no-ddp --budget 75 --json -q > "$OUT/tune.json" 2>>"$OUT/log.txt"
log "tune exit $?"
log "watch --record over 12 s of bf16 GEMMs, then 6 s idle"
"$PY" - > "$OUT/load.txt" 2>&1 <<'PY' &
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 12:
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
print("load done")
PY
load=$!
"$G" watch --record --interval 0.5 --count 36 > "$OUT/watch.txt" 2>&1; log "watch exit $?"
wait $load
log "report"
"$G" report -o "$OUT/report.html" >> "$OUT/log.txt" 2>&1; log "report exit $?"
"$G" report --json "$OUT/check.json" --json "$OUT/bench.json" --json "$OUT/tune.json" \
	-o "$OUT/report-docs.html" >> "$OUT/log.txt" 2>&1; log "report (documents) exit $?"
"$G" history list >> "$OUT/log.txt" 2>&1
ls -la "$OUT" >> "$OUT/log.txt"
