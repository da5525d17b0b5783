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
	echo "round $i done $(date -u +%T)" >> "$OUT/progress.txt"
done
