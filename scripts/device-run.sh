#!/bin/bash
# Runs on the GPU machine (see ../shared/device.md): the binary built here (build/ carried),
# with the two shared libraries that machine lacks (.devlib/ carried), then every script named
# on the command line (default: all of scripts/device/*.sh). Logs go to $OUT.
#   device run: carry [build, .devlib, .anchors]
#   command:    bash scripts/device-run.sh [scripts/device/bench.sh ...]
set -u
export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET="$PWD/build/gpuvet"
export OUT="${OUT:-/tmp/gpuvet-out}"
mkdir -p "$OUT"
{
	date -u +%Y-%m-%dT%H:%M:%SZ
	uname -a
	nvidia-smi -L
	"$GPUVET" --version
} >"$OUT/machine.txt" 2>&1
scripts=("$@")
[ ${#scripts[@]} -eq 0 ] && scripts=(scripts/device/*.sh)
for s in "${scripts[@]}"; do
	name=$(basename "$s" .sh)
	echo "=== $name ($(date -u +%T))"
	start=$(date +%s)
	bash "$s" >"$OUT/$name.log" 2>&1
	echo "exit $? after $(( $(date +%s) - start )) s"
	tail -n 30 "$OUT/$name.log"
done
