"""`gpuvet serve` runs gpuvet-serve, the exporter's own program (cmd/serve_exec.c, core/helper.c).

gpuvet links no libmicrohttpd (nor the TLS libraries under it): the exporter is gpuvet-serve,
which gpuvet finds beside itself, then under its own prefix (../libexec/gpuvet), then where the
build put it, and execs with the command line as the user gave it, gpuvet's own options
included. Without it, serve says where it looked; every other command runs as before.
"""
import os
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gvtest  # noqa: E402
from gvtest import check  # noqa: E402

GPUVET, FAKE = gvtest.args()
HELPER = os.path.join(os.path.dirname(GPUVET), "gpuvet-serve")
CONF = "device_count = 1\n"


def needed(binary):
    r = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    return [line.split("[", 1)[1].rstrip("]") for line in r.stdout.decode().splitlines() if "(NEEDED)" in line]


def run(argv, extra=None):
    env, _ = gvtest.fake_env(FAKE, CONF, extra)
    env["HOME"] = gvtest.tmpdir()
    return subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)


def lonely_copy(name):
    """gpuvet alone in a directory of its own: bin/gpuvet under tmpdir()/name."""
    bindir = os.path.join(gvtest.tmpdir(), name, "bin")
    os.makedirs(bindir)
    copy = os.path.join(bindir, "gpuvet")
    shutil.copy2(GPUVET, copy)
    return copy


def main():
    def test_only_the_exporter_links_libmicrohttpd():
        if not shutil.which("readelf"):
            return gvtest.SKIP
        mine = needed(GPUVET)
        check(mine, "readelf found no NEEDED entries in %s" % GPUVET)
        check(not any(n.startswith("libmicrohttpd") for n in mine), "gpuvet links %s" % mine)
        check(any(n.startswith("libmicrohttpd") for n in needed(HELPER)), "gpuvet-serve does not link libmicrohttpd")

    def test_serve_through_the_helper_beside_it():
        out = os.path.join(gvtest.tmpdir(), "textfile")
        os.makedirs(out)
        r = run([GPUVET, "serve", "--textfile", out, "--once", "--check-interval", "0"])
        check(r.returncode == 0, "serve --textfile --once: exit %d: %s" % (r.returncode, r.stderr.decode()))
        with open(os.path.join(out, "gpuvet.prom")) as f:
            text = f.read()
        check("gpuvet_sampler_up 1" in text, "no gpuvet_sampler_up 1 in %r" % text[:400])
        check('gpuvet_gpu_info{' in text, "no GPU in the exposition")

    def test_help_and_bad_options_are_the_exporters():
        r = run([GPUVET, "serve", "--help"])
        check(r.returncode == 0 and r.stdout.startswith(b"usage: gpuvet serve"), "serve --help: %r" % r.stdout[:80])
        r = run([GPUVET, "serve", "--no-such-option"])
        check(r.returncode == 2, "serve --no-such-option: exit %d" % r.returncode)
        check(b"unknown option --no-such-option" in r.stderr, "stderr: %r" % r.stderr)

    def test_found_under_its_own_prefix_with_the_whole_command_line():
        copy = lonely_copy("prefix")
        libexec = os.path.join(os.path.dirname(os.path.dirname(copy)), "libexec", "gpuvet")
        os.makedirs(libexec)
        said = os.path.join(gvtest.tmpdir(), "prefix", "argv")
        # a stand-in that writes down how it was started, one argument per line, then its parent
        helper = os.path.join(libexec, "gpuvet-serve")
        with open(helper, "w") as f:
            f.write('#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done > %s\necho "$PPID" >> %s\n' % (said, said))
        os.chmod(helper, stat.S_IRWXU)
        r = run([copy, "--color", "never", "serve", "--interval", "2", "--hostname", "a b"])
        check(r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr.decode()))
        with open(said) as f:
            lines = f.read().splitlines()
        check(lines[:-1] == ["--color", "never", "serve", "--interval", "2", "--hostname", "a b"],
              "the helper got %r" % lines[:-1])
        # exec, not a child: the pid that systemd, Kubernetes or a shell's kill knows is the exporter's
        check(lines[-1] == str(os.getpid()), "the helper's parent is %s, not the caller %d" % (lines[-1], os.getpid()))

    def test_without_the_helper_serve_says_where_it_looked():
        copy = lonely_copy("alone")
        r = run([copy, "check", "--fast", "--no-python", "--json"])
        check(r.returncode in (0, 1) and r.stdout.lstrip().startswith(b"{"), "check without gpuvet-serve: %d" % r.returncode)
        out = os.path.join(gvtest.tmpdir(), "alone", "textfile")
        os.makedirs(out)
        r = run([copy, "serve", "--textfile", out, "--once", "--check-interval", "0"])
        err = r.stderr.decode()
        if r.returncode != 3 and "cannot find gpuvet-serve" not in err:
            # this machine has one where the build installs it (make install ran): found there
            return gvtest.SKIP
        check(r.returncode == 3, "exit %d" % r.returncode)
        check(err.startswith("gpuvet: cannot find gpuvet-serve, the program that runs gpuvet serve (looked for "),
              "stderr: %r" % err)
        check(os.path.join(os.path.dirname(copy), "gpuvet-serve") in err, "the directory of gpuvet not named: %r" % err)
        check(err.count("\n") == 1, "more than one line: %r" % err)

    gvtest.run([test_only_the_exporter_links_libmicrohttpd, test_serve_through_the_helper_beside_it,
                test_help_and_bad_options_are_the_exporters, test_found_under_its_own_prefix_with_the_whole_command_line,
                test_without_the_helper_serve_says_where_it_looked])


if __name__ == "__main__":
    main()
