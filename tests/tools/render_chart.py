#!/usr/bin/env python3
"""Renders a Helm chart without Helm, for the tests: only the subset of Helm's template language
that contrib/helm/gpuvet uses, and nothing more.

    render_chart.py CHART [--name NAME] [--namespace NS] [-f VALUES.yaml]... [--set a.b=v]...

prints what `helm template NAME CHART -n NS -f ... --set ...` prints for that subset: each
template's output as a YAML document ("---" and "# Source: CHART/templates/FILE"), files whose
name starts with "_" and NOTES.txt left out, templates that render to nothing skipped.

The subset (anything else is an error, never a guess):
  - text, and actions {{ ... }} with the trim markers {{- and -}}; comments {{/* ... */}}
  - if PIPELINE / else / end (no "else if"), define "NAME" / end in any template
  - pipelines A | f B (A is f's last argument) and parenthesized pipelines
  - operands: fields (., .Values.a.b, .Release.Name, .Release.Namespace, .Release.Service,
    .Chart.Name, .Chart.Version, .Chart.AppVersion), "strings" (Go escapes), integers, true, false
  - functions: include, toYaml, indent, nindent, quote, default, required, not, and, or, eq,
    and the method .Files.Get "PATH"
  - no range, with, template, variables ($x), printf or any other Sprig function.
Stricter than Helm where Helm is lax: a field of a missing map is an error (as in Helm), and
printing a missing value (which Helm prints as an empty string) is an error too; eq compares
two strings only. Values: values.yaml, then each -f file merged over it (maps merged key by key,
everything else replaced, a null deletes the key, as Helm does), then --set a.b=v (v: true,
false, null, an integer, else a string; no lists, no escapes). toYaml is PyYAML's block style
with sorted keys, which parses to what Helm's toYaml gives (the text may differ).

Needs PyYAML (python3-yaml). Used as a module by tests/contrib/test_helm_chart.py."""
import argparse
import json
import os
import re
import sys

import yaml


class TemplateError(Exception):
    pass


# ---- values ----------------------------------------------------------------------------------

def merge(base, over):
    """Helm's coalescing of a values file over another: maps key by key, null deletes."""
    out = dict(base)
    for k, v in over.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


def set_value(values, assignment):
    if "=" not in assignment:
        raise TemplateError("--set %s: not KEY=VALUE" % assignment)
    key, raw = assignment.split("=", 1)
    if re.search(r"[\[\]{},\\]", key + raw):
        raise TemplateError("--set %s: lists, braces, commas and escapes are not in the subset" % assignment)
    if raw in ("true", "false"):
        v = raw == "true"
    elif raw == "null":
        v = None
    elif re.fullmatch(r"-?[0-9]+", raw):
        v = int(raw)
    else:
        v = raw
    parts = key.split(".")
    node = values
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    if v is None:
        node.pop(parts[-1], None)
    else:
        node[parts[-1]] = v


# ---- lexing and parsing -----------------------------------------------------------------------

ACTION = re.compile(r"\{\{(-[ \t\r\n])?(.*?)([ \t\r\n]-)?\}\}", re.S)
TOKEN = re.compile(r"""\s*(?:
      (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<num>-?[0-9]+)(?![0-9A-Za-z_.])
    | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+|\.)
    | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<pipe>\|)
    | (?P<lp>\()
    | (?P<rp>\))
    )""", re.X)


def tokens(src, where):
    out, pos = [], 0
    while pos < len(src):
        if src[pos:].strip() == "":
            break
        m = TOKEN.match(src, pos)
        if not m:
            raise TemplateError("%s: not in the subset: %r" % (where, src[pos:].strip()))
        kind = m.lastgroup
        text = m.group(kind)
        if kind == "str":
            try:
                text = json.loads(text)  # Go's escapes, as far as JSON has them (\" \\ \n \t \uXXXX)
            except ValueError:
                raise TemplateError("%s: a string with an escape the subset does not have: %s" % (where, text))
        elif kind == "num":
            text = int(text)
        out.append((kind, text))
        pos = m.end()
    return out


class Parser:
    """Expression parser for one action: pipeline := command ('|' command)*."""

    def __init__(self, toks, where):
        self.toks, self.i, self.where = toks, 0, where

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self):
        t = self.peek()
        self.i += 1
        return t

    def pipeline(self):
        cmds = [self.command()]
        while self.peek()[0] == "pipe":
            self.take()
            cmds.append(self.command())
        return ("pipe", cmds)

    def command(self):
        args = []
        while self.peek()[0] not in (None, "pipe", "rp"):
            args.append(self.operand())
        if not args:
            raise TemplateError("%s: an empty command" % self.where)
        return args

    def operand(self):
        kind, text = self.take()
        if kind == "lp":
            p = self.pipeline()
            if self.take()[0] != "rp":
                raise TemplateError("%s: a ( without its )" % self.where)
            return p
        if kind in ("str", "num"):
            return ("lit", text)
        if kind == "field":
            return ("field", text)
        if kind == "ident":
            if text in ("true", "false"):
                return ("lit", text == "true")
            if text not in FUNCS:
                raise TemplateError("%s: the function %s is not in the subset" % (self.where, text))
            return ("func", text)
        raise TemplateError("%s: unexpected %r" % (self.where, text))


def parse(src, name):
    """A template's text to (nodes, defines). Nodes: ("text", s), ("out", pipeline),
    ("if", pipeline, then_nodes, else_nodes)."""
    pieces = []  # ("text", s) and ("action", body, where), with the trim markers applied
    pos, rtrim = 0, False
    for m in ACTION.finditer(src):
        text = src[pos:m.start()]
        if rtrim:
            text = text.lstrip(" \t\r\n")
        if m.group(1):
            text = text.rstrip(" \t\r\n")
        pieces.append(("text", text))
        line = src.count("\n", 0, m.start()) + 1
        pieces.append(("action", m.group(2), "%s:%d" % (name, line)))
        rtrim = bool(m.group(3))
        pos = m.end()
    rest = src[pos:]
    pieces.append(("text", rest.lstrip(" \t\r\n") if rtrim else rest))
    for p in pieces:
        if p[0] == "text" and "{{" in p[1]:
            raise TemplateError("%s: an action not closed with }}: %r" % (name, p[1][:60]))

    defines = {}
    root = []
    stack = [("root", root, None)]  # (kind, current node list, node)
    for p in pieces:
        if p[0] == "text":
            if p[1]:
                stack[-1][1].append(("text", p[1]))
            continue
        body, where = p[1].strip(), p[2]
        if body.startswith("/*"):
            if not body.endswith("*/"):
                raise TemplateError("%s: a comment must end with */ right before }}" % where)
            continue
        word = body.split(None, 1)[0] if body else ""
        arg = body[len(word):].strip()
        if word == "if":
            parser = Parser(tokens(arg, where), where)
            node = ["if", parser.pipeline(), [], []]
            if parser.peek()[0] is not None:
                raise TemplateError("%s: unexpected %r" % (where, parser.peek()[1]))
            stack[-1][1].append(node)
            stack.append(("if", node[2], node))
        elif word == "else":
            if arg:
                raise TemplateError("%s: 'else %s' is not in the subset" % (where, arg))
            if stack[-1][0] != "if":
                raise TemplateError("%s: else outside an if" % where)
            kind, _, node = stack.pop()
            stack.append(("else", node[3], node))
        elif word == "end":
            if arg:
                raise TemplateError("%s: 'end %s'" % (where, arg))
            if len(stack) == 1:
                raise TemplateError("%s: end without if or define" % where)
            kind, nodes, node = stack.pop()
            if kind == "define":
                defines[node] = nodes
        elif word == "define":
            if len(stack) != 1:
                raise TemplateError("%s: define inside another block" % where)
            t = tokens(arg, where)
            if len(t) != 1 or t[0][0] != "str":
                raise TemplateError("%s: define takes one quoted name" % where)
            stack.append(("define", [], t[0][1]))
        elif word in ("range", "with", "template", "block", "break", "continue") or body.startswith("$"):
            raise TemplateError("%s: '%s' is not in the subset" % (where, word))
        else:
            parser = Parser(tokens(body, where), where)
            pipe = parser.pipeline()
            if parser.peek()[0] is not None:
                raise TemplateError("%s: unexpected %r" % (where, parser.peek()[1]))
            stack[-1][1].append(("out", pipe))
    if len(stack) != 1:
        raise TemplateError("%s: %s without end" % (name, stack[-1][0]))
    return root, defines


# ---- evaluation ---------------------------------------------------------------------------------

MISSING = object()


def truthy(v):
    """Go's template truth: false, 0, nil, and empty strings, lists and maps are false."""
    if v is None or v is MISSING:
        return False
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)):
        return v != 0
    if isinstance(v, (str, list, dict)):
        return len(v) > 0
    return True


def go_print(v, where):
    if v is MISSING or v is None:
        raise TemplateError("%s: prints a missing value (Helm would print nothing)" % where)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, float):
        return str(int(v)) if v == int(v) and abs(v) < 1e21 else repr(v)
    raise TemplateError("%s: prints a %s: use toYaml" % (where, type(v).__name__))


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper, data):
    # double quotes, as Helm's toYaml writes them, for a string that would read as another type
    node = dumper.represent_scalar("tag:yaml.org,2002:str", data)
    if dumper.resolve(yaml.ScalarNode, data, (True, False)) != "tag:yaml.org,2002:str":
        node.style = '"'
    return node


_Dumper.add_representer(str, _str)


def to_yaml(v):
    if v is MISSING or v is None:
        return "null"
    return yaml.dump(v, Dumper=_Dumper, default_flow_style=False, sort_keys=True, allow_unicode=True,
                     width=1 << 30).rstrip("\n").removesuffix("\n...")


def go_quote(v):
    if v is MISSING or v is None:
        return ""
    s = go_print(v, "quote")
    out = '"'
    for ch in s:
        if ch == '"' or ch == "\\":
            out += "\\" + ch
        elif ch == "\n":
            out += "\\n"
        elif ch == "\t":
            out += "\\t"
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out += "\\x%02x" % ord(ch)
        else:
            out += ch
    return out + '"'


def f_indent(n, s):
    pad = " " * n
    return pad + s.replace("\n", "\n" + pad)


def f_default(d, v=MISSING):
    return v if truthy(v) else d


def f_required(msg, v=MISSING):
    if v is MISSING or v is None or v == "":
        raise TemplateError("required: %s" % msg)
    return v


def f_eq(a, b):
    if not (isinstance(a, str) and isinstance(b, str)):
        raise TemplateError("eq: the subset compares two strings, not %r and %r" % (a, b))
    return a == b


def f_and(*a):
    for v in a:
        if not truthy(v):
            return v
    return a[-1]


def f_or(*a):
    for v in a:
        if truthy(v):
            return v
    return a[-1]


FUNCS = {
    "toYaml": lambda v: to_yaml(v),
    "indent": f_indent,
    "nindent": lambda n, s: "\n" + f_indent(n, s),
    "quote": lambda *a: " ".join(go_quote(v) for v in a if v is not MISSING and v is not None),
    "default": f_default,
    "required": f_required,
    "not": lambda v: not truthy(v),
    "and": f_and,
    "or": f_or,
    "eq": f_eq,
    "include": None,  # needs the renderer: Renderer.call
}


class Renderer:
    def __init__(self, chart_dir, name="gpuvet", namespace="default", value_files=(), sets=()):
        self.chart_dir = chart_dir
        meta = yaml.safe_load(open(os.path.join(chart_dir, "Chart.yaml")))
        values = yaml.safe_load(open(os.path.join(chart_dir, "values.yaml"))) or {}
        for f in value_files:
            values = merge(values, yaml.safe_load(open(f)) or {})
        for s in sets:
            set_value(values, s)
        self.values = values
        self.chart_name = meta["name"]
        self.root = {
            "Values": values,
            "Release": {"Name": name, "Namespace": namespace, "Service": "Helm"},
            "Chart": {"Name": meta["name"], "Version": str(meta["version"]),
                      "AppVersion": str(meta.get("appVersion", ""))},
            "Files": {"Get": self.files_get},
        }
        tdir = os.path.join(chart_dir, "templates")
        self.templates, self.defines = {}, {}
        for fn in sorted(os.listdir(tdir)):
            path = os.path.join(tdir, fn)
            if not os.path.isfile(path):
                raise TemplateError("templates/%s: subdirectories are not in the subset" % fn)
            nodes, defines = parse(open(path).read(), "templates/" + fn)
            self.defines.update(defines)
            if not fn.startswith("_") and fn != "NOTES.txt":
                self.templates[fn] = nodes

    def files_get(self, path):
        full = os.path.normpath(os.path.join(self.chart_dir, path))
        if not full.startswith(os.path.normpath(self.chart_dir) + os.sep):
            raise TemplateError(".Files.Get %s: outside the chart" % path)
        if path.startswith("templates/") or not os.path.isfile(full):
            return ""  # Helm: an empty string for a file it does not have
        return open(full).read()

    def field(self, dot, path, where):
        if path == ".":
            return dot
        v = dot
        parts = path[1:].split(".")
        for i, p in enumerate(parts):
            if v is MISSING or v is None:
                raise TemplateError("%s: %s: nil pointer evaluating .%s" % (where, path, ".".join(parts[:i])))
            if not isinstance(v, dict):
                raise TemplateError("%s: %s: .%s is not a map" % (where, path, ".".join(parts[:i])))
            v = v.get(p, MISSING)
        return v

    def eval_pipe(self, pipe, dot, where):
        result = MISSING
        first = True
        for cmd in pipe[1]:
            args = [] if first else [result]
            result = self.eval_cmd(cmd, dot, where, args)
            first = False
        return result

    def operand_value(self, op, dot, where):
        if op[0] == "lit":
            return op[1]
        if op[0] == "field":
            return self.field(dot, op[1], where)
        if op[0] == "pipe":
            return self.eval_pipe(op, dot, where)
        raise TemplateError("%s: the function %s needs to come first in its command" % (where, op[1]))

    def eval_cmd(self, cmd, dot, where, piped):
        head = cmd[0]
        if head[0] == "func":
            args = [self.operand_value(a, dot, where) for a in cmd[1:]] + piped
            return self.call(head[1], args, where)
        if head[0] == "field" and head[1] == ".Files.Get":
            args = [self.operand_value(a, dot, where) for a in cmd[1:]] + piped
            if len(args) != 1 or not isinstance(args[0], str):
                raise TemplateError("%s: .Files.Get takes one path" % where)
            return self.files_get(args[0])
        if len(cmd) != 1 or piped:
            raise TemplateError("%s: %r cannot take arguments" % (where, head[1]))
        return self.operand_value(head, dot, where)

    def call(self, fn, args, where):
        if fn == "include":
            if len(args) != 2 or not isinstance(args[0], str):
                raise TemplateError("%s: include takes a name and a context" % where)
            if args[0] not in self.defines:
                raise TemplateError("%s: include of an undefined template %s" % (where, args[0]))
            return self.render_nodes(self.defines[args[0]], args[1])
        try:
            return FUNCS[fn](*args)
        except TypeError as e:
            raise TemplateError("%s: %s: %s" % (where, fn, e))
        except TemplateError as e:
            raise TemplateError("%s: %s" % (where, e))

    def render_nodes(self, nodes, dot):
        out = []
        for n in nodes:
            if n[0] == "text":
                out.append(n[1])
            elif n[0] == "out":
                v = self.eval_pipe(n[1], dot, "action")
                out.append(go_print(v, "action"))
            else:
                branch = n[2] if truthy(self.eval_pipe(n[1], dot, "if")) else n[3]
                out.append(self.render_nodes(branch, dot))
        return "".join(out)

    def render(self):
        """{template file name: rendered text} for the templates that render to something."""
        out = {}
        for fn, nodes in self.templates.items():
            try:
                text = self.render_nodes(nodes, self.root)
            except TemplateError as e:
                raise TemplateError("templates/%s: %s" % (fn, e))
            if text.strip():
                out[fn] = text
        return out

    def manifest(self):
        """The text helm template prints: the documents in Helm's install order for the kinds
        this subset renders (then the other kinds by name), each with its # Source line."""
        order = ["ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service", "DaemonSet"]

        def key(item):
            m = re.search(r"^kind:\s*(\S+)", item[1], re.M)
            kind = m.group(1) if m else ""
            return (order.index(kind), "") if kind in order else (len(order), kind)

        return "".join("---\n# Source: %s/templates/%s\n%s\n" % (self.chart_name, fn, text.strip())
                       for fn, text in sorted(self.render().items(), key=key))


def main():
    ap = argparse.ArgumentParser(description="render a Helm chart without Helm (a subset: see the top of this file)")
    ap.add_argument("chart")
    ap.add_argument("--name", default="gpuvet")
    ap.add_argument("-n", "--namespace", default="default")
    ap.add_argument("-f", "--values", action="append", default=[])
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    try:
        sys.stdout.write(Renderer(a.chart, a.name, a.namespace, a.values, a.set).manifest())
    except TemplateError as e:
        print("render_chart: %s" % e, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
