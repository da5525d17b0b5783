#!/bin/sh
# On the GPU machine (one H200 is enough): gpuvet bench's GPM evidence windows and its monitor
# and tune's sampler on the one sampler (src/sampler). Under 60 s: `bench --quick --json --only
# gemm,memory,transfer` (the groups with evidence windows; at most 32 s), then a short tune (the
# MLP, fp32, no CPU, no DDP, the DataLoader test with 0 workers: its GPU utilization samples are
# what tune's sampler reads; at most 26 s). Changes nothing of the GPU.
# Needs build/ and .devlib/ carried: bash scripts/device-run.sh scripts/device/benchshape.sh
#
# Writes under $OUT/benchshape: bench.json, tune.json, their stderr, summary.txt (one line per
# figure: the window's length, the GPU time in it, SM/tensor/DRAM over the timed repeats and
# over the whole window) and verdict.txt; exits 1 when a check fails. The checks:
#  - every GEMM dtype and every memory figure that was measured has its own activity window
#    (window_seconds >= 0.1, busy_seconds > 0); bf16, fp16, tf32, fp8, int8, triad and copy
#    must be measured;
#  - tensor active over the timed repeats > 0.8 for bf16, fp16, tf32, fp8 and int8 GEMMs;
#  - DRAM active over the timed repeats > 0.8 for memory.triad and memory.copy;
#  - GPM's PCIe traffic over the timed copies within 0.5x to 2x of the figure: to the GPU
#    (pcie_rx) for transfer.h2d_pinned, from it (pcie_tx) for transfer.d2h_pinned;
#  - the monitor on the sampler: bench.monitor.gpu.0.samples > 0, an SM clock median, every
#    GEMM figure with sm_clock_mhz, no refusal (bench.refused) on an idle GPU;
#  - tune: gpu_conditions with samples > 0 and an SM clock.
# fp32 (no tensor cores) and fp64 are recorded in summary.txt, not judged.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/benchshape
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET_NO_HISTORY=1
G=${GPUVET:-$PWD/build/gpuvet}
PY=${PYTHON:-python3}

nvidia-smi --query-gpu=index,name,clocks.sm,temperature.gpu,power.draw,utilization.gpu --format=csv \
	> "$OUT/nvidia-smi-before.csv" 2>&1
timeout 75 "$G" bench --quick --json --no-history --only gemm,memory,transfer > "$OUT/bench.json" 2> "$OUT/bench.err"
echo "bench exit $?" >> "$OUT/exit.txt"
timeout 26 "$G" tune --json --no-history -q --models mlp --settings fp32 --no-cpu --no-ddp --workers 0 \
	--budget 20 > "$OUT/tune.json" 2> "$OUT/tune.err"
echo "tune exit $?" >> "$OUT/exit.txt"

"$PY" - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
bad, lines = [], []
try:
    b = json.load(open(out + "/bench.json"))
except Exception as e:
    b = None
    bad.append("bench.json: %s" % e)
if b:
    facts = {layer + "." + k: v.get("value") for layer, d in b.get("facts", {}).items() for k, v in d.items()}
    figs = {f["id"]: f for f in b["figures"]}
    for fid, f in figs.items():
        a = f.get("activity")
        if f.get("skipped"):
            lines.append("%-22s skipped: %s" % (fid, f.get("note", "")))
            if fid in ("gemm.bf16", "gemm.fp16", "gemm.tf32", "gemm.fp8", "gemm.int8", "memory.triad", "memory.copy"):
                bad.append("%s: not measured (%s)" % (fid, f.get("note")))
            continue
        if not a:
            lines.append("%-22s no activity" % fid)
        else:
            w = a.get("window", {})
            lines.append("%-22s %s %s | window %.3f s busy %.3f s | timed: SM %s tensor %s DRAM %s PCIe rx %s tx %s | window: SM %s tensor %s DRAM %s | clock %s" % (
                fid, f.get("value"), f.get("unit"), a.get("window_seconds", 0), a.get("busy_seconds", 0),
                a.get("sm_active_ratio"), a.get("tensor_active_ratio"), a.get("dram_active_ratio"),
                a.get("pcie_rx_bytes_per_second"), a.get("pcie_tx_bytes_per_second"),
                w.get("sm_active_ratio"), w.get("tensor_active_ratio"), w.get("dram_active_ratio"), f.get("sm_clock_mhz")))
        if fid.startswith("gemm.") or fid.startswith("memory."):
            if not a or not a.get("window_seconds", 0) >= 0.1 or not a.get("busy_seconds", 0) > 0:
                bad.append("%s: no activity window of its own (%s)" % (fid, a))
                continue
            if fid.startswith("gemm.") and not f.get("sm_clock_mhz"):
                bad.append("%s: no SM clock from the monitor" % fid)
        if fid in ("gemm.bf16", "gemm.fp16", "gemm.tf32", "gemm.fp8", "gemm.int8"):
            t = (a or {}).get("tensor_active_ratio")
            if not (isinstance(t, (int, float)) and t > 0.8):
                bad.append("%s: tensor active over the timed repeats %s, want > 0.8" % (fid, t))
        if fid in ("transfer.h2d_pinned", "transfer.d2h_pinned"):
            key = "pcie_rx_bytes_per_second" if fid.startswith("transfer.h2d") else "pcie_tx_bytes_per_second"
            r = (a or {}).get(key)
            v = f.get("value")
            if not (isinstance(r, (int, float)) and v and 0.5 <= r / 1e9 / v <= 2):
                bad.append("%s: GPM %s %s against the figure's %s GB/s, want 0.5x to 2x" % (fid, key, r, v))
        if fid in ("memory.triad", "memory.copy"):
            d = (a or {}).get("dram_active_ratio")
            if not (isinstance(d, (int, float)) and d > 0.8):
                bad.append("%s: DRAM active over the timed repeats %s, want > 0.8" % (fid, d))
    if facts.get("bench.refused"):
        bad.append("bench refused on an idle GPU: %s" % b.get("notes"))
    for fi in b.get("findings", []):
        if fi["id"] == "bench.gpu-busy":
            bad.append("bench.gpu-busy on an idle GPU: %s" % fi["evidence"])
    if not (facts.get("bench.monitor.gpu.0.samples") or 0) > 0 or not facts.get("bench.monitor.gpu.0.sm_clock_median_mhz"):
        bad.append("monitor: samples %s, SM clock median %s" % (facts.get("bench.monitor.gpu.0.samples"),
                   facts.get("bench.monitor.gpu.0.sm_clock_median_mhz")))
    lines.append("monitor: %s samples, SM clock median %s MHz, reasons %s, GPM %s" % (
        facts.get("bench.monitor.gpu.0.samples"), facts.get("bench.monitor.gpu.0.sm_clock_median_mhz"),
        facts.get("bench.monitor.gpu.0.clock_event_reasons_text"), facts.get("bench.monitor.gpu.0.gpm")))
try:
    t = json.load(open(out + "/tune.json"))
    c = t.get("gpu_conditions")
    lines.append("tune gpu_conditions: %s" % c)
    if not c or not c.get("samples", 0) > 0 or not c.get("sm_clock_mhz"):
        bad.append("tune: no gpu_conditions from the sampler (%s)" % c)
except Exception as e:
    bad.append("tune.json: %s" % e)
open(out + "/summary.txt", "w").write("\n".join(lines) + "\n")
open(out + "/verdict.txt", "w").write(("FAIL\n" + "\n".join(bad) if bad else "ok") + "\n")
print(open(out + "/summary.txt").read())
print(open(out + "/verdict.txt").read())
sys.exit(1 if bad else 0)
PY
