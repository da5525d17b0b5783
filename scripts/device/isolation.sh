#!/bin/sh
# GPU-machine checks of issue 12's isolation work, in one call (~1 minute, on one H200):
#   bash scripts/device-run.sh scripts/device/isolation.sh     (build/ and .devlib/ carried)
#
# 1. Timing, medians of 9 runs interleaved with their anchors (1 warm-up round first):
#      gpuvet check --fast --no-history            against nvidia-smi --query-gpu=... --format=csv
#                                                  and nvidia-smi -q
#      gpuvet check --no-python --no-history       against a bare C program (built here with gcc,
#                                                  nvml.h/cuda.h from the CUDA include directory)
#                                                  that only dlopens and calls nvmlInit_v2 and cuInit(0)
#      the same two checks with the history database (--db $OUT/history.db), as a user runs them
#      a bare nvmlInit-only program (NVML's own floor)
#    Targets (issue 12): check --fast <= 1.0x nvidia-smi --query-gpu; check --no-python <= 1.05x
#    the bare nvmlInit+cuInit program.
# 2. Where check's time goes: per-probe seconds (meta.probe_seconds.*), each supervised child's
#    time (isolation.*.seconds), nvml.init_seconds and cuda.init_seconds, medians of the 9
#    --fast and --no-python runs; one strace -f -ttt timeline of each when strace is there.
# 3. Faults on the real driver: a truncated copy of this machine's libnvidia-ml (GPUVET_NVML_LIB)
#    must give driver.library-crashed (SIGBUS) with valid JSON and exit 1 for check and watch;
#    the toolkit's stub directory on LD_LIBRARY_PATH (the stub cuBLASLt prints) must leave
#    check --json one valid document; SIGTERM 150 ms into check --no-python (inside cuInit) must
#    end it within 1 s and leave no child behind.
# 4. watch --once --json (the first contact in a child, then NVML here) answers with every GPU.
#
# Writes under $OUT/isolation/: timing.json, timing.txt, breakdown.txt, strace-fast.txt,
# strace-nopython.txt, faults.txt, verdict.txt, and benchmarks-table.md (rows for
# docs/benchmarks.md). Never changes clocks, power limits or modes; never resets the GPU.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/isolation
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-$PWD/build/gpuvet}
BIN=$(mktemp -d /tmp/gpuvet-iso.XXXXXX)
CUDA_INC=
for d in /usr/local/cuda/include /usr/local/cuda-13.0/include /usr/include; do
	[ -f "$d/nvml.h" ] && { CUDA_INC=$d; break; }
done
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi -L >> "$OUT/date.txt" 2>&1
"$G" --version >> "$OUT/date.txt" 2>&1

cat > "$BIN/bare.c" <<'EOF'
/* The floor of any program that asks NVML and CUDA: dlopen both, nvmlInit_v2, cuInit(0). */
#include <dlfcn.h>
#include <stdio.h>
#ifdef HAVE_NVML_H
#include <nvml.h>
#include <cuda.h>
#else /* the same ABI: both return an int enum, 0 on success */
typedef int nvmlReturn_t;
typedef int CUresult;
#define NVML_SUCCESS 0
#define CUDA_SUCCESS 0
#endif
int main(int argc, char **argv)
{
	int want_cuda = argc < 2 || argv[1][0] != 'n';
	void *n = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
	if (!n) { fprintf(stderr, "%s\n", dlerror()); return 2; }
	nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))dlsym(n, "nvmlInit_v2");
	if (!init || init() != NVML_SUCCESS) return 3;
	if (want_cuda) {
		void *c = dlopen("libcuda.so.1", RTLD_LAZY);
		if (!c) { fprintf(stderr, "%s\n", dlerror()); return 4; }
		CUresult (*cuinit)(unsigned) = (CUresult (*)(unsigned))dlsym(c, "cuInit");
		if (!cuinit || cuinit(0) != CUDA_SUCCESS) return 5;
	}
	return 0;
}
EOF
HDR=
[ -n "$CUDA_INC" ] && [ -f "$CUDA_INC/cuda.h" ] && HDR="-DHAVE_NVML_H -I$CUDA_INC"
if ! gcc -O2 $HDR -o "$BIN/bare" "$BIN/bare.c" -ldl > "$OUT/gcc.txt" 2>&1; then
	echo "FAIL cannot build the bare program with gcc" | tee "$OUT/verdict.txt"
	cat "$OUT/gcc.txt"
	exit 1
fi
"$BIN/bare" || echo "bare program exit $?" >> "$OUT/faults.txt"

python3 - "$G" "$BIN" "$OUT" <<'PY'
import json, os, statistics, subprocess, sys, time
g, bindir, out = sys.argv[1:4]
Q = ("index,name,uuid,pci.bus_id,driver_version,memory.total,compute_cap,persistence_mode,compute_mode,"
     "pcie.link.gen.current,pcie.link.width.current,ecc.mode.current,temperature.gpu,power.draw,clocks.sm")
db = os.path.join(out, "history.db")
cmds = {
    "nvidia-smi --query-gpu": ["nvidia-smi", "--query-gpu=" + Q, "--format=csv"],
    "nvidia-smi -q": ["nvidia-smi", "-q"],
    "bare nvmlInit": [os.path.join(bindir, "bare"), "nvml"],
    "bare nvmlInit+cuInit": [os.path.join(bindir, "bare")],
    "check --fast": [g, "check", "--fast", "--json", "--no-history"],
    "check --fast (history)": [g, "check", "--fast", "--json", "--db", db],
    "check --no-python": [g, "check", "--no-python", "--json", "--no-history"],
    "check --no-python (history)": [g, "check", "--no-python", "--json", "--db", db],
}
times = {k: [] for k in cmds}
docs = {"check --fast": [], "check --no-python": []}
for rnd in range(10):  # round 0 warms the page cache and the driver
    for k, c in cmds.items():
        t0 = time.perf_counter()
        r = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        if rnd == 0:
            continue
        times[k].append(dt)
        if k in docs:
            try:
                docs[k].append(json.loads(r.stdout))
            except ValueError:
                docs[k].append(None)
med = {k: statistics.median(v) for k, v in times.items()}
ratio_fast = med["check --fast"] / med["nvidia-smi --query-gpu"]
ratio_np = med["check --no-python"] / med["bare nvmlInit+cuInit"]
json.dump({"median_s": med, "all_s": times, "fast_over_smi_query": ratio_fast,
           "nopython_over_bare": ratio_np}, open(os.path.join(out, "timing.json"), "w"), indent=1)
with open(os.path.join(out, "timing.txt"), "w") as f:
    for k in cmds:
        f.write(f"{k:30s} median {med[k]*1000:8.1f} ms  ({', '.join(f'{t*1000:.1f}' for t in times[k])})\n")
    f.write(f"check --fast / nvidia-smi --query-gpu   = {ratio_fast:.2f}  (target <= 1.0)\n")
    f.write(f"check --no-python / bare nvml+cuInit    = {ratio_np:.2f}  (target <= 1.05)\n")
    f.write(f"check --fast / nvidia-smi -q            = {med['check --fast'] / med['nvidia-smi -q']:.2f}\n")

def fact(d, key):
    layer, _, rest = key.partition(".")
    v = (d or {}).get("facts", {}).get(layer, {}).get(rest)
    return v.get("value") if isinstance(v, dict) else None

with open(os.path.join(out, "breakdown.txt"), "w") as f:
    for k, ds in docs.items():
        bad = sum(d is None for d in ds)
        f.write(f"== {k}: {len(ds)} runs, {bad} without valid JSON\n")
        keys = set()
        for d in ds:
            for layer in ("meta", "isolation"):
                for rest, v in (d or {}).get("facts", {}).get(layer, {}).items():
                    if "seconds" in rest and isinstance(v, dict) and isinstance(v.get("value"), (int, float)):
                        keys.add(f"{layer}.{rest}")
        keys |= {"nvml.init_seconds", "cuda.init_seconds"}
        rows = []
        for key in keys:
            vals = [fact(d, key) for d in ds]
            vals = [v for v in vals if isinstance(v, (int, float))]
            if vals:
                rows.append((statistics.median(vals), key, min(vals), max(vals)))
        for m, key, lo, hi in sorted(rows, reverse=True):
            f.write(f"  {key:40s} median {m*1000:8.2f} ms  (min {lo*1000:.2f}, max {hi*1000:.2f})\n")
        outcomes = sorted({f"{n}={fact(d, f'isolation.{n}.outcome')}" for d in ds for n in ("nvml", "cudalib", "cuda", "loader")})
        f.write("  children: " + ", ".join(outcomes) + "\n")
        f.write("  findings (last run): " + ", ".join(x["id"] for x in (ds[-1] or {}).get("findings", [])) + "\n")
with open(os.path.join(out, "benchmarks-table.md"), "w") as f:
    f.write("| command | median | anchor | ratio | target |\n|---|---|---|---|---|\n")
    f.write(f"| `gpuvet check --fast` | {med['check --fast']*1000:.1f} ms | nvidia-smi --query-gpu {med['nvidia-smi --query-gpu']*1000:.1f} ms | {ratio_fast:.2f}x | <= 1.0x |\n")
    f.write(f"| `gpuvet check --no-python` | {med['check --no-python']*1000:.1f} ms | bare nvmlInit+cuInit {med['bare nvmlInit+cuInit']*1000:.1f} ms | {ratio_np:.2f}x | <= 1.05x |\n")
    f.write(f"| `gpuvet check --fast` (history on) | {med['check --fast (history)']*1000:.1f} ms | nvidia-smi -q {med['nvidia-smi -q']*1000:.1f} ms | {med['check --fast (history)']/med['nvidia-smi -q']:.2f}x | |\n")
    f.write(f"| bare nvmlInit | {med['bare nvmlInit']*1000:.1f} ms | | | |\n")
PY

if command -v strace > /dev/null; then
	strace -f -ttt -o "$OUT/strace-fast.txt" "$G" check --fast --json --no-history > /dev/null 2>&1
	strace -f -ttt -o "$OUT/strace-nopython.txt" "$G" check --no-python --json --no-history > /dev/null 2>&1
	strace -f -c -o "$OUT/strace-fast-summary.txt" "$G" check --fast --json --no-history > /dev/null 2>&1
fi

# 3. faults with the real driver's files
{
	NV=$(ls /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.[0-9]*.* 2>/dev/null | head -1)
	echo "libnvidia-ml: $NV"
	if [ -n "$NV" ]; then
		head -c 1048576 "$NV" > "$BIN/libnvidia-ml.so.1"
		GPUVET_NVML_LIB=$BIN/libnvidia-ml.so.1 "$G" check --fast --json --no-history > "$OUT/trunc-check.json" 2> "$OUT/trunc-check.err"
		echo "truncated: check exit $?"
		python3 -c "
import json,sys
d=json.load(open('$OUT/trunc-check.json'))
ids=[x['id'] for x in d['findings']]
print('truncated: check JSON valid; findings', ids)
print('truncated: signal', d['facts'].get('isolation',{}).get('nvml.signal',{}).get('value'))
print('PASS truncated' if 'driver.library-crashed' in ids else 'FAIL truncated: no driver.library-crashed')" 2>&1
		GPUVET_NVML_LIB=$BIN/libnvidia-ml.so.1 "$G" watch --once > /dev/null 2> "$OUT/trunc-watch.err"
		rc=$?
		echo "truncated: watch exit $rc: $(cat "$OUT/trunc-watch.err")"
		[ $rc -eq 1 ] && grep -q SIGBUS "$OUT/trunc-watch.err" && echo "PASS truncated watch" || echo "FAIL truncated watch"
	fi
	STUBS=
	for d in /usr/local/cuda/lib64/stubs /usr/local/cuda/targets/x86_64-linux/lib/stubs; do
		[ -d "$d" ] && { STUBS=$d; break; }
	done
	echo "stubs: $STUBS ($(ls "$STUBS" 2>/dev/null | tr '\n' ' '))"
	if [ -n "$STUBS" ]; then
		LD_LIBRARY_PATH="$STUBS:${LD_LIBRARY_PATH:-}" "$G" check --no-python --json --no-history > "$OUT/stubs-check.json" 2> "$OUT/stubs-check.err"
		echo "stubs: check exit $?"
		python3 -c "
import json
raw=open('$OUT/stubs-check.json').read()
try:
    d=json.loads(raw)
except ValueError as e:
    print('FAIL stubs: stdout is not JSON:', e, raw[:300]); raise SystemExit
iso=d['facts'].get('isolation',{})
print('stubs: isolation', {k:v.get('value') for k,v in iso.items() if 'stdout' in k or 'outcome' in k})
print('stubs: findings', [x['id'] for x in d['findings']])
print('PASS stubs: JSON valid')"
	fi
	# SIGTERM inside cuInit
	"$G" check --no-python --json --no-history > /dev/null 2>&1 &
	p=$!
	sleep 0.15
	t0=$(date +%s.%N)
	kill -TERM $p
	wait $p
	rc=$?
	t1=$(date +%s.%N)
	sleep 0.3
	left=$(ps -eo pid,args | grep "[b]uild/gpuvet check" | wc -l)
	dt=$(python3 -c "print(round($t1-$t0,3))")
	echo "sigterm: exit $rc after $dt s, $left gpuvet processes left"
	python3 -c "print('PASS sigterm' if $dt < 1 and $left == 0 else 'FAIL sigterm')"
} > "$OUT/faults.txt" 2>&1

# 4. watch through the first contact
t0=$(date +%s.%N)
"$G" watch --once --json > "$OUT/watch.json" 2> "$OUT/watch.err"
echo "watch --once --json exit $? in $(python3 -c "print(round($(date +%s.%N)-$t0,3))") s" >> "$OUT/faults.txt"
python3 -c "
import json
d=json.load(open('$OUT/watch.json'))
print('watch: gpus', len(d.get('gpus',[])), 'error', d.get('error'))" >> "$OUT/faults.txt" 2>&1

{
	cat "$OUT/timing.txt"
	echo
	cat "$OUT/breakdown.txt"
	echo
	grep -E "^(PASS|FAIL)|exit" "$OUT/faults.txt"
} > "$OUT/verdict.txt"
cat "$OUT/verdict.txt"
rm -rf "$BIN"
exit 0
