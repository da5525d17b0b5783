#!/bin/sh
# The Debian package: dpkg-buildpackage -us -uc -b on a clean copy of the sources (as README.md's
# "Packages" says), lintian without errors, the files `make install` installs in the .deb, the
# binary stripped, the version the one of CMakeLists.txt, and the extracted binary runs.
#   deb.sh SOURCE_DIR WORK_DIR               (label package, in make test: a few minutes)
#   deb.sh SOURCE_DIR WORK_DIR --bare FRESH  (label fresh: also apt-get install the .deb on a bare
#                                             Debian 12 root, FRESH/bookworm-minbase.tar as
#                                             tests/fresh/fresh.sh builds it, and run it there)
# Exits 77 without dpkg-buildpackage, debhelper or lintian (scripts/install-deps.sh --test
# installs them); --bare also without root or debootstrap.
set -eu
src=$(cd "$1" && pwd)
work=$2
bare=${4:-}
[ "${3:-}" = --bare ] || bare=""
for tool in dpkg-buildpackage dh lintian dpkg-deb readelf; do
	command -v "$tool" >/dev/null || { echo "skip: $tool is not installed (scripts/install-deps.sh --test)"; exit 77; }
done
if [ -n "$bare" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "skip: --bare needs root (chroot)"; exit 77; }
	command -v unshare >/dev/null || { echo "skip: unshare (util-linux) is not installed"; exit 77; }
fi
rm -rf "$work"
mkdir -p "$work/logs" "$work/tmp"
work=$(cd "$work" && pwd)
# dpkg-buildpackage and lintian keep their scratch files (lintian's mldbm-elf-*) in here, gone
# with the work directory
export TMPDIR="$work/tmp"

version=$(sed -n 's/^project(gpuvet VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
tree=$work/gpuvet-$version
mkdir -p "$tree"
# the committed tree plus uncommitted changes to tracked files, nothing untracked or ignored
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	rev=$(git -C "$src" stash create 2>/dev/null || true)
	git -C "$src" archive --format=tar "${rev:-HEAD}" | tar -C "$tree" -xf -
else
	tar -C "$src" --exclude='./build*' -cf - . | tar -C "$tree" -xf -
fi
status=0
changelog=$(cd "$tree" && dpkg-parsechangelog -S Version)
[ "$changelog" = "$version" ] || { echo "not ok: debian/changelog is $changelog, CMakeLists.txt $version"; status=1; }

jobs=$(nproc 2>/dev/null || echo 2)
echo "building the package (log: $work/logs/build.log)"
if ! (cd "$tree" && DEB_BUILD_OPTIONS="nocheck parallel=$jobs" dpkg-buildpackage -us -uc -b) >"$work/logs/build.log" 2>&1; then
	tail -n 40 "$work/logs/build.log"
	echo "not ok: dpkg-buildpackage -us -uc -b failed"
	exit 1
fi
arch=$(dpkg --print-architecture)
deb=$work/gpuvet_${version}_$arch.deb
[ -f "$deb" ] || { ls "$work"; echo "not ok: no $deb"; exit 1; }
echo "ok: dpkg-buildpackage -us -uc -b made $(basename "$deb")"

# lintian: no error (warnings and notes are listed, not fatal)
lintian --fail-on error --tag-display-limit 0 "$work"/gpuvet_"${version}"_"$arch".changes >"$work/logs/lintian.log" 2>&1 || true
cat "$work/logs/lintian.log"
if grep -q '^E: ' "$work/logs/lintian.log"; then
	echo "not ok: lintian reports errors"; status=1
else
	echo "ok: lintian: no errors ($(grep -c '^W: ' "$work/logs/lintian.log" || true) warnings)"
fi

# the files make install installs
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$work/contents"
for f in /usr/bin/gpuvet /usr/sbin/gpuvet-slurm-check /usr/share/man/man1/gpuvet.1.gz \
	/usr/lib/systemd/system/gpuvet-exporter.service /usr/share/gpuvet/prometheus/gpuvet-alerts.yml \
	/usr/share/gpuvet/grafana/gpuvet-dashboard.json /usr/share/gpuvet/kubernetes/gpuvet-daemonset.yaml \
	/usr/share/gpuvet/schemas/check.schema.json /usr/share/bash-completion/completions/gpuvet \
	/usr/share/gpuvet/helm/gpuvet/Chart.yaml \
	/usr/share/zsh/vendor-completions/_gpuvet /usr/share/fish/vendor_completions.d/gpuvet.fish \
	/usr/share/doc/gpuvet/copyright; do
	if grep -qx "$f" "$work/contents"; then echo "ok: $f"; else echo "not ok: $f is not in the package"; status=1; fi
done
# the exporter's program, where debhelper's libexec directory is (the bare root below runs it)
if grep -Eqx '/usr/(libexec|lib(/[^/]+)?)/gpuvet/gpuvet-serve' "$work/contents"; then echo "ok: gpuvet-serve"; else
	echo "not ok: gpuvet-serve is not in the package"; status=1; fi
x=$work/extracted
dpkg-deb -x "$deb" "$x"
if readelf -S "$x/usr/bin/gpuvet" | grep -q '\.symtab'; then echo "not ok: /usr/bin/gpuvet is not stripped"; status=1; fi
grep -q '^ExecStart=/usr/bin/gpuvet serve ' "$x/usr/lib/systemd/system/gpuvet-exporter.service" ||
	{ echo "not ok: the unit does not run /usr/bin/gpuvet"; status=1; }
got=$("$x/usr/bin/gpuvet" --version)
[ "$got" = "gpuvet $version" ] || { echo "not ok: the packaged binary says '$got'"; status=1; }
rc=0
GPUVET_NO_HISTORY=1 "$x/usr/bin/gpuvet" check --fast --json >"$work/check.json" 2>"$work/logs/check.err" || rc=$?
if [ $rc -gt 1 ]; then cat "$work/logs/check.err"; echo "not ok: the packaged gpuvet check exits $rc"; status=1; fi
grep -q '"schema":' "$work/check.json" || { echo "not ok: the packaged check printed no document"; status=1; }
[ $status -eq 0 ] && echo "ok: the package holds what make install installs, stripped, and runs"

if [ -n "$bare" ]; then
	mkdir -p "$bare"
	base=$(cd "$bare" && pwd)/bookworm-minbase.tar
	if [ ! -f "$base" ]; then
		debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
		[ -x "$debootstrap" ] || { echo "skip: debootstrap is not installed"; exit 77; }
		echo "building the bare root (bookworm minbase): a few minutes, cached in $base"
		"$debootstrap" --variant=minbase bookworm "$work/bootstrap" "${GPUVET_FRESH_MIRROR:-http://deb.debian.org/debian}" \
			>"$work/logs/debootstrap.log" 2>&1 || { tail -n 30 "$work/logs/debootstrap.log"; echo "not ok: debootstrap failed"; exit 1; }
		tar -C "$work/bootstrap" -cf "$base.tmp" . && mv "$base.tmp" "$base"
		rm -rf "$work/bootstrap"
	fi
	r=$work/bare
	mkdir -p "$r"
	tar -C "$r" -xf "$base"
	cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	cp "$deb" "$r/tmp/"
	# chrooted in private mount and PID namespaces, with /proc, /sys and /dev; gone with them
	if unshare -m -p -f sh -c '
		r=$1; deb=$2
		mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" && mount --rbind /dev "$r/dev" || exit 1
		chroot "$r" sh -ec "
			apt-get update -qq
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$deb >/dev/null
			gpuvet --version
			test -f /usr/share/man/man1/gpuvet.1.gz
			rc=0; GPUVET_NO_HISTORY=1 gpuvet check --fast >/tmp/check.txt 2>&1 || rc=\$?
			cat /tmp/check.txt
			test \$rc -le 1
			grep -q \"fail,\" /tmp/check.txt
			gpuvet serve --textfile /tmp --once && test -s /tmp/gpuvet.prom
			DEBIAN_FRONTEND=noninteractive apt-get remove -y -qq gpuvet >/dev/null
			test ! -e /usr/bin/gpuvet"' bare "$r" "$(basename "$deb")" >"$work/logs/bare.log" 2>&1; then
		echo "ok: the package installs, runs (check, serve --textfile) and removes on a bare Debian 12 root"
	else
		tail -n 40 "$work/logs/bare.log"
		echo "not ok: the package on a bare Debian 12 root (log: $work/logs/bare.log)"; status=1
	fi
	rm -rf "$r"
fi
[ $status -eq 0 ] && rm -rf "$work"
exit $status
