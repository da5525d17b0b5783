#!/bin/bash
# The health values that the field-values batch reads (src/nvidia/nvml.c, snap_batch) through
# serve's and watch's sampler on the GPU machine, against nvidia-smi in the same run: ECC mode and
# totals, remapped rows, retired pages, PCIe replays. ~5 s; changes nothing of the GPU.
#   bash scripts/device-run.sh scripts/device/healthbatch.sh     (build/gpuvet and .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/healthbatch
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
export GPUVET_NO_HISTORY=1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi --query-gpu=index,ecc.mode.current,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,ecc.errors.corrected.aggregate.total,ecc.errors.uncorrected.aggregate.total,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending,remapped_rows.failure,retired_pages.pending --format=csv > "$OUT/smi.csv" 2>&1
nvidia-smi -q -d ECC,PAGE_RETIREMENT,ROW_REMAPPER > "$OUT/smi-q.txt" 2>&1
D=$(mktemp -d)
"$G" serve --textfile "$D" --once --interval 1 > "$OUT/serve.out" 2> "$OUT/serve.err"
echo "serve exit $?" >> "$OUT/serve.err"
cat "$D"/*.prom > "$OUT/metrics.prom" 2>/dev/null
grep -E "^gpuvet_gpu_(ecc|remap|retired|pcie_replay)|^gpuvet_finding" "$OUT/metrics.prom" > "$OUT/health-series.txt"
"$G" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch.err"
python3 - "$OUT/watch.json" > "$OUT/watch-health.txt" 2>&1 <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def walk(x, path=""):
    if isinstance(x, dict):
        for k, v in x.items():
            walk(v, path + "." + k if path else k)
    elif isinstance(x, list):
        for i, v in enumerate(x):
            walk(v, "%s[%d]" % (path, i))
    elif any(t in path for t in ("ecc", "remap", "retired", "replay")):
        print(path, x)
walk(d)
PY
cat "$OUT/smi.csv" "$OUT/health-series.txt" "$OUT/watch-health.txt" "$OUT/serve.err" | head -60
grep -A12 -i "^    ECC Errors\|Remapped Rows" "$OUT/smi-q.txt" | head -40
exit 0
