"""GPUVET_TRACE: where a command's time goes (core/trace.h, docs/architecture.md).

With GPUVET_TRACE naming a file, gpuvet appends "gvt PID EVENT MS" per phase: the parent's
phases, and the NVML probe's child's under the child's own pid, MS counted from GPUVET_TRACE_T0
(the caller's CLOCK_MONOTONIC start) or from the first event. Unset, nothing is written.
"""
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
CONF = "device_count = 1\n"
LINE = re.compile(r"^gvt (\d+) (\S.*\S|\S) (-?\d+\.\d{3})$")


def run(extra):
    env, _ = gvtest.fake_env(FAKE, CONF, extra)
    env["HOME"] = gvtest.tmpdir()
    env.pop("GPUVET_TRACE", None)
    env.pop("GPUVET_TRACE_T0", None)
    env.update(extra)
    r = subprocess.run([GPUVET, "check", "--fast", "--no-python", "--json"], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    check(r.returncode in (0, 1), "check: exit %d: %s" % (r.returncode, r.stderr.decode()))
    return r


def events(path):
    out = []
    with open(path) as fh:
        for line in fh:
            m = LINE.match(line.rstrip("\n"))
            check(m, "not a trace line: %r" % line)
            out.append((int(m.group(1)), m.group(2), float(m.group(3))))
    return out


def main():
    d = os.path.join(gvtest.tmpdir(), "traces")
    os.makedirs(d)

    def test_parent_and_child_phases_from_t0():
        path = os.path.join(d, "trace.txt")
        t0 = time.monotonic()
        r = run({"GPUVET_TRACE": path, "GPUVET_TRACE_T0": "%.6f" % t0})
        wall = (time.monotonic() - t0) * 1e3
        ev = events(path)
        names = [e[1] for e in ev]
        for want in ("main", "knowledge base loaded", "child nvml forked", "child nvml started", "nvml init done",
                     "nvml gpu 0 snapshot", "child nvml read", "probes joined", "rules", "diagnosed", "json built",
                     "written", "command done"):
            check(want in names, "no %r event in %s" % (want, names))
        pid = {e[1]: e[0] for e in ev}
        check(pid["main"] == pid["command done"], "main and command done from different processes")
        check(pid["child nvml started"] != pid["main"], "the NVML child's events carry the parent's pid")
        check(pid["nvml init done"] == pid["child nvml started"], "nvml init done not from the child")
        at = {e[1]: e[2] for e in ev}
        # counted from T0: main after the harness started it, the end before the harness saw the exit
        check(0 < at["main"] <= at["command done"] <= wall, "times %s, wall %.3f" % (at, wall))
        order = ["main", "child nvml forked", "probes joined", "rules", "diagnosed", "written", "command done"]
        check([at[n] for n in order] == sorted(at[n] for n in order), "the parent's phases out of order: %s" % at)
        check(at["child nvml started"] <= at["child nvml read"], "the child read before it started: %s" % at)
        check(r.stdout.lstrip().startswith(b"{"), "the JSON document changed by tracing")

    def test_without_t0_from_the_first_event():
        path = os.path.join(d, "trace-not0.txt")
        run({"GPUVET_TRACE": path, "GPUVET_TRACE_T0": "not a number"})
        ev = events(path)
        check(ev[0][1] == "main" and 0 <= ev[0][2] < 5, "first event %s" % (ev[0],))

    def test_appends_and_off_by_default():
        path = os.path.join(d, "trace-twice.txt")
        run({"GPUVET_TRACE": path})
        n = len(events(path))
        run({"GPUVET_TRACE": path})
        check(len(events(path)) > n, "a second run did not append")
        before = set(os.listdir(d))
        run({})
        check(set(os.listdir(d)) == before, "a run without GPUVET_TRACE wrote %s" % (set(os.listdir(d)) - before))

    def test_unwritable_trace_warns_once_and_runs():
        # a directory (and a name with a newline and an escape in it) cannot be opened for appending
        bad = os.path.join(d, "a\nb\x1b[31m")
        os.makedirs(bad)
        r = run({"GPUVET_TRACE": bad})
        err = r.stderr.decode()
        check(err.count("GPUVET_TRACE: cannot open") == 1, "stderr: %r" % err)
        check("\x1b" not in err and "a\nb" not in err, "the path reached stderr raw: %r" % err)
        check(r.stdout.lstrip().startswith(b"{"), "no JSON document without the trace")

    gvtest.run([test_parent_and_child_phases_from_t0, test_without_t0_from_the_first_event,
                test_appends_and_off_by_default, test_unwritable_trace_warns_once_and_runs])


if __name__ == "__main__":
    main()
