"""End-to-end tests of `gpuvet tune` without torch and without a GPU: the real probe script run
by an interpreter whose torch import fails; recorded probe documents (--from); usage errors; a
stand-in interpreter (fake_probe.py) stopped with Ctrl-C, and one killed before its document.
Run by CTest: python3 tests/python/tune_e2e.py PATH/TO/gpuvet"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "tune")
GPUVET = None


def gpuvet(*args, env_extra=None, timeout=60):
    env = dict(os.environ, GPUVET_NO_HISTORY="1", NO_COLOR="1")
    env.update(env_extra or {})
    return subprocess.run([GPUVET, *args], capture_output=True, text=True, timeout=timeout, env=env)


class NoTorch(unittest.TestCase):
    def test_text(self):
        r = gpuvet("tune", "--python", sys.executable, "--budget", "20",
                   env_extra={"PYTHONPATH": os.path.join(HERE, "hide_torch")})
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("no-torch: cannot import torch in " + sys.executable, r.stdout)
        self.assertIn("gpuvet fix", r.stdout)

    def test_json(self):
        r = gpuvet("tune", "--json", "--python", sys.executable, env_extra={"PYTHONPATH": os.path.join(HERE, "hide_torch")})
        self.assertEqual(r.returncode, 1)
        d = json.loads(r.stdout)
        self.assertEqual(d["schema"], "gpuvet.tune/1")
        self.assertEqual(d["status"], "no-torch")
        self.assertEqual(d["models"], [])

    def test_no_interpreter(self):
        r = gpuvet("tune", "--python", "/nonexistent/bin/python3")
        self.assertEqual(r.returncode, 1)
        self.assertIn("cannot run /nonexistent/bin/python3", r.stdout)


class FromFile(unittest.TestCase):
    def test_full(self):
        r = gpuvet("tune", "--from", os.path.join(FIXTURES, "h200-full.json"))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("2026-11-30  resnet50      64", r.stdout)
        self.assertIn("AMP bf16: 1.65x faster", r.stdout)

    def test_slow_exits_1(self):
        r = gpuvet("tune", "--from", os.path.join(FIXTURES, "h200-slow.json"), "--json")
        self.assertEqual(r.returncode, 1)
        d = json.loads(r.stdout)
        self.assertTrue(any(v["slow"] for v in d["verdicts"]))

    def test_stderr_capture(self):
        r = gpuvet("tune", "--from", os.path.join(FIXTURES, "h200-killed.stderr"), "--json")
        self.assertEqual(r.returncode, 0)
        d = json.loads(r.stdout)
        self.assertTrue(d["partial"])
        self.assertEqual(len(d["models"][0]["runs"]), 8)

    def test_not_a_probe_file(self):
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            f.write('{"hello": 1}')
            f.flush()
            r = gpuvet("tune", "--from", f.name)
        self.assertEqual(r.returncode, 2)
        self.assertIn("neither a tune probe document", r.stderr)

    def test_bench_torch_alias_usage(self):
        r = gpuvet("tune", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("gpuvet bench --torch", r.stdout)


class Usage(unittest.TestCase):
    def test_bad_options(self):
        for args in (["--models", "gpt2"], ["--budget", "1"], ["--batch", "vgg=3"], ["--batch", "0"],
                     ["--workers", "x"], ["--impl", "other"], ["--settings", "fp8"], ["--seq-len", "0"],
                     ["--nope"], ["extra"]):
            r = gpuvet("tune", *args)
            self.assertEqual(r.returncode, 2, args)
            self.assertTrue(r.stderr.startswith("gpuvet: "), args)


class Interrupt(unittest.TestCase):
    def test_ctrl_c_reports_what_finished(self):
        env = dict(os.environ, GPUVET_NO_HISTORY="1", NO_COLOR="1", FAKE_PROBE="interrupt")
        p = subprocess.Popen([GPUVET, "tune", "--python", os.path.join(HERE, "fake_probe.py"), "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        time.sleep(1.5)  # the stand-in starts and prints its lines
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 130, err)
        d = json.loads(out)
        self.assertEqual(d["status"], "interrupted")
        self.assertEqual(d["models"][0]["runs"][0]["ms"], 2.0)

    def test_killed_probe_keeps_its_lines(self):
        r = gpuvet("tune", "--python", os.path.join(HERE, "fake_probe.py"), "--json", env_extra={"FAKE_PROBE": "die"})
        d = json.loads(r.stdout)
        self.assertEqual(d["status"], "crashed")
        self.assertIn("killed by signal 9", d["message"])
        self.assertTrue(d["partial"])
        self.assertEqual(d["models"][0]["runs"][0]["setting"], "fp32")
        self.assertEqual(r.returncode, 0)  # a GPU step was measured before it died


def alive(pid):
    """True while pid runs (a zombie waiting for its reaper does not count)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_until(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class KilledBySigkill(unittest.TestCase):
    """gpuvet tune killed by SIGKILL: its probe dies with it, and the next run removes the
    temporary directory it left; a directory of a run still alive is left alone."""

    def start(self, tmp, pidfile):
        env = dict(os.environ, GPUVET_NO_HISTORY="1", NO_COLOR="1", FAKE_PROBE="interrupt", FAKE_PROBE_PIDFILE=pidfile,
                   TMPDIR=tmp)
        p = subprocess.Popen([GPUVET, "tune", "--python", os.path.join(HERE, "fake_probe.py"), "--json"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        self.assertTrue(wait_until(lambda: os.path.exists(pidfile), 20), "the stand-in probe did not start")
        with open(pidfile) as f:
            return p, int(f.read())

    def test_sigkill(self):
        with tempfile.TemporaryDirectory() as work:
            tmp = os.path.join(work, "tmp")
            os.mkdir(tmp)
            p, probe = self.start(tmp, os.path.join(work, "a.pid"))
            left = [d for d in os.listdir(tmp) if d.startswith("gpuvet-tune-")]
            self.assertEqual(len(left), 1, os.listdir(tmp))
            p.kill()
            p.wait()
            self.assertTrue(wait_until(lambda: not alive(probe), 10), "the probe outlived gpuvet tune killed by SIGKILL")
            self.assertEqual(os.listdir(tmp), left)  # nobody could clean up
            # a run alive meanwhile, then a run that starts and ends: the dead run's directory goes
            live, live_probe = self.start(tmp, os.path.join(work, "b.pid"))
            mine = [d for d in os.listdir(tmp) if d not in left]
            r = gpuvet("tune", "--python", os.path.join(HERE, "fake_probe.py"), "--json",
                       env_extra={"TMPDIR": tmp, "FAKE_PROBE": "die"})
            self.assertIn('"status"', r.stdout, r.stderr)
            self.assertEqual(sorted(os.listdir(tmp)), sorted(mine), "the dead run's directory was not removed, "
                             "or the live run's was")
            live.send_signal(signal.SIGINT)
            live.wait(30)
            self.assertFalse(alive(live_probe))
            self.assertEqual(os.listdir(tmp), [], "a finished run left its directory")


if __name__ == "__main__":
    GPUVET = sys.argv.pop(1)
    unittest.main()
