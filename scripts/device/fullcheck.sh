#!/bin/bash
# The full check on the GPU machine reads what --fast leaves out: the current clocks, the fan
# (not supported on an H200: said so), the load and the power limit; one run with --json. ~5 s.
#   bash scripts/device-run.sh scripts/device/fullcheck.sh   (build/gpuvet, .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/fullcheck
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
"$G" check --no-history --json > "$OUT/check.json" 2> "$OUT/check.err"
echo "exit $?" > "$OUT/exit.txt"
python3 - "$OUT/check.json" <<'PY' | tee "$OUT/summary.txt"
import json, sys
d = json.load(open(sys.argv[1]))
f = d["facts"]["nvml"]
ok = True
for k in ("sm_clock_mhz", "mem_clock_mhz", "fan_percent", "utilization_gpu", "power_w", "power_limit_w", "clock_event_reasons_text"):
    v = f.get("gpu.0." + k, {})
    good = v.get("state") in ("ok", "unsupported")
    ok &= good
    print("%s gpu.0.%s = %s (%s%s)" % ("PASS" if good else "FAIL", k, v.get("value"), v.get("state"),
          ", " + v["error"] if v.get("error") else ""))
print("findings:", sorted((x["id"], x["severity"]) for x in d.get("findings", [])))
print("all PASS" if ok else "some FAIL")
PY
