#!/bin/bash
# On the GPU machine: NVML's GPM counters and the job doctor against real jobs, and the
# exporter's cost with GPM on and off. About 4 minutes. First it compiles two tiny programs
# with gcc, one on the toolkit's nvml.h and one on ours (src/nvidia/nvml.h), and compares the
# GPM and process-utilization struct sizes, offsets, versions and metric ids (layout-*.txt).
#
# For each job of the issue's table (torch there; every job runs alone on GPU 0):
#   gemm_bf16    an 8192^3 bf16 matmul loop                       expected job.tensor-bound
#   copy         a 1 GiB device-to-device copy loop               expected job.dram-bound
#   resnet_fp32  ResNet-50 training steps in fp32, TF32 off       expected job.fp32-math
#   cpu_fed      batches made on the CPU in the main process      expected job.input-bound
#   tiny_sync    tiny kernels with an .item() sync each step      expected job.launch-bound
#   mem95        a process holding 95% of the memory, idle        expected job.memory-pressure
# it records `gpuvet watch --pid PID --diagnose 10 --json` (the verdict, its GPM means and the
# CPU figures), a `serve --dcgm-compat` scrape in the middle of the window beside an nvidia-smi
# query of the same moment, and during gemm_bf16 `watch` text (must not report gpu.throttled at
# the power cap). Then serve alone (no job): 300 scrapes each with GPM on and --no-gpm, latency
# p50/p99, the exporter's CPU share and RSS. Never changes clocks, limits or modes.
#
# Output in $OUT/gpm: layout-nvidia.txt and layout-ours.txt, JOB.diagnose.json, JOB.metrics.prom, JOB.smi.csv, JOB.job.log,
# gemm_bf16.watch.txt, cost.json, verdicts.txt (one line a job: PASS/FAIL id expected).
# Run: bash scripts/device-run.sh scripts/device/gpm.sh (carry build and .devlib)
set -u
OUT=${OUT:-/tmp/gpuvet-out}/gpm
mkdir -p "$OUT/jobs"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0 GPUVET_NO_HISTORY=1 CUDA_VISIBLE_DEVICES=0
G=${GPUVET:-./build/gpuvet}
PY=${PYTHON:-python3}
Q=timestamp,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,power.limit,clocks.sm,clocks.max.sm,clocks_event_reasons.active,temperature.gpu
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"

# our GPM and process-utilization declarations (src/nvidia/nvml.h) against the toolkit's nvml.h
# there: sizes, offsets, the version numbers and metric ids must print the same
H=$(ls /usr/local/cuda/include/nvml.h /usr/local/cuda/targets/*/include/nvml.h 2>/dev/null | head -1)
layout() { # header-define, include
	cat > "$OUT/layout-$1.c" <<C
#include <stddef.h>
#include <stdio.h>
$2
int main(void)
{
	printf("nvmlGpmMetric_t %zu value@%zu info@%zu\\n", sizeof(nvmlGpmMetric_t), offsetof(nvmlGpmMetric_t, value),
	       offsetof(nvmlGpmMetric_t, metricInfo));
	printf("MetricsGet sample1@%zu sample2@%zu metrics@%zu\\n", offsetof(METRICS_GET, sample1), offsetof(METRICS_GET, sample2),
	       offsetof(METRICS_GET, metrics));
	printf("nvmlGpmSupport_t %zu version %d get_version %d\\n", sizeof(nvmlGpmSupport_t), NVML_GPM_SUPPORT_VERSION,
	       NVML_GPM_METRICS_GET_VERSION);
	printf("nvmlProcessUtilizationSample_t %zu ts@%zu sm@%zu\\n", sizeof(nvmlProcessUtilizationSample_t),
	       offsetof(nvmlProcessUtilizationSample_t, timeStamp), offsetof(nvmlProcessUtilizationSample_t, smUtil));
	printf("ids %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d\\n", IDS);
	return 0;
}
C
}
if [ -n "$H" ]; then
	layout nvidia "#include \"$H\"
#define METRICS_GET nvmlGpmMetricsGet_t
#define IDS NVML_GPM_METRIC_GRAPHICS_UTIL, NVML_GPM_METRIC_SM_UTIL, NVML_GPM_METRIC_SM_OCCUPANCY, NVML_GPM_METRIC_INTEGER_UTIL, NVML_GPM_METRIC_ANY_TENSOR_UTIL, NVML_GPM_METRIC_DFMA_TENSOR_UTIL, NVML_GPM_METRIC_HMMA_TENSOR_UTIL, NVML_GPM_METRIC_IMMA_TENSOR_UTIL, NVML_GPM_METRIC_DRAM_BW_UTIL, NVML_GPM_METRIC_FP64_UTIL, NVML_GPM_METRIC_FP32_UTIL, NVML_GPM_METRIC_FP16_UTIL, NVML_GPM_METRIC_PCIE_TX_PER_SEC, NVML_GPM_METRIC_PCIE_RX_PER_SEC, NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC"
	layout ours "#include \"$PWD/src/nvidia/nvml.h\"
#define METRICS_GET gv_nvmlGpmMetricsGet_t
#define IDS gv_gpm_fields[0].nvml_id, gv_gpm_fields[1].nvml_id, gv_gpm_fields[2].nvml_id, gv_gpm_fields[3].nvml_id, gv_gpm_fields[4].nvml_id, gv_gpm_fields[5].nvml_id, gv_gpm_fields[6].nvml_id, gv_gpm_fields[7].nvml_id, gv_gpm_fields[8].nvml_id, gv_gpm_fields[9].nvml_id, gv_gpm_fields[10].nvml_id, gv_gpm_fields[11].nvml_id, gv_gpm_fields[12].nvml_id, gv_gpm_fields[13].nvml_id, gv_gpm_fields[14].nvml_id, gv_gpm_fields[15].nvml_id"
	for w in nvidia ours; do
		gcc -I"$PWD/src" -o "$OUT/layout-$w" "$OUT/layout-$w.c" > "$OUT/layout-$w.err" 2>&1 && "$OUT/layout-$w" > "$OUT/layout-$w.txt"
	done
	if cmp -s "$OUT/layout-nvidia.txt" "$OUT/layout-ours.txt"; then
		echo "PASS layout: our GPM declarations match $H" >> "$OUT/verdicts.txt"
	else
		echo "FAIL layout: differs from $H (layout-*.txt, layout-*.err)" >> "$OUT/verdicts.txt"
	fi
else
	echo "SKIP layout: no nvml.h under /usr/local/cuda" >> "$OUT/verdicts.txt"
fi
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
"$G" watch --once --json > "$OUT/watch-once.json" 2>&1

cat > "$OUT/jobs/job.py" <<'PY'
import os, sys, time
import torch
kind = sys.argv[1]
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
end = time.time() + float(sys.argv[2])
print("start", kind, flush=True)
if kind == "gemm_bf16":
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    while time.time() < end:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
elif kind == "copy":
    a = torch.empty(1 << 28, device=dev, dtype=torch.float32)  # 1 GiB
    b = torch.empty_like(a)
    while time.time() < end:
        for _ in range(20):
            b.copy_(a)
        torch.cuda.synchronize()
elif kind == "resnet_fp32":
    import torchvision
    m = torchvision.models.resnet50().to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    x = torch.randn(64, 3, 224, 224, device=dev)
    y = torch.randint(0, 1000, (64,), device=dev)
    lossf = torch.nn.CrossEntropyLoss()
    while time.time() < end:
        opt.zero_grad(set_to_none=True)
        lossf(m(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
elif kind == "cpu_fed":
    import torchvision
    torch.set_num_threads(1)
    m = torchvision.models.resnet18().to(dev)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    lossf = torch.nn.CrossEntropyLoss()
    while time.time() < end:
        # the "loader" in the main process: decode and augment on the CPU, pageable memory
        x = torch.rand(32, 3, 224, 224)
        for _ in range(3):
            x = torch.nn.functional.avg_pool2d(x, 3, 1, 1)
        y = torch.randint(0, 1000, (32,))
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad(set_to_none=True)
        lossf(m(x), y).backward()
        opt.step()
    torch.cuda.synchronize()
elif kind == "tiny_sync":
    x = torch.zeros(16, device=dev)
    s = 0.0
    while time.time() < end:
        x.add_(1)
        s += x[0].item()
elif kind == "mem95":
    free, total = torch.cuda.mem_get_info()
    want = int(total * 0.95) - (total - free)
    blocks = []
    while want > 0:
        n = min(want, 1 << 30)
        blocks.append(torch.empty(n, dtype=torch.uint8, device=dev))
        want -= n
    torch.cuda.synchronize()
    while time.time() < end:
        time.sleep(0.5)
print("end", kind, flush=True)
PY

# serve with DCGM names for the whole job series
"$G" serve --listen 127.0.0.1:0 --interval 1 --dcgm-compat --hostname gpu-node --check-interval 0 2> "$OUT/serve-jobs.err" &
SERVE=$!
port=""
for _ in $(seq 1 100); do
	port=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve-jobs.err")
	[ -n "$port" ] && break
	sleep 0.1
done
get() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=10).read())' "$1"; }

run_job() { # kind expected
	kind=$1 want=$2
	"$PY" "$OUT/jobs/job.py" "$kind" 30 > "$OUT/$kind.job.log" 2>&1 &
	jp=$!
	# warm-up: torch import, CUDA context, cuDNN autotuning
	for _ in $(seq 1 60); do grep -q '^start' "$OUT/$kind.job.log" && break; sleep 0.25; done
	sleep 5
	"$G" watch --pid "$jp" --diagnose 10 --json > "$OUT/$kind.diagnose.json" 2> "$OUT/$kind.diagnose.err" &
	dp=$!
	if [ "$kind" = gemm_bf16 ]; then
		"$G" watch --pid "$jp" --count 4 --interval 1 > "$OUT/$kind.watch.txt" 2>&1
	else
		sleep 4
	fi
	sleep 1
	nvidia-smi --query-gpu=$Q --format=csv > "$OUT/$kind.smi.csv" 2>&1
	[ -n "$port" ] && get "http://127.0.0.1:$port/metrics" > "$OUT/$kind.metrics.prom"
	nvidia-smi --query-gpu=$Q --format=csv,noheader >> "$OUT/$kind.smi.csv" 2>&1
	wait "$dp"
	echo "$kind diagnose exit $?" >> "$OUT/exit-codes.txt"
	kill "$jp" 2>/dev/null
	wait "$jp" 2>/dev/null
	got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["diagnosis"]["id"])' "$OUT/$kind.diagnose.json" 2>/dev/null)
	if [ "$got" = "$want" ]; then echo "PASS $kind $got" >> "$OUT/verdicts.txt"; else echo "FAIL $kind got '$got' expected $want" >> "$OUT/verdicts.txt"; fi
}
run_job gemm_bf16 job.tensor-bound
run_job copy job.dram-bound
run_job resnet_fp32 job.fp32-math
run_job cpu_fed job.input-bound
run_job tiny_sync job.launch-bound
run_job mem95 job.memory-pressure
kill "$SERVE"
wait "$SERVE"
# the issue: "degraded: clocks held back by power cap" for a GEMM at 690/700 W
if grep -q 'gpu.throttled' "$OUT/gemm_bf16.watch.txt"; then
	echo "FAIL gemm_bf16 watch reports gpu.throttled at full load" >> "$OUT/verdicts.txt"
else
	echo "PASS gemm_bf16 watch: no gpu.throttled at full load" >> "$OUT/verdicts.txt"
fi

# the exporter's cost, GPM on and off: 300 scrapes, latency, CPU share, RSS
cost() { # name, extra args
	name=$1
	shift
	"$G" serve --listen 127.0.0.1:0 --interval 1 --check-interval 0 "$@" 2> "$OUT/serve-$name.err" &
	sp=$!
	p=""
	for _ in $(seq 1 100); do
		p=$(sed -n 's/.*serving http:\/\/127\.0\.0\.1:\([0-9]*\)\/metrics.*/\1/p' "$OUT/serve-$name.err")
		[ -n "$p" ] && break
		sleep 0.1
	done
	sleep 3
	python3 - "$p" "$sp" "$name" >> "$OUT/cost.json" <<'PY'
import json, os, sys, time, urllib.request
port, pid, name = sys.argv[1], int(sys.argv[2]), sys.argv[3]
hz = os.sysconf("SC_CLK_TCK")
def cpu():
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz
def status(k):
    for l in open("/proc/%d/status" % pid):
        if l.startswith(k + ":"):
            return int(l.split()[1])
c0, t0 = cpu(), time.time()
lat = []
for i in range(300):
    s = time.perf_counter()
    body = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10).read()
    lat.append((time.perf_counter() - s) * 1000)
    time.sleep(0.05)
c1, t1 = cpu(), time.time()
lat.sort()
print(json.dumps({"mode": name, "scrapes": len(lat), "p50_ms": lat[len(lat) // 2], "p99_ms": lat[int(len(lat) * 0.99) - 1],
                  "max_ms": lat[-1], "cpu_share": (c1 - c0) / (t1 - t0), "rss_kib": status("VmRSS"),
                  "hwm_kib": status("VmHWM"), "bytes": len(body), "gpm_series": body.count(b"gpuvet_gpu_sm_active_ratio{")}))
PY
	kill "$sp"
	wait "$sp"
}
cost gpm_on
cost gpm_off --no-gpm
cat "$OUT/verdicts.txt" "$OUT/cost.json"
! grep -q FAIL "$OUT/verdicts.txt"
