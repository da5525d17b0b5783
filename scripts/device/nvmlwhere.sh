#!/bin/bash
# Where NVML's time goes in nvidia-smi's five-value query and in check --fast's NVML child, by
# the system calls (issue 24, item 7), and whether sysfs gives the PCIe link NVML gives:
#   1. the tools present (strace, perf, ltrace);
#   2. strace -f -tt -T of both, once each after a warm-up: per call name the count and the time
#      inside, and the 25 slowest calls with what they were (a traced run is slower: the counts
#      and the relative weight are what to read, not the totals);
#   3. each GPU's current and maximum PCIe link from nvidia-smi (NVML) beside
#      /sys/bus/pci/devices/BDF/{current,max}_link_{speed,width}, idle, five times.
#   bash scripts/device-run.sh scripts/device/nvmlwhere.sh   (build/gpuvet and .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvmlwhere
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
Q="--query-gpu=name,driver_version,memory.used,utilization.gpu,temperature.gpu"
for t in strace perf ltrace; do printf '%s: %s\n' "$t" "$(command -v $t || echo absent)"; done >"$OUT/tools.txt"
nvidia-smi "$Q" --format=csv >/dev/null 2>&1
"$G" check --fast --no-history >/dev/null 2>&1
if command -v strace >/dev/null; then
	strace -f -tt -T -o "$OUT/smi.strace" nvidia-smi "$Q" --format=csv >"$OUT/smi.out" 2>&1
	strace -f -tt -T -o "$OUT/gv.strace" "$G" check --fast --no-history >"$OUT/gv.out" 2>&1
	python3 - "$OUT" <<'PY'
import re, sys, collections
out = sys.argv[1]
for name in ("smi", "gv"):
    per = collections.defaultdict(lambda: [0, 0.0]); slow = []
    first = last = None
    for line in open("%s/%s.strace" % (out, name)):
        m = re.match(r"(\d+)\s+(\d+):(\d+):([\d.]+)\s+(\w+)\((.*)<([\d.]+)>$", line.strip())
        if not m:
            continue
        t = int(m.group(2)) * 3600 + int(m.group(3)) * 60 + float(m.group(4))
        first = t if first is None else first; last = t
        call, dur = m.group(5), float(m.group(7))
        per[call][0] += 1; per[call][1] += dur
        slow.append((dur, m.group(1), call, m.group(6)[:160]))
    with open("%s/%s.summary.txt" % (out, name), "w") as fh:
        fh.write("span %.1f ms\n" % (((last or 0) - (first or 0)) * 1e3))
        for call, (n, d) in sorted(per.items(), key=lambda kv: -kv[1][1]):
            fh.write("%-20s %6d calls %9.3f ms\n" % (call, n, d * 1e3))
        fh.write("\nslowest:\n")
        for dur, pid, call, args in sorted(slow, reverse=True)[:25]:
            fh.write("%8.3f ms  %s %s(%s\n" % (dur * 1e3, pid, call, args))
PY
fi
for i in 1 2 3 4 5; do
	nvidia-smi --query-gpu=pci.bus_id,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max --format=csv,noheader |
	while IFS=', ' read -r bdf gen width gmax wmax; do
		b=$(echo "$bdf" | tr 'A-F' 'a-f'); b=${b#0000}; p=/sys/bus/pci/devices/$b
		[ -e "$p" ] || p=/sys/bus/pci/devices/$(echo "$bdf" | tr 'A-F' 'a-f' | sed 's/^0000\(....\)/\1/')
		printf 'nvml gen %s width %s max %s x%s | sysfs %s: %s x%s max %s x%s\n' "$gen" "$width" "$gmax" "$wmax" "$p" \
			"$(cat $p/current_link_speed 2>&1)" "$(cat $p/current_link_width 2>&1)" "$(cat $p/max_link_speed 2>&1)" "$(cat $p/max_link_width 2>&1)"
	done
	sleep 0.2
done >"$OUT/pcie.txt" 2>&1
ls /sys/bus/pci/devices/ >"$OUT/pci-devices.txt" 2>&1
cat "$OUT/tools.txt" "$OUT/pcie.txt"
head -30 "$OUT"/smi.summary.txt "$OUT"/gv.summary.txt 2>/dev/null
