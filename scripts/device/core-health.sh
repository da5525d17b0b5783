#!/bin/bash
# Core contracts with the real driver and torch (run through scripts/device-run.sh; ~1 minute).
# What it must show:
#   - facts store under real probe threads (NVML per-GPU threads, the live torch probe reading
#     back what it put): `gpuvet check --json` 5 times gives the same fact keys each time, with
#     python.live.status ok, and no run dies of a signal;
#   - the one process runner (core/proc_stream.c) with the real Python probe: stdout (the JSON
#     answer) and stderr are collected, python.live.seconds is there;
#   - the child dies with gpuvet: `gpuvet check` killed by SIGKILL while its torch probe runs
#     leaves no probe process behind (PR_SET_PDEATHSIG) - "orphans after SIGKILL: 0";
#   - the same for a time limit: the Python probe is given 1 s (--python-timeout 1; torch's import
#     takes longer): python.live.failure "timeout" and no probe process left.
# Never changes clocks, power limits or modes; no GPU reset.
set -u
G=${GPUVET:-build/gpuvet}
OUT=${OUT:-/tmp/gpuvet-out}
export NCCL_NVLS_ENABLE=0
PY=$(command -v python3)
echo "== repeated check --json"
for i in 1 2 3 4 5; do
	"$G" check --json >"$OUT/core-check-$i.json" 2>"$OUT/core-check-$i.err"
	rc=$?
	echo "run $i: exit $rc"
	[ $rc -ge 128 ] && echo "FAIL: run $i died of signal $((rc - 128))"
done
"$PY" - "$OUT" <<'PYEOF'
import json, sys, os
out = sys.argv[1]
keys = []
for i in range(1, 6):
    d = json.load(open(os.path.join(out, "core-check-%d.json" % i)))
    ks = sorted("%s.%s" % (layer, k) for layer, g in d["facts"].items() for k in g)
    keys.append(ks)
    py = d["facts"].get("python", {})
    st = py.get("live.status", {})
    print("run %d: %d facts, python.live.status %s (%s), python.live.seconds %s, nvml.device_count %s" % (
        i, len(ks), st.get("value", st.get("state")), st.get("error", ""),
        py.get("live.seconds", {}).get("value"), d["facts"].get("nvml", {}).get("device_count", {}).get("value")))
same = all(k == keys[0] for k in keys)
print("same fact keys in every run:", same)
if not same:
    for i, k in enumerate(keys[1:], 2):
        print("run %d differs: only in 1: %s; only in %d: %s" % (i, sorted(set(keys[0]) - set(k))[:10], i, sorted(set(k) - set(keys[0]))[:10]))
PYEOF
echo
echo "== SIGKILL during the live probe"
orphans=0
for i in 1 2 3; do
	"$G" check --json >/dev/null 2>&1 &
	gp=$!
	child=""
	for t in $(seq 1 100); do # up to 10 s for the probe child to appear
		for c in $(pgrep -P "$gp"); do # the live probe: `python -I -c SOURCE`
			if tr '\0' ' ' <"/proc/$c/cmdline" 2>/dev/null | grep -q -- ' -I -c '; then
				child=$c
			fi
		done
		[ -n "$child" ] && break
		sleep 0.1
	done
	if [ -z "$child" ]; then
		echo "try $i: no child seen (the probe finished first?)"
		wait "$gp"
		continue
	fi
	echo "try $i: gpuvet $gp, child $child ($(head -c 40 /proc/$child/cmdline 2>/dev/null | tr '\0\n' '  '))"
	kill -9 "$gp"
	wait "$gp" 2>/dev/null
	sleep 0.5
	# a zombie is dead (a container's PID 1 may not reap what it inherits)
	state=$(awk '/^State:/ {print $2}' "/proc/$child/status" 2>/dev/null)
	if [ -n "$state" ] && [ "$state" != Z ]; then
		echo "  child $child still alive after gpuvet was killed"
		orphans=$((orphans + 1))
		kill -9 "$child" 2>/dev/null
	else
		echo "  child gone"
	fi
done
echo "orphans after SIGKILL: $orphans"
echo
echo "== a short time limit for the probe"
if "$G" check --help 2>&1 | grep -q -- "--python-timeout"; then
	"$G" check --json --python-timeout 1 >"$OUT/core-timeout.json" 2>&1
	echo "exit $?"
	"$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); p=d['facts']['python']; print('python.live.status', p.get('live.status')); print('python.live.failure', p.get('live.failure'))" "$OUT/core-timeout.json"
	sleep 0.5
	echo "probe processes left: $(pgrep -c -f -- ' -I -c ' || true) (0 expected, unless another Python runs with -I -c)"
else
	echo "skipped: this build has no --python-timeout"
fi
