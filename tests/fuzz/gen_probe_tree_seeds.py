#!/usr/bin/env python3
"""Packs scenario trees (tests/scenarios/*/root) into seeds for fuzz_probe_tree: "@PATH" lines,
each followed by the file's bytes; "@PATH -> TARGET" for links, "@PATH/" for empty directories.

    python3 tests/fuzz/gen_probe_tree_seeds.py 100-nvidia-healthy-2xh200 231-sys-bad-input ...
"""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
scen = os.path.join(here, "..", "scenarios")
out_dir = os.path.join(here, "corpus", "probe_tree")
os.makedirs(out_dir, exist_ok=True)
for name in sys.argv[1:]:
    root = os.path.join(scen, name, "root")
    out = bytearray()
    for d, dirs, files in os.walk(root):
        rel = "/" + os.path.relpath(d, root) if d != root else ""
        for e in sorted(dirs + files):
            p = os.path.join(d, e)
            r = (rel + "/" + e).encode()
            if os.path.islink(p):
                out += b"@" + r + b" -> " + os.readlink(p).encode() + b"\n"
            elif os.path.isdir(p):
                if not os.listdir(p):
                    out += b"@" + r + b"/\n"
            elif os.path.getsize(p) <= 65536:
                data = open(p, "rb").read()
                out += b"@" + r + b"\n" + data + (b"" if data.endswith(b"\n") else b"\n")
        dirs[:] = [x for x in dirs if not os.path.islink(os.path.join(d, x))]
    open(os.path.join(out_dir, name), "wb").write(bytes(out))
