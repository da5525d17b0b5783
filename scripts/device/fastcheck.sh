#!/bin/bash
# check --fast against nvidia-smi on the GPU machine (issue 24, item 7), beside fastprof.sh:
#   1. eight interleaved rounds (the first a warm-up) of nvidia-smi's five-value query (the
#      issue's anchor), nvidia-smi asked for the values check --fast judges (those of the list
#      below this nvidia-smi knows, from --help-query-gpu), gpuvet check --fast --no-history
#      (--json and text) and build/gpuvet.base (the binary before this round) when carried;
#   2. where check --fast's time goes: gpuvet with GPUVET_TRACE (core/trace.h) five times, each
#      event's median in ms after the harness started the process (GPUVET_TRACE_T0);
#   3. the NVML health and mode facts of gpuvet and gpuvet.base side by side (the field-values
#      batch must give the values the calls gave);
#   4. the default users run, with the history: check --fast --db on a fresh history and on one of
#      about 60 MiB (its first check run copied 14,000 times with Python's sqlite3: ten days of a
#      check each minute), each binary its own copy; timelines
#      for --json, text and the history.
#   bash scripts/device-run.sh scripts/device/fastcheck.sh   (build/gpuvet[.base], .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/fastcheck
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
nvidia-smi --help-query-gpu > "$OUT/help-query-gpu.txt" 2>&1
python3 - "$G" "$PWD/build/gpuvet.base" "$OUT" <<'PY'
import json, os, re, statistics, subprocess, sys, time
g, base, out = sys.argv[1:4]
known = set(re.findall(r'^"([a-z_.]+)"', open(out + "/help-query-gpu.txt").read(), re.M))
want = ["name", "driver_version", "memory.used", "utilization.gpu", "temperature.gpu", "temperature.memory",
        "ecc.mode.current", "ecc.mode.pending", "ecc.errors.corrected.volatile.total",
        "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.aggregate.total",
        "ecc.errors.uncorrected.aggregate.total", "retired_pages.pending", "remapped_rows.correctable",
        "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure", "pcie.link.gen.current",
        "pcie.link.width.current", "power.draw", "enforced.power.limit", "clocks_event_reasons.active",
        "clocks.sm", "mig.mode.current", "persistence_mode", "compute_mode", "fan.speed"]
same = [w for w in want if w in known]
with open(out + "/same-query.txt", "w") as fh:
    fh.write("asked: %s\nnot known to this nvidia-smi: %s\n" % (",".join(same), ",".join(w for w in want if w not in known)))
# the default users run keeps a history: a fresh one (made by the warm-up round) and one of
# about 60 MiB (ten days of a check --fast each minute), each binary its own copy
import shutil, sqlite3
dbs = {}
for who, binary in (("new", g), ("base", base)):
    if not os.access(binary, os.X_OK):
        continue
    dbs[who] = (out + "/hist-%s.db" % who, out + "/big-%s.db" % who)
if "new" in dbs:
    big = dbs["new"][1]
    subprocess.run([g, "check", "--fast", "--db", big], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # that first check run copied 14,000 times with its rows in every table that names a run
    con = sqlite3.connect(big)
    run = con.execute("SELECT min(id) FROM runs").fetchone()[0]
    cols = [r[1] for r in con.execute("PRAGMA table_info(runs)") if r[1] != "id"]
    con.execute("WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 14000) "
                "INSERT INTO runs (%s) SELECT %s FROM runs, c WHERE runs.id = ?" % (",".join(cols), ",".join(cols)), (run,))
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT IN ('runs', 'baselines')").fetchall():
        other = [r[1] for r in con.execute("PRAGMA table_info(%s)" % t) if r[1] != "run_id"]
        if not other:
            continue
        con.execute("INSERT INTO %s (run_id, %s) SELECT n.id, %s FROM runs AS n JOIN %s AS o ON o.run_id = ? WHERE n.id > ?"
                    % (t, ",".join(other), ",".join("o." + c for c in other), t), (run, run))
    con.commit()
    con.close()
    if "base" in dbs:
        shutil.copy(big, dbs["base"][1])
    with open(out + "/big-history.txt", "w") as fh:
        fh.write("%s: %.1f MiB\n" % (big, os.path.getsize(big) / 2**20))
cmds = {"nvidia-smi 5 values": ["nvidia-smi", "--query-gpu=name,driver_version,memory.used,utilization.gpu,temperature.gpu", "--format=csv"],
        "nvidia-smi %d values" % len(same): ["nvidia-smi", "--query-gpu=" + ",".join(same), "--format=csv"],
        "check --fast --json": [g, "check", "--fast", "--no-history", "--json"],
        "check --fast (text)": [g, "check", "--fast", "--no-history"]}
if os.access(base, os.X_OK):
    cmds["base check --fast --json"] = [base, "check", "--fast", "--no-history", "--json"]
for who, (hist, bigdb) in dbs.items():
    binary = g if who == "new" else base
    pre = "" if who == "new" else "base "
    cmds[pre + "check --fast (history)"] = [binary, "check", "--fast", "--db", hist]
    cmds[pre + "check --fast (big history)"] = [binary, "check", "--fast", "--db", bigdb]
times = {k: [] for k in cmds}
for rnd in range(8):
    for k, c in cmds.items():
        t0 = time.perf_counter()
        p = subprocess.run(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        if rnd:
            times[k].append(time.perf_counter() - t0)
        # what a command leaves ending (gpuvet's NVML child tearing down its device files after
        # gpuvet exited) must not slow the next one
        time.sleep(0.05)
        if rnd == 1 and k.startswith("nvidia-smi"):
            open(out + "/%s.txt" % k.replace(" ", "-"), "wb").write(p.stdout + p.stderr)
a = statistics.median(times["nvidia-smi 5 values"])
with open(out + "/timing.txt", "w") as fh:
    for k, v in times.items():
        m = statistics.median(v)
        fh.write("%-36s median %6.1f ms (min %.1f max %.1f)  %.2fx the 5-value anchor\n" % (k, m * 1e3, min(v) * 1e3, max(v) * 1e3, m / a))
    big = [k for k in times if k.startswith("nvidia-smi") and k != "nvidia-smi 5 values"][0]
    b = statistics.median(times[big])
    for k in ("check --fast --json", "check --fast (text)"):
        fh.write("%s / %s = %.2fx\n" % (k, big, statistics.median(times[k]) / b))
    for k in ("check --fast (history)", "check --fast (big history)"):
        if k in times and "base " + k in times:
            fh.write("%s / base %s = %.2fx\n" % (k, k, statistics.median(times[k]) / statistics.median(times["base " + k])))
modes = {"": ["--no-history", "--json"], "-text": ["--no-history"]}
if "new" in dbs:
    modes["-history"] = ["--db", dbs["new"][0]]
for mode, extra in modes.items():
    ev = {}
    for i in range(6):
        env = dict(os.environ)
        t0 = time.monotonic()
        env["GPUVET_TRACE_T0"] = "%.6f" % t0
        env["GPUVET_TRACE"] = out + "/timeline%s-%d.txt" % (mode, i)
        subprocess.run([g, "check", "--fast"] + extra, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = (time.monotonic() - t0) * 1e3
        if i == 0:
            continue
        seen = {}
        for line in open(env["GPUVET_TRACE"]):
            parts = line.split()
            name = " ".join(parts[2:-1])
            if name not in seen:
                seen[name] = float(parts[-1])
        seen["(harness saw the exit)"] = wall
        for k, v in seen.items():
            ev.setdefault(k, []).append(v)
    with open(out + "/timeline%s.txt" % mode, "w") as fh:
        for k, v in sorted(ev.items(), key=lambda kv: statistics.median(kv[1])):
            fh.write("%8.2f ms  %s\n" % (statistics.median(v), k))
def nvml_facts(binary):
    p = subprocess.run([binary, "check", "--fast", "--no-history", "--json"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    f = json.loads(p.stdout)["facts"]["nvml"]
    return {k: (v.get("value"), v.get("state"), v.get("error")) for k, v in f.items()
            if any(t in k for t in ("ecc", "retired", "remap", "pcie_replay", "mig", "gpm"))}
if os.access(base, os.X_OK):
    x, y = nvml_facts(g), nvml_facts(base)
    with open(out + "/facts-compare.txt", "w") as fh:
        diff = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        fh.write("%d health and mode facts, %d differ\n" % (len(set(x) | set(y)), len(diff)))
        for k in sorted(set(x) | set(y)):
            fh.write("%s%s new %s base %s\n" % ("DIFF " if k in diff else "", k, x.get(k), y.get(k)))
for f in ("timing.txt", "timeline.txt", "timeline-text.txt", "timeline-history.txt", "same-query.txt", "big-history.txt"):
    if os.path.exists(out + "/" + f):
        print(open(out + "/" + f).read())
if os.path.exists(out + "/facts-compare.txt"):
    print(open(out + "/facts-compare.txt").readline())
PY
exit 0
