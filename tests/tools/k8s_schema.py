"""JSON Schema validation of Kubernetes manifests for the tests, offline (tests/k8s-schemas/README.md).

Built-in kinds (DaemonSet, Service, ServiceAccount, RBAC, Job, Pod, Namespace, ConfigMap):
against the Kubernetes API's own OpenAPI definitions, those of Kubernetes v1.13.0 as Debian's
golang-k8s-kube-openapi-dev ships them (kube-openapi keeps that swagger.json as test data),
vendored in tests/k8s-schemas/kubernetes-v1.13.0-definitions.json: the definitions the kinds
above reach, their descriptions dropped, nothing else changed (`k8s_schema.py generate`
makes the file again from the package, `k8s_schema.py check` compares). They are turned into
JSON Schema when loaded, the way kubeconform's "standalone-strict" schemas are made: every
object rejects fields its definition does not have (additionalProperties false), IntOrString
takes a string or an integer, a Quantity a string or a number, apiVersion and kind must be the
definition's. Not nullable: a null value is taken for a template mistake (the API server would
drop it).

Custom resources (monitoring.coreos.com/v1 ServiceMonitor and PrometheusRule): against the
schemas in tests/k8s-schemas/, written for this project (not prometheus-operator's files).

Needs python3-jsonschema (Draft 4 and 7 validators: Debian 12's 4.10 and later)."""
import copy
import json
import os
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SCHEMA_DIR = os.path.join(TOP, "tests", "k8s-schemas")
VENDORED = os.path.join(SCHEMA_DIR, "kubernetes-v1.13.0-definitions.json")
# where Debian 12's golang-k8s-kube-openapi-dev puts Kubernetes v1.13.0's swagger.json
DEBIAN_SWAGGER = "/usr/share/gocode/src/k8s.io/kube-openapi/pkg/schemaconv/testdata/swagger.json"
DEBIAN_PACKAGE = "golang-k8s-kube-openapi-dev (Debian 12: 0.0~git20211014.b3fe75c-2)"
# the kinds whose definitions are vendored (and everything they refer to)
ROOTS = ["io.k8s.api.apps.v1.DaemonSet", "io.k8s.api.core.v1.Service", "io.k8s.api.core.v1.ServiceAccount",
         "io.k8s.api.rbac.v1.ClusterRole", "io.k8s.api.rbac.v1.ClusterRoleBinding", "io.k8s.api.rbac.v1.Role",
         "io.k8s.api.rbac.v1.RoleBinding", "io.k8s.api.core.v1.Namespace", "io.k8s.api.batch.v1.Job",
         "io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.ConfigMap"]
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"


def _refs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref":
                yield v.rsplit("/", 1)[-1]
            else:
                yield from _refs(v)
    elif isinstance(node, list):
        for v in node:
            yield from _refs(v)


def _undescribed(node):
    if isinstance(node, dict):
        return {k: _undescribed(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_undescribed(v) for v in node]
    return node


def extract(swagger_path):
    """The vendored file's text, from Kubernetes' swagger.json: ROOTS and what they reach."""
    spec = json.load(open(swagger_path))
    defs, seen, todo = spec["definitions"], set(), list(ROOTS)
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_refs(defs[name]))
    doc = {
        "x-source": "Kubernetes %s OpenAPI (swagger.json), as Debian's %s ships it at %s; the definitions %s "
                    "reach, descriptions dropped. Apache License 2.0, The Kubernetes Authors. Made by "
                    "tests/tools/k8s_schema.py generate." % (spec["info"]["version"], DEBIAN_PACKAGE,
                                                              DEBIAN_SWAGGER, ", ".join(r.rsplit(".", 1)[-1] for r in ROOTS)),
        "info": spec["info"],
        "definitions": {k: _undescribed(defs[k]) for k in sorted(seen)},
    }
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def _strict(node):
    """additionalProperties false on every object schema that lists its properties; int-or-string."""
    if isinstance(node, list):
        return [_strict(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = {k: _strict(v) for k, v in node.items()}
    if out.get("format") == "int-or-string":
        return {"type": ["string", "integer"], "description": out.get("description", "")}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


class Validators:
    def __init__(self, definitions_path=VENDORED):
        spec = json.load(open(definitions_path))
        self.kubernetes_version = spec.get("info", {}).get("version", "?")
        defs = {name: _strict(d) for name, d in spec["definitions"].items()}
        if INT_OR_STRING in defs:
            defs[INT_OR_STRING] = {"type": ["string", "integer"]}
        if QUANTITY in defs:
            defs[QUANTITY] = {"type": ["string", "number"]}
        self.definitions = defs
        self.by_gvk = {}
        for name, d in spec["definitions"].items():
            for gvk in d.get("x-kubernetes-group-version-kind", []):
                api = gvk["version"] if not gvk["group"] else "%s/%s" % (gvk["group"], gvk["version"])
                # a kind's own definition (io.k8s.api.apps.v1.DaemonSet), not a list or a watch event
                if name.endswith("." + gvk["kind"]):
                    self.by_gvk[(api, gvk["kind"])] = name
        self.custom = {}
        for fn in sorted(os.listdir(SCHEMA_DIR)):
            if fn.endswith(".json") and os.path.join(SCHEMA_DIR, fn) != VENDORED:
                s = json.load(open(os.path.join(SCHEMA_DIR, fn)))
                gv = s["x-gpuvet-api"]
                self.custom[(gv["apiVersion"], gv["kind"])] = (fn, s)
        self._cache = {}

    def kinds(self):
        return sorted(self.by_gvk) + sorted(self.custom)

    def validator(self, api_version, kind):
        """A validator for that apiVersion and kind, and where its schema came from; (None, why) when none."""
        key = (api_version, kind)
        if key in self._cache:
            return self._cache[key]
        if key in self.custom:
            fn, s = self.custom[key]
            import jsonschema
            cls = jsonschema.validators.validator_for(s)
            cls.check_schema(s)
            v = (cls(s), "tests/k8s-schemas/" + fn)
        elif key in self.by_gvk:
            name = self.by_gvk[key]
            root = {
                "definitions": self.definitions,
                "allOf": [
                    {"$ref": "#/definitions/" + name},
                    {"required": ["apiVersion", "kind"],
                     "properties": {"apiVersion": {"enum": [api_version]}, "kind": {"enum": [kind]}}},
                ],
            }
            import jsonschema
            v = (jsonschema.Draft4Validator(root), "Kubernetes %s OpenAPI %s" % (self.kubernetes_version, name))
        else:
            v = (None, "no schema for %s %s" % (api_version, kind))
        self._cache[key] = v
        return v

    def errors(self, doc):
        """The schema errors of one manifest (a list of strings; empty: valid)."""
        if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
            return ["not a Kubernetes object (no apiVersion and kind): %r" % (doc,)[:200]]
        v, source = self.validator(doc["apiVersion"], doc["kind"])
        if v is None:
            return [source]
        out = []
        for e in sorted(v.iter_errors(copy.deepcopy(doc)), key=lambda e: list(e.absolute_path)):
            path = "/".join(str(p) for p in e.absolute_path)
            out.append("%s %s: /%s: %s (%s)" % (doc["kind"], doc.get("metadata", {}).get("name", "?"), path,
                                                e.message[:300], source))
        return out


def main():
    """generate [SWAGGER]: write the vendored file from Debian's swagger.json (or SWAGGER);
    check [SWAGGER]: exit 1 when the vendored file is not what generate would write."""
    if len(sys.argv) < 2 or sys.argv[1] not in ("generate", "check"):
        print("usage: k8s_schema.py generate|check [SWAGGER]", file=sys.stderr)
        sys.exit(2)
    src = sys.argv[2] if len(sys.argv) > 2 else DEBIAN_SWAGGER
    if not os.path.isfile(src):
        print("k8s_schema.py: %s is not there (apt-get install golang-k8s-kube-openapi-dev)" % src, file=sys.stderr)
        sys.exit(77)
    text = extract(src)
    if sys.argv[1] == "generate":
        open(VENDORED, "w").write(text)
        print("wrote %s" % VENDORED)
    elif open(VENDORED).read() != text:
        print("k8s_schema.py: %s is not what %s gives" % (VENDORED, src), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
