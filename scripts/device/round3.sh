#!/bin/bash
# The GPU-machine checks of the 2026-12-02 round, in one call (~70 s on one H200):
#   bash scripts/device-run.sh scripts/device/fastprof.sh scripts/device/round3.sh
#   (carry build/gpuvet, build/gpuvet.base and .devlib)
#
# 1. The parallel NVML snapshot gives what the serial one gave: check --fast --json of
#    build/gpuvet.base (serial) and build/gpuvet (parallel), every nvml fact's state compared,
#    and the values of those that do not change from one second to the next.
# 2. The full check beside `import torch; torch.cuda.is_available()` (two interleaved runs).
# 3. gpuvet run over failing jobs (no false driver.nvml-failed); diag -r 1.
# 4. gpuvet run under stress: SIGKILL of gpuvet run leaves no command behind; one \r\n on a
#    terminal; 1 GiB through it beside the same through cat.
# 5. serve and watch with a torch job on the GPU: the owner info series, the per-process SM
#    series, a gzip scrape; watch --once --json's process fields.
# Writes under $OUT/round3. Never changes clocks, power limits or modes; never resets the GPU.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/round3
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-$PWD/build/gpuvet}
BASE=$PWD/build/gpuvet.base
PY=${PYTHON:-python3}
T=$(mktemp -d /tmp/gpuvet-r3.XXXXXX)

echo "== 1. parallel snapshot against serial"
if [ -x "$BASE" ]; then
	"$BASE" check --fast --no-history --json > "$T/base.json" 2> /dev/null
	"$G" check --fast --no-history --json > "$T/new.json" 2> /dev/null
	"$PY" - "$T/base.json" "$T/new.json" <<'EOF' | tee "$OUT/snapshot-diff.txt"
import json, sys
a = json.load(open(sys.argv[1]))["facts"].get("nvml", {})
b = json.load(open(sys.argv[2]))["facts"].get("nvml", {})
moving = ("temperature", "power_mw", "power_w", "util", "clock_mhz", "memory_used", "memory_free", "energy",
          "seconds", "pcie_tx", "pcie_rx", "fan", "clock_event", "sm_clock", "mem_clock", "graphics_clock", "process")
same = diff = 0
for k in sorted(set(a) | set(b)):
    x, y = a.get(k), b.get(k)
    if x is None or y is None:
        print("only in", "base" if y is None else "new", k); diff += 1; continue
    if x.get("state") != y.get("state"):
        print("state", k, x.get("state"), y.get("state")); diff += 1; continue
    if any(m in k for m in moving):
        continue
    if x.get("value") != y.get("value"):
        print("value", k, x.get("value"), y.get("value")); diff += 1
    else:
        same += 1
print("nvml facts compared: %d equal, %d different" % (same, diff))
EOF
fi

echo "== 2. full check beside the torch line"
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; awk "BEGIN{printf \"%.3f\", $(date +%s.%N)-$s}"; }
for k in 1 2; do
	a=$(t "$PY" -c "import torch; torch.cuda.is_available()")
	b=$(t "$G" check --no-history)
	echo "run $k: torch_is_available $a  check $b" | tee -a "$OUT/check-full.txt"
done

echo "== 3. gpuvet run over failing jobs, diag -r 1"
i=0
for job in "import torch; torch.zeros(1).cuda(); raise SystemExit(1)" \
	"import torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); raise RuntimeError('boom')"; do
	i=$((i + 1))
	GPUVET_NO_HISTORY=1 "$G" run -- "$PY" -c "$job" > "$OUT/run_$i.out" 2>&1
	rc=$?
	bad=$(grep -c "driver.nvml-failed\|NVML_ERROR_UNINITIALIZED\|not collected" "$OUT/run_$i.out")
	echo "job $i: exit $rc, false-fail lines: $bad"
done
GPUVET_NO_HISTORY=1 "$G" diag -r 1 > "$OUT/diag_l1.out" 2>&1; echo "diag -r 1: exit $?"; tail -2 "$OUT/diag_l1.out"

echo "== 4. gpuvet run under stress"
GPUVET_NO_HISTORY=1 "$G" run -- sleep 300 > /dev/null 2>&1 &
rp=$!
sleep 1
kids=$(pgrep -P "$rp" | tr '\n' ' ')
kill -9 "$rp"
sleep 0.5
left=$(pgrep -x sleep -a | grep -c "sleep 300")
echo "SIGKILL of gpuvet run (children: $kids): 'sleep 300' left running: $left"
pkill -f "sleep 300" 2> /dev/null
s=$(date +%s.%N); head -c 1073741824 /dev/zero | cat > /dev/null; e=$(date +%s.%N)
cat_s=$(awk "BEGIN{print $e-$s}")
s=$(date +%s.%N); GPUVET_NO_HISTORY=1 "$G" run -- sh -c 'head -c 1073741824 /dev/zero' | cksum > "$T/ck"; e=$(date +%s.%N)
run_s=$(awk "BEGIN{print $e-$s}")
echo "1 GiB: cat ${cat_s} s, gpuvet run ${run_s} s, cksum $(cat "$T/ck") (want $(head -c 1073741824 /dev/zero | cksum))"
"$PY" - "$G" <<'EOF'
import os, pty, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.environ["GPUVET_NO_HISTORY"] = "1"
    os.execv(sys.argv[1], [sys.argv[1], "run", "--", "printf", "a\\nb\\n"])
buf = b""
t0 = time.time()
while time.time() - t0 < 20:
    try:
        c = os.read(fd, 4096)
    except OSError:
        break
    if not c:
        break
    buf += c
os.waitpid(pid, 0)
print("terminal: a\\r\\nb\\r\\n seen:", b"a\r\nb\r\n" in buf, " \\r\\r\\n seen:", b"\r\r\n" in buf)
EOF

echo "== 5. serve and watch beside a torch job"
"$PY" -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda', dtype=torch.bfloat16)
t = time.time()
while time.time() - t < 10:
    b = a @ a
torch.cuda.synchronize()
" > "$T/job.out" 2>&1 &
job=$!
sleep 4
GPUVET_NO_HISTORY=1 "$G" serve --listen 127.0.0.1:9851 --processes > "$T/serve.out" 2>&1 &
sp=$!
sleep 4
curl -s http://127.0.0.1:9851/metrics > "$OUT/metrics.txt"
curl -s -H 'Accept-Encoding: gzip' -o "$T/metrics.gz" -w '%{size_download}' http://127.0.0.1:9851/metrics > "$T/gzsize"
echo "scrape: $(wc -c < "$OUT/metrics.txt") bytes plain, $(cat "$T/gzsize") gzip; $(gzip -dc "$T/metrics.gz" 2>/dev/null | wc -c) after gunzip"
grep -E "^gpuvet_gpu_owner_info|^gpuvet_process_sm|^gpuvet_process_" "$OUT/metrics.txt" | head -8
GPUVET_NO_HISTORY=1 "$G" watch --once --json > "$OUT/watch.json" 2>&1
"$PY" - "$OUT/watch.json" "$job" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
def walk(x):
    if isinstance(x, dict):
        if "pid" in x:
            yield x
        for v in x.values():
            yield from walk(v)
    elif isinstance(x, list):
        for v in x:
            yield from walk(v)
for p in walk(d):
    if str(p.get("pid")) == sys.argv[2]:
        print("watch --once --json, the job's process:", json.dumps(p)[:400])
EOF
kill "$sp" 2> /dev/null
wait "$job"
wait "$sp" 2> /dev/null
rm -rf "$T"
exit 0
