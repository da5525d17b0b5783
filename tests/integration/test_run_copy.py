"""gpuvet run's copy of a large output: 200 MiB of random bytes through `cat` come out byte for
byte, in order (a checksum of what gpuvet wrote against the file's), whatever the matcher did
with them. Every byte once went through the error-signature matcher on the copy path (about
105 MiB/s where cat alone moves 3.5 GiB/s); the matcher now reads a bounded tap of the output on
a thread of its own and skips, and says so, what it cannot keep up with, so how much of this
output it scans depends on the machine: the test accepts either, and holds the note to its form.
The same through a pseudo-terminal (gpuvet's stdout a terminal in raw mode: no output processing
on either side), 16 MiB.

No timing is asserted here (docs/benchmarks.md has the measured figures)."""
import hashlib
import os
import pty
import re
import subprocess
import sys
import tty

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
NOTE = re.compile(r"gpuvet run: ([0-9.]+) MiB of the ([0-9.]+) MiB of output \(([0-9.]+)%\) were not scanned "
                  r"for known errors: (\S+) wrote faster than the matcher reads \(the output itself passed whole\)")


def random_file(path, size):
    h = hashlib.sha256()
    with open(path, "wb") as f:
        left = size
        while left:
            b = os.urandom(min(left, 1 << 20))
            f.write(b)
            h.update(b)
            left -= len(b)
    return h.hexdigest()


def check_note(err, size):
    m = NOTE.search(err)
    if m:
        check(abs(float(m.group(2)) - size / 1048576.0) < 0.06, "the note counts another total: %s" % m.group(0))
        check(0 < float(m.group(1)) <= float(m.group(2)), "the note's share makes no sense: %s" % m.group(0))
        check(m.group(4) == "cat", "the note names another command: %s" % m.group(0))
    else:
        check("not scanned" not in err, "a note of another form: %s" % err)
    return bool(m)


def through_pipe(env, path, size, want):
    p = subprocess.Popen([GPUVET, "run", "--no-preflight", "--no-watch", "--", "cat", path], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    h = hashlib.sha256()
    n = 0
    while True:
        b = p.stdout.read(1 << 20)
        if not b:
            break
        h.update(b)
        n += len(b)
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait(120)
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(n == size, "%d bytes came out of %d" % (n, size))
    check(h.hexdigest() == want, "the bytes that came out are not the file's (%d of them)" % n)
    return check_note(err, size)


def through_pty(env, path, size, want):
    master, slave = pty.openpty()
    tty.setraw(slave)  # gpuvet's terminal does no output processing: the bytes must arrive as written
    p = subprocess.Popen([GPUVET, "run", "--no-preflight", "--no-watch", "--", "cat", path], env=env,
                         stdin=slave, stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    h = hashlib.sha256()
    n = 0
    tail = b""
    for b in gvtest.pty_chunks(master, p, 120):
        take = b[:max(0, size - n)]
        h.update(take)
        n += len(take)
        tail += b[len(take):]
    os.close(master)
    err = p.stderr.read().decode(errors="replace")
    rc = p.wait(30)
    check(rc == 0, "exit %d: %s" % (rc, err))
    check(n == size, "%d bytes came out of %d through the terminal" % (n, size))
    check(h.hexdigest() == want, "the bytes that came through the terminal are not the file's")
    check(tail == b"", "more than the file came through the terminal: %r" % tail[:200])
    return check_note(err, size)


def main():
    env, _ = gvtest.fake_env(FAKE, "device_count = 1\n")
    failures = 0
    d = gvtest.tmpdir()
    for what, size, fn in (("200 MiB through pipes", 200 << 20, through_pipe),
                           ("16 MiB through a pseudo-terminal", 16 << 20, through_pty)):
        path = os.path.join(d, "out.bin")
        want = random_file(path, size)
        try:
            noted = fn(env, path, size, want)
            print("ok   %s: byte for byte%s" % (what, " (the matcher skipped some, and said so)" if noted else ""))
        except gvtest.Fail as e:
            failures += 1
            print("FAIL %s: %s" % (what, e))
        os.unlink(path)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
