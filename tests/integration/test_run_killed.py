"""gpuvet run killed outright (SIGKILL: the OOM killer, a scheduler, kill -9; no handler of its
runs) must take its command along: the command used to go on running with PPID 1, holding the
GPUs of a job nobody watches any more. The command gets SIGTERM when gpuvet dies
(PR_SET_PDEATHSIG): it must be gone within a few seconds, and so must the pre-flight's children.
The processes are found by a variable of this test's environment, which they all inherit."""
import os
import signal
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check, marked, pid_alive as alive  # noqa: E402

GPUVET, FAKE = gvtest.args()


def wait_gone(pids, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        left = [p for p in pids if alive(p)]
        if not left:
            return []
        time.sleep(0.05)
    return [p for p in pids if alive(p)]


def one(env, pre, extra, what):
    mark = "gpuvet-test-killed-%s" % uuid.uuid4().hex
    env = dict(env, GVTEST_MARK=mark)
    pidfile = os.path.join(gvtest.tmpdir(), "pid-%s" % uuid.uuid4().hex)
    g = subprocess.Popen([GPUVET] + pre + ["run"] + extra + ["--", "sh", "-c", 'echo $$ > "$0"; exec sleep 1000', pidfile],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    child = None
    try:
        deadline = time.time() + 30
        while time.time() < deadline and child is None:
            try:
                with open(pidfile) as f:
                    child = int(f.read().strip() or 0) or None
            except (OSError, ValueError):
                pass
            time.sleep(0.02)
        check(child is not None, "the command did not start")
        time.sleep(0.3)  # past exec: the command is sleep now
        check(alive(child), "the command is not running before the kill")
        if pre:  # the pre-flight's child and its NVML child, hung in nvmlInit, besides gpuvet and the command
            n = len(marked(mark.encode()))
            check(n > 2, "only %d processes of gpuvet's before the kill: no pre-flight children" % n)
        g.send_signal(signal.SIGKILL)
        g.wait(10)
        left = wait_gone([child], 10)
        check(not left, "%s: the command (pid %d) still runs 10 s after gpuvet was killed" % (what, child))
        stray = wait_gone(marked(mark.encode()), 10)
        check(not stray, "%s: processes of gpuvet's still run after it was killed: %s" % (what, stray))
    finally:
        for p in [child] + marked(mark.encode()):
            if p and alive(p):
                os.kill(p, signal.SIGKILL)
        if g.poll() is None:
            g.kill()
            g.wait()


def main():
    env, _ = gvtest.fake_env(FAKE, "device_count = 1\nhang.nvmlInit = 60000\n")
    failures = 0
    # a machine with the driver loaded (a scenario's tree), where the pre-flight calls nvmlInit
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "136-driver-hangs", "root")
    for what, pre, extra in (("no pre-flight", [], ["--no-preflight", "--no-watch"]),
                             ("the pre-flight hung in nvmlInit, the follower on", ["--root", root], ["--interval", "0.2"])):
        try:
            one(env, pre, extra, what)
            print("ok   %s: the command is gone with gpuvet" % what)
        except gvtest.Fail as e:
            failures += 1
            print("FAIL %s" % e)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
