#!/usr/bin/env python3
"""gpuvet watch --pid PID --diagnose S (the job doctor) against the fake NVML, GPM on and off,
with real processes as the job whose CPU use the test controls: a busy main process, busy
DataLoader-like children, an idle process. Each case reads like the bug report it stands for."""
import json
import os
import subprocess
import sys

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
PY = sys.executable
BUSY = [PY, "-c", "while True: pass"]
IDLE = [PY, "-c", "import time; time.sleep(120)"]
# a main process that sleeps while its two workers spin (DataLoader workers at 100%)
WORKERS = [PY, "-c", "import subprocess, sys, time\n"
           "ps = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(2)]\n"
           "time.sleep(120)"]


# a model left on the CPU: four threads of the GPU process compute at once (hashlib lets go of
# the GIL for large buffers, as torch's intra-op threads and a tokenizer's pool run outside it)
THREADS = [PY, "-c", "import hashlib, threading, time\n"
           "b = b'x' * (1 << 22)\n"
           "def spin():\n"
           "    while True:\n"
           "        hashlib.sha256(b).digest()\n"
           "for _ in range(4):\n"
           "    threading.Thread(target=spin, daemon=True).start()\n"
           "time.sleep(120)"]


class Job:
    def __init__(self, argv):
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.p.pid

    def __enter__(self):
        return self

    def __exit__(self, *a):
        try:
            os.killpg(self.p.pid, 9)
        except ProcessLookupError:
            pass
        self.p.wait()


def diagnose(job, cfg_lines, seconds="2", gpm=True, extra=(), env_extra=None):
    cfg = list(cfg_lines)
    if not any(l.startswith("device_count") for l in cfg):
        cfg.insert(0, "device_count = 1")
    if gpm:
        cfg.append("gpu.*.gpm = 1")
    env, path = gvtest.fake_env(FAKE, "\n".join(cfg).replace("@PID@", str(job.pid)) + "\n", env_extra)
    try:
        r = subprocess.run([GPUVET, "watch", "--pid", str(job.pid), "--diagnose", seconds, "--interval", "0.25", "--json"]
                           + list(extra), env=env, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    finally:
        os.unlink(path)
    check(r.stdout, "no output: exit %d, %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    check(doc["schema"] == "gpuvet.diagnose/1", "schema: %s" % doc.get("schema"))
    return r.returncode, doc


def verdict(doc):
    return doc["diagnosis"]["id"]


def explain(doc):
    return "%s: %s / %s / cpu %s" % (doc["diagnosis"]["id"], doc["diagnosis"]["title"], doc["diagnosis"]["evidence"],
                                     doc["job"]["cpu"])


def test_bf16_gemm_at_power_cap_is_tensor_bound_not_degraded():
    # the issue: watch said "degraded: clocks held back by power cap" for a bf16 GEMM at 690/700 W
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:20GiB", "gpu.0.util_gpu = 98",
                               "gpu.0.gpm.sm_active = 94", "gpu.0.gpm.tensor_active = 91",
                               "gpu.0.gpm.dram_active = 17", "gpu.0.power_mw = 690000", "gpu.0.clock_reasons = 0x4"])
    check(verdict(doc) == "job.tensor-bound", explain(doc))
    check(rc == 0 and doc["diagnosis"]["level"] == "ok", "a GPU-bound job is fine: exit %d" % rc)
    check(any("expected, not degraded" in n for n in doc["diagnosis"]["notes"]), "power cap note: %s" % doc["diagnosis"])
    g = doc["gpus"][0]
    check(abs(g["activity"]["tensor_active_ratio"] - 0.91) < 1e-6 and g["gpm"], "tensor figure: %s" % g["activity"])
    check(g["power_cap_ratio"] == 1, "power cap seen in every sample")


def test_copy_loop_is_dram_bound():
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:3GiB", "gpu.0.util_gpu = 97",
                               "gpu.0.gpm.sm_active = 96", "gpu.0.gpm.dram_active = 86"])
    check(verdict(doc) == "job.dram-bound", explain(doc))


def test_fp32_resnet_on_h200_wants_amp():
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:30GiB", "gpu.0.util_gpu = 98",
                               "gpu.0.gpm.sm_active = 89", "gpu.0.gpm.tensor_active = 0.3",
                               "gpu.0.gpm.dram_active = 18", "gpu.0.gpm.fp32_active = 27"])
    check(verdict(doc) == "job.fp32-math", explain(doc))
    check(rc == 1, "a warning verdict exits 1, got %d" % rc)
    check(any("TF32" in f for f in doc["diagnosis"]["fix"]), "AMP/TF32 fix: %s" % doc["diagnosis"]["fix"])


def test_cpu_fed_main_process_is_input_bound():
    # the main process prepares every batch itself: one thread at 100%, SM 10%
    with Job(BUSY) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:8GiB", "gpu.0.util_gpu = 12,28",
                               "gpu.0.gpm.sm_active = 9,11", "gpu.0.gpm.tensor_active = 1.5",
                               "gpu.0.gpm.dram_active = 4"])
    check(verdict(doc) == "job.input-bound", explain(doc))
    check(doc["job"]["cpu"]["workers"] == 0 and doc["job"]["cpu"]["main_busiest_thread_ratio"] >= 0.85,
          "the main thread measured busy: %s" % doc["job"]["cpu"])
    check(any("num_workers" in f for f in doc["diagnosis"]["fix"]), "num_workers fix")


def test_model_on_the_cpu_is_cpu_compute():
    # GPU 0 idles while its process computes on four cores: the model or its math on the CPU,
    # not "waits for data" (2.5 cores between at least 3 threads: a 2-core machine cannot show it)
    if (os.cpu_count() or 1) < 5:
        return gvtest.SKIP
    with Job(THREADS) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:2GiB", "gpu.0.util_gpu = 0", "gpu.0.gpm.sm_active = 0"],
                           seconds="3")
    check(verdict(doc) == "job.cpu-compute", explain(doc))
    cpu = doc["job"]["cpu"]
    check(cpu["compute_threads"] >= 3 and cpu["compute_cores"] >= 2.5, "the busy threads: %s" % cpu)
    check(any("next(model.parameters()).device" in f for f in doc["diagnosis"]["fix"]), "where the model is")


def test_saturated_workers_are_input_bound():
    with Job(WORKERS) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:8GiB", "gpu.0.util_gpu = 30",
                               "gpu.0.gpm.sm_active = 20"], seconds="3")
    check(verdict(doc) == "job.input-bound", explain(doc))
    cpu = doc["job"]["cpu"]
    check(cpu["workers"] == 2 and cpu["workers_saturated"] >= 1, "workers: %s" % cpu)
    check(cpu["main_busiest_thread_ratio"] < 0.5, "the sleeping main process: %s" % cpu)


def test_compiling_job_is_compiling_not_input_bound():
    # torch.compile's first steps: the main process traces (busy), its compilers run beside it
    # (here two busy processes whose name is cc1plus, as gcc's is). It read input-bound ("the CPU
    # side is saturated": DataLoader fixes) before
    import shutil
    import tempfile
    bindir = tempfile.mkdtemp(prefix="gpuvet-cc-", dir=gvtest.tmpdir())
    try:
        cc = os.path.join(bindir, "cc1plus")
        shutil.copy(sys.executable, cc)
        argv = [PY, "-c", "import subprocess, sys\n"
                "ps = [subprocess.Popen([%r, '-c', 'while True: pass']) for _ in range(2)]\n"
                "while True: pass" % cc]
        with Job(argv) as j:
            import time
            time.sleep(0.5)
            rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:8GiB", "gpu.0.util_gpu = 1",
                                   "gpu.0.gpm.sm_active = 0.01"], seconds="3")
        check(verdict(doc) == "job.compiling", explain(doc))
        cpu = doc["job"]["cpu"]
        check(cpu["compile_processes"] == 2 and cpu["compile_busiest_ratio"] >= 0.5 and cpu["workers"] == 0,
              "the compilers are not workers: %s" % cpu)
    finally:
        shutil.rmtree(bindir)


def test_tiny_kernels_with_sync_are_launch_bound_not_input_bound():
    # the issue: watch guessed input-bound; NVML utilization 25% while SM active is 0.0%
    with Job(BUSY) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:1GiB", "gpu.0.util_gpu = 25,26",
                               "gpu.0.gpm.sm_active = 0"])
    check(verdict(doc) == "job.launch-bound", explain(doc))
    check(any("CUDA graphs" in f for f in doc["diagnosis"]["fix"]), "fix: %s" % doc["diagnosis"]["fix"])
    # GPM off: the two cannot be told apart, and the verdict says so
    with Job(BUSY) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:1GiB", "gpu.0.util_gpu = 25,26"], gpm=False)
    check(verdict(doc) == "job.input-bound", explain(doc))
    check(not doc["gpus"][0]["gpm"] and doc["gpus"][0]["activity"]["sm_active_ratio"] is None,
          "no GPM: null activity, never a made-up value: %s" % doc["gpus"][0])
    check(any("launch/sync-bound" in n for n in doc["diagnosis"]["notes"]), "caveat: %s" % doc["diagnosis"]["notes"])


def test_idle_job_holding_memory_is_memory_pressure():
    with Job(IDLE) as j:
        for gpm in (True, False):
            rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:136GiB", "gpu.0.memory_used = 136GiB",
                                   "gpu.0.util_gpu = 0"], gpm=gpm)
            check(verdict(doc) == "job.memory-pressure", "GPM %s: %s" % (gpm, explain(doc)))
        # another process's memory on the job's GPU, and its SM time (NVML's per-process utilization)
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:10GiB;999999:other:40GiB", "gpu.0.util_gpu = 3",
                               "gpu.0.process_sm_util = @PID@:1;999999:2"], gpm=False)
        check(verdict(doc) == "job.memory-pressure", explain(doc))
        check(doc["gpus"][0]["other_processes"] == 1, "other process counted")
        check(abs(doc["gpus"][0]["other_sm_util_ratio"] - 0.02) < 1e-9 and abs(doc["gpus"][0]["job_sm_util_ratio"] - 0.01) < 1e-9,
              "per-process SM shares: %s" % doc["gpus"][0])
        # idle, nothing held, CPU quiet: waiting for something else
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:2GiB", "gpu.0.util_gpu = 1"])
        check(verdict(doc) == "job.gpu-idle", explain(doc))


def test_one_gpu_of_two_idle_is_imbalance():
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["device_count = 2", "gpu.*.processes = @PID@:python:20GiB", "gpu.0.util_gpu = 95",
                               "gpu.0.gpm.sm_active = 90", "gpu.1.util_gpu = 1", "gpu.1.gpm.sm_active = 0"])
    check(verdict(doc) == "job.multi-gpu-imbalance" and doc["diagnosis"]["gpu"] == 1, explain(doc))
    check(len(doc["gpus"]) == 2, "both GPUs of the job")


def test_thermal_slowdown_and_lowered_limit_are_degraded():
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:20GiB", "gpu.0.util_gpu = 98", "gpu.0.gpm.sm_active = 94",
                               "gpu.0.gpm.tensor_active = 90", "gpu.0.clock_reasons = 0x64", "gpu.0.temperature = 88"])
        check(verdict(doc) == "job.gpu-slowdown" and rc == 1, explain(doc))
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:20GiB", "gpu.0.util_gpu = 98", "gpu.0.gpm.sm_active = 94",
                               "gpu.0.gpm.tensor_active = 90", "gpu.0.clock_reasons = 0x4", "gpu.0.power_limit_mw = 450000"])
        check(verdict(doc) == "job.power-limit-lowered", explain(doc))


def test_job_without_gpu_and_usage():
    with Job(BUSY) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = 1:init:1GiB", "gpu.0.util_gpu = 50"])
        check(verdict(doc) == "job.no-gpu", explain(doc))
        env, path = gvtest.fake_env(FAKE, "device_count = 1\n")
        try:
            r = subprocess.run([GPUVET, "watch", "--diagnose", "2"], env=env, capture_output=True, timeout=30)
            check(r.returncode == 2 and b"--diagnose goes with --pid" in r.stderr, "usage: %d %s" % (r.returncode, r.stderr))
            # text output: one verdict, its figures and the fix
            env["GPUVET_FAKE_CONFIG"] = path
            with open(path, "w") as f:
                f.write("device_count = 1\ngpu.0.gpm = 1\ngpu.0.processes = %d:python:1GiB\ngpu.0.util_gpu = 25\n" % j.pid)
            r = subprocess.run([GPUVET, "watch", "--pid", str(j.pid), "--diagnose", "1.5", "--interval", "0.25"], env=env,
                               capture_output=True, timeout=30)
            out = r.stdout.decode()
            check(out.startswith("job %d: launch/sync-bound" % j.pid) and "[job.launch-bound, warn]" in out
                  and "\n  -> " in out, "text verdict: %s" % out)
        finally:
            os.unlink(path)


def test_running_verdict_in_the_stream():
    # watch --pid without --diagnose: the text stream carries the doctor's verdict of the last 10 samples
    with Job(BUSY) as j:
        env, path = gvtest.fake_env(FAKE, "device_count = 1\ngpu.0.gpm = 1\ngpu.0.processes = %d:python:1GiB\n"
                                          "gpu.0.util_gpu = 25\ngpu.0.gpm.sm_active = 0\n" % j.pid)
        try:
            r = subprocess.run([GPUVET, "watch", "--pid", str(j.pid), "--interval", "0.2", "--count", "16"], env=env,
                               capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
        finally:
            os.unlink(path)
    out = r.stdout.decode()
    check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
    check("job doctor (last " in out and "[job.launch-bound]" in out, "running verdict: %s" % out[-800:])


def test_watch_shows_activity_or_says_why_not():
    cfg = ("device_count = 2\ngpu.0.gpm = 1\ngpu.0.gpm.sm_active = 94\ngpu.0.gpm.tensor_active = 91\n"
           "gpu.0.gpm.dram_active = 17\ngpu.0.util_gpu = 98\n")
    env, path = gvtest.fake_env(FAKE, cfg)
    try:
        r = subprocess.run([GPUVET, "watch", "--count", "2", "--interval", "0.2"], env=env, capture_output=True, timeout=30)
        out = r.stdout.decode()
        check("activity: GR 0%  SM 94%  OCC 0%  TENS 91%  DRAM 17%" in out, "GPM line: %s" % out)
        check("activity: n/a (GPM: not supported by this GPU" in out, "why not on GPU 1: %s" % out)
        r = subprocess.run([GPUVET, "watch", "--once", "--json"], env=env, capture_output=True, timeout=30)
        doc = json.loads(r.stdout)
        a0, a1 = doc["gpus"][0]["activity"], doc["gpus"][1]["activity"]
        # --once: the sampler waits the 100 ms NVML needs between the two GPM samples
        check(a0["gpm"] == "supported" and a0["sm_active_ratio"] == 0.94, "GPU 0 activity: %s" % a0)
        check(a1["gpm"].startswith("not supported") and a1["tensor_active_ratio"] is None, "GPU 1 activity: %s" % a1)
    finally:
        os.unlink(path)


def test_other_pid_namespace_found_by_device_file():
    # in a container NVML lists host pids: the job (pid 777 here) is not in the list, but it
    # holds /dev/nvidia0 open; a machine built as a tree (--root) with that /proc
    import tempfile, shutil
    root = tempfile.mkdtemp(prefix="gpuvet-doctor-root-")
    try:
        stat = "777 (python) S 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n"
        for d in ("proc/777", "proc/777/task/777", "proc/777/fd"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        for f in ("proc/777/stat", "proc/777/task/777/stat"):
            with open(os.path.join(root, f), "w") as fh:
                fh.write(stat)
        os.symlink("/dev/nvidia0", os.path.join(root, "proc/777/fd/3"))
        cfg = ("device_count = 1\ngpu.0.gpm = 1\ngpu.0.processes = 424242:python:20GiB\ngpu.0.util_gpu = 98\n"
               "gpu.0.gpm.sm_active = 94\ngpu.0.gpm.tensor_active = 91\n")
        env, path = gvtest.fake_env(FAKE, cfg)
        try:
            r = subprocess.run([GPUVET, "--root", root, "watch", "--pid", "777", "--diagnose", "1", "--interval", "0.25",
                                "--json"], env=env, capture_output=True, timeout=30)
        finally:
            os.unlink(path)
        check(r.stdout, "no output: %d %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        check(verdict(doc) == "job.tensor-bound", explain(doc))
        check(any("PID namespace" in n for n in doc["diagnosis"]["notes"]), "the note: %s" % doc["diagnosis"]["notes"])
        check(doc["gpus"][0]["job_memory_bytes"] is None, "job memory unknown: %s" % doc["gpus"][0])
    finally:
        shutil.rmtree(root)



def test_growing_memory_is_memory_growth():
    # the issue: a job keeping every step's output grew about 1 GiB/s on the H200 and read
    # "mostly idle"; NVML's list of the job's memory rises at every call here
    with Job(IDLE) as j:
        steps = ",".join("@PID@:python:%dMiB" % (10240 + 64 * k) for k in range(400))
        rc, doc = diagnose(j, ["gpu.0.processes = " + steps, "gpu.0.util_gpu = 20", "gpu.0.gpm.sm_active = 10"])
    check(verdict(doc) == "job.memory-growth" and rc == 1, explain(doc))
    g = doc["gpus"][0]
    check(g["memory_growth_steady"] and g["memory_growth_bytes_per_second"] > 64 << 20 and g["memory_growth_of"] == "job",
          "growth figures: %s" % g)
    check("full in" in doc["diagnosis"]["title"], "time to full: %s" % doc["diagnosis"]["title"])
    check(any("_record_memory_history" in f for f in doc["diagnosis"]["fix"]), "how to find it: %s" % doc["diagnosis"]["fix"])
    # a job that allocated once and holds it is not growing
    with Job(IDLE) as j:
        rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:30GiB", "gpu.0.util_gpu = 98", "gpu.0.gpm.sm_active = 94",
                               "gpu.0.gpm.tensor_active = 91"])
    check(verdict(doc) == "job.tensor-bound" and not doc["gpus"][0]["memory_growth_steady"], explain(doc))


def fake_pyspy(dirname, text):
    """A py-spy on PATH that prints text for `dump --nonblocking --pid N`."""
    path = os.path.join(dirname, "py-spy")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n[ \"$1 $2 $3\" = \"dump --nonblocking --pid\" ] || exit 2\ncat <<'EOF'\n%sEOF\n" % text)
    os.chmod(path, 0o755)


def test_idle_job_names_the_socket_it_waits_on():
    # a job that waits on its peer over TCP (another rank, a data server): the doctor names the
    # socket and its peer from /proc, and the Python frames where py-spy is on PATH
    import socket
    import tempfile
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    argv = [PY, "-c", "import socket; s = socket.create_connection(('127.0.0.1', %d)); s.recv(1)" % port]
    bindir = tempfile.mkdtemp(prefix="gpuvet-bin-", dir=gvtest.tmpdir())
    try:
        with Job(argv) as j:
            conn, _ = srv.accept()
            path_plain = bindir + ":/usr/bin:/bin"
            rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:2GiB", "gpu.0.util_gpu = 1"], extra=(),
                               env_extra={"PATH": path_plain})
            waits = doc["job"]["waits"]
            check(verdict(doc) == "job.gpu-idle" and waits["sampled"], explain(doc))
            if os.geteuid() == 0:
                t = waits["threads"][0]
                check(t["kind"] == "socket" and t["call"] in ("recvfrom", "read", "recvmsg") and
                      "127.0.0.1:%d" % port in t["on"] and t["ratio"] >= 0.5, "the wait: %s" % waits)
                check("the network (a TCP socket to 127.0.0.1:%d)" % port in doc["diagnosis"]["title"],
                      "title: %s" % doc["diagnosis"]["title"])
            check(any("pip install py-spy" in f for f in doc["diagnosis"]["fix"]), "how to get py-spy: %s" % doc["diagnosis"])
            fake_pyspy(bindir, 'Thread %d (idle): "MainThread"\n    recv_into (socket.py:705)\n    <module> (<string>:1)\n' % j.pid)
            rc, doc = diagnose(j, ["gpu.0.processes = @PID@:python:2GiB", "gpu.0.util_gpu = 1"], env_extra={"PATH": path_plain})
            check(doc["job"]["waits"]["python_frames"] == ["recv_into (socket.py:705)", "<module> (<string>:1)"],
                  "py-spy frames: %s" % doc["job"]["waits"])
            check(any("recv_into (socket.py:705) <- <module>" in e for e in doc["diagnosis"]["evidence"]),
                  "frames in the evidence: %s" % doc["diagnosis"]["evidence"])
            conn.close()
    finally:
        srv.close()
        import shutil
        shutil.rmtree(bindir)


def test_waits_read_through_root():
    # a machine as a tree: the main thread in read() on a shard, its worker in read() on their pipe
    import platform
    import shutil
    import tempfile
    nr_read = {"x86_64": 0, "aarch64": 63, "riscv64": 63}.get(platform.machine())
    if nr_read is None:
        return
    root = tempfile.mkdtemp(prefix="gpuvet-doctor-root-", dir=gvtest.tmpdir())
    try:
        def put(rel, text):
            full = os.path.join(root, rel)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as fh:
                fh.write(text)

        for pid, ppid in ((777, 1), (778, 777)):
            stat = "%d (python) S %d 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n" % (pid, ppid)
            put("proc/%d/stat" % pid, stat)
            put("proc/%d/task/%d/stat" % (pid, pid), stat)
            put("proc/%d/task/%d/syscall" % (pid, pid), "%d 0x%x 0x7f00 0x10000 0x0 0x0 0x0 0x7ffd 0x7f00\n"
                % (nr_read, 5 if pid == 777 else 4))
            put("proc/%d/task/%d/wchan" % (pid, pid), "0\n")
            put("proc/%d/status" % pid, "Name:\tpython\nUid:\t%d\t%d\t%d\t%d\n" % ((os.geteuid(),) * 4))
            put("proc/%d/comm" % pid, "python\n")
            put("proc/%d/task/%d/comm" % (pid, pid), "python\n")
        put("proc/778/task/778/comm", "pt_data_worker\n")
        put("data/train/shard-00042.tar", "x")
        os.makedirs(os.path.join(root, "proc/777/fd"))
        os.makedirs(os.path.join(root, "proc/778/fd"))
        os.symlink("/data/train/shard-00042.tar", os.path.join(root, "proc/777/fd/5"))
        os.symlink("/dev/nvidia0", os.path.join(root, "proc/777/fd/6"))
        os.symlink("pipe:[9001]", os.path.join(root, "proc/778/fd/4"))
        os.symlink("pipe:[9001]", os.path.join(root, "proc/777/fd/7"))
        cfg = "device_count = 1\ngpu.0.gpm = 1\ngpu.0.processes = 777:python:2GiB\ngpu.0.util_gpu = 1\n"
        env, path = gvtest.fake_env(FAKE, cfg)
        try:
            r = subprocess.run([GPUVET, "--root", root, "watch", "--pid", "777", "--diagnose", "1", "--interval", "0.25",
                                "--json"], env=env, capture_output=True, timeout=30)
        finally:
            os.unlink(path)
        check(r.stdout, "no output: %d %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        check(verdict(doc) == "job.gpu-idle", explain(doc))
        check("reads from storage (/data/train/shard-00042.tar)" in doc["diagnosis"]["title"], explain(doc))
        ws = doc["job"]["waits"]["threads"]
        check(ws[0]["kind"] == "file" and ws[0]["call"] == "read" and ws[0]["on"] == "/data/train/shard-00042.tar",
              "the main thread's wait: %s" % ws)
        check(any(w["kind"] == "pipe" and w["on"] == "a pipe to pid 777 (python)" and w["workers"] == 1 for w in ws),
              "the worker's wait: %s" % ws)
        check(doc["job"]["cpu"]["dataloader_workers"] == 1, "the worker named pt_data_worker: %s" % doc["job"]["cpu"])
        check(any("not with --root" in n for n in doc["diagnosis"]["notes"]) or
              doc["job"]["waits"].get("python_frames_why", "").startswith("not with --root"),
              "no py-spy on a tree's pid: %s" % doc["job"]["waits"])
    finally:
        shutil.rmtree(root)

gvtest.run([test_growing_memory_is_memory_growth, test_idle_job_names_the_socket_it_waits_on, test_waits_read_through_root,
            test_other_pid_namespace_found_by_device_file, test_watch_shows_activity_or_says_why_not, test_running_verdict_in_the_stream, test_bf16_gemm_at_power_cap_is_tensor_bound_not_degraded, test_copy_loop_is_dram_bound,
            test_fp32_resnet_on_h200_wants_amp, test_cpu_fed_main_process_is_input_bound,
            test_saturated_workers_are_input_bound, test_model_on_the_cpu_is_cpu_compute,
            test_compiling_job_is_compiling_not_input_bound,
            test_tiny_kernels_with_sync_are_launch_bound_not_input_bound,
            test_idle_job_holding_memory_is_memory_pressure, test_one_gpu_of_two_idle_is_imbalance,
            test_thermal_slowdown_and_lowered_limit_are_degraded, test_job_without_gpu_and_usage])
