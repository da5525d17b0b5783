#!/bin/bash
# On the GPU machine (one H200 is enough): the last two of dcgm-exporter's default counters that
# NVML can give, against nvidia-smi in the same run, and the time a whole `bench --quick` takes
# now that every GEMM and bandwidth test carries its GPM evidence. About 90 s; changes nothing
# of the GPU.
#  - DCGM_FI_DEV_MEMORY_TEMP / gpuvet_gpu_memory_temperature_celsius / check's
#    nvml.gpu.0.memory_temperature_c against `nvidia-smi --query-gpu=temperature.memory`
#    (within 3 C: the readings are a second apart);
#  - DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL: present exactly when the GPU has an active NVLink
#    (`nvidia-smi nvlink -s`), equal to the sum of gpuvet_gpu_nvlink_data_bytes_total;
#  - the scrape saved for promtool and the dashboard test on the build machine:
#    python3 tests/integration/test_dcgm_dashboard.py build/gpuvet build/tests/fake/libfake_nvml.so \
#        --scrape OUT/counters/dcgm.prom
#  - `time bench --quick --json --no-history` (all groups) for bench --help's figure.
# Writes under $OUT/counters: nvidia-smi-*.txt, check.json, dcgm.prom, bench-quick.json/.err,
# bench-quick-seconds.txt, summary.txt and verdict.txt; exits 1 when a check fails.
# Run: bash scripts/device-run.sh scripts/device/counters.sh (carry build/gpuvet and .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/counters
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
G=${GPUVET:-$PWD/build/gpuvet}

nvidia-smi --query-gpu=index,temperature.gpu,temperature.memory --format=csv,noheader,nounits \
	> "$OUT/nvidia-smi-temps.txt" 2>&1
nvidia-smi nvlink -s > "$OUT/nvidia-smi-nvlink.txt" 2>&1
"$G" check --json > "$OUT/check.json" 2> "$OUT/check.err"

"$G" serve --listen 127.0.0.1:0 --dcgm-compat --hostname gpu-node --interval 1 --check-interval 0 \
	2> "$OUT/serve.err" &
sp=$!
port=""
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve.err" 2>/dev/null)
	[ -n "$port" ] && break
	sleep 0.05
done
sleep 2.5 # two samples: GPM and the NVLink rates need a pair
python3 -c "import sys, urllib.request; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:%s/metrics' % sys.argv[1], timeout=10).read().decode())" \
	"$port" > "$OUT/dcgm.prom" 2> "$OUT/scrape.err"
nvidia-smi --query-gpu=index,temperature.gpu,temperature.memory --format=csv,noheader,nounits \
	> "$OUT/nvidia-smi-temps-after.txt" 2>&1
kill "$sp"
wait "$sp"
echo "serve exit $?" > "$OUT/exit.txt"

start=$(date +%s%N)
timeout 180 "$G" bench --quick --json --no-history > "$OUT/bench-quick.json" 2> "$OUT/bench-quick.err"
echo "bench exit $?" >> "$OUT/exit.txt"
echo "$(( ($(date +%s%N) - start) / 1000000 ))" | sed 's/\(...\)$/.\1/' > "$OUT/bench-quick-seconds.txt"

python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
bad, lines = [], []
def smi(name):
    row = open("%s/%s" % (out, name)).read().split("\n")[0].split(",")
    return [x.strip() for x in row]
before, after = smi("nvidia-smi-temps.txt"), smi("nvidia-smi-temps-after.txt")
lines.append("nvidia-smi temperature.gpu, temperature.memory: before %s, after %s" % (before[1:], after[1:]))
series = {}
for l in open(out + "/dcgm.prom"):
    m = re.match(r'^([A-Za-z_:][A-Za-z0-9_:]*)(\{.*\})? (\S+)$', l.strip())
    if m:
        series.setdefault(m.group(1), []).append((m.group(2) or "", float(m.group(3))))
def one(name):
    v = series.get(name, [])
    return v[0][1] if len(v) == 1 else None
dcgm_mt, ours_mt = one("DCGM_FI_DEV_MEMORY_TEMP"), one("gpuvet_gpu_memory_temperature_celsius")
try:
    facts = json.load(open(out + "/check.json"))["facts"]["nvml"]
    fact = facts.get("gpu.0.memory_temperature_c", {})
except Exception as e:
    fact = {"error": str(e)}
lines.append("DCGM_FI_DEV_MEMORY_TEMP %s, gpuvet_gpu_memory_temperature_celsius %s, check fact %s" % (dcgm_mt, ours_mt, fact))
smi_mt = [x for x in (before[2], after[2]) if re.match(r"^\d+$", x)]
if smi_mt:
    lo, hi = min(map(int, smi_mt)) - 3, max(map(int, smi_mt)) + 3
    for name, v in (("DCGM_FI_DEV_MEMORY_TEMP", dcgm_mt), ("gpuvet_gpu_memory_temperature_celsius", ours_mt),
                    ("check nvml.gpu.0.memory_temperature_c", fact.get("value"))):
        if not (isinstance(v, (int, float)) and lo <= v <= hi):
            bad.append("%s %s, nvidia-smi says %s" % (name, v, smi_mt))
else:
    # no memory sensor: the series must be absent, the fact unsupported
    lines.append("nvidia-smi has no memory temperature (%s)" % before[2])
    if dcgm_mt is not None or ours_mt is not None or fact.get("state") == "ok":
        bad.append("a memory temperature where nvidia-smi has none")
nvl = open(out + "/nvidia-smi-nvlink.txt").read()
active = len(re.findall(r"Link \d+: \d+(\.\d+)? GB/s", nvl))
bw = series.get("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", [])
links = sum(v for _, v in series.get("gpuvet_gpu_nvlink_data_bytes_total", []))
lines.append("nvidia-smi nvlink -s: %d active links; DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL %s; sum of per-link bytes %s" % (active, bw, links))
if active and not (len(bw) == 1 and bw[0][1] == links):
    bad.append("NVLink bandwidth total %s against the per-link sum %s" % (bw, links))
if not active and bw:
    bad.append("NVLink bandwidth total %s on a GPU without active NVLink" % bw)
secs = open(out + "/bench-quick-seconds.txt").read().strip()
try:
    b = json.load(open(out + "/bench-quick.json"))
    figs = [f for f in b["figures"] if not f.get("skipped")]
    ev = [f for f in figs if f.get("activity")]
    lines.append("bench --quick: %s s, %d figures measured, %d with activity evidence" % (secs, len(figs), len(ev)))
except Exception as e:
    bad.append("bench-quick.json: %s" % e)
open(out + "/summary.txt", "w").write("\n".join(lines) + "\n")
open(out + "/verdict.txt", "w").write(("FAIL\n" + "\n".join(bad) if bad else "ok") + "\n")
print(open(out + "/summary.txt").read())
print(open(out + "/verdict.txt").read())
sys.exit(1 if bad else 0)
PY
