#!/bin/bash
# The Python/PyTorch layer on the GPU machine (run through scripts/device-run.sh).
# What it must show (torch 2.11.0+cu130 there, H200, driver 580):
#   - `gpuvet check` has no fail; torch.libraries says torch mapped the pip cuDNN 9.19
#     (nvidia-cudnn-cu13) and names the system cuDNN 9.14 on the loader path as not used;
#   - python.live.cuda.arch_list "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120" covers the H200 (9.0):
#     no torch.arch-unsupported; python.torch.arch (static .nv_fatbin read) agrees;
#   - python.live.smoke.matmul/conv "ok"; no lib.shadowed, no torch.cudnn-mismatch;
#   - `python3 -m torch.utils.collect_env` next to it (docs/comparison.md puts both side by side);
#   - timings for docs/benchmarks.md: gpuvet check (live probe) against collect_env and against
#     python3 -c "import torch; torch.cuda.is_available()", and gpuvet check --no-python.
#   - gpuvet fix (text, --json) for this machine.
set -u
G=${GPUVET:-build/gpuvet}
OUT=${OUT:-/tmp/gpuvet-out}
PY=$(command -v python3)
echo "== machine"
nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv,noheader
"$PY" -c "import sys; print(sys.version)"
echo
echo "== gpuvet check --json (with the live probe)"
"$G" check --json >"$OUT/python-check.json"
echo "exit $?"
"$PY" - "$OUT/python-check.json" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
py = d["facts"].get("python", {})
for k, v in py.items():
    if k.startswith("interpreters.") and not k.endswith((".path", ".torch")):
        continue
    val = v.get("value", "(%s: %s)" % (v.get("state"), v.get("error")))
    print("python.%s = %s" % (k, val))
print()
for f in d["findings"]:
    print("%-5s %-26s %s" % (f["severity"], f["id"], f["title"]))
    for e in f.get("evidence", []):
        print("        ", e)
print()
fails = [f["id"] for f in d["findings"] if f["severity"] == "fail"]
print("FAILS:", fails or "none")
arch = py.get("live.cuda.arch_list", {}).get("value")
print("live arch list:", arch, "| static:", py.get("torch.arch", {}).get("value"))
print("probe seconds:", {k: round(v["value"], 3) for k, v in d["facts"]["meta"].items() if "seconds" in k})
PYEOF
echo
echo "== gpuvet check (text)"
"$G" check
echo
echo "== python3 -m torch.utils.collect_env"
"$PY" -m torch.utils.collect_env 2>&1 | tee "$OUT/collect_env.txt"
echo
echo "== what the process really maps (anchor for torch.libraries)"
"$PY" - <<'PYEOF'
import os, torch
torch.backends.cudnn.version()
x = torch.randn(1, 3, 8, 8, device="cuda"); torch.nn.functional.conv2d(x, torch.randn(2, 3, 3, 3, device="cuda"))
seen = set()
for l in open("/proc/self/maps"):
    p = l.split()[-1]
    if "libcudnn" in p and p not in seen:
        seen.add(p); print(os.path.realpath(p))
print("cudnn.version() =", torch.backends.cudnn.version())
PYEOF
ldconfig -p | grep -E "libcudnn\.so" | head
echo
echo "== timings (3 runs each, milliseconds)"
t() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1; e=$(date +%s%N); echo "$(( (e - s) / 1000000 ))"; }
for i in 1 2 3; do
	echo "run $i: gpuvet check $(t "$G" check)  gpuvet check --no-python $(t "$G" check --no-python)" \
		"collect_env $(t "$PY" -m torch.utils.collect_env)" \
		"import+is_available $(t "$PY" -c 'import torch; torch.cuda.is_available()')"
done
echo
echo "== gpuvet fix (from the facts of the check above, so the probe does not run again)"
"$G" fix --facts "$OUT/python-check.json"
"$G" fix --json --facts "$OUT/python-check.json" >"$OUT/python-fix.json"
"$G" fix --shell --facts "$OUT/python-check.json"
echo
echo "== live probe script alone (python -I -c data/probe_torch.py)"
/usr/bin/time -f "probe alone: %e s" "$PY" -I -c "$(cat data/probe_torch.py)" | tail -c 3000
echo
echo "== probe script unit tests with the real torch"
"$PY" -m unittest discover -s tests/python -v 2>&1 | tail -15
