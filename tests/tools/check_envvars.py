#!/usr/bin/env python3
"""The environment table (src/core/envvars.c) against the sources: every variable src/ reads by
name (getenv("NAME"), a library's override "GPUVET_..._LIB", any "GPUVET_*" string) is in the
table, and every name in the table is read somewhere in src/ outside the table itself. The man
page's ENVIRONMENT and each command's --help are written from the table.

usage: check_envvars.py SRCDIR GPUVET_GEN"""
import os
import re
import subprocess
import sys

src, gen = sys.argv[1], sys.argv[2]
table = set(subprocess.run([gen, "--list-env"], capture_output=True, text=True, check=True).stdout.split())
read, seen = {}, set()
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in files:
        if not name.endswith((".c", ".h", ".def")):
            continue
        path = os.path.join(root, name)
        if path.endswith(os.path.join("core", "envvars.c")):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        rel = os.path.relpath(path, src)
        for m in re.finditer(r'\bgetenv\("([A-Za-z_][A-Za-z0-9_]*)"\)', text):
            read.setdefault(m.group(1), rel)
        for m in re.finditer(r'"(GPUVET_[A-Z0-9_]+)"', text):
            read.setdefault(m.group(1), rel)
        for v in table:
            if re.search(r'"%s"' % re.escape(v), text):
                seen.add(v)
status = 0
for v in sorted(set(read) - table):
    print("not ok: %s is read in %s but not in the environment table (src/core/envvars.c)" % (v, read[v]))
    status = 1
for v in sorted(table - seen):
    print("not ok: %s is in the environment table but src/ never reads it" % v)
    status = 1
man = open(os.path.join(src, "man", "gpuvet.1")).read()
for v in sorted(table):
    if ".B %s\n" % v.replace("-", "\\-") not in man:
        print("not ok: %s is not in man/gpuvet.1's ENVIRONMENT (make generate)" % v)
        status = 1
if not status:
    print("ok: %d environment variables, each read in src/, in the table and in the man page" % len(table))
sys.exit(status)
