#!/usr/bin/env python3
"""contrib/ against what gpuvet serve really exposes: the alert rules pass promtool (check and
unit tests), every gpuvet_* name in the rules and the Grafana dashboard is a family the
exporter serves, every panel of our dashboard shows series from a real scrape (promtool
evaluates each target), the DCGM names and labels of Grafana dashboard 12239 are there with
--dcgm-compat, and the DaemonSet manifest is what the docs say.

The scrape is of a machine with everything the dashboard shows: the fake NVML's 8 GPUs with GPM,
NVLink (a link down), MIG, processes, an Xid, a power cap, and a --root tree (GPUVET_ROOT) in
which a pod and a Slurm job hold GPUs and the kubelet's checkpoint (tests/fixtures/kubelet)
allocates a GPU to a pod that does not use it."""
import json
import os
import re
import shutil
import subprocess

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
# every reading supported, so that every family is served (page retirement is pre-Ampere only)
CONFIG = ("device_count = 8\ngpu.2.xid = 79\ngpu.1.processes = 4242:python:3GiB\ngpu.5.pcie_width = 8\n"
          "xid_wait_max_ms = 20\ngpu.*.retired_sbe = 0\ngpu.*.retired_dbe = 0\ngpu.*.retired_pending = 0\n"
          "gpu.*.fan = 30\ngpu.*.gpm = 1\ngpu.*.gpm.sm_active = 40\ngpu.0.nvlink.count = 4\n"
          "gpu.0.nvlink.3.state = inactive\ngpu.0.nvlink.tx_kib = 1024\ngpu.6.mig_mode = 1\ngpu.6.mig.count = 2\n"
          "gpu.5.processes = 5151:bert:1GiB\ngpu.1.process_sm_util = 4242:30\ngpu.3.clock_reasons = 0x4\n")
POD_UID = "5f1c2b9e-1234-4abc-9def-0123456789ab"  # pod A of tests/fixtures/kubelet/make_checkpoint.py


def machine_root():
    """The --root tree: pod A's process 4242 (GPU 1; its checkpoint entry allocates GPU 0, which it
    does not use), Slurm job 5151 on GPU 5."""
    root = os.path.join(gvtest.tmpdir(), "root")
    files = {
        "proc/4242/cgroup": "0::/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope\n"
                            % (POD_UID.replace("-", "_"), "ab" * 32),
        "proc/5151/cgroup": "0::/system.slice/slurmstepd.scope/job_5151/step_0/user/task_0\n",
        "proc/5151/environ": "SLURM_JOB_ID=5151\0SLURM_JOB_USER=alice\0",
        "var/log/pods/research_trainer-7d9f_%s/trainer/0.log" % POD_UID: "",
        "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint":
            open(os.path.join(TOP, "tests", "fixtures", "kubelet", "kubelet_internal_checkpoint")).read(),
    }
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    return root
# what dashboard 12239 queries (both its published revisions): names, and labels besides
# instance, which Prometheus adds. Its panels themselves are evaluated with promtool by
# test_dcgm_dashboard.py (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE among them, from GPM).
DCGM_12239 = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
              "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
DCGM_LABELS = ["gpu", "UUID", "Hostname"]


def families(extra):
    env, _ = gvtest.fake_env(FAKE, CONFIG, {"GPUVET_ROOT": machine_root()})
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "3600", "--processes"] + extra)
    try:
        def full():
            st, _, body = gvtest.http(srv.port)
            t = body.decode()
            return t if (st == 200 and "gpuvet_finding" in t and 'xid="79"' in t and "gpuvet_gpu_sm_active_ratio{" in t
                         and "gpuvet_gpu_owner_info{" in t) else None
        text = gvtest.wait_for(full, 15, "a scrape with the check's findings and the Xid")
    finally:
        srv.stop()
    names = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    return names, text


def names_in(text):
    # a name followed by ".*" is a pattern (gpuvet_process_.*), not a family
    return set(re.findall(r"\b(gpuvet_[a-z_]+)(?!\.\*)\b", text))


def test_alert_rules():
    rules = os.path.join(TOP, "contrib", "prometheus", "gpuvet-alerts.yml")
    if shutil.which("promtool") is None:
        print("  promtool is not installed")
        return gvtest.SKIP
    r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True)
    check(r.returncode == 0, "promtool check rules: %s" % (r.stdout + r.stderr).decode())
    for t in ("gpuvet-alerts.test.yml", "gpuvet-alerts-turnover.test.yml"):
        r = subprocess.run(["promtool", "test", "rules", os.path.join(TOP, "tests", "contrib", t)], capture_output=True)
        check(r.returncode == 0, "promtool test rules %s: %s" % (t, (r.stdout + r.stderr).decode()))


def test_names_exist():
    served, _ = families([])
    for path in ("contrib/prometheus/gpuvet-alerts.yml", "contrib/grafana/gpuvet-dashboard.json", "docs/fleet.md"):
        text = open(os.path.join(TOP, path)).read()
        used = names_in(text)
        check(used, "no gpuvet names found in %s" % path)
        missing = sorted(n for n in used if n not in served and n.rstrip("_") not in served)
        check(not missing, "%s uses names the exporter does not serve: %s" % (path, missing))
    dash = json.load(open(os.path.join(TOP, "contrib", "grafana", "gpuvet-dashboard.json")))
    check(dash["uid"] and all("targets" in p or p["type"] == "row" for p in dash["panels"]), "dashboard panels")


# Panels that show nothing on the test's machine, and why (a healthy exporter, a check that finds
# nothing that fails on it)
EMPTY_BY_DESIGN = {
    "Exporters down": "every target is up",
    "Failing check findings": "the check fails on nothing here",
}


def test_dashboard_panels_render():
    """Every target of every panel, its variables as "All", evaluated by promtool over 15 minutes of
    the scrape (the instance and job labels Prometheus adds): each shows at least one series."""
    if shutil.which("promtool") is None:
        print("  promtool is not installed")
        return gvtest.SKIP
    _, text = families(["--processes"])
    series = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, _, val = line.rpartition(" ")
            name, brace, rest = head.partition("{")
            labels = 'instance="n1:10134",job="gpuvet"' + ("," + rest[:-1] if brace and rest[:-1] else "")
            series.append("      - series: '%s{%s}'\n        values: '%sx15'\n" % (name, labels.replace("'", "''"), val))
    series.append("      - series: 'up{instance=\"n1:10134\",job=\"gpuvet\"}'\n        values: '1x15'\n")
    dash = json.load(open(os.path.join(TOP, "contrib", "grafana", "gpuvet-dashboard.json")))
    tests, shown = [], []
    for p in dash["panels"]:
        for t in p.get("targets", []):
            expr = t["expr"].replace("$instance", ".*").replace("$gpu", ".*")
            if p["title"] in EMPTY_BY_DESIGN:
                continue
            shown.append((p["title"], expr))
            tests.append("      - expr: '(count(%s) > bool 0)'\n        eval_time: 15m\n        exp_samples:\n"
                         "          - labels: '{}'\n            value: 1\n" % expr.replace("'", "''"))
    check(len(shown) >= 40, "the dashboard has %d targets" % len(shown))
    path = os.path.join(gvtest.tmpdir(), "dashboard.test.yml")
    with open(path, "w") as f:
        f.write("evaluation_interval: 1m\ntests:\n  - interval: 1m\n    input_series:\n" + "".join(series)
                + "    promql_expr_test:\n" + "".join(tests))
    r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, timeout=120)
    out = (r.stdout + r.stderr).decode()
    check(r.returncode == 0, "promtool test rules: a panel of the dashboard shows nothing:\n%s" % out[-4000:])


def test_dcgm_dashboard_12239():
    served, text = families(["--dcgm-compat"])
    for name in DCGM_12239:
        check(name in served, "dashboard 12239 needs %s" % name)
        line = next(l for l in text.splitlines() if l.startswith(name + "{"))
        for label in DCGM_LABELS:
            check(re.search(r"[{,]%s=\"" % label, line), "%s lacks the label %s: %s" % (name, label, line))
    # its template variables: label_values(DCGM_FI_DEV_FB_FREE, Hostname), label_values(DCGM_FI_DEV_GPU_TEMP, gpu)
    check(re.search(r'^DCGM_FI_DEV_FB_FREE\{[^}]*Hostname="', text, re.M), "Hostname on DCGM_FI_DEV_FB_FREE")


def test_daemonset():
    try:
        import yaml
    except ImportError:
        print("  PyYAML is not installed")
        return gvtest.SKIP
    docs = list(yaml.safe_load_all(open(os.path.join(TOP, "contrib", "kubernetes", "gpuvet-daemonset.yaml"))))
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    pod = ds["spec"]["template"]
    c = pod["spec"]["containers"][0]
    check(c["args"][0] == "serve" and "--listen=:10134" in c["args"], "container args: %s" % c["args"])
    check(c["ports"][0]["containerPort"] == 10134, "port")
    check(c["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness probe")
    check(pod["metadata"]["annotations"]["prometheus.io/port"] == "10134", "scrape annotation")
    check(ds["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(), "selector matches the pod")
    check(any(e["name"] == "NODE_NAME" for e in c["env"]), "NODE_NAME for the Hostname label")


def test_diag_recipes():
    try:
        import yaml
    except ImportError:
        print("  PyYAML is not installed")
        return gvtest.SKIP
    docs = list(yaml.safe_load_all(open(os.path.join(TOP, "contrib", "kubernetes", "gpuvet-diag.yaml"))))
    job = next(d for d in docs if d["kind"] == "Job")
    spec = job["spec"]["template"]["spec"]
    diag = spec["initContainers"][0]
    check("gpuvet diag -r 2 --json" in diag["args"][0], "the Job runs level 2 with JSON: %s" % diag["args"])
    mark = spec["containers"][0]
    check("kubectl taint node" in mark["args"][0] and "gpuvet.io/diag=failed:NoSchedule" in mark["args"][0], "taint on failure")
    check(spec["serviceAccountName"] == "gpuvet-diag", "the Job's service account")
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    check(any("nodes" in r["resources"] and "patch" in r["verbs"] for r in role["rules"]), "RBAC: patch nodes")
    binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding")
    check(binding["subjects"][0]["name"] == "gpuvet-diag" and binding["roleRef"]["name"] == "gpuvet-diag", "binding")
    pod = next(d for d in docs if d["kind"] == "Pod")
    init = pod["spec"]["initContainers"][0]
    check(init["args"][:3] == ["diag", "-r", "1"], "the init container runs level 1: %s" % init["args"])
    # every diag command line of the recipes parses: gpuvet diag --help accepts the options used
    out = subprocess.run([GPUVET, "diag", "--help"], capture_output=True, text=True).stdout
    for opt in ("--json", "--no-history", "--no-progress", "-r, --level"):
        check(opt in out, "diag --help has %s" % opt)


def test_systemd_unit():
    unit = os.path.join(TOP, "contrib", "systemd", "gpuvet-exporter.service")
    text = open(unit).read()
    check("ExecStart=/usr/local/bin/gpuvet serve" in text, "ExecStart")
    if shutil.which("systemd-analyze") is None:
        return
    r = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True)
    # the binary and its man page are not installed here; any other complaint is a mistake in the unit
    other = [l for l in (r.stdout + r.stderr).decode().splitlines()
             if l and "is not executable" not in l and "man gpuvet(1)" not in l]
    check(not other, "systemd-analyze verify: %s" % other)


gvtest.run([test_alert_rules, test_names_exist, test_dashboard_panels_render, test_dcgm_dashboard_12239, test_daemonset, test_diag_recipes, test_systemd_unit])
