#!/bin/sh
# On the GPU machine: gpuvet watch --once and gpuvet serve against the real NVML, their values
# checked against nvidia-smi in the same run (readings bracketed by an nvidia-smi query before
# and after), every GPU read healthy, and the serve benchmark (scrape latency, CPU share at 1 s
# sampling, RSS) beside a loop spawning the real nvidia-smi --query-gpu per scrape.
#
# Needs build/ (a RelWithDebInfo build: `make`) and .devlib/ (libmicrohttpd, libcjson; see
# ../shared/device.md) carried. Everything talks to 127.0.0.1 only. Logs, the scraped
# expositions (check them here with `promtool check metrics < FILE`), the benchmark JSON and
# verdict.txt go to $OUT/serve; exits non-zero when anything disagrees. Run through
# scripts/device-run.sh (carry build and .devlib): bash scripts/device-run.sh scripts/device/serve.sh
set -u
# everything under $OUT/serve: scripts/device-run.sh runs every script with one $OUT
OUT=${OUT:-/tmp/gpuvet-out}/serve
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
G=${GPUVET:-./build/gpuvet}
Q=index,name,uuid,pci.bus_id,memory.total,memory.used,temperature.gpu,power.draw,power.limit,utilization.gpu,clocks.sm,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current,pcie.link.width.max,temperature.gpu.tlimit
status=0

date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1

smi() { nvidia-smi --query-gpu=$Q --format=csv,noheader,nounits > "$1" 2>&1; }

# --- watch --once, text and JSON, bracketed by nvidia-smi
smi "$OUT/smi-before-watch.csv"
"$G" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch-json.err"
echo "watch --once --json exit $?" >> "$OUT/exit-codes.txt"
smi "$OUT/smi-after-watch.csv"
"$G" watch --once > "$OUT/watch.txt" 2> "$OUT/watch.err"
echo "watch --once exit $?" >> "$OUT/exit-codes.txt"
[ -x /usr/bin/time ] && /usr/bin/time -v "$G" watch --once --json > /dev/null 2> "$OUT/watch-once-time.txt"

# GET url [accept] [status]: the body (or the status code), with python3 (no curl needed)
get() {
	python3 - "$@" <<'PY'
import sys, urllib.request, urllib.error
req = urllib.request.Request(sys.argv[1], headers={"Accept": sys.argv[2]} if len(sys.argv) > 2 and sys.argv[2] else {})
try:
    r = urllib.request.urlopen(req, timeout=10)
    code, body = r.status, r.read()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read()
if len(sys.argv) > 3:
    print(code)
else:
    sys.stdout.buffer.write(body)
PY
}

# --- serve: our names, then DCGM names too; scrapes bracketed by nvidia-smi
serve_scrape() { # name, extra args...
	name=$1
	shift
	: > "$OUT/serve-$name.err"
	"$G" serve --listen 127.0.0.1:0 --interval 1 "$@" 2> "$OUT/serve-$name.err" &
	pid=$!
	port=""
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve-$name.err")
		[ -n "$port" ] && break
		sleep 0.1
	done
	sleep 3 # a few samples and the first check
	smi "$OUT/smi-before-$name.csv"
	get "http://127.0.0.1:$port/metrics" > "$OUT/metrics-$name.prom"
	smi "$OUT/smi-after-$name.csv"
	get "http://127.0.0.1:$port/metrics" 'application/openmetrics-text;version=1.0.0' > "$OUT/metrics-$name.om"
	get "http://127.0.0.1:$port/healthz" "" status > "$OUT/healthz-$name.txt"
	grep -E '^(VmRSS|VmHWM|Threads)' "/proc/$pid/status" > "$OUT/serve-$name-status.txt"
	kill "$pid"
	wait "$pid"
	echo "serve $name exit $?" >> "$OUT/exit-codes.txt"
}
serve_scrape ours
serve_scrape dcgm --dcgm-compat --hostname gpu-node

# --- the TUI for a few seconds, where tmux exists
if command -v tmux > /dev/null 2>&1; then
	tmux -L gpuvet-dev new-session -d -s gv -x 160 -y 45 "env GPUVET_WATCH_SECONDS=6 TERM=xterm-256color LANG=C.UTF-8 $G watch; echo EXITED-\$?; sleep 5"
	sleep 4
	tmux -L gpuvet-dev capture-pane -p -t gv > "$OUT/tui.txt"
	sleep 4
	tmux -L gpuvet-dev capture-pane -p -t gv > "$OUT/tui-end.txt"
	tmux -L gpuvet-dev kill-server
fi

# --- the benchmark: real NVML, real nvidia-smi
python3 scripts/bench/serve_bench.py --gpuvet "$G" --idle-seconds "${BENCH_IDLE:-60}" --scrapes 2000 --spawns 100 \
	--json "$OUT/bench.json" > "$OUT/bench.md" 2> "$OUT/bench.err"
echo "bench exit $?" >> "$OUT/exit-codes.txt"

# --- the verdict
python3 - "$OUT" > "$OUT/verdict.txt" 2>&1 <<'PY' || status=1
import csv, json, re, sys
out = sys.argv[1]
bad, notes = [], []

def smi(path):
    rows = {}
    for r in csv.reader(open(path)):
        r = [c.strip() for c in r]
        if len(r) < 16 or not r[0].isdigit():
            continue
        rows[int(r[0])] = r
    return rows

def num(s):
    try:
        return float(s)
    except ValueError:
        return None

def within(name, idx, got, a, b, tol):
    """got must lie between the two nvidia-smi readings, give or take tol."""
    if got is None or a is None or b is None:
        notes.append(f"GPU {idx} {name}: not compared (gpuvet {got}, nvidia-smi {a}/{b})")
        return
    lo, hi = min(a, b) - tol, max(a, b) + tol
    if not lo <= got <= hi:
        bad.append(f"GPU {idx} {name}: gpuvet {got:g}, nvidia-smi {a:g} then {b:g} (tolerance {tol:g})")

def compare(label, values, before, after):
    """values: {gpu: {field: value}} in nvidia-smi units."""
    if set(values) != set(before):
        bad.append(f"{label}: GPUs {sorted(values)}, nvidia-smi {sorted(before)}")
    for i, r in before.items():
        v, s = values.get(i, {}), after.get(i, r)
        for key, col in (("name", 1), ("uuid", 2)):
            if key in v and v[key] != r[col]:
                bad.append(f"{label} GPU {i} {key}: {v[key]!r}, nvidia-smi {r[col]!r}")
        if "bus" in v and v["bus"].lower() != r[3].lower():
            bad.append(f"{label} GPU {i} bus id: {v['bus']!r}, nvidia-smi {r[3]!r}")
        within(f"{label} memory.total MiB", i, v.get("mem_total"), num(r[4]), num(s[4]), 0)
        within(f"{label} memory.used MiB", i, v.get("mem_used"), num(r[5]), num(s[5]), 64)
        within(f"{label} temperature C", i, v.get("temp"), num(r[6]), num(s[6]), 2)
        within(f"{label} power W", i, v.get("power"), num(r[7]), num(s[7]), max(10, 0.1 * (num(r[7]) or 0)))
        within(f"{label} power limit W", i, v.get("power_limit"), num(r[8]), num(s[8]), 1)
        within(f"{label} utilization %", i, v.get("util"), num(r[9]), num(s[9]), 10)
        within(f"{label} SM clock MHz", i, v.get("sm"), num(r[10]), num(s[10]), 100)
        within(f"{label} PCIe gen", i, v.get("gen"), num(r[12]), num(s[12]), 0)
        within(f"{label} PCIe width", i, v.get("width"), num(r[13]), num(s[13]), 0)

# watch --once --json
try:
    doc = json.load(open(f"{out}/watch.json"))
    vals = {}
    for g in doc["gpus"]:
        vals[g["index"]] = {"name": g["name"], "uuid": g["uuid"], "bus": g["pci_bus_id"],
                            "mem_total": g["memory_total_bytes"] / 2**20 if g["memory_total_bytes"] is not None else None,
                            "mem_used": g["memory_used_bytes"] / 2**20 if g["memory_used_bytes"] is not None else None,
                            "temp": g["temperature_c"], "power": g["power_w"], "power_limit": g["power_limit_w"],
                            "util": g["utilization_gpu_ratio"] * 100 if g["utilization_gpu_ratio"] is not None else None,
                            "sm": g["sm_clock_mhz"], "gen": g["pcie_gen"], "width": g["pcie_width"]}
        if g["health"] != "healthy":
            bad.append(f"watch: GPU {g['index']} reads {g['health']}: {g['conditions']}")
    compare("watch", vals, smi(f"{out}/smi-before-watch.csv"), smi(f"{out}/smi-after-watch.csv"))
except Exception as e:
    bad.append(f"watch --once --json unreadable: {e}")

# serve, both naming modes
for mode in ("ours", "dcgm"):
    try:
        text = open(f"{out}/metrics-{mode}.prom").read()
        series = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                k, _, v = line.rpartition(" ")
                series[k] = float(v)
        vals = {}
        for k, v in series.items():
            m = re.match(r'(\w+)\{gpu="(\d+)",uuid="([^"]+)"\}$', k)
            if not m:
                continue
            i = int(m.group(2))
            d = vals.setdefault(i, {"uuid": m.group(3)})
            conv = {"gpuvet_gpu_memory_total_bytes": ("mem_total", 2**-20), "gpuvet_gpu_memory_used_bytes": ("mem_used", 2**-20),
                    "gpuvet_gpu_temperature_celsius": ("temp", 1), "gpuvet_gpu_power_watts": ("power", 1),
                    "gpuvet_gpu_power_limit_watts": ("power_limit", 1), "gpuvet_gpu_utilization_ratio": ("util", 100),
                    "gpuvet_gpu_sm_clock_hertz": ("sm", 1e-6), "gpuvet_gpu_pcie_link_generation": ("gen", 1),
                    "gpuvet_gpu_pcie_link_width": ("width", 1)}.get(m.group(1))
            if conv:
                d[conv[0]] = v * conv[1]
        for k, v in series.items():
            m = re.match(r'gpuvet_gpu_info\{gpu="(\d+)",uuid="[^"]+",name="([^"]*)",pci_bus_id="([^"]*)"', k)
            if m and int(m.group(1)) in vals:
                vals[int(m.group(1))].update(name=m.group(2), bus=m.group(3))
            m = re.match(r'gpuvet_gpu_health\{gpu="(\d+)",uuid="[^"]+",state="healthy"\}$', k)
            if m and v != 1:
                bad.append(f"serve {mode}: GPU {m.group(1)} not healthy")
        compare(f"serve {mode}", vals, smi(f"{out}/smi-before-{mode}.csv"), smi(f"{out}/smi-after-{mode}.csv"))
        if series.get("gpuvet_sampler_up") != 1:
            bad.append(f"serve {mode}: gpuvet_sampler_up is not 1")
        fails = [k for k, v in series.items() if k.startswith("gpuvet_finding{") and 'severity="fail"' in k and v == 1]
        if fails:
            bad.append(f"serve {mode}: check findings {fails}")
        notes.append(f"serve {mode}: findings {[k for k in series if k.startswith('gpuvet_finding{')]}")
        if mode == "dcgm":
            for name in ("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
                         "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"):
                if not any(k.startswith(name + "{") for k in series):
                    bad.append(f"serve dcgm: {name} missing")
        if open(f"{out}/healthz-{mode}.txt").read().strip() != "200":
            bad.append(f"serve {mode}: /healthz not 200")
        om = open(f"{out}/metrics-{mode}.om").read()
        if not om.endswith("# EOF\n"):
            bad.append(f"serve {mode}: OpenMetrics answer does not end with # EOF")
    except Exception as e:
        bad.append(f"serve {mode}: {e}")

try:
    b = json.load(open(f"{out}/bench.json"))["gpuvet"]
    notes.append(f"bench: p50 {b['scrape_ms_p50']:.3f} ms, p99 {b['scrape_ms_p99']:.3f} ms, RSS {b['rss_kib']/1024:.1f} MiB, "
                 f"CPU {b['cpu_share_idle_1s_sampling']*100:.3f} % of a core")
    if b["scrape_ms_p99"] >= 2:
        bad.append(f"bench: scrape p99 {b['scrape_ms_p99']:.3f} ms (target < 2 ms)")
    if b["rss_kib"] >= 16 * 1024:
        bad.append(f"bench: RSS {b['rss_kib']/1024:.1f} MiB (target < 16 MiB)")
    if b["cpu_share_idle_1s_sampling"] >= 0.01:
        bad.append(f"bench: CPU {b['cpu_share_idle_1s_sampling']*100:.2f} % of a core (target < 1 %)")
except Exception as e:
    bad.append(f"bench: {e}")

print("\n".join(notes))
print("\n".join(bad) if bad else "OK: watch and serve agree with nvidia-smi, every GPU healthy, benchmark targets met")
sys.exit(1 if bad else 0)
PY
cat "$OUT/verdict.txt"
exit $status
