#!/bin/sh
# data/known_bad.csv is sourced: every row has a known component, an affected version, a fixed
# release and an https source URL that data/SOURCES.md cites.
#   check_known_bad.sh SOURCE_DIR
set -u
src=$1
csv=$src/data/known_bad.csv
status=0
[ -f "$csv" ] || { echo "not ok: no $csv"; exit 1; }
n=0
# the last field is the URL; the first two and the sixth have no commas in them
tail -n +2 "$csv" | while IFS= read -r line; do
	[ -n "$line" ] || continue
	comp=${line%%,*}
	url=${line##*,}
	case "$comp" in torch|cudnn|nccl|driver) ;; *) echo "not ok: unknown component '$comp': $line"; exit 1 ;; esac
	case "$url" in https://*) ;; *) echo "not ok: no https source: $line"; exit 1 ;; esac
	grep -qF "$url" "$src/data/SOURCES.md" || { echo "not ok: $url is not cited in data/SOURCES.md"; exit 1; }
	rest=${line#*,}
	affected=${rest%%,*}
	[ -n "$affected" ] || { echo "not ok: no affected version: $line"; exit 1; }
done || status=1
n=$(tail -n +2 "$csv" | grep -c .)
[ "$n" -ge 1 ] || { echo "not ok: no rows"; status=1; }
[ $status -eq 0 ] && echo "ok: $n known-bad releases, each with a cited source"
exit $status
