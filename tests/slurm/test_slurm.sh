#!/bin/bash
# contrib/slurm/gpuvet-slurm-check against a real Slurm: munged, slurmctld and slurmd started by
# this test on localhost (Debian's slurm-wlm and munge, private ports, files in a temporary
# directory, killed at the end). A GPU node whose check fails is drained with the finding as the
# reason, both when the script is run by hand and when slurmd runs it as HealthCheckProgram; a
# healthy node stays idle; nothing resumes a drained node. Skips (77) without slurm-wlm or as a
# user other than root (slurmd must run as root).
#   test_slurm.sh GPUVET FAKE_NVML_LIB SOURCE_DIR
set -u
GPUVET=$(readlink -f "$1") FAKE_NVML=$(readlink -f "$2") SRC=$(readlink -f "$3")
for t in munged mungekey slurmctld slurmd scontrol sinfo; do
	command -v "$t" >/dev/null 2>&1 || PATH=$PATH:/usr/sbin
	command -v "$t" >/dev/null 2>&1 || { echo "skip: $t not installed (apt-get install slurm-wlm munge)"; exit 77; }
done
[ "$(id -u)" -eq 0 ] || { echo "skip: slurmd needs root"; exit 77; }

T=$(mktemp -d /tmp/gpuvet-slurm-XXXXXX)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.5
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; for f in "$T"/*.log; do echo "--- $f"; tail -n 20 "$f"; done; exit 1; }

# free TCP ports for slurmctld and slurmd
ports=$(python3 -c 'import socket
ss=[socket.socket() for _ in range(2)]
[s.bind(("127.0.0.1",0)) for s in ss]
print(" ".join(str(s.getsockname()[1]) for s in ss))')
read -r ctld_port d_port <<<"$ports"
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
HealthCheckInterval=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$T/slurm.conf

# what slurmd runs: the contrib script, with gpuvet judging a machine tree (the test's GPU);
# $T/hc.env says which machine: a healthy one (the fake NVML's two H200s) to start with
cat >"$T/healthcheck" <<EOF
#!/bin/sh
. $T/hc.env
export GPUVET=$GPUVET SCONTROL=scontrol SLURM_CONF=$T/slurm.conf
exec sh $SRC/contrib/slurm/gpuvet-slurm-check
EOF
chmod +x "$T/healthcheck"
printf 'device_count = 2\n' >"$T/fake.conf"
healthy() {
	cat >"$T/hc.env" <<EOF
export GPUVET_ARGS="--root $SRC/tests/scenarios/100-nvidia-healthy-2xh200/root"
export GPUVET_NVML_LIB=$FAKE_NVML GPUVET_CUDA_LIB=${FAKE_NVML%/*}/libfake_cuda.so GPUVET_FAKE_CONFIG=$T/fake.conf
EOF
}
no_gpu() {
	echo "export GPUVET_ARGS=\"--root $SRC/tests/scenarios/001-no-gpu/root\"" >"$T/hc.env"
}
healthy

slurmctld -D -i -f "$T/slurm.conf" >"$T/slurmctld.out" 2>&1 &
pids+=($!)
sleep 1
slurmd -D -f "$T/slurm.conf" -N "$node" >"$T/slurmd.out" 2>&1 &
pids+=($!)

state() { sinfo -h -N -n "$node" -o '%T' 2>/dev/null | head -n 1; }
reason() { sinfo -h -R -n "$node" -o '%E' 2>/dev/null | head -n 1; }
wait_for() { # wait_for WHAT SECONDS: until state matches the pattern
	for _ in $(seq 1 $((2 * $2))); do
		case "$(state)" in $1) return 0 ;; esac
		sleep 0.5
	done
	return 1
}
wait_for 'idle*' 40 || fail "the node did not come up idle (state: $(state))"

# 1. a healthy node (slurmd ran the check at its start too): nothing happens
out=$(SLURMD_NODENAME=$node sh "$T/healthcheck" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "a healthy node: exit $rc ($out)"
case "$(state)" in idle*) ;; *) fail "a healthy node was touched: $(state)" ;; esac

# 2. no GPU visible: drained, with the finding as the reason
no_gpu
out=$(SLURMD_NODENAME=$node sh "$T/healthcheck" 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "a failing node: exit $rc, not 1 ($out)"
wait_for 'drain*' 10 || fail "not drained: $(state)"
r=$(reason)
case "$r" in "gpuvet: gpu.none"*) ;; *) fail "the drain reason is not the finding: '$r'" ;; esac
echo "drained by hand: $r"

# 3. nothing resumes it by itself; an operator does, then slurmd's own HealthCheckProgram run
# drains it again (scontrol reconfigure starts it; interval 0 means only at start/reconfigure,
# so ask slurmd directly by restarting it with an interval)
sleep 2
case "$(state)" in drain*) ;; *) fail "the node came back by itself: $(state)" ;; esac
scontrol update nodename="$node" state=resume || fail "resume refused"
wait_for 'idle*' 10 || fail "resume did not take: $(state)"
sed -i 's/^HealthCheckInterval=0/HealthCheckInterval=2/' "$T/slurm.conf"
scontrol reconfigure || fail "reconfigure refused"
wait_for 'drain*' 40 || fail "slurmd's HealthCheckProgram run did not drain the node: $(state)"
r=$(reason)
case "$r" in "gpuvet: gpu.none"*) ;; *) fail "HealthCheckProgram: the reason is not the finding: '$r'" ;; esac
echo "drained by slurmd's HealthCheckProgram: $r"
echo "slurm: ok"
