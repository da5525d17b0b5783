"""Tests of data/probe_torch.py, gpuvet's live PyTorch probe. They run with a plain python3 and
no torch: fake torch packages on PYTHONPATH stand in for the broken installs the probe must
describe. Run: python3 -m unittest discover -s tests/python
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(os.environ.get("GPUVET_SOURCE_DIR", os.path.join(HERE, "..", "..")), "data",
                      "probe_torch.py")
MARKER = "GPUVET-PROBE-JSON:"


def run_probe(pythonpath=None, timeout=60, extra_env=None):
    """Runs the probe the way gpuvet does: python -I -c SOURCE."""
    with open(SOURCE) as fh:
        code = fh.read()
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env.update(extra_env or {})
    proc = subprocess.run([sys.executable, "-I", "-c", code], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=env, timeout=timeout, check=False)
    out = proc.stdout.decode("utf-8", "replace")
    lines = [l for l in out.splitlines() if l.startswith(MARKER)]
    return proc.returncode, lines, proc.stderr.decode("utf-8", "replace")


def fake_torch(tmp, init_source, version_source=None):
    pkg = os.path.join(tmp, "torch")
    os.makedirs(pkg)
    with open(os.path.join(pkg, "__init__.py"), "w") as fh:
        fh.write(textwrap.dedent(init_source))
    if version_source is not None:
        with open(os.path.join(pkg, "version.py"), "w") as fh:
            fh.write(textwrap.dedent(version_source))
    return tmp


class ProbeTorchTest(unittest.TestCase):
    def answer(self, pythonpath=None, extra_env=None):
        rc, lines, err = run_probe(pythonpath, extra_env=extra_env)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(lines), 1, "exactly one result line")
        doc = json.loads(lines[0][len(MARKER):])
        self.assertEqual(doc["schema"], "gpuvet.probe_torch/1")
        return doc

    def test_plain_python(self):
        doc = self.answer()
        self.assertIn("python", doc)
        self.assertIsInstance(doc["maps"], list)
        torch = doc["torch"]
        if not torch.get("installed"):
            # no torch here: said plainly, not as an error
            self.assertIsNone(torch.get("error"))
        else:  # a machine with torch (the GPU machine)
            self.assertIn("version", torch)

    # The driver warm-up beside the import (DriverWarmup): only where torch is there, reported,
    # and never in the way of the report. The fake libcuda (tests/fake) stands in for the driver.
    FAKE_CUDA = os.environ.get("GPUVET_FAKE_CUDA")
    MINIMAL_TORCH = """
        class _Cuda:
            def is_available(self):
                return False
            def device_count(self):
                return 0
            def get_arch_list(self):
                return []
        cuda = _Cuda()
    """

    def warm_env(self, tmp, config=""):
        libdir = os.path.join(tmp, "lib")
        os.makedirs(libdir)
        os.symlink(self.FAKE_CUDA, os.path.join(libdir, "libcuda.so.1"))
        cfg = os.path.join(tmp, "fake.conf")
        with open(cfg, "w") as fh:
            fh.write(config)
        return {"LD_LIBRARY_PATH": libdir, "GPUVET_FAKE_CONFIG": cfg}

    def test_warmup_opens_the_primary_context(self):
        if not self.FAKE_CUDA:
            self.skipTest("GPUVET_FAKE_CUDA not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, self.MINIMAL_TORCH)
            doc = self.answer(tmp, self.warm_env(tmp))
        self.assertEqual(doc["warm"], "ok")
        self.assertGreaterEqual(doc["seconds"]["warm"], 0)

    def test_warmup_reports_the_drivers_error(self):
        if not self.FAKE_CUDA:
            self.skipTest("GPUVET_FAKE_CUDA not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, self.MINIMAL_TORCH)
            doc = self.answer(tmp, self.warm_env(tmp, "cuda.init = 999\n"))
        self.assertEqual(doc["warm"], "CUDA error 999")
        self.assertFalse(doc["cuda"]["available"])

    def test_warmup_without_a_driver_library(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, self.MINIMAL_TORCH)
            doc = self.answer(tmp, {"LD_LIBRARY_PATH": os.path.join(tmp, "nothing")})
        if doc["warm"] != "ok":  # a machine with a driver loads the real one
            self.assertIn("libcuda.so.1", doc["warm"])

    def test_no_warmup_for_a_cpu_only_torch(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, self.MINIMAL_TORCH, """
                __version__ = "2.11.0+cpu"
                cuda: Optional[str] = None
            """.replace("Optional[str]", "object"))
            doc = self.answer(tmp, self.warm_env(tmp) if self.FAKE_CUDA else None)
        self.assertNotIn("warm", doc)

    def test_no_warmup_without_torch(self):
        with tempfile.TemporaryDirectory() as tmp:
            doc = self.answer(tmp)
        if not doc["torch"].get("installed"):
            self.assertNotIn("warm", doc)
            self.assertNotIn("warm", doc["seconds"])

    def test_import_error_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, """
                raise OSError("libcudnn.so.9: cannot open shared object file: No such file or directory")
            """)
            doc = self.answer(tmp)
        self.assertTrue(doc["torch"]["installed"])
        self.assertIn("libcudnn.so.9", doc["torch"]["import_error"])

    def test_cuda_unavailable_with_warning(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, """
                import warnings
                __version__ = "2.5.1+cu124"
                from . import version
                class _Cuda:
                    def is_available(self):
                        warnings.warn("CUDA initialization: The NVIDIA driver on your system is too old "
                                      "(found version 11040).")
                        return False
                    def device_count(self):
                        return 0
                    def get_arch_list(self):
                        return []
                    class nccl:
                        @staticmethod
                        def version():
                            return (2, 21, 5)
                cuda = _Cuda()
                class _Cudnn:
                    enabled = True
                    def is_available(self):
                        return True
                    def version(self):
                        return 90100
                class backends:
                    cudnn = _Cudnn()
            """, """
                __version__ = "2.5.1+cu124"
                cuda = "12.4"
                hip = None
                git_version = "abc"
            """)
            doc = self.answer(tmp)
        self.assertEqual(doc["torch"]["version"], "2.5.1+cu124")
        self.assertEqual(doc["torch"]["cuda"], "12.4")
        self.assertFalse(doc["cuda"]["available"])
        self.assertIn("too old", doc["cuda"]["warnings"][0])
        self.assertEqual(doc["cudnn"]["version"], 90100)
        self.assertEqual(doc["nccl"], "2.21.5")
        self.assertNotIn("smoke", doc)

    def test_raising_is_available(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, """
                __version__ = "2.0.0"
                class _Cuda:
                    def is_available(self):
                        raise RuntimeError("boom")
                cuda = _Cuda()
            """)
            doc = self.answer(tmp)
        self.assertFalse(doc["cuda"]["available"])
        self.assertIn("RuntimeError: boom", doc["cuda"]["error"])

    def test_exit_inside_import_still_answers(self):
        with tempfile.TemporaryDirectory() as tmp:
            fake_torch(tmp, "import sys\nsys.exit(3)\n")
            doc = self.answer(tmp)
        self.assertIn("SystemExit", doc["torch"]["import_error"])


class HelpersTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        spec = importlib.util.spec_from_file_location("probe_torch", SOURCE)
        cls.mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.mod)

    def test_nan_never_reaches_json(self):
        tree = {"a": float("nan"), "b": [float("inf"), 1.5], "c": {"d": -float("inf")}}
        clean = self.mod._strip_nan(tree)
        text = json.dumps(clean, allow_nan=False)
        self.assertIn('"nan"', text)
        self.assertFalse(self.mod._finite_tree(tree))

    def test_clip(self):
        self.assertEqual(len(self.mod.clip("x" * 5000)), self.mod.MAX_TEXT + 3)

    def test_mapped_libraries_are_filtered(self):
        libs, err = self.mod.mapped_libraries()
        self.assertIsNone(err)
        for lib in libs:
            self.assertTrue(os.path.basename(lib["path"]).startswith(self.mod.LIB_PREFIXES))


if __name__ == "__main__":
    unittest.main()
