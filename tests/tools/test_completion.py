#!/usr/bin/env python3
"""The completions (contrib/bash-completion/gpuvet, contrib/zsh/_gpuvet, contrib/fish/gpuvet.fish)
against the program: bash and fish complete real command lines (the values of --format, --only,
--models; no option twice; the finding ids of --require from the binary), every option that
`gpuvet CMD --help` lists is offered and nothing else; zsh loads the file through compinit.

usage: test_completion.py GPUVET SRCDIR"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

GPUVET, SRC = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
BASH = os.path.join(SRC, "contrib/bash-completion/gpuvet")
ZSH = os.path.join(SRC, "contrib/zsh/_gpuvet")
FISH = os.path.join(SRC, "contrib/fish/gpuvet.fish")
failures = []


def fail(msg):
    failures.append(msg)
    print("not ok: " + msg)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=60, **kw)


def commands():
    out = run([GPUVET, "--help"]).stdout
    block = out.split("commands:\n", 1)[1].split("\n\n", 1)[0]
    return [l.split()[0] for l in block.splitlines() if l.strip()]


def help_options(cmd, valued=False):
    """Every option a --help text lists: the lines that start with -x, --name or --name (valued:
    only those that take a value)."""
    text = run([GPUVET] + ([cmd] if cmd else []) + ["--help"]).stdout
    opts = set()
    for line in text.splitlines():
        m = re.match(r"^  (?:(-[A-Za-z]), )?(--[a-z0-9-]+)( [A-Z])?", line)
        if m and (m.group(3) or not valued):
            opts.update(x for x in m.groups()[:2] if x)
    return opts


def bash_complete(line):
    """COMPREPLY for the command line (the word being completed is what follows the last space)."""
    words = line.split(" ")
    script = (
        "source %s\n"
        "COMP_WORDS=(%s)\n"
        "COMP_CWORD=%d\n"
        "COMP_LINE=%s\n"
        "_gpuvet\n"
        "printf '%%s\\n' \"${COMPREPLY[@]}\"\n"
    ) % (BASH, " ".join("'%s'" % w for w in [GPUVET] + words[1:]), len(words) - 1, "'%s'" % line)
    r = run(["bash", "--norc", "--noprofile", "-c", script])
    if r.returncode != 0 or r.stderr.strip():
        fail("bash completion of %r: exit %d, %s" % (line, r.returncode, r.stderr.strip()))
    return [w for w in r.stdout.splitlines() if w]


def fish_complete(line):
    env = dict(os.environ, PATH=os.path.dirname(GPUVET) + os.pathsep + os.environ.get("PATH", ""))
    home = tempfile.mkdtemp()
    env["HOME"] = home
    env["XDG_CONFIG_HOME"] = env["XDG_DATA_HOME"] = env["XDG_CACHE_HOME"] = home
    try:
        r = run(["fish", "--no-config", "-c", "source %s; complete -C '%s'" % (FISH, line.replace("'", "\\'"))], env=env)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if r.returncode != 0 or r.stderr.strip():
        fail("fish completion of %r: exit %d, %s" % (line, r.returncode, r.stderr.strip()))
    return [w.split("\t")[0] for w in r.stdout.splitlines() if w]


# zsh completes inside its line editor only: a zsh in a pseudo-terminal (zpty) with compadd
# wrapped to print each match (the method of zsh-capture-completion). RE""ADY and DO""NE: the
# terminal's echo of the line typed does not match what the line prints.
ZSH_CAPTURE = r"""
zmodload zsh/zpty
zpty z zsh -f -i
zpty -w z 'PROMPT=; fpath=('$2' $fpath); path=('$3' $path); autoload -Uz compinit; compinit -u -D'
zpty -w z 'compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  typeset -A apre
  zparseopts -E P:=apre
  local h
  for h in $__hits; do echo -E - "<<$IPREFIX$apre[-P]$h>>"; done
}'
zpty -w z "zstyle ':completion:*' list-grouped false; zstyle ':completion:*' insert-tab false; bindkey '^I' complete-word"
zpty -w z 'print -r -- RE""ADY'
zpty -r z line '*READY*'
zpty -w -n z "$1"$'\t'
zpty -w z $'\C-u print -r -- DO""NE\C-m'
zpty -r z out '*DONE*'
local l
for l in ${(f)out}; do
  [[ $l == *'<<'*'>>'* ]] && print -r -- ${${l#*<<}%%>>*}
done
zpty -d z
"""


def zsh_complete(line):
    home = tempfile.mkdtemp()
    try:
        script = os.path.join(home, "capture.zsh")
        with open(script, "w") as f:
            f.write(ZSH_CAPTURE)
        r = run(["zsh", "-f", script, line, os.path.dirname(ZSH), os.path.dirname(GPUVET)],
                env=dict(os.environ, HOME=home, ZDOTDIR=home, TERM="dumb"))
    finally:
        shutil.rmtree(home, ignore_errors=True)
    return sorted(set(w for w in r.stdout.splitlines() if w))


def expect(shell, line, got, want, exact=True):
    if exact and sorted(got) != sorted(want):
        fail("%s: %r completes to %s, expected %s" % (shell, line, sorted(got), sorted(want)))
    elif not exact and not set(want) <= set(got):
        fail("%s: %r completes to %s, lacks %s" % (shell, line, sorted(got), sorted(set(want) - set(got))))
    else:
        print("ok: %s: %r" % (shell, line))


CASES = [
    # (line, expected, exact)
    ("gpuvet history export --format ", ["csv", "json"], True),
    ("gpuvet bench --only gemm,me", ["gemm,memory"], True),
    ("gpuvet tune --models ", ["resnet50", "bert", "mlp"], True),
    ("gpuvet tune --settings amp_", ["amp_fp16", "amp_bf16"], True),
    ("gpuvet diag -r ", ["1", "2", "3", "4", "quick", "medium", "long", "xlong"], True),
    ("gpuvet diag --test gemm,", None, False),  # filled below from diag --help
    ("gpuvet history --kind ", ["check", "bench", "tune", "watch", "diag"], True),
    ("gpuvet --color ", ["auto", "always", "never"], True),
    ("gpuvet check --color a", ["auto", "always"], True),
    ("gpuvet history ", ["list", "show", "compare", "baseline", "export", "samples", "gc", "path"], True),
    ("gpuvet env ", ["use"], True),
    ("gpuvet check --require !gpu.non", ["!gpu.none"], True),
    ("gpuvet di", ["diag"], True),
    ("gpuvet serve --check-interval ", [], True),
]


def main():
    for f in (BASH, ZSH, FISH):
        if not os.path.isfile(f):
            fail("%s is missing" % f)
    cmds = commands()
    if "diag" not in cmds:
        fail("gpuvet --help lists no diag command")
    diag_help = run([GPUVET, "diag", "--help"]).stdout
    tests = re.findall(r"^  ([a-z0-9_]+) +\d  ", diag_help, re.M)
    cases = [(l, ["gemm," + t for t in tests] if w is None else w, e) for l, w, e in CASES]

    # bash: every option of --help offered, once, and nothing else
    global_opts = help_options(None, valued=True)  # --root, --kb, --color: after the command too
    for cmd in cmds:
        got = bash_complete("gpuvet %s -" % cmd)
        dup = sorted({w for w in got if got.count(w) > 1})
        if dup:
            fail("bash: gpuvet %s - offers %s more than once" % (cmd, dup))
        want = help_options(cmd) | global_opts
        if set(got) != want:
            fail("bash: gpuvet %s -: offered but not in --help %s; in --help but not offered %s"
                 % (cmd, sorted(set(got) - want), sorted(want - set(got))))
        else:
            print("ok: bash: gpuvet %s - offers exactly --help's options" % cmd)
    got = bash_complete("gpuvet ")
    expect("bash", "gpuvet ", got, cmds)
    for line, want, exact in cases:
        expect("bash", line, bash_complete(line), want, exact)
    expect("bash", "gpuvet history export --format=", bash_complete("gpuvet history export --format="), ["csv", "json"])
    expect("bash", "gpuvet run -- ech", bash_complete("gpuvet run -- ech"), ["echo"], False)

    # fish: the same command lines
    if shutil.which("fish"):
        for cmd in cmds:
            got = fish_complete("gpuvet %s -" % cmd)
            want = help_options(cmd) | global_opts
            short = {w for w in want if re.match(r"^-[A-Za-z]$", w)}
            if not (want - short) <= set(got) or not set(got) <= want:
                fail("fish: gpuvet %s -: offered but not in --help %s; in --help but not offered %s"
                     % (cmd, sorted(set(got) - want), sorted((want - short) - set(got))))
            else:
                print("ok: fish: gpuvet %s - offers --help's options" % cmd)
        for line, want, exact in cases:
            if line.endswith(" --color a"):
                continue
            expect("fish", line, fish_complete(line), want, exact)
        expect("fish", "gpuvet bench --only=gemm,me", fish_complete("gpuvet bench --only=gemm,me"), ["--only=gemm,memory"])
    else:
        fail("fish is not installed (scripts/install-deps.sh --test installs it)")

    # zsh: the file parses, compinit finds it, every command has its function
    if shutil.which("zsh"):
        r = run(["zsh", "-n", ZSH])
        if r.returncode != 0:
            fail("zsh -n %s: %s" % (ZSH, r.stderr.strip()))
        home = tempfile.mkdtemp()
        try:
            script = ("fpath=(%s $fpath); autoload -Uz compinit; compinit -u -d %s/zcompdump; "
                      "print -r -- $_comps[gpuvet]; source %s 2>/dev/null; whence -w %s") % (
                os.path.dirname(ZSH), home, ZSH, " ".join("_gpuvet_" + c for c in cmds))
            r = run(["zsh", "-f", "-c", script], env=dict(os.environ, HOME=home, ZDOTDIR=home))
        finally:
            shutil.rmtree(home, ignore_errors=True)
        lines = r.stdout.splitlines()
        if not lines or lines[0] != "_gpuvet" or any(not l.endswith(": function") for l in lines[1:]) \
                or len(lines) != len(cmds) + 1:
            fail("zsh: compinit does not load _gpuvet with a function per command: %s %s" % (r.stdout, r.stderr))
        else:
            print("ok: zsh: compinit loads _gpuvet, a function for each of the %d commands" % len(cmds))
        for line, want, exact in [
                ("gpuvet hist", ["history"], True),
                ("gpuvet history ", ["list", "show", "compare", "baseline", "export", "samples", "gc", "path"], True),
                ("gpuvet history export --format=", ["--format=csv", "--format=json"], True),
                ("gpuvet tune --models ", ["resnet50", "bert", "mlp"], True),
                ("gpuvet diag -r ", ["1", "2", "3", "4", "quick", "medium", "long", "xlong"], True),
                ("gpuvet check --ju", ["--junit"], True),
                ("gpuvet --color ", ["auto", "always", "never"], True),
                ("gpuvet check --require \\!gpu.non", ["\\!gpu.none"], True)]:
            expect("zsh", line, zsh_complete(line), want, exact)
    else:
        fail("zsh is not installed (scripts/install-deps.sh --test installs it)")

    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
