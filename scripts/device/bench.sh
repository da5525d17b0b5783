#!/bin/sh
# GPU-machine checks of gpuvet bench, in one call: gpuvet bench (quick and full, --json) side by
# side with what a user would measure instead (the anchors: .anchors/bench_torch.py,
# .anchors/nccl_allreduce.py, nccl-tests' all_reduce_perf when installed, and a bare
# cuLaunchKernel loop, build/tests/launch_anchor), plus the GPU test of the bench kernels
# (build/tests/test_bench_gpu). Run from the repository root through scripts/device-run.sh
# (build/, .devlib/ and .anchors/ carried), on the 2-GPU machine for P2P and NCCL:
#   bash scripts/device-run.sh scripts/device/bench.sh        (kind nvidia-h200-x2)
#
# It writes, under $OUT/bench/:
#   test_bench_gpu.txt          generators bit-exact with their CPU model, every stream kernel
#                               element right, every group's figures verified (small sizes)
#   bench-quick.json/.err       gpuvet bench --quick --json (wall time in steps.txt)
#   bench-full.json/.err        gpuvet bench --json, right after the PyTorch anchor
#   bench_torch.json/.log       .anchors/bench_torch.py; nccl.json/nccl_allreduce.log; nccl-tests.txt
#   launch_anchor.json          the bare cuLaunchKernel loop
#   bench-explain.txt           the text output with --explain (launch group)
#   verdict.txt                 PASS/FAIL per target of issue 6, with the numbers
#   benchmarks-table.md         the rows for docs/benchmarks.md (gpuvet | anchor | ratio)
#
# What it must show on the 2 x H200 machine: test_bench_gpu "PASSED: 0 failures"; verdict.txt
# "all targets hold": GEMM bf16/fp16/fp8/tf32 >= 1.0x torch; copy or triad >= 4224 GB/s and
# >= torch's copy; pinned h2d/d2h >= 0.98x torch; launch within 1.1x of the bare loop (and of
# 4.4 / 9.8 us); graph replay < half a plain launch; all-reduce >= torch.distributed at 1 GiB and
# nccl-tests at 512 MiB; every GEMM and bandwidth spread < 3%; nothing verified wrong; the quick
# run's own time <= 30 s.
# Exit status: 0 when every target holds, 1 otherwise.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/bench
export OUT  # the anchor scripts write their JSON to $OUT
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
G=${GPUVET:-./build/gpuvet}
DB="$OUT/history.db"
rm -f "$DB" "$DB-wal" "$DB-shm"
now() { date +%s.%N; }
log() { echo "$*" >> "$OUT/steps.txt"; }

date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
hostname >> "$OUT/date.txt"
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,pcie.link.gen.max,pcie.link.width.max,clocks.max.sm,clocks.max.mem,power.limit \
	--format=csv > "$OUT/nvidia-smi.csv" 2>&1
nvidia-smi topo -m > "$OUT/topo.txt" 2>&1
nproc > "$OUT/nproc.txt"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

# 1. correctness of the kernels and every group on the GPU (small sizes)
t=$(now); ./build/tests/test_bench_gpu > "$OUT/test_bench_gpu.txt" 2>&1; rc=$?
log "test_bench_gpu exit $rc ($(awk "BEGIN{print $(now) - $t}") s)"

# 2. the launch anchor: a bare cuLaunchKernel loop (nothing of gpuvet)
./build/tests/launch_anchor 20000 > "$OUT/launch_anchor.json" 2> "$OUT/launch_anchor.err"
log "launch_anchor exit $?"

# 3. gpuvet bench --quick, timed from outside
t=$(now); "$G" bench --quick --json --db "$DB" > "$OUT/bench-quick.json" 2> "$OUT/bench-quick.err"; rc=$?
log "bench --quick exit $rc wall $(awk "BEGIN{print $(now) - $t}") s"

# 4. PyTorch anchor (GEMM per dtype, device copy, transfers, launch per op, CPU GEMM, P2P)
t=$(now); python3 .anchors/bench_torch.py > "$OUT/bench_torch.log" 2>&1; rc=$?
log "bench_torch.py exit $rc ($(awk "BEGIN{print $(now) - $t}") s)"

# 5. gpuvet bench, full run, right after the anchor
t=$(now); "$G" bench --json --db "$DB" > "$OUT/bench-full.json" 2> "$OUT/bench-full.err"; rc=$?
log "bench (full) exit $rc wall $(awk "BEGIN{print $(now) - $t}") s"
"$G" bench --quick --explain --no-history --only launch > "$OUT/bench-explain.txt" 2>&1

# 6. NCCL anchors (two GPUs or more)
if [ "$ngpu" -ge 2 ]; then
	t=$(now); python3 .anchors/nccl_allreduce.py > "$OUT/nccl_allreduce.log" 2>&1; rc=$?
	log "nccl_allreduce.py exit $rc ($(awk "BEGIN{print $(now) - $t}") s)"
	if command -v all_reduce_perf > /dev/null 2>&1; then
		all_reduce_perf -b 8M -e 1G -f 2 -g "$ngpu" > "$OUT/nccl-tests.txt" 2>&1
		log "all_reduce_perf exit $?"
	fi
fi
"$G" history list --db "$DB" > "$OUT/history-list.txt" 2>&1

# 7. verdict against the targets
python3 - "$OUT" > "$OUT/verdict.txt" 2>&1 <<'PY'
import json, os, sys, re
out = sys.argv[1]
def load(name):
    try:
        return json.load(open(os.path.join(out, name)))
    except Exception as ex:
        print(f"cannot read {name}: {ex}")
        return None
full, quick, torch = load("bench-full.json"), load("bench-quick.json"), load("bench_torch.json")
anchor, nccl = load("launch_anchor.json"), load("nccl.json")
bad, rows = [], []
def figs(doc):
    return {f["id"]: f for f in (doc or {}).get("figures", [])}
F, Q = figs(full), figs(quick)
def val(d, k):
    f = d.get(k)
    return f.get("value") if f and not f.get("skipped") else None
def target(name, ok, text):
    print(("PASS " if ok else "FAIL ") + name + ": " + text)
    if not ok:
        bad.append(name)
def fmt(x):
    return f"{x:.4g}" if isinstance(x, (int, float)) else "-"
def row(fig, ours, unit, anc, anc_name):
    ratio = f"{ours / anc:.3f}x" if isinstance(ours, (int, float)) and isinstance(anc, (int, float)) and anc else "-"
    rows.append(f"| {fig} | {fmt(ours)} {unit} | {anc_name}: {fmt(anc)} | {ratio} |")
# GEMM against torch.matmul / torch._scaled_mm at the same size
for dt in ("bf16", "fp16", "fp8", "tf32", "fp32", "fp64"):
    ours, anc = val(F, f"gemm.{dt}"), (torch or {}).get(f"gemm_{dt}_tflops")
    row(f"GEMM {dt} 8192", ours, "TFLOP/s", anc, "torch")
    if dt in ("bf16", "fp16", "fp8", "tf32"):
        target(f"gemm {dt} >= 1.0x torch", bool(ours and anc and ours >= anc), f"{ours} vs {anc} TFLOP/s")
    f = F.get(f"gemm.{dt}", {})
    if f.get("pct_peak") is not None:
        print(f"  gemm {dt}: {f.get('pct_peak'):.1f}% of {f.get('peak'):.0f} ({f.get('peak_how')}), spread {f.get('spread')}")
# bandwidth
copy, triad = val(F, "memory.copy"), val(F, "memory.triad")
tcopy = (torch or {}).get("d2d_copy_GBps_rw")
row("device copy (read+write)", copy, "GB/s", tcopy, "torch copy_")
row("triad", triad, "GB/s", 4364, "BabelStream (2026-11-29)")
best = max(x for x in (copy or 0, triad or 0))
target("triad or copy >= 88% of 4800 GB/s", best >= 0.88 * 4800, f"copy {copy}, triad {triad} GB/s")
target("copy or triad >= 1.0x torch device copy", bool(tcopy and best >= tcopy), f"best {best} vs torch {tcopy} GB/s")
# pinned transfers
for d in ("h2d", "d2h"):
    ours, anc = val(F, f"transfer.{d}_pinned"), (torch or {}).get(f"{d}_pinned_GBps")
    row(f"{d} pinned 1 GiB", ours, "GB/s", anc, "torch")
    target(f"{d} pinned >= 0.98x torch", bool(ours and anc and ours >= 0.98 * anc), f"{ours} vs {anc} GB/s")
    ours, anc = val(F, f"transfer.{d}_pageable"), (torch or {}).get(f"{d}_pageable_GBps")
    row(f"{d} pageable 1 GiB", ours, "GB/s", anc, "torch")
# launch
b2b, syn, graph = val(F, "launch.back_to_back"), val(F, "launch.launch_sync"), val(F, "launch.graph")
ab = (anchor or {}).get("back_to_back_us"); asy = (anchor or {}).get("launch_sync_us")
row("launch back to back", b2b, "us", ab, "bare cuLaunchKernel loop")
row("launch + synchronize", syn, "us", asy, "bare cuLaunchKernel loop")
row("graph replay per kernel", graph, "us", b2b, "plain launch")
rows.append(f"| torch per-op launch | - | torch: {(torch or {}).get('launch_us_per_op_torch')} us | - |")
target("launch back to back within 1.1x of the bare loop", bool(b2b and ab and b2b <= 1.1 * ab), f"{b2b} vs {ab} us (2026-11-29: 4.2-4.4)")
target("launch + sync within 1.1x of the bare loop", bool(syn and asy and syn <= 1.1 * asy), f"{syn} vs {asy} us (2026-11-29: 9.6-9.8)")
target("launch back to back within 1.1x of 4.4 us", bool(b2b and b2b <= 1.1 * 4.4), f"{b2b} us")
target("launch + sync within 1.1x of 9.8 us", bool(syn and syn <= 1.1 * 9.8), f"{syn} us")
target("graph replay well below a plain launch", bool(graph and b2b and graph < 0.5 * b2b), f"{graph} vs {b2b} us")
# NCCL
ar1g, ar512 = val(F, "nccl.all_reduce.1073741824"), val(F, "nccl.all_reduce.536870912")
tn = (nccl or {}).get("1073741824", {}).get("busbw_GBps")
if ar1g or tn:
    row("all-reduce busbw 1 GiB", ar1g, "GB/s", tn, "torch.distributed")
    target("all-reduce 1 GiB >= 1.0x torch.distributed", bool(ar1g and tn and ar1g >= tn), f"{ar1g} vs {tn} GB/s")
    nt = None
    try:
        for line in open(os.path.join(out, "nccl-tests.txt")):
            p = line.split()
            if p and p[0] == "536870912":
                nt = float(p[-2]) if len(p) > 2 else None
    except OSError:
        pass
    ref = nt or 315
    row("all-reduce busbw 512 MiB", ar512, "GB/s", ref, "nccl-tests" + ("" if nt else " (2026-11-29)"))
    target("all-reduce 512 MiB >= 1.0x nccl-tests", bool(ar512 and ar512 >= ref), f"{ar512} vs {ref} GB/s")
# CPU
cpu = val(F, "cpu.gemm.fp32")
row("CPU sgemm", cpu, "TFLOP/s", (torch or {}).get("cpu_gemm_fp32_tflops"), "torch CPU 4096")
# spread and verification
for k, f in F.items():
    if (k.startswith("gemm.") or k.startswith("memory.")) and not f.get("skipped") and f.get("spread") is not None:
        target(f"spread {k} < 3%", f["spread"] < 0.03, f"{100 * f['spread']:.2f}%")
    if f.get("verified") is False:
        target(f"{k} verified", False, f.get("verification", ""))
for k, f in Q.items():
    if f.get("verified") is False:
        target(f"quick {k} verified", False, f.get("verification", ""))
qs = (quick or {}).get("seconds")
target("quick run <= 30 s", bool(qs and qs <= 30), f"{qs} s")
print("findings (full):", [(x["id"], x["severity"], x["title"]) for x in (full or {}).get("findings", [])])
print("notes (full):", (full or {}).get("notes"))
print(f"full run {(full or {}).get('seconds')} s")
with open(os.path.join(out, "benchmarks-table.md"), "w") as t:
    t.write("| figure | gpuvet bench | anchor (same call) | ratio |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")
print("\n" + ("all targets hold" if not bad else f"{len(bad)} targets missed: " + ", ".join(bad)))
sys.exit(1 if bad else 0)
PY
status=$?
cat "$OUT/steps.txt" "$OUT/verdict.txt"
exit $status
