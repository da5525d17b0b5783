"""The GPU code paths of data/tune_torch.py run for real, on the CPU: a stand-in for the GPU
(tune_torch.Cuda) maps the device to the CPU and DDP to gloo, so every step of a full run
(precision settings, channels_last, cudnn.benchmark, the reference settings, the DataLoader
test, a 2-rank DDP step, the CPU steps) executes with tiny shapes. It needs torch (and exits 77,
CTest's skip, without it); run it with the interpreter that has torch:
    python3 tests/python/torch_standin.py
This checks that the code runs and the document is whole, not the figures (no GPU here).
BERT-base on a CPU takes seconds a step, so it is in the run only with --full."""

import importlib.util
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "data", "tune_torch.py")

try:
    import torch  # noqa: F401
except Exception:
    print("torch is not importable by %s: skipped" % sys.executable)
    sys.exit(77)

spec = importlib.util.spec_from_file_location("tune_torch", SCRIPT)
tt = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tt)


class CpuAsGpu(tt.Cuda):
    ddp_backend = "gloo"

    def available(self):
        return True

    def count(self):
        return 2

    def properties(self, i):
        return {"name": "Stand-in GPU", "major": 9, "minor": 0, "total_memory": 80 << 30,
                "uuid": "00000000-0000-0000-0000-00000000000%d" % i}

    def device(self, i=0):
        return self.torch.device("cpu")

    def sync(self):
        pass

    def reset_peak(self):
        pass

    def peak_mib(self):
        return None

    def empty_cache(self):
        pass


def fail(msg, doc):
    print("FAIL:", msg)
    print(json.dumps(doc, indent=1)[:4000])
    sys.exit(1)


def main():
    # the DDP ranks are separate processes running the script file: they get the stand-in
    # through the spec (device_type cpu, backend gloo)
    models = ["resnet50", "bert", "mlp"] if "--full" in sys.argv[1:] else ["resnet50", "mlp"]
    args = tt.parse_args(["--models", ",".join(models), "--batch", "2", "--image-size", "16", "--seq-len", "8",
                          "--iters", "2", "--warmup", "1", "--cpu-iters", "1", "--workers", "0,1", "--compile",
                          "--budget", "120"])
    tt.PIPELINE_MAX_BATCHES = 2
    tt.DDP_MIN_SECONDS = 5
    err = io.StringIO()
    r = tt.Runner(args, tt.Channel(err), gpu=CpuAsGpu)
    doc = r.run()
    doc = json.loads(tt.dumps(doc))
    lines = err.getvalue().splitlines()
    if doc["status"] != "ok":
        fail("status %s: %s" % (doc["status"], doc["message"]), doc)
    runs = {(x["model"], x["device"], x["setting"]): x for x in doc["runs"]}
    for m in models:
        for s in ("fp32", "tf32", "amp_fp16", "amp_bf16", "ref_fp32", "ref_amp_fp16"):
            x = runs.get((m, "cuda", s))
            if not x or x["status"] != "ok" or not x["ms"] > 0:
                fail("run %s %s: %s" % (m, s, x), doc)
        if runs[(m, "cpu", "fp32")]["status"] != "ok":
            fail("cpu run of %s" % m, doc)
    for s in ("channels_last", "cudnn_benchmark"):
        x = runs[("resnet50", "cuda", s)]
        if x["status"] != "ok" or not x["base"] or not x["config"][s]:
            fail("chained setting %s: %s" % (s, x), doc)
    comp = runs[("resnet50", "cuda", "compile")]
    if hasattr(torch, "compile") != (comp["status"] == "ok"):
        fail("compile: %s" % comp, doc)
    if len(doc["pipeline"]) != 4 or any(p["status"] != "ok" or not p["samples_s"] for p in doc["pipeline"]):
        fail("pipeline", doc)
    if not doc["pipeline"][0].get("gpu_samples_s"):
        fail("pipeline ceiling", doc)
    d = doc["ddp"]
    if not d or d["status"] != "ok" or len(d["ranks"]) != 2 or not d["ddp_ms"] > 0 or not d["efficiency"] > 0:
        fail("ddp: %s" % d, doc)
    progress = [ln for ln in lines if ln.startswith("PROGRESS ")]
    if len(progress) != len(r.steps) or not progress[-1].startswith("PROGRESS %d/%d" % (len(r.steps), len(r.steps))):
        fail("progress lines %d for %d steps" % (len(progress), len(r.steps)), doc)
    begins = [ln for ln in lines if ln.startswith("MARK begin")]
    ends = [ln for ln in lines if ln.startswith("MARK end")]
    if len(begins) != len(ends) or not begins:
        fail("marks", doc)
    results = [json.loads(ln[7:]) for ln in lines if ln.startswith("RESULT ")]
    if sum(1 for x in results if x["type"] == "run") != len(doc["runs"]):
        fail("RESULT lines", doc)
    # the C side reads this document as the probe wrote it (GPUVET_BIN: set by CTest)
    gv = os.environ.get("GPUVET_BIN")
    if gv:
        import subprocess
        import tempfile
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write(tt.dumps(doc))
            f.flush()
            out = subprocess.run([gv, "tune", "--from", f.name, "--json"], capture_output=True, text=True, timeout=60)
        rep = json.loads(out.stdout)
        if out.returncode != 0 or rep["status"] != "ok" or len(rep["models"]) != len(models):
            fail("gpuvet tune --from: exit %d %s" % (out.returncode, out.stderr), rep)
        if rep["ddp"]["status"] != "ok" or len(rep["pipeline"]["configs"]) != 4:
            fail("gpuvet tune --from: ddp/pipeline", rep)
    print("ok: %d runs, %d pipeline configurations, ddp %.1f ms over %d ranks in %.1f s" % (
        len(doc["runs"]), len(doc["pipeline"]), d["ddp_ms"], len(d["ranks"]), doc.get("elapsed_s") or 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
