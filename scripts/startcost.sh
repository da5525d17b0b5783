#!/bin/bash
# What a program's start costs: N fresh processes of each command in turn (default 500), three
# rounds interleaved, beside a C program that returns at once (the anchor: exec and the loader
# alone). Prints the mean per process of each round. docs/benchmarks.md ("gpuvet check").
#   bash scripts/startcost.sh [-n N] 'build/gpuvet --version' 'build/gpuvet.base --version'
set -eu
n=500
[ "${1:-}" = -n ] && { n=$2; shift 2; }
[ $# -gt 0 ] || { echo "usage: startcost.sh [-n N] COMMAND..." >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo 'int main(void){return 0;}' > "$tmp/bare.c"
cc -O2 -o "$tmp/bare" "$tmp/bare.c"
for round in 1 2 3; do
	for cmd in "$tmp/bare" "$@"; do
		s=$(date +%s%N)
		for _ in $(seq "$n"); do $cmd > /dev/null; done
		e=$(date +%s%N)
		label=$cmd
		[ "$cmd" = "$tmp/bare" ] && label="(a C program that returns at once)"
		awk -v r="$round" -v ns="$((e - s))" -v n="$n" -v l="$label" 'BEGIN { printf "round %d  %6.2f ms  %s\n", r, ns / n / 1e6, l }'
	done
done
