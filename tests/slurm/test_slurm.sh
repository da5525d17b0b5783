#!/bin/bash
# contrib/slurm/gpuvet-slurm-check under both shells that are /bin/sh somewhere (dash: Debian and
# Ubuntu; bash started as sh: the RHEL family), with GPUVET_ARGS unset and set:
#
# 1. the script alone, with a stand-in gpuvet and scontrol, in an empty environment as slurmd
#    gives it (no PATH): the arguments gpuvet gets (GPUVET_ARGS split, never globbed), a healthy
#    answer drains nothing, a fail finding drains with it as the reason, and an exit 1 that is not
#    gpuvet's verdict (no finding in the output) drains nothing;
# 2. against a real Slurm: munged, slurmctld and slurmd started by this test on localhost
#    (Debian's slurm-wlm and munge, private ports, files in a temporary directory, killed at the
#    end), with the script as slurmd's HealthCheckProgram and as its Prolog: a healthy node stays
#    idle and runs a job; a failing one (no GPU; or, with GPUVET_ARGS, a --require that does not
#    hold) is drained with the finding as the reason, and as a Prolog the job does not run there;
#    nothing resumes a drained node.
#
# Part 2 skips (77) without slurm-wlm or as a user other than root (slurmd must run as root).
#   test_slurm.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
set -u
GPUVET=$(readlink -f "$1") FAKE_NVML=$(readlink -f "$2") SRC=$(readlink -f "$3")
SCRIPT=$SRC/contrib/slurm/gpuvet-slurm-check
HEALTHY=$SRC/tests/scenarios/100-nvidia-healthy-2xh200/root
NO_GPU=$SRC/tests/scenarios/001-no-gpu/root

T=$(mktemp -d /tmp/gpuvet-slurm-XXXXXX) # not TMPDIR: munged's socket path must stay short
chmod 0755 "$T"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$T"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
	exit 1
}

# the shells, by the name /bin/sh has on those systems: bash started as "sh" runs in POSIX mode
mkdir -p "$T/bash-as-sh"
ln -s "$(command -v bash)" "$T/bash-as-sh/sh"
SHELLS="$(command -v dash) $T/bash-as-sh/sh"
shell_name() { case $1 in */bash-as-sh/sh) echo "bash as sh" ;; *) echo "${1##*/}" ;; esac; }
command -v dash >/dev/null || fail "dash is not installed (Debian's /bin/sh)"

# ------------------------------------------------------------------ 1. the script alone

# a gpuvet that records its arguments one a line and answers what $T/stub.answer says
cat >"$T/stub-gpuvet" <<EOF
#!/bin/sh
for a in "\$@"; do printf '%s\n' "\$a"; done >"$T/stub.argv"
. "$T/stub.answer"
EOF
cat >"$T/stub-scontrol" <<EOF
#!/bin/sh
printf '%s\n' "\$*" >>"$T/stub-scontrol.calls"
EOF
chmod +x "$T/stub-gpuvet" "$T/stub-scontrol"
answer_ok() { echo 'echo "{\"findings\": []}"; exit 0' >"$T/stub.answer"; }
answer_fail() {
	cat >"$T/stub.answer" <<'EOF'
printf '{\n\t"findings":\t[{\n\t\t\t"id":\t"gpu.xid",\n\t\t\t"severity":\t"fail",\n\t\t\t"title":\t"GPU 3 reported Xid 79",\n'
printf '\t\t\t"evidence":\t[]\n\t\t}]\n}\n'
exit 1
EOF
}
answer_not_gpuvet() { echo 'echo "Segmentation fault" >&2; exit 1' >"$T/stub.answer"; }

# stub_run SHELL [VAR=VALUE...]: the script as slurmd starts it (an empty environment, no PATH),
# in a directory whose files a glob in GPUVET_ARGS would match
mkdir -p "$T/cwd"
touch "$T/cwd/!gpu.xid" "$T/cwd/--strict"
stub_run() {
	local sh=$1
	shift
	rm -f "$T/stub.argv" "$T/stub-scontrol.calls"
	(cd "$T/cwd" && env -i GPUVET="$T/stub-gpuvet" SCONTROL="$T/stub-scontrol" SLURMD_NODENAME=node7 "$@" \
		"$sh" "$SCRIPT" >"$T/stub.out" 2>&1)
}
argv() { tr '\n' ' ' <"$T/stub.argv"; }
for sh in $SHELLS; do
	answer_ok
	stub_run "$sh"
	rc=$?
	[ $rc -eq 0 ] || fail "$(shell_name "$sh"), GPUVET_ARGS unset, healthy: exit $rc ($(cat "$T/stub.out"))"
	[ "$(argv)" = "check --fast --json " ] || fail "$(shell_name "$sh"), GPUVET_ARGS unset: gpuvet got '$(argv)'"
	[ ! -e "$T/stub-scontrol.calls" ] || fail "$(shell_name "$sh"), GPUVET_ARGS unset, healthy: scontrol $(cat "$T/stub-scontrol.calls")"

	stub_run "$sh" 'GPUVET_ARGS=--require !gpu.*  --strict'
	rc=$?
	[ $rc -eq 0 ] || fail "$(shell_name "$sh"), GPUVET_ARGS set, healthy: exit $rc ($(cat "$T/stub.out"))"
	[ "$(argv)" = "check --fast --json --require !gpu.* --strict " ] ||
		fail "$(shell_name "$sh"): GPUVET_ARGS was not split into its words as written: gpuvet got '$(argv)'"

	answer_fail
	for args in "" "GPUVET_ARGS=--strict"; do
		stub_run "$sh" $args
		rc=$?
		[ $rc -eq 1 ] || fail "$(shell_name "$sh"), ${args:-GPUVET_ARGS unset}, a fail finding: exit $rc, not 1 ($(cat "$T/stub.out"))"
		[ "$(cat "$T/stub-scontrol.calls" 2>/dev/null)" = "update nodename=node7 state=drain reason=gpuvet: gpu.xid: GPU 3 reported Xid 79" ] ||
			fail "$(shell_name "$sh"), ${args:-GPUVET_ARGS unset}: scontrol was called as '$(cat "$T/stub-scontrol.calls" 2>/dev/null)'"
	done

	answer_not_gpuvet
	stub_run "$sh"
	rc=$?
	[ $rc -eq 0 ] || fail "$(shell_name "$sh"): an exit 1 without a finding: exit $rc, not 0 ($(cat "$T/stub.out"))"
	[ ! -e "$T/stub-scontrol.calls" ] || fail "$(shell_name "$sh"): an exit 1 without a finding drained: $(cat "$T/stub-scontrol.calls")"
	grep -q "could not run on node7 (exit 1 without a finding" "$T/stub.out" ||
		fail "$(shell_name "$sh"): an exit 1 without a finding is not logged as such: $(cat "$T/stub.out")"
	stub_run "$sh" GPUVET_DRAIN_ON_ERROR=1
	grep -q "reason=gpuvet: the health check could not run (exit 1 without a finding" "$T/stub-scontrol.calls" 2>/dev/null ||
		fail "$(shell_name "$sh"): GPUVET_DRAIN_ON_ERROR=1 did not drain for an exit 1 without a finding"
	# the active tests: GPUVET_DIAG_LEVEL runs diag at that level, and its first finding (the
	# GPU and the test) is the reason; as an Epilog, GPUVET_EPILOG_DIAG_LEVEL after a failed job
	answer_fail
	stub_run "$sh" GPUVET_DIAG_LEVEL=1
	[ "$(argv)" = "diag -r 1 --json --no-progress " ] || fail "$(shell_name "$sh"), GPUVET_DIAG_LEVEL=1: gpuvet got '$(argv)'"
	[ "$(cat "$T/stub-scontrol.calls" 2>/dev/null)" = "update nodename=node7 state=drain reason=gpuvet: gpu.xid: GPU 3 reported Xid 79" ] ||
		fail "$(shell_name "$sh"), GPUVET_DIAG_LEVEL=1: scontrol was called as '$(cat "$T/stub-scontrol.calls" 2>/dev/null)'"
	answer_ok
	stub_run "$sh" GPUVET_EPILOG_DIAG_LEVEL=2 SLURM_SCRIPT_CONTEXT=epilog SLURM_JOB_EXIT_CODE=256
	[ "$(argv)" = "diag -r 2 --json --no-progress " ] || fail "$(shell_name "$sh"), epilog after a failed job: gpuvet got '$(argv)'"
	stub_run "$sh" GPUVET_EPILOG_DIAG_LEVEL=2 SLURM_SCRIPT_CONTEXT=epilog SLURM_JOB_EXIT_CODE=0
	[ "$(argv)" = "check --fast --json " ] || fail "$(shell_name "$sh"), epilog after a job that passed: gpuvet got '$(argv)'"
	stub_run "$sh" GPUVET_DIAG_LEVEL=9
	[ "$(argv)" = "check --fast --json " ] || fail "$(shell_name "$sh"), GPUVET_DIAG_LEVEL=9: gpuvet got '$(argv)'"
	# the reason from a diag document's shape: its findings array, not a result's finding ids
	printf '%s\n' '{' '	"schema":	"gpuvet.diag/1",' '	"gpus":	[{' '			"results":	[{' \
		'					"finding":	"diag.memory-errors",' '					"finding_ids":	["diag.memory-errors"]' \
		'				}]' '		}],' '	"findings":	[{' '			"id":	"diag.memory-errors",' \
		'			"severity":	"fail",' '			"title":	"GPU 3: 1 error over 132.3 GiB",' '			"evidence":	[]' \
		'		}]' '}' >"$T/diag.json"
	printf 'cat "%s"; exit 1\n' "$T/diag.json" >"$T/stub.answer"
	stub_run "$sh" GPUVET_DIAG_LEVEL=3
	[ "$(cat "$T/stub-scontrol.calls" 2>/dev/null)" = "update nodename=node7 state=drain reason=gpuvet: diag.memory-errors: GPU 3: 1 error over 132.3 GiB" ] ||
		fail "$(shell_name "$sh"), a diag document: scontrol was called as '$(cat "$T/stub-scontrol.calls" 2>/dev/null)'"
done
echo "the script alone (and GPUVET_DIAG_LEVEL), under dash and bash as sh: ok"

# ------------------------------------------------------------------ 2. against a real Slurm

for t in munged mungekey slurmctld slurmd scontrol sinfo srun; do
	command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
	command -v "$t" >/dev/null 2>&1 || { echo "skip: $t not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "skip: slurmd needs root"; exit 77; }

# free TCP ports for slurmctld and slurmd, below the kernel's ephemeral range: a port that
# bind(0) handed out is free only until any client's connect() takes it as its local port (it
# did, in CI, while the parallel tests ran: slurmd "Unable to bind listen port")
ports=$(python3 -c 'import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
got = []
for port in random.sample(range(20000, max(low, 20002)), min(200, max(low, 20002) - 20000)):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        got.append(port)
    except OSError:
        pass
    s.close()
    if len(got) == 2:
        break
print(" ".join(map(str, got)))')
read -r ctld_port d_port <<<"$ports"
[ -n "$d_port" ] || fail "no two free TCP ports below the ephemeral range for slurmctld and slurmd"
node=$(hostname -s)

mkdir -p "$T/munge" "$T/state" "$T/spool"
chmod 0700 "$T/munge"
mungekey --create --keyfile="$T/munge/munge.key" >/dev/null 2>&1 ||
	dd if=/dev/urandom of="$T/munge/munge.key" bs=1024 count=1 2>/dev/null
chmod 0400 "$T/munge/munge.key"
munged --force --key-file="$T/munge/munge.key" --socket="$T/munge/sock" --pid-file="$T/munge/pid" \
	--log-file="$T/munge.log" --seed-file="$T/munge/seed" -F &
pids+=($!)

cat >"$T/slurm.conf" <<EOF
ClusterName=gpuvettest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$T/munge/sock
CredType=cred/munge
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/linear
HealthCheckProgram=$T/healthcheck
HealthCheckInterval=1
Prolog=$T/prolog
NodeName=$node NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf

# What slurmd runs, as HealthCheckProgram and as Prolog: the contrib script under the shell that
# $T/KIND.env names, in the environment slurmd gives it plus that file's variables, and gpuvet
# judging a machine tree (the test's GPU; $T/gpuvet adds --root, so that GPUVET_ARGS can be unset).
# Each run appends "KIND rc" to $T/runs.
for kind in healthcheck prolog; do
	cat >"$T/$kind" <<EOF
#!/bin/sh
. "$T/$kind.env"
"\$SHELL_UNDER_TEST" "$SCRIPT"
rc=\$?
echo "$kind \$rc" >>"$T/runs"
exit \$rc
EOF
	chmod +x "$T/$kind"
done
cat >"$T/gpuvet" <<EOF
#!/bin/sh
exec "$GPUVET" "\$@" --root "\$MACHINE"
EOF
chmod +x "$T/gpuvet"
printf 'device_count = 2\n' >"$T/fake.conf"
# machine KIND SHELL healthy|no-gpu [GPUVET_ARGS]: what the next run of KIND sees
machine() {
	{
		echo "export SHELL_UNDER_TEST=$2 GPUVET=$T/gpuvet SCONTROL=$(command -v scontrol) SLURM_CONF=$T/slurm.conf"
		if [ "$3" = healthy ]; then
			echo "export MACHINE=$HEALTHY GPUVET_NVML_LIB=$FAKE_NVML GPUVET_CUDA_LIB=${FAKE_NVML%/*}/libfake_cuda.so GPUVET_FAKE_CONFIG=$T/fake.conf"
		else
			echo "export MACHINE=$NO_GPU"
		fi
		if [ $# -ge 4 ]; then
			echo "export GPUVET_ARGS='$4'"
		else
			echo "unset GPUVET_ARGS"
		fi
	} >"$T/$1.env.new"
	mv "$T/$1.env.new" "$T/$1.env" # whole: slurmd may be starting a run meanwhile
}
machine healthcheck "$(command -v dash)" healthy
machine prolog "$(command -v dash)" healthy

slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out" 2>&1 &
pids+=($!)
sleep 1
slurmd -D -f "$T/slurm.conf" -N "$node" >"$T/slurmd.out" 2>&1 &
pids+=($!)

state() { sinfo -h -N -n "$node" -o '%T' 2>/dev/null | head -n 1; }
reason() { sinfo -h -R -n "$node" -o '%E' 2>/dev/null | head -n 1; }
wait_for() { # wait_for PATTERN SECONDS: until the node's state matches
	for _ in $(seq 1 $((2 * $2))); do
		case "$(state)" in $1) return 0 ;; esac
		sleep 0.5
	done
	return 1
}
runs() { cat "$T/runs" 2>/dev/null | grep -c "^$1 "; }
last_rc() { grep "^$1 " "$T/runs" | tail -n 1 | cut -d' ' -f2; }
wait_run() { # wait_run KIND COUNT SECONDS: until KIND has run more than COUNT times
	for _ in $(seq 1 $((2 * $3))); do
		[ "$(runs "$1")" -gt "$2" ] && return 0
		sleep 0.5
	done
	return 1
}
resume() {
	scontrol update nodename="$node" state=resume || fail "resume refused"
	wait_for 'idle*' 20 || fail "resume did not take: $(state)"
}
# slurmd runs the HealthCheckProgram every second (HealthCheckInterval=1): waits for one that
# started after the machine changed (the second run from now)
healthcheck_now() {
	local n
	n=$(runs healthcheck)
	wait_run healthcheck $((n + 1)) 30 || fail "slurmd does not run the HealthCheckProgram"
}
# a job on the node: its Prolog runs first; the job's output, or nothing
job() { timeout 60 srun -N1 -w "$node" -t 1 echo job-ran 2>"$T/srun.err"; }

if ! wait_for 'idle*' 40; then
	grep -h "Unable to bind\|Address already in use" "$T/slurmctld.out" "$T/slurmd.out" "$T/slurmctld.log" "$T/slurmd.log" 2>/dev/null
	fail "the node did not come up idle (state: $(state))"
fi

for sh in $SHELLS; do
	for args in unset set; do
		what="$(shell_name "$sh"), GPUVET_ARGS $args"
		if [ $args = set ]; then
			ok_args="--require nvml.device_count>=2" bad_args="--require nvml.device_count>=4"
			bad_reason="gpuvet: policy.require"
		else
			bad_reason="gpuvet: gpu.none"
		fi

		# HealthCheckProgram, a healthy node: stays idle
		machine healthcheck "$sh" healthy ${ok_args:+"$ok_args"}
		healthcheck_now
		[ "$(last_rc healthcheck)" = 0 ] || fail "$what: HealthCheckProgram on a healthy node: exit $(last_rc healthcheck)"
		case "$(state)" in idle*) ;; *) fail "$what: HealthCheckProgram drained a healthy node: $(state) ($(reason))" ;; esac

		# HealthCheckProgram, a failing node: drained with the finding as the reason
		if [ $args = set ]; then machine healthcheck "$sh" healthy "$bad_args"; else machine healthcheck "$sh" no-gpu; fi
		healthcheck_now
		wait_for 'drain*' 20 || fail "$what: HealthCheckProgram did not drain a failing node: $(state)"
		r=$(reason)
		case "$r" in "$bad_reason"*) ;; *) fail "$what: HealthCheckProgram: the reason is not the finding: '$r'" ;; esac
		echo "$what: drained by slurmd's HealthCheckProgram: $r"
		sleep 1
		case "$(state)" in drain*) ;; *) fail "$what: the node came back by itself: $(state)" ;; esac
		machine healthcheck "$sh" healthy ${ok_args:+"$ok_args"}
		healthcheck_now
		resume

		# Prolog, a healthy node: the job runs
		machine prolog "$sh" healthy ${ok_args:+"$ok_args"}
		n=$(runs prolog)
		out=$(job) || fail "$what: a job on a healthy node failed: $(cat "$T/srun.err")"
		[ "$out" = job-ran ] || fail "$what: a job on a healthy node printed '$out'"
		[ "$(runs prolog)" -gt "$n" ] && [ "$(last_rc prolog)" = 0 ] || fail "$what: the Prolog did not run, or failed"
		case "$(state)" in idle* | mix* | alloc* | completing*) ;; *) fail "$what: the Prolog drained a healthy node: $(state) ($(reason))" ;; esac

		# Prolog, a failing node: the job does not run, the node is drained with the finding
		if [ $args = set ]; then machine prolog "$sh" healthy "$bad_args"; else machine prolog "$sh" no-gpu; fi
		n=$(runs prolog)
		out=$(job)
		[ "$out" != job-ran ] || fail "$what: the job ran on a node whose Prolog failed"
		wait_run prolog "$n" 10 || fail "$what: the Prolog did not run"
		[ "$(last_rc prolog)" = 1 ] || fail "$what: the Prolog on a failing node: exit $(last_rc prolog)"
		wait_for 'drain*' 20 || fail "$what: the Prolog did not drain a failing node: $(state)"
		r=$(reason)
		case "$r" in "$bad_reason"*) ;; *) fail "$what: Prolog: the reason is not the finding: '$r'" ;; esac
		echo "$what: drained by the Prolog: $r"
		machine prolog "$sh" healthy
		scancel -u root 2>/dev/null
		resume
		unset ok_args bad_args
	done
done
echo "slurm: ok"
