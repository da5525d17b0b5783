#!/bin/bash
# On the GPU machine: where a scrape of gpuvet serve spends its time, with NVML's GPM counters on
# and off (issue 13: scrape p99 under 1 ms with GPM on). About 45 seconds; starts no GPU work and
# never changes clocks, limits or modes.
#
# For each mode (gpm_on: the default; gpm_off: --no-gpm), one `gpuvet serve --interval 1
# --check-interval 0` on 127.0.0.1 and build/tests/scrape_latency (C, tests/tools/
# scrape_latency.c, so no client overhead is in the figure) against it:
#   burst      2000 scrapes back to back on one kept-alive connection, then 2000 on a fresh
#              connection each
#   paced      120 scrapes 40 ms apart, kept-alive and fresh: every CPU may sleep between
#              scrapes, as between Prometheus's (the sampler still samples each second)
# each with p50/p90/p99/max, the body size, and the exporter's CPU time over the run (utime +
# stime) and VmRSS/VmHWM after it. Over the paced runs (10 s, one sample a second) the CPU
# share is the exporter's cost at 1 s sampling. Beside it the client of the 10:05Z measurement
# (python3 urllib, a new connection each, 120 scrapes 40 ms apart) against the same exporter,
# to show how much of that 1.38 ms p99 was the client's.
# Then one `serve --dcgm-compat --hostname gpu-node` scrape saved for promtool on the build
# machine (no promtool here):
#   python3 tests/integration/test_dcgm_dashboard.py build/gpuvet build/tests/fake/libfake_nvml.so \
#       --scrape OUT/servefast/dcgm.prom
# Output in $OUT/servefast: MODE.json (one JSON line per run), MODE.urllib.json, MODE.err,
# MODE.status.txt, dcgm.prom, dcgm.om, summary.txt (the table and the verdict lines).
# What to look for: gpm_on kept-alive and fresh p99 under 1 ms (PASS lines); gpm_on beside
# gpm_off (GPM's cost is in the sampler thread, not in a scrape); urllib's p50 against
# scrape_latency's fresh p50 (the client's share).
# Run: bash scripts/device-run.sh scripts/device/servefast.sh (carry build/gpuvet,
# build/tests/scrape_latency and .devlib; the whole build/ is near the 64 MiB carry limit)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/servefast
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
G=${GPUVET:-./build/gpuvet}
L=${SCRAPE_LATENCY:-./build/tests/scrape_latency}
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nproc > "$OUT/nproc.txt"
cat /proc/loadavg > "$OUT/loadavg-start.txt"
[ -x "$L" ] || { echo "FAIL no $L (build the tests: make)" | tee "$OUT/summary.txt"; exit 1; }

# start NAME ARGS...: serve on an ephemeral port; sets $sp (pid) and $port
start() {
	name=$1
	shift
	"$G" serve --listen 127.0.0.1:0 "$@" 2> "$OUT/$name.err" &
	sp=$!
	port=""
	for _ in $(seq 1 100); do
		port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/$name.err" 2>/dev/null)
		[ -n "$port" ] && break
		sleep 0.05
	done
	sleep 2.5 # a first sample, and the second one (GPM needs two)
}

stop() {
	grep -E '^(VmRSS|VmHWM|Threads)' "/proc/$sp/status" > "$OUT/$name.status.txt" 2>&1
	cut -d' ' -f14,15 "/proc/$sp/stat" >> "$OUT/$name.status.txt" 2>&1 # utime stime, ticks
	kill "$sp"
	wait "$sp"
	echo "$name serve exit $?" >> "$OUT/exit-codes.txt"
}

urllib() { # port pid: the 10:05Z client, 120 scrapes 40 ms apart
	python3 - "$1" "$2" <<'PY'
import json, os, sys, time, urllib.request
port, pid = sys.argv[1], int(sys.argv[2])
lat = []
for i in range(120):
    s = time.perf_counter()
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read()
    lat.append((time.perf_counter() - s) * 1000)
    time.sleep(0.04)
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(round((len(lat) - 1) * p / 100)))]
print(json.dumps({"mode": "urllib-fresh", "scrapes": len(lat), "gap_ms": 40, "body_bytes": len(body),
                  "p50_ms": q(50), "p90_ms": q(90), "p99_ms": q(99), "max_ms": lat[-1]}))
PY
}

for mode in gpm_on gpm_off; do
	extra=""
	[ "$mode" = gpm_off ] && extra=--no-gpm
	start "$mode" --interval 1 --check-interval 0 $extra
	if [ -z "$port" ]; then
		echo "FAIL $mode: serve did not start: $(cat "$OUT/$mode.err")" >> "$OUT/summary.txt"
		continue
	fi
	: > "$OUT/$mode.json"
	"$L" -n 2000 -P "$sp" "127.0.0.1:$port" | sed 's/^{/{"run": "burst", /' >> "$OUT/$mode.json"
	"$L" -n 120 -g 40 -P "$sp" "127.0.0.1:$port" | sed 's/^{/{"run": "paced", /' >> "$OUT/$mode.json"
	urllib "$port" "$sp" > "$OUT/$mode.urllib.json" 2>> "$OUT/$mode.err"
	"$L" -n 1 -m fresh -o "$OUT/$mode.prom" "127.0.0.1:$port" > /dev/null
	stop
done

# the DCGM names, for the dashboard test on the build machine
start dcgm --interval 1 --check-interval 0 --dcgm-compat --hostname gpu-node
if [ -n "$port" ]; then
	"$L" -n 1 -m fresh -o "$OUT/dcgm.prom" "127.0.0.1:$port" > /dev/null
	"$L" -n 1 -m fresh -a 'application/openmetrics-text;version=1.0.0' -o "$OUT/dcgm.om" "127.0.0.1:$port" > /dev/null
	stop
fi
cat /proc/loadavg > "$OUT/loadavg-end.txt"

python3 - "$OUT" > "$OUT/summary.txt" 2>&1 <<'PY'
import json, os, sys
out = sys.argv[1]
print("| mode | run | connection | scrapes | body | p50 ms | p90 ms | p99 ms | max ms | exporter CPU ms/scrape | CPU share (paced) | VmRSS | VmHWM |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
verdict = []
for mode in ("gpm_on", "gpm_off"):
    rows = []
    try:
        rows = [json.loads(l) for l in open(os.path.join(out, mode + ".json")) if l.strip()]
    except OSError:
        verdict.append("FAIL %s: no measurement" % mode)
    try:
        rows += [json.loads(open(os.path.join(out, mode + ".urllib.json")).read())]
    except (OSError, ValueError):
        pass
    for r in rows:
        # a share of one core only where the run is mostly idle (paced: the sampler's cost)
        share = r["exporter_cpu_s"] / r["wall_s"] if r.get("wall_s") and r.get("run") == "paced" else None
        print("| %s | %s | %s | %d | %d B | %.3f | %.3f | %.3f | %.3f | %s | %s | %s | %s |" % (
            mode, r.get("run", "paced"), r["mode"], r["scrapes"], r["body_bytes"], r["p50_ms"], r["p90_ms"], r["p99_ms"],
            r["max_ms"], "%.4f" % r["exporter_cpu_ms_per_scrape"] if "exporter_cpu_ms_per_scrape" in r else "",
            "%.2f%%" % (share * 100) if share is not None else "",
            "%.1f MiB" % (r["exporter_rss_kib"] / 1024) if "exporter_rss_kib" in r else "",
            "%.1f MiB" % (r["exporter_hwm_kib"] / 1024) if "exporter_hwm_kib" in r else ""))
        if mode == "gpm_on" and "run" in r:
            ok = r["p99_ms"] < 1.0 and r["scrapes"] > 0
            verdict.append("%s %s %s %s: p99 %.3f ms (target < 1 ms)" % ("PASS" if ok else "FAIL", mode, r["run"], r["mode"], r["p99_ms"]))
try:
    body = open(os.path.join(out, "dcgm.prom")).read()
    n = sum(1 for l in body.splitlines() if l.startswith("DCGM_FI_"))
    verdict.append("%s dcgm.prom: %d DCGM_FI_* series, %d bytes" % ("PASS" if n else "FAIL", n, len(body)))
except OSError:
    verdict.append("FAIL dcgm.prom: none")
print()
print("\n".join(verdict))
sys.exit(1 if any(v.startswith("FAIL") for v in verdict) else 0)
PY
status=$?
cat "$OUT/summary.txt"
exit $status
