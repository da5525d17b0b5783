#!/bin/bash
# GPU-machine check of NVLink and topology (issue 18): gpuvet's facts against nvidia-smi's, in
# the same call. Run from the repository root through scripts/device-run.sh (build/ and .devlib/
# carried):  bash scripts/device-run.sh scripts/device/nvlink.sh
#
# It writes, under $OUT/nvlink/:
#   smi-nvlink-s.txt, smi-nvlink-e.txt   nvidia-smi nvlink -s (state, speed) and -e (errors)
#   smi-topo-m.txt, smi-fabric.txt       nvidia-smi topo -m; the fabric part of nvidia-smi -q
#   smi-nvlink-gt.txt                    nvidia-smi nvlink -gt d (traffic counters), when it has it
#   check.json, check.txt                gpuvet check --fast (JSON, and text: the Topology matrix)
#   serve-nvlink.prom, watch.json        serve's NVLink series (--textfile --once --dcgm-compat), watch --once --json
#   history.txt                          two checks against one fresh database: nothing grows
#   compare.txt                          one OK/DIFF/INFO line per value compared
#   summary.txt                          the lines to read first
# Exit status: 0 when it ran (DIFF lines are results, not script failures).
#
# What it must show:
#   - compare.txt: every line OK. Per GPU and link, state (active/inactive) and speed as
#     nvidia-smi nvlink -s prints them (a GPU whose links are all inactive, or that has none, may
#     print no link lines: then gpuvet's active_count must be 0); replay, recovery and CRC
#     counters as nvidia-smi nvlink -e prints them; every GPU-GPU and GPU-NIC cell and the NUMA
#     affinity of nvidia-smi topo -m. On one H200 the matrix is one row, and NVLink may show no
#     active link: both are valid results to compare.
#   - compare.txt also: serve's gpuvet_gpu_nvlink_up per link and watch's active count agree
#     with check's link states;
#   - history.txt: the second check has no nvlink.errors-grew (the counters did not move).
#   - no fail finding from the nvlink.* rules on a healthy machine.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvlink
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
GPUVET=${GPUVET:-build/gpuvet}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

log() { echo "$@" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
log "nvlink.sh on $(hostname) $(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "gpuvet: $GPUVET ($("$GPUVET" --version 2>&1 | head -1))"

# nvidia-smi and gpuvet in the same call, one right after the other
nvidia-smi nvlink -s > "$OUT/smi-nvlink-s.txt" 2>&1
nvidia-smi nvlink -e > "$OUT/smi-nvlink-e.txt" 2>&1
"$GPUVET" check --fast --json --no-history > "$OUT/check.json" 2> "$OUT/check.err"
echo "exit $?" >> "$OUT/check.err"
nvidia-smi topo -m > "$OUT/smi-topo-m.txt" 2>&1
nvidia-smi -q | grep -i -A4 fabric > "$OUT/smi-fabric.txt" 2>&1
timeout 20 nvidia-smi nvlink -gt d > "$OUT/smi-nvlink-gt.txt" 2>&1
"$GPUVET" check --fast --no-history > "$OUT/check.txt" 2>&1
# serve's and watch's view of the same links (one textfile write; watch: one JSON snapshot)
mkdir -p "$TMP/tf"
GPUVET_NO_HISTORY=1 timeout 60 "$GPUVET" serve --textfile "$TMP/tf" --once --dcgm-compat > "$OUT/serve.err" 2>&1
grep -i nvlink "$TMP/tf/gpuvet.prom" > "$OUT/serve-nvlink.prom" 2>&1
timeout 30 "$GPUVET" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch.err"

# the history path: two checks against a fresh database
{
	GPUVET_DB="$TMP/h.db" "$GPUVET" check --fast --json > "$TMP/first.json" 2>&1
	GPUVET_DB="$TMP/h.db" "$GPUVET" check --fast --json > "$TMP/second.json" 2>&1
	python3 - "$TMP/first.json" "$TMP/second.json" <<'EOF'
import json, sys
for name in sys.argv[1:]:
    d = json.load(open(name))
    ids = [f["id"] for f in d["findings"] if f["id"].startswith("nvlink.")]
    prev = d["facts"].get("history", {})
    print(name.split("/")[-1], "nvlink findings:", ids or "none",
          "| previous check read:", "nvlink.previous_run" in prev)
EOF
	GPUVET_DB="$TMP/h.db" "$GPUVET" history list 2>&1 | head -5
} > "$OUT/history.txt" 2>&1

python3 - "$OUT" <<'EOF' > "$OUT/compare.txt" 2>&1
import json, re, sys
out = sys.argv[1]
doc = json.load(open(out + "/check.json"))
nv = doc["facts"].get("nvml", {})
topo = doc["facts"].get("topology", {})

def fact(layer, key):
    v = layer.get(key)
    return None if v is None or v.get("state") != "ok" else v.get("value")

def line(ok, what, a, b, names=("gpuvet", "nvidia-smi")):
    print("%-4s %-44s %s=%s %s=%s" % ("OK" if ok else "DIFF", what, names[0], a, names[1], b))

def per_gpu(text):
    """{gpu index: [lines]} of nvidia-smi's 'GPU N: ...' blocks"""
    blocks, cur = {}, None
    for l in text.splitlines():
        m = re.match(r"GPU (\d+):", l)
        if m:
            cur = int(m.group(1))
            blocks[cur] = []
        elif cur is not None:
            blocks[cur].append(l.strip())
    return blocks

n = fact(nv, "device_count") or 0
print("INFO GPUs: %d" % n)
s = per_gpu(open(out + "/smi-nvlink-s.txt").read())
for g in range(n):
    count = nv.get("gpu.%d.nvlink.count" % g, {})
    print("INFO GPU %d nvlink.count: %s (%s)" % (g, count.get("value"), count.get("state")))
    links = {}
    for l in s.get(g, []):
        m = re.match(r"Link (\d+): (.*)", l)
        if m:
            links[int(m.group(1))] = m.group(2)
    active = fact(nv, "gpu.%d.nvlink.active_count" % g) or 0
    if not links:
        line(active == 0, "GPU %d active links (nvidia-smi lists none)" % g, active, 0)
        continue
    for l, text in sorted(links.items()):
        st = fact(nv, "gpu.%d.nvlink.%d.state" % (g, l))
        smi_active = "inactive" not in text.lower()
        line(st == ("active" if smi_active else "inactive"), "GPU %d link %d state" % (g, l), st, text)
        m = re.search(r"([\d.]+) GB/s", text)
        if m and smi_active:
            mbps = fact(nv, "gpu.%d.nvlink.%d.speed_mbps" % (g, l))
            line(mbps is not None and abs(mbps / 1000.0 - float(m.group(1))) < 0.01,
                 "GPU %d link %d speed GB/s" % (g, l), mbps and mbps / 1000.0, m.group(1))
e = per_gpu(open(out + "/smi-nvlink-e.txt").read())
compared_e = 0
names = {"replay errors": ["replay_errors"], "recovery errors": ["recovery_errors"],
         "crc errors": ["crc_flit_errors", "crc_data_errors"]}
for g in range(n):
    for l in e.get(g, []):
        m = re.match(r"Link (\d+): ([A-Za-z ]+): (\d+)", l)
        if not m or m.group(2).strip().lower() not in names:
            continue
        link, what, val = int(m.group(1)), m.group(2).strip().lower(), int(m.group(3))
        compared_e += 1
        ours = [fact(nv, "gpu.%d.nvlink.%d.%s" % (g, link, k)) for k in names[what]]
        line(val in ours or (len(ours) > 1 and val == sum(x or 0 for x in ours)),
             "GPU %d link %d %s" % (g, link, what), ours, val)
print("INFO nvidia-smi nvlink -e: %d counters compared" % compared_e)
# nvidia-smi topo -m: the matrix, then the NIC legend
t = open(out + "/smi-topo-m.txt").read()
rows = [re.sub(r"\x1b\[[0-9;]*m", "", l).rstrip() for l in t.splitlines()]
header = None
legend = {}
for l in rows:
    m = re.match(r"\s*(NIC\d+): (\S+)", l)
    if m:
        legend[m.group(1)] = m.group(2)
ournic = {fact(topo, "nic.%d.name" % k): k for k in range(fact(topo, "nic.count") or 0)}
for l in rows:
    cols = l.split()
    if cols and cols[0] == "GPU0" and header is None and "X" not in cols:
        header = cols
        continue
    if header and cols and re.match(r"GPU\d+$", cols[0]):
        g = int(cols[0][3:])
        for h, v in zip(header, cols[1:]):
            if re.match(r"GPU\d+$", h):
                j = int(h[3:])
                if j != g:
                    line(fact(topo, "gpu.%d.gpu.%d" % (g, j)) == v, "topo GPU%d-GPU%d" % (g, j),
                         fact(topo, "gpu.%d.gpu.%d" % (g, j)), v)
            elif re.match(r"NIC\d+$", h):
                k = ournic.get(legend.get(h))
                ours = fact(topo, "gpu.%d.nic.%d" % (g, k)) if k is not None else None
                line(ours == v, "topo GPU%d-%s (%s)" % (g, h, legend.get(h)), ours, v)
        # after the matrix: CPU Affinity, NUMA Affinity, GPU NUMA ID
        nmat = len([h for h in header if re.match(r"(GPU|NIC)\d+$", h)])
        vals = cols[1:]
        numa = fact(topo, "gpu.%d.numa_node" % g)
        smi = vals[nmat + 1] if len(vals) > nmat + 1 else None
        if smi and smi != "N/A":
            line(str(numa) == smi, "topo GPU%d NUMA affinity" % g, numa, smi)
        else:
            print("INFO GPU%d NUMA affinity: gpuvet=%s nvidia-smi=%s" % (g, numa, smi))
# serve: one gpuvet_gpu_nvlink_up series per link that check saw, with the same state
try:
    up = {}
    for l in open(out + "/serve-nvlink.prom"):
        m = re.match(r'gpuvet_gpu_nvlink_up\{gpu="(\d+)",uuid="[^"]*",link="(\d+)"\} (\S+)', l)
        if m:
            up[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
    for g in range(n):
        for l in range(fact(nv, "gpu.%d.nvlink.count" % g) or 0):
            st = fact(nv, "gpu.%d.nvlink.%d.state" % (g, l))
            if st is None:
                continue
            line(up.get((g, l)) == (1.0 if st == "active" else 0.0), "serve GPU %d link %d up" % (g, l),
                 up.get((g, l)), st, ("serve", "check"))
    w = json.load(open(out + "/watch.json"))
    for gj in w.get("gpus", []):
        g = gj.get("index", gj.get("gpu"))
        nvw = gj.get("nvlink")
        act = fact(nv, "gpu.%d.nvlink.active_count" % g) if g is not None else None
        line((nvw or {}).get("active", 0) == (act or 0), "watch GPU %s active links" % g,
             (nvw or {}).get("active"), act, ("watch", "check"))
except Exception as ex:
    print("DIFF serve/watch comparison failed: %r" % ex)
print("INFO nvlink findings:", ", ".join("%s(%s)" % (f["id"], f["severity"]) for f in doc["findings"]
                                        if f["id"].startswith("nvlink.")) or "none")
EOF
log "compare: $(grep -c '^OK' "$OUT/compare.txt") OK, $(grep -c '^DIFF' "$OUT/compare.txt") DIFF"
grep '^DIFF' "$OUT/compare.txt" | head -20 | tee -a "$OUT/summary.txt"
grep '^INFO' "$OUT/compare.txt" | tee -a "$OUT/summary.txt"
sed -n '/^Topology/,/^$/p' "$OUT/check.txt" | tee -a "$OUT/summary.txt"
cat "$OUT/history.txt" | tee -a "$OUT/summary.txt"
exit 0
