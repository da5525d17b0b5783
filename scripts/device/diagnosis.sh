#!/bin/bash
# Real faults for the diagnosis rules (issue 11, items 2-4), run on the GPU machine by the
# integrator (see /work/shared/device.md and scripts/device-run.sh). Nothing on the GPU is
# changed: a private mount namespace, a process that holds memory, an environment variable.
# Writes everything under $OUT; summary.txt has one line per case.
#
# What it must show (summary.txt):
#  a) devnull:  /dev/nvidia0 bound to /dev/null inside `unshare -m`: dev.wrong-node (fail), its
#     evidence "/dev/nvidia0 is char 1:3 (major of "mem" ...: that is /dev/null)"; NOT gpu.none,
#     NOT container.no-gpu. Outside the namespace (baseline.json) no dev.wrong-node.
#  b) memheld:  a torch process holding ~97% of GPU 0: gpu.memory-held (warn) naming its pid,
#     "python" and the MiB, and the CUDNN_STATUS_NOT_INITIALIZED / out-of-memory consequence;
#     gpu.busy not for that GPU. memheld-victim.txt: what a second torch process got (the
#     consequence, for the record). With --memory-headroom 200000 (memheadroom.json) the warning
#     also names the headroom. After the holder is killed (memfreed.json) no gpu.memory-held.
#  c) stubs:    the toolkit's stubs directory first on LD_LIBRARY_PATH: lib.stubs-on-path (warn:
#     only libcuda.so is there, libcuda.so.1 still resolves to the driver), the stdout still JSON.
#     stubs1: a stubs directory with a libcuda.so.1 link first: lib.stubs-on-path fail, cuInit 34.
#     stubs2: the stub linked as libcuda.so.1 into an ordinary directory first on the path:
#     lib.stubs-on-path fail "dlopen("libcuda.so.1") picks .../lib/libcuda.so.1 -> .../stubs/libcuda.so".
#  d) nccl.tsv: for NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME values, whether a one-rank
#     torch.distributed all_reduce really works (column "torch") beside gpuvet's verdict (column
#     "gpuvet": nccl.interface-missing or ok); column "agree" must be yes on every row.
# Every case records whether stdout parsed as JSON ("json ok").
set -u
OUT=${OUT:-/tmp/gpuvet-diagnosis}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-$PWD/build/gpuvet}
export GPUVET_NO_HISTORY=1
SUM="$OUT/summary.txt"
: >"$SUM"

# summarize NAME FILE: the finding ids and severities, and the evidence of the ids given
summarize() {
	python3 - "$1" "$2" "${@:3}" >>"$SUM" <<'PY'
import json, sys
name, path, ids = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    d = json.load(open(path))
except Exception as e:
    print("%-12s json NOT ok: %s" % (name, e))
    sys.exit(0)
fs = d.get("findings", [])
print("%-12s json ok; findings: %s" % (name, ", ".join("%s(%s)" % (f["id"], f["severity"]) for f in fs) or "none"))
for f in fs:
    if f["id"] in ids:
        print("    %s: %s" % (f["id"], f["title"]))
        for e in f.get("evidence", [])[:8]:
            print("      - %s" % e)
PY
}

{ nvidia-smi -L; ls -l /dev/nvidia*; grep -E '^ *[0-9]+ nvidia' /proc/devices; id; echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}";
  ls -l /usr/local/cuda/lib64/stubs 2>&1 | head -20; } >"$OUT/machine.txt" 2>&1

timeout 150 "$G" check --json >"$OUT/baseline.json" 2>"$OUT/baseline.stderr"
echo "baseline exit $?" >>"$OUT/baseline.stderr"
summarize baseline "$OUT/baseline.json" dev.wrong-node gpu.memory-held lib.stubs-on-path

# a) /dev/nvidia0 bound to /dev/null in a private mount namespace
if command -v unshare >/dev/null && [ -e /dev/nvidia0 ]; then
	timeout 170 unshare -m sh -c 'mount --bind /dev/null /dev/nvidia0 || exit 90
		ls -l /dev/nvidia0; stat -c "%F %t:%T" /dev/nvidia0; grep nvidia0 /proc/self/mounts
		"$0" check --json > "$1/devnull.json" 2> "$1/devnull.stderr"; echo "check exit $?"' "$G" "$OUT" \
		>"$OUT/devnull.txt" 2>&1
	echo "unshare exit $?" >>"$OUT/devnull.txt"
	summarize devnull "$OUT/devnull.json" dev.wrong-node gpu.none container.no-gpu driver.init-failed
else
	echo "devnull      not run: no unshare or no /dev/nvidia0" >>"$SUM"
fi

# b) another process holds ~97 % of GPU 0's memory
python3 - "$OUT/memheld.ready" >"$OUT/memheld-holder.txt" 2>&1 <<'PY' &
import sys, time, torch
free, total = torch.cuda.mem_get_info(0)
want = int(total * 0.97) - (total - free)
x = torch.empty(max(want, 1), dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
free2, _ = torch.cuda.mem_get_info(0)
print("holding %d MiB of %d MiB, %d MiB free" % (want >> 20, total >> 20, free2 >> 20), flush=True)
open(sys.argv[1], "w").write("ready\n")
time.sleep(150)
PY
holder=$!
for _ in $(seq 1 60); do [ -f "$OUT/memheld.ready" ] && break; sleep 1; done
if [ -f "$OUT/memheld.ready" ]; then
	echo "holder pid $holder" >>"$OUT/memheld-holder.txt"
	nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv >>"$OUT/memheld-holder.txt" 2>&1
	timeout 120 "$G" check --json >"$OUT/memheld.json" 2>"$OUT/memheld.stderr"
	summarize memheld "$OUT/memheld.json" gpu.memory-held gpu.busy cudnn.init-failed torch.smoke-failed
	timeout 120 "$G" check --json --no-python --memory-headroom 200000 >"$OUT/memheadroom.json" 2>&1
	summarize memheadroom "$OUT/memheadroom.json" gpu.memory-held
	# the consequence, for the record: what a job started now gets
	timeout 120 python3 -c '
import torch
try:
    x = torch.randn(64, 64, 224, 224, device="cuda:0")
    c = torch.nn.Conv2d(64, 256, 7).cuda()
    y = c(x); torch.cuda.synchronize(); print("conv ok")
except Exception as e:
    print(type(e).__name__, str(e).splitlines()[0][:300])
' >"$OUT/memheld-victim.txt" 2>&1
else
	echo "memheld      not run: the holder did not get ready" >>"$SUM"
fi
kill "$holder" 2>/dev/null
wait "$holder" 2>/dev/null
sleep 2
timeout 120 "$G" check --json --no-python >"$OUT/memfreed.json" 2>&1
summarize memfreed "$OUT/memfreed.json" gpu.memory-held

# c) the toolkit's stubs first on LD_LIBRARY_PATH
STUBS=/usr/local/cuda/lib64/stubs
if [ -d "$STUBS" ]; then
	LD_LIBRARY_PATH="$STUBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 150 "$G" check --json >"$OUT/stubs.json" 2>"$OUT/stubs.stderr"
	echo "exit $?" >>"$OUT/stubs.stderr"
	summarize stubs "$OUT/stubs.json" lib.stubs-on-path driver.init-failed
	# the Dockerfile mistake: a libcuda.so.1 link made inside a stubs directory
	S1=$(mktemp -d /tmp/gpuvet-stub1.XXXXXX)
	mkdir -p "$S1/stubs"
	for f in "$STUBS"/lib*.so; do ln -s "$f" "$S1/stubs/"; done
	ln -s "$STUBS/libcuda.so" "$S1/stubs/libcuda.so.1"
	LD_LIBRARY_PATH="$S1/stubs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 150 "$G" check --json --no-python >"$OUT/stubs1.json" 2>"$OUT/stubs1.stderr"
	echo "exit $?" >>"$OUT/stubs1.stderr"
	summarize stubs1 "$OUT/stubs1.json" lib.stubs-on-path driver.init-failed
	# the other Dockerfile mistake: the stub linked as libcuda.so.1 into an ordinary directory
	mkdir -p "$S1/lib"
	ln -s "$STUBS/libcuda.so" "$S1/lib/libcuda.so.1"
	LD_LIBRARY_PATH="$S1/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 150 "$G" check --json --no-python >"$OUT/stubs2.json" 2>"$OUT/stubs2.stderr"
	echo "exit $?" >>"$OUT/stubs2.stderr"
	summarize stubs2 "$OUT/stubs2.json" lib.stubs-on-path driver.init-failed
	rm -rf "$S1"
else
	echo "stubs        not run: no $STUBS" >>"$SUM"
fi
# d) NCCL's interface lists against a real communicator (one rank, so nothing else is needed)
python3 - "$G" "$OUT" >>"$SUM" 2>&1 <<'PY'
import json, os, subprocess, sys
g, out = sys.argv[1], sys.argv[2]
ifs = sorted(os.listdir("/sys/class/net"))
up = [i for i in ifs if i != "lo" and open("/sys/class/net/%s/operstate" % i).read().strip() != "down"]
real = up[0] if up else "lo"
cases = [("NCCL_SOCKET_IFNAME", "nonexistent0", "nccl"), ("NCCL_SOCKET_IFNAME", real, "nccl"),
         ("NCCL_SOCKET_IFNAME", real[:2], "nccl"), ("NCCL_SOCKET_IFNAME", "=" + real[:2], "nccl"),
         ("NCCL_SOCKET_IFNAME", "=" + real, "nccl"),
         ("NCCL_SOCKET_IFNAME", "^" + ",".join(i[:2] for i in ifs), "nccl"), ("NCCL_SOCKET_IFNAME", "^lo", "nccl"),
         ("GLOO_SOCKET_IFNAME", "nonexistent0", "gloo"), ("GLOO_SOCKET_IFNAME", real, "gloo")]
code = r"""
import os, sys, torch, torch.distributed as dist
backend = sys.argv[1]
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29533")
try:
    dist.init_process_group(backend, rank=0, world_size=1)
    t = torch.ones(4, device="cuda" if backend == "nccl" else "cpu")
    dist.all_reduce(t)
    if backend == "nccl": torch.cuda.synchronize()
    print("ok")
except Exception as e:
    print("FAIL", type(e).__name__, str(e).replace("\n", " ")[:160])
"""
bad = 0
with open(os.path.join(out, "nccl.tsv"), "w") as t:
    t.write("variable\tvalue\ttorch\tgpuvet\tagree\n")
    for var, val, backend in cases:
        env = dict(os.environ, **{var: val})
        try:
            p = subprocess.run([sys.executable, "-c", code, backend], capture_output=True, text=True, env=env, timeout=40)
            torch_ok = p.stdout.strip().startswith("ok")
            res = (p.stdout.strip() or p.stderr.strip()[-160:]).splitlines()[-1:] or [""]
        except subprocess.TimeoutExpired:
            torch_ok, res = False, ["timeout"]
        q = subprocess.run([g, "check", "--json", "--fast"], capture_output=True, text=True, env=env, timeout=60)
        fs = [f for f in json.loads(q.stdout)["findings"] if f["id"] == "nccl.interface-missing"]
        flagged = any(var in (f["title"] + " ".join(f["evidence"])) for f in fs)
        agree = torch_ok != flagged
        bad += not agree
        t.write("%s\t%r\t%s\t%s\t%s\n" % (var, val, "ok" if torch_ok else "fails: " + res[0], "missing" if flagged else "ok",
                                         "yes" if agree else "NO"))
    t.write("interfaces: %s; disagreements: %d\n" % (",".join(ifs), bad))
print("nccl         %d cases, %d disagreements (nccl.tsv)" % (len(cases), bad))
PY
cat "$SUM"
