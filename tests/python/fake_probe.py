#!/usr/bin/env python3
"""A stand-in for the Python interpreter that `gpuvet tune --python` runs, for the end-to-end
test of Ctrl-C and of a probe that dies: it ignores the script it is given, speaks the probe's
stderr protocol, then waits. FAKE_PROBE=interrupt: on SIGINT it prints a document with what
"finished" (status interrupted); FAKE_PROBE=die: it is killed by SIGKILL after its RESULT lines
(no document). FAKE_PROBE_PIDFILE: write the stand-in's pid there first."""
import json
import os
import signal
import sys
import time

mode = os.environ.get("FAKE_PROBE", "interrupt")
if os.environ.get("FAKE_PROBE_PIDFILE"):
    with open(os.environ["FAKE_PROBE_PIDFILE"] + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(os.environ["FAKE_PROBE_PIDFILE"] + ".tmp", os.environ["FAKE_PROBE_PIDFILE"])
env = {"type": "env", "python": "3.0", "torch": "9.9", "gpu_name": "Fake GPU", "cuda_available": True, "gpu_count": 1}
run = {"type": "run", "id": 1, "model": "mlp", "device": "cuda", "setting": "fp32", "status": "ok", "ms": 2.0,
       "batch": 8, "peak_mib": 10.0, "config": {"precision": "fp32"}}
doc = {"schema": "gpuvet.tune-probe/1", "status": "interrupted", "message": "interrupted: the steps that finished are reported",
       "env": env, "models": [{"model": "mlp", "impl": "builtin", "batch": 8}], "runs": [run], "pipeline": [], "ddp": None,
       "notes": [], "skipped": []}


def stop(signum, frame):
    sys.stdout.write(json.dumps(doc) + "\n")
    sys.stdout.flush()
    sys.exit(0)


signal.signal(signal.SIGINT, stop)
sys.stderr.write("PROGRESS 1/2 mlp fp32\nRESULT %s\nRESULT %s\nPROGRESS 2/2 mlp tf32\n" % (json.dumps(env), json.dumps(run)))
sys.stderr.flush()
print("READY", file=sys.stderr, flush=True)
if mode == "die":
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(30)
