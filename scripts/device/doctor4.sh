#!/bin/bash
# On the GPU machine (one H200): the job doctor on kinds of job that no earlier device script
# runs (issue 24: build for the class of job, not for one script). The verdicts of doctor2,
# doctor3 and gpm must hold too: run those after this one. About 3 minutes; never changes
# clocks, limits or modes.
#   wait_file      the main thread reads its samples with O_DIRECT from a file on disk
#                  (shard-00042.bin), 4 KiB at a random place each         expected job.gpu-idle, the file named
#   mmap_faults    the main thread reads the same file through a memory mapping (libc mmap, the
#                  descriptor closed, as torch.load(mmap=True) leaves it), a random page at a time,
#                  the pages dropped from the cache after each sample      expected job.gpu-idle, "memory-mapped file"
#   server_idle    an asyncio HTTP server (asyncio.start_server on port 8765) with a model on the GPU
#                  and no requests: its event loop waits                  expected job.gpu-idle, "listens on TCP port 8765"
#   breakpoint_tty breakpoint() with stdin a terminal (a pty the job opens itself): pdb waits at its
#                  prompt                                                  expected job.gpu-idle, "at its terminal"
#   jupyter_idle   a real Jupyter kernel (jupyter_client starts ipykernel, one cell puts a tensor on
#                  the GPU), then no cell; where ipykernel is missing, a stand-in whose command line
#                  is ipykernel_launcher's (said so in jupyter_idle.job.log)
#                                                                          expected job.gpu-idle, "Jupyter kernel waiting for its next cell"
#   wait_queue     the main thread takes batches from a queue.Queue that a slow producer thread
#                  fills (0.3 s a batch)                                   expected job.gpu-idle, "a lock or a queue"
#   rendezvous     rank 0 of init_process_group(world_size=2), launched as torchrun launches
#                  (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT set): rank 1 never comes
#                                                                          expected job.gpu-idle, "1 of 2 connected"
#   rendezvous_tcp the same with init_method="tcp://127.0.0.1:29613" in the script (no variables)
#                                                                          expected job.gpu-idle, "only it is connected"
#   rendezvous1    rank 1 of 2 whose master (127.0.0.1:29612) never starts
#                                                                          expected job.gpu-idle, "waits to reach the rendezvous store"
#   healthy_amp    a convnet trained with bf16 autocast on data made on the GPU: nothing wrong,
#                  watched 5 s after its start                             expected none of the problem verdicts
#   healthy_amp_late  the same watched 25 s after its start (its steady state)
#                                                                          expected none of them, nor job.phase-change
#   warmup_growth  memory grows 2 GiB a step for the first 3 s of the window, then stays
#                                                                          expected not job.memory-growth
#   churn          allocates and frees 1-8 GiB tensors at random each step, empty_cache() every 10
#                                                                          expected not job.memory-growth
#   single_rank    a job of one rank (RANK=0 WORLD_SIZE=1, as accelerate launches one GPU) after
#                  init_process_group("nccl"), then a tiny kernel every 0.5 s
#                                                                          expected job.gpu-idle, "a sleep", no rendezvous
#   compile_warmup torch.compile(mode="max-autotune") of a fresh MLP (an empty Inductor cache),
#                  watched from its first step                             expected job.compiling
#   cpu_model      the model never moved to the GPU: it trains on the CPU (torch's intra-op
#                  threads) while a tensor the script put on the GPU holds a context there
#                                                                          expected job.cpu-compute
#   tokenize_threads Hugging Face tokenizers' encode_batch (its own threads) in the main process
#                  before each tiny step on the GPU                        expected job.cpu-compute
#   wait_http      each batch fetched over HTTP from a slow server (outside the job, port 8080:
#                  2 s before each 1 MiB answer)                           expected job.gpu-idle, "an HTTP server"
# Each: `gpuvet watch --pid PID --diagnose 8 --json` after a warm-up, beside nvidia-smi. Then
# `gpuvet run` on a healthy job that exits 0 and on one that exits 3: no FAIL on this healthy
# machine, and the exit status passed through.
# ONLY="kind ..." runs only those jobs.
# Output in $OUT/doctor4: JOB.diagnose.json/.err, JOB.smi.csv, JOB.job.log, run-*.out/.err,
# verdicts.txt (PASS/FAIL per job), summary.txt (each job's figures and waits).
# Run: bash scripts/device-run.sh scripts/device/doctor4.sh (carry build and .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/doctor4
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1 CUDA_VISIBLE_DEVICES=0
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}
Q=timestamp,utilization.gpu,memory.used,memory.total,power.draw,clocks.sm,clocks_event_reasons.active
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nproc > "$OUT/nproc.txt"
# the shard on a disk, not a tmpfs (O_DIRECT): /var/tmp, else the checkout's folder
DATA=/var/tmp/gpuvet-doctor4
mkdir -p "$DATA" 2>/dev/null || DATA=$PWD/.doctor4-data
mkdir -p "$DATA"
export DATA_FILE="$DATA/shard-00042.bin"
[ -s "$DATA_FILE" ] || dd if=/dev/urandom of="$DATA_FILE" bs=1M count=1024 status=none
df -T "$DATA" > "$OUT/data-fs.txt" 2>&1

cat > "$OUT/job.py" <<'PY'
import mmap, os, queue, random, sys, threading, time
import torch
kind = sys.argv[1]
dev = torch.device("cuda")
end = time.time() + float(sys.argv[2])
print("start", kind, flush=True)
if kind == "wait_file":
    fd = os.open(os.environ["DATA_FILE"], os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    size = os.fstat(fd).st_size
    buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
    w = torch.zeros(16, device=dev)
    try:
        os.preadv(fd, [buf], 0)
        direct = True
    except OSError:  # a file system without O_DIRECT: drop the cache before each read instead
        os.close(fd)
        fd = os.open(os.environ["DATA_FILE"], os.O_RDONLY)
        direct = False
    print("O_DIRECT", direct, flush=True)
    while time.time() < end:
        for _ in range(64):  # a sample: 64 random 4 KiB blocks
            off = random.randrange(size // 4096) * 4096
            if not direct:
                os.posix_fadvise(fd, off, 4096, os.POSIX_FADV_DONTNEED)
            os.preadv(fd, [buf], off)
        w.add_(1)
elif kind == "mmap_faults":
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    path = os.environ["DATA_FILE"]
    fd = os.open(path, os.O_RDONLY)
    size = os.fstat(fd).st_size
    base = libc.mmap(None, size, 1, 1, fd, 0)  # PROT_READ, MAP_SHARED
    os.close(fd)  # the mapping alone keeps the file
    if base in (None, ctypes.c_void_p(-1).value):
        sys.exit("mmap failed: errno %d" % ctypes.get_errno())
    libc.madvise(base, size, 1)  # MADV_RANDOM: a fault reads its page, no read-ahead
    w = torch.zeros(16, device=dev)
    while time.time() < end:
        for _ in range(64):  # a sample: 64 random pages
            ctypes.c_char.from_address(base + random.randrange(size // 4096) * 4096).value
        w.add_(1)
        libc.madvise(base, size, 4)  # MADV_DONTNEED: unmap the pages from this process
        fd = os.open(path, os.O_RDONLY)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # and drop them from the page cache
        os.close(fd)
elif kind == "wait_queue":
    q = queue.Queue(maxsize=2)
    def producer():
        while True:
            time.sleep(0.3)  # a slow source: decoding elsewhere, a remote fetch
            q.put(torch.randn(64, 1024))
    threading.Thread(target=producer, daemon=True).start()
    m = torch.nn.Linear(1024, 1024).to(dev)
    while time.time() < end:
        x = q.get().to(dev)
        m(x).sum().backward()
elif kind in ("rendezvous", "rendezvous1", "rendezvous_tcp"):
    import datetime
    import torch.distributed as dist
    torch.zeros(1, device=dev)
    timeout = datetime.timedelta(seconds=float(sys.argv[2]))
    try:
        if kind == "rendezvous_tcp":
            dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29613", rank=0, world_size=2, timeout=timeout)
        else:  # env://, as torchrun sets it
            dist.init_process_group("nccl", timeout=timeout)
    except Exception as e:
        print("init_process_group:", type(e).__name__, str(e)[:200], flush=True)
elif kind == "single_rank":
    import torch.distributed as dist
    dist.init_process_group("nccl")
    x = torch.ones(1, device=dev)
    while time.time() < end:
        x = x * 1.0001
        torch.cuda.synchronize()
        time.sleep(0.5)
elif kind == "healthy_amp":
    m = torch.nn.Sequential(
        torch.nn.Conv2d(3, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(128, 256, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(256, 256, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(256, 1000)).to(dev).to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(128, 3, 128, 128, device=dev).to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (128,), device=dev)
    step = 0
    while time.time() < end:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        if step % 50 == 0:
            print("step", step, "loss", float(loss), flush=True)
elif kind == "warmup_growth":
    kept = []
    grow_until = time.time() + float(os.environ.get("GROW_SECONDS", "8"))
    x = torch.randn(4096, 4096, device=dev)
    while time.time() < end:
        if time.time() < grow_until:
            kept.append(torch.empty(2 << 30, dtype=torch.uint8, device=dev))  # 2 GiB a step
            time.sleep(0.2)
        else:
            for _ in range(20):
                x = torch.tanh(x @ x * 1e-3)
            torch.cuda.synchronize()
elif kind == "churn":
    x = torch.randn(4096, 4096, device=dev)
    step = 0
    while time.time() < end:
        t = torch.empty(random.randint(1, 8) << 30, dtype=torch.uint8, device=dev)
        t.fill_(1)
        x = torch.tanh(x @ x * 1e-3)
        del t
        step += 1
        if step % 10 == 0:
            torch.cuda.empty_cache()
        torch.cuda.synchronize()
elif kind == "compile_warmup":
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", "/tmp/gpuvet-doctor4-inductor-%d" % os.getpid())
    m = torch.compile(torch.nn.Sequential(*[torch.nn.Linear(2048, 2048) for _ in range(8)]).to(dev),
                      mode="max-autotune")
    x = torch.randn(512, 2048, device=dev)
    while time.time() < end:
        m(x).sum().backward()
        torch.cuda.synchronize()
elif kind == "cpu_model":
    marker = torch.zeros(1024, device=dev)
    m = torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048))
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    print("threads", torch.get_num_threads(), flush=True)
    while time.time() < end:
        loss = m(torch.randn(256, 2048)).square().mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        marker.add_(1)
elif kind == "tokenize_threads":
    from tokenizers import Tokenizer, models, pre_tokenizers
    vocab = {"w%d" % i: i for i in range(50000)}
    vocab["[UNK]"] = 50000
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    texts = [" ".join("w%d" % random.randrange(60000) for _ in range(512)) for _ in range(2000)]
    w = torch.zeros(16, device=dev)
    while time.time() < end:
        enc = tok.encode_batch(texts)
        w.add_(torch.tensor([e.ids[:128] for e in enc[:64]], device=dev).float().mean())
elif kind == "wait_http":
    import urllib.request
    w = torch.zeros(16, device=dev)
    while time.time() < end:
        with urllib.request.urlopen("http://127.0.0.1:8080/shard-00042.tar", timeout=30) as r:
            w.add_(len(r.read()))
elif kind == "server_idle":
    import asyncio
    m = torch.nn.Linear(1024, 1024).to(dev)
    async def handle(reader, writer):
        await reader.readline()
        y = m(torch.randn(1, 1024, device=dev)).sum().item()
        writer.write(b"HTTP/1.0 200 OK\r\n\r\n%f\n" % y)
        await writer.drain()
        writer.close()
    async def serve():
        server = await asyncio.start_server(handle, "127.0.0.1", 8765)
        async with server:
            await asyncio.sleep(end - time.time())
    asyncio.run(serve())
elif kind == "breakpoint_tty":
    import pty
    master, slave = pty.openpty()  # a terminal of its own, as an interactive shell gives it
    os.dup2(slave, 0)
    sys.stdin = open(0, "r", closefd=False)
    x = torch.zeros(1, device=dev)
    breakpoint()  # pdb reads its prompt from the terminal; nobody types
elif kind == "jupyter_idle":
    pass  # started by run_job (jupyter_client), not here
elif kind == "ok":
    x = torch.randn(4096, 4096, device=dev)
    while time.time() < end:
        x = torch.tanh(x @ x * 1e-3)
    torch.cuda.synchronize()
    sys.exit(int(os.environ.get("EXIT", "0")))
print("end", kind, flush=True)
PY

# jupyter_idle: a kernel started as Jupyter starts it, one cell run on the GPU, then idle; the
# pid the doctor follows is the kernel's (written to kernel.pid)
# wait_http's data server: 2 s before each 1 MiB answer (a slow object store or CDN)
cat > "$OUT/slowhttp.py" <<'PY'
import http.server, sys, time
class Slow(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(2)
        body = b"x" * (1 << 20)
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Slow).serve_forever()
PY

cat > "$OUT/kernel.py" <<'PY'
import os, subprocess, sys, time
out = sys.argv[1]
try:
    from jupyter_client import KernelManager
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    kc.execute_interactive("import torch; x = torch.randn(4096, 4096, device='cuda'); y = (x @ x).sum().item()", timeout=120)
    pid = km.provisioner.process.pid if getattr(km, "provisioner", None) else km.kernel.pid
    print("real kernel", pid, flush=True)
except Exception as e:  # no ipykernel here: a stand-in with its command line
    print("no jupyter_client/ipykernel (%s): a stand-in named ipykernel_launcher" % e, flush=True)
    stand = os.path.join(out, "ipykernel_launcher.py")
    open(stand, "w").write(
        "import selectors, socket, torch\n"
        "x = torch.randn(4096, 4096, device='cuda')\n"
        "a, b = socket.socketpair()  # its event loop waits for a message, as a kernel's does\n"
        "sel = selectors.DefaultSelector()\n"
        "sel.register(a, selectors.EVENT_READ)\n"
        "while True:\n"
        "    sel.select()\n")
    p = subprocess.Popen([sys.executable, stand, "-f", os.path.join(out, "kernel-standin.json")])
    pid = p.pid
    time.sleep(8)
open(os.path.join(out, "kernel.pid"), "w").write("%d\n" % pid)
print("start jupyter_idle", flush=True)
time.sleep(40)
PY

wait_start() { # log
	for _ in $(seq 1 80); do grep -q '^start' "$1" && return 0; sleep 0.25; done
	return 1
}

# run_job kind want [note]: want is a verdict id, or "!id,id,..." (none of these)
run_job() {
	kind=$1 want=$2 note=${3:-}
	case " ${ONLY:-$kind} " in *" $kind "*) ;; *) return 0 ;; esac
	# warmup_growth grows for the first 3 s of the 8 s window (5 s of warm-up before it)
	case $kind in
	rendezvous) env RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29611 "$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 & ;;
	rendezvous1) env RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29612 "$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 & ;;
	single_rank) env RANK=0 LOCAL_RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=29614 "$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 & ;;
	healthy_amp_late) "$PY" "$OUT/job.py" healthy_amp 50 > "$OUT/$kind.job.log" 2>&1 & ;;
	jupyter_idle) "$PY" "$OUT/kernel.py" "$OUT" > "$OUT/$kind.job.log" 2>&1 & ;;
	wait_http)
		"$PY" "$OUT/slowhttp.py" 8080 > "$OUT/slowhttp.log" 2>&1 &
		echo $! > "$OUT/slowhttp.pid"
		sleep 1
		"$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 & ;;
	*) GROW_SECONDS=8 "$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 & ;;
	esac
	jp=$!
	wait_start "$OUT/$kind.job.log"
	launcher=
	if [ "$kind" = jupyter_idle ]; then launcher=$jp; jp=$(cat "$OUT/kernel.pid"); fi
	sleep "${WARM:-5}" # CUDA context, cuBLAS handles, the threads started
	# the job's threads by name (what the doctor's table of library threads must know)
	for t in /proc/$jp/task/*; do cat "$t/comm"; done 2>/dev/null | sort | uniq -c > "$OUT/$kind.threads.txt"
	"$G" watch --pid "$jp" --diagnose 8 --json > "$OUT/$kind.diagnose.json" 2> "$OUT/$kind.diagnose.err" &
	dp=$!
	sleep 4
	nvidia-smi --query-gpu=$Q --format=csv > "$OUT/$kind.smi.csv" 2>&1
	wait "$dp"
	echo "$kind diagnose exit $?" >> "$OUT/exit-codes.txt"
	pkill -P "$jp" 2>/dev/null
	kill "$jp" $launcher 2>/dev/null
	wait "$jp" $launcher 2>/dev/null
	[ "$kind" = wait_http ] && kill "$(cat "$OUT/slowhttp.pid")" 2>/dev/null
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
sys.stderr.write("%-13s phase %s (%s -> %s) distributed %s\n" % (kind, g.get("phase_change_seconds"), g.get("busy_before_ratio"),
                 g.get("busy_after_ratio"), json.dumps(d["job"].get("distributed"))))
sys.stderr.write("%-13s %-20s util %s SM %s | mem growth %s B/s steady %s (%s -> %s) | cpu %s | waits %s | %s | evidence %s | notes %s\n" % (
    kind, dg["id"], g.get("utilization_gpu_ratio"), a.get("sm_active_ratio"), g.get("memory_growth_bytes_per_second"),
    g.get("memory_growth_steady"), g.get("memory_first_bytes"), g.get("memory_last_bytes"), json.dumps(d["job"].get("cpu")),
    json.dumps(d["job"].get("waits")), dg["title"], dg.get("evidence"), dg.get("notes")))
if want.startswith("!"):
    ok = dg["id"] not in want[1:].split(",")
else:
    ok = dg["id"] == want
text = json.dumps(dg)
if ok and note and note not in text:
    ok = False
    want += " with '%s' in it" % note
print("%s %s got %s expected %s" % ("PASS" if ok else "FAIL", kind, dg["id"], want))
PY
}
PROBLEMS='!job.memory-growth,job.gpu-idle,job.input-bound,job.launch-bound,job.memory-pressure'
run_job wait_file job.gpu-idle "shard-00042.bin is on "
run_job mmap_faults job.gpu-idle "memory-mapped file /"
run_job server_idle job.gpu-idle "listens on TCP port 8765"
run_job breakpoint_tty job.gpu-idle "at its terminal"
run_job jupyter_idle job.gpu-idle "Jupyter kernel waiting for its next cell"
run_job wait_queue job.gpu-idle "a lock or a queue"
run_job rendezvous job.gpu-idle "1 of 2 connected"
run_job rendezvous_tcp job.gpu-idle "only it is connected"
run_job rendezvous1 job.gpu-idle "waits to reach the rendezvous store at 127.0.0.1:29612"
run_job single_rank job.gpu-idle "a sleep"
run_job healthy_amp "$PROBLEMS"
WARM=25 run_job healthy_amp_late "$PROBLEMS,job.phase-change"
run_job warmup_growth '!job.memory-growth'
run_job churn '!job.memory-growth'
WARM=1 run_job compile_warmup job.compiling "compiles kernels"
run_job cpu_model job.cpu-compute "computes on the CPU"
run_job tokenize_threads job.cpu-compute "computes on the CPU"
run_job wait_http job.gpu-idle "an HTTP server"

# gpuvet run on a healthy machine: a job that exits 0 and one that exits 3
for e in 0 3; do
	case " ${ONLY:-run} " in *" run "*) ;; *) break ;; esac
	EXIT=$e timeout 90 "$G" run --min-seconds 5 -- "$PY" "$OUT/job.py" ok 12 > "$OUT/run-$e.out" 2> "$OUT/run-$e.err"
	rc=$?
	echo "run exit $e: $rc" >> "$OUT/exit-codes.txt"
	if [ "$rc" = "$e" ] && ! grep -q "FAIL" "$OUT/run-$e.err" "$OUT/run-$e.out"; then
		echo "PASS run-$e: exit $rc passed through, no FAIL" >> "$OUT/verdicts.txt"
	else
		echo "FAIL run-$e: exit $rc (expected $e) or a FAIL printed" >> "$OUT/verdicts.txt"
	fi
done
cat "$OUT/data-fs.txt" "$OUT/summary.txt" "$OUT/verdicts.txt"
! grep -q FAIL "$OUT/verdicts.txt"
