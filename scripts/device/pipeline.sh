#!/bin/bash
# The one diagnosis pipeline (issue 16 items 1-2, issue 13's gpu.xid), on the GPU machine, run
# by the integrator (see /work/shared/device.md and scripts/device-run.sh). Nothing on the GPU
# is changed: only environment variables of gpuvet's own process. About 30 s. Writes under
# $OUT; summary.txt has one line per check, each "ok" or "NOT ok".
#
# What it must show (summary.txt):
#  a) baseline: check --json parses; every finding has a fixes array; every fixes entry is a
#     command (kind command/env-set/env-unset) equal to the fix line it points at.
#  b) fault: CUDA_VISIBLE_DEVICES=7 (no such GPU) and the toolkit's stubs first on
#     LD_LIBRARY_PATH, with the live Python probe: env.visible-devices (fail) with an env-unset
#     fix of CUDA_VISIBLE_DEVICES; torch.cuda-unavailable names its root cause (a rule with
#     root_cause: env.visible-devices or another fail root) and carries that root's fix lines.
#  c) fix --shell from the fault's facts: one "unset CUDA_VISIBLE_DEVICES   # env.visible-devices"
#     line, and every LD_LIBRARY_PATH line of it without "stubs".
#  d) --require over the recorded facts: "nvml.device_count>=64" gives policy.require (fail) and
#     exit 1; "nvml.device_count>=1" none and no fail.
#  e) bench --quick --only launch --json: every finding id is a rule of layer bench (diagnose
#     with layer "bench", no check rule ran there).
#  f) watch --once --json parses; its gpu.xid conditions (if any Xid is on record) follow
#     xid_judge: no condition for Xid 13/31/43 (application faults).
set -u
OUT=${OUT:-/tmp/gpuvet-pipeline}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET_NO_HISTORY=1
G=${GPUVET:-$PWD/build/gpuvet}
SUM="$OUT/summary.txt"
: >"$SUM"
PY=$(command -v python3)

timeout 40 "$G" check --json --no-python >"$OUT/baseline.json" 2>"$OUT/baseline.stderr"
echo "exit $?" >>"$OUT/baseline.stderr"
STUBS=/usr/local/cuda/lib64/stubs
CUDA_VISIBLE_DEVICES=7 LD_LIBRARY_PATH="$STUBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
	timeout 60 "$G" check --json --python "$PY" >"$OUT/fault.json" 2>"$OUT/fault.stderr"
echo "exit $?" >>"$OUT/fault.stderr"
timeout 20 "$G" fix --shell --facts "$OUT/fault.json" >"$OUT/fault-fix.sh" 2>"$OUT/fault-fix.stderr"
echo "exit $?" >>"$OUT/fault-fix.stderr"
timeout 20 "$G" check --json --facts "$OUT/baseline.json" --require 'nvml.device_count>=64' >"$OUT/require64.json" 2>&1
echo $? >"$OUT/require64.rc"
timeout 20 "$G" check --json --facts "$OUT/baseline.json" --require 'nvml.device_count>=1' >"$OUT/require1.json" 2>&1
echo $? >"$OUT/require1.rc"
"$G" check --list-rules >"$OUT/rules.txt" 2>&1
timeout 50 "$G" bench --quick --only launch --json --no-progress >"$OUT/bench.json" 2>"$OUT/bench.stderr"
echo "exit $?" >>"$OUT/bench.stderr"
timeout 20 "$G" watch --once --json >"$OUT/watch.json" 2>"$OUT/watch.stderr"
echo "exit $?" >>"$OUT/watch.stderr"

python3 - "$OUT" >>"$SUM" <<'PY'
import json, os, sys
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        print("%-10s NOT ok: %s is not JSON: %s" % (name.split(".")[0], name, e))
        return None
def say(name, ok, what):
    print("%-10s %s: %s" % (name, "ok" if ok else "NOT ok", what))
def fixes_consistent(doc):
    bad = []
    for f in doc.get("findings", []):
        if "fixes" not in f:
            bad.append("%s has no fixes" % f["id"])
            continue
        for x in f["fixes"]:
            line = f["fix"][x["line"]] if x.get("line", -1) < len(f["fix"]) else None
            if x["kind"] not in ("command", "env-set", "env-unset") or not line or not line.startswith(x["command"]):
                bad.append("%s: %s" % (f["id"], x))
    return bad
b = load("baseline.json")
if b:
    bad = fixes_consistent(b)
    say("baseline", not bad, "%d findings, fixes consistent%s" % (len(b["findings"]), "" if not bad else ": " + "; ".join(bad[:5])))
f = load("fault.json")
if f:
    ids = {x["id"]: x for x in f["findings"]}
    print("fault      findings: %s" % ", ".join("%s(%s)" % (x["id"], x["severity"]) for x in f["findings"]))
    bad = fixes_consistent(f)
    say("fault", not bad, "fixes consistent" + ("" if not bad else ": " + "; ".join(bad[:5])))
    vd = ids.get("env.visible-devices")
    say("fault", vd is not None and vd["severity"] == "fail" and any(x["kind"] == "env-unset" and x.get("variable") == "CUDA_VISIBLE_DEVICES" for x in vd["fixes"]),
        "env.visible-devices fail with an env-unset CUDA_VISIBLE_DEVICES fix: %s" % (vd["fixes"] if vd else "absent"))
    tu = ids.get("torch.cuda-unavailable")
    if tu:
        root = [e for e in tu["evidence"] if e.startswith("root cause: ")]
        say("fault", bool(root), "torch.cuda-unavailable: %s | %s" % (tu["title"], root))
        if root:
            rid = root[0].rsplit("(", 1)[-1].rstrip(")")
            r = ids.get(rid)
            say("fault", r is not None and r["fix"][:3] == tu["fix"][:len(r["fix"][:3])], "it carries %s's fix lines" % rid)
    else:
        st = f["facts"].get("python", {})
        say("fault", False, "no torch.cuda-unavailable (python.live.status: %s)" % st.get("live.status"))
try:
    sh = open(os.path.join(out, "fault-fix.sh")).read().splitlines()
    un = [l for l in sh if l.startswith("unset CUDA_VISIBLE_DEVICES   # env.visible-devices")]
    llp = [l for l in sh if "LD_LIBRARY_PATH" in l and not l.startswith("#")]
    say("fix", len(un) == 1, "unset line: %s" % un)
    say("fix", all("stubs" not in l.split("#")[0] for l in llp), "LD_LIBRARY_PATH lines: %s" % llp)
except Exception as e:
    say("fix", False, str(e))
r64, r1 = load("require64.json"), load("require1.json")
rc64 = open(os.path.join(out, "require64.rc")).read().strip()
rc1 = open(os.path.join(out, "require1.rc")).read().strip()
if r64 and r1:
    p64 = [x for x in r64["findings"] if x["id"] == "policy.require"]
    p1 = [x for x in r1["findings"] if x["id"] == "policy.require"]
    say("require", bool(p64) and p64[0]["severity"] == "fail" and rc64 == "1", "device_count>=64: %s exit %s" % ([x["title"] for x in p64], rc64))
    say("require", not p1, "device_count>=1: no policy.require (exit %s)" % rc1)
layer = {}
for l in open(os.path.join(out, "rules.txt")):
    w = l.split()
    if len(w) >= 3:
        layer[w[0]] = w[2]
bj = load("bench.json")
if bj:
    fids = [x["id"] for x in bj.get("findings", [])] + [x["id"] for x in bj.get("skipped", [])]
    say("bench", all(layer.get(i) == "bench" for i in fids), "finding/skipped ids: %s" % fids)
w = load("watch.json")
if w:
    conds = []
    def walk(o):
        if isinstance(o, dict):
            if o.get("id") == "gpu.xid":
                conds.append(o)
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
    walk(w)
    app = [c for c in conds if any(("Xid %d:" % k) in json.dumps(c) for k in (13, 31, 43))]
    say("watch", not app, "gpu.xid conditions: %s" % conds)
PY
cat "$SUM"
