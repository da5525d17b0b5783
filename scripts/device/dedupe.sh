#!/bin/bash
# GPU-machine checks of the code the dedupe branch moved into shared helpers: the driver-library
# load (gv_dl_load_driver_lib: open, resolve, required symbols, the real path), the supervised
# first contact (watch, serve, bench), the one table of clock event reasons (names for JSON and
# Prometheus, words for the text view), the sampler's NVML reading conversion (GPU and NVLink
# samples) and stdout muting while a library loads (bench --json).
# Run from the repository root through scripts/device-run.sh (build/ and .devlib/ carried):
#   bash scripts/device-run.sh scripts/device/dedupe.sh
# Changes nothing on the GPU (no clocks, power limits, modes, resets); about 30 s.
# A dry run here with the fakes: GPUVET_NVML_LIB=build/tests/fake/libfake_nvml.so
# GPUVET_CUDA_LIB=build/tests/fake/libfake_cuda.so and an nvidia-smi shim on PATH.
#
# It writes, under $OUT/dedupe/: check.json, check-badcuda.json, watch.json, watch.txt,
# metrics.prom, bench.json (+ .err files), smi-reasons.txt, and summary.txt: one OK/DIFF line
# a check. What it must show:
#   - nvml.library and cuda.library: absolute paths of the files the loader mapped (not the
#     sonames); check (no Python layer) has no fail finding;
#   - GPUVET_CUDA_LIB=<libnvidia-ml's path>: the fact cuda.library in state error, source
#     GPUVET_CUDA_LIB, "PATH: symbol cuInit not found" (the required-symbol path, real library);
#   - watch --once --json: every GPU sampled, no value in state error, every clock event reason
#     one of the nine names, the same set as nvidia-smi's clocks_event_reasons.active mask read
#     just before and after (a DIFF here can be the GPU changing state between the reads);
#   - serve /metrics: gpuvet_gpu_throttle_reason has the nine reason labels per GPU, 1 exactly
#     for the reasons watch named;
#   - bench --quick --only gemm --json: stdout is one JSON document (no library banner in it).
# Exit status: 0 when it ran (DIFF lines are results).
set -u
OUT=${OUT:-/tmp/gpuvet-out}/dedupe
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
G=${GPUVET:-build/gpuvet}

timeout 20 "$G" check --json --no-python > "$OUT/check.json" 2> "$OUT/check.err"
echo "exit $?" >> "$OUT/check.err"
NVML=$(python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["facts"]; print(f.get("nvml",{}).get("library",{}).get("value",""))' "$OUT/check.json" 2>/dev/null)
if [ -n "$NVML" ] && [ -e "$NVML" ]; then
	GPUVET_CUDA_LIB="$NVML" timeout 20 "$G" check --json --no-python > "$OUT/check-badcuda.json" 2> "$OUT/check-badcuda.err"
	echo "exit $?" >> "$OUT/check-badcuda.err"
fi
nvidia-smi --query-gpu=index,clocks_event_reasons.active --format=csv,noheader > "$OUT/smi-reasons.txt" 2>&1
timeout 15 "$G" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch.err"
nvidia-smi --query-gpu=index,clocks_event_reasons.active --format=csv,noheader >> "$OUT/smi-reasons.txt" 2>&1
timeout 15 "$G" watch --once > "$OUT/watch.txt" 2>> "$OUT/watch.err"

: > "$OUT/serve.err"
"$G" serve --listen 127.0.0.1:0 --interval 1 2> "$OUT/serve.err" &
pid=$!
port=""
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve.err")
	[ -n "$port" ] && break
	sleep 0.1
done
sleep 2
[ -n "$port" ] && python3 -c 'import sys,urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=10).read())' \
	"http://127.0.0.1:$port/metrics" > "$OUT/metrics.prom" 2>> "$OUT/serve.err"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

timeout 25 "$G" bench --quick --only gemm --dtypes bf16 --json --no-history > "$OUT/bench.json" 2> "$OUT/bench.err"
echo "exit $?" >> "$OUT/bench.err"

python3 - "$OUT" "$NVML" <<'PY' | tee "$OUT/summary.txt"
import json, os, re, sys
out, nvml = sys.argv[1], sys.argv[2]
NAMES = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown", "sync_boost",
         "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "display_clock_setting"]
def line(ok, what, detail=""):
    print("%s %s%s" % ("OK  " if ok else "DIFF", what, ": " + str(detail) if detail else ""))
def fact(facts, key):
    top, _, rest = key.partition(".")
    return facts.get(top, {}).get(rest, {})
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        line(False, name + " is JSON", e)
        return None
c = load("check.json")
if c:
    f = c.get("facts", {})
    for k in ("nvml.library", "cuda.library"):
        v = str(fact(f, k).get("value", ""))
        line(v.startswith("/") and os.path.exists(v), k + " is the file mapped", v)
    fails = [x["id"] for x in c.get("findings", []) if x.get("severity") == "fail"]
    line(not fails, "check: no fail finding", fails)
b = load("check-badcuda.json") if os.path.exists(os.path.join(out, "check-badcuda.json")) else None
if b:
    lib = fact(b["facts"], "cuda.library")
    line(lib.get("source") == "GPUVET_CUDA_LIB" and lib.get("state") == "error", "GPUVET_CUDA_LIB chose the file", lib)
    line(lib.get("error") == nvml + ": symbol cuInit not found", "a library without cuInit: 'PATH: symbol cuInit not found'",
         lib.get("error"))
w = load("watch.json")
smi = {}
for l in open(os.path.join(out, "smi-reasons.txt")):
    p = [x.strip() for x in l.split(",")]
    if len(p) == 2 and p[1].startswith("0x"):
        smi.setdefault(int(p[0]), set()).add(int(p[1], 16))
wnames = {}
if w:
    for g in w.get("gpus", []):
        i = g.get("index")
        errs = [k for k, v in g.items() if isinstance(v, dict) and v.get("state") == "error"]
        r = g.get("clock_event_reasons", [])
        wnames[i] = set(r)
        line(all(x in NAMES for x in r), "watch gpu %s reasons are known names" % i, r)
        masks = [{NAMES[b] for b in range(9) if m & (1 << b)} for m in smi.get(i, set())]
        line(set(r) in masks, "watch gpu %s reasons match nvidia-smi's mask" % i, "%s vs %s" % (sorted(r), masks))
        line(not errs and not g.get("lost"), "watch gpu %s sampled without errors" % i, errs)
        line("nvlink" in g, "watch gpu %s has its nvlink object" % i, g.get("nvlink"))
WORDS = ["idle", "application clocks setting", "power cap", "hardware slowdown", "sync boost",
         "software thermal slowdown", "hardware thermal slowdown", "power brake", "display clock setting"]
for l in open(os.path.join(out, "watch.txt")):
    if "clocks held back by: " in l:
        words = l.split("clocks held back by: ", 1)[1].strip().split(", ")
        line(all(x in WORDS or x.startswith("other (0x") for x in words), "watch text: reasons in words", words)
try:
    prom = open(os.path.join(out, "metrics.prom")).read()
except Exception as e:
    prom = ""
rows = re.findall(r'^gpuvet_gpu_throttle_reason\{([^}]*)\} (\S+)', prom, re.M)
per = {}
for labels, v in rows:
    gpu = re.search(r'gpu="([^"]*)"', labels)
    reason = re.search(r'reason="([^"]*)"', labels)
    if gpu and reason:
        per.setdefault(gpu.group(1), {})[reason.group(1)] = float(v)
line(bool(per), "serve: gpuvet_gpu_throttle_reason present", len(rows))
for gpu, d in sorted(per.items()):
    line(sorted(d) == sorted(NAMES), "serve gpu %s: the nine reason labels" % gpu, sorted(d))
    on = {k for k, v in d.items() if v == 1}
    if gpu.isdigit() and int(gpu) in wnames:
        line(on == wnames[int(gpu)] or "gpu_idle" in on ^ wnames[int(gpu)],
             "serve gpu %s: reasons at 1 as watch named them (seconds apart)" % gpu, sorted(on))
bj = load("bench.json")
line(bj is not None, "bench --json stdout is one JSON document")
PY
exit 0
