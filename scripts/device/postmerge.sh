#!/bin/bash
# On the GPU machine, after a round's merges: gpuvet run's explanation after failing jobs (no false
# driver.nvml-failed), diag -r 1 once more, and the check's time beside its anchors (the live probe
# against `import torch; torch.cuda.is_available()`, check --fast against nvidia-smi --query-gpu),
# five interleaved runs each, with the probes' own times (meta.probe_seconds.*, the Python stages).
# Output under $OUT/postmerge. Run: bash scripts/device-run.sh scripts/device/postmerge.sh
set -u
OUT=${OUT:-/tmp/gpuvet-out}/postmerge
mkdir -p "$OUT"
G=${GPUVET:-build/gpuvet}
PY=${PYTHON:-python3}
export GPUVET_NO_HISTORY=1 NCCL_NVLS_ENABLE=0
echo "== gpuvet run over failing jobs"
i=0
for job in "import torch; torch.zeros(1).cuda(); raise SystemExit(1)" \
	"import torch; x = torch.ones(1 << 20, device='cuda'); torch.cuda.synchronize(); raise RuntimeError('boom')" \
	"import torch, time; torch.zeros(1).cuda(); time.sleep(2); raise SystemExit(3)"; do
	i=$((i + 1))
	"$G" run -- "$PY" -c "$job" > "$OUT/run_$i.out" 2>&1
	rc=$?
	bad=$(grep -c "driver.nvml-failed\|NVML_ERROR_UNINITIALIZED\|not collected" "$OUT/run_$i.out")
	echo "job $i: exit $rc, false-fail lines: $bad"
done
echo "== diag -r 1"
"$G" diag -r 1 > "$OUT/diag_l1.out" 2>&1; echo "exit $?"; tail -3 "$OUT/diag_l1.out"
echo "== timings (5 interleaved runs)"
t() { local s=$(date +%s.%N); "$@" > /dev/null 2>&1; awk "BEGIN{printf \"%.3f\", $(date +%s.%N)-$s}"; }
for k in 1 2 3 4 5; do
	a=$(t "$PY" -c "import torch; torch.cuda.is_available()")
	b=$(t "$G" check)
	c=$(t nvidia-smi --query-gpu=name,driver_version,memory.used,utilization.gpu,temperature.gpu --format=csv)
	d=$(t "$G" check --fast)
	echo "run $k: torch_is_available $a  check $b  nvidia_smi_query $c  check_fast $d" | tee -a "$OUT/timings.txt"
done
"$G" check --json > "$OUT/check.json" 2>/dev/null
"$PY" - "$OUT/check.json" <<'PYEOF' | tee -a "$OUT/timings.txt"
import json, sys
d = json.load(open(sys.argv[1]))
for layer, facts in d.get("facts", {}).items():
    for k, v in facts.items():
        if "seconds" in k:
            print(layer, k, v.get("value") if isinstance(v, dict) else v)
PYEOF
"$G" check --fast --json > "$OUT/check_fast.json" 2>/dev/null
