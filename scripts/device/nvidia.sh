#!/bin/bash
# GPU-machine checks of the NVIDIA layer (driver libraries, NVML/libcuda wrappers, probes).
# Run from the repository root on the GPU machine, through scripts/device-run.sh (build/ and
# .devlib/ carried):  bash scripts/device-run.sh scripts/device/nvidia.sh
#
# It writes, under $OUT/nvidia/:
#   smi-query.csv, smi-q.txt, smi-L.txt    nvidia-smi's view
#   check-fast.json, check.json, check.txt gpuvet check --fast / full (no Python layer)
#   compare.txt                            gpuvet's facts against nvidia-smi, one OK/DIFF line each
#   nvml_probe.txt                         every wrapper field with its state; snapshot costs
#   timing.txt, timing.json                gpuvet check and check --fast against nvidia-smi -q
#                                          and a bare cuInit, interleaved, median of N runs
#   summary.txt                            the lines to read first
# Exit status: 0 when it ran (DIFF lines are results, not script failures).
#
# What it must show on the 2 x H200 machine:
#   - compare.txt: every line OK (driver 580.159.04, CUDA 13.0, 2 x NVIDIA H200, cc 9.0,
#     143771 MiB, bus ids, UUIDs, persistence/compute/ECC/MIG modes, PCIe max, power limit);
#     "no fail finding" OK for both check --fast and check;
#   - timing.txt: gpuvet check / cuInit <= 1.15, gpuvet check --fast / nvidia-smi -q <= 0.5;
#   - nvml_probe.txt: no field in state error; versioned symbols present; the sampler's
#     GV_NVML_DYNAMIC snapshot well below 10 ms per GPU; events.open NVML_SUCCESS;
#     cuda.peer.0.1 1 (NVLink).
set -u
OUT=${OUT:-/tmp/gpuvet-out}/nvidia
mkdir -p "$OUT"
export NCCL_NVLS_ENABLE=0
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
GPUVET=${GPUVET:-build/gpuvet}
RUNS=${RUNS:-7}
BIN=$(mktemp -d)   # the two small programs built here stay out of $OUT

log() { echo "$@" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
log "nvidia.sh on $(hostname) $(date -u +%Y-%m-%dT%H:%M:%SZ)"
log "gpuvet: $GPUVET ($("$GPUVET" --version 2>&1 | head -1))"

# --- nvidia-smi's view ---
nvidia-smi -L > "$OUT/smi-L.txt" 2>&1
nvidia-smi -q > "$OUT/smi-q.txt" 2>&1
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,driver_version,memory.total,compute_cap,persistence_mode,compute_mode,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,ecc.mode.current,mig.mode.current,temperature.gpu,power.limit,clocks.max.sm,clocks_event_reasons.active \
	--format=csv,noheader,nounits > "$OUT/smi-query.csv" 2> "$OUT/smi-query.err"
nvidia-smi > "$OUT/smi.txt" 2>&1

# --- gpuvet check ---
"$GPUVET" check --fast --json --no-python > "$OUT/check-fast.json" 2> "$OUT/check-fast.err"
echo "exit $?" >> "$OUT/check-fast.err"
"$GPUVET" check --json --no-python > "$OUT/check.json" 2> "$OUT/check.err"
echo "exit $?" >> "$OUT/check.err"
"$GPUVET" check --no-python --verbose > "$OUT/check.txt" 2>&1

# --- the wrappers field by field (built here with gcc; no toolkit headers needed) ---
gcc -std=c11 -D_GNU_SOURCE -O2 -Isrc scripts/device/nvml_probe.c src/nvidia/nvml.c src/nvidia/cuda.c \
	src/nvidia/dlload.c src/core/util.c src/core/sysroot.c -ldl -lpthread -o "$BIN/nvml_probe" \
	> "$OUT/nvml_probe.build.txt" 2>&1 && "$BIN/nvml_probe" > "$OUT/nvml_probe.txt" 2>&1

# --- a bare cuInit: the floor of `gpuvet check` ---
cat > "$OUT/cuinit.c" <<'EOF'
/* dlopen libcuda.so.1 and call cuInit(0): what every CUDA program pays first */
#include <dlfcn.h>
#include <stdio.h>
int main(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	if (!h) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	int (*cuInit)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
	if (!cuInit) return 3;
	int rc = cuInit(0);
	printf("cuInit %d\n", rc);
	return rc != 0;
}
EOF
gcc -O2 -o "$BIN/cuinit" "$OUT/cuinit.c" -ldl > "$OUT/cuinit.build.txt" 2>&1

# --- compare facts with nvidia-smi, and time everything (python3 is on the GPU machine) ---
python3 - "$OUT" "$GPUVET" "$RUNS" "$BIN" <<'PY'
import json, os, re, statistics, subprocess, sys, time
out, gpuvet, runs, bindir = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
lines = []
def ok(cond, what, mine, theirs):
    lines.append(f"{'OK  ' if cond else 'DIFF'} {what}: gpuvet={mine!r} nvidia-smi={theirs!r}")

def facts_of(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except Exception as e:
        lines.append(f"DIFF {path}: not JSON ({e})")
        return {}, {}
    flat = {}
    for layer, kv in d.get("facts", {}).items():
        for k, v in kv.items():
            flat[f"{layer}.{k}"] = v
    return flat, d

for which in ("check-fast.json", "check.json"):
    facts, doc = facts_of(os.path.join(out, which))
    val = lambda k: facts.get(k, {}).get("value")
    lines.append(f"== {which}: findings " + ", ".join(f"{x['id']}({x['severity']})" for x in doc.get("findings", [])))
    fails = [x["id"] for x in doc.get("findings", []) if x["severity"] == "fail"]
    ok(not fails, "no fail finding", fails, [])
    smi = []
    with open(os.path.join(out, "smi-query.csv")) as f:
        for row in f:
            smi.append([c.strip() for c in row.split(",")])
    ok(val("nvml.device_count") == len(smi), "device count", val("nvml.device_count"), len(smi))
    cuda_ver = None
    with open(os.path.join(out, "smi.txt")) as f:
        m = re.search(r"CUDA Version:\s*([0-9.]+)", f.read())
        cuda_ver = m.group(1) if m else None
    ok(val("nvml.cuda_version") == cuda_ver, "max CUDA version", val("nvml.cuda_version"), cuda_ver)
    for r in smi:
        if len(r) < 19:
            continue
        i = int(r[0]); p = f"nvml.gpu.{i}."
        ok(val("nvml.driver_version") == r[4], f"gpu {i} driver version", val("nvml.driver_version"), r[4])
        ok(val(p + "name") == r[1], f"gpu {i} name", val(p + "name"), r[1])
        ok(val(p + "uuid") == r[2], f"gpu {i} uuid", val(p + "uuid"), r[2])
        ok((val(p + "pci_bus_id") or "").lower() == r[3].lower(), f"gpu {i} bus id", val(p + "pci_bus_id"), r[3])
        mib = (val(p + "memory_total_bytes") or 0) // (1 << 20)
        ok(str(mib) == r[5], f"gpu {i} memory MiB", mib, r[5])
        ok(val(p + "cc") == r[6], f"gpu {i} compute capability", val(p + "cc"), r[6])
        ok(val(p + "persistence") == (r[7] == "Enabled"), f"gpu {i} persistence", val(p + "persistence"), r[7])
        ok((val(p + "compute_mode") or "").replace("_", "").lower() == r[8].replace("_", "").lower(),
           f"gpu {i} compute mode", val(p + "compute_mode"), r[8])
        # the link generation changes with load: report, do not insist
        lines.append(f"INFO gpu {i} pcie gen current: gpuvet={val(p + 'pcie_gen_current')} nvidia-smi={r[9]}")
        ok(str(val(p + "pcie_gen_max")) == r[10], f"gpu {i} pcie gen max", val(p + "pcie_gen_max"), r[10])
        ok(str(val(p + "pcie_width_current")) == r[11], f"gpu {i} pcie width", val(p + "pcie_width_current"), r[11])
        ok(str(val(p + "pcie_width_max")) == r[12], f"gpu {i} pcie width max", val(p + "pcie_width_max"), r[12])
        ok(val(p + "ecc_enabled") == (r[13] == "Enabled"), f"gpu {i} ecc mode", val(p + "ecc_enabled"), r[13])
        mig = val(p + "mig_mode")
        ok(r[14] in ("[N/A]", "N/A") or mig == (r[14] == "Enabled"), f"gpu {i} mig mode", mig, r[14])
        t = val(p + "temperature_c")
        ok(t is not None and abs(t - int(r[15])) <= 3, f"gpu {i} temperature (+-3 C)", t, r[15])
        pl = val(p + "power_limit_w")
        ok(pl is not None and abs(pl - float(r[16])) < 1, f"gpu {i} power limit W", pl, r[16])
        ok(str(val(p + "max_sm_clock_mhz")) == r[17], f"gpu {i} max sm clock", val(p + "max_sm_clock_mhz"), r[17])
        cer = val(p + "clock_event_reasons")
        try:
            theirs = int(r[18], 16)
        except ValueError:
            theirs = None
        lines.append(f"INFO gpu {i} clock event reasons: gpuvet={cer} ({val(p + 'clock_event_reasons_text')}) nvidia-smi={r[18]}")
    if which == "check.json":
        ok(val("cuda.init") == "ok", "cuInit", val("cuda.init"), "ok")
        ok(val("cuda.device_count") == len(smi), "CUDA device count", val("cuda.device_count"), len(smi))
        lines.append(f"INFO cuda.init_seconds={val('cuda.init_seconds')} cuda.driver_version={val('cuda.driver_version')}")
        for k in sorted(facts):
            if k.startswith("cuda.peer.") or k.startswith("cuda.dev."):
                lines.append(f"INFO {k}={facts[k].get('value')}")
    lines.append(f"INFO nvml.library={val('nvml.library')} file version={val('nvml.library_file_version')}")
    lines.append(f"INFO cuda.library={val('cuda.library')} file version={val('cuda.library_file_version')}")
    lines.append(f"INFO kmsg.sources={val('kmsg.sources')} xid.count={val('kmsg.xid.count')} unreadable={val('kmsg.unreadable')}")
    lines.append("INFO probe seconds: " + ", ".join(f"{k.split('.')[-1]}={v.get('value'):.3f}" for k, v in facts.items()
                                                  if k.startswith("meta.probe_seconds.")))
with open(os.path.join(out, "compare.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")

# timing: interleaved so drifts hit every command alike
cmds = {
    "cuinit": [os.path.join(bindir, "cuinit")],
    "nvidia-smi -q": ["nvidia-smi", "-q"],
    "gpuvet check": [gpuvet, "check", "--no-python", "--json"],
    "gpuvet check --fast": [gpuvet, "check", "--fast", "--no-python", "--json"],
}
times = {k: [] for k in cmds}
for _ in range(1):  # warm-up: page cache, persistence state
    for k, c in cmds.items():
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(runs):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        subprocess.run(c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[k].append(time.perf_counter() - t0)
med = {k: statistics.median(v) for k, v in times.items()}
res = {"runs": runs, "median_s": med, "all_s": times,
       "check_over_cuinit": med["gpuvet check"] / med["cuinit"] if med["cuinit"] else None,
       "fast_over_smi_q": med["gpuvet check --fast"] / med["nvidia-smi -q"] if med["nvidia-smi -q"] else None}
with open(os.path.join(out, "timing.json"), "w") as f:
    json.dump(res, f, indent=1)
with open(os.path.join(out, "timing.txt"), "w") as f:
    for k in cmds:
        f.write(f"{k:22s} median {med[k]:.3f} s  ({', '.join(f'{t:.3f}' for t in times[k])})\n")
    f.write(f"gpuvet check / cuInit          = {res['check_over_cuinit']:.2f}  (target <= 1.15)\n")
    f.write(f"gpuvet check --fast / smi -q   = {res['fast_over_smi_q']:.2f}  (target <= 0.5)\n")
PY

log "--- compare.txt (DIFF lines) ---"
grep -c '^OK' "$OUT/compare.txt" | sed 's/^/OK lines: /' | tee -a "$OUT/summary.txt"
grep '^DIFF' "$OUT/compare.txt" | tee -a "$OUT/summary.txt"
log "--- timing.txt ---"
cat "$OUT/timing.txt" | tee -a "$OUT/summary.txt"
log "--- nvml_probe timings ---"
grep -E '^(timing|events|cuda.init|cuda.table|nvml.init)' "$OUT/nvml_probe.txt" | tee -a "$OUT/summary.txt"
rm -rf "$BIN"
exit 0
