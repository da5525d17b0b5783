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
	grep -qF ".BR $manid " "$src/man/gpuvet.1" || { echo "not ok: $id is not in man/gpuvet.1 (make generate)"; status=1; }
done
n=$(echo "$ids" | wc -l)
# diag's findings: documented, in the man page, and triggered and shown absent by a diag scenario
# or by tests/unit/test_diag.c (its `catalogue:` lines name the ids its judges trigger and clear)
dids=$("$gpuvet" diag --list-findings | awk '{print $1}')
[ -n "$dids" ] || { echo "no diag findings listed"; exit 1; }
for id in $dids; do
	grep -q "^## $id\$" "$src/docs/findings.md" || { echo "not ok: $id has no '## $id' section in docs/findings.md"; status=1; }
	manid=$(printf '%s' "$id" | sed 's/-/\\-/g')
	grep -qF ".BR $manid " "$src/man/gpuvet.1" || { echo "not ok: $id is not in man/gpuvet.1 (make generate)"; status=1; }
	unit=$(grep -c "^ \* catalogue: .*\b$id\b" "$src/tests/unit/test_diag.c")
	grep -rqs "^expect: $id\( \|\$\)" "$src"/tests/scenarios/*/scenario || [ "$unit" -gt 0 ] ||
		{ echo "not ok: nothing triggers $id (a diag scenario, or a catalogue: line of test_diag.c)"; status=1; }
	grep -rqs "^absent: $id\$" "$src"/tests/scenarios/*/scenario || [ "$unit" -gt 0 ] ||
		{ echo "not ok: nothing checks that $id is absent"; status=1; }
done
n=$((n + $(echo "$dids" | wc -l)))
[ $status -eq 0 ] && echo "ok: $n finding ids documented, triggered and checked absent"
exit $status
