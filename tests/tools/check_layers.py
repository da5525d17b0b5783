"""The layer order of src/ holds: every #include "DIR/..." in src/X/ names a module of X's own
layer or a lower one, as the README's architecture section lists them. A module missing from
the table fails too, so a new folder gets a place before it gets code. Within one layer the
includes between modules form no loop (doctor includes watch and watch includes doctor, or a
longer ring): one of them must stand on the other, not both.

    python3 check_layers.py SOURCE_DIR
"""
import os
import re
import sys


def layers(readme):
    """The README's table between the markers: `| N | mod, mod |` rows."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"<!-- layers -->(.*?)<!-- /layers -->", text, re.S)
    if not m:
        sys.exit("check_layers: README.md has no <!-- layers --> table")
    order = {}
    for row in m.group(1).splitlines():
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].isdigit():
            for mod in re.findall(r"`?([a-z_]+)`?", cells[1]):
                order[mod] = int(cells[0])
    return order


def loops(edges):
    """The loops of a graph {mod: {dep: "file:line"}}: each strongly connected set of two or more
    modules, sorted, with one include of each edge inside it (Tarjan's algorithm)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comp.sort()
                where = ["%s includes %s (%s)" % (a, b, edges[a][b]) for a in comp for b in sorted(edges.get(a, {}))
                         if b in comp]
                out.append((comp, where))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    src = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    order = layers(os.path.join(src, "README.md"))
    bad = []
    sideways = {}  # within a layer: module -> {module it includes: the first place}
    for root, _, files in os.walk(os.path.join(src, "src")):
        rel = os.path.relpath(root, os.path.join(src, "src"))
        mod = "main" if rel == "." else rel.split(os.sep)[0]
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            if mod not in order:
                bad.append("src/%s/%s: module %s has no layer in README.md" % (rel, f, mod))
                continue
            for n, line in enumerate(open(os.path.join(root, f), encoding="utf-8", errors="replace"), 1):
                m = re.match(r'\s*#\s*include\s+"([a-z_]+)/', line)
                if not m:
                    continue
                dep = m.group(1)
                if dep not in order:
                    bad.append("src/%s/%s:%d: includes %s, which has no layer" % (rel, f, n, dep))
                elif order[dep] > order[mod]:
                    bad.append("src/%s/%s:%d: %s (layer %d) includes %s (layer %d), a layer above it"
                               % (rel, f, n, mod, order[mod], dep, order[dep]))
                elif order[dep] == order[mod] and dep != mod:
                    sideways.setdefault(mod, {}).setdefault(dep, "src/%s/%s:%d" % (rel, f, n))
    for comp, where in loops(sideways):
        bad.append("a loop within layer %d between %s: %s" % (order[comp[0]], ", ".join(comp), "; ".join(where)))
    for b in bad:
        print(b)
    if bad:
        print("%d include(s) or loop(s) against the layer order (README.md, architecture)" % len(bad))
        sys.exit(1)
    print("layers: every include points down or sideways, no loop within a layer (%d modules)" % len(order))


if __name__ == "__main__":
    main()
