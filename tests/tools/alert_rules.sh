#!/bin/sh
# The shipped alert rules: promtool check rules, then every unit test of tests/contrib
# (promtool test rules: the alerts' values and annotations, and their behaviour across job
# turnover). Skips (77) without promtool (Debian's prometheus package).
#
#     sh alert_rules.sh SOURCE_DIR
set -eu
top=$1
if ! command -v promtool >/dev/null 2>&1; then
	echo "promtool is not installed: skipped"
	exit 77
fi
promtool check rules "$top/contrib/prometheus/gpuvet-alerts.yml"
n=0
for t in "$top"/tests/contrib/*.test.yml; do
	(cd "$(dirname "$t")" && promtool test rules "$(basename "$t")")
	n=$((n + 1))
done
[ "$n" -ge 2 ] || { echo "alert_rules: only $n rule test files under tests/contrib" >&2; exit 1; }
