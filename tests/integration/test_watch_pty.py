#!/usr/bin/env python3
"""gpuvet watch's live view under a pseudo-terminal (TERM=xterm, its size set with TIOCSWINSZ),
read back through a small terminal emulator (vtscreen.py) against the fake NVML with several
processes: ? opens the help with every key --help lists (one table behind both) and any key
closes it; the sort keys reorder the rows and the title names the sort; the USER and %CPU
columns of real processes; 80x24, 200x60 and 60x20 (resized under it), where a tall terminal
makes the graphs taller and a narrow one drops the lowest columns."""
import os
import pwd
import subprocess
import sys

import gvtest
from gvtest import check
from vtscreen import PtyProgram

GPUVET, FAKE = gvtest.args()
ME = pwd.getpwuid(os.getuid()).pw_name
# pids above any pid_max (2^22): never a process of this machine, so their user is unknown
BIG, MID = 4194401, 4194402


def start(rows, cols, busy, idle, locale="C"):
    cfg = "\n".join([
        "device_count = 2",
        "gpu.0.util_gpu = 40", "gpu.1.util_gpu = 90",
        "gpu.0.processes = %d:busy:3GiB;%d:idle:1GiB" % (busy, idle),
        "gpu.1.processes = %d:train:9GiB;%d:eval:5GiB" % (BIG, MID),
        "gpu.0.process_sm_util = %d:20;%d:0" % (busy, idle),
        "gpu.1.process_sm_util = %d:70;%d:40" % (BIG, MID),
    ]) + "\n"
    env, _ = gvtest.fake_env(FAKE, cfg, {"TERM": "xterm", "LC_ALL": locale, "GPUVET_WATCH_SECONDS": "60"})
    return PtyProgram([GPUVET, "watch", "--interval", "0.2"], rows, cols, env)


def children():
    """A process that burns a core and one that sleeps: their user and CPU are real."""
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(["sleep", "120"])
    return busy, idle


def stop(*ps):
    for p in ps:
        p.kill()
        p.wait()


def table(screen):
    """The header's words and the process rows' words, under the title."""
    lines = screen.lines()
    head = next((i for i, l in enumerate(lines) if l.split()[:2] == ["GPU", "PID"]), None)
    if head is None:
        return [], []
    rows = []
    for l in lines[head + 1:]:
        w = l.split()
        if len(w) < 2 or not w[0].isdigit() or not w[1].isdigit():
            break
        rows.append(w)
    return lines[head].split(), rows


def pids(screen):
    return [int(r[1]) for r in table(screen)[1]]


def row_of(screen, pid):
    return next((r for r in table(screen)[1] if int(r[1]) == pid), None)


def unboxed(line):
    """A line of the help box without its frame."""
    t = line.strip()
    t = t[1:] if t[:1] in ("|", "\u2502") else t
    return t[:-1] if t[-1:] in ("|", "\u2502") else t


def test_help_overlay():
    busy, idle = children()
    try:
        with start(24, 80, busy.pid, idle.pid) as p:
            p.wait_for(lambda s: len(pids(s)) == 4, 10, "the first frame with 4 processes")
            p.send(b"?")
            p.wait_for(lambda s: "gpuvet watch keys" in s.text(), 5, "the help after ?")
            # every key line of --help (the same table) is on the screen
            out = subprocess.run([GPUVET, "watch", "--help"], capture_output=True, timeout=10).stdout.decode()
            keys = out.split("keys of the live view", 1)[1].splitlines()[1:]
            keys = [" ".join(l.split()) for l in keys if l.startswith("  ")]
            check(len(keys) >= 10, "--help lists %d keys:\n%s" % (len(keys), out))
            shown = [" ".join(unboxed(l).split()) for l in p.screen.lines()]
            for k in keys:
                check(any(k in l for l in shown), "the help lacks '%s':\n%s" % (k, p.screen.text()))
            check(p.screen.lines()[0].startswith("gpuvet watch"), "the header under the help")
            p.send(b"x")
            p.wait_for(lambda s: "gpuvet watch keys" not in s.text() and "PROCESSES" in s.text(), 5,
                       "any key to close the help")
            p.send(b"h")
            p.wait_for(lambda s: "gpuvet watch keys" in s.text(), 5, "the help after h")
            p.send(b"q")  # closes the help, does not quit
            p.wait_for(lambda s: "gpuvet watch keys" not in s.text(), 5, "q to close the help")
            p.settle(0.5)
            check(p.p.poll() is None, "q with the help up quit watch")
            p.send(b"q")
            p.p.wait(5)
            check(p.p.returncode == 0, "exit %s after q" % p.p.returncode)
    finally:
        stop(busy, idle)


def test_sort_keys():
    busy, idle = children()
    try:
        with start(30, 120, busy.pid, idle.pid) as p:
            p.wait_for(lambda s: len(pids(s)) == 4, 10, "the first frame with 4 processes")
            check("sort: GPU-MEM, descending" in p.screen.text(), "the sort in the title:\n%s" % p.screen.text())
            check(pids(p.screen) == [BIG, MID, busy.pid, idle.pid], "GPU memory, biggest first: %s" % pids(p.screen))
            head = table(p.screen)[0]
            check(head[:6] == ["GPU", "PID", "USER", "TYPE", "%SM", "%CPU"] and "GPU-MEMv" in head and head[-1] == "COMMAND",
                  "the header: %s" % head)
            p.send(b"/")  # nvitop's reverse
            p.wait_for(lambda s: "sort: GPU-MEM, ascending" in s.text(), 5, "/ to reverse")
            p.wait_for(lambda s: pids(s) == [idle.pid, busy.pid, MID, BIG], 5, "the order reversed")
            check("GPU-MEM^" in table(p.screen)[0], "the column marked ascending: %s" % table(p.screen)[0])
            p.send(b",,")  # the previous column twice: %CPU, then %SM, each biggest first
            p.wait_for(lambda s: "sort: %SM, descending" in s.text(), 5, ", twice to sort by %SM")
            p.wait_for(lambda s: pids(s) == [BIG, MID, busy.pid, idle.pid], 5, "%SM, biggest first")
            check([row_of(p.screen, x)[4] for x in pids(p.screen)] == ["70", "40", "20", "0"], "the %%SM column: %s\n%s" % ([row_of(p.screen, x) for x in pids(p.screen)], p.screen.text()))
            p.send(b"+")  # nvtop's ascending
            p.wait_for(lambda s: pids(s) == [idle.pid, busy.pid, MID, BIG], 5, "+ to sort ascending")
            p.send(b".")  # back to %CPU, its own order: biggest first
            p.wait_for(lambda s: "sort: %CPU, descending" in s.text(), 5, ". to sort by %CPU")
            # the processes of this machine: their user; the busy one's CPU, the sleeper's none
            p.wait_for(lambda s: (row_of(s, busy.pid) or ["?"] * 6)[5].isdigit() and int(row_of(s, busy.pid)[5]) >= 5,
                       10, "the busy process's %CPU")
            check(row_of(p.screen, busy.pid)[2] == ME[:9] and row_of(p.screen, idle.pid)[2] == ME[:9],
                  "USER of this machine's processes: %s" % table(p.screen)[1])
            check(row_of(p.screen, BIG)[2] == "-" and row_of(p.screen, BIG)[5] == "n/a", "an unknown process's user and CPU")
            check(row_of(p.screen, idle.pid)[5] == "0", "the sleeper's %%CPU: %s" % row_of(p.screen, idle.pid))
            check(pids(p.screen)[0] == busy.pid and pids(p.screen)[-2:] in ([BIG, MID], [MID, BIG]),
                  "%%CPU, unknown last: %s" % pids(p.screen))
    finally:
        stop(busy, idle)


def gpu_rows(screen):
    return [i for i, l in enumerate(screen.lines()) if "NVIDIA H200" in l and l[1:2].isdigit()]


def test_sizes():
    busy, idle = children()
    try:
        with start(24, 80, busy.pid, idle.pid, locale="C.UTF-8") as p:
            p.wait_for(lambda s: len(pids(s)) == 4 and len(gpu_rows(s)) == 2, 10, "the first frame at 80x24")
            s = p.screen
            check(s.lines()[-1].startswith("h help  q quit"), "the footer at 80x24: %r" % s.lines()[-1])
            g = gpu_rows(s)
            small = g[1] - g[0] - 1
            check(small >= 1 and "util  5m" in s.lines()[g[0] + 1], "graphs at 80x24:\n%s" % s.text())
            check("%SM" in table(s)[0] and "%CPU" in table(s)[0] and "USER" in table(s)[0], "columns at 80: %s" % table(s)[0])

            p.resize(60, 200)
            p.wait_for(lambda s: len(gpu_rows(s)) == 2 and len(s.lines()) == 60 and s.lines()[-1].startswith("h help"),
                       5, "a redraw at 200x60")
            p.wait_for(lambda s: len(gpu_rows(s)) == 2 and gpu_rows(s)[1] - gpu_rows(s)[0] - 1 > small, 5,
                       "taller graphs at 200x60")
            s = p.screen
            g = gpu_rows(s)
            check(g[1] - g[0] - 1 >= 8, "graph rows at 200x60: %d\n%s" % (g[1] - g[0] - 1, s.text()))
            check(len(pids(s)) == 4, "every process at 200x60")
            # the graph rows hold block characters (UTF-8), the bars too
            check(any("\u2588" in l for l in s.lines()[g[0]:g[1]]), "no graph drawn:\n%s" % s.text())

            p.resize(20, 60)
            p.wait_for(lambda s: len(s.lines()) == 20 and "TYPE" not in s.text() and len(pids(s)) == 4, 5,
                       "a redraw at 60x20")
            s = p.screen
            check(all(len(l) <= 59 for l in s.lines()), "a line wider than 59 at 60 columns:\n%s" % s.text())
            head = table(s)[0]
            check(head[:2] == ["GPU", "PID"] and head[-1] == "COMMAND" and "TYPE" not in head, "columns at 60: %s" % head)
            check(s.lines()[-1].startswith("h help  q quit"), "the footer at 60x20: %r" % s.lines()[-1])
            check(len(gpu_rows(s)) == 2, "both GPUs at 60x20:\n%s" % s.text())
    finally:
        stop(busy, idle)


gvtest.run([test_help_overlay, test_sort_keys, test_sizes])
