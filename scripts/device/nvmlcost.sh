#!/bin/bash
# The cost of each NVML call check --fast makes, in several orders (scripts/device/nvml_cost.c),
# fresh processes, six interleaved rounds (the first a warm-up), medians per operation and order
# (issue 24, item 7). ~10 s.
#   bash scripts/device-run.sh scripts/device/nvmlcost.sh
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvmlcost
mkdir -p "$OUT"
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
B=$(mktemp -d /tmp/gpuvet-nc.XXXXXX)
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
if ! gcc -O2 -I"$CUDA_INC" -o "$B/nvml_cost" scripts/device/nvml_cost.c -L/usr/lib/x86_64-linux-gnu -l:libnvidia-ml.so.1 2> "$OUT/build.txt"; then
	cat "$OUT/build.txt"
	exit 1
fi
grep -E "define NVML_FI_DEV_(POWER|TEMPERATURE|CLOCKS|PCIE_LINK|MEMORY_TEMP|ECC_CURRENT)" "$CUDA_INC/nvml.h" > "$OUT/fields.txt"
python3 - "$B/nvml_cost" "$OUT" <<'PY'
import statistics, subprocess, sys
prog, out = sys.argv[1:3]
import re
fid = dict(re.findall(r"define (NVML_FI_DEV_\w+)\s+(\d+)", open(out + "/fields.txt").read()))
pw = ",".join(fid[k] for k in ("NVML_FI_DEV_POWER_INSTANT", "NVML_FI_DEV_POWER_CURRENT_LIMIT") if k in fid) or "186"
orders = {
    "gpuvet": "health name mem limit persist compute mig temp f:82 util power smclk memclk reasons fan pciegen pciewidth",
    "util-first": "util health limit temp reasons",
    "temp-first": "temp util health limit reasons",
    "reasons-first": "reasons temp health util limit",
    "no-limit-no-util": "health name mem persist compute mig temp f:82 smclk memclk reasons fan pciegen pciewidth",
    "power-alone": "temp power limit util",
    "singles": "f:1 f:2 f:3 f:4 f:5 f:6 f:29 f:30 f:31 f:142 f:143 f:144 f:145 f:94",
    "singles-rev": "f:94 f:145 f:144 f:143 f:142 f:31 f:30 f:29 f:6 f:5 f:4 f:3 f:2 f:1",
    "health-twice": "health health util util limit limit",
    "ecc-only": "b:1,2,3,4,5,6 b:142,143,144,145 b:94 b:29,30,31",
    "power-fields": "temp b:" + pw + " limit power",
    "power-fields-first": "b:" + pw + " health util temp",
    "nvidia-smi-5": "name mem util temp",
}
runs = {k: {} for k in orders}
raw = open(out + "/raw.txt", "w")
for rnd in range(6):
    for k, o in orders.items():
        p = subprocess.run([prog] + o.split(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        raw.write("== %s round %d rc %d\n%s" % (k, rnd, p.returncode, p.stdout))
        if rnd == 0:
            continue
        for i, line in enumerate(p.stdout.splitlines()):
            parts = line.split()
            if len(parts) >= 2:
                runs[k].setdefault((i, parts[0]), []).append(float(parts[1]))
with open(out + "/cost.txt", "w") as fh:
    for k in orders:
        fh.write("== %s\n" % k)
        tot = 0.0
        for (i, op), v in sorted(runs[k].items()):
            m = statistics.median(v)
            if op not in ("init", "handle"):
                tot += m
            fh.write("  %-28s %7.3f ms  (min %.3f max %.3f)\n" % (op, m, min(v), max(v)))
        fh.write("  %-28s %7.3f ms\n" % ("(after the handle)", tot))
print(open(out + "/cost.txt").read())
PY
sed -n '/== gpuvet round 1/,/== util-first round 1/p;/== power-fields round 1/,/== nvidia-smi-5 round 1/p' "$OUT/raw.txt" | head -60
exit 0
