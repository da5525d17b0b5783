#!/bin/bash
# "make test twice in a row leaves $HOME and /tmp as they were", checked exactly: the whole
# suite runs twice in a mount namespace of its own with an empty /tmp and an empty $HOME (so
# nothing else on the machine can add or remove files there meanwhile), and every file in both
# is listed before, after the first run and after the second. Needs root (unshare --mount).
#   usage: tests/tools/test_twice.sh [BUILD_DIR]   (default build; run `make` first)
set -u
build=$(cd "${1:-build}" && pwd)
if [ "${GPUVET_TWICE_INSIDE:-}" != 1 ]; then
	exec env GPUVET_TWICE_INSIDE=1 unshare --mount --propagation private "$0" "$build"
fi
mount -t tmpfs tmpfs /tmp && mount -t tmpfs tmpfs /mnt && mkdir /mnt/home || exit 1
export HOME=/mnt/home
unset XDG_DATA_HOME XDG_CONFIG_HOME XDG_CACHE_HOME XDG_STATE_HOME GPUVET_DB
snap() { find /tmp /mnt/home -printf '%p %y %s\n' | sort; }
cd "$build" || exit 1
snap >"$build/twice-0.txt"
status=0
for i in 1 2; do
	ctest -j2 --output-on-failure >"$build/twice-run$i.log" 2>&1 || { echo "run $i: tests failed (twice-run$i.log)"; status=1; }
	snap >"$build/twice-$i.txt"
	if ! diff "$build/twice-0.txt" "$build/twice-$i.txt"; then
		echo "run $i changed /tmp or \$HOME (above)"
		status=1
	fi
done
[ $status = 0 ] && echo "two runs: /tmp and \$HOME as they were, every test passed"
exit $status
