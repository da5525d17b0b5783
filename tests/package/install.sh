#!/bin/sh
# `make install`'s files: cmake --install --strip into a staging directory (DESTDIR), then every
# file README.md's "Packages" names is there, the binaries are stripped, the systemd unit runs the
# installed binary, the Slurm check is executable, and the installed gpuvet finds gpuvet-serve
# under its own prefix (serve --textfile --once through it).
#   install.sh BUILD_DIR WORK_DIR
set -eu
build=$1
work=$2
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
prefix=/opt/gpuvet-test
DESTDIR=$work cmake --install "$build" --prefix "$prefix" --strip >"$work/install.log" 2>&1 ||
	{ cat "$work/install.log"; echo "not ok: cmake --install failed"; exit 1; }
status=0
for f in bin/gpuvet libexec/gpuvet/gpuvet-serve sbin/gpuvet-slurm-check share/man/man1/gpuvet.1 lib/systemd/system/gpuvet-exporter.service \
	share/gpuvet/prometheus/gpuvet-alerts.yml share/gpuvet/grafana/gpuvet-dashboard.json \
	share/gpuvet/kubernetes/gpuvet-daemonset.yaml share/gpuvet/schemas/check.schema.json \
	share/gpuvet/schemas/common.schema.json share/bash-completion/completions/gpuvet \
	share/gpuvet/helm/gpuvet/Chart.yaml share/gpuvet/helm/gpuvet/templates/daemonset.yaml \
	share/zsh/vendor-completions/_gpuvet share/fish/vendor_completions.d/gpuvet.fish; do
	if [ -f "$work$prefix/$f" ]; then echo "ok: $f"; else echo "not ok: $f is not installed"; status=1; fi
done
bin=$work$prefix/bin/gpuvet
for f in bin/gpuvet libexec/gpuvet/gpuvet-serve; do
	if readelf -S "$work$prefix/$f" | grep -q '\.symtab'; then echo "not ok: $f is not stripped"; status=1; else echo "ok: $f is stripped"; fi
done
# only the exporter links libmicrohttpd (and the TLS libraries under it)
if readelf -d "$bin" | grep -q 'libmicrohttpd'; then echo "not ok: bin/gpuvet links libmicrohttpd"; status=1; fi
readelf -d "$work$prefix/libexec/gpuvet/gpuvet-serve" | grep -q 'libmicrohttpd' ||
	{ echo "not ok: gpuvet-serve does not link libmicrohttpd"; status=1; }
# installed under DESTDIR, not at the prefix: gpuvet finds it relative to its own directory
mkdir -p "$work/textfile"
if GPUVET_NO_HISTORY=1 "$bin" serve --textfile "$work/textfile" --once --check-interval 0 >"$work/serve.log" 2>&1 &&
	grep -q '^gpuvet_sampler_up ' "$work/textfile/gpuvet.prom"; then
	echo "ok: the installed gpuvet runs serve through gpuvet-serve"
else
	cat "$work/serve.log"; echo "not ok: the installed gpuvet serve --textfile --once"; status=1
fi
[ -x "$work$prefix/sbin/gpuvet-slurm-check" ] || { echo "not ok: the Slurm check is not executable"; status=1; }
grep -q "^ExecStart=$prefix/bin/gpuvet serve " "$work$prefix/lib/systemd/system/gpuvet-exporter.service" ||
	{ echo "not ok: the unit does not run $prefix/bin/gpuvet"; status=1; }
"$bin" --version | grep -q '^gpuvet ' || { echo "not ok: the installed binary does not run"; status=1; }
n=$(find "$work$prefix/share/gpuvet/schemas" -name '*.schema.json' | wc -l)
[ "$n" -ge 10 ] || { echo "not ok: only $n schemas installed"; status=1; }
rm -rf "$work"
exit $status
