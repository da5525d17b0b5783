#!/bin/sh
# Installs the Debian/Ubuntu packages gpuvet needs to build and test (Debian 12, Ubuntu 24.04).
#   scripts/install-deps.sh          build dependencies (make and the C compiler included)
#   scripts/install-deps.sh --test   also the test tools (cmocka, clang, promtool, python3 with
#                                    yaml and jsonschema, tmux, zsh, fish, xmllint, debootstrap,
#                                    debhelper and lintian)
# As root it runs apt-get; as a user it runs apt-get through sudo where sudo is installed;
# otherwise it prints the line to run as root.
# Debian 12 is tested from a bare debootstrap root (tests/fresh/fresh.sh). Ubuntu 24.04 has every
# name below too (libcjson-dev, libcmocka-dev, libopenblas0, prometheus and debootstrap from
# universe, which Ubuntu's images enable); not run there: its archive is not reachable from CI.
set -eu
# build-essential brings make and gcc; libopenblas0: not linked, gpuvet bench loads it at run
# time for the CPU baseline
build="build-essential cmake pkg-config libsqlite3-dev libmicrohttpd-dev libcjson-dev libncurses-dev zlib1g-dev libopenblas0"
# libxml2-utils: xmllint validates --junit output against tests/junit/junit.xsd;
# debhelper, lintian: the Debian package is built and checked (tests/package/deb.sh);
# python3-jsonschema: every --json document against its schema (schemas/), and the Helm chart's
# objects against tests/k8s-schemas/ (with python3-yaml; Debian has no helm); zsh, fish: the
# completions complete real command lines (tests/tools/test_completion.py);
# debootstrap: the fresh-machine test (label fresh) builds a bare Debian 12 root
test_pkgs="libcmocka-dev clang libclang-rt-dev prometheus python3 python3-yaml python3-jsonschema tmux zsh fish sqlite3 util-linux binutils slurm-wlm munge libxml2-utils debootstrap debhelper lintian"
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
as_root=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "gpuvet: missing packages:$missing" >&2
		echo "run as root: apt-get update && apt-get install -y$missing" >&2
		exit 1
	fi
	as_root="sudo"
fi
echo "installing:$missing $optional" >&2
# a failed update (an unreachable mirror) still lets an install from the cached lists try
# shellcheck disable=SC2086
$as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || echo "gpuvet: apt-get update failed: trying the install with the package lists already here" >&2
# shellcheck disable=SC2086
[ -z "$missing" ] || $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
if [ -n "$optional" ]; then
	# shellcheck disable=SC2086
	env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $optional >/dev/null 2>&1 ||
		echo "gpuvet: $optional could not be installed: the report's browser test will skip" >&2
fi
