#!/bin/bash
# On the GPU machine: the kernel's out-of-memory killer as the kernel log really has it, and
# check's host.oom-killed and explain's cause from it. A process of ours alone is killed: a
# python3 that touches 1 GiB inside a memory cgroup of 256 MiB made for it (v2 or v1), removed
# afterwards. Nothing else on the machine is touched; ~20 s.
#   bash scripts/device-run.sh scripts/device/oomkill.sh      (build/gpuvet and .devlib carried)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/oomkill
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
export HOME=$(mktemp -d /tmp/gpuvet-oomhome.XXXXXX) GPUVET_NO_HISTORY=1
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
uname -r > "$OUT/kernel.txt"
# a memory cgroup of our own: cgroup v2 (memory.max) where /sys/fs/cgroup is the unified
# hierarchy with the memory controller, else v1's memory controller (memory.limit_in_bytes)
CG= LIMIT_FILE=
if grep -qw memory /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	CG=/sys/fs/cgroup/gpuvet-oom-$$ LIMIT_FILE=memory.max
elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
	CG=/sys/fs/cgroup/memory/gpuvet-oom-$$ LIMIT_FILE=memory.limit_in_bytes
fi
{
	echo "cgroup.controllers: $(cat /sys/fs/cgroup/cgroup.controllers 2>&1)"
	echo "memory cgroup: ${CG:-none} ($LIMIT_FILE)"
} > "$OUT/cgroup.txt"
killed=no
if [ -n "$CG" ] && mkdir "$CG" 2>> "$OUT/cgroup.txt" && echo 268435456 > "$CG/$LIMIT_FILE" 2>> "$OUT/cgroup.txt"; then
	[ -f "$CG/memory.swap.max" ] && echo 0 > "$CG/memory.swap.max"
	[ -f "$CG/memory.memsw.limit_in_bytes" ] && echo 268435456 > "$CG/memory.memsw.limit_in_bytes" 2>/dev/null
	sh -c "echo \$\$ > $CG/cgroup.procs && exec python3 -c 'x = bytearray(1 << 30); x[::4096] = b\"x\" * len(x[::4096]); print(len(x))'" > "$OUT/victim.out" 2>&1
	rc=$?
	echo "victim exit $rc" >> "$OUT/cgroup.txt"
	[ "$rc" = 137 ] && killed=yes
	sleep 1
	rmdir "$CG" 2>> "$OUT/cgroup.txt"
else
	[ -n "$CG" ] && rmdir "$CG" 2>/dev/null
	echo "no memory cgroup could be made here: the kill was not made" >> "$OUT/cgroup.txt"
fi
echo "killed: $killed" >> "$OUT/cgroup.txt"
# the killer's lines as this kernel prints them
dmesg 2>/dev/null | grep -iE "out of memory|killed process|oom-kill" | tail -n 8 > "$OUT/dmesg.txt"
"$G" check --fast --json > "$OUT/check.json" 2> "$OUT/check.err"
"$G" explain --json --fast --no-python "RuntimeError: DataLoader worker (pid 19597) is killed by signal: Killed." \
	> "$OUT/explain.json" 2> "$OUT/explain.err"
python3 - "$OUT" "$killed" <<'PY' > "$OUT/summary.txt"
import json, sys
out, killed = sys.argv[1], sys.argv[2]
c = json.load(open(out + "/check.json"))
facts = c.get("facts", {})
def flat(d, p=""):
    for k, v in d.items():
        if isinstance(v, dict) and "state" not in v:
            yield from flat(v, p + k + ".")
        else:
            yield p + k, v
oom = {k: v for k, v in flat(facts) if k.startswith("kmsg.oom")}
for k in sorted(oom):
    print(k, json.dumps(oom[k].get("value", oom[k])))
f = [x for x in c.get("findings", []) if x.get("id") == "host.oom-killed"]
print("finding:", json.dumps(f[0] if f else None)[:1500])
e = json.load(open(out + "/explain.json"))
for err in e.get("errors", []):
    print("explain:", err["signature"], [(x["id"], x["state"]) for x in err.get("causes", [])])
ok = (killed != "yes") or (f and any("python3" in ev for ev in f[0].get("evidence", [])))
print("PASS" if ok else "FAIL", "killed=%s finding=%s" % (killed, bool(f)))
PY
cat "$OUT/cgroup.txt" "$OUT/dmesg.txt" "$OUT/summary.txt"
rm -rf "$HOME"
grep -q '^PASS' "$OUT/summary.txt"
