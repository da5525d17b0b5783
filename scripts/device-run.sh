#!/bin/bash
# Runs on the GPU machine (see ../shared/device.md): the binary built here (build/ carried),
# with the two shared libraries that machine lacks (.devlib/ carried), then every script named
# on the command line (default: all of scripts/device/*.sh). Logs go to $OUT.
#   device run: carry [build, .devlib, .anchors] (build/gpuvet-serve beside build/gpuvet for serve)
#   command:    bash scripts/device-run.sh [scripts/device/bench.sh ...]
set -u
export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NCCL_NVLS_ENABLE=0
export GPUVET="$PWD/build/gpuvet"
# The device tool brings back at most 8 files: every script writes under a work folder, and
# the whole of it comes back as one archive, with the console summary beside it.
FINAL="${OUT:-/tmp/gpuvet-out}"
export OUT=$(mktemp -d /tmp/gpuvet-run.XXXXXX)
mkdir -p "$FINAL"
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
	# after every script, so a run cut short by the device's time limit still brings back the rest
	tar -C "$OUT" -czf "$FINAL/results.tgz" .
done
echo "results: $(tar -tzf "$FINAL/results.tgz" | wc -l) files in results.tgz"
