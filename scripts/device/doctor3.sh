#!/bin/bash
# On the GPU machine (one H200): the job doctor's verdicts of the live-pipeline round, on real
# PyTorch jobs of each class (not one script's quirks: two kinds of growth, several kinds of
# wait). About 3 minutes; never changes clocks, limits or modes.
#   grow_outputs   every step's output kept in a list, graph and all   expected job.memory-growth
#   grow_losses    losses.append(loss): every step's graph kept        expected job.memory-growth
#   few_workers    2 DataLoader workers, each busy ~80% (compute, then a short wait per sample),
#                  the machine's other cores idle                       expected job.input-bound ("too few workers")
#   wait_socket    the main thread reads its batches from a slow TCP data server (outside the job)
#                                                                       expected job.gpu-idle, "the network (a TCP socket to 127.0.0.1:PORT)"
#   wait_fifo      the main thread reads a named pipe a slow writer feeds
#                                                                       expected job.gpu-idle, "a pipe"
#   wait_workers   2 DataLoader workers that sleep in __getitem__ (a slow remote fetch); the main
#                  process waits for them                               expected job.gpu-idle, "a sleep" (the workers' wait)
#   wait_sleep     a context and 1 GiB, a tiny kernel every 0.5 s      expected job.gpu-idle, "a sleep"
# Each: `gpuvet watch --pid PID --diagnose 8 --json` after a warm-up, beside nvidia-smi. Then
# `gpuvet run --min-seconds 10 -- python3 job.py grow_outputs 25`: the run's verdict (expected the
# memory growth). py-spy is used where it is on PATH (py-spy.txt says whether it was).
# ONLY="kind ..." runs only those jobs (and the run). The verdicts the doctor already gave right
# must hold: run scripts/device/doctor2.sh and scripts/device/gpm.sh after this one.
# Output in $OUT/doctor3: JOB.diagnose.json/.err, JOB.smi.csv, JOB.job.log, run.out/.err,
# verdicts.txt (PASS/FAIL per job), summary.txt (each job's figures and waits).
# Run: bash scripts/device-run.sh scripts/device/doctor3.sh scripts/device/doctor2.sh scripts/device/gpm.sh
#      (carry build and .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/doctor3
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1 CUDA_VISIBLE_DEVICES=0
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}
Q=timestamp,utilization.gpu,memory.used,memory.total,power.draw,clocks.sm,clocks_event_reasons.active
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
{ command -v py-spy && py-spy --version; } > "$OUT/py-spy.txt" 2>&1 || echo "py-spy: not on PATH" > "$OUT/py-spy.txt"
nproc > "$OUT/nproc.txt"

cat > "$OUT/job.py" <<'PY'
import os, socket, sys, time
import torch
kind = sys.argv[1]
dev = torch.device("cuda")
end = time.time() + float(sys.argv[2])


class Busy(torch.utils.data.Dataset):
    """~8 ms of CPU per sample, then ~2 ms of waiting (a read): busy most of the time, not all"""
    def __len__(self):
        return 1 << 20
    def __getitem__(self, i):
        torch.set_num_threads(1)
        t = time.perf_counter()
        x = torch.rand(3, 128, 128)
        while time.perf_counter() - t < 0.008:
            x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0)
        time.sleep(0.002)
        return x, i % 10


class Remote(torch.utils.data.Dataset):
    """a sample fetched from somewhere slow: the worker sleeps"""
    def __len__(self):
        return 1 << 20
    def __getitem__(self, i):
        time.sleep(0.2)
        return torch.zeros(3, 64, 64), i % 10


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(4096, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096)).to(dev)


print("start", kind, flush=True)
if kind == "grow_outputs":
    m = mlp()
    x = torch.randn(4096, 4096, device=dev)
    outputs = []
    while time.time() < end:
        outputs.append(m(x))  # kept with its graph: 64 MiB of output and the activations behind it
        torch.cuda.synchronize()
        time.sleep(0.1)       # the rest of a step (data, logging)
elif kind == "grow_losses":
    m = mlp()
    opt = torch.optim.SGD(m.parameters(), lr=1e-4)
    x = torch.randn(4096, 4096, device=dev)
    losses = []
    while time.time() < end:
        loss = m(x).square().mean()
        loss.backward(retain_graph=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss)   # not loss.item(): each step's graph stays alive
        torch.cuda.synchronize()
        time.sleep(0.1)
elif kind in ("few_workers", "wait_workers"):
    m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    ds = Busy() if kind == "few_workers" else Remote()
    dl = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, pin_memory=True)
    for x, y in dl:
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        if time.time() > end:
            break
elif kind == "wait_socket":
    s = socket.create_connection(("127.0.0.1", int(os.environ["DATA_PORT"])))
    buf = bytearray(1 << 20)
    w = torch.zeros(16, device=dev)
    while time.time() < end:
        n = s.recv_into(buf)
        if not n:
            break
        w.add_(torch.frombuffer(buf[:64], dtype=torch.float32)[:16].to(dev))
elif kind == "wait_fifo":
    w = torch.zeros(16, device=dev)
    with open(os.environ["DATA_FIFO"], "rb", buffering=0) as f:
        while time.time() < end:
            b = f.read(1 << 16)
            if not b:
                break
            w.add_(1)
elif kind == "wait_sleep":
    keep = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    x = torch.zeros(16, device=dev)
    while time.time() < end:
        x.add_(1)
        torch.cuda.synchronize()
        time.sleep(0.5)
elif kind == "server":  # the slow data server of wait_socket: 64 KiB a second
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", int(os.environ["DATA_PORT"])))
    srv.listen(1)
    print("start", kind, flush=True)
    c, _ = srv.accept()
    while time.time() < end:
        c.sendall(b"\0" * 65536)
        time.sleep(1)
elif kind == "writer":  # the slow writer of wait_fifo
    with open(os.environ["DATA_FIFO"], "wb", buffering=0) as f:
        while time.time() < end:
            f.write(b"\0" * 65536)
            time.sleep(1)
print("end", kind, flush=True)
PY

wait_start() { # log
	for _ in $(seq 1 80); do grep -q '^start' "$1" && return 0; sleep 0.25; done
	return 1
}

run_job() { # kind expected text-expected
	kind=$1 want=$2 note=${3:-}
	case " ${ONLY:-$kind} " in *" $kind "*) ;; *) return 0 ;; esac
	hp=""
	export DATA_PORT=29577 DATA_FIFO="$OUT/feed.fifo"
	if [ "$kind" = wait_socket ]; then
		"$PY" "$OUT/job.py" server 45 > "$OUT/server.job.log" 2>&1 &
		hp=$!
		wait_start "$OUT/server.job.log"
	elif [ "$kind" = wait_fifo ]; then
		rm -f "$DATA_FIFO"
		mkfifo "$DATA_FIFO"
		"$PY" "$OUT/job.py" writer 45 > "$OUT/writer.job.log" 2>&1 &
		hp=$!
	fi
	"$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 &
	jp=$!
	wait_start "$OUT/$kind.job.log"
	sleep 5 # CUDA context, cuBLAS handles, the workers started
	"$G" watch --pid "$jp" --diagnose 8 --json > "$OUT/$kind.diagnose.json" 2> "$OUT/$kind.diagnose.err" &
	dp=$!
	sleep 4
	nvidia-smi --query-gpu=$Q --format=csv > "$OUT/$kind.smi.csv" 2>&1
	wait "$dp"
	echo "$kind diagnose exit $?" >> "$OUT/exit-codes.txt"
	pkill -P "$jp" 2>/dev/null
	kill "$jp" 2>/dev/null
	wait "$jp" 2>/dev/null
	if [ -n "$hp" ]; then
		kill "$hp" 2>/dev/null
		wait "$hp" 2>/dev/null
	fi
	"$PY" - "$OUT/$kind.diagnose.json" "$kind" "$want" "$note" >> "$OUT/verdicts.txt" 2>> "$OUT/summary.txt" <<'PY'
import json, sys
path, kind, want, note = sys.argv[1:5]
try:
    d = json.load(open(path))
except Exception as e:
    print("FAIL %s: no JSON (%s)" % (kind, e))
    sys.exit(0)
dg, g = d["diagnosis"], (d.get("gpus") or [{}])[0]
a = g.get("activity", {})
sys.stderr.write("%-13s %-20s util %s SM %s | mem growth %s B/s steady %s (%s -> %s) | cpu %s | waits %s | %s | evidence %s | notes %s\n" % (
    kind, dg["id"], g.get("utilization_gpu_ratio"), a.get("sm_active_ratio"), g.get("memory_growth_bytes_per_second"),
    g.get("memory_growth_steady"), g.get("memory_first_bytes"), g.get("memory_last_bytes"), json.dumps(d["job"].get("cpu")),
    json.dumps(d["job"].get("waits")), dg["title"], dg.get("evidence"), dg.get("notes")))
ok = dg["id"] == want
text = json.dumps(dg)
if ok and note and note not in text:
    ok = False
    want += " with '%s' in it" % note
print("%s %s got %s expected %s" % ("PASS" if ok else "FAIL", kind, dg["id"], want))
PY
}
run_job grow_outputs job.memory-growth "full in"
run_job grow_losses job.memory-growth "_record_memory_history"
run_job few_workers job.input-bound "num_workers"
run_job wait_socket job.gpu-idle "TCP socket to 127.0.0.1:29577"
run_job wait_fifo job.gpu-idle "pipe"
run_job wait_workers job.gpu-idle "sleep"
run_job wait_sleep job.gpu-idle "a sleep"

# gpuvet run: the verdict most 10 s windows gave
timeout 60 "$G" run --min-seconds 10 -- "$PY" "$OUT/job.py" grow_outputs 25 > "$OUT/run.out" 2> "$OUT/run.err"
echo "run exit $?" >> "$OUT/exit-codes.txt"
if grep -q "job.memory-growth" "$OUT/run.err"; then
	echo "PASS run: gpuvet run names the growing memory" >> "$OUT/verdicts.txt"
else
	echo "FAIL run: no job.memory-growth in run.err" >> "$OUT/verdicts.txt"
fi
cat "$OUT/py-spy.txt" "$OUT/summary.txt" "$OUT/verdicts.txt"
! grep -q FAIL "$OUT/verdicts.txt"
