"""A history of 100,000 runs (issue "Limits", items 1 and 2):

- `gpuvet report --limit 0` held every run as JSON at once: 2.1 GB of memory for 100,000 check
  runs (1.7 GB in the issue). Now the history is read a page at a time and the page keeps the
  newest 2000 runs (it says how many it left out, and counts them all): peak RSS under 200 MiB.
- `gpuvet history export --format json` built one cJSON tree of every run (2.6 GB) and wrote a
  491 MB document that `gpuvet report --json` refused (its 256 MiB cap): what one command writes
  the other must read. Now the export is written run by run (one run a line, the same
  gpuvet.history/1 document) and report reads an export run by run, whatever its size: both under
  200 MiB. The indented export of earlier gpuvets is read run by run too, and a truncated one is
  refused naming the file.
- `gpuvet history list --json --limit 0` streams the same way.

The history is made in seconds: one real `gpuvet check` against the fake NVML, then its rows
copied by SQL 100,000 times. Peak RSS is each child's own (os.wait4), a resource bound, not a
timing. The ASan build runs everything but the RSS bounds (its memory figures mean nothing).
"""
import json
import os
import sqlite3
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
RUNS = 100000
RSS_BOUND_MIB = 200
SANITIZED = gvtest.sanitized(GPUVET)
DB = os.path.join(gvtest.tmpdir(), "history.db")
FAKE_CONF = "device_count = 2\ndriver_version = 580.159.04\ncuda_driver_version = 13000\ngpu.*.name = NVIDIA H200\n"


def env_of():
    env, _ = gvtest.fake_env(FAKE, FAKE_CONF)
    env.pop("GPUVET_NO_HISTORY", None)
    env.pop("GPUVET_DB", None)
    return env


def measured(argv, env, stdin=None, stdout=subprocess.DEVNULL, timeout=300):
    """(exit status, stderr text, peak RSS in MiB) of one child, its own usage (wait4)."""
    errf = os.path.join(gvtest.tmpdir(), "stderr.txt")
    with open(errf, "wb") as err:
        p = subprocess.Popen(argv, env=env, stdin=stdin, stdout=stdout, stderr=err)
        deadline = time.time() + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() > deadline:
                p.kill()
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    with open(errf, encoding="utf-8", errors="replace") as f:
        text = f.read()
    return p.returncode, text, ru.ru_maxrss / 1024.0


def big_history(db, env):
    """RUNS complete check runs: one stored by gpuvet, the rest its copies, a minute apart."""
    r = subprocess.run([GPUVET, "check", "--fast", "--no-python", "--db", db], env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=180)
    check(r.returncode in (0, 1), "the first check: exit %d: %s" % (r.returncode, r.stderr))
    c = sqlite3.connect(db)
    with c:
        c.execute("""INSERT INTO runs (kind, started_utc, finished_utc, complete, host, command, version, summary)
                     WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?)
                     SELECT r.kind, strftime('%Y-%m-%dT%H:%M:%S', '2020-01-01', '+' || k.i || ' minutes') || '.000Z',
                            r.finished_utc, 1, r.host, r.command, r.version, r.summary
                     FROM k, runs r WHERE r.id = 1""", (RUNS - 1,))
        for table in ("run_meta", "gpus", "results", "findings"):
            cols = [x[1] for x in c.execute("PRAGMA table_info(%s)" % table) if x[1] != "run_id"]
            c.execute("INSERT INTO %s (run_id, %s) SELECT r.id, %s FROM runs r, %s x WHERE x.run_id = 1 AND r.id > 1"
                      % (table, ", ".join(cols), ", ".join("x." + y for y in cols), table))
    n = c.execute("SELECT count(*) FROM runs WHERE complete").fetchone()[0]
    c.close()
    check(n == RUNS, "the history holds %d runs, not %d" % (n, RUNS))


def bounded(what, rss):
    print("  %s: peak RSS %.1f MiB" % (what, rss))
    if not SANITIZED:
        check(rss < RSS_BOUND_MIB, "%s took %.1f MiB at its peak (bound %d MiB)" % (what, rss, RSS_BOUND_MIB))


def says_left_out(page, err, what):
    html = open(page, encoding="utf-8").read()
    check("%d runs read:" % RUNS in html, "%s: the page does not count every run read" % what)
    check('id="left-out"' in html and "newest 2000 of the %d runs read" % RUNS in html,
          "%s: the page does not say that it left runs out" % what)
    check("%d runs read, the newest 2000 drawn" % RUNS in err, "%s: stderr does not say it: %s" % (what, err))
    # the newest runs are the ones drawn: the trends' time axis starts at the 2000th newest run
    c = sqlite3.connect(DB)
    kept_from = c.execute("SELECT started_utc FROM runs ORDER BY started_utc DESC LIMIT 1 OFFSET 1999").fetchone()[0]
    first = c.execute("SELECT min(started_utc) FROM runs").fetchone()[0]
    c.close()
    check('class="tick">%s<' % kept_from[:10] in html and 'class="tick">%s<' % first[:10] not in html,
          "%s: the trends do not start at the oldest run kept (%s)" % (what, kept_from))


# the database (about 0.4 GiB), the export (0.4 GiB) and the pages, with room to spare
DISK_NEEDED = 2 << 30


def main():
    tmp = gvtest.tmpdir()
    st = os.statvfs(tmp)
    free = st.f_bavail * st.f_frsize
    print("  %s: %.1f GiB free" % (tmp, free / float(1 << 30)))
    if free < DISK_NEEDED:
        print("SKIP: a history of %d runs and its export need %.0f GiB in %s, %.1f GiB are free"
              % (RUNS, DISK_NEEDED / float(1 << 30), tmp, free / float(1 << 30)))
        sys.exit(gvtest.SKIP)
    env = env_of()
    db = DB
    t0 = time.time()
    big_history(db, env)
    print("  the history: %d runs, %.0f MiB, made in %.1f s" % (RUNS, os.path.getsize(db) / 1048576.0, time.time() - t0))
    state = {}

    def test_report_limit_0_bounded():
        page = os.path.join(tmp, "page.html")
        rc, err, rss = measured([GPUVET, "report", "--db", db, "--limit", "0", "-o", page], env)
        check(rc == 0, "report --limit 0: exit %d: %s" % (rc, err))
        bounded("report --limit 0", rss)
        says_left_out(page, err, "report --limit 0")

    def test_list_json_streams():
        rc, err, rss = measured([GPUVET, "history", "list", "--json", "--limit", "0", "--db", db], env)
        check(rc == 0, "history list --json --limit 0: exit %d: %s" % (rc, err))
        bounded("history list --json --limit 0", rss)

    def test_export_streams():
        out = os.path.join(tmp, "export.json")
        rc, err, rss = measured([GPUVET, "history", "export", "--format", "json", "--db", db, "-o", out], env)
        check(rc == 0, "history export: exit %d: %s" % (rc, err))
        bounded("history export --format json", rss)
        size = os.path.getsize(out)
        print("  the export: %.0f MiB" % (size / 1048576.0))
        check(size > 256 << 20, "the export is %d bytes: not past report's old 256 MiB cap" % size)
        # one run a line between the head and the tail; every line a run of the history's form
        lines = 0
        with open(out, encoding="utf-8") as f:
            head = f.readline()
            check(head == '{"schema":"gpuvet.history/1","runs":[\n', "the export's first line: %r" % head[:80])
            prev = None
            for line in f:
                if line == "]}\n":
                    prev = "tail"
                    continue
                check(prev != "tail", "the export goes on after its tail")
                run = json.loads(line.rstrip(",\n"))
                check(isinstance(run, dict) and "results" in run, "line %d is not a run" % (lines + 2))
                lines += 1
            check(prev == "tail", "the export has no tail")
        check(lines == RUNS, "the export holds %d runs, not %d" % (lines, RUNS))
        state["export"] = out

    def test_report_reads_big_export():
        out = state.get("export")
        check(out, "no export to read (test_export_streams failed)")
        page = os.path.join(tmp, "export.html")
        rc, err, rss = measured([GPUVET, "report", "--json", out, "-o", page], env)
        check(rc == 0, "report --json of a %d-byte export: exit %d: %s" % (os.path.getsize(out), rc, err))
        bounded("report --json EXPORT", rss)
        says_left_out(page, err, "report --json EXPORT")
        # and from a pipe, as `history export | report --json -` would give it
        with open(out, "rb") as f:
            rc, err, rss = measured([GPUVET, "report", "--json", "-", "-o", page], env, stdin=f)
        check(rc == 0, "report --json - of the export: exit %d: %s" % (rc, err))
        bounded("report --json - < EXPORT", rss)

    def test_older_layouts_and_damage():
        out = state.get("export")
        check(out, "no export to read (test_export_streams failed)")
        with open(out, "rb") as f:
            lines = [f.readline() for _ in range(5)]
        # an export as earlier gpuvets wrote it (indented), with text that looks like structure
        doc = {"schema": "gpuvet.history/1", "runs": [json.loads(x.rstrip(b",\n")) for x in lines[1:4]]}
        doc["runs"][0]["summary"] = 'a "quoted" {brace} [bracket] \\ back'
        old = os.path.join(tmp, "old.json")
        with open(old, "w") as f:
            json.dump(doc, f, indent="\t")
        page = os.path.join(tmp, "old.html")
        rc, err, _ = measured([GPUVET, "report", "--json", old, "-o", page], env)
        check(rc == 0, "report of an indented export: exit %d: %s" % (rc, err))
        html = open(page, encoding="utf-8").read()
        check("3 runs read: 3 check" in html, "the indented export's runs are not all read")
        check('id="left-out"' not in html, "a page of 3 runs says it left some out")
        # the schema last: read whole, as before
        with open(old, "w") as f:
            json.dump({"runs": doc["runs"], "schema": "gpuvet.history/1"}, f)
        rc, err, _ = measured([GPUVET, "report", "--json", old, "-o", page], env)
        check(rc == 0 and "3 runs read: 3 check" in open(page, encoding="utf-8").read(),
              "report of an export with its schema last: exit %d: %s" % (rc, err))
        # cut in the middle of a run: refused, naming the file, nothing written
        cut = os.path.join(tmp, "cut.json")
        with open(cut, "wb") as f:
            f.write(b"".join(lines[:4]) + lines[4][: len(lines[4]) // 2])
        os.unlink(page)
        rc, err, _ = measured([GPUVET, "report", "--json", cut, "-o", page], env)
        check(rc == 2 and "cut.json" in err, "a truncated export: exit %d: %s" % (rc, err))
        check(not os.path.exists(page), "a page was written from a truncated export")

    gvtest.run([test_report_limit_0_bounded, test_list_json_streams, test_export_streams,
                test_report_reads_big_export, test_older_layouts_and_damage])


if __name__ == "__main__":
    main()
