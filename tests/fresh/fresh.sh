#!/bin/sh
# The first contact, proved: the README's first and second commands, parsed from README.md and
# run as written, on a bare Debian 12 root (debootstrap --variant=minbase: no make, no compiler,
# no sudo), once as root and once as a user with sudo, each on its own copy of the bare root.
#   fresh.sh SOURCE_DIR WORK_DIR
# WORK_DIR (under the build tree) keeps the bare root as a tarball and the downloaded packages, so
# a rerun skips debootstrap and the downloads; logs go to WORK_DIR/logs/.
# Needs root (chroot, mounts in a private mount namespace), debootstrap and Debian's mirror
# (GPUVET_FRESH_MIRROR, default http://deb.debian.org/debian); exits 77 without root or
# debootstrap, and inside a fresh root (GPUVET_FRESH_INSIDE), so the suite run there does not
# recurse into this test.
set -eu
src=$(cd "$1" && pwd)
work=$2
suite=bookworm
mirror=${GPUVET_FRESH_MIRROR:-http://deb.debian.org/debian}

if [ -n "${GPUVET_FRESH_INSIDE:-}" ]; then echo "skip: already inside a fresh root"; exit 77; fi
if [ "$(id -u)" -ne 0 ]; then echo "skip: needs root (debootstrap, chroot)"; exit 77; fi
debootstrap=$(command -v debootstrap || echo /usr/sbin/debootstrap)
if [ ! -x "$debootstrap" ]; then echo "skip: debootstrap is not installed (scripts/install-deps.sh --test)"; exit 77; fi
command -v unshare >/dev/null || { echo "skip: unshare (util-linux) is not installed"; exit 77; }
# chroot and mounts need a privileged root (not an unprivileged container)
probe=$(mktemp -d "${TMPDIR:-/tmp}/gpuvet-fresh.XXXXXX")
if ! unshare -m -p -f mount -t tmpfs none "$probe" 2>/dev/null; then
	rmdir "$probe"
	echo "skip: cannot mount in a private mount namespace (an unprivileged container?)"; exit 77
fi
rmdir "$probe"

# The README's two commands: the first indented block after "On a fresh".
cmds=$(awk '/^On a fresh/ { on = 1; next }
	on && /^    [^ ]/ { sub(/^    /, ""); print; seen = 1; next }
	on && seen { exit }' "$src/README.md")
first=$(printf '%s\n' "$cmds" | sed -n 1p)
second=$(printf '%s\n' "$cmds" | sed -n 2p)
if [ -z "$first" ] || [ -z "$second" ]; then
	echo "not ok: README.md has no block of two commands after 'On a fresh'"; exit 1
fi
echo "first command:  $first"
echo "second command: $second"

mkdir -p "$work/logs" "$work/apt-archives/partial"
work=$(cd "$work" && pwd)
base=$work/$suite-minbase.tar
if [ ! -f "$base" ]; then
	echo "building the bare root ($suite minbase from $mirror): a few minutes, cached in $base"
	rm -rf "$work/bootstrap"
	"$debootstrap" --variant=minbase "$suite" "$work/bootstrap" "$mirror" >"$work/logs/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$work/logs/debootstrap.log"; echo "not ok: debootstrap failed (log: $work/logs/debootstrap.log)"; exit 1; }
	tar -C "$work/bootstrap" -cf "$base.tmp" .
	mv "$base.tmp" "$base"
	rm -rf "$work/bootstrap"
fi

# A clean checkout: the committed tree plus uncommitted changes to tracked files (git stash create
# makes that commit without touching the working tree); untracked and ignored files stay out.
checkout() {
	if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
		rev=$(git -C "$src" stash create 2>/dev/null || true)
		git -C "$src" archive --format=tar "${rev:-HEAD}" | tar -C "$1" -xf -
	else
		tar -C "$src" --exclude='./build*' -cf - . | tar -C "$1" -xf -
	fi
}

# in_root ROOT CMD...: CMD chrooted into ROOT in private mount and PID namespaces, with /proc (of
# its own PIDs: the host's processes are not this machine's), /sys, /dev and the shared package
# cache mounted; the mounts, and any process left behind, end with the namespaces.
in_root() {
	r=$1; shift
	unshare -m -p -f sh -c '
		r=$1; cache=$2; shift 2
		mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" && mount --rbind /dev "$r/dev" &&
		mount --bind "$cache" "$r/var/cache/apt/archives" || exit 1
		chroot "$r" "$@"' in_root "$r" "$work/apt-archives" "$@"
}

status=0
# one_case NAME USER HOME
one_case() {
	name=$1 user=$2 home=$3
	r=$work/root-$name
	log=$work/logs/$name
	rm -rf "$r"; mkdir -p "$r"
	tar -C "$r" -xf "$base"
	cp /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
	if in_root "$r" sh -c 'command -v make || command -v cc || command -v cmake' >/dev/null 2>&1; then
		echo "not ok: $name: the bare root already has make, cc or cmake"; status=1; return
	fi
	if [ "$user" != root ]; then
		# a user with sudo, as on a cloud image: sudo itself, the account, password-less sudo
		in_root "$r" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sudo >/dev/null &&
			useradd -m -s /bin/sh $user && echo '$user ALL=(ALL) NOPASSWD: ALL' >/etc/sudoers.d/$user" >"$log-setup.log" 2>&1 ||
			{ tail -n 20 "$log-setup.log"; echo "not ok: $name: could not add sudo and the user"; status=1; return; }
	fi
	mkdir -p "$r$home/gpuvet"
	checkout "$r$home/gpuvet"
	in_root "$r" chown -R "$user:" "$home/gpuvet"
	n=0
	for cmd in "$first" "$second"; do
		n=$((n + 1))
		echo "$name: $cmd (log: $log-$n.log)"
		# a login-like environment, nothing of the host's; GPUVET_FRESH_INSIDE stops the recursion
		if ! in_root "$r" runuser -u "$user" -- env -i HOME="$home" USER="$user" LOGNAME="$user" TERM=dumb LANG=C.UTF-8 \
			PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin GPUVET_FRESH_INSIDE=1 \
			sh -c "cd \"\$HOME/gpuvet\" && $cmd" >"$log-$n.log" 2>&1 </dev/null; then
			tail -n 40 "$log-$n.log"
			echo "not ok: $name: '$cmd' failed (log: $log-$n.log)"; status=1; return
		fi
		if [ $n -eq 1 ]; then
			# the first command ran gpuvet check: the binary is there and its report is in the log
			[ -x "$r$home/gpuvet/build/gpuvet" ] || { echo "not ok: $name: no build/gpuvet after '$cmd'"; status=1; return; }
			grep -Eq '\([0-9]+ fail, [0-9]+ warn, [0-9]+ info\)' "$log-$n.log" || { tail -n 20 "$log-$n.log"; echo "not ok: $name: '$cmd' did not run gpuvet check"; status=1; return; }
		fi
	done
	echo "ok: $name: both README commands passed on a bare $suite root"
	rm -rf "$r"
}

one_case root root /root
one_case user tester /home/tester
exit $status
