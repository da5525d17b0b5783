"""gpuvet run on a machine whose driver hangs (the fake NVML's nvmlInit and the fake libcuda's
cuInit sleep a minute; GPUVET_DRIVER_TIMEOUT=5 bounds each driver call at 5 s). The pre-flight
used to run before the command and hold its start for the whole NVML deadline, though the help
says it never blocks; and once the command had failed, the explanation's check waited for the
driver again (NVML and cuInit, 60 s by default) before gpuvet returned.

- the command starts at once: it writes the time it started, which must come well before the
  pre-flight's 5 s could have ended;
- a command that outlives the pre-flight: the pre-flight found the driver hung (it says so, beside
  the command), so the explanation does not wait for it again: gpuvet returns well within the 5 s
  the driver would take, and the explanation still names the hang;
- a command that fails before the pre-flight has ended, with --explain-timeout 2: everything
  gpuvet does after the command (waiting for the pre-flight, the explanation) ends within that one
  deadline (a generous margin for a loaded machine), and says what the deadline left out;
- no process of gpuvet's (the pre-flight's children, hung in nvmlInit) is left behind.

The machine is a scenario's tree (136-driver-hangs: a driver loaded, one GPU) read through
--root. Bounds of behaviour, not performance: each is far from what the old code took."""
import os
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check, marked  # noqa: E402

GPUVET, FAKE = gvtest.args()
DRIVER_TIMEOUT = 5
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "136-driver-hangs", "root")


def run(env, extra, job):
    d = gvtest.tmpdir()
    start, end = os.path.join(d, "start-%s" % uuid.uuid4().hex), os.path.join(d, "end-%s" % uuid.uuid4().hex)
    mark = "gpuvet-test-hung-%s" % uuid.uuid4().hex
    env = dict(env, GVTEST_MARK=mark)
    script = 'date +%%s.%%N > "$0"; %s; date +%%s.%%N > "$1"; exit 1' % job
    t0 = time.time()
    r = subprocess.run([GPUVET, "--root", ROOT, "run", "--no-python", "--interval", "0.2"] + extra +
                       ["--", "sh", "-c", script, start, end], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=180)
    t1 = time.time()
    err = r.stderr.decode(errors="replace")
    check(r.returncode == 1, "exit %d, not the command's 1: %s" % (r.returncode, err))
    with open(start) as f:
        started = float(f.read())
    with open(end) as f:
        ended = float(f.read())
    stray = []
    for _ in range(40):
        stray = marked(mark.encode())
        if not stray:
            break
        time.sleep(0.05)
    check(not stray, "processes of gpuvet's left behind: %s" % stray)
    return started - t0, t1 - ended, err


def main():
    env, _ = gvtest.fake_env(FAKE, "device_count = 1\nhang.nvmlInit = 60000\nhang.cuInit = 60000\n",
                             {"GPUVET_DRIVER_TIMEOUT": str(DRIVER_TIMEOUT)})
    env["GPUVET_CUDA_LIB"] = os.path.join(os.path.dirname(FAKE), "libfake_cuda.so")
    failures = 0

    what = "a command that outlives the pre-flight"
    try:
        latency, after, err = run(env, [], "sleep %d" % (DRIVER_TIMEOUT + 2))
        check(latency < DRIVER_TIMEOUT / 2, "the command started %.1f s after gpuvet: the pre-flight held it" % latency)
        check("gpuvet run: pre-flight: FAIL" in err and "[driver.init-failed]" in err,
              "the pre-flight did not say the driver hangs: %s" % err)
        check(err.index("pre-flight: FAIL") < err.index("sh exited with status 1"),
              "the pre-flight's findings came after the command's end: %s" % err)
        check(err.count("[driver.init-failed]") >= 2 and "the driver hangs" in err.split("sh exited with status 1")[1],
              "the explanation does not name the hung driver: %s" % err)
        check(after < DRIVER_TIMEOUT - 2,
              "gpuvet took %.1f s after the command: it waited for the hung driver again" % after)
        print("ok   %s: started after %.2f s, gpuvet ended %.2f s after it" % (what, latency, after))
    except gvtest.Fail as e:
        failures += 1
        print("FAIL %s: %s" % (what, e))

    what = "a command that ends before the pre-flight, --explain-timeout 2"
    try:
        latency, after, err = run(env, ["--explain-timeout", "2"], "sleep 0.3")
        check(latency < DRIVER_TIMEOUT / 2, "the command started %.1f s after gpuvet: the pre-flight held it" % latency)
        check(after < 2 + 2, "gpuvet took %.1f s after the command, past its one deadline of 2 s" % after)
        check("--explain-timeout (2 s) is spent" in err, "no word of what the deadline left out: %s" % err)
        check("gpuvet run: pre-flight: the quick check did not answer" in err,
              "no word of the pre-flight cut short: %s" % err)
        print("ok   %s: started after %.2f s, gpuvet ended %.2f s after it" % (what, latency, after))
    except gvtest.Fail as e:
        failures += 1
        print("FAIL %s: %s" % (what, e))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
