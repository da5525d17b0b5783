#!/bin/sh
# Installs the Debian/Ubuntu packages gpuvet needs to build and test.
#   scripts/install-deps.sh          build dependencies
#   scripts/install-deps.sh --test   also the test tools (cmocka, clang, promtool, python3, tmux)
# As root it runs apt-get; otherwise it prints the line to run.
set -eu
# libopenblas0: not linked; gpuvet bench loads it at run time for the CPU baseline
build="build-essential cmake pkg-config libsqlite3-dev libmicrohttpd-dev libcjson-dev libncurses-dev libopenblas0"
test_pkgs="libcmocka-dev clang libclang-rt-dev prometheus python3 python3-yaml tmux sqlite3 util-linux binutils slurm-wlm munge"
pkgs=$build
[ "${1:-}" = "--test" ] && pkgs="$build $test_pkgs"

missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# chromium renders gpuvet report's page in one test; optional: that test skips without it
optional=""
if [ "${1:-}" = "--test" ] && [ "$(id -u)" -eq 0 ] && ! command -v chromium >/dev/null 2>&1; then
	optional="chromium"
fi
[ -z "$missing$optional" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	echo "gpuvet: missing packages:$missing" >&2
	echo "run: sudo apt-get install -y$missing" >&2
	exit 1
fi
echo "installing:$missing $optional" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
# shellcheck disable=SC2086
[ -z "$missing" ] || apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ -n "$optional" ]; then
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $optional >/dev/null 2>&1 ||
		echo "gpuvet: $optional could not be installed: the report's browser test will skip" >&2
fi
