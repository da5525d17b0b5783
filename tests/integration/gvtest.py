"""Helpers for the integration tests: run the built gpuvet against the fake NVML, talk HTTP to
127.0.0.1 only, read a process's memory and CPU from /proc. Standard library only."""
import atexit
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import select
import time

SKIP = 77


class Fail(Exception):
    pass


def reachable_by_others(path):
    """Whether every directory above path lets other users through (o+x): uid 65534 cannot reach
    a test's TMPDIR under a checkout in root's 0700 home."""
    path = os.path.abspath(path)
    while True:
        try:
            if not os.stat(path).st_mode & 0o001:
                return False
        except OSError:
            return False
        parent = os.path.dirname(path)
        if parent == path:
            return True
        path = parent


def tmp_base_for_other_users():
    """The test's own TMPDIR when uid 65534 can reach it, else /tmp (the caller removes what it
    made there, so the suite still leaves nothing behind)."""
    base = tempfile.gettempdir()
    return base if reachable_by_others(base) else "/tmp"



def check(cond, what):
    if not cond:
        raise Fail(what)


def args():
    """argv: GPUVET FAKE_NVML_LIB"""
    if len(sys.argv) < 3:
        print("usage: %s GPUVET FAKE_NVML_LIB" % sys.argv[0], file=sys.stderr)
        sys.exit(2)
    return os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])


_TMP = []


def tmpdir():
    """This test's private directory (under $TMPDIR), removed when the test exits."""
    if not _TMP:
        _TMP.append(tempfile.mkdtemp(prefix="gpuvet-test-"))
        atexit.register(shutil.rmtree, _TMP[0], True)
    return _TMP[0]


def short_tmpdir():
    """A private directory whose path is short enough for a Unix socket inside it (108 bytes
    in all): tmpdir() when it is, else one in /tmp; removed when the test exits."""
    d = tmpdir()
    if len(d) <= 60:
        return d
    if len(_TMP) < 2:
        _TMP.append(tempfile.mkdtemp(prefix="gpuvet-sock-", dir="/tmp"))
        atexit.register(shutil.rmtree, _TMP[1], True)
    return _TMP[1]


def fake_env(lib, config_text, extra=None):
    """An environment that loads the fake NVML with the given configuration (the file lives in
    tmpdir(): gone when the test exits)."""
    fd, path = tempfile.mkstemp(prefix="gpuvet-fake-", suffix=".conf", dir=tmpdir())
    with os.fdopen(fd, "w") as f:
        f.write(config_text)
    env = dict(os.environ)
    env["GPUVET_NVML_LIB"] = lib
    env["GPUVET_FAKE_CONFIG"] = path
    env.pop("GPUVET_CUDA_LIB", None)
    env["GPUVET_NO_HISTORY"] = "1"
    env["LC_ALL"] = "C"
    if extra:
        env.update(extra)
    return env, path


def sanitized(binary):
    """True for an ASan build: its memory figures mean nothing."""
    with open(binary, "rb") as f:
        return b"__asan_init" in f.read()


class Server:
    """gpuvet serve on 127.0.0.1 with an ephemeral port, read from its first stderr line."""

    def __init__(self, gpuvet, env, extra_args=(), listen="127.0.0.1:0"):
        self.err = tempfile.TemporaryFile()
        self.p = subprocess.Popen([gpuvet, "serve", "--listen", listen] + list(extra_args), env=env,
                                  stdout=subprocess.DEVNULL, stderr=self.err)
        self.port = None
        deadline = time.time() + 10
        while time.time() < deadline and self.port is None:
            if self.p.poll() is not None:
                raise Fail("gpuvet serve exited early: %s" % self.stderr())
            m = re.search(r"serving http://[^ ]*:(\d+)", self.stderr())
            if m:
                self.port = int(m.group(1))
            else:
                time.sleep(0.05)
        check(self.port is not None, "gpuvet serve did not say where it listens: %s" % self.stderr())

    def stderr(self):
        self.err.seek(0)
        return self.err.read().decode("utf-8", "replace")

    def rss_kib(self):
        return proc_status(self.p.pid, "VmRSS")

    def hwm_kib(self):
        return proc_status(self.p.pid, "VmHWM")

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.p.poll() is None:
            self.p.terminate()
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode


def proc_status(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks


def http(port, path="/metrics", headers=None, method="GET", source="127.0.0.1", timeout=5.0, raw=None):
    """One request on its own connection; returns (status, headers dict, body bytes)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    try:
        s.bind((source, 0))
        s.connect(("127.0.0.1", port))
        if raw is None:
            lines = ["%s %s HTTP/1.1" % (method, path), "Host: 127.0.0.1", "Connection: close"]
            for k, v in (headers or {}).items():
                lines.append("%s: %s" % (k, v))
            raw = ("\r\n".join(lines) + "\r\n\r\n").encode()
        s.sendall(raw)
        data = b""
        while True:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    finally:
        s.close()
    if not data:
        return 0, {}, b""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    m = re.match(r"HTTP/1\.\d (\d+)", lines[0])
    status = int(m.group(1)) if m else -1
    hdrs = {}
    for l in lines[1:]:
        k, _, v = l.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    return status, hdrs, body


def series(text):
    """{'name{labels}': value} of a text exposition."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        key, _, val = line.rpartition(" ")
        out[key] = float(val)
    return out


# DCGM's counters under --dcgm-compat keep dcgm-exporter's names, which lack "_total", and its type,
# counter (its etc/default-counters.csv): promtool's lint says so of each, and of
# DCGM_FI_DEV_PCIE_REPLAY_COUNTER also that its name holds a type (docs/serve.md, "promtool").
# These lines are allowed by promtool() below, nothing else is.
DCGM_COUNTERS = ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
                 "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
                 "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
                 "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
DCGM_NAME_LINT = tuple('%s counter metrics should have "_total" suffix' % n for n in DCGM_COUNTERS) + (
    "DCGM_FI_DEV_PCIE_REPLAY_COUNTER metric name should not include type 'counter'",)


def promtool(text, allow_dcgm_name=True):
    """(exit status, output) of promtool check metrics; None when promtool is missing. The lint
    lines of DCGM's counters (DCGM_NAME_LINT) are dropped (a lint exit, 3, with nothing else
    becomes 0) unless allow_dcgm_name is False; a parse error (1) always stays."""
    try:
        r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    except FileNotFoundError:
        return None
    out = (r.stdout + r.stderr).decode()
    if not allow_dcgm_name:
        return r.returncode, out
    lines = [l for l in out.splitlines() if l not in DCGM_NAME_LINT]
    rc = 0 if r.returncode == 3 and not [l for l in lines if l.strip()] else r.returncode
    return rc, "\n".join(lines)


def pid_alive(pid):
    """Running (a zombie is gone: this container's init may never reap it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def marked(mark):
    """The live processes whose environment holds mark (bytes): a test's mark in a variable that
    every process it starts inherits finds them however they were started (setsid, a fork)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if mark in f.read() and pid_alive(int(d)):
                    out.append(int(d))
        except OSError:
            pass
    return out


def pty_chunks(master, proc, seconds):
    """What comes out of a pseudo-terminal's master side, chunk by chunk, until every writer has
    closed the terminal (EIO or EOF), proc has ended with nothing more to read, or seconds pass."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        r, _, _ = select.select([master], [], [], 1.0)
        if not r:
            if proc.poll() is not None:
                return
            continue
        try:
            b = os.read(master, 1 << 16)
        except OSError:  # EIO: every writer closed the terminal
            return
        if not b:
            return
        yield b


def wait_for(cond, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise Fail("timed out waiting for " + what)


def run(tests):
    """Runs the test functions; exit 0, 1 on a failure, 77 when every test skipped."""
    failed = skipped = 0
    for t in tests:
        t0 = time.time()
        try:
            r = t()
            if r == SKIP:
                skipped += 1
                print("SKIP %s" % t.__name__)
            else:
                print("ok   %s (%.1f s)" % (t.__name__, time.time() - t0))
        except Fail as e:
            failed += 1
            print("FAIL %s: %s" % (t.__name__, e))
    sys.stdout.flush()
    if failed:
        sys.exit(1)
    if skipped == len(tests):
        sys.exit(SKIP)
    sys.exit(0)
