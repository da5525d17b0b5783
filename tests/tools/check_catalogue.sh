#!/bin/sh
# Every rule (finding id) has a section in docs/findings.md, a scenario that triggers it
# (`expect: ID`) and one where it must be absent (`absent: ID`).
#   check_catalogue.sh GPUVET SOURCE_DIR
set -u
gpuvet=$1
src=$2
status=0
ids=$("$gpuvet" check --list-rules | awk '{print $1}')
[ -n "$ids" ] || { echo "no rules listed"; exit 1; }
for id in $ids; do
	grep -q "^## $id\$" "$src/docs/findings.md" || { echo "not ok: $id has no '## $id' section in docs/findings.md"; status=1; }
	grep -rqs "^expect: $id\( \|\$\)" "$src"/tests/scenarios/*/scenario || { echo "not ok: no scenario triggers $id"; status=1; }
	grep -rqs "^absent: $id\$" "$src"/tests/scenarios/*/scenario || { echo "not ok: no scenario checks that $id is absent"; status=1; }
	manid=$(printf '%s' "$id" | sed 's/-/\\-/g')
	grep -qF ".BR $manid " "$src/man/gpuvet.1" || { echo "not ok: $id is not in man/gpuvet.1 (scripts/gen-man-findings.sh)"; status=1; }
done
n=$(echo "$ids" | wc -l)
[ $status -eq 0 ] && echo "ok: $n finding ids documented, triggered and checked absent"
exit $status
