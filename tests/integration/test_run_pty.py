"""gpuvet run on a terminal: the command writes to a pseudo-terminal of gpuvet's, whose modes
were copied from the user's terminal, ONLCR included, so a newline became \\r\\n there and gpuvet's
copy of it became \\r\\r\\n on the user's terminal, which translates too. Each newline must reach
the terminal as exactly one \\r\\n (the terminal's own translation), and everything else as the
command wrote it: a carriage return (a progress bar), colours, stdout and stderr in the order
written. The user's terminal here is a pseudo-terminal of the test's, with the default modes."""
import os
import pty
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()


def on_terminal(env, argv):
    master, slave = pty.openpty()
    p = subprocess.Popen([GPUVET, "run", "--no-preflight", "--no-watch", "--"] + argv, env=env,
                         stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    out = b"".join(gvtest.pty_chunks(master, p, 60))
    os.close(master)
    return p.wait(30), out


def main():
    env, _ = gvtest.fake_env(FAKE, "device_count = 1\n")
    failures = 0
    cases = (
        ("two lines", ["printf", "a\\nb\\n"], b"a\r\nb\r\n"),
        ("a progress bar and colour", ["printf", "step 1\\rstep 2\\r\\033[32mdone\\033[0m\\n"],
         b"step 1\rstep 2\r\x1b[32mdone\x1b[0m\r\n"),
        ("stdout and stderr in turn", ["sh", "-c", "echo out; echo err >&2; echo out2"], b"out\r\nerr\r\nout2\r\n"),
        ("a line without its newline", ["printf", "x\\ny"], b"x\r\ny"),
    )
    for what, argv, want in cases:
        try:
            rc, out = on_terminal(env, argv)
            check(rc == 0, "exit %d: %r" % (rc, out))
            check(out == want, "the terminal got %r, not %r" % (out, want))
            print("ok   %s" % what)
        except gvtest.Fail as e:
            failures += 1
            print("FAIL %s: %s" % (what, e))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
