#!/bin/bash
# The check's two speed targets on the GPU machine (issue 24, item 7), in one short call:
#   1. the full check (the live Python probe with its smoke test, the driver warm-up beside torch's
#      import) against `python3 -c "import torch; torch.cuda.is_available()"`, seven interleaved
#      rounds after a warm-up, with the probe's own stage times from a --json run;
#   2. which of check --fast's slow NVML calls cost in themselves and which pay for a first touch
#      (scripts/device/nvml_order.c, built there), and the same values as one field-values batch.
# Output under $OUT/checkspeed. Run: bash scripts/device-run.sh scripts/device/checkspeed.sh
set -u
OUT=${OUT:-/tmp/gpuvet-out}/checkspeed
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}
export GPUVET_NO_HISTORY=1 NCCL_NVLS_ENABLE=0
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
"$PY" - "$G" "$PY" "$OUT" <<'PYEOF'
import json, statistics, subprocess, sys, time
g, py, out = sys.argv[1:4]
cmds = {"torch line": [py, "-c", "import torch; torch.cuda.is_available()"],
        "gpuvet check": [g, "check"]}
times = {k: [] for k in cmds}
for rnd in range(8):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if rnd:
            times[k].append(time.perf_counter() - t0)
stages = []
for i in range(3):
    p = subprocess.run([g, "check", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        live = json.loads(p.stdout)["facts"]["python"]
    except Exception as exc:
        stages.append({"error": str(exc)})
        continue
    stages.append({k: v.get("value") for k, v in live.items() if k.startswith("live.seconds") or k == "live.warm"})
with open(out + "/timing.txt", "w") as fh:
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in times.items():
        fh.write("%-14s median %.3f s  (%s)\n" % (k, med[k], " ".join("%.3f" % x for x in v)))
    fh.write("ratio gpuvet check / torch line = %.3fx (per round: %s)\n" % (
        med["gpuvet check"] / med["torch line"],
        " ".join("%.2f" % (a / b) for a, b in zip(times["gpuvet check"], times["torch line"]))))
    for s in stages:
        fh.write("stages %s\n" % json.dumps(s, sort_keys=True))
print(open(out + "/timing.txt").read())
PYEOF
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
B=$(mktemp -d /tmp/gpuvet-cs.XXXXXX)
if gcc -O2 -I"$CUDA_INC" -o "$B/nvml_order" scripts/device/nvml_order.c -L/usr/lib/x86_64-linux-gnu -l:libnvidia-ml.so.1 2> "$OUT/nvml_order-build.txt"; then
	for order in power,ecc_mode,ecc_total,util,mig util,mig,ecc_total,ecc_mode,power temp,mem,usage,power,plimit \
		ecc_total,ecc_total,ecc_total,ecc_total power,power batch; do
		for i in 1 2 3; do echo "== $order ($i)"; "$B/nvml_order" "$order"; done
	done > "$OUT/nvml_order.txt" 2>&1
	cat "$OUT/nvml_order.txt"
else
	cat "$OUT/nvml_order-build.txt"
fi
exit 0
