#!/bin/sh
# Appends the per-area finding sections (docs/findings/*.md) to docs/findings.md, after the
# sections already there. Run after adding a fragment; the catalogue test checks the result.
set -eu
cd "$(dirname "$0")/.."
head=$(sed -n '1,/^<!-- sections/p' docs/findings.md)
core=$(sed -n '/^<!-- sections/,$p' docs/findings.md | sed '1d' | awk '/^<!-- area /{exit} {print}')
{
	printf '%s\n' "$head"
	printf '%s\n' "$core"
	for f in docs/findings/*.md; do
		[ -f "$f" ] || continue
		printf '\n<!-- area %s -->\n' "$(basename "$f" .md)"
		sed '/^# /d' "$f"
	done
} >docs/findings.md.tmp
mv docs/findings.md.tmp docs/findings.md
