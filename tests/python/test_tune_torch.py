"""Tests of data/tune_torch.py (the `gpuvet tune` probe) under a plain python3 without torch:
torch made absent, argument parsing, the JSON document's shape, the budget logic, the plan and
the stderr protocol. Run: python3 -m unittest discover -s tests/python (CTest does)."""

import importlib.util
import io
import json
import os
import subprocess
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "data", "tune_torch.py")


def load():
    spec = importlib.util.spec_from_file_location("tune_torch", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


tt = load()


class FakeClock:
    def __init__(self, t=100.0):
        self.t = t

    def __call__(self):
        return self.t

    def advance(self, s):
        self.t += s


def quiet_parse(argv):
    """parse_args with argparse's error text kept off the test output; returns the exit code on error."""
    old = sys.stderr
    sys.stderr = io.StringIO()
    try:
        return tt.parse_args(argv)
    except SystemExit as ex:
        return ex.code
    finally:
        sys.stderr = old


class TorchAbsent(unittest.TestCase):
    def setUp(self):
        self.saved = sys.modules.get("torch", "unset")
        sys.modules["torch"] = None  # `import torch` now raises ImportError

    def tearDown(self):
        if self.saved == "unset":
            sys.modules.pop("torch", None)
        else:
            sys.modules["torch"] = self.saved

    def test_no_torch_document(self):
        out, err = io.StringIO(), io.StringIO()
        rc = tt.main(["--budget", "10"], stdout=out, channel=tt.Channel(err))
        self.assertEqual(rc, 0)
        doc = json.loads(out.getvalue())
        self.assertEqual(doc["schema"], "gpuvet.tune-probe/1")
        self.assertEqual(doc["status"], "no-torch")
        self.assertIn("cannot import torch", doc["message"])
        self.assertIn(sys.executable, doc["message"])
        self.assertEqual(doc["runs"], [])
        self.assertIsNone(doc["ddp"])
        for key in ("env", "config", "notes", "models", "runs", "pipeline", "skipped", "elapsed_s"):
            self.assertIn(key, doc)
        self.assertEqual(doc["config"]["budget_s"], 10.0)

    def test_library_check_without_torch(self):
        sys.modules["torchvision"] = None
        try:
            self.assertFalse(tt.library_available("torchvision"))
        finally:
            sys.modules.pop("torchvision", None)


class Arguments(unittest.TestCase):
    def test_defaults(self):
        a = quiet_parse([])
        self.assertEqual(a.models, ["resnet50", "bert", "mlp"])
        self.assertEqual(a.batch, {"resnet50": 64, "bert": 32, "mlp": 256})
        self.assertEqual((a.image_size, a.seq_len, a.budget), (224, 128, 300.0))
        self.assertNotIn("compile", a.settings)
        self.assertEqual((a.warmup, a.iters, a.cpu_warmup, a.cpu_iters), (3, 10, 1, 2))

    def test_batch_forms(self):
        self.assertEqual(quiet_parse(["--batch", "8"]).batch, {"resnet50": 8, "bert": 8, "mlp": 8})
        a = quiet_parse(["--batch", "resnet50=16,bert=4"])
        self.assertEqual(a.batch, {"resnet50": 16, "bert": 4, "mlp": 256})

    def test_compile_adds_setting(self):
        a = quiet_parse(["--compile"])
        self.assertIn("compile", a.settings)
        a = quiet_parse(["--settings", "fp32,amp_bf16"])
        self.assertEqual(a.settings, ["fp32", "amp_bf16"])

    def test_models_dedup(self):
        self.assertEqual(quiet_parse(["--models", "bert,mlp,bert"]).models, ["bert", "mlp"])

    def test_rejects(self):
        for bad in (["--budget", "1"], ["--budget", "nan"], ["--budget", "x"], ["--models", "gpt2"],
                    ["--models", ""], ["--batch", "0"], ["--batch", "vgg=3"], ["--batch", "-4"],
                    ["--image-size", "0"], ["--workers", "a,b"], ["--workers", "-1"], ["--settings", "fp8"],
                    ["--impl", "other"], ["--unknown"]):
            self.assertEqual(quiet_parse(bad), 2, bad)

    def test_workers(self):
        self.assertEqual(quiet_parse(["--workers", "0,4,4,2"]).workers, [0, 4, 2])


class Json(unittest.TestCase):
    def test_non_finite_become_null(self):
        s = tt.dumps({"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": float("-inf")}})
        self.assertEqual(json.loads(s), {"a": None, "b": [None, 1.5], "c": {"d": None}})

    def test_empty_document_serializes(self):
        doc = tt.empty_document(quiet_parse([]))
        back = json.loads(tt.dumps(doc))
        self.assertEqual(back["schema"], tt.SCHEMA)
        self.assertEqual(back["config"]["batch"], {"resnet50": 64, "bert": 32, "mlp": 256})

    def test_dry_run_subprocess(self):
        # the script as gpuvet runs it: a file, its own interpreter, no torch needed
        r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--models", "mlp", "--no-ddp"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        doc = json.loads(r.stdout)
        self.assertEqual(doc["status"], "dry-run")
        kinds = [p["kind"] for p in doc["plan"]]
        self.assertEqual(kinds.count("cpu"), 1)
        self.assertNotIn("pipeline", kinds)  # needs resnet50
        self.assertNotIn("ddp", kinds)

    def test_setting_configs(self):
        self.assertFalse(tt.setting_config("fp32")["tf32_matmul"])
        self.assertTrue(tt.setting_config("tf32")["tf32_cudnn"])
        self.assertTrue(tt.setting_config("amp_fp16")["grad_scaler"])
        self.assertFalse(tt.setting_config("amp_bf16")["grad_scaler"])
        ref = tt.setting_config("ref_amp_fp16")
        # anchors/bench_models.py: PyTorch defaults, cudnn.benchmark, fp16 autocast without a scaler
        self.assertEqual((ref["precision"], ref["grad_scaler"], ref["cudnn_benchmark"], ref["tf32_cudnn"],
                          ref["tf32_matmul"]), ("fp16", False, True, True, False))


class BudgetLogic(unittest.TestCase):
    def test_fit_iters(self):
        self.assertEqual(tt.fit_iters(0.5, 10, 3.0), 6)
        self.assertEqual(tt.fit_iters(0.1, 10, 30.0), 10)
        self.assertEqual(tt.fit_iters(2.0, 10, 1.0), 0)
        self.assertEqual(tt.fit_iters(0.0, 10, 1.0), 10)
        self.assertEqual(tt.fit_iters(1.0, 10, 2.5, minimum=3), 0)

    def test_budget_check(self):
        clock = FakeClock()
        b = tt.Budget(10, clock)
        b.check(5)
        clock.advance(8.5)
        self.assertAlmostEqual(b.remaining(), 1.5)
        with self.assertRaises(tt.BudgetExceeded):
            b.check(1.0)
        self.assertAlmostEqual(b.elapsed(), 8.5)

    def test_time_iterations_full_and_reduced(self):
        clock = FakeClock()
        calls = []

        def step():
            calls.append(1)
            clock.advance(0.5)

        ts, first = tt.time_iterations(step, lambda: None, 3, 10, None, clock)
        self.assertEqual(len(ts), 10)
        self.assertEqual(len(calls), 13)
        self.assertAlmostEqual(first, 0.5)
        self.assertTrue(all(abs(t - 500.0) < 1e-6 for t in ts))
        # 4.2 s left after the warm-up step, less the reserve: 3.2 s fit 6 steps of 0.5 s
        b = tt.Budget(4.7, clock)
        ts, _ = tt.time_iterations(step, lambda: None, 1, 10, b, clock)
        self.assertEqual(len(ts), 6)

    def test_time_iterations_nothing_fits(self):
        clock = FakeClock()

        def step():
            clock.advance(3.0)

        b = tt.Budget(4.0, clock)
        with self.assertRaises(tt.BudgetExceeded):
            tt.time_iterations(step, lambda: None, 1, 2, b, clock)

    def test_alarm_interrupts_a_long_step(self):
        b = tt.Budget(tt.RESERVE_S + 0.2)
        b.arm()
        t0 = time.monotonic()
        try:
            with self.assertRaises(tt.BudgetExceeded):
                while time.monotonic() - t0 < 5:
                    sum(range(1000))
        finally:
            tt.Budget.disarm()
        self.assertLess(time.monotonic() - t0, 2)


class Plan(unittest.TestCase):
    def test_full_plan_two_gpus(self):
        a = quiet_parse(["--workers", "0,2"])
        steps = tt.plan_steps(a, True, 2)
        gpu = [s for s in steps if s[0] == "gpu"]
        # 8 settings for resnet50, 6 for bert and mlp (no channels_last / cudnn_benchmark)
        self.assertEqual(len(gpu), 8 + 6 + 6)
        self.assertNotIn(("gpu", "bert", "channels_last"), steps)
        self.assertIn(("gpu", "resnet50", "cudnn_benchmark"), steps)
        self.assertEqual([s for s in steps if s[0] == "cpu"], [("cpu", m, "fp32") for m in ("resnet50", "bert", "mlp")])
        pipes = [s for s in steps if s[0] == "pipeline"]
        self.assertEqual(len(pipes), 4)
        self.assertEqual([tt.pipeline_config(s[2]) for s in pipes], [(0, False), (0, True), (2, False), (2, True)])
        self.assertEqual(steps[-1], ("ddp", "resnet50", "ddp"))
        # precision settings first: channels_last builds on the best of them
        order = [s[2] for s in gpu if s[1] == "resnet50"]
        self.assertLess(order.index("amp_bf16"), order.index("channels_last"))
        self.assertLess(order.index("channels_last"), order.index("cudnn_benchmark"))

    def test_cpu_only_plan(self):
        a = quiet_parse([])
        steps = tt.plan_steps(a, False, 0)
        self.assertEqual({s[0] for s in steps}, {"cpu"})
        self.assertIn(("gpu", "no usable GPU"), tt.plan_skips(a, False, 0))

    def test_one_gpu_skips_ddp(self):
        a = quiet_parse(["--models", "mlp"])
        steps = tt.plan_steps(a, True, 1)
        self.assertNotIn("ddp", [s[0] for s in steps])
        whats = [w for w, _ in tt.plan_skips(a, True, 1)]
        self.assertIn("ddp", whats)
        self.assertIn("pipeline", whats)

    def test_options_trim_plan(self):
        a = quiet_parse(["--no-cpu", "--no-pipeline", "--no-ddp", "--models", "resnet50", "--compile"])
        steps = tt.plan_steps(a, True, 4)
        self.assertEqual({s[0] for s in steps}, {"gpu"})
        self.assertEqual(steps[-1], ("gpu", "resnet50", "compile"))

    def test_default_workers_capped(self):
        a = quiet_parse([])
        self.assertEqual(tt.worker_counts(a)[0], 0)
        self.assertTrue(all(w == 0 or w <= tt.cpu_count() for w in tt.worker_counts(a)))


class Uuid(unittest.TestCase):
    def test_forms(self):
        u = "ffc79498-8ff3-c2dc-3b0d-fafd804516ae"
        self.assertEqual(tt.nvml_uuid(u), "GPU-" + u)
        self.assertEqual(tt.nvml_uuid("GPU-" + u), "GPU-" + u)
        self.assertEqual(tt.nvml_uuid("MIG-" + u), "MIG-" + u)
        self.assertIsNone(tt.nvml_uuid("\x8f>\x01garbage"))
        self.assertIsNone(tt.nvml_uuid(""))
        self.assertIsNone(tt.nvml_uuid(None))


class Protocol(unittest.TestCase):
    def test_lines(self):
        buf = io.StringIO()
        ch = tt.Channel(buf)
        ch.progress(3, 17, "resnet50 amp_bf16\nsecond line")
        ch.mark("begin", 4)
        ch.result({"type": "run", "ms": float("nan"), "model": "mlp"})
        lines = buf.getvalue().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertEqual(lines[0], "PROGRESS 3/17 resnet50 amp_bf16 second line")
        self.assertEqual(lines[1], "MARK begin 4")
        self.assertTrue(lines[2].startswith("RESULT {"))
        self.assertEqual(json.loads(lines[2][len("RESULT "):]), {"type": "run", "ms": None, "model": "mlp"})


class Ddp(unittest.TestCase):
    def test_summary(self):
        rec = {"status": "ok", "batch_per_gpu": 64, "single_ms": 20.0,
               "ranks": [{"rank": 0, "ms": 21.0, "peak_mib": 3000.0}, {"rank": 1, "ms": 22.0, "peak_mib": 2900.0}]}
        tt.summarize_ddp(rec, 2)
        self.assertEqual(rec["ddp_ms"], 22.0)
        self.assertAlmostEqual(rec["efficiency"], 20.0 / 22.0)
        self.assertAlmostEqual(rec["memory_balance"], 2900.0 / 3000.0)
        self.assertAlmostEqual(rec["samples_s"], 2 * 64 * 1000.0 / 22.0)

    def test_rank_error(self):
        rec = {"status": "ok", "batch_per_gpu": 8, "ranks": [{"rank": 0, "ms": 5.0}, {"rank": 1, "error": "NCCL error"}]}
        tt.summarize_ddp(rec, 2)
        self.assertEqual(rec["status"], "error")
        self.assertIn("rank 1", rec["reason"])
        self.assertNotIn("ddp_ms", rec)

    def test_read_rank_garbage(self):
        import tempfile
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        out.write(b"not json\n{broken\n")
        err.write(b"Traceback\nRuntimeError: NCCL failure\n")
        r = tt.read_rank(1, out, err, 1)
        self.assertEqual(r["rank"], 1)
        self.assertIn("NCCL failure", r["error"])
        self.assertIn("exit 1", r["error"])


class DiesWithParent(unittest.TestCase):
    """A DDP rank's die_with_parent(): its parent killed by SIGKILL takes it along."""

    def test_grandchild_dies(self):
        import signal
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            pidfile = os.path.join(d, "pid")
            child = ("import importlib.util, os, sys, time\n"
                     "spec = importlib.util.spec_from_file_location('tune_torch', sys.argv[2])\n"
                     "m = importlib.util.module_from_spec(spec)\n"
                     "spec.loader.exec_module(m)\n"
                     "ok = m.die_with_parent()\n"
                     "open(sys.argv[1] + '.tmp', 'w').write('%d %d' % (os.getpid(), ok))\n"
                     "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
                     "time.sleep(60)\n")
            # the probe stand-in: starts the rank the way run_ddp does, then waits
            probe = ("import subprocess, sys, time\n"
                     "subprocess.Popen([sys.executable, '-c', %r, sys.argv[1], sys.argv[2]])\n"
                     "time.sleep(60)\n" % child)
            parent = subprocess.Popen([sys.executable, "-c", probe, pidfile, SCRIPT],
                                      env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
            deadline = time.time() + 20
            while not os.path.exists(pidfile) and time.time() < deadline:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(pidfile), "the rank stand-in did not start")
            with open(pidfile) as f:
                pid, ok = map(int, f.read().split())
            self.assertEqual(ok, 1, "prctl(PR_SET_PDEATHSIG) failed")
            parent.send_signal(signal.SIGKILL)
            parent.wait()
            deadline = time.time() + 10
            alive = True
            while alive and time.time() < deadline:
                try:
                    with open("/proc/%d/stat" % pid) as f:
                        alive = f.read().rsplit(")", 1)[1].split()[0] != "Z"
                except (FileNotFoundError, ProcessLookupError):
                    # gone between the open and the read: ESRCH from /proc, not ENOENT
                    alive = False
                time.sleep(0.05)
            if alive:
                os.kill(pid, signal.SIGKILL)
            self.assertFalse(alive, "the rank outlived its parent killed by SIGKILL")


if __name__ == "__main__":
    unittest.main()
