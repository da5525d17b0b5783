#!/bin/bash
# gpuvet serve through gpuvet-serve on the GPU machine: gpuvet links no libmicrohttpd, execs the
# exporter's program found beside it (the same pid), which serves the H200's metrics; a scrape
# of /metrics and /healthz, then SIGTERM. ~5 s.
#   bash scripts/device-run.sh scripts/device/servehelper.sh   (build/gpuvet, build/gpuvet-serve, .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/servehelper
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
v() { echo "$*" | tee -a "$OUT/summary.txt"; }
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
readelf -d "$G" | grep NEEDED > "$OUT/gpuvet.needed"
readelf -d "$(dirname "$G")/gpuvet-serve" | grep NEEDED > "$OUT/gpuvet-serve.needed"
grep -q libmicrohttpd "$OUT/gpuvet.needed" && v "FAIL gpuvet links libmicrohttpd" || v "PASS gpuvet links no libmicrohttpd ($(wc -l < "$OUT/gpuvet.needed") libraries)"
"$G" serve --listen 127.0.0.1:0 --interval 1 --check-interval 0 2> "$OUT/serve.err" &
pid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve.err")
	[ -n "$port" ] && break
	sleep 0.1
done
comm=$(cat /proc/$pid/comm 2>/dev/null)
[ "$comm" = "gpuvet-serve" ] && v "PASS pid $pid is gpuvet-serve (exec)" || v "FAIL pid $pid is '$comm'"
sleep 2
curl -s "http://127.0.0.1:$port/metrics" > "$OUT/metrics.prom"
code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")
grep -q '^gpuvet_gpu_info{' "$OUT/metrics.prom" && v "PASS /metrics has gpuvet_gpu_info ($(wc -l < "$OUT/metrics.prom") lines)" || v "FAIL no gpuvet_gpu_info"
grep -q '^gpuvet_sampler_up 1' "$OUT/metrics.prom" && v "PASS gpuvet_sampler_up 1" || v "FAIL sampler not up"
[ "$code" = 200 ] && v "PASS /healthz 200" || v "FAIL /healthz $code"
kill -TERM $pid
wait $pid
v "serve exit $? after SIGTERM"
