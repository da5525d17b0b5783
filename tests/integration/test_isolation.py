#!/usr/bin/env python3
"""Vendor libraries never run unsupervised in gpuvet's own process: a libnvidia-ml whose
constructor blocks, exits or prints cannot hang check, watch or serve, end them with status 0,
or corrupt their JSON; SIGTERM and SIGINT end every command promptly and take the library's
child process along. The bounds below are far from the hangs they tell apart (a 60 s
constructor against an end within 10 s of the signal): not timing measurements."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
ROOT = tempfile.mkdtemp(prefix="gpuvet-isolation-root-")


def env_with(conf, extra=None):
    env, path = gvtest.fake_env(FAKE, conf, extra)
    env["GPUVET_ROOT"] = ROOT
    return env, path


def gone(pid, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # a zombie of an exited parent is reaped by init: read its state
        try:
            with open("/proc/%d/stat" % pid) as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def read_pid(path, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            with open(path) as f:
                t = f.read().strip()
            if t:
                return int(t)
        except (OSError, ValueError):
            pass
        time.sleep(0.02)
    return None


def stopped_promptly(argv, sig):
    """Runs gpuvet with a constructor that blocks 60 s, sends sig once the library is loading,
    and checks that gpuvet and the library's process end within 10 s."""
    pidfile = tempfile.mktemp(prefix="gpuvet-ctor-pid-")
    env, conf = env_with("device_count = 1\nconstructor.nvml = hang 60000\nconstructor.pidfile = %s\n" % pidfile)
    p = subprocess.Popen([GPUVET] + argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        lib_pid = read_pid(pidfile)
        check(lib_pid is not None, "%s: the library was never loaded" % argv)
        check(lib_pid != p.pid, "%s: the library's constructor ran in gpuvet's own process" % argv)
        p.send_signal(sig)
        try:
            p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            raise gvtest.Fail("%s: still running 10 s after %s" % (argv, signal.Signals(sig).name))
        check(gone(lib_pid, 5), "%s: the library's process %d outlived gpuvet" % (argv, lib_pid))
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.unlink(conf)
        if os.path.exists(pidfile):
            os.unlink(pidfile)


def test_signals_end_every_command():
    for argv in (["check", "--fast"], ["check", "--no-python", "--json"], ["watch", "--once"],
                 ["watch", "--once", "--json"], ["watch", "--count", "3"]):
        for sig in (signal.SIGTERM, signal.SIGINT):
            stopped_promptly(argv, sig)
    d = tempfile.mkdtemp(prefix="gpuvet-textfile-")
    try:
        stopped_promptly(["serve", "--textfile", d, "--once"], signal.SIGTERM)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    stopped_promptly(["serve", "--listen", "127.0.0.1:0"], signal.SIGTERM)


def test_stuck_sample_does_not_hold_watch():
    """NVML loads and answers the first contact, then a query blocks (a GPU falling off the bus
    mid-run): watch runs that query in its own process, and SIGTERM must still end it."""
    env, conf = env_with("device_count = 1\nhang.nvmlDeviceGetTemperature = 60000\n")
    try:
        d = tempfile.mkdtemp(prefix="gpuvet-textfile-")
        for argv in (["watch", "--once"], ["watch", "--count", "5", "--interval", "0.2"],
                     ["serve", "--listen", "127.0.0.1:0", "--interval", "0.2"],
                     ["serve", "--textfile", d, "--interval", "0.2"]):
            p = subprocess.Popen([GPUVET] + argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(1.0)  # wherever it is by then: in the first contact or in the stuck query
            p.send_signal(signal.SIGTERM)
            try:
                p.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise gvtest.Fail("%s: still running 10 s after SIGTERM, in a blocked NVML call" % argv)
            if argv[0] == "watch":  # serve's SIGTERM is its normal stop: 0
                check(p.returncode != 0, "%s: exit 0 after an interrupted sample" % argv)
        shutil.rmtree(d, ignore_errors=True)
    finally:
        os.unlink(conf)


def test_bench_survives_a_crashing_libcuda():
    """bench loads libcuda in its own process (it times GPU work), but meets it in a child first:
    a libcuda that dies of SIGBUS while loading is a line of bench's report, not bench's death."""
    fake_cuda = os.path.join(os.path.dirname(FAKE), "libfake_cuda.so")
    env, conf = env_with("device_count = 1\nconstructor.cuda = crash %d\n" % signal.SIGBUS,
                         {"GPUVET_CUDA_LIB": fake_cuda})
    try:
        r = subprocess.run([GPUVET, "bench", "--quick", "--json"], env=env, capture_output=True, timeout=170)
        check(r.returncode >= 0 and r.returncode != 135, "bench died: exit %d" % r.returncode)
        doc = json.loads(r.stdout)
        text = json.dumps(doc.get("findings", []))
        check("SIGBUS" in text and "libcuda.so.1" in text, "bench findings: %.500s" % text)
    finally:
        os.unlink(conf)


def test_constructor_exit_is_not_success():
    env, conf = env_with("device_count = 1\nconstructor.nvml = exit 0\n")
    try:
        r = subprocess.run([GPUVET, "check", "--fast", "--json"], env=env, capture_output=True, timeout=60)
        check(r.returncode == 1, "check exit %d, expected 1: %s" % (r.returncode, r.stderr.decode()))
        doc = json.loads(r.stdout)
        ids = [x["id"] for x in doc["findings"]]
        check("driver.library-exited" in ids, "findings: %s" % ids)
        r = subprocess.run([GPUVET, "watch", "--once", "--json"], env=env, capture_output=True, timeout=60)
        check(r.returncode == 1, "watch exit %d, expected 1" % r.returncode)
        check("exit status 0" in json.loads(r.stdout).get("error", ""), "watch error: %s" % r.stdout.decode())
    finally:
        os.unlink(conf)


def test_printing_library_keeps_json_clean():
    env, conf = env_with("device_count = 1\nconstructor.nvml = print You are running using the stub version of cublasLt\n")
    try:
        for argv in (["check", "--fast", "--json"], ["watch", "--once", "--json"]):
            r = subprocess.run([GPUVET] + argv, env=env, capture_output=True, timeout=60)
            out = r.stdout.decode()
            try:  # the raw line "You are running ..." anywhere in stdout makes this fail
                json.loads(out)
            except ValueError as e:
                raise gvtest.Fail("%s: stdout is not one JSON document (%s): %.300s" % (argv, e, out))
    finally:
        os.unlink(conf)


def test_truncated_library_is_diagnosed():
    trunc = os.path.join(os.path.dirname(FAKE), "libfake_nvml_truncated.so.1")
    if not os.path.exists(trunc):
        print("  the truncated fake was not built")
        return gvtest.SKIP
    env, conf = env_with("device_count = 1\n", {"GPUVET_NVML_LIB": trunc})
    try:
        r = subprocess.run([GPUVET, "watch", "--once"], env=env, capture_output=True, timeout=60)
        check(r.returncode == 1, "watch exit %d (135 is SIGBUS in gpuvet itself)" % r.returncode)
        check("SIGBUS" in r.stderr.decode(), "watch stderr: %s" % r.stderr.decode())
    finally:
        os.unlink(conf)


try:
    gvtest.run([test_signals_end_every_command, test_stuck_sample_does_not_hold_watch, test_bench_survives_a_crashing_libcuda,
                test_constructor_exit_is_not_success,
                test_printing_library_keeps_json_clean, test_truncated_library_is_diagnosed])
finally:
    shutil.rmtree(ROOT, ignore_errors=True)
