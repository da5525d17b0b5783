#!/bin/bash
# On the GPU machine: two real GPU processes in two real cgroups that mimic a Kubernetes pod
# (kubepods.slice/...-pod<uid>.slice/cri-containerd-<id>.scope, with the kubelet's log
# directories naming it) and a Slurm step (slurmstepd.scope/job_4242/step_0, SLURM_* in its
# environment), then serve's labels, watch's owners, --pod and --job, as a user would see them.
# Creates the cgroups under /sys/fs/cgroup (cgroup v2) and /var/log/pods, /var/log/containers
# entries, and removes them at the end. Run through scripts/device-run.sh (carry build, .devlib).
# Writes under $OUT/fleet: watch.json, watch.txt, metrics.prom, pod.json, job.json, verdict.txt.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/fleet
mkdir -p "$OUT"
G=${GPUVET:-$PWD/build/gpuvet}
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1
UID_=5f1c2b9e-1234-4abc-9def-0123456789ab
CID=3f4e5d6c7b8a99887766554433221100ffeeddccbbaa00112233445566778899
CG=/sys/fs/cgroup
POD=$CG/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${UID_//-/_}.slice/cri-containerd-$CID.scope
JOB=$CG/system.slice/slurmstepd.scope/job_4242/step_0
v() { echo "$*" | tee -a "$OUT/verdict.txt"; }
cleanup() {
	kill $p1 $p2 2>/dev/null
	sleep 1
	for d in "$POD" "$JOB"; do
		[ -d "$d" ] && { cat "$d/cgroup.procs" 2>/dev/null | while read -r p; do echo "$p" >"$CG/cgroup.procs"; done; }
	done
	rmdir "$POD" "$(dirname "$POD")" "$CG/kubepods.slice/kubepods-besteffort.slice" "$CG/kubepods.slice" \
		"$JOB" "$(dirname "$JOB")" "$CG/system.slice/slurmstepd.scope" 2>/dev/null
	rm -rf "/var/log/pods/research_trainer-7d9f_$UID_" "/var/log/containers/trainer-7d9f_research_trainer-$CID.log"
}
trap cleanup EXIT
stat -fc %T $CG >"$OUT/cgroupfs.txt" 2>&1
v "cgroup fs: $(cat "$OUT/cgroupfs.txt")"
mkdir -p "$POD" "$JOB" 2>"$OUT/mkdir.err" || v "cannot create the cgroups: $(cat "$OUT/mkdir.err")"
mkdir -p "/var/log/pods/research_trainer-7d9f_$UID_/trainer" /var/log/containers
: >"/var/log/containers/trainer-7d9f_research_trainer-$CID.log"

(echo $BASHPID >"$POD/cgroup.procs" 2>/dev/null; exec python3 -c "
import torch, time
x = torch.empty(2 << 30, dtype=torch.uint8, device='cuda'); print('pod holding', flush=True); time.sleep(60)") &
p1=$!
(echo $BASHPID >"$JOB/cgroup.procs" 2>/dev/null; export SLURM_JOB_ID=4242 SLURM_JOB_USER=alice SLURM_STEP_ID=0 SLURM_JOB_GPUS=0
 exec python3 -c "
import torch, time
x = torch.empty(1 << 30, dtype=torch.uint8, device='cuda'); print('job holding', flush=True); time.sleep(60)") &
p2=$!
sleep 12
cat /proc/$p1/cgroup >"$OUT/p1.cgroup" 2>&1
cat /proc/$p2/cgroup >"$OUT/p2.cgroup" 2>&1
v "pod process $p1 cgroup: $(cat "$OUT/p1.cgroup")"
v "slurm process $p2 cgroup: $(cat "$OUT/p2.cgroup")"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv >"$OUT/smi-apps.csv" 2>&1
"$G" watch --once --json >"$OUT/watch.json" 2>"$OUT/watch.err"
"$G" watch --once >"$OUT/watch.txt" 2>&1
"$G" watch --once --json --pod trainer-7d9f >"$OUT/pod.json" 2>&1
"$G" watch --once --json --job 4242 >"$OUT/job.json" 2>&1
python3 - "$OUT" "$p1" "$p2" <<'PY' | tee -a "$OUT/verdict.txt"
import json, sys
out, p1, p2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
w = json.load(open(out + "/watch.json"))
procs = {p["pid"]: p for g in w["gpus"] for p in g["processes"]}
for pid, want in ((p1, "pod"), (p2, "slurm")):
    o = procs.get(pid, {}).get("owner")
    print("%s process %d owner: %s -> %s" % (want, pid, o, "OK" if o and o["kind"] == want else "WRONG"))
for name, pid in (("pod.json", p1), ("job.json", p2)):
    d = json.load(open(out + "/" + name))
    got = sorted(p["pid"] for g in d["gpus"] for p in g["processes"])
    print("%s shows %s -> %s" % (name, got, "OK" if got == [pid] else "WRONG"))
PY
"$G" serve --listen 127.0.0.1:0 --processes --dcgm-compat --check-interval 0 2>"$OUT/serve.err" &
sp=$!
port=""
for _ in $(seq 1 50); do
	port=$(sed -n 's|.*serving http://[^ ]*:\([0-9][0-9]*\)/metrics.*|\1|p' "$OUT/serve.err" | head -n 1)
	[ -n "$port" ] && break
	sleep 0.2
done
sleep 2
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1]).read().decode())' "$port" >"$OUT/metrics.prom" 2>&1
kill $sp
grep -E '^(gpuvet_gpu_temperature_celsius|DCGM_FI_DEV_GPU_TEMP|gpuvet_process_gpu_memory_bytes)\{' "$OUT/metrics.prom" | tee -a "$OUT/verdict.txt"
grep -q 'pod="trainer-7d9f".*namespace="research"\|namespace="research".*pod="trainer-7d9f"' "$OUT/metrics.prom" && v "serve: pod labels OK" || v "serve: pod labels MISSING"
grep -q 'hpc_job="4242"' "$OUT/metrics.prom" && v "serve: hpc_job label OK" || v "serve: hpc_job label MISSING"
command -v promtool >/dev/null && { promtool check metrics <"$OUT/metrics.prom" >"$OUT/promtool.txt" 2>&1; v "promtool exit $?"; }
