#!/bin/bash
# Output safety and the --root jail on the GPU machine (run through scripts/device-run.sh).
# Changes nothing on the machine: everything is built under a temporary folder. Each check prints
# PASS or FAIL; what must hold:
#   1. --root is a jail that keeps NVIDIA's link chains working: a tree copied from this machine's
#      toolkit layout (/usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-13.0, links kept
#      as they are, absolute) gives the same toolkit facts (count, root, version, PATH's nvcc,
#      CUDA_HOME, /usr/local/cuda state) under --root as the live machine does;
#   2. a link in that tree to a host file (/proc/driver/nvidia/version -> the real one) is not
#      followed to the host: the tree's kernel module version is absent;
#   3. live `check --json --no-python` parses as JSON; `check --no-python` text and `env` text hold
#      no control byte but newlines;
#   4. `env use 13.0` evaluated by sh sets CUDA_HOME to an existing directory and puts its bin first
#      in PATH; `fix --shell` passes `sh -n`;
#   5. an install directory whose name holds a newline and `touch PWNED` (in the copied tree) is
#      refused by `env use` (exit 2, nothing on stdout) and no PWNED file appears after eval.
set -u
G=${GPUVET:-build/gpuvet}
OUT=${OUT:-/tmp/gpuvet-out}
export NCCL_NVLS_ENABLE=0 NO_COLOR=1 LC_ALL=C
T=$(mktemp -d /tmp/gpuvet-outsafe.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
facts() { # key=value lines of the toolkit layer of a check --json document
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["facts"].get("toolkit",{})
for k in sorted(d):
    if k.split(".")[0].isdigit() and not k.endswith((".root",".version",".nvcc")): continue
    v=d[k]; print(k, "=", v.get("value","("+v.get("state","?")+")"))' "$1"
}

echo "== 1. the link chain under --root"
R="$T/root"
real=$(readlink -f /usr/local/cuda)
echo "live: /usr/local/cuda -> $(readlink /usr/local/cuda) -> $(readlink /etc/alternatives/cuda 2>/dev/null) ($real)"
mkdir -p "$R/usr/local" "$R/etc/alternatives" "$R$real/bin" "$R/proc/driver/nvidia"
cp -P /usr/local/cuda "$R/usr/local/cuda"
[ -L /etc/alternatives/cuda ] && cp -P /etc/alternatives/cuda "$R/etc/alternatives/cuda"
# what the version is read from (version.json, version.txt, dist-info, cuda.h) and nvcc itself
for f in version.json version.txt dist-info include/cuda.h; do
	[ -e "$real/$f" ] && mkdir -p "$(dirname "$R$real/$f")" && cp -a "$real/$f" "$R$real/$f"
done
cp -p "$real/bin/nvcc" "$R$real/bin/"
env -i PATH=/usr/local/cuda/bin:/usr/bin:/bin CUDA_HOME=/usr/local/cuda HOME="$T" LC_ALL=C LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
	"$G" check --json --fast --no-history >"$OUT/outsafe-live.json" 2>"$OUT/outsafe-live.err"
env -i PATH=/usr/local/cuda/bin:/usr/bin:/bin CUDA_HOME=/usr/local/cuda HOME="$T" LC_ALL=C LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}" \
	"$G" --root "$R" check --json --fast --no-history >"$OUT/outsafe-root.json" 2>"$OUT/outsafe-root.err"
facts "$OUT/outsafe-live.json" | grep -v "seconds" >"$T/live.txt"
facts "$OUT/outsafe-root.json" | grep -v "seconds" >"$T/root.txt"
cat "$T/root.txt"
if [ ! -s "$T/live.txt" ] || [ ! -s "$T/root.txt" ]; then
	fail "no toolkit facts to compare (see outsafe-live.err, outsafe-root.err)"
elif diff "$T/live.txt" "$T/root.txt"; then pass "toolkit facts under --root match the live machine"; else fail "toolkit facts differ (diff above)"; fi

echo "== 2. a link to a host file"
# the host's file, at an absolute path outside the tree (the tree has nothing there)
cp /proc/driver/nvidia/version "$T/host-version" 2>/dev/null || echo "NVRM version: NVIDIA UNIX x86_64 Kernel Module  999.99" >"$T/host-version"
ln -s "$T/host-version" "$R/proc/driver/nvidia/version"
"$G" --root "$R" check --json --fast --no-history >"$OUT/outsafe-hostlink.json" 2>/dev/null
python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["facts"]["hardware"].get("kernel_module_version",{}); print(f)
sys.exit(0 if "value" not in f else 1)' "$OUT/outsafe-hostlink.json" && pass "host file not followed" || fail "the tree was judged by the host's file"

echo "== 3. live output"
"$G" check --json --no-python --no-history >"$OUT/outsafe-check.json" 2>/dev/null
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$OUT/outsafe-check.json" && pass "check --json parses" || fail "check --json does not parse"
"$G" check --no-python --no-history >"$OUT/outsafe-check.txt" 2>/dev/null
"$G" env >"$OUT/outsafe-env.txt" 2>/dev/null
for f in outsafe-check.txt outsafe-env.txt; do
	if LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]' "$OUT/$f"; then fail "$f holds control bytes"; else pass "$f has no control bytes"; fi
done

echo "== 4. env use and fix --shell"
"$G" env use 13.0 >"$T/use.sh" 2>"$OUT/outsafe-use.err"; echo "exit $?"; cat "$T/use.sh"
sh -c '. "$1"; [ -d "$CUDA_HOME" ] && case "$PATH" in "$CUDA_HOME"/bin:*) exit 0;; esac; exit 1' sh "$T/use.sh" \
	&& pass "env use evaluates: CUDA_HOME exists, its bin first" || fail "env use lines do not evaluate as they should"
"$G" fix --shell --no-python >"$T/fix.sh" 2>/dev/null
sh -n "$T/fix.sh" && pass "fix --shell is valid sh" || fail "fix --shell is not valid sh"
cp "$T/fix.sh" "$OUT/outsafe-fix.sh"

echo "== 5. a hostile install name"
H="$R/usr/local/cuda-12.6
touch PWNED
#"
mkdir -p "$H/bin" && echo '{"cuda": {"version": "12.6.3"}}' >"$H/version.json"
(cd "$T" && "$G" --root "$R" env use 12.6 >"$T/bad.sh" 2>"$T/bad.err"; echo "exit $?")
cat "$T/bad.err"
(cd "$T" && sh -c '. ./bad.sh' 2>/dev/null)
if [ ! -s "$T/bad.sh" ] && [ ! -e "$T/PWNED" ]; then pass "refused, nothing ran"; else fail "printed: $(cat "$T/bad.sh")"; fi
"$G" --root "$R" env >"$OUT/outsafe-env-hostile.txt" 2>&1
if LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]' "$OUT/outsafe-env-hostile.txt"; then fail "env shows control bytes"; else pass "env shows the name escaped"; fi
grep -n "12.6" "$OUT/outsafe-env-hostile.txt"
