"""gpuvet run over a job that fails, following it with the fake NVML: the job follower (a
thread of gpuvet run) initialises NVML in gpuvet's own process while the job runs; the check
that explains the failure then probes NVML in a forked child. NVML's state does not survive fork
(the fake behaves as the real library does: tests/fake/README.md), so a child that took the
parent's initialisation for its own read NVML_ERROR_UNINITIALIZED: on a healthy H200 every
failing job was explained with `FAIL driver.nvml-failed` ("nvmlDeviceGetCount:
NVML_ERROR_UNINITIALIZED") and gpu.memory-held "not decided: nvml.device_count was not
collected".

The machine is this one (no --root: the follower reads the job's processes from the live /proc),
with the fake NVML's two H200s: the explanation's check must see them.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()


def main():
    env, cfg = gvtest.fake_env(FAKE, "device_count = 2\ngpu.*.name = NVIDIA H200\n")
    env["GPUVET_CUDA_LIB"] = os.path.join(os.path.dirname(FAKE), "libfake_cuda.so")
    # a job that runs long enough to be followed (samples every 0.2 s), then fails
    job = "echo step 0; sleep 1.5; echo 'RuntimeError: the loss is nan' >&2; exit 1"
    failures = 0
    for what, extra in (("followed", []), ("not followed (--no-watch)", ["--no-watch"])):
        r = subprocess.run([GPUVET, "run", "--fast", "--no-preflight", "--interval", "0.2"] + extra +
                           ["--", "sh", "-c", job], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=120)
        err = r.stderr.decode(errors="replace")
        try:
            check(r.returncode == 1, "exit %d, not the job's 1: %s" % (r.returncode, err))
            check("gpuvet run: sh exited with status 1" in err, "no word of the job's failure: %s" % err)
            check("running gpuvet check" in err, "the failure was not explained by a check: %s" % err)
            for bad in ("NVML_ERROR_UNINITIALIZED", "driver.nvml-failed", "nvml.device_count was not collected"):
                check(bad not in err, "the explanation's check says %r on a healthy NVML:\n%s" % (bad, err))
            check("2 x NVIDIA H200" in err, "the explanation's check does not see the two GPUs:\n%s" % err)
            print("ok   a failing job, %s" % what)
        except gvtest.Fail as e:
            failures += 1
            print("FAIL a failing job, %s: %s" % (what, e))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
