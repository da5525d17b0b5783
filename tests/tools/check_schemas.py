#!/usr/bin/env python3
"""Every --json document against its JSON Schema (schemas/, draft 2020-12), with
python3-jsonschema: the documents the scenario tests produced (scenario-docs/: check, explain,
diag, bench, fix, env on the fakes) and the ones this test makes on the fakes itself (watch --once,
watch --diagnose, tune --from, bench and check into a history, every history --json document,
diag --merge, env, env use, env --scan). Also: every fact of a check document that probed (not
--facts) has its source, as docs/json.md promises; every schema gpuvet writes (a "gpuvet.X/N"
string in src/) has its schema file, and every schema file is used.

usage: check_schemas.py GPUVET FAKE_NVML FAKE_CUDA FAKE_CUBLASLT SRCDIR SCENARIO_DOCS"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Debian's python3-jsonschema lives in the system interpreter: a python3 earlier on PATH (pyenv,
# a venv) without it runs this under /usr/bin/python3 instead
try:
    import jsonschema
except ImportError:
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") \
            and not os.environ.get("GPUVET_SCHEMA_REEXEC"):
        os.environ["GPUVET_SCHEMA_REEXEC"] = "1"
        os.execv("/usr/bin/python3", ["/usr/bin/python3"] + sys.argv)
    print("not ok: python3-jsonschema is not installed (scripts/install-deps.sh --test installs it)")
    sys.exit(1)

GPUVET, FAKE_NVML, FAKE_CUDA, FAKE_CUBLASLT, SRC, SCENARIO_DOCS = [os.path.abspath(a) for a in sys.argv[1:7]]
SCHEMAS = os.path.join(SRC, "schemas")
failures = []
validated = {}


def fail(msg):
    failures.append(msg)
    print("not ok: " + msg)


def load_schemas():
    """{schema name or command: (path, schema)}, {$id: schema}"""
    by_name, store = {}, {}
    for path in sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json"))):
        with open(path) as f:
            s = json.load(f)
        jsonschema.Draft202012Validator.check_schema(s)
        if s.get("$schema") != "https://json-schema.org/draft/2020-12/schema":
            fail("%s: $schema is not draft 2020-12" % path)
        store[s["$id"]] = s
        name = s.get("x-gpuvet-schema") or s.get("x-gpuvet-command")
        if name:
            by_name[name] = (path, s)
    return by_name, store


def validator(schema, store):
    """A draft 2020-12 validator that resolves the schemas' urn:gpuvet:schema: references among
    themselves: through the referencing library where jsonschema has it (4.18 and later), else
    RefResolver (Debian 12's 4.10)."""
    try:
        import referencing
        registry = referencing.Registry().with_resources(
            (i, referencing.Resource.from_contents(s, default_specification=referencing.jsonschema.DRAFT202012))
            for i, s in store.items())
        return jsonschema.Draft202012Validator(schema, registry=registry)
    except ImportError:
        resolver = jsonschema.RefResolver.from_schema(schema, store=store)
        return jsonschema.Draft202012Validator(schema, resolver=resolver)


def validate(doc, what, by_name, store, name=None):
    """name: the schema of a document that names none (tune --list --json, an array)"""
    name = name or (doc.get("schema") if isinstance(doc, dict) else None)
    if name not in by_name:
        fail("%s: no schema file for its schema %r" % (what, name))
        return
    path, schema = by_name[name]
    v = validator(schema, store)
    errors = sorted(v.iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errors[:5]:
        fail("%s (%s): %s at /%s" % (what, name, e.message[:300], "/".join(str(p) for p in e.absolute_path)))
    validated[name] = validated.get(name, 0) + 1


def run(args, env, ok=(0,), timeout=120):
    r = subprocess.run([GPUVET] + args, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode not in ok:
        fail("gpuvet %s: exit %d: %s" % (" ".join(args), r.returncode, r.stderr[-500:]))
        return None
    return r.stdout


def doc_of(args, env, by_name, store, ok=(0,), name=None):
    out = run(args, env, ok)
    if out is None:
        return None
    try:
        doc = json.loads(out)
    except ValueError:
        fail("gpuvet %s: not JSON: %s" % (" ".join(args), out[:300]))
        return None
    dump = os.environ.get("GPUVET_SCHEMA_DUMP")  # a directory: keep each document, to read
    if dump:
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, "%02d-%s.json" % (len(os.listdir(dump)), args[0].strip("-"))), "w") as f:
            json.dump(doc, f, indent=1)
    validate(doc, "gpuvet " + " ".join(args), by_name, store, name)
    return doc


def sources_of_check(doc, what):
    missing = []
    for layer, facts in doc.get("facts", {}).items():
        for key, fact in facts.items():
            if not fact.get("source"):
                missing.append("%s.%s" % (layer, key))
    if missing:
        fail("%s: %d fact(s) without their source: %s" % (what, len(missing), ", ".join(missing[:10])))


def not_vacuous(by_name, store):
    """The schemas reject what they must: a broken document of each kind fails."""
    path, schema = by_name["gpuvet.check/1"]
    bad = {"schema": "gpuvet.check/1", "tool": {"name": "gpuvet", "version": "0"},
           "facts": {"nvml": {"init": {"state": "ok", "source": ""}}},
           "findings": [{"id": "gpu.hot", "severity": "bad", "title": "t", "evidence": [], "fix": []}],
           "skipped": [], "summary": {"fail": 0, "warn": 0, "info": 0, "verdict": "ok", "seconds": 0}}
    errors = list(validator(schema, store).iter_errors(bad))
    wanted = {"severity", "source", "value"}
    seen = {w for w in wanted for e in errors if w in e.message or w in list(e.absolute_path)}
    if seen != wanted:
        fail("the check schema does not reject a bad severity, an empty source and an ok fact without a value: %s"
             % [e.message for e in errors])
    for name, (p, sch) in by_name.items():
        if name.startswith("gpuvet.") and not list(validator(sch, store).iter_errors({"schema": name})):
            fail("%s accepts a document with nothing but its name" % p)


def scenario_documents(by_name, store):
    n = 0
    for path in sorted(glob.glob(os.path.join(SCENARIO_DOCS, "*.json"))):
        name = os.path.basename(path)[:-5]
        sfile = os.path.join(SRC, "tests", "scenarios", name, "scenario")
        if not os.path.exists(sfile):
            continue  # a scenario since removed
        with open(path) as f:
            try:
                doc = json.load(f)
            except ValueError:
                fail("scenario %s: its document is not JSON" % name)
                continue
        validate(doc, "scenario " + name, by_name, store)
        n += 1
        with open(sfile) as f:
            recorded = re.search(r"^args:.*--facts", f.read(), re.M)
        if doc.get("schema") == "gpuvet.check/1" and not recorded:
            sources_of_check(doc, "scenario " + name)
    if n < 100:
        fail("only %d scenario documents in %s: run the scenario tests first (the fixture does)" % (n, SCENARIO_DOCS))
    print("ok: %d scenario documents validated" % n)


def own_documents(by_name, store, tmp):
    conf = os.path.join(tmp, "fake.conf")
    with open(conf, "w") as f:
        f.write("device_count = 2\ncuda.alloc_limit = 1GiB\ngpu.*.memory_total = 4GiB\n")
    db = os.path.join(tmp, "history.db")
    env = dict(os.environ, GPUVET_NVML_LIB=FAKE_NVML, GPUVET_FAKE_CONFIG=conf, LC_ALL="C")
    env.pop("GPUVET_NO_HISTORY", None)
    genv = dict(env, GPUVET_CUDA_LIB=FAKE_CUDA, GPUVET_CUBLASLT_LIB=FAKE_CUBLASLT)

    # check and bench twice each into a history, a watch --record, a diag run
    for _ in range(2):
        d = doc_of(["check", "--json", "--fast", "--db", db], env, by_name, store, ok=(0, 1))
        if d:
            sources_of_check(d, "check --fast")
        doc_of(["bench", "--quick", "--json", "--db", db, "--size", "64", "--only", "gemm,memory,cpu"], genv, by_name,
               store, ok=(0, 1))
    run(["watch", "--record", "--count", "2", "--interval", "0.1", "--db", db], env, ok=(0, 1))
    diag = doc_of(["diag", "--json", "--db", db, "--size", "64", "--duration", "1", "--gpus", "0"], genv, by_name, store,
                  ok=(0, 1))
    doc_of(["history", "list", "--json", "--db", db], env, by_name, store)
    doc_of(["history", "list", "--json", "--all", "--kind", "bench", "--db", db], env, by_name, store)
    doc_of(["history", "show", "latest", "--json", "--db", db], env, by_name, store)
    doc_of(["history", "show", "1", "--json", "--db", db], env, by_name, store)
    doc_of(["history", "compare", "--json", "--kind", "bench", "--db", db], env, by_name, store, ok=(0, 1))
    run(["history", "baseline", "set", "golden", "2", "--db", db], env)
    doc_of(["history", "baseline", "list", "--json", "--db", db], env, by_name, store)
    doc_of(["history", "compare", "--baseline", "golden", "--json", "--db", db], env, by_name, store, ok=(0, 1))
    doc_of(["history", "export", "--format", "json", "--db", db], env, by_name, store)
    doc_of(["history", "samples", "latest", "--json", "--db", db], env, by_name, store)
    doc_of(["history", "gc", "--keep", "100", "--json", "--db", db], env, by_name, store)

    # watch: one snapshot, and the job doctor on a process that holds no GPU
    doc_of(["watch", "--once", "--json"], env, by_name, store, ok=(0, 1))
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        doc_of(["watch", "--pid", str(sleeper.pid), "--diagnose", "1", "--json"], env, by_name, store, ok=(0, 1))
    finally:
        sleeper.kill()
        sleeper.wait()

    # tune from recorded probe documents
    for fx in sorted(glob.glob(os.path.join(SRC, "tests", "fixtures", "tune", "*.json"))):
        doc_of(["tune", "--from", fx, "--json", "--no-history"], env, by_name, store, ok=(0, 1))
    doc_of(["tune", "--list", "--json", "--db", db], env, by_name, store, name="tune --list --json")

    # diag --merge of this run and a scenario's
    if diag:
        mine = os.path.join(tmp, "diag-a.json")
        with open(mine, "w") as f:
            json.dump(diag, f)
        others = [p for p in glob.glob(os.path.join(SCENARIO_DOCS, "8*.json"))
                  if json.load(open(p)).get("schema") == "gpuvet.diag/1"][:2]
        doc_of(["diag", "--merge", mine] + others + ["--json"], env, by_name, store, ok=(0, 1))

    # env on a machine tree with a toolkit, env use, env --scan
    root = os.path.join(tmp, "root")
    for d in ("usr/local/cuda-12.4/bin", "usr/local/cuda-12.4/lib64", "usr/local/cuda-12.4/include", "opt/x"):
        os.makedirs(os.path.join(root, d))
    with open(os.path.join(root, "usr/local/cuda-12.4/version.json"), "w") as f:
        json.dump({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}, f)
    for lib in ("usr/local/cuda-12.4/lib64/libcudart.so.12.4.127", "opt/x/libcudnn.so.9.1.0"):
        open(os.path.join(root, lib), "w").close()
    renv = dict(env, PATH="/usr/bin:/bin")
    doc_of(["--root", root, "env", "--json"], renv, by_name, store)
    doc_of(["--root", root, "env", "use", "12.4", "--json"], renv, by_name, store)
    doc_of(["--root", root, "env", "--scan", "/opt", "/usr/local", "--json"], renv, by_name, store)
    doc_of(["--root", root, "fix", "--json", "--fast"], env, by_name, store, ok=(0, 1))
    doc_of(["explain", "--json", "--fast", "CUDA error: out of memory"], env, by_name, store, ok=(0, 1))
    doc_of(["explain", "--list", "--json"], env, by_name, store)


def main():
    by_name, store = load_schemas()
    written = set()
    for path in glob.glob(os.path.join(SRC, "src", "**", "*.c"), recursive=True):
        with open(path, encoding="utf-8", errors="replace") as f:
            written.update(re.findall(r'"(gpuvet\.[a-z][a-z.-]*/\d+)"', f.read()))
    written.discard("gpuvet.tune-probe/1")  # the probe's own document: data/tune_torch.py writes it
    for name in sorted(written - set(by_name)):
        fail("src/ writes documents of schema %s, and schemas/ has no file for it" % name)
    for name in sorted(set(by_name) - written):
        if not by_name[name][1].get("x-gpuvet-command"):
            fail("schemas/ has %s, which src/ never writes" % name)
    not_vacuous(by_name, store)
    scenario_documents(by_name, store)
    tmp = tempfile.mkdtemp(prefix="gpuvet-schemas-")
    try:
        own_documents(by_name, store, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for name in sorted(set(by_name) - set(validated)):
        fail("no document of schema %s was validated" % name)
    print("validated: " + ", ".join("%s %d" % (k, v) for k, v in sorted(validated.items())))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok: every document is valid against its schema")
    return 0


if __name__ == "__main__":
    sys.exit(main())
