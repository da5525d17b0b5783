#!/bin/sh
# The first command's configure, without the test packages and after a failed configure:
# - without cmocka (a pkg-config that does not know it), GPUVET_TESTS=AUTO configures the tool
#   alone and says in one line that the tests are left out;
# - GPUVET_TESTS=ON without cmocka fails, and leaves no gpuvet-configured stamp;
# - the next `make configure` does not trust that build tree: it configures again, and succeeds.
#   configure_check.sh SOURCE_DIR
set -u
src=$1
command -v make >/dev/null || { echo "skip: make is not installed"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpuvet-configure.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
not_ok() { echo "not ok: $*"; status=1; }
real=$(command -v pkg-config) || { echo "skip: pkg-config is not installed"; exit 77; }
cat >"$tmp/pkg-config" <<EOS
#!/bin/sh
for a; do case \$a in cmocka*) exit 1 ;; esac; done
exec $real "\$@"
EOS
chmod +x "$tmp/pkg-config"
b=$tmp/build

cmake -S "$src" -B "$b" -DPKG_CONFIG_EXECUTABLE="$tmp/pkg-config" >"$tmp/auto.log" 2>&1 || { tail -20 "$tmp/auto.log"; not_ok "AUTO without cmocka: configure failed"; }
grep -q "gpuvet: tests left out (cmocka not found)" "$tmp/auto.log" || not_ok "AUTO without cmocka: no note that the tests are left out"
[ "$(grep -c "tests left out" "$tmp/auto.log")" -eq 1 ] || not_ok "the note is not one line"
[ -f "$b/gpuvet-configured" ] || not_ok "AUTO without cmocka: no stamp after a configure that finished"
[ ! -d "$b/tests" ] || not_ok "AUTO without cmocka: tests/ configured anyway"

cmake -S "$src" -B "$b" -DGPUVET_TESTS=ON >"$tmp/on.log" 2>&1 && not_ok "GPUVET_TESTS=ON without cmocka: configure succeeded"
[ ! -f "$b/gpuvet-configured" ] || not_ok "a failed configure left the stamp"

# the Makefile sees the unfinished tree and starts over (with the real pkg-config: it succeeds)
make -C "$src" --no-print-directory BUILD="$b" configure >"$tmp/make.log" 2>&1 || { tail -20 "$tmp/make.log"; not_ok "make configure after a failed configure failed"; }
grep -q "is from an unfinished configure: configuring again" "$tmp/make.log" || not_ok "make configure did not say it configures again"
[ -f "$b/gpuvet-configured" ] || not_ok "make configure left no stamp"
[ $status -eq 0 ] && echo "ok: configure without test packages, and after a failed one"
exit $status
