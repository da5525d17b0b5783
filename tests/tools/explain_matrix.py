#!/usr/bin/env python3
"""Every cause of every error signature, decided on machine trees.

For each signature of the catalogue (`gpuvet explain --list --json`: the rows of data/errors.csv
and the signatures generated from data/error_codes.csv and data/xid.csv) and each of its candidate
causes (a finding id), gpuvet explain runs on the signature's example text on two scenario machines
(tests/scenarios/): the first one whose check expects the finding (`expect: ID`), where the cause
must hold, and the first one whose check expects it absent (`absent: ID`), where it must be ruled
out. The scenario keeps its tree, fakes, environment and probing options; its expectations are
replaced by the explain ones and run by tests/tools/scenario_runner. The examples decided on one
machine are explained together, one a line: one run per machine.

    explain_matrix.py GPUVET SOURCE_DIR SCENARIO_RUNNER [FAKE_NVML FAKE_CUDA [FAKE_NVML_BASIC]]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import gvtest  # noqa: E402

KEEP_OPTS = {"--no-python": 0, "--fast": 0, "--python": 1, "--python-timeout": 1, "--facts": 1, "--run-tree-python": 0}
SKIP_OPTS = {"--junit", "--require", "--list-rules"}


def scenario_args(text):
    for line in text.splitlines():
        if line.startswith("args:"):
            return line[5:].split()
    return "check --json --no-python".split()


def explain_args(args):
    """The scenario's probing options for explain; None when the scenario is not a check."""
    if not args or args[0] != "check" or SKIP_OPTS & set(args):
        return None
    out, i = [], 1
    while i < len(args):
        a = args[i]
        if a in KEEP_OPTS:
            out += args[i:i + 1 + KEEP_OPTS[a]]
            i += 1 + KEEP_OPTS[a]
        else:
            i += 1
    return out


def main():
    gpuvet, src, runner = sys.argv[1:4]
    fakes = sys.argv[4:]
    cat = subprocess.run([gpuvet, "explain", "--list", "--json"], stdout=subprocess.PIPE, check=True, text=True)
    rows = json.loads(cat.stdout)["signatures"]
    sdir = os.path.join(src, "tests", "scenarios")
    scen = {}
    for name in sorted(os.listdir(sdir)):
        path = os.path.join(sdir, name, "scenario")
        if not os.path.isfile(path):
            continue
        text = open(path).read()
        eargs = explain_args(scenario_args(text))
        if eargs is None:
            continue
        exp = {l.split()[1] for l in text.splitlines() if l.startswith("expect:") and len(l.split()) > 1}
        absent = {l.split()[1] for l in text.splitlines() if l.startswith("absent:") and len(l.split()) > 1}
        scen[name] = (text, eargs, exp, absent)

    # scenario -> {signature: [directives]}
    runs, missing = {}, []
    for r in rows:
        for cause in r["causes"]:
            for want, key in (("holds", 2), ("ruled-out", 3)):
                pick = next((n for n, s in scen.items() if cause in s[key]), None)
                if not pick:
                    missing.append(f"{r['id']}: no scenario where {cause} is {'expected' if want == 'holds' else 'absent'}")
                    continue
                runs.setdefault(pick, {}).setdefault(r["id"], []).append(f"{want}: {r['id']}/{cause}")

    failures = list(missing)
    tmp = tempfile.mkdtemp(prefix="gpuvet-explain-matrix-", dir=gvtest.tmp_base_for_other_users())
    os.chmod(tmp, 0o755)  # scenarios run as nobody read their input here
    byid = {r["id"]: r for r in rows}
    try:
        for name, sigs in sorted(runs.items()):
            text, eargs, _, _ = scen[name]
            d = os.path.join(tmp, name)
            shutil.copytree(os.path.join(sdir, name), d, symlinks=True)
            with open(os.path.join(d, "explain-input.txt"), "w") as f:
                f.write("".join(byid[sig]["example"] + "\n" for sig in sorted(sigs)))
            keep = [l for l in text.splitlines()
                    if l.split(":")[0] in ("env", "fake", "fake-lib", "chmod", "user", "mknod", "mkfifo", "mkdir")]
            directives = [x for sig in sorted(sigs) for x in [f"signature: {sig}"] + sigs[sig]]
            lines = keep + ["args: explain --json --file @DIR@/explain-input.txt " + " ".join(eargs)] + directives
            with open(os.path.join(d, "scenario"), "w") as f:
                f.write("\n".join(lines) + "\n")
            p = subprocess.run([runner, gpuvet, d] + fakes, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            ok = p.returncode == 0
            label = "skip" if p.returncode == 77 else "ok" if ok else "not ok"
            print(f"{label}: {name}: {len(sigs)} signatures, {sum(len(v) for v in sigs.values())} causes")
            if p.returncode == 77:
                # the runner says why: fakes not built, a device node not made, or a uid-65534 machine when not root
                lines = [l for l in p.stdout.splitlines() if l.startswith("skip") or "not built" in l]
                print("  skipped: " + (lines[-1] if lines else "the runner skipped it"))
                continue
            if not ok:
                failures.append(name)
                print("\n".join("  " + l for l in p.stdout.splitlines() if "not ok" in l or l.startswith("scenario")))
            shutil.rmtree(d, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for m in missing:
        print("not ok: " + m)
    n = sum(len(d) for v in runs.values() for d in v.values())
    print(f"{n} cause decisions of {len(byid)} signatures on {len(runs)} machine runs, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
