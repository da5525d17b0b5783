#!/usr/bin/env python3
"""contrib/ against what gpuvet serve really exposes: the alert rules pass promtool (check and
unit tests), every gpuvet_* name in the rules and the Grafana dashboard is a family the
exporter serves, the DCGM names and labels of Grafana dashboard 12239 are there with
--dcgm-compat, and the DaemonSet manifest is what the docs say."""
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
          "gpu.*.fan = 30\n")
# what dashboard 12239 queries (both its published revisions): names, and labels besides
# instance, which Prometheus adds. Its panels themselves are evaluated with promtool by
# test_dcgm_dashboard.py (DCGM_FI_PROF_PIPE_TENSOR_ACTIVE among them, from GPM).
DCGM_12239 = ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_GPU_UTIL",
              "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
DCGM_LABELS = ["gpu", "UUID", "Hostname"]


def families(extra):
    env, _ = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "3600", "--processes"] + extra)
    try:
        def full():
            st, _, body = gvtest.http(srv.port)
            t = body.decode()
            return t if st == 200 and "gpuvet_finding" in t and 'xid="79"' in t else None
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
    r = subprocess.run(["promtool", "test", "rules", os.path.join(TOP, "tests", "contrib", "gpuvet-alerts.test.yml")],
                       capture_output=True)
    check(r.returncode == 0, "promtool test rules: %s" % (r.stdout + r.stderr).decode())


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


gvtest.run([test_alert_rules, test_names_exist, test_dcgm_dashboard_12239, test_daemonset, test_systemd_unit])
