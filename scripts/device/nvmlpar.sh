#!/bin/bash
# Whether check --fast's NVML queries can run in several processes at once (issue 24, item 7), in
# one short call (~10 s): scripts/device/nvml_par.c built here, seven interleaved rounds after a
# warm-up of nvidia-smi's five-value query (the anchor), one process making nvmlInit, the handle
# and 24 kinds of query, the same with nvmlInitWithFlags(NO_ATTACH), the kinds split over 2, 3 and
# 4 processes started together, and gpuvet check --fast --no-history. Every line of every run is
# kept (nvml_par.txt); medians of the wall times in timing.txt.
#   bash scripts/device-run.sh scripts/device/nvmlpar.sh      (build/ and .devlib/ carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvmlpar
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
B=$(mktemp -d /tmp/gpuvet-np.XXXXXX)
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
if ! gcc -O2 -I"$CUDA_INC" -o "$B/nvml_par" scripts/device/nvml_par.c -L/usr/lib/x86_64-linux-gnu -l:libnvidia-ml.so.1 2> "$OUT/build.txt"; then
	cat "$OUT/build.txt"
	exit 1
fi
python3 - "$B/nvml_par" "$G" "$OUT" <<'PY'
import statistics, subprocess, sys, time
par, g, out = sys.argv[1:4]
cmds = {"nvidia-smi --query-gpu": ["nvidia-smi", "--query-gpu=name,driver_version,memory.used,utilization.gpu,temperature.gpu", "--format=csv"],
        "serial": [par, "serial"], "noattach": [par, "noattach"],
        "split 2": [par, "split", "2"], "split 3": [par, "split", "3"], "split 4": [par, "split", "4"],
        "check --fast --no-history": [g, "check", "--fast", "--no-history", "--json"]}
times = {k: [] for k in cmds}
log = open(out + "/nvml_par.txt", "w")
for rnd in range(8):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        dt = time.perf_counter() - t0
        if rnd:
            times[k].append(dt)
        if c[0] == par:
            log.write("== %s round %d (%.2f ms outside)\n%s" % (k, rnd, dt * 1e3, p.stdout.decode(errors="replace")))
with open(out + "/timing.txt", "w") as fh:
    a = statistics.median(times["nvidia-smi --query-gpu"])
    for k, v in times.items():
        m = statistics.median(v)
        fh.write("%-28s median %6.1f ms (min %.1f max %.1f)  %.2fx the anchor\n" % (k, m * 1e3, min(v) * 1e3, max(v) * 1e3, m / a))
print(open(out + "/timing.txt").read())
PY
grep -h "^proc\|^wall" "$OUT/nvml_par.txt" | head -60
exit 0
