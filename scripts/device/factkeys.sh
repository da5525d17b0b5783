#!/bin/sh
# GPU-side check of the fact-key registry (src/core/factkeys.def; run on the GPU machine by the
# integrator, see /work/shared/device.md). The scenario suite holds every fake machine to the
# registry; this holds a real one: an H200 with NVLink fields, GPM, MIG modes, fabric state, a
# live PyTorch, which write keys no fake does. Needs build/gpuvet built on the CI image, and the
# libraries of .devlib/ when the machine lacks them. Writes everything under $OUT; about 30 s.
#
# What it must show:
#  - unknown-keys.txt empty: no fact gpuvet put or read (check with the live Python probe, check
#    --fast, watch --once, bench --quick's facts when it runs) has a key the registry lacks or a
#    value of another type than the registry's. Each line names one, with the registry's entry.
#  - summary.txt: the number of facts of check.json, and how many distinct registry entries
#    they are instances of (a real machine should reach most nvml.* and python.live.* entries).
set -u
OUT=${OUT:-/tmp/gpuvet-factkeys}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-./build/gpuvet}
LOG="$OUT/unknown-keys.txt"
: > "$LOG"
export GPUVET_FACT_KEYS_LOG="$LOG"

timeout 30 "$G" check --json > "$OUT/check.json" 2> "$OUT/check.stderr"
echo "check exit $?" >> "$OUT/check.stderr"
timeout 15 "$G" check --fast --json > "$OUT/check-fast.json" 2>> "$OUT/check.stderr"
echo "check --fast exit $?" >> "$OUT/check.stderr"
timeout 10 "$G" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch.stderr"
echo "watch exit $?" >> "$OUT/watch.stderr"

python3 - "$OUT" <<'PY'
import json, os, sys
out = sys.argv[1]
sys.path.insert(0, "scripts")
import factkeys
try:
    doc = json.load(open(os.path.join(out, "check.json")))
except Exception as e:
    print("check.json does not parse: %s" % e)
    sys.exit(0)
keys = []
for layer, group in doc.get("facts", {}).items():
    for rest in group:
        keys.append(layer + "." + rest)
entries, _, _ = factkeys.load_registry(".")
reg = factkeys.Registry(entries)
hit = {}
for k in keys:
    e = reg.lookup_key(k)
    if e:
        hit[e["name"]] = hit.get(e["name"], 0) + 1
with open(os.path.join(out, "summary.txt"), "w") as s:
    s.write("facts in check.json: %d, instances of %d of the registry's %d entries\n" % (len(keys), len(hit), len(entries)))
    for layer in ("nvml", "cuda", "python", "topology", "devices"):
        n = sum(1 for e in entries if e["pattern"].startswith(layer + "."))
        h = sum(1 for e in entries if e["pattern"].startswith(layer + ".") and e["name"] in hit)
        s.write("  %s: %d of %d entries\n" % (layer, h, n))
    s.write("layers: %s\n" % ", ".join(sorted(doc.get("facts", {}))))
PY
sort "$LOG" | uniq -c | sort -rn > "$OUT/unknown-keys-counted.txt"
echo "unknown or mistyped fact keys: $(sort -u "$LOG" | wc -l) (unknown-keys.txt must be empty)"
cat "$OUT/summary.txt" 2>/dev/null
head -40 "$OUT/unknown-keys-counted.txt"
