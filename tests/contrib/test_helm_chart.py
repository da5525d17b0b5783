#!/usr/bin/env python3
"""contrib/helm/gpuvet and contrib/kubernetes against the Kubernetes schemas, offline.

    test_helm_chart.py [GPUVET]

The chart is rendered by tests/tools/render_chart.py (a renderer of the subset of Helm's
template language that the chart keeps to) with its default values, with every option on
(tests/contrib/helm-values-all.yaml), with the optional parts off (helm-values-minimal.yaml)
and with --set; each object is validated against its JSON Schema (tests/tools/k8s_schema.py:
Kubernetes' own OpenAPI definitions for the built-in kinds, this project's schemas for the
ServiceMonitor and PrometheusRule; tests/k8s-schemas/README.md), then checked for what the
schemas cannot say: names and labels as the API server wants them, selectors that select the
pods, ports and volumes that exist, the PrometheusRule's rules equal to
contrib/prometheus/gpuvet-alerts.yml's, --dcgm-compat only when asked, the init container
running diag with the level. With GPUVET, every gpuvet option the chart passes must be in that
command's --help. With helm on PATH (or $HELM), helm lint passes and helm template renders the
same objects as the renderer; without it that part is reported as not run. The manifests of
contrib/kubernetes are validated the same way.

Exit 77 (skipped) without PyYAML or python3-jsonschema (scripts/install-deps.sh --test)."""
import copy
import json
import os
import re
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "tools"))
sys.path.insert(0, os.path.join(TOP, "tests", "integration"))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

try:
    import yaml
    import jsonschema
except ImportError as e:
    print("SKIP: %s: the chart test needs python3-yaml and python3-jsonschema (scripts/install-deps.sh --test)" % e)
    sys.exit(gvtest.SKIP)

import k8s_schema  # noqa: E402
import render_chart  # noqa: E402

CHART = os.path.join(TOP, "contrib", "helm", "gpuvet")
ALERTS = os.path.join(TOP, "contrib", "prometheus", "gpuvet-alerts.yml")
VALUES_ALL = os.path.join(TOP, "tests", "contrib", "helm-values-all.yaml")
VALUES_MIN = os.path.join(TOP, "tests", "contrib", "helm-values-minimal.yaml")
GPUVET = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else None
NS = "monitoring"
SCHEMAS = k8s_schema.Validators()
HELM = os.environ.get("HELM") or shutil.which("helm")

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
PORT_NAME = re.compile(r"^(?=.*[a-z])[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")


def render(values_files=(), sets=(), name="gpuvet"):
    """{(kind, name): object} of the chart rendered by tests/tools/render_chart.py."""
    try:
        text = render_chart.Renderer(CHART, name, NS, list(values_files), list(sets)).manifest()
    except render_chart.TemplateError as e:
        raise gvtest.Fail("render_chart.py: %s" % e)
    return objects(text)


def objects(text):
    out = {}
    for d in yaml.safe_load_all(text):
        if d is None:
            continue
        key = (d["kind"], d["metadata"]["name"])
        check(key not in out, "two %s named %s" % key)
        out[key] = d
    return out


def one(objs, kind):
    found = [o for (k, _), o in objs.items() if k == kind]
    check(len(found) == 1, "one %s, not %d" % (kind, len(found)))
    return found[0]


def validate(objs, what):
    errs = []
    for o in objs.values():
        errs += SCHEMAS.errors(o)
    check(not errs, "%s: %d schema errors:\n  %s" % (what, len(errs), "\n  ".join(errs)))


def check_labels(meta, what):
    for field in ("labels", "annotations"):
        for k, v in (meta.get(field) or {}).items():
            prefix, _, name = k.rpartition("/")
            check(not prefix or (len(prefix) <= 253 and DNS1123_SUBDOMAIN.match(prefix)), "%s: %s key %r" % (what, field, k))
            check(len(name) <= 63 and LABEL_NAME.match(name), "%s: %s key %r" % (what, field, k))
            check(isinstance(v, str), "%s: %s %s is not a string: %r" % (what, field, k, v))
            if field == "labels":
                check(len(v) <= 63 and LABEL_VALUE.match(v), "%s: label %s=%r is not a label value" % (what, k, v))


def check_pod(spec, what):
    """What the API server checks in a pod template beyond the schema, for what the chart uses."""
    volumes = {v["name"] for v in spec.get("volumes", [])}
    check(len(volumes) == len(spec.get("volumes", [])), "%s: two volumes of one name" % what)
    for v in volumes:
        check(len(v) <= 63 and DNS1123_LABEL.match(v), "%s: volume name %r" % (what, v))
    names = set()
    for c in spec.get("initContainers", []) + spec["containers"]:
        cw = "%s container %s" % (what, c["name"])
        check(c["name"] not in names and DNS1123_LABEL.match(c["name"]), "%s: name" % cw)
        names.add(c["name"])
        check(c.get("image"), "%s: no image" % cw)
        for m in c.get("volumeMounts", []):
            check(m["name"] in volumes, "%s: mounts %s, which is not a volume" % (cw, m["name"]))
        for e in c.get("env", []):
            check(ENV_NAME.match(e["name"]), "%s: env name %r" % (cw, e["name"]))
        ports = {p.get("name"): p["containerPort"] for p in c.get("ports", [])}
        for p, n in ports.items():
            check(p is None or (len(p) <= 15 and PORT_NAME.match(p)), "%s: port name %r" % (cw, p))
            check(1 <= n <= 65535, "%s: port %s" % (cw, n))
        for probe in ("livenessProbe", "readinessProbe"):
            port = c.get(probe, {}).get("httpGet", {}).get("port")
            if isinstance(port, str):
                check(port in ports, "%s: %s on port %s, which the container does not name" % (cw, probe, port))
    for t in spec.get("tolerations", []):
        check(t.get("operator", "Equal") in ("Equal", "Exists"), "%s: toleration operator %s" % (what, t))
        check(t.get("effect", "") in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"), "%s: effect %s" % (what, t))


def check_objects(objs, what):
    """The semantic checks every rendering must pass; the DaemonSet's pod spec returned."""
    validate(objs, what)
    for (kind, name), o in objs.items():
        ow = "%s: %s %s" % (what, kind, name)
        # a Service's name is a DNS-1035 label; the others here DNS-1123 subdomains, 63 at most
        check(len(name) <= 63 and (DNS1035_LABEL if kind == "Service" else DNS1123_SUBDOMAIN).match(name), "%s: name" % ow)
        check(o["metadata"].get("namespace") == NS, "%s: namespace %s" % (ow, o["metadata"].get("namespace")))
        check_labels(o["metadata"], ow)
    ds = one(objs, "DaemonSet")
    pod = ds["spec"]["template"]
    check_labels(pod["metadata"], what + ": the pod template")
    sel = ds["spec"]["selector"]["matchLabels"]
    check(sel.items() <= pod["metadata"]["labels"].items(), "%s: the DaemonSet's selector does not select its pods" % what)
    check_pod(pod["spec"], what + ": the pod")
    svc = one(objs, "Service")
    check(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "%s: the Service selects no pod" % what)
    c = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    for p in svc["spec"]["ports"]:
        check(p["targetPort"] in ports, "%s: the Service's targetPort %s is no container port" % (what, p["targetPort"]))
    listen = [a for a in c["args"] if a.startswith("--listen=")]
    check(listen == ["--listen=:%d" % ports["metrics"]], "%s: --listen and the container port: %s %s" % (what, listen, ports))
    check(c["args"][0] == "serve", "%s: the container runs %s" % (what, c["args"]))
    sa = pod["spec"].get("serviceAccountName")
    sas = [n for (k, n) in objs if k == "ServiceAccount"]
    check(sa in sas or (not sas and sa == "default"), "%s: serviceAccountName %s, ServiceAccounts %s" % (what, sa, sas))
    check(pod["spec"].get("automountServiceAccountToken") is False, "%s: the API token is mounted" % what)
    check(not any(k in ("ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding") for k, _ in objs),
          "%s: RBAC objects, which gpuvet serve does not need" % what)
    sm = [o for (k, _), o in objs.items() if k == "ServiceMonitor"]
    for m in sm:
        check(m["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
              "%s: the ServiceMonitor selects no Service" % what)
        check(m["spec"]["namespaceSelector"]["matchNames"] == [NS], "%s: the ServiceMonitor's namespaces" % what)
        for e in m["spec"]["endpoints"]:
            check(e["port"] in [p["name"] for p in svc["spec"]["ports"]], "%s: the ServiceMonitor's port %s" % (what, e["port"]))
    if GPUVET:
        options_known(c["args"], "serve", what)
        for ic in pod["spec"].get("initContainers", []):
            check(ic["args"][0] == "diag", "%s: the init container runs %s" % (what, ic["args"]))
            options_known(ic["args"], "diag", what)
    return pod["spec"]


_HELP = {}


def options_known(args, command, what):
    """Every --option (and -r) of args is in `gpuvet COMMAND --help`."""
    if command not in _HELP:
        r = subprocess.run([GPUVET, command, "--help"], capture_output=True, text=True, timeout=30)
        check(r.returncode == 0, "gpuvet %s --help: exit %d" % (command, r.returncode))
        _HELP[command] = r.stdout
    for a in args[1:]:
        if a.startswith("-"):
            opt = a.split("=", 1)[0]
            pattern = r"(^|[\s,])%s([\s=,]|$)" % re.escape(opt)
            check(re.search(pattern, _HELP[command], re.M), "%s: gpuvet %s has no option %s" % (what, command, opt))


def alert_groups():
    return yaml.safe_load(open(ALERTS))["groups"]


# ---- the tests -------------------------------------------------------------------------------

def test_machinery_rejects():
    """The schemas and checks bite: a misspelt field, a number for a string, a missing required
    field, a wrong apiVersion, a PrometheusRule rule without expr, a ServiceMonitor endpoint field
    the CRD does not have."""
    objs = render([VALUES_ALL])
    ds = one(objs, "DaemonSet")
    cases = []
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["hostPid"] = True
    cases.append(("hostPid", bad))
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["containers"][0]["args"].append(2)
    cases.append(("an integer argument", bad))
    bad = copy.deepcopy(ds)
    del bad["spec"]["selector"]
    cases.append(("no selector", bad))
    bad = copy.deepcopy(ds)
    bad["apiVersion"] = "extensions/v1beta1"
    cases.append(("extensions/v1beta1", bad))
    bad = copy.deepcopy(ds)
    bad["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = ["1Gi"]
    cases.append(("a list for a quantity", bad))
    rule = copy.deepcopy(one(objs, "PrometheusRule"))
    del rule["spec"]["groups"][0]["rules"][0]["expr"]
    cases.append(("a rule without expr", rule))
    rule = copy.deepcopy(one(objs, "PrometheusRule"))
    rule["spec"]["groups"][0]["rules"][0]["record"] = "x"
    cases.append(("a rule both alert and record", rule))
    mon = copy.deepcopy(one(objs, "ServiceMonitor"))
    mon["spec"]["endpoints"][0]["scrape_interval"] = "15s"
    cases.append(("scrape_interval", mon))
    for what, o in cases:
        check(SCHEMAS.errors(o), "the schema took a DaemonSet/rule/monitor with %s" % what)
    # and the value schema: a level diag does not have, a naming gpuvet does not have
    vs = json.load(open(os.path.join(CHART, "values.schema.json")))
    base = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    for path, value in ((("diag", "level"), 5), (("metricNames",), "dcgm"), (("port",), "10134"),
                        (("serviceMonitor", "interval"), "15 s"), (("image", "repositry"), "x")):
        v = copy.deepcopy(base)
        node = v
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = value
        check(list(jsonschema.Draft7Validator(vs).iter_errors(v)), "values.schema.json took %s=%r" % (".".join(path), value))


def test_renderer():
    """render_chart.py's subset, each construct against the text Helm gives for it (each
    expected text was checked with helm 3.17.1's helm template when written), and the
    constructs outside the subset refused (Helm has range, with, printf ...; the renderer does
    not, and it refuses a missing value that Helm would print as nothing)."""
    r = render_chart.Renderer(CHART, "rel", NS, sets=["podLabels.a=1", "podLabels.b=x y", "diag.level=2"])
    cases = [
        ('a\n  {{- if .Values.hostPID }}\n  b: {{ .Release.Name }}\n  {{- end }}\n', "a\n  b: rel\n"),
        ("{{ if .Values.nope }}x{{ else }}y{{ end }}", "y"),
        ("x:\n  {{- toYaml .Values.podLabels | nindent 2 }}", "x:\n  a: 1\n  b: x y"),
        ("{{ .Values.diag.level | quote }} {{ quote .Values.metricNames }} {{ 7 | quote }}", '"2" "native" "7"'),
        ('{{ default "d" .Values.fullnameOverride }} {{ .Values.metricNames | default "d" }}', "d native"),
        ('{{ if eq .Values.metricNames "native" }}n{{ end }}{{ if not .Values.processes }}!p{{ end }}', "n!p"),
        ("{{ if and .Values.hostPID .Values.processes }}x{{ end }}{{ if or .Values.processes .Values.hostPID }}y{{ end }}", "y"),
        ('{{ include "gpuvet.fullname" . }} {{ default (include "gpuvet.fullname" .) .Values.serviceAccount.name }}', "rel rel"),
        ("{{/* a comment */}}x {{- /* trims */ -}} y", "xy"),
        ('{{ "line\\n" | indent 2 }}', "  line\n  "),
        ('{{ .Files.Get "files/none.txt" }}|', "|"),
        ("{{ .Chart.Name }}-{{ .Chart.Version }} {{ .Release.Service }} {{ .Values.port }} {{ .Values.hostPID }}",
         "gpuvet-0.1.0 Helm 10134 true"),
    ]
    for src, want in cases:
        nodes, _ = render_chart.parse(src, "case")
        got = r.render_nodes(nodes, r.root)
        check(got == want, "render_chart.py: %r gave %r, Helm gives %r" % (src, got, want))
    for src in ("{{ range .Values.tolerations }}{{ end }}", "{{ with .Values.image }}{{ end }}", "{{ $x := 1 }}",
                '{{ printf "%s" .Values.port }}', "{{ template \"x\" . }}", "{{ if .a }}{{ else if .b }}{{ end }}",
                "{{ .Values.missing }}", "{{ .Values.missing.deeper }}", "{{ .Values.podLabels }}", "{{ eq .Values.port 1 }}",
                '{{ required "needed" .Values.fullnameOverride }}'):
        try:
            nodes, _ = render_chart.parse(src, "case")
            r.render_nodes(nodes, r.root)
        except render_chart.TemplateError:
            continue
        raise gvtest.Fail("render_chart.py took %r" % src)


def test_values_schema():
    vs = json.load(open(os.path.join(CHART, "values.schema.json")))
    jsonschema.Draft7Validator.check_schema(vs)
    base = yaml.safe_load(open(os.path.join(CHART, "values.yaml")))
    for f in (None, VALUES_ALL, VALUES_MIN):
        v = render_chart.merge(base, yaml.safe_load(open(f))) if f else base
        errs = [e.message for e in jsonschema.Draft7Validator(vs).iter_errors(v)]
        check(not errs, "values.schema.json rejects %s: %s" % (f or "values.yaml", errs))


def test_default_values():
    objs = render()
    check({k for k, _ in objs} == {"DaemonSet", "Service", "ServiceAccount"}, "kinds: %s" % sorted(objs))
    spec = check_objects(objs, "default values")
    c = spec["containers"][0]
    check(c["args"] == ["serve", "--listen=:10134"], "args: %s" % c["args"])
    check("initContainers" not in spec, "an init container with diag.level 0")
    check(spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}, "nodeSelector %s" % spec.get("nodeSelector"))
    check(spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], "tolerations")
    check(spec["hostPID"] is True and spec["runtimeClassName"] == "nvidia", "hostPID, runtimeClassName")
    check(c["image"] == "REGISTRY/gpuvet:0.1.0", "image %s (the chart's appVersion)" % c["image"])
    check(c["securityContext"]["runAsNonRoot"] is True and c["securityContext"]["readOnlyRootFilesystem"] is True,
          "securityContext %s" % c["securityContext"])
    ann = one(objs, "DaemonSet")["spec"]["template"]["metadata"]["annotations"]
    check(ann == {"prometheus.io/scrape": "true", "prometheus.io/port": "10134", "prometheus.io/path": "/metrics"},
          "scrape annotations %s" % ann)
    check([m["mountPath"] for m in c["volumeMounts"]] == ["/var/log/pods", "/var/log/containers"]
          and all(m["readOnly"] for m in c["volumeMounts"]), "the kubelet's log directories, read-only")
    # the same object names as the plain manifest's DaemonSet, so docs/fleet.md's pod relabelling finds it
    plain = next(d for d in yaml.safe_load_all(open(os.path.join(TOP, "contrib", "kubernetes", "gpuvet-daemonset.yaml")))
                 if d["kind"] == "DaemonSet")
    check(spec["containers"][0]["env"] == plain["spec"]["template"]["spec"]["containers"][0]["env"],
          "the exporter's environment differs from contrib/kubernetes/gpuvet-daemonset.yaml's")
    check(one(objs, "DaemonSet")["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"] ==
          plain["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"], "the pods' name label")


def test_all_options():
    values = yaml.safe_load(open(VALUES_ALL))
    objs = render([VALUES_ALL])
    check({k for k, _ in objs} == {"DaemonSet", "Service", "ServiceAccount", "ServiceMonitor", "PrometheusRule"},
          "kinds: %s" % sorted(objs))
    spec = check_objects(objs, "every option on")
    c = spec["containers"][0]
    check(c["args"] == ["serve", "--listen=:9400", "--dcgm-compat", "--processes"] + values["extraArgs"], "args: %s" % c["args"])
    check(c["args"].count("--dcgm-compat") == 1, "--dcgm-compat once")
    check(c["image"] == "registry.example.com/gpu/gpuvet:0.1.0-test", "image %s" % c["image"])
    init = spec["initContainers"]
    check(len(init) == 1, "one init container: %s" % init)
    d = init[0]
    check(d["args"] == ["diag", "-r", "2", "--no-history", "--no-progress", "--test=deployment,memory,pcie"], "diag args %s" % d["args"])
    check(d["image"] == values["diag"]["image"], "diag image %s" % d["image"])
    env = {e["name"]: e.get("value") for e in d["env"]}
    check(env.get("NVIDIA_DRIVER_CAPABILITIES") == "compute,utility" and env.get("NVIDIA_VISIBLE_DEVICES") == "all",
          "diag's GPUs and CUDA: %s" % env)
    check(d["resources"] == values["diag"]["resources"], "diag resources")
    check(spec["tolerations"] == values["tolerations"], "tolerations %s" % spec["tolerations"])
    check(spec["nodeSelector"] == values["nodeSelector"] and spec["affinity"] == values["affinity"], "placement")
    check(spec["runtimeClassName"] == "nvidia-cdi" and spec["priorityClassName"] == "system-cluster-critical", "classes")
    check(c["resources"] == values["resources"], "resources %s" % c["resources"])
    check({"name": "GPUVET_EXTRA", "value": "1"} in c["env"], "extra env")
    ds = one(objs, "DaemonSet")
    check(ds["metadata"]["name"] == "gpu-exporter", "fullnameOverride")
    check(ds["spec"]["template"]["metadata"]["annotations"] == values["podAnnotations"], "no scrape annotations when off")
    check(ds["spec"]["template"]["metadata"]["labels"]["team"] == "ml-platform", "podLabels")
    check(spec["serviceAccountName"] == "gpuvet-sa" and ("ServiceAccount", "gpuvet-sa") in objs, "the service account's name")
    check(one(objs, "Service")["spec"]["ports"][0]["port"] == 9400, "the Service's port")
    mon = one(objs, "ServiceMonitor")
    check(mon["metadata"]["labels"]["release"] == "kube-prometheus-stack", "the ServiceMonitor's labels")
    ep = mon["spec"]["endpoints"][0]
    check(ep["interval"] == "30s" and ep["scrapeTimeout"] == "10s" and ep["path"] == "/metrics", "the endpoint %s" % ep)
    check(ep["metricRelabelings"] == values["serviceMonitor"]["metricRelabelings"], "metricRelabelings")
    check({"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "instance"} in ep["relabelings"],
          "instance: the node")
    check(mon["spec"]["jobLabel"] == "app.kubernetes.io/name", "jobLabel")
    rule = one(objs, "PrometheusRule")
    check(rule["metadata"]["labels"]["release"] == "kube-prometheus-stack", "the PrometheusRule's labels")
    check(rule["spec"] == {"groups": alert_groups()}, "the PrometheusRule's groups are not contrib/prometheus/gpuvet-alerts.yml's")


def test_optional_parts_off():
    objs = render([VALUES_MIN])
    check({k for k, _ in objs} == {"DaemonSet", "Service"}, "kinds: %s" % sorted(objs))
    spec = check_objects(objs, "optional parts off")
    check(spec["serviceAccountName"] == "default", "serviceAccountName %s" % spec["serviceAccountName"])
    for k in ("runtimeClassName", "priorityClassName", "volumes", "nodeSelector", "tolerations", "initContainers"):
        check(k not in spec, "%s with its value off" % k)
    check(spec["hostPID"] is False, "hostPID")
    c = spec["containers"][0]
    for k in ("volumeMounts", "resources", "securityContext"):
        check(k not in c, "%s with its value off" % k)
    check("annotations" not in one(objs, "DaemonSet")["spec"]["template"]["metadata"], "pod annotations")


def test_set():
    """--set, as docs/kubernetes.md's install line has it; each diag level."""
    objs = render(sets=["metricNames=dcgm-compat", "diag.level=1", "serviceMonitor.enabled=true",
                        "serviceMonitor.labels.release=kube-prometheus-stack", "prometheusRule.enabled=true",
                        "prometheusRule.labels.release=kube-prometheus-stack", "image.repository=registry.example.com/gpuvet",
                        "nodeSelector=null", "scrapeAnnotations=false"])
    spec = check_objects(objs, "--set")
    check("nodeSelector" not in spec, "nodeSelector=null keeps the default nodeSelector")
    check(one(objs, "ServiceMonitor")["metadata"]["labels"]["release"] == "kube-prometheus-stack", "a label by --set")
    check("--dcgm-compat" in spec["containers"][0]["args"], "--dcgm-compat")
    check(spec["initContainers"][0]["args"][:3] == ["diag", "-r", "1"], "diag -r 1: %s" % spec["initContainers"][0]["args"])
    check(spec["initContainers"][0]["image"] == spec["containers"][0]["image"] == "registry.example.com/gpuvet:0.1.0",
          "diag runs the exporter's image by default")
    check({"emptyDir": {}, "name": "tmp"} in spec["volumes"], "diag's /tmp")
    for level in (2, 3, 4):
        spec = render(sets=["diag.level=%d" % level])[("DaemonSet", "gpuvet")]["spec"]["template"]["spec"]
        check(spec["initContainers"][0]["args"][:3] == ["diag", "-r", str(level)], "level %d" % level)
    spec = render(sets=["metricNames=native"])[("DaemonSet", "gpuvet")]["spec"]["template"]["spec"]
    check("--dcgm-compat" not in spec["containers"][0]["args"], "--dcgm-compat with native names")
    check(render(name="gpu-metrics").keys() == {("DaemonSet", "gpu-metrics"), ("Service", "gpu-metrics"),
                                                ("ServiceAccount", "gpu-metrics")}, "objects named after the release")


def test_alerts():
    """The chart's copy of the rules is contrib/prometheus/gpuvet-alerts.yml byte for byte, and
    the exporter-down rule names no scrape job."""
    check(open(os.path.join(CHART, "files", "gpuvet-alerts.yml")).read() == open(ALERTS).read(),
          "contrib/helm/gpuvet/files/gpuvet-alerts.yml differs from contrib/prometheus/gpuvet-alerts.yml: copy it")
    for g in alert_groups():
        for r in g["rules"]:
            check("job=" not in r["expr"].replace(" ", "") and "job=~" not in r["expr"], "%s names a job: %s" % (r["alert"], r["expr"]))
    down = [r for g in alert_groups() for r in g["rules"] if r["alert"] == "GpuvetExporterDown"]
    check(len(down) == 1 and down[0]["expr"].startswith("up == 0"), "GpuvetExporterDown: %s" % down)


def test_plain_manifests():
    """contrib/kubernetes's manifests against the same schemas."""
    for fn in ("gpuvet-daemonset.yaml", "gpuvet-diag.yaml"):
        docs = [d for d in yaml.safe_load_all(open(os.path.join(TOP, "contrib", "kubernetes", fn))) if d]
        check(docs, "no objects in %s" % fn)
        errs = [e for d in docs for e in SCHEMAS.errors(d)]
        check(not errs, "contrib/kubernetes/%s:\n  %s" % (fn, "\n  ".join(errs)))
        for d in docs:
            check_labels(d["metadata"], "%s %s" % (fn, d["kind"]))
            tmpl = d["spec"].get("template") if d["kind"] in ("DaemonSet", "Job") else None
            if tmpl:
                check_pod(tmpl["spec"], "%s %s" % (fn, d["kind"]))
            elif d["kind"] == "Pod":
                check_pod(d["spec"], "%s Pod" % fn)


def test_vendored_definitions():
    """The vendored Kubernetes definitions are what tests/tools/k8s_schema.py makes from Debian's
    golang-k8s-kube-openapi-dev, where that package is installed (not needed otherwise;
    $GPUVET_K8S_SWAGGER: the swagger.json taken out of the .deb)."""
    swagger = os.environ.get("GPUVET_K8S_SWAGGER", k8s_schema.DEBIAN_SWAGGER)
    if not os.path.isfile(swagger):
        print("  %s is not installed: the vendored definitions were not compared with it" % k8s_schema.DEBIAN_PACKAGE)
        return gvtest.SKIP
    check(open(k8s_schema.VENDORED).read() == k8s_schema.extract(swagger),
          "tests/k8s-schemas/kubernetes-v1.13.0-definitions.json differs from what k8s_schema.py generate makes")


def test_helm():
    """With helm: helm lint, and helm template renders the objects the renderer renders."""
    if not HELM:
        print("  helm is not on PATH (nor $HELM): helm lint and helm template were not run")
        return gvtest.SKIP
    cases = [[], ["-f", VALUES_ALL], ["-f", VALUES_MIN],
             ["--set", "metricNames=dcgm-compat", "--set", "diag.level=1", "--set", "serviceMonitor.enabled=true",
              "--set", "serviceMonitor.labels.release=kube-prometheus-stack", "--set", "nodeSelector=null"]]
    for extra in cases:
        r = subprocess.run([HELM, "lint", "--strict", CHART] + extra, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "helm lint %s: %s%s" % (" ".join(extra), r.stdout, r.stderr))
        r = subprocess.run([HELM, "template", "gpuvet", CHART, "-n", NS] + extra, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "helm template %s: %s" % (" ".join(extra), r.stderr))
        files = [extra[i + 1] for i in range(len(extra)) if extra[i] == "-f"]
        sets = [extra[i + 1] for i in range(len(extra)) if extra[i] == "--set"]
        try:
            mine = render_chart.Renderer(CHART, "gpuvet", NS, files, sets).manifest()
        except render_chart.TemplateError as e:
            raise gvtest.Fail("render_chart.py: %s" % e)
        check(objects(r.stdout) == objects(mine), "helm template %s renders other objects than render_chart.py" % " ".join(extra))
        if r.stdout != mine:
            print("  helm template %s: the same objects, not the same text" % " ".join(extra))
    # helm enforces values.schema.json
    r = subprocess.run([HELM, "template", "gpuvet", CHART, "--set", "diag.level=5"], capture_output=True, text=True, timeout=120)
    check(r.returncode != 0 and "level" in r.stderr, "helm template took diag.level=5: %s" % r.stderr)


gvtest.run([test_renderer, test_machinery_rejects, test_values_schema, test_default_values, test_all_options, test_optional_parts_off,
            test_set, test_alerts, test_plain_manifests, test_vendored_definitions, test_helm])
