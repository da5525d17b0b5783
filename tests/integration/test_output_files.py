"""The files gpuvet writes under a name the user gives, through the real command line: report -o,
check --junit and history export -o (all through core/atomicfile.h).

For each: a symbolic link planted at NAME.tmp (the name report used to write through) is left
as it is, and so is its target; a FIFO planted there does not block the command; the output is
complete; a symbolic link at NAME itself is refused, link and target untouched; a write that
fails (a file-size limit) exits 3 naming the file and the reason, leaves the old file as it was
and no temporary file beside it.
"""
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()


def run(cmd, env, preexec=None):
    try:
        return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                              preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        raise gvtest.Fail("%s blocks" % " ".join(cmd[1:3]))


def complete_html(data):
    return data.rstrip().endswith(b"</html>")


def complete_junit(data):
    return data.rstrip().endswith(b"</testsuites>")


def complete_json(data):
    try:
        json.loads(data)
        return True
    except ValueError:
        return False


def commands(db, doc):
    """(name, argv writing to the path given, is the output complete, a file-size limit that only
    the output exceeds: reading the history maps its 32 KiB -shm file, the export is larger)"""
    return [
        ("report -o", lambda p: [GPUVET, "report", "--json", doc, "-o", p], complete_html, 512),
        ("check --junit", lambda p: [GPUVET, "check", "--fast", "--no-history", "--junit", p], complete_junit, 512),
        ("history export -o", lambda p: [GPUVET, "history", "export", "--format", "json", "--db", db, "-o", p],
         complete_json, 40 << 10),
    ]


def file_limit(n):
    def preexec():
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    return preexec


def test_command(tmp, env, name, argv, complete, limit):
    d = tempfile.mkdtemp(dir=tmp)
    out = os.path.join(d, "out")
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")

    # a link at the old temporary name
    os.symlink(victim, out + ".tmp")
    r = run(argv(out), env)
    check(r.returncode in (0, 1), "%s with a link at %s.tmp: exit %d: %s" % (name, out, r.returncode, r.stderr))
    check(open(victim).read() == "precious\n", "%s wrote through the link at %s.tmp" % (name, out))
    check(os.path.islink(out + ".tmp"), "%s removed the link at %s.tmp" % (name, out))
    check(complete(open(out, "rb").read()), "%s: the output is not complete" % name)
    os.unlink(out + ".tmp")
    os.unlink(out)

    # a FIFO there
    os.mkfifo(out + ".tmp")
    r = run(argv(out), env)
    check(r.returncode in (0, 1), "%s with a FIFO at %s.tmp: exit %d: %s" % (name, out, r.returncode, r.stderr))
    check(stat.S_ISFIFO(os.lstat(out + ".tmp").st_mode), "%s replaced the FIFO at %s.tmp" % (name, out))
    check(complete(open(out, "rb").read()), "%s: the output is not complete" % name)
    os.unlink(out + ".tmp")

    # a link at the name itself
    link = os.path.join(d, "link")
    os.symlink(victim, link)
    r = run(argv(link), env)
    check(r.returncode == 3 and link.encode() in r.stderr and b"symbolic link" in r.stderr,
          "%s to a symbolic link: exit %d: %s" % (name, r.returncode, r.stderr))
    check(os.path.islink(link) and open(victim).read() == "precious\n", "%s wrote through a link at its name" % name)
    os.unlink(link)

    # a write that fails: the old file stays, no temporary file
    with open(out, "w") as f:
        f.write("the old one\n")
    before = sorted(os.listdir(d))
    r = run(argv(out), env, file_limit(limit))
    check(r.returncode == 3, "%s under a file-size limit: exit %d, not 3: %s" % (name, r.returncode, r.stderr))
    check(out.encode() in r.stderr and os.strerror(27).encode() in r.stderr,
          "%s: the error does not name %s and EFBIG: %s" % (name, out, r.stderr))
    check(open(out).read() == "the old one\n", "%s: a failed write changed the old file" % name)
    check(sorted(os.listdir(d)) == before, "%s left files beside it: %s" % (name, sorted(os.listdir(d))))
    shutil.rmtree(d)


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gpuvet-output-") as tmp:
        env, cfg = gvtest.fake_env(FAKE, "device_count = 2\n")
        env.pop("GPUVET_DB", None)
        env["GPUVET_REPORT_TIME"] = "2026-12-01T00:00:00Z"
        db = os.path.join(tmp, "history.db")
        henv = dict(env)
        henv.pop("GPUVET_NO_HISTORY", None)
        for _ in range(15):
            r = run([GPUVET, "check", "--fast", "--db", db], henv)
            if r.returncode not in (0, 1):
                print("FAIL making a history: %s" % r.stderr)
                return 1
        doc = os.path.join(tmp, "check.json")
        with open(doc, "wb") as f:
            f.write(run([GPUVET, "check", "--fast", "--json", "--no-history"], env).stdout)
        for name, argv, complete, limit in commands(db, doc):
            try:
                test_command(tmp, env, name, argv, complete, limit)
                print("ok   %s" % name)
            except (gvtest.Fail, OSError) as e:
                failures += 1
                print("FAIL %s: %s" % (name, e))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
