#!/bin/sh
# On the GPU machine: evidence that says what it saw, on a real /proc and /sys, and the history
# database under abuse on that machine's disk. Changes nothing of the GPU: the faults are bind
# mounts over /proc/driver/nvidia/version inside a private mount namespace (unshare -m), gone
# when the command ends. Needs build/ (with build/tests/fake) and .devlib/ carried.
#
# What it must show (verdict.txt; exit non-zero otherwise):
#  - check-root.json: files.unreadable.count = 0, hardware.kernel_module_version ok and equal to
#    nvidia-smi's driver, no driver.proc-unreadable, no files.unreadable.
#  - check-nobody.json (as uid 65534): no gpu.none, no driver.not-loaded; files.unreadable lists
#    what an ordinary user cannot read there (recorded for review, not a failure).
#  - fault-*.json (garbage, empty, truncated, a directory, a FIFO, mode 0600 read as nobody, bind
#    mounted over the real file; the directory over /proc/driver/nvidia, since a directory cannot
#    be bound over a file): hardware.kernel_module_version unreadable or unparsable,
#    driver.proc-unreadable present, neither driver.not-loaded nor gpu.none, NVML still answers.
#  - history-abuse.txt: tests/integration/test_history_abuse.py passes on this disk.
set -u
OUT=${OUT:-/tmp/gpuvet-evidence-out}
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET_NO_HISTORY=1
G=${GPUVET:-$PWD/build/gpuvet}
V=/proc/driver/nvidia/version
status=0
T=$(mktemp -d /tmp/gpuvet-evidence.XXXXXX)
chmod 755 "$T"

{ date -u +%Y-%m-%dT%H:%M:%SZ; id; ls -l "$V"; head -c 200 "$V"; echo; command -v unshare setpriv; } > "$OUT/machine.txt" 2>&1
nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1 > "$OUT/driver.txt" 2>&1
timeout 60 "$G" check --json --fast > "$OUT/check-root.json" 2> "$OUT/check-root.err"
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null; then
	timeout 60 setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "$G" check --json --fast \
		> "$OUT/check-nobody.json" 2> "$OUT/check-nobody.err"
fi

# faults over the real file, each in its own private mount namespace
printf 'garbage\001\002 over the module file\n' > "$T/garbage"
: > "$T/empty"
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Mod' > "$T/truncated"
mkdir -p "$T/nvdir/version" # a directory cannot be bound over a file: over its parent instead
mkfifo "$T/fifo"
cp "$V" "$T/private" && chmod 600 "$T/private"
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
	for kind in garbage empty truncated fifo; do
		timeout 60 unshare -m sh -c "mount --bind '$T/$kind' '$V' && exec '$G' check --json --fast" \
			> "$OUT/fault-$kind.json" 2> "$OUT/fault-$kind.err"
	done
	timeout 60 unshare -m sh -c "mount --bind '$T/nvdir' /proc/driver/nvidia && exec '$G' check --json --fast" \
		> "$OUT/fault-dir.json" 2> "$OUT/fault-dir.err"
	timeout 60 unshare -m sh -c "mount --bind '$T/private' '$V' && exec setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent '$G' check --json --fast" \
		> "$OUT/fault-eacces.json" 2> "$OUT/fault-eacces.err"
else
	echo "not root or no unshare: fault cases skipped" >> "$OUT/verdict.txt"
fi

python3 - "$OUT" >> "$OUT/verdict.txt" 2>&1 <<'PY' || status=1
import glob, json, os, sys
out = sys.argv[1]
bad = []

def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as e:
        bad.append("%s: not JSON (%s)" % (name, e))
        return None

def ids(d):
    return {x["id"] for x in d.get("findings", [])}

def fact(d, key):
    layer, rest = key.split(".", 1)
    return d.get("facts", {}).get(layer, {}).get(rest, {})

driver = open(os.path.join(out, "driver.txt")).read().strip()
r = load("check-root.json")
if r:
    kv = fact(r, "hardware.kernel_module_version")
    if kv.get("state") != "ok" or kv.get("value") != driver:
        bad.append("root: kernel_module_version %r, nvidia-smi %r" % (kv, driver))
    n = fact(r, "files.unreadable.count").get("value")
    if n != 0:
        bad.append("root: %r paths unreadable: %s" % (n, json.dumps(r["facts"].get("files"))))
    for i in ("driver.proc-unreadable", "files.unreadable", "gpu.none", "driver.not-loaded"):
        if i in ids(r):
            bad.append("root: %s present" % i)
if os.path.exists(os.path.join(out, "check-nobody.json")):
    nb = load("check-nobody.json")
    if nb:
        for i in ("gpu.none", "driver.not-loaded", "driver.proc-unreadable"):
            if i in ids(nb):
                bad.append("nobody: %s present" % i)
        print("nobody: unreadable paths:", json.dumps(nb["facts"].get("files")))
for p in sorted(glob.glob(os.path.join(out, "fault-*.json"))):
    name = os.path.basename(p)
    d = load(name)
    if not d:
        continue
    kv = fact(d, "hardware.kernel_module_version")
    got = ids(d)
    print("%s: %s; findings %s" % (name, json.dumps(kv), sorted(got)))
    if kv.get("state") not in ("unreadable", "unparsable"):
        bad.append("%s: kernel_module_version state %r" % (name, kv.get("state")))
    if "driver.proc-unreadable" not in got:
        bad.append("%s: no driver.proc-unreadable" % name)
    for i in ("driver.not-loaded", "gpu.none"):
        if i in got:
            bad.append("%s: %s present" % (name, i))
    # (over the whole /proc/driver/nvidia NVML may fail too: only the file's own faults must keep it)
    if name != "fault-dir.json" and fact(d, "nvml.device_count").get("value", 0) < 1:
        bad.append("%s: NVML did not answer" % name)
print("\n".join(bad) if bad else "OK: evidence states and findings as expected")
sys.exit(1 if bad else 0)
PY

if [ -f build/tests/fake/libfake_nvml.so ]; then
	if timeout 150 python3 tests/integration/test_history_abuse.py "$G" build/tests/fake/libfake_nvml.so \
		> "$OUT/history-abuse.txt" 2>&1; then
		echo "history abuse: passed" >> "$OUT/verdict.txt"
	else
		echo "history abuse: FAILED (history-abuse.txt)" >> "$OUT/verdict.txt"
		status=1
	fi
fi
rm -rf "$T"
cat "$OUT/verdict.txt"
exit $status
