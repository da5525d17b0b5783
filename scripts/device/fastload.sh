#!/bin/bash
# check --fast on a loaded GPU and on an idle one (issue 24, item 7): --fast asks the load
# (utilization, power draw, enforced limit) only where a verdict reads it. Under a torch bf16 GEMM
# loop (scripts/device/torch_burn.py) the H200 runs at its power cap, so the clock reasons show
# sw_power_cap and --fast must ask the load and judge the cap (busy: info, not a warning); idle,
# it must leave the load out. The current clocks the same way: asked only where the reasons show
# a slowdown or the cap; the fan never. Three runs each, GPUVET_TRACE on, beside nvidia-smi's
# reading. ~30 s.
#   bash scripts/device-run.sh scripts/device/fastload.sh     (build/gpuvet and .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/fastload
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
one() { # $1: label, $2: run number
	local t="$OUT/$1-$2.trace"
	GPUVET_TRACE=$t "$G" check --fast --no-history --json > "$OUT/$1-$2.json" 2> "$OUT/$1-$2.err"
	nvidia-smi --query-gpu=utilization.gpu,power.draw,enforced.power.limit,clocks_event_reasons.active --format=csv,noheader >> "$OUT/$1.smi.csv" 2>&1
}
for i in 1 2 3; do one idle-before $i; done
$PY scripts/device/torch_burn.py 20 8192 > "$OUT/burn.json" 2> "$OUT/burn.err" &
BURN=$!
sleep 6
for i in 1 2 3; do one loaded $i; sleep 1; done
wait $BURN
sleep 3
for i in 1 2 3; do one idle-after $i; done
python3 - "$OUT" <<'PY' | tee "$OUT/summary.txt"
import glob, json, os, sys
out = sys.argv[1]
ok = True
for label in ("idle-before", "loaded", "idle-after"):
    for i in (1, 2, 3):
        try:
            d = json.load(open("%s/%s-%d.json" % (out, label, i)))
        except Exception as e:
            print("FAIL %s-%d: no JSON (%s)" % (label, i, e)); ok = False; continue
        f = d["facts"]["nvml"]
        g = lambda k: f.get("gpu.0." + k, {})
        lines = [l.split(None, 2)[2].rsplit(" ", 1)[0] for l in open("%s/%s-%d.trace" % (out, label, i))]
        trace = [t for t in lines if " load (" in t]
        asked = any("asked" in t for t in trace)
        clk_trace = [t for t in lines if " clocks (" in t]
        clk_asked = any("asked" in t for t in clk_trace)
        thr = [x for x in d.get("findings", []) if x.get("id") == "gpu.throttled"]
        line = "%s-%d: reasons %s, utilization %s (%s), power %s W, limit %s W, sm clock %s (%s), fan %s; trace %s %s; gpu.throttled %s" % (
            label, i, g("clock_event_reasons_text").get("value"), g("utilization_gpu").get("value"),
            g("utilization_gpu").get("state", "ok"), g("power_w").get("value"), g("power_limit_w").get("value"),
            g("sm_clock_mhz").get("value"), g("sm_clock_mhz").get("state", "ok"), g("fan_percent").get("state", "ok"),
            trace, clk_trace, [x.get("severity") for x in thr] or "none")
        capped = "sw_power_cap" in str(g("clock_event_reasons_text").get("value"))
        slow_link = (g("pcie_gen_current").get("value") or 0) < (g("pcie_gen_max").get("value") or 0)
        needs = capped or slow_link or g("clock_event_reasons").get("state", "ok") != "ok"
        present = g("utilization_gpu").get("state", "ok") == "ok" and g("power_limit_w").get("state", "ok") == "ok"
        bad = int(g("clock_event_reasons").get("value") or 0) & (0x8 | 0x20 | 0x40 | 0x80)
        clk_needs = capped or bool(bad) or g("clock_event_reasons").get("state", "ok") != "ok"
        clk_present = g("sm_clock_mhz").get("state", "ok") == "ok"
        good = (asked == needs and present == asked and not [x for x in thr if x.get("severity") != "info"] and
                clk_trace and clk_asked == clk_needs and clk_present == clk_asked and
                g("fan_percent").get("state") == "absent")
        if label == "loaded" and not capped:
            line += "  (no power cap seen: the load was not needed)"
        print(("PASS " if good else "FAIL ") + line)
        ok &= good
print("all PASS" if ok else "some FAIL")
PY
cat "$OUT"/*.smi.csv > "$OUT/smi-all.txt"
cat "$OUT/burn.json"
exit 0
