"""check_layers.py on small trees: an include up a layer fails, a loop within a layer fails
(two modules or a ring of three), includes down or one way sideways pass."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
README = """# t
<!-- layers -->
| layer | modules | what they are |
|---|---|---|
| 0 | `core` | c |
| 1 | `a`, `b`, `c` | abc |
| 2 | `top` | t |
<!-- /layers -->
"""


def run(includes):
    """includes: {"a/x.c": ["b/y.h", ...]}; the checker's exit status and output."""
    with tempfile.TemporaryDirectory(prefix="gpuvet-layers-") as d:
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(README)
        for path, incs in includes.items():
            full = os.path.join(d, "src", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write("".join('#include "%s"\n' % i for i in incs))
        r = subprocess.run([sys.executable, os.path.join(HERE, "check_layers.py"), d], capture_output=True, text=True)
        return r.returncode, r.stdout


def expect(ok, includes, text=None):
    rc, out = run(includes)
    if (rc == 0) != ok or (text and text not in out):
        sys.exit("check_layers on %s: exit %d, expected %s%s:\n%s" % (includes, rc, "pass" if ok else "fail",
                                                                      " with '%s'" % text if text else "", out))


expect(True, {"a/x.c": ["b/y.h", "core/z.h"], "b/y.c": ["c/w.h"], "top/t.c": ["a/x.h"]})
expect(False, {"a/x.c": ["top/t.h"]}, "a layer above it")
expect(False, {"a/x.c": ["b/y.h"], "b/y.c": ["a/x.h"]}, "a loop within layer 1 between a, b")
expect(False, {"a/x.c": ["b/y.h"], "b/y.c": ["c/w.h"], "c/w.c": ["a/x.h"]}, "between a, b, c")
expect(True, {"a/x.c": ["a/y.h"]})  # a module includes itself
print("check_layers: up-includes and loops refused, the rest passes")
