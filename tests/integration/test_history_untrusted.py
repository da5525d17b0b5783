"""Files at the history's path that the history cannot trust, through the real command line:
a schema version no gpuvet writes (negative, small and large: it used to index the migration
steps, running other strings as SQL or crashing every command with SIGSEGV), a newer gpuvet's
schema, another application's SQLite file, a truncated file, a text file, a FIFO and a
directory.

For each, check, bench --only cpu, report and history list: no command dies of a signal or
hangs; check and bench still print their report, report still writes its page (saying that
the history is missing from it), history list refuses; every message names the file and why;
and the file is as it was, byte for byte (a FIFO and a directory stay what they were).

A truncated file of ours is the one exception to "as it was": it is damaged, so the next writer
(check, bench) moves it aside, byte for byte under PATH.corrupt-TIME, and starts a new history,
as for any corrupt history of ours (test_history_abuse.py); readers leave it where it is.
"""
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
FAKE_CONF = "device_count = 2\n"


def run(cmd, env, timeout=60):
    try:
        return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise gvtest.Fail("%s hangs" % " ".join(cmd[1:3]))


def a_history(path, env):
    """A history of ours with a few runs in it, in rollback-journal mode (one file)."""
    for _ in range(3):
        r = run([GPUVET, "check", "--fast", "--db", path], env)
        check(r.returncode in (0, 1), "making a history: %s" % r.stderr)
    c = sqlite3.connect(path)
    c.execute("PRAGMA journal_mode = DELETE")
    c.close()


def with_user_version(path, env, version):
    a_history(path, env)
    c = sqlite3.connect(path)
    c.execute("PRAGMA user_version = %d" % version)
    c.commit()
    c.close()


def other_application(path, env):
    c = sqlite3.connect(path)
    c.executescript("CREATE TABLE notes (x); INSERT INTO notes VALUES ('keep me');")
    c.close()


def truncated(path, env):
    a_history(path, env)
    data = open(path, "rb").read()
    check(len(data) > 3 * 4096, "history too small to truncate: %d bytes" % len(data))
    with open(path, "r+b") as f:
        f.truncate(4096 + 100)  # the first page and a piece of the second


def truncated_header(path, env):
    a_history(path, env)
    with open(path, "r+b") as f:
        f.truncate(60)  # "SQLite format 3" and part of the header


def text_file(path, env):
    with open(path, "w") as f:
        f.write("my notes about the cluster, not a database\n" * 10)


def fifo(path, env):
    os.mkfifo(path)


def directory(path, env):
    os.makedirs(os.path.join(path, "inside"))


# (name, how to make it, what the message says)
CASES = [
    ("user_version -1", lambda p, e: with_user_version(p, e, -1), "schema version -1, which no gpuvet writes"),
    ("user_version -2", lambda p, e: with_user_version(p, e, -2), "schema version -2, which no gpuvet writes"),
    ("user_version -1000000000", lambda p, e: with_user_version(p, e, -1000000000),
     "schema version -1000000000, which no gpuvet writes"),
    ("user_version -2147483648", lambda p, e: with_user_version(p, e, -2147483648),
     "schema version -2147483648, which no gpuvet writes"),
    ("a newer gpuvet's schema", lambda p, e: with_user_version(p, e, 99), "schema version 99, newer than this gpuvet"),
    ("another application's SQLite file", other_application, "of another application"),
    ("a file cut within its header", truncated_header, "is not a SQLite database"),
    ("a text file", text_file, "is not a SQLite database"),
    ("a FIFO", fifo, "is not a regular file"),
    ("a directory", directory, "is not a regular file"),
]


def snapshot(path):
    st = os.lstat(path)
    if stat.S_ISREG(st.st_mode):
        return ("file", open(path, "rb").read())
    if stat.S_ISDIR(st.st_mode):
        return ("dir", sorted(os.listdir(path)))
    return ("mode", stat.S_IFMT(st.st_mode))


def beside(path):
    d, name = os.path.split(path)
    return sorted(f for f in os.listdir(d) if f != name)


def not_signalled(r, what):
    if r.returncode < 0:
        raise gvtest.Fail("%s died of %s: %s" % (what, signal.Signals(-r.returncode).name, r.stderr[-400:]))


def commands(db, tmp):
    page = os.path.join(tmp, "page.html")
    return [
        ("check", [GPUVET, "check", "--fast", "--db", db], None),
        ("bench --only cpu", [GPUVET, "bench", "--only", "cpu", "--quick", "--size", "256", "--no-progress",
                              "--db", db], None),
        ("report", [GPUVET, "report", "-o", page, "--db", db], page),
        ("history list", [GPUVET, "history", "list", "--db", db], None),
    ]


def references(env, tmp):
    """What check and bench print without any history, to compare with."""
    check_ref = run([GPUVET, "check", "--fast", "--no-history"], env)
    bench_ref = run([GPUVET, "bench", "--only", "cpu", "--quick", "--size", "256", "--no-progress", "--no-history"], env)
    check(b"sgemm" in bench_ref.stdout, "bench --only cpu prints no sgemm figure here: %s" % bench_ref.stdout)
    return check_ref, bench_ref


def test_case(tmp, env, refs, name, make, why):
    d = tempfile.mkdtemp(dir=tmp)
    db = os.path.join(d, "history.db")
    make(db, env)
    before, others = snapshot(db), beside(db)
    check_ref, bench_ref = refs
    for what, cmd, page in commands(db, d):
        r = run(cmd, env)
        not_signalled(r, what)
        err = r.stderr.decode(errors="replace")
        check(db in err and why in err, "%s: the message does not name %s and '%s': %s" % (what, db, why, err))
        if what == "check":
            check(r.returncode == check_ref.returncode, "check: exit %d, %d without history" % (r.returncode,
                                                                                            check_ref.returncode))
            check(r.stdout == check_ref.stdout, "check: its report is not the one it prints without history")
            check("not stored in the history" in err, "check: no warning that the run was not stored: %s" % err)
        elif what.startswith("bench"):
            check(r.returncode == bench_ref.returncode, "bench: exit %d, %d without history (%s)"
                  % (r.returncode, bench_ref.returncode, err))
            check(b"sgemm 256x256" in r.stdout and b"dgemm 256x256" in r.stdout, "bench printed no figures: %s" % r.stdout)
            check("not stored in the history" in err, "bench: no warning that the run was not stored: %s" % err)
        elif what == "report":
            check(r.returncode == 3, "report: exit %d, not 3 (the history was not read)" % r.returncode)
            check(os.path.exists(page), "report: no page written")
            html = open(page, "rb").read()
            check(html.rstrip().endswith(b"</html>"), "report: no complete page")
            check(b"the history was not read" in html, "report: the page does not say that it lacks the history")
            os.unlink(page)
        else:
            check(r.returncode == 3, "history list: exit %d, not 3" % r.returncode)
        check(snapshot(db) == before, "%s changed the file" % what)
        check(beside(db) == others, "%s left files beside it: %s" % (what, beside(db)))
    shutil.rmtree(d, ignore_errors=True)


def test_truncated(tmp, env):
    d = tempfile.mkdtemp(dir=tmp)
    db = os.path.join(d, "history.db")
    truncated(db, env)
    data = open(db, "rb").read()
    page = os.path.join(d, "page.html")
    for what, cmd in (("history list", [GPUVET, "history", "list", "--db", db]),
                      ("report", [GPUVET, "report", "-o", page, "--db", db])):
        r = run(cmd, env)
        not_signalled(r, what)
        check(r.returncode == 3 and db.encode() in r.stderr and b"is corrupt" in r.stderr,
              "%s on a truncated history: exit %d: %s" % (what, r.returncode, r.stderr))
        check(open(db, "rb").read() == data, "%s changed a truncated history" % what)
    r = run([GPUVET, "check", "--fast", "--db", db], env)
    not_signalled(r, "check")
    check(r.returncode in (0, 1) and b"moved it aside" in r.stderr, "check on a truncated history: %s" % r.stderr)
    aside = [f for f in os.listdir(d) if f.startswith("history.db.corrupt-")]
    check(len(aside) == 1 and open(os.path.join(d, aside[0]), "rb").read() == data,
          "the truncated history was not moved aside byte for byte: %s" % os.listdir(d))
    shutil.rmtree(d, ignore_errors=True)


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gpuvet-hist-untrusted-") as tmp:
        env, cfg = gvtest.fake_env(FAKE, FAKE_CONF)
        env.pop("GPUVET_NO_HISTORY", None)
        env.pop("GPUVET_DB", None)
        env["GPUVET_REPORT_TIME"] = "2026-12-01T00:00:00Z"
        refs = references(env, tmp)
        for name, make, why in CASES:
            try:
                test_case(tmp, env, refs, name, make, why)
                print("ok   %s" % name)
            except gvtest.Fail as e:
                failures += 1
                print("FAIL %s: %s" % (name, e))
        try:
            test_truncated(tmp, env)
            print("ok   a truncated history of ours")
        except gvtest.Fail as e:
            failures += 1
            print("FAIL a truncated history of ours: %s" % e)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
