"""GPU test of `gpuvet tune` (CTest label gpu): on a machine with an NVIDIA GPU and a PyTorch
that can use it, a short run (the MLP, every GPU setting) must measure GPU steps, see the GPU's
utilization through NVML, and give a consistent report. Exits 77 (skipped) without a GPU or
without such a PyTorch: never a pass that measured nothing.
Run: python3 tests/python/tune_gpu.py PATH/TO/gpuvet [PYTHON]"""
import json
import os
import shutil
import subprocess
import sys

gpuvet = sys.argv[1]
python = sys.argv[2] if len(sys.argv) > 2 else (shutil.which("python3") or sys.executable)
smi = shutil.which("nvidia-smi")
if not smi or subprocess.run([smi, "-L"], capture_output=True).returncode != 0:
    print("no NVIDIA GPU here: skipped")
    sys.exit(77)
probe = subprocess.run([python, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
                       capture_output=True)
if probe.returncode != 0:
    print("%s has no PyTorch that can use the GPU: skipped" % python)
    sys.exit(77)
env = dict(os.environ, GPUVET_NO_HISTORY="1", NCCL_NVLS_ENABLE="0")
r = subprocess.run([gpuvet, "tune", "--python", python, "--models", "mlp", "--no-cpu", "--no-pipeline", "--no-ddp",
                    "--budget", "90", "--json"], capture_output=True, text=True, timeout=200, env=env)
bad = []
try:
    d = json.loads(r.stdout)
except ValueError:
    print("not JSON:", r.stdout[:2000], r.stderr[-2000:])
    sys.exit(1)
runs = d["models"][0]["runs"] if d["models"] else []
ok = [x for x in runs if x["status"] == "ok" and x["device"] == "cuda"]
if d["status"] != "ok":
    bad.append("status %s: %s" % (d["status"], d["message"]))
if len(ok) < 5:
    bad.append("only %d GPU runs finished: %s" % (len(ok), [(x["setting"], x["status"], x["reason"]) for x in runs]))
if any(not (x["ms"] and x["ms"] > 0 and x["peak_mib"] and x["peak_mib"] > 0) for x in ok):
    bad.append("a GPU run without its time or peak memory")
if not d.get("gpu_conditions"):
    bad.append("no NVML samples during the timed steps")
if not any(x.get("gpu_util") is not None for x in ok):
    bad.append("no GPU utilization for any run")
print(json.dumps({"status": d["status"], "runs": [(x["setting"], x["ms"], x["peak_mib"], x.get("gpu_util")) for x in ok],
                  "conditions": d.get("gpu_conditions")}, indent=1))
print("\n".join(bad) if bad else "OK")
sys.exit(1 if bad else 0)
