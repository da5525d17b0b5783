#!/bin/sh
# The test suite leaves no traces. Every CTest test runs with its own HOME, XDG directories and
# TMPDIR below ROOT (tests/CMakeLists.txt sets them); this script is the fixture around the run:
#   traces.sh setup ROOT LIST   makes ROOT/home/NAME and ROOT/tmp/NAME for each name in LIST and
#                               records the invoking user's $HOME and /tmp (and $TMPDIR)
#   traces.sh check ROOT        fails when the run left anything behind: a file in a test's own
#                               TMPDIR, a history database in a test's HOME (a run written into
#                               "the user's history"), or a new entry in the real $HOME or /tmp;
#                               then removes ROOT.
# What is compared in the real $HOME: its top-level names and gpuvet's own directories (history,
# config, cache) with sizes and times; in /tmp (and $TMPDIR), two levels deep: every name with
# "gpuvet" in it. A gpuvet suite of another checkout running on the same machine at the same
# time shows up here as well: the names say whose they are.
set -eu
cmd=$1
root=$2

real_state() {
	h=${HOME:-}
	if [ -n "$h" ] && [ -d "$h" ]; then
		ls -A "$h" | sed 's|^|home: |'
		for d in .local/share/gpuvet .config/gpuvet .cache/gpuvet; do
			[ -e "$h/$d" ] && find "$h/$d" -maxdepth 2 -printf "home: $d/%P %s %T@\n"
		done
	fi
	for t in /tmp ${TMPDIR:-}; do # two levels: /tmp/tmux-UID/gpuvet-... counts too
		[ -d "$t" ] && find "$t" -mindepth 1 -maxdepth 2 -iname '*gpuvet*' 2>/dev/null | sed "s|^|tmp: |"
	done
	return 0
}

case $cmd in
setup)
	list=$3
	rm -rf "$root"
	mkdir -p "$root/home" "$root/tmp"
	while IFS= read -r name; do
		[ -n "$name" ] || continue
		mkdir -p "$root/home/$name" "$root/tmp/$name"
	done <"$list"
	real_state | sort >"$root/before.txt"
	echo "traces: $(wc -l <"$list") tests, each with its own HOME and TMPDIR under $root"
	;;
check)
	[ -f "$root/before.txt" ] || { echo "traces: no record of the state before the run in $root" >&2; exit 1; }
	fail=0
	left=$(find "$root/tmp" -mindepth 2 | sort)
	if [ -n "$left" ]; then
		echo "traces: tests left files in their own TMPDIR:"
		echo "$left" | sed "s|^$root/tmp/|  |" | head -50
		fail=1
	fi
	hist=$(find "$root/home" -path '*/gpuvet/history.db*' | sort)
	if [ -n "$hist" ]; then
		echo "traces: tests wrote a history database in their HOME (set GPUVET_NO_HISTORY=1 or --db):"
		echo "$hist" | sed "s|^$root/home/|  |"
		fail=1
	fi
	real_state | sort >"$root/after.txt"
	new=$(comm -13 "$root/before.txt" "$root/after.txt")
	# what went away counts in $HOME (a changed history shows as one line gone, one new); in /tmp
	# other programs clean up their own
	gone=$(comm -23 "$root/before.txt" "$root/after.txt" | grep '^home: ' || true)
	if [ -n "$new" ] || [ -n "$gone" ]; then
		echo "traces: the run changed the real \$HOME or /tmp:"
		[ -z "$new" ] || echo "$new" | sed 's|^|  + |' | head -50
		[ -z "$gone" ] || echo "$gone" | sed 's|^|  - |' | head -50
		fail=1
	fi
	if [ $fail = 0 ]; then
		rm -rf "$root"
		echo "traces: none left in \$HOME, /tmp, or the tests' own HOME and TMPDIR"
	else
		echo "traces: kept $root for a look"
	fi
	exit $fail
	;;
*)
	echo "usage: traces.sh setup ROOT LIST | check ROOT" >&2
	exit 2
	;;
esac
