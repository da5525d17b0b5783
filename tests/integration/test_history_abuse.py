"""The history database under abuse, through the real command line (issues 12 and 19):

- a run killed at random points (SIGKILL, 50 times) leaves a database that the next run uses:
  PRAGMA integrity_check is ok and every run stored before is still there;
- a run killed inside its first transaction leaves a hot journal, which the next run rolls back
  (it used to fail for good with "attempt to write a readonly database");
- 4 concurrent writers lose no run;
- a FIFO at the database path does not block check or history list;
- a database in a read-only directory is listed when nothing needs recovery, and a pending
  recovery is reported as needing write access;
- under a file-size limit (ulimit -f) check prints its report, exits with the diagnosis's
  status and warns that the history was not written; with a history there (check reads it
  first) and ulimit -f 0 or 8, no command is killed by SIGXFSZ;
- a corrupt database of ours is moved aside with a timestamped name, byte for byte, and a new
  history starts.

Every database lives in a temporary directory that is removed at the end.
"""
import os
import random
import resource
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
FAKE_CONF = "device_count = 2\ndriver_version = 580.159.04\ncuda_driver_version = 13000\ngpu.*.name = NVIDIA H200\n"


def base_env(tmp):
    env, cfg = gvtest.fake_env(FAKE, FAKE_CONF)
    os.rename(cfg, os.path.join(tmp, "fake.conf"))
    env["GPUVET_FAKE_CONFIG"] = os.path.join(tmp, "fake.conf")
    env.pop("GPUVET_NO_HISTORY", None)
    env.pop("GPUVET_DB", None)
    env["HOME"] = os.path.join(tmp, "home")
    env["XDG_DATA_HOME"] = os.path.join(tmp, "home", ".local", "share")
    os.makedirs(env["HOME"], exist_ok=True)
    return env


def check_cmd(db, extra=(), gpuvet=None):
    return [gpuvet or GPUVET, "check", "--fast", "--db", db] + list(extra)


def run(cmd, env, timeout=30, **kw):
    return subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, **kw)


def run_ids(db):
    c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=10)
    try:
        return {r[0] for r in c.execute("SELECT id FROM runs WHERE complete")}
    finally:
        c.close()


def integrity(db):
    c = sqlite3.connect(db, timeout=10)
    try:
        return c.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        c.close()


def test_random_kills(tmp, env):
    """SIGKILL at random times over 50 runs; after each, a normal run must work and keep all."""
    db = os.path.join(tmp, "kill", "history.db")
    # the kill times are drawn over a run's length: the median of three, as a first run that is
    # slow (cold caches, a loaded machine) would put most kills after the runs had ended
    spans = []
    for _ in range(3):
        t0 = time.time()
        r = run(check_cmd(db), env)
        check(r.returncode in (0, 1), "first runs: %s" % r.stderr)
        spans.append(time.time() - t0)
    span = max(sorted(spans)[1], 0.02)
    rng = random.Random(int(os.environ.get("GPUVET_TEST_SEED", "12")))
    kept = run_ids(db)
    killed = 0
    for i in range(50):
        # every tenth round kills the run that creates a new database (the first transaction)
        target = db if i % 10 else os.path.join(tmp, "kill", "fresh%d.db" % i)
        p = subprocess.Popen(check_cmd(target), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0, span * 1.2))
        p.send_signal(signal.SIGKILL)
        p.wait()
        killed += p.returncode == -signal.SIGKILL
        r = run(check_cmd(target), env)
        check(r.returncode in (0, 1) and b"not stored" not in r.stderr,
              "round %d: the run after a kill did not store its run (exit %d): %s" % (i, r.returncode, r.stderr))
        check(integrity(target) == "ok", "round %d: integrity_check of %s: %s" % (i, target, integrity(target)))
        if target == db:
            now = run_ids(db)
            check(kept <= now, "round %d: runs lost after a kill: %s" % (i, sorted(kept - now)))
            check(len(now) > len(kept), "round %d: the run after the kill is not there" % i)
            kept = now
    check(killed >= 10, "only %d of 50 runs were still running when killed (span %.3f s)" % (killed, span))
    print("random kills: %d of 50 killed while running, %d runs kept" % (killed, len(kept)))


def make_hot_journal(db):
    """A writer killed in the middle of a rollback-mode transaction, with its pages already in the
    file: the journal left beside it is hot."""
    code = r"""
import os, signal, sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("PRAGMA journal_mode = DELETE")
c.execute("PRAGMA cache_size = 1")
c.execute("BEGIN IMMEDIATE")
for i in range(3000):
    c.execute("INSERT INTO runs (kind, started_utc, host, summary) VALUES ('check', 'x', 'h', ?)", ("y" * 400,))
os.kill(os.getpid(), signal.SIGKILL)
"""
    subprocess.run([sys.executable, "-c", code, db], stderr=subprocess.DEVNULL)
    j = db + "-journal"
    check(os.path.exists(j) and os.path.getsize(j) > 0, "no hot journal was left beside %s" % db)


def test_hot_journal(tmp, env):
    db = os.path.join(tmp, "hot", "history.db")
    r = run(check_cmd(db), env)
    check(r.returncode in (0, 1), "first run: %s" % r.stderr)
    before = run_ids(db)
    make_hot_journal(db)
    r = run([GPUVET, "history", "list", "--db", db], env)
    check(r.returncode == 0, "history list after a killed writer: exit %d: %s" % (r.returncode, r.stderr))
    r = run(check_cmd(db), env)
    check(b"not stored" not in r.stderr, "check after a killed writer did not store its run: %s" % r.stderr)
    check(integrity(db) == "ok", "integrity_check after the rollback: %s" % integrity(db))
    after = run_ids(db)
    check(before < after, "runs before the kill %s, after %s" % (sorted(before), sorted(after)))
    # the killed transaction's rows are gone, not half there
    c = sqlite3.connect(db)
    n = c.execute("SELECT count(*) FROM runs WHERE started_utc = 'x'").fetchone()[0]
    c.close()
    check(n == 0, "%d rows of the killed transaction survived" % n)


def test_concurrent_writers(tmp, env):
    db = os.path.join(tmp, "conc", "history.db")
    script = "for i in 1 2 3 4 5 6 7 8; do \"$0\" check --fast --db \"$1\" >/dev/null || [ $? = 1 ] || exit 9; done"
    ps = [subprocess.Popen(["sh", "-c", script, GPUVET, db], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE) for _ in range(4)]
    errs = [p.communicate(timeout=120)[1] for p in ps]
    for p, e in zip(ps, errs):
        check(p.returncode == 0, "a writer failed (exit %d): %s" % (p.returncode, e))
        check(b"not stored" not in e, "a writer lost a run: %s" % e)
    n = len(run_ids(db))
    check(n == 32, "4 writers x 8 runs stored %d runs" % n)
    check(integrity(db) == "ok", "integrity_check: %s" % integrity(db))


def test_fifo(tmp, env):
    db = os.path.join(tmp, "fifo.db")
    os.mkfifo(db)
    ref = run(check_cmd(db, ["--no-history"]), env)
    try:
        r = run(check_cmd(db), env, timeout=20)
    except subprocess.TimeoutExpired:
        raise gvtest.Fail("check blocks on a FIFO at the database path")
    check(r.returncode == ref.returncode, "exit %d with a FIFO, %d without history" % (r.returncode, ref.returncode))
    check(r.stdout == ref.stdout or len(r.stdout) > 100, "no report with a FIFO at the database path")
    check(b"not a regular file" in r.stderr, "no warning about the FIFO: %s" % r.stderr)
    try:
        r = run([GPUVET, "history", "list", "--db", db], env, timeout=20)
    except subprocess.TimeoutExpired:
        raise gvtest.Fail("history list blocks on a FIFO at the database path")
    check(r.returncode == 3 and b"not a regular file" in r.stderr, "history list on a FIFO: %d %s" % (r.returncode, r.stderr))
    check(stat.S_ISFIFO(os.stat(db).st_mode), "the FIFO was replaced")


def as_other_user():
    """preexec for a user who may not write the directory (nobody when we are root)."""
    if os.geteuid() != 0:
        return None

    def drop():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    return drop


def test_readonly_dir(tmp, env):
    d = os.path.join(tmp, "ro")
    os.makedirs(d)
    os.chmod(d, 0o755)
    db = os.path.join(d, "history.db")
    for _ in range(2):
        r = run(check_cmd(db), env)
        check(r.returncode in (0, 1), "writing: %s" % r.stderr)
    os.chmod(db, 0o644)
    os.chmod(d, 0o555)
    renv = dict(env)
    renv["HOME"] = tmp if os.geteuid() else "/nonexistent"
    gv = GPUVET
    if os.geteuid() == 0:
        # nobody may not reach the build tree (a checkout under root's 0700 home): a copy in tmp
        gv = os.path.join(tmp, "gpuvet")
        shutil.copy(GPUVET, gv)
        os.chmod(gv, 0o755)
    try:
        r = run([gv, "history", "list", "--db", db], renv, preexec_fn=as_other_user())
        check(r.returncode == 0, "history list in a read-only directory: exit %d: %s" % (r.returncode, r.stderr))
        check(r.stdout.count(b"check") >= 2, "history list shows no runs: %s" % r.stdout)
        r = run([gv, "history", "list", "--json", "--db", db], renv, preexec_fn=as_other_user())
        check(r.returncode == 0, "history list --json read-only: %s" % r.stderr)
        # check there: its report as always, the history a warning
        ref = run(check_cmd(db, ["--no-history"], gv), renv, preexec_fn=as_other_user())
        r = run(check_cmd(db, (), gv), renv, preexec_fn=as_other_user())
        check(r.returncode == ref.returncode and r.stdout == ref.stdout, "check in a read-only directory")
        check(b"warning" in r.stderr and b"not writable" in r.stderr, "no plain warning: %s" % r.stderr)
        # a pending recovery needs write access, and says so
        os.chmod(d, 0o755)
        make_hot_journal(db)
        os.chmod(db + "-journal", 0o644)
        os.chmod(d, 0o555)
        r = run([gv, "history", "list", "--db", db], renv, preexec_fn=as_other_user())
        check(r.returncode == 3, "history list with a pending recovery, read-only: exit %d" % r.returncode)
        check(b"needs recovery" in r.stderr and b"write access" in r.stderr and b"-journal" in r.stderr,
              "the message does not say that recovery needs write access: %s" % r.stderr)
    finally:
        os.chmod(d, 0o755)


def test_file_size_limit(tmp, env):
    db = os.path.join(tmp, "limit", "history.db")
    ref = run(check_cmd(db, ["--no-history", "--json"]), env)

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (16384, 16384))
    r = run(check_cmd(db, ["--json"]), env, preexec_fn=limit)
    check(r.returncode == ref.returncode, "exit %d under ulimit -f, %d without history (%s)"
          % (r.returncode, ref.returncode, r.stderr))
    check(b'"findings"' in r.stdout and r.stdout.rstrip().endswith(b"}"), "the report was not printed: %s" % r.stdout[:200])
    check(b"warning" in r.stderr and b"not stored" in r.stderr and b"ulimit -f" in r.stderr,
          "no warning about the history and the limit: %s" % r.stderr)


def test_file_size_limit_existing_history(tmp, env):
    """ulimit -f 0 and 8 with a history there: check reads it (NVLink counters) before its report,
    and SQLite writes even to read (its -shm file). No command is killed by SIGXFSZ: check prints
    its report, history list and report say why they cannot read."""
    db = os.path.join(tmp, "limit-existing", "history.db")
    for _ in range(3):
        r = run(check_cmd(db), env)
        check(r.returncode in (0, 1), "filling the history: %s" % r.stderr)
    ref = run(check_cmd(db, ["--no-history", "--json"]), env)
    for kib in (0, 8):
        def limit():
            resource.setrlimit(resource.RLIMIT_FSIZE, (kib * 1024, kib * 1024))
        r = run(check_cmd(db, ["--json"]), env, preexec_fn=limit)
        check(r.returncode == ref.returncode, "check under ulimit -f %d: exit %d, %d without history (%s)"
              % (kib, r.returncode, ref.returncode, r.stderr))
        check(b'"findings"' in r.stdout and r.stdout.rstrip().endswith(b"}"), "ulimit -f %d: no report: %s"
              % (kib, r.stdout[:200]))
        check(b"ulimit -f %d" % kib in r.stderr, "ulimit -f %d: no warning naming the limit: %s" % (kib, r.stderr))
        for cmd in ([GPUVET, "history", "list", "--db", db], [GPUVET, "report", "--db", db, "-o", "-"]):
            r = run(cmd, env, preexec_fn=limit)
            check(r.returncode >= 0, "%s under ulimit -f %d was killed by signal %d" % (cmd[1], kib, -r.returncode))
            check(r.returncode == 0 or b"ulimit -f %d" % kib in r.stderr,
                  "%s under ulimit -f %d: exit %d without naming the limit: %s" % (cmd[1], kib, r.returncode, r.stderr))


def test_corrupt_moved_aside(tmp, env):
    d = os.path.join(tmp, "corrupt")
    db = os.path.join(d, "history.db")
    for _ in range(30):
        run(check_cmd(db), env)
    c = sqlite3.connect(db)
    c.execute("PRAGMA journal_mode = DELETE")
    c.close()
    data = bytearray(open(db, "rb").read())
    check(len(data) > 8192, "database too small to damage: %d bytes" % len(data))
    for i in range(4096, len(data)):
        data[i] = (i * 7 + 3) & 0xff
    open(db, "wb").write(data)
    r = run(check_cmd(db), env)
    check(r.returncode in (0, 1) and b"moved it aside" in r.stderr, "no message about moving it aside: %s" % r.stderr)
    aside = [f for f in os.listdir(d) if f.startswith("history.db.corrupt-")]
    check(len(aside) == 1, "files beside: %s" % os.listdir(d))
    check(open(os.path.join(d, aside[0]), "rb").read() == bytes(data), "the moved file is not the corrupt one")
    check(aside[0].encode() in r.stderr, "the message does not name %s: %s" % (aside[0], r.stderr))
    check(len(run_ids(db)) == 1 and integrity(db) == "ok", "the new history does not hold the run")
    # a second corruption within the same second does not overwrite the first copy
    open(db, "wb").write(data)
    r = run(check_cmd(db), env)
    aside2 = [f for f in os.listdir(d) if f.startswith("history.db.corrupt-") and not f.endswith(("-wal", "-journal"))]
    check(len(aside2) == 2, "second move aside: %s" % os.listdir(d))
    # a file that is not ours is never moved
    other = os.path.join(d, "notes.db")
    open(other, "wb").write(b"not a database at all, just notes " * 20)
    r = run(check_cmd(other), env)
    check(b"not a SQLite database" in r.stderr and os.path.exists(other), "a foreign file was touched")


def main():
    failures = 0
    with tempfile.TemporaryDirectory(prefix="gpuvet-hist-abuse-", dir=gvtest.tmp_base_for_other_users()) as tmp:
        os.chmod(tmp, 0o755)  # the read-only test runs as nobody
        env = base_env(tmp)
        for t in (test_hot_journal, test_fifo, test_readonly_dir, test_file_size_limit,
                  test_file_size_limit_existing_history, test_corrupt_moved_aside,
                  test_concurrent_writers, test_random_kills):
            try:
                t(tmp, env)
                print("ok   %s" % t.__name__)
            except (gvtest.Fail, subprocess.TimeoutExpired) as e:
                failures += 1
                print("FAIL %s: %s" % (t.__name__, e))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
