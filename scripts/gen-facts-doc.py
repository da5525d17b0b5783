#!/usr/bin/env python3
"""Writes docs/facts.md from the fact-key registry (src/core/factkeys.def): the text above the
`<!-- generated` line is kept, every key below it comes from the registry, layer by layer. Run
after editing the registry; the test facts/doc checks the file is current.

    scripts/gen-facts-doc.py [--check]
"""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import factkeys  # noqa: E402

MARK = "<!-- generated from src/core/factkeys.def by scripts/gen-facts-doc.py: edit the registry, not below -->"

# the area documents with more about a layer's facts (how they are collected, their states)
MORE = {
    "isolation": "facts/isolation.md",
    "nvml": "facts/nvidia.md",
    "cuda": "facts/nvidia.md",
    "kmsg": "facts/nvidia.md",
    "topology": "facts/nvidia.md",
    "history": "facts/nvidia.md",
    "devices": "facts/sysprobes.md",
    "env": "facts/sysprobes.md",
    "net": "facts/sysprobes.md",
    "container": "facts/sysprobes.md",
    "os": "facts/sysprobes.md",
    "python": "facts/python.md",
    "bench": "facts/bench.md",
}

TYPES = {"STR": "string", "INT": "integer", "REAL": "real", "BOOL": "boolean", "STATE": "state only", "ANY": "any"}


def shown(pattern):
    """nvml.gpu.%d.nvlink.%d.state as nvml.gpu.N.nvlink.M.state; %s parts as NAME"""
    ints = iter(["N", "M", "K", "L"])
    out = re.sub(r"%d", lambda m: next(ints), pattern)
    return out.replace("%s", "NAME")


def cell(text):
    return text.replace("|", "\\|").replace("\n", " ")


def render(root):
    entries, _, _ = factkeys.load_registry(root)
    path = os.path.join(root, "docs", "facts.md")
    have = open(path).read() if os.path.exists(path) else ""
    head = have.split(MARK)[0].rstrip("\n") if MARK in have else have.rstrip("\n")
    out = [head, "", MARK, ""]
    layers = []
    for e in entries:
        layer = e["pattern"].split(".")[0]
        if layer not in layers:
            layers.append(layer)
    for layer in layers:
        rows = [e for e in entries if e["pattern"].split(".")[0] == layer]
        writers = []
        for e in rows:
            for w in re.split(r",\s*", e["writer"]):
                w = re.sub(r"\s*\(.*\)", "", w).strip()
                if w and w not in writers:
                    writers.append(w)
        out.append("## %s (%s)" % (layer, ", ".join(writers) or "--facts files"))
        out.append("")
        if layer in MORE:
            out.append("More in [%s](%s)." % (MORE[layer], MORE[layer]))
            out.append("")
        out.append("| key | type | unit | meaning |")
        out.append("|---|---|---|---|")
        for e in rows:
            out.append("| %s | %s | %s | %s |" % (cell(shown(e["pattern"])), TYPES.get(e["type"], e["type"]),
                                                e["unit"], cell(e["meaning"])))
        out.append("")
    return path, "\n".join(out), len(entries)


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    path, text, n = render(root)
    if len(sys.argv) > 1 and sys.argv[1] == "--check":
        have = open(path).read() if os.path.exists(path) else ""
        if have != text:
            print("docs/facts.md is not current: run scripts/gen-facts-doc.py")
            return 1
        print("ok: docs/facts.md lists the %d keys of src/core/factkeys.def" % n)
        return 0
    open(path, "w").write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
