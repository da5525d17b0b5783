#!/bin/sh
# Experiments behind two figures that moved between runs on the GPU machine (docs/benchmarks.md):
#  1. launch: gpuvet bench --only launch and the bare cuLaunchKernel loop, interleaved, 3 times;
#  2. training steps: the GPU half of anchors/bench_models.py (scripts/device/amp_steps.py) run
#     6 times, alternately alone and beside `gpuvet watch --interval 0.2` (NVML read 5 times a
#     second, as tune's sampler does), to see how the anchor moves between processes and whether
#     NVML sampling slows the steps;
#  3. serve: where gpuvet serve's resident memory goes (smaps_rollup and the largest mappings).
# Writes $OUT/noise/*.txt. Run through scripts/device-run.sh (build, .devlib, .anchors carried).
set -u
OUT=${OUT:-/tmp/gpuvet-out}/noise
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-./build/gpuvet}
PY=python3
[ -x /opt/torch/.venv/bin/python ] && PY=/opt/torch/.venv/bin/python

# 1. launch, interleaved
for i in 1 2 3; do
	./build/tests/launch_anchor 20000 >> "$OUT/launch-anchor.txt" 2>&1
	"$G" bench --only launch --json --no-history 2>/dev/null | $PY -c '
import json,sys
d=json.load(sys.stdin)
print(json.dumps({f["id"]: [f.get("value"), f.get("min"), f.get("max")] for f in d["figures"]}))' >> "$OUT/launch-gpuvet.txt" 2>&1
done

# 2. AMP steps, alone and beside an NVML sampler
for i in 1 2 3; do
	printf 'alone  ' >> "$OUT/amp.txt"
	$PY scripts/device/amp_steps.py >> "$OUT/amp.txt" 2>> "$OUT/amp.err"
	"$G" watch --interval 0.2 > /dev/null 2>&1 &
	w=$!
	sleep 1
	printf 'nvml   ' >> "$OUT/amp.txt"
	$PY scripts/device/amp_steps.py >> "$OUT/amp.txt" 2>> "$OUT/amp.err"
	kill $w; wait $w 2>/dev/null
done

# 3. serve's memory
"$G" serve --listen 127.0.0.1:9478 > "$OUT/serve.out" 2>&1 &
s=$!
sleep 6
curl -s http://127.0.0.1:9478/metrics > /dev/null 2>&1 || $PY -c 'import urllib.request;urllib.request.urlopen("http://127.0.0.1:9478/metrics").read()'
sleep 1
cat /proc/$s/smaps_rollup > "$OUT/serve-smaps-rollup.txt" 2>&1
cat /proc/$s/status > "$OUT/serve-status.txt" 2>&1
awk '/^[0-9a-f]+-[0-9a-f]+ /{name=$6} /^Rss:/{rss[name]+=$2} END{for(n in rss) print rss[n], n}' /proc/$s/smaps | sort -rn | head -25 > "$OUT/serve-smaps-top.txt"
ls /proc/$s/task | wc -l > "$OUT/serve-threads.txt"
kill $s; wait $s 2>/dev/null
echo done
