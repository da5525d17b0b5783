#!/bin/bash
# Where `gpuvet check --fast` spends its time on a real GPU machine (issue 24, item 7), in one
# short call (~40 s on one H200):
#   bash scripts/device-run.sh scripts/device/fastprof.sh     (build/ and .devlib/ carried)
#
# 1. Nine interleaved rounds after a warm-up: nvidia-smi --query-gpu=... --format=csv (the
#    anchor), gpuvet check --fast --no-history, the same with a history database, gpuvet
#    --version (start-up alone), and a bare C program (built here) that dlopens NVML, calls
#    nvmlInit_v2 and asks the anchor's five values (NVML's floor for this query). Medians.
#    A second binary, build/gpuvet.base, when carried, runs in the same rounds (A/B).
# 2. Per-probe seconds, per-child seconds and nvml.init_seconds of every --fast run (medians).
# 3. One strace -f -ttt -T timeline and one -c summary of check --fast; perf when present.
# Writes under $OUT/fastprof/. Never changes clocks, power limits or modes.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/fastprof
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
G=${GPUVET:-$PWD/build/gpuvet}
BASE=$PWD/build/gpuvet.base
BIN=$(mktemp -d /tmp/gpuvet-fp.XXXXXX)
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi -L >> "$OUT/date.txt" 2>&1
nproc >> "$OUT/date.txt"
nvidia-smi -q | grep -i -E "persistence|driver version" >> "$OUT/date.txt" 2>&1

cat > "$BIN/query.c" <<'EOF'
/* NVML's floor for nvidia-smi's five-value query: dlopen, nvmlInit_v2, one device, five values. */
#include <dlfcn.h>
#include <stdio.h>
#include <nvml.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
int main(void)
{
	double t0 = now();
	void *n = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
	double t1 = now();
	if (!n) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(n, "nvmlInit_v2");
	nvmlReturn_t (*count)(unsigned *) = (nvmlReturn_t (*)(unsigned *))dlsym(n, "nvmlDeviceGetCount_v2");
	nvmlReturn_t (*handle)(unsigned, nvmlDevice_t *) = (nvmlReturn_t (*)(unsigned, nvmlDevice_t *))dlsym(n, "nvmlDeviceGetHandleByIndex_v2");
	nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned) = (nvmlReturn_t (*)(nvmlDevice_t, char *, unsigned))dlsym(n, "nvmlDeviceGetName");
	nvmlReturn_t (*mem)(nvmlDevice_t, nvmlMemory_t *) = (nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t *))dlsym(n, "nvmlDeviceGetMemoryInfo");
	nvmlReturn_t (*util)(nvmlDevice_t, nvmlUtilization_t *) = (nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t *))dlsym(n, "nvmlDeviceGetUtilizationRates");
	nvmlReturn_t (*temp)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned *) = (nvmlReturn_t (*)(nvmlDevice_t, nvmlTemperatureSensors_t, unsigned *))dlsym(n, "nvmlDeviceGetTemperature");
	nvmlReturn_t (*drv)(char *, unsigned) = (nvmlReturn_t (*)(char *, unsigned))dlsym(n, "nvmlSystemGetDriverVersion");
	if (init() != 0) return 3;
	double t2 = now();
	unsigned c = 0;
	count(&c);
	char v[96];
	drv(v, sizeof v);
	for (unsigned i = 0; i < c; i++) {
		nvmlDevice_t d; nvmlMemory_t m; nvmlUtilization_t u; unsigned t; char nm[96];
		handle(i, &d); name(d, nm, sizeof nm); mem(d, &m); util(d, &u); temp(d, NVML_TEMPERATURE_GPU, &t);
		printf("%s, %s, %llu, %u, %u\n", nm, v, m.used >> 20, u.gpu, t);
	}
	fprintf(stderr, "dlopen %.2f ms, nvmlInit %.2f ms, queries %.2f ms\n", (t1 - t0) * 1e3, (t2 - t1) * 1e3, (now() - t2) * 1e3);
	return 0;
}
EOF
QUERY=
if [ -n "$CUDA_INC" ] && gcc -O2 -I"$CUDA_INC" -o "$BIN/query" "$BIN/query.c" -ldl 2> "$OUT/query-build.txt"; then
	QUERY=$BIN/query
fi

python3 - "$G" "$BASE" "$QUERY" "$OUT" <<'EOF'
import json, os, subprocess, sys, time, statistics
g, base, query, out = sys.argv[1:5]
smi = ["nvidia-smi", "--query-gpu=name,driver_version,memory.used,utilization.gpu,temperature.gpu", "--format=csv"]
cmds = {
    "nvidia-smi --query-gpu": smi,
    "check --fast --no-history": [g, "check", "--fast", "--no-history", "--json"],
    "check --fast (history)": [g, "check", "--fast", "--db", out + "/history.db"],
    # without a home the limits cache is off: every limit asked (env adds its own exec)
    "check --fast --no-history, no cache": ["env", "-u", "HOME", "-u", "XDG_CACHE_HOME", g, "check", "--fast", "--no-history", "--json"],
    "--version": [g, "--version"],
}
if query:
    cmds["bare NVML query"] = [query]
if os.access(base, os.X_OK):
    cmds["base: check --fast --no-history"] = [base, "check", "--fast", "--no-history", "--json"]
    cmds["base: --version"] = [base, "--version"]
times = {k: [] for k in cmds}
bd = {}
for rnd in range(7):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        if rnd == 0:
            continue  # warm-up
        times[k].append(dt)
        if c[-1] == "--json" and "check" in c:
            try:
                d = json.loads(p.stdout)
            except Exception:
                continue
            f = d.get("facts", {})
            for grp, key in (("meta", "probe_seconds."), ("meta", "stage_seconds."), ("isolation", ".seconds")):
                for fk, fv in f.get(grp, {}).items():
                    if key in fk and isinstance(fv.get("value"), (int, float)):
                        bd.setdefault(k + " " + grp + "." + fk, []).append(fv["value"])
            for fk in ("init_seconds",):
                for grp in ("nvml", "cuda"):
                    fv = f.get(grp, {}).get(fk)
                    if fv and isinstance(fv.get("value"), (int, float)):
                        bd.setdefault(k + " " + grp + "." + fk, []).append(fv["value"])
med = {k: statistics.median(v) for k, v in times.items() if v}
with open(out + "/timing.txt", "w") as fh:
    for k, v in med.items():
        fh.write("%-36s median %.1f ms  (min %.1f max %.1f, n=%d)\n" % (k, v * 1e3, min(times[k]) * 1e3, max(times[k]) * 1e3, len(times[k])))
    a = med.get("nvidia-smi --query-gpu")
    for k in ("check --fast --no-history", "check --fast (history)", "base: check --fast --no-history"):
        if a and k in med:
            fh.write("ratio %s / nvidia-smi --query-gpu = %.2fx\n" % (k, med[k] / a))
with open(out + "/breakdown.txt", "w") as fh:
    for k in sorted(bd):
        fh.write("%-80s median %.2f ms  max %.2f\n" % (k, statistics.median(bd[k]) * 1e3, max(bd[k]) * 1e3))
json.dump({"times": times, "breakdown": bd}, open(out + "/timing.json", "w"))
print(open(out + "/timing.txt").read())
EOF

"$G" check --fast --no-history --json > "$OUT/fast.json" 2> "$OUT/fast.err"
cp "${XDG_CACHE_HOME:-$HOME/.cache}/gpuvet/nvml-limits" "$OUT/nvml-limits.txt" 2> /dev/null
grep -o '"gpu\.[0-9]*\.limits_from":[^}]*}' "$OUT/fast.json" > "$OUT/limits-from.txt" 2>&1
# the cached limits against the ones asked now: the same facts (a full check's NVML facts, --fast's)
env -u HOME -u XDG_CACHE_HOME "$G" check --fast --no-history --json > "$OUT/fast-nocache.json" 2> /dev/null
python3 - "$OUT/fast.json" "$OUT/fast-nocache.json" > "$OUT/limits-compare.txt" 2>&1 <<'PY'
import json, sys
a, b = (json.load(open(x))["facts"]["nvml"] for x in sys.argv[1:3])
keys = [k for k in a if any(t in k for t in ("pcie_gen_max", "pcie_width_max", "slowdown", "shutdown", "gpu_max", "max_sm_clock", "max_mem_clock", "default_limit"))]
bad = [k for k in keys if a[k].get("value") != b.get(k, {}).get("value")]
print("%d limit facts compared, %d differ%s" % (len(keys), len(bad), (": " + ", ".join(bad)) if bad else ""))
for k in sorted(keys):
    print(k, a[k].get("value"), b.get(k, {}).get("value"))
PY
[ -n "$QUERY" ] && for i in 1 2 3; do "$QUERY" > /dev/null 2>> "$OUT/query-stages.txt"; done
# every NVML call gpuvet makes, timed by a forwarding shim (scripts/device/nvml_time_shim.c)
if gcc -O2 -shared -fPIC -o "$BIN/shim.so" scripts/device/nvml_time_shim.c -ldl 2> "$OUT/shim-build.txt"; then
	for i in 1 2 3 4; do
		rm -f "$BIN/calls.txt"
		NVML_SHIM_OUT=$BIN/calls.txt GPUVET_NVML_LIB=$BIN/shim.so "$G" check --fast --no-history --json > "$OUT/shim-fast.json" 2>&1
		cp "$BIN/calls.txt" "$OUT/calls-$i.txt"
	done
	awk '{c[$2]++; s[$2]+=$3; if ($3 > m[$2]) m[$2] = $3} END {for (k in c) printf "%-48s %5d calls %9.3f ms total %8.3f ms max\n", k, c[k] / 4, s[k] * 250, m[k] * 1000}' "$OUT"/calls-*.txt | sort -k4 -n -r > "$OUT/nvml-calls.txt"
fi
if command -v strace > /dev/null; then
	strace -f -ttt -T -o "$OUT/strace-fast.txt" "$G" check --fast --json --no-history > /dev/null 2>&1
	strace -f -c -o "$OUT/strace-fast-summary.txt" "$G" check --fast --json --no-history > /dev/null 2>&1
fi
if command -v perf > /dev/null; then
	perf record -q -F 20000 -g -o "$BIN/perf.data" -- bash -c "for i in 1 2 3 4 5 6 7 8 9 10; do $G check --fast --no-history > /dev/null; done" > /dev/null 2>&1
	perf report -i "$BIN/perf.data" --no-children --sort dso,sym -g none 2> /dev/null | head -80 > "$OUT/perf.txt"
fi
command -v ltrace > /dev/null && echo "ltrace present" >> "$OUT/date.txt"
exit 0
