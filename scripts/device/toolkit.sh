#!/bin/bash
# Toolkits, the loader and `gpuvet env` on the GPU machine (run through scripts/device-run.sh).
# What it must show (see the toolkit helper's report):
#   - toolkit facts: the CUDA 13.0 toolkit, its version and what PATH/CUDA_HOME//usr/local/cuda point to;
#   - loader facts: the system cuDNN 9.14 and NCCL copies and both libnvidia-ml copies, with versions;
#   - "loader simulation vs real dlopen": every line "match" (gpuvet's loader_resolve against the
#     file the real dynamic loader maps for the same soname, via python3 ctypes);
#   - no lib.* / toolkit.* finding that is false;
#   - env --scan within its limits, against `find` as the anchor.
set -u
G=${GPUVET:-build/gpuvet}
OUT=${OUT:-/tmp/gpuvet-out}
echo "== gpuvet check --json --no-python (toolkit, loader facts; findings)"
"$G" check --json --no-python >"$OUT/toolkit-check.json"
python3 - "$OUT/toolkit-check.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for layer in ("toolkit", "loader"):
    for k, v in d["facts"].get(layer, {}).items():
        if k.startswith("loader.conf") or ".names" in k:
            continue
        print(f"{layer}.{k} = {v.get('value', '(' + v.get('state', '?') + ')')}  [{v.get('source') or ''}]")
print("findings:", [(f["id"], f["severity"], f["title"]) for f in d["findings"]])
print("probe seconds:", {k: round(v["value"], 4) for k, v in d["facts"]["meta"].items() if "seconds" in k})
PY
echo
echo "== loader simulation vs real dlopen (python3 ctypes, /proc/self/maps)"
python3 - "$OUT/toolkit-check.json" <<'PY'
import json, os, subprocess, sys
d = json.load(open(sys.argv[1]))["facts"]["loader"]
n = int(d.get("pick.count", {}).get("value", 0))
probe = r'''
import ctypes, os, sys
so = sys.argv[1]
try:
    ctypes.CDLL(so, mode=os.RTLD_LAZY)
except OSError as e:
    print("dlopen failed:", e); sys.exit(0)
stem = so.split(".so")[0]
for l in open("/proc/self/maps"):
    p = l.split()[-1] if len(l.split()) >= 6 else ""
    if os.path.basename(p).startswith(stem + ".so"):
        print(os.path.realpath(p)); break
'''
for i in range(n):
    so = d[f"pick.{i}.soname"]["value"]
    want = d.get(f"pick.{i}.real", {}).get("value")
    r = subprocess.run([sys.executable, "-c", probe, so], capture_output=True, text=True, timeout=60)
    got = r.stdout.strip()
    want_real = os.path.realpath(want) if want else None
    print(("match   " if got == want_real else "MISMATCH"), so, "gpuvet:", want_real, "ld.so:", got or r.stderr.strip()[-200:])
PY
echo
echo "== ldconfig -p (CUDA libraries)"
ldconfig -p | grep -E "libcudart|libcublas|libcudnn|libnccl|libnvrtc|libnvJitLink|libcusparse|libnvidia-ml|libcuda\.so" | head -60
echo
echo "== gpuvet env"
"$G" env
"$G" env --json >"$OUT/env.json"
echo
echo "== eval \"\$(gpuvet env use 13.0)\""
"$G" env use 13.0
( eval "$("$G" env use 13.0)"; echo "CUDA_HOME=$CUDA_HOME"; command -v nvcc; nvcc --version | tail -2 )
"$G" env use 12.1; echo "exit $? (2 expected: not installed)"
echo
echo "== gpuvet env --scan (timed) and find as the anchor"
/usr/bin/time -f "gpuvet env --scan: %e s, %M KiB" "$G" env --scan --time-limit 60 >"$OUT/env-scan.txt" 2>"$OUT/env-scan.time"
cat "$OUT/env-scan.txt" "$OUT/env-scan.time"
"$G" env --scan --json --time-limit 60 >"$OUT/env-scan.json"
/usr/bin/time -f "find: %e s" timeout 120 find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run \) -prune -o \
	\( -name 'libcudnn*.so*' -o -name 'libcudart.so*' -o -name 'libnccl.so*' -o -name 'libcublas*.so*' -o -name 'libnvidia-ml.so*' \) -print 2>&1 | sort | tail -80
