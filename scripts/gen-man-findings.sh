#!/bin/sh
# Rewrites the FINDINGS section of man/gpuvet.1 from `gpuvet check --list-rules` (id, severity,
# summary), so the man page knows every finding id. Run after adding a rule; the catalogue test
# checks that every id is there.
#   scripts/gen-man-findings.sh [GPUVET]   (default build/gpuvet)
set -eu
cd "$(dirname "$0")/.."
gpuvet=${1:-build/gpuvet}
man=man/gpuvet.1
tmp=$man.tmp
{
	sed -n '1,/^\.SH FINDINGS/p' "$man" | sed '$d'
	printf '.SH FINDINGS\n'
	printf 'Every id that gpuvet check can report (gpuvet check \\-\\-list\\-rules; docs/findings.md explains each).\n'
	"$gpuvet" check --list-rules | while read -r id sev layer rest; do
		printf '.TP\n.BR %s " (%s)"\n%s\n' "$(printf '%s' "$id" | sed 's/-/\\-/g')" "$sev" "$(printf '%s' "$rest" | sed 's/\\/\\\\/g; s/-/\\-/g; s/^\./\\\&./')"
	done
	sed -n '/^\.SH FINDINGS/,$p' "$man" | sed '1d' | sed -n '/^\.SH /,$p'
} >"$tmp"
mv "$tmp" "$man"
