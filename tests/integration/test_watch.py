#!/usr/bin/env python3
"""gpuvet watch against the fake NVML: --once text and JSON with the fake's values, --pid
following a process tree, --record into the history database, exit statuses, and the TUI
driven through tmux (send-keys, capture-pane) when tmux is installed."""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import tempfile
import time

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
N = 8
BASE = ["device_count = %d" % N, "gpu.5.pcie_width = 8", "gpu.3.clock_reasons = 0x44"]
for i in range(N):
    BASE += ["gpu.%d.temperature = %d" % (i, 30 + i), "gpu.%d.power_mw = %d" % (i, 100000 + 1000 * i),
             "gpu.%d.memory_used = %dGiB" % (i, i), "gpu.%d.util_gpu = %d" % (i, 10 * i)]


def config(*extra):
    return "\n".join(BASE + list(extra)) + "\n"


def watch(args, cfg, env_extra=None, timeout=30):
    env, _ = gvtest.fake_env(FAKE, cfg, env_extra)
    return subprocess.run([GPUVET, "watch"] + args, env=env, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_once_text():
    r = watch(["--once"], config("gpu.1.processes = 4242:python:3GiB"))
    out = r.stdout.decode()
    check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
    check("8 GPUs" in out and "health: degraded" in out, "header: %s" % out.splitlines()[0])
    rows = [l for l in out.splitlines() if l[:1].isdigit() and "NVIDIA H200" in l]
    check(len(rows) == N, "%d GPU rows" % len(rows))
    for i, row in enumerate(rows):
        f = row.split()
        check(f[0] == str(i), "row order: %s" % row)
        check("%dC" % (30 + i) in f and "%d%%" % (10 * i) in f, "GPU %d temperature/utilization: %s" % (i, row))
        check("%d/700W" % (100 + i) in f, "GPU %d power: %s" % (i, row))
        check(f[-1] == ("degraded" if i in (3, 5) else "healthy"), "GPU %d health: %s" % (i, row))
    check("5x8!" in rows[5], "degraded link not marked: %s" % rows[5])
    check("clocks held back by: power cap, hardware thermal slowdown" in out, "clock reasons in words")
    # GPU, PID, USER ("?": no such process in /proc), TYPE, NAME
    check(any(l.split()[:5] == ["1", "4242", "?", "compute", "python"] for l in out.splitlines()), "process row:\n%s" % out)
    check("gpu.pcie-degraded" in out and "reseat" in out, "health message with its action")


def test_once_json():
    r = watch(["--once", "--json"], config("gpu.1.processes = 4242:python:3GiB;4343:torchrun:n/a"))
    check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    check(doc["schema"] == "gpuvet.watch/1" and doc["driver_version"] == "580.159.04", "schema/driver")
    check(len(doc["gpus"]) == N, "GPU count")
    for i, g in enumerate(doc["gpus"]):
        check(g["index"] == i and g["uuid"] == "GPU-fa4e0000-0000-4000-8000-%012d" % i, "identity of GPU %d" % i)
        check(g["temperature_c"] == 30 + i and g["power_w"] == 100 + i, "values of GPU %d" % i)
        check(g["memory_used_bytes"] == i * 2**30 and g["memory_total_bytes"] == 143771 * 2**20, "memory of GPU %d" % i)
        check(abs(g["utilization_gpu_ratio"] - i / 10) < 1e-9, "utilization of GPU %d" % i)
        check(g["fan_ratio"] is None, "n/a is null")
        check(g["temperature_slowdown_c"] == 89, "slowdown threshold")
    check(doc["gpus"][3]["clock_event_reasons"] == ["sw_power_cap", "hw_thermal_slowdown"], "reasons of GPU 3")
    procs = doc["gpus"][1]["processes"]
    check([p["pid"] for p in procs] == [4242, 4343] and procs[0]["memory_bytes"] == 3 * 2**30
          and procs[1]["memory_bytes"] is None, "processes: %s" % procs)
    check(doc["gpus"][5]["health"] == "degraded" and doc["gpus"][5]["conditions"][0]["id"] == "gpu.pcie-degraded",
          "GPU 5 condition")
    check(doc["health"] == "degraded", "overall health")


def test_old_driver_missing_symbols():
    # a driver library with only the basic symbols: everything else reads n/a, nothing stops
    basic = os.path.join(os.path.dirname(FAKE), "libfake_nvml_basic.so")
    if not os.path.exists(basic):
        return gvtest.SKIP
    r = watch(["--once", "--json"], config(), {"GPUVET_NVML_LIB": basic})
    check(r.returncode == 0, "exit %d with the basic library: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    check(len(doc["gpus"]) == N, "GPU count with the basic library")
    g = doc["gpus"][0]
    check(g["name"] == "NVIDIA H200" and g["memory_total_bytes"] == 143771 * 2**20, "basic readings: %s" % g)
    check(g["temperature_c"] is None and g["power_w"] is None and g["utilization_gpu_ratio"] is None, "n/a readings are null")
    r = watch(["--once"], config(), {"GPUVET_NVML_LIB": basic})
    check(r.returncode == 0 and "n/a" in r.stdout.decode(), "text with n/a: %s" % r.stdout[:300])


def test_unhealthy_exit_status():
    r = watch(["--once"], config("gpu.6.temperature = 90"))
    check(r.returncode == 1, "an unhealthy GPU (90 C, slowdown at 89) must exit 1, got %d" % r.returncode)
    check("GPU 6 unhealthy" in r.stdout.decode(), "unhealthy message")
    # a GPU that fell off the bus: NVML answers GPU_IS_LOST for it, the others still read
    r = watch(["--once", "--json"], config("gpu.4.error.nvmlDeviceGetTemperature = 15", "gpu.4.error.nvmlDeviceGetPowerUsage = 15"))
    check(r.returncode == 1, "a lost GPU must exit 1, got %d" % r.returncode)
    doc = json.loads(r.stdout)
    g4 = doc["gpus"][4]
    check(g4["lost"] and g4["health"] == "unhealthy" and g4["conditions"][0]["id"] == "gpu.lost", "GPU 4: %s" % g4["conditions"])
    check(doc["gpus"][2]["temperature_c"] == 32 and doc["gpus"][2]["health"] == "healthy", "the other GPUs still read")


def test_no_nvml():
    r = watch(["--once", "--json"], config(), {"GPUVET_NVML_LIB": "/nonexistent/libnvidia-ml.so.1"})
    check(r.returncode == 1, "exit %d without NVML" % r.returncode)
    doc = json.loads(r.stdout)
    check(doc["schema"] == "gpuvet.watch/1" and "NVML" in doc["error"], "error document: %s" % doc)
    check(b"cannot read the GPUs" in r.stderr, "stderr: %s" % r.stderr)
    r = watch(["--once", "--pid", "999999999"], config())
    check(r.returncode == 2 and b"no such process" in r.stderr, "--pid of no process: %d %s" % (r.returncode, r.stderr))


def test_once_every_reading_fails():
    # every value query of both GPUs answers NVML_ERROR_UNKNOWN (999); the process lists still
    # answer (empty): a GPU none of whose values can be read is lost, not "healthy" with every
    # field an error
    fns = ["UtilizationRates", "MemoryInfo", "Temperature", "TemperatureThreshold", "PowerUsage",
           "EnforcedPowerLimit", "PowerManagementDefaultLimit", "TotalEnergyConsumption", "ClockInfo",
           "MaxClockInfo", "CurrPcieLinkGeneration", "CurrPcieLinkWidth", "MaxPcieLinkGeneration",
           "MaxPcieLinkWidth", "FieldValues", "CurrentClocksEventReasons", "CurrentClocksThrottleReasons",
           "FanSpeed", "TotalEccErrors", "RetiredPages", "RetiredPagesPendingStatus", "RemappedRows",
           "PcieReplayCounter", "PcieThroughput", "EncoderUtilization", "DecoderUtilization"]
    r = watch(["--once", "--json"], "device_count = 2\n" + "".join("error.nvmlDeviceGet%s = 999\n" % f for f in fns))
    check(r.returncode == 1, "exit %d with every reading failing: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    check(doc["health"] == "unhealthy", "health %s with every reading failing" % doc.get("health"))
    check(all(g["lost"] for g in doc["gpus"]), "GPUs not lost: %s" % [g.get("lost") for g in doc["gpus"]])


def test_once_hung_query_ends():
    # the first contact (nvmlInit, the count) answers, a device query then hangs: --once gives up
    # after the deadline check gives NVML (GPUVET_DRIVER_TIMEOUT 2 s, +2 s), exit 1
    t0 = time.time()
    try:
        r = watch(["--once", "--json"], config("hang.nvmlDeviceGetUtilizationRates = 600000"),
                  {"GPUVET_DRIVER_TIMEOUT": "2"}, timeout=30)
    except subprocess.TimeoutExpired:
        raise gvtest.Fail("watch --once did not end by itself within 30 s with a hung query")
    took = time.time() - t0
    check(took < 15, "watch --once took %.1f s with a hung query" % took)
    check(r.returncode == 1, "exit %d with a hung query: %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    check("did not answer within 4 s" in doc["error"], "error document: %s" % doc)


def test_once_interrupted_is_not_success():
    # interrupted during a hung nvmlInit: nothing was printed, the status says so (128 + SIGINT)
    env, _ = gvtest.fake_env(FAKE, config("hang.nvmlInit = 600000"))
    p = subprocess.Popen([GPUVET, "watch", "--once"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    time.sleep(1)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    check(p.returncode in (130, -signal.SIGINT), "an interrupted watch --once exits %d: %s" % (p.returncode, err))
    check(out == b"", "printed: %s" % out)


def test_pid_follows_the_job():
    # a job of two processes: sh and its child sleep; only the child holds a GPU
    job = subprocess.Popen(["sh", "-c", "sleep 30 & wait"], start_new_session=True, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    try:
        def parent(p):
            try:  # processes come and go while we read /proc
                with open("/proc/%s/stat" % p) as f:
                    return f.read().rsplit(")", 1)[1].split()[1]
            except (OSError, IndexError):
                return None

        child = gvtest.wait_for(lambda: next((p for p in os.listdir("/proc") if p.isdigit() and parent(p) == str(job.pid)), None),
                                5, "the child process")
        cfg = config("gpu.3.processes = %s:sleep:5GiB" % child, "gpu.6.processes = 999999:other:1GiB")
        r = watch(["--once", "--json", "--pid", str(job.pid)], cfg)
        check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
        doc = json.loads(r.stdout)
        check(doc["job"]["pid"] == job.pid and int(child) in doc["job"]["pids"], "job pids: %s" % doc["job"])
        check([g["index"] for g in doc["gpus"]] == [3], "GPUs of the job: %s" % [g["index"] for g in doc["gpus"]])
        check([p["pid"] for p in doc["gpus"][0]["processes"]] == [int(child)], "processes of the job")
        r = watch(["--once", "--pid", str(job.pid)], cfg)
        out = r.stdout.decode()
        check("following process %d and 1 descendant" % job.pid in out, "text header: %s" % out[:200])
        check("999999" not in out, "another job's process shown")
    finally:
        os.killpg(job.pid, 9)  # the sleep too
        job.wait()


def test_record():
    d = tempfile.mkdtemp(prefix="gpuvet-record-")
    try:
        db = os.path.join(d, "h.db")
        r = watch(["--count", "3", "--interval", "0.1", "--record", "--db", db], config())
        check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr))
        check(r.stdout.decode().count("gpuvet watch ") == 3, "three snapshots without a terminal")
        con = sqlite3.connect(db)
        runs = con.execute("select id, kind, complete from runs").fetchall()
        check(len(runs) == 1 and runs[0][1] == "watch" and runs[0][2] == 1, "runs: %s" % runs)
        n = con.execute("select count(*) from samples where metric = 'temperature_c'").fetchone()[0]
        check(n == 3 * N, "%d temperature samples, want %d" % (n, 3 * N))
        t = con.execute("select value from samples where metric = 'temperature_c' and gpu = 4 limit 1").fetchone()[0]
        check(t == 34, "recorded temperature %s" % t)
        gpus = con.execute("select idx, temperature_c, power_w from gpus order by idx").fetchall()
        check(len(gpus) == N and gpus[7][1] == 37 and gpus[7][2] == 107, "GPU conditions: %s" % gpus[7:])
        con.close()
    finally:
        shutil.rmtree(d)


def test_tui_in_tmux():
    if not shutil.which("tmux"):
        print("  tmux is not installed: TUI smoke test not run")
        return gvtest.SKIP
    sock = "gpuvet-test-%d" % os.getpid()
    env, cfg = gvtest.fake_env(FAKE, config("gpu.2.processes = 4242:python:3GiB;4343:zzz:1GiB"))
    env["TMUX_TMPDIR"] = gvtest.short_tmpdir()  # tmux's socket: not in /tmp/tmux-UID, gone at exit

    def tmux(*a):
        return subprocess.run(["tmux", "-L", sock] + list(a), capture_output=True, timeout=10, env=env)

    def screen():
        return tmux("capture-pane", "-p", "-t", "gv").stdout.decode("utf-8", "replace")

    cmd = ("env LANG=C.UTF-8 TERM=xterm-256color GPUVET_WATCH_SECONDS=20 %s watch --interval 0.2; "
           "echo EXITED-$?; sleep 20" % GPUVET)
    try:
        r = tmux("new-session", "-d", "-s", "gv", "-x", "140", "-y", "40", cmd)
        check(r.returncode == 0, "tmux: %s" % r.stderr)
        gvtest.wait_for(lambda: "NVIDIA H200" in screen() and "sort: GPU-MEM, descending" in screen(), 10, "the first frame")
        s = screen()
        check("gpuvet watch" in s and "8 GPUs" in s, "header:\n%s" % s)
        check(s.count("NVIDIA H200") == N, "GPU rows:\n%s" % s)
        check("4242" in s and "python" in s, "process row:\n%s" % s)
        check("gpu.pcie-degraded" in s or "gpu.throttled" in s, "health messages:\n%s" % s)
        tmux("send-keys", "-t", "gv", "s")
        gvtest.wait_for(lambda: "sort: POD / JOB, ascending" in screen(), 5, "the sort key")
        tmux("send-keys", "-t", "gv", "j", "j", "j")
        gvtest.wait_for(lambda: ">2" in screen() and "GPU 2 only" in screen(), 5, "GPU 2 selected")
        tmux("send-keys", "-t", "gv", "a")
        gvtest.wait_for(lambda: ">2" not in screen(), 5, "selection cleared")
        tmux("resize-window", "-t", "gv", "-x", "80", "-y", "20")
        gvtest.wait_for(lambda: "gpuvet watch" in screen() and len(screen().splitlines()) == 20, 5, "a redraw at 80x20")
        s = screen().splitlines()
        check(s[-1].startswith("h help  q quit") and s[-1].rstrip().endswith("span"), "footer at 80x20: %r" % s[-1])
        check(sum("NVIDIA H200" in l for l in s) == N, "one row per GPU at 80x20:\n%s" % "\n".join(s))
        tmux("resize-window", "-t", "gv", "-x", "60", "-y", "12")
        gvtest.wait_for(lambda: "GPUs shown" in screen(), 5, "a 60x12 terminal to say what is hidden")
        check(all(len(l) <= 60 for l in screen().splitlines()), "a line wider than the terminal")
        tmux("resize-window", "-t", "gv", "-x", "200", "-y", "50")
        gvtest.wait_for(lambda: screen().count("NVIDIA H200") == N, 5, "a redraw at 200x50")
        tmux("send-keys", "-t", "gv", "q")
        gvtest.wait_for(lambda: "EXITED-0" in screen(), 5, "watch to quit on q")
    finally:
        tmux("kill-server")


def test_tui_name_column():
    """Long GPU names keep a gap before the next column ("NVIDIA A100-SXUTIL" was the bug): the
    column is as wide as the longest name the terminal can spare, shortened without its NVIDIA
    prefix, else cut with '~'."""
    if not shutil.which("tmux"):
        print("  tmux is not installed: TUI name column test not run")
        return gvtest.SKIP
    sock = "gpuvet-names-%d" % os.getpid()
    env, cfg = gvtest.fake_env(FAKE, "device_count = 2\ngpu.0.name = NVIDIA A100-SXM4-80GB\n"
                               "gpu.1.name = NVIDIA RTX 6000 Ada Generation\n")
    env["TMUX_TMPDIR"] = gvtest.short_tmpdir()  # tmux's socket: not in /tmp/tmux-UID, gone at exit

    def tmux(*a):
        return subprocess.run(["tmux", "-L", sock] + list(a), capture_output=True, timeout=10, env=env)

    def rows():
        out = tmux("capture-pane", "-p", "-t", "gv").stdout.decode("utf-8", "replace")
        return [l for l in out.splitlines() if l[1:3] in ("0 ", "1 ")]

    cmd = "env LANG=C.UTF-8 TERM=xterm-256color GPUVET_WATCH_SECONDS=20 %s watch --interval 0.2; sleep 20" % GPUVET
    try:
        check(tmux("new-session", "-d", "-s", "gv", "-x", "160", "-y", "30", cmd).returncode == 0, "tmux")
        gvtest.wait_for(lambda: len(rows()) == 2 and "UTIL" in rows()[0], 10, "the first frame")
        r = rows()
        check("NVIDIA A100-SXM4-80GB " in r[0] and "NVIDIA RTX 6000 Ada Generation " in r[1], "full names at 160:\n%s" % r)
        tmux("resize-window", "-t", "gv", "-x", "80", "-y", "30")
        # the full names hold "A100-SXM4-80GB " too: wait for the redraw itself, not for a frame
        # that may still be the one at 160 (the test was flaky so)
        try:
            gvtest.wait_for(lambda: len(rows()) == 2 and "RTX 6000 Ada~ " in rows()[1], 5, "a redraw at 80")
        except gvtest.Fail:
            pass  # the checks below show the screen
        r = rows()
        check("RTX 6000 Ada~ " in r[1], "a cut name keeps its gap at 80:\n%s" % r)
        check(all("UTIL" not in l or " UTIL" in l for l in r), "a name glued to UTIL:\n%s" % r)
    finally:
        tmux("kill-server")


gvtest.run([test_once_text, test_once_json, test_old_driver_missing_symbols, test_unhealthy_exit_status, test_no_nvml,
            test_once_every_reading_fails, test_once_hung_query_ends, test_once_interrupted_is_not_success, test_pid_follows_the_job,
            test_record, test_tui_in_tmux, test_tui_name_column])
