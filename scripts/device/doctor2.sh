#!/bin/bash
# On the GPU machine (one H200): the job doctor's classes that scripts/device/gpm.sh does not run
# (its six jobs are the issue's table). About 2 minutes; never changes clocks, limits or modes.
#   gemm_fp64      an 8192^3 float64 matmul loop (Hopper: on the tensor cores, DMMA)
#                                                                  expected job.fp64-bound
#   loader_workers a small model fed by 2 DataLoader workers whose transforms saturate them
#                                                                  expected job.input-bound
#   pageable_h2d   256 MiB pageable host tensors copied to the GPU every step, little GPU work
#                                                                  expected job.input-bound (note: host-to-device)
#   pageable_d2h   a 256 MiB result copied to pageable host memory (.cpu()) every step
#                                                                  expected job.launch-bound (a sync each step; note: device-to-host)
#   idle_job       holds a context and 1 GiB, a tiny kernel every 0.5 s, the process sleeps
#                                                                  expected job.gpu-idle
#   crowded        the same idle job while another process holds 40% of the GPU's memory
#                                                                  expected job.memory-pressure
# Each: `gpuvet watch --pid PID --diagnose 8 --json` after a warm-up, beside nvidia-smi.
# Then `gpuvet run --min-seconds 10 -- python3 job.py gemm_fp64 22`: the same doctor's verdict at
# the end of a command run under gpuvet. ONLY="kind ..." runs only those jobs (and the run).
# Output in $OUT/doctor2: JOB.diagnose.json/.err, JOB.smi.csv, JOB.job.log, run.out/.err,
# verdicts.txt (PASS/FAIL per job), summary.txt (each job's figures).
# Run: bash scripts/device-run.sh scripts/device/doctor2.sh (carry build/gpuvet and .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/doctor2
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1 CUDA_VISIBLE_DEVICES=0
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}
Q=timestamp,utilization.gpu,memory.used,memory.total,power.draw,clocks.sm,clocks_event_reasons.active
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"

cat > "$OUT/job.py" <<'PY'
import os, sys, time
import torch
kind = sys.argv[1]
dev = torch.device("cuda")
end = time.time() + float(sys.argv[2])

class Heavy(torch.utils.data.Dataset):
    """transforms that keep a worker's core busy, little for the GPU"""
    def __len__(self):
        return 1 << 20
    def __getitem__(self, i):
        torch.set_num_threads(1)
        x = torch.rand(3, 224, 224)
        for _ in range(6):
            x = torch.nn.functional.avg_pool2d(x.unsqueeze(0), 3, 1, 1).squeeze(0)
        return x, i % 10

print("start", kind, flush=True)
if kind == "gemm_fp64":
    a = torch.randn(8192, 8192, device=dev, dtype=torch.float64)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.float64)
    while time.time() < end:
        for _ in range(4):
            c = a @ b
        torch.cuda.synchronize()
elif kind == "loader_workers":
    m = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 224 * 224, 10)).to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    dl = torch.utils.data.DataLoader(Heavy(), batch_size=16, num_workers=2)
    for x, y in dl:
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(m(x), y).backward()
        opt.step()
        if time.time() > end:
            break
elif kind == "pageable_h2d":
    host = torch.rand(1 << 26)  # 256 MiB, pageable
    w = torch.zeros(16, device=dev)
    while time.time() < end:
        x = host.to(dev)
        w.add_(x[:16])
    torch.cuda.synchronize()
elif kind == "pageable_d2h":
    dev_t = torch.rand(1 << 26, device=dev)  # 256 MiB; its copy to pageable host memory each step
    while time.time() < end:
        y = (dev_t * 1.0).cpu()
elif kind in ("idle_job", "crowded"):
    keep = torch.empty(1 << 30, dtype=torch.uint8, device=dev)
    x = torch.zeros(16, device=dev)
    while time.time() < end:
        x.add_(1)
        torch.cuda.synchronize()
        time.sleep(0.5)
elif kind == "holder":
    free, total = torch.cuda.mem_get_info()
    keep = torch.empty(int(total * 0.40), dtype=torch.uint8, device=dev)
    torch.cuda.synchronize()
    while time.time() < end:
        time.sleep(0.5)
print("end", kind, flush=True)
PY

wait_start() { # log
	for _ in $(seq 1 80); do grep -q '^start' "$1" && return 0; sleep 0.25; done
	return 1
}

run_job() { # kind expected [note text]
	kind=$1 want=$2 note=${3:-}
	case " ${ONLY:-$kind} " in *" $kind "*) ;; *) return 0 ;; esac
	hp=""
	if [ "$kind" = crowded ]; then
		"$PY" "$OUT/job.py" holder 40 > "$OUT/holder.job.log" 2>&1 &
		hp=$!
		wait_start "$OUT/holder.job.log"
		sleep 2
	fi
	"$PY" "$OUT/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 &
	jp=$!
	wait_start "$OUT/$kind.job.log"
	sleep 5 # CUDA context, cuBLAS handles, the workers started
	"$G" watch --pid "$jp" --diagnose 8 --json > "$OUT/$kind.diagnose.json" 2> "$OUT/$kind.diagnose.err" &
	dp=$!
	sleep 4
	nvidia-smi --query-gpu=$Q --format=csv > "$OUT/$kind.smi.csv" 2>&1
	wait "$dp"
	echo "$kind diagnose exit $?" >> "$OUT/exit-codes.txt"
	pkill -P "$jp" 2>/dev/null
	kill "$jp" 2>/dev/null
	wait "$jp" 2>/dev/null
	if [ -n "$hp" ]; then
		kill "$hp"
		wait "$hp" 2>/dev/null
	fi
	"$PY" - "$OUT/$kind.diagnose.json" "$kind" "$want" "$note" >> "$OUT/verdicts.txt" 2>> "$OUT/summary.txt" <<'PY'
import json, sys
path, kind, want, note = sys.argv[1:5]
try:
    d = json.load(open(path))
except Exception as e:
    print("FAIL %s: no JSON (%s)" % (kind, e))
    sys.exit(0)
dg, g = d["diagnosis"], (d.get("gpus") or [{}])[0]
a = g.get("activity", {})
sys.stderr.write("%-15s %-22s util %s SM %s tensor %s DFMA %s DRAM %s FP64 %s PCIe rx %s tx %s | cpu %s | job mem %s other %s | %s | notes %s\n" % (
    kind, dg["id"], g.get("utilization_gpu_ratio"), a.get("sm_active_ratio"), a.get("tensor_active_ratio"),
    a.get("tensor_dfma_active_ratio"), a.get("dram_active_ratio"), a.get("fp64_active_ratio"),
    a.get("pcie_rx_bytes_per_second"), a.get("pcie_tx_bytes_per_second"), json.dumps(d["job"].get("cpu")), g.get("job_memory_bytes"),
    g.get("other_memory_bytes"), dg.get("evidence"), dg.get("notes")))
ok = dg["id"] == want
text = json.dumps(dg)
if ok and note and note not in text:
    ok = False
    want += " with '%s' in it" % note
print("%s %s got %s expected %s" % ("PASS" if ok else "FAIL", kind, dg["id"], want))
PY
}
run_job gemm_fp64 job.fp64-bound "FP64 tensor"
run_job loader_workers job.input-bound "workers are saturated"
run_job pageable_h2d job.input-bound "pageable memory"
run_job pageable_d2h job.launch-bound "device-to-host"
run_job idle_job job.gpu-idle
run_job crowded job.memory-pressure "other"

# the job must hold the GPU --min-seconds (default 30) for a verdict
timeout 60 "$G" run --min-seconds 10 -- "$PY" "$OUT/job.py" gemm_fp64 22 > "$OUT/run.out" 2> "$OUT/run.err"
echo "run exit $?" >> "$OUT/exit-codes.txt"
if grep -q "FP64" "$OUT/run.err"; then
	echo "PASS run: gpuvet run names the FP64-bound job" >> "$OUT/verdicts.txt"
else
	echo "FAIL run: no FP64 verdict in run.out/run.err" >> "$OUT/verdicts.txt"
fi
cat "$OUT/summary.txt" "$OUT/verdicts.txt"
! grep -q FAIL "$OUT/verdicts.txt"
