#!/bin/sh
# More interleaved rounds of the comparison in scripts/device/tune.sh, GPU steps only: the GPU
# half of anchors/bench_models.py (scripts/device/amp_steps.py: the same models, step and
# timing) and `gpuvet tune` on the anchor's settings (ref_fp32, ref_amp_fp16), alternately,
# ROUNDS times (default 4). Writes $OUT/tune_rounds/anchor-N.json and tune-N.json as it goes,
# so a call cut short still brings back the rounds that finished.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/tune_rounds
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUVET_NO_HISTORY=1
G=${GPUVET:-./build/gpuvet}
PY=python3
[ -x /opt/torch/.venv/bin/python ] && PY=/opt/torch/.venv/bin/python
date -u +%Y-%m-%dT%H:%M:%SZ > "$OUT/date.txt"
for i in $(seq 1 "${ROUNDS:-4}"); do
	$PY scripts/device/amp_steps.py > "$OUT/anchor-$i.json" 2>> "$OUT/anchor.err"
	"$G" tune --models resnet50,bert --settings ref_fp32,ref_amp_fp16 --batch resnet50=64,bert=32 --seq-len 128 \
		--no-cpu --no-pipeline --no-ddp --budget 60 --json > "$OUT/tune-$i.json" 2>> "$OUT/tune.err"
	# one line per round on stdout too (a call cut short brings back its output)
	$PY - "$OUT/anchor-$i.json" "$OUT/tune-$i.json" "$i" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
t = json.load(open(sys.argv[2]))
ours = {}
for m in t.get("models", []):
    for r in m.get("runs", []):
        if r.get("status") == "ok" and r["device"] == "cuda":
            ours[m["model"] + "_" + r["setting"]] = round(r["ms"], 2)
print("round", sys.argv[3], json.dumps({"anchor": {k: round(v[0], 2) for k, v in a.items()}, "tune": ours}))
PY
done
