#!/usr/bin/env python3
"""The DCGM Grafana dashboard (12239, "NVIDIA DCGM Exporter Dashboard") works from gpuvet alone
(issue 13). There is no Grafana here, so the test does what Grafana would: it takes every panel's
PromQL target and every template variable's query (tests/contrib/dcgm-dashboard-12239.tsv, where
they came from is written there), substitutes the variables as Grafana does for "All" and for
each single GPU, and evaluates them with `promtool test rules` over the series of a real
`gpuvet serve --dcgm-compat` scrape of the fake NVML (with the instance and job labels
Prometheus adds). A panel passes when it shows one line per selected GPU (its legend's labels), one series
each, with the value the fake GPU has, in the dashboard's unit; an aggregate panel when its one value
is the right one; a variable when it lists every GPU and the instance. An empty panel fails.
The test also shows that it can fail: the same run without the tensor-activity family must fail.

  test_dcgm_dashboard.py GPUVET FAKE_NVML                       the test
  test_dcgm_dashboard.py GPUVET FAKE_NVML --scrape FILE         a saved scrape (a real GPU's)
"""
import json
import os
import re
import subprocess
import sys

import gvtest
from gvtest import check

GPUVET, FAKE = gvtest.args()
HERE = os.path.dirname(os.path.abspath(__file__))
DASHBOARD = os.path.join(HERE, "..", "contrib", "dcgm-dashboard-12239.tsv")
INSTANCE, JOB = "node-9:10134", "gpuvet"

# Three Hopper GPUs (GPM on), each with values of its own and none that changes between calls
GPUS = [
    dict(temp=41, power_w=120, sm=1980, mem_clock=3201, util=10, util_mem=3, used_mib=1024, total_mib=143771, tensor=0.25),
    dict(temp=44, power_w=450, sm=1755, mem_clock=2619, util=55, util_mem=20, used_mib=20480, total_mib=143771, tensor=0.5),
    dict(temp=47, power_w=690, sm=1410, mem_clock=3201, util=90, util_mem=61, used_mib=71680, total_mib=143771, tensor=0.91),
]
CONFIG = "device_count = %d\n" % len(GPUS) + "".join(
    "gpu.{i}.temperature = {temp}\ngpu.{i}.power_mw = {mw}\ngpu.{i}.sm_clock = {sm}\ngpu.{i}.mem_clock = {mem_clock}\n"
    "gpu.{i}.util_gpu = {util}\ngpu.{i}.util_memory = {util_mem}\ngpu.{i}.memory_used = {used_mib}MiB\n"
    "gpu.{i}.memory_total = {total_mib}MiB\ngpu.{i}.gpm = 1\ngpu.{i}.gpm.tensor_active = {tpct}\n".format(
        i=i, mw=g["power_w"] * 1000, tpct=round(g["tensor"] * 100), **g) for i, g in enumerate(GPUS))

# What each panel's metric is on a GPU, in the dashboard's unit (the panels' own arithmetic,
# such as "* 1000000" for the clocks, is applied by PromQL, not here)
VALUE = {
    "DCGM_FI_DEV_GPU_TEMP": lambda g: g["temp"],
    "DCGM_FI_DEV_POWER_USAGE": lambda g: g["power_w"],
    "DCGM_FI_DEV_SM_CLOCK": lambda g: g["sm"],
    "DCGM_FI_DEV_MEM_CLOCK": lambda g: g["mem_clock"],
    "DCGM_FI_DEV_GPU_UTIL": lambda g: g["util"],
    "DCGM_FI_DEV_MEM_COPY_UTIL": lambda g: g["util_mem"],
    "DCGM_FI_DEV_FB_USED": lambda g: g["used_mib"],
    "DCGM_FI_DEV_FB_FREE": lambda g: g["total_mib"] - g["used_mib"],
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": lambda g: g["tensor"],
}


def dashboard():
    rows = []
    for line in open(DASHBOARD, encoding="utf-8"):
        line = line.rstrip("\n")
        if line and not line.startswith("#"):
            kind, rev, name, legend, expr = line.split("\t")
            rows.append(dict(kind=kind, rev=rev, name=name, legend=legend, expr=expr))
    return rows


def grafana_value(values):
    """A variable's value in a regex matcher, as Grafana's Prometheus data source writes it:
    regex characters escaped with a backslash that is itself escaped for the PromQL string; one
    value alone, several (or "All" without an allValue) as (a|b|c)."""
    esc = [re.sub(r"([$^*{}\[\]'+?.()|])", r"\\\\\1", v.replace("\\", "\\\\\\\\")) for v in values]
    return esc[0] if len(esc) == 1 else "(" + "|".join(esc) + ")"


def substitute(expr, variables):
    for name, values in variables.items():
        v = grafana_value(values)
        expr = expr.replace("${%s}" % name, v).replace("$%s" % name, v)
    check("$" not in expr, "a variable left in %r" % expr)
    return expr


LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


def samples(text):
    """[(name, {label: value}, value)] of a text exposition (label values unescaped)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, val = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels = {}
        rest = rest.rstrip("}")
        pos = 0
        while pos < len(rest):
            m = LABEL.match(rest, pos)
            check(m is not None, "cannot read the labels of %r" % line)
            labels[m.group(1)] = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
            pos = m.end()
        out.append((name, labels, float(val)))
    return out


def series_text(name, labels):
    esc = lambda v: v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return name + "{" + ",".join('%s="%s"' % (k, esc(v)) for k, v in sorted(labels.items())) + "}"


def legend_labels(legend):
    return re.findall(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}", legend)


def metric_of(expr):
    m = re.search(r"(DCGM_FI_[A-Z0-9_]+)", expr)
    check(m is not None, "no DCGM field in %r" % expr)
    return m.group(1)


def expectations(rows, gpus_selected, ngpus=len(GPUS), values=True):
    """promql_expr_tests for every variable and panel with the GPUs in gpus_selected chosen;
    values=False (a scrape of a real GPU) checks the series but not their values."""
    variables = {"instance": [INSTANCE], "gpu": [str(i) for i in gpus_selected]}
    tests = []
    for r in rows:
        if r["kind"] == "var":
            m = re.fullmatch(r"label_values\((?:([A-Za-z_:][A-Za-z0-9_:]*),\s*)?([a-zA-Z_][a-zA-Z0-9_]*)\)", r["expr"])
            check(m is not None, "variable query %r" % r["expr"])
            metric, label = m.group(1), m.group(2)
            selector = metric if metric else '{%s!=""}' % label
            want = [INSTANCE] if label == "instance" else [str(i) for i in range(ngpus)]
            tests.append(dict(what="variable %s (%s)" % (r["name"], r["expr"]),
                              expr="group by (%s) (%s)" % (label, selector),
                              exp=[({label: v}, 1) for v in want]))
            continue
        expr = substitute(r["expr"], variables)
        metric = metric_of(expr)
        by = legend_labels(r["legend"])
        what = "panel %r [%s] gpu=~%s" % (r["name"], r["rev"], grafana_value(variables["gpu"]))
        if not values:
            tests.append(dict(what=what, expr="count by (%s) (%s)" % (",".join(by), expr),
                              exp=[({"gpu": str(i)} if by else {}, 1) for i in (gpus_selected if by else [0])]))
            continue
        per_gpu = [VALUE[metric](GPUS[i]) * (1e6 if "* 1000000" in expr else 1) for i in gpus_selected]
        if by:
            check(by == ["gpu"], "%s: a legend of labels the test does not know: %s" % (what, by))
            tests.append(dict(what=what, expr="sum by (gpu) (%s)" % expr,
                              exp=[({"gpu": str(i)}, v) for i, v in zip(gpus_selected, per_gpu)]))
            # one line per GPU, not two series that a legend would show as the same GPU
            tests.append(dict(what=what + " (one series each)", expr="count by (gpu) (%s)" % expr,
                              exp=[({"gpu": str(i)}, 1) for i in gpus_selected]))
        else:
            agg = expr.split("(", 1)[0]
            check(agg in ("avg", "sum"), "%s: an aggregate the test does not know: %s" % (what, agg))
            tests.append(dict(what=what, expr=expr, exp=[({}, sum(per_gpu) / (len(per_gpu) if agg == "avg" else 1))]))
    return tests


def promtool_file(path, scraped, tests):
    series = []
    for name, labels, v in scraped:
        if v != v:  # NaN: no value a test could compare
            continue
        labels = dict(labels, instance=INSTANCE, job=JOB)
        series.append({"series": series_text(name, labels), "values": " ".join([repr(v)] * 3)})
    doc = {
        "rule_files": [],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": series,
            "promql_expr_test": [{
                "expr": t["expr"], "eval_time": "2m",
                "exp_samples": [{"labels": series_text("", l), "value": v} for l, v in t["exp"]],
            } for t in tests],
        }],
    }
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)  # JSON is YAML


def run_promtool(path):
    r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, timeout=120)
    return r.returncode, (r.stdout + r.stderr).decode("utf-8", "replace")


def scrape_dcgm():
    env, cfg = gvtest.fake_env(FAKE, CONFIG)
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0", "--dcgm-compat", "--hostname", "node-9"])
    try:
        def ready():
            st, _, body = gvtest.http(srv.port)
            t = body.decode()
            return t if st == 200 and "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" in t else None
        return gvtest.wait_for(ready, 15, "a --dcgm-compat scrape with GPM")
    finally:
        srv.stop()
        os.unlink(cfg)


def have_promtool():
    try:
        subprocess.run(["promtool", "--version"], capture_output=True, timeout=30)
        return True
    except FileNotFoundError:
        return False


def test_every_panel_renders():
    if not have_promtool():
        print("promtool missing (Debian's prometheus package): skipped")
        return gvtest.SKIP
    rows = dashboard()
    check(sum(r["kind"] == "panel" for r in rows) == 11 and sum(r["kind"] == "var" for r in rows) == 3,
          "the dashboard extract has %d rows" % len(rows))
    scraped = samples(scrape_dcgm())
    # "All" and each GPU alone, as a user would pick them
    selections = [list(range(len(GPUS)))] + [[i] for i in range(len(GPUS))]
    tests = [t for sel in selections for t in expectations(rows, sel)]
    path = os.path.join(gvtest.tmpdir(), "dashboard.test.yml")
    promtool_file(path, scraped, tests)
    rc, out = run_promtool(path)
    check(rc == 0, "promtool test rules: the dashboard does not render from gpuvet's series:\n%s" % out[-4000:])

    # the test can fail: without the tensor family the Tensor Core panel is empty
    path2 = os.path.join(gvtest.tmpdir(), "dashboard-no-tensor.test.yml")
    promtool_file(path2, [s for s in scraped if s[0] != "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"], tests)
    rc, out = run_promtool(path2)
    check(rc != 0 and "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE" in out,
          "promtool passed a dashboard whose tensor panel has no series: %s" % out[-2000:])


# dcgm-exporter's etc/default-counters.csv (github.com/NVIDIA/dcgm-exporter, main d5e5f510): the
# fields NVML gives. Left out, as docs/serve.md says: DCGM_FI_DEV_MEMORY_TEMP, _PCIE_REPLAY_COUNTER,
# _NVLINK_BANDWIDTH_TOTAL, _VGPU_LICENSE_STATUS.
DEFAULT_COUNTERS = [
    "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
    "DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
    "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
]
DCGM_LABELS = {"gpu", "UUID", "pci_bus_id", "device", "Hostname", "DCGM_FI_DRIVER_VERSION", "modelName"}


def test_default_counters():
    """Every default counter NVML can give, for every GPU, with exactly dcgm-exporter's labels."""
    env, cfg = gvtest.fake_env(FAKE, CONFIG + "gpu.1.memory_reserved = 512MiB\ngpu.2.encoder_util = 12\n"
                                            "gpu.2.decoder_util = 35\n")
    srv = gvtest.Server(GPUVET, env, ["--interval", "0.2", "--check-interval", "0", "--dcgm-compat", "--dcgm-model-name",
                                      "--hostname", "node-9"])
    try:
        def ready():
            st, _, body = gvtest.http(srv.port)
            t = body.decode()
            return t if st == 200 and "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{" in t else None
        scraped = samples(gvtest.wait_for(ready, 15, "a --dcgm-compat scrape with GPM"))
    finally:
        srv.stop()
        os.unlink(cfg)
    for name in DEFAULT_COUNTERS:
        got = [(l, v) for n, l, v in scraped if n == name]
        check(sorted(l["gpu"] for l, _ in got) == [str(i) for i in range(len(GPUS))], "%s: GPUs %s" % (name, got))
        # the Xid field also has dcgm-exporter's err_code and err_msg (the last code, 0 for none)
        want = DCGM_LABELS | ({"err_code", "err_msg"} if name == "DCGM_FI_DEV_XID_ERRORS" else set())
        for l, v in got:
            check(set(l) == want, "%s: labels %s, dcgm-exporter's are %s" % (name, sorted(l), sorted(want)))
            check(name != "DCGM_FI_DEV_XID_ERRORS" or (l["err_code"] == "%d" % v and l["err_msg"] == "No Error"),
                  "%s: err_code and err_msg of %s: %s" % (name, v, l))
            check(l["Hostname"] == "node-9" and l["modelName"] == "NVIDIA H200" and l["device"] == "nvidia" + l["gpu"]
                  and l["DCGM_FI_DRIVER_VERSION"] == "580.159.04", "%s: label values %s" % (name, l))
    reserved = {l["gpu"]: v for n, l, v in scraped if n == "DCGM_FI_DEV_FB_RESERVED"}
    check(reserved.get("1") == 512 and reserved.get("0") == 0, "DCGM_FI_DEV_FB_RESERVED in MiB: %s" % reserved)
    codec = {(n, l["gpu"]): v for n, l, v in scraped if n in ("DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL")}
    check(codec.get(("DCGM_FI_DEV_ENC_UTIL", "2")) == 12 and codec.get(("DCGM_FI_DEV_DEC_UTIL", "2")) == 35
          and codec.get(("DCGM_FI_DEV_ENC_UTIL", "0")) == 0, "encoder/decoder utilization in %%: %s" % codec)
    ours = {(n, l["gpu"]): v for n, l, v in scraped if n.startswith("gpuvet_gpu_") and "coder_utilization" in n}
    check(abs(ours.get(("gpuvet_gpu_encoder_utilization_ratio", "2"), -1) - 0.12) < 1e-9
          and abs(ours.get(("gpuvet_gpu_decoder_utilization_ratio", "2"), -1) - 0.35) < 1e-9,
          "gpuvet's encoder/decoder ratios: %s" % ours)


def check_saved_scrape(path):
    """The same panels over a scrape saved elsewhere (scripts/device/servefast.sh saves one of
    the real GPU): one series per GPU in every panel, values not compared. Prints promtool's
    verdict; exit 0 when every panel renders."""
    scraped = samples(open(path, encoding="utf-8").read())
    gpus = sorted({int(l["gpu"]) for n, l, _ in scraped if n == "DCGM_FI_DEV_GPU_TEMP"})
    check(gpus == list(range(len(gpus))) and gpus, "GPUs of DCGM_FI_DEV_GPU_TEMP in %s: %s" % (path, gpus))
    rows = dashboard()
    tests = [t for sel in [gpus] + [[i] for i in gpus] for t in expectations(rows, sel, len(gpus), values=False)]
    out = os.path.join(gvtest.tmpdir(), "saved.test.yml")
    promtool_file(out, scraped, tests)
    rc, text = run_promtool(out)
    print("%d GPUs, %d panel and variable checks: %s" % (len(gpus), len(tests), "every panel renders" if rc == 0 else "FAILED"))
    if rc != 0:
        print(text[-4000:])
    return rc


if len(sys.argv) > 3 and sys.argv[3] == "--scrape":
    sys.exit(1 if check_saved_scrape(sys.argv[4]) else 0)
gvtest.run([test_every_panel_renders, test_default_counters])
