#!/usr/bin/env python3
"""The fact-key registry (src/core/factkeys.def) for scripts: read it, check the sources against
it, and convert literal keys in the sources to its constants.

    python3 scripts/factkeys.py check [ROOT]     # the fact-registry test (CTest factkeys)
    python3 scripts/factkeys.py convert [FILE...] # rewrite literal keys as FK_ constants

check fails when:
  - a facts_* call (or a rule's `needs`) names its key with a string literal rather than a
    registry constant (a literal "%s" with a key built at run time is allowed: the run-time check,
    GPUVET_FACT_KEYS_LOG, judges those);
  - a string literal anywhere under src/ spells a registered key (use the constant), or is a key
    format of a known layer ("nvml.gpu.%d.nmae") the registry lacks;
  - a `needs` key is not in the registry;
  - an entry's constant is used nowhere under src/ but the registry (nothing writes or reads it),
    or its writer file neither uses the constant nor names the key's last part (a table row);
  - an entry lacks a meaning, or the file has an entry without its #define or the reverse.
For a literal key the registry lacks, check prints the entry to add (its meaning left to write);
convert rewrites what it can of the first two (the integrator's tool after a merge).
"""
import os
import re
import sys

KEYARG = {'facts_put_str': 3, 'facts_put_int': 3, 'facts_put_real': 3, 'facts_put_bool': 3, 'facts_put_state': 4,
          'facts_put_read_error': 4, 'facts_put_unparsable': 5, 'facts_get': 1, 'facts_str': 1, 'facts_int': 2,
          'facts_real': 2, 'facts_true': 1, 'facts_int_or': 2}
CALL = re.compile(r'\b(' + '|'.join(KEYARG) + r')\s*\(')
DEF = 'src/core/factkeys.def'
SKIP = {'src/core/factkeys.def', 'src/core/factkeys.h', 'src/core/factkeys.c', 'src/core/facts.h', 'src/core/facts.c'}
INT_SPEC = re.compile(r'%(?:z|l|ll)?[dui]')


def c_unescape(s):
    return re.sub(r'\\(.)', lambda m: {'n': '\n', 't': '\t'}.get(m.group(1), m.group(1)), s)


def load_registry(root):
    """[{name, params, pattern (with %d), type, unit, writer, meaning, line}]"""
    text = open(os.path.join(root, DEF)).read()
    defines = {}
    for m in re.finditer(r'^#define (FK_[A-Z0-9_]+)(?:\(([a-z, ]*)\))? (.*)$', text, re.M):
        name, params, body = m.group(1), m.group(2), m.group(3)
        params = [p.strip() for p in params.split(',')] if params else []
        pat = ''
        for tok in re.findall(r'"(?:[^"\\]|\\.)*"|FKS_##[a-z]', body):
            pat += '%d' if tok.startswith('FKS_') else c_unescape(tok[1:-1])
        defines[name] = (params, pat, text.count('\n', 0, m.start()) + 1)
    entries = []
    for m in re.finditer(r'^FACT_KEY\((FK_[A-Z0-9_]+)(?:\([a-z, ]*\))?, ([A-Z]+), ((?:"(?:[^"\\]|\\.)*"\s*)+), '
                         r'((?:"(?:[^"\\]|\\.)*"\s*)+),\s*((?:"(?:[^"\\]|\\.)*"\s*)+)\)', text, re.M):
        strs = [''.join(c_unescape(x) for x in re.findall(r'"((?:[^"\\]|\\.)*)"', g)) for g in m.group(3, 4, 5)]
        name = m.group(1)
        params, pat, line = defines.get(name, (None, None, 0))
        entries.append(dict(name=name, params=params, pattern=pat, type=m.group(2), unit=strs[0], writer=strs[1],
                            meaning=strs[2], line=text.count('\n', 0, m.start()) + 1))
    return entries, defines, text


def pattern_regex(pat, allow_specs):
    """pat's %d parts match an integer (or, allow_specs, a printf integer conversion), %s any text"""
    out = ''
    for part in re.split(r'(%d|%s)', pat):
        if part == '%d':
            out += r'(-?\d+|%(?:z|l|ll)?[dui])' if allow_specs else r'(-?\d+)'
        elif part == '%s':
            out += r'(.+?)'
        else:
            out += re.escape(part)
    return re.compile('^' + out + '$')


def split_args(s, i):
    """spans of the arguments of the call whose '(' ends at s[i-1]; None when unbalanced"""
    depth, args, st, j = 0, [], i, i
    while j < len(s):
        c = s[j]
        if c in '"\'':
            j += 1
            while j < len(s) and s[j] != c:
                j += 2 if s[j] == '\\' else 1
        elif s.startswith('/*', j):
            j = s.find('*/', j) + 1
        elif s.startswith('//', j):
            j = s.find('\n', j)
        elif c in '([{':
            depth += 1
        elif c in ')]}':
            if depth == 0:
                args.append((st, j))
                return args
            depth -= 1
        elif c == ',' and depth == 0:
            args.append((st, j))
            st = j + 1
        j += 1
    return None


LIT = re.compile(r'^\s*((?:"(?:[^"\\]|\\.)*"\s*)+)$', re.S)


def literal_value(txt):
    m = LIT.match(txt)
    if not m:
        return None
    return ''.join(c_unescape(x) for x in re.findall(r'"((?:[^"\\]|\\.)*)"', txt))


def code_mask(s):
    """s with comments blanked (strings kept), so literals are found in code only"""
    out = list(s)
    i = 0
    while i < len(s):
        if s.startswith('/*', i):
            e = s.find('*/', i + 2)
            e = len(s) if e < 0 else e + 2
            for k in range(i, e):
                if out[k] != '\n':
                    out[k] = ' '
            i = e
        elif s.startswith('//', i):
            e = s.find('\n', i)
            e = len(s) if e < 0 else e
            for k in range(i, e):
                out[k] = ' '
            i = e
        elif s[i] == '"' or s[i] == "'":
            q = s[i]
            i += 1
            while i < len(s) and s[i] != q:
                i += 2 if s[i] == '\\' else 1
            i += 1
        else:
            i += 1
    return ''.join(out)


def string_literals(s):
    """(start, end, value) of every run of adjacent string literals in code (not in comments or
    #include lines)"""
    m = code_mask(s)
    for x in re.finditer(r'"(?:[^"\\\n]|\\.)*"(?:\s*"(?:[^"\\\n]|\\.)*")*', m):
        line_start = m.rfind('\n', 0, x.start()) + 1
        if m[line_start:x.start()].lstrip().startswith('#include'):
            continue
        if x.start() > 0 and (m[x.start() - 1].isalnum() or m[x.start() - 1] == '_'):
            continue  # u8"..." and the like
        yield x.start(), x.end(), literal_value(s[x.start():x.end()])


class Registry:
    def __init__(self, entries):
        self.entries = entries
        self.exact = {}
        for e in entries:
            self.exact[e['pattern']] = e
        self.rx = [(e, pattern_regex(e['pattern'], True)) for e in entries]
        self.rx_key = [(e, pattern_regex(e['pattern'], False)) for e in entries]

    def find(self, literal):
        """the entry a literal key format names, and per part of its pattern what stands there
        (a conversion such as %zu, or concrete text); None when none"""
        canon = INT_SPEC.sub('%d', literal)
        if canon in self.exact:
            e = self.exact[canon]
            return e, [m.group(0) for m in re.finditer(r'%(?:z|l|ll)?[dui]|%s', literal)]
        best = None
        for e, r in self.rx:
            m = r.match(literal)
            if m and any('%' in g for g in m.groups() if not g.startswith('%') or not (g == '%s' or INT_SPEC.fullmatch(g))):
                continue
            if m and (best is None or e['pattern'].count('%s') < best[0]['pattern'].count('%s')):
                best = (e, list(m.groups()))
        return best

    def lookup_key(self, key):
        """the entry of a concrete key, as factkey_lookup finds it"""
        loose = None
        for e, r in self.rx_key:
            if r.match(key):
                if '%s' not in e['pattern']:
                    return e
                loose = loose or e
        return loose


def spec_token(conv):
    return {'%d': 'd', '%i': 'd', '%u': 'u', '%zu': 'zu', '%zd': 'zu', '%ld': 'ld', '%lld': 'lld', '%lu': 'ld',
            '%llu': 'lld'}.get(conv)


def constant_for(entry, parts):
    """(constant text, [(position among the call's key arguments, inserted C expression)]) or None"""
    placeholders = re.findall(r'%d|%s', entry['pattern'])
    specs, inserts, argpos = [], [], 0
    for ph, got in zip(placeholders, parts):
        is_conv = got.startswith('%') and (got == '%s' or INT_SPEC.fullmatch(got))
        if ph == '%d':
            if is_conv:
                t = spec_token(got)
                if not t:
                    return None
                specs.append(t)
                argpos += 1
            else:
                specs.append('d')
                inserts.append((argpos, got))
                argpos += 1
        else:
            if is_conv and got == '%s':
                argpos += 1
            elif is_conv:
                return None
            else:
                inserts.append((argpos, '"' + got.replace('\\', '\\\\').replace('"', '\\"') + '"'))
                argpos += 1
    text = entry['name'] + ('(' + ', '.join(specs) + ')' if specs else '')
    return text, inserts


PUT_TYPE = {'facts_put_str': 'STR', 'facts_put_int': 'INT', 'facts_put_real': 'REAL', 'facts_put_bool': 'BOOL',
            'facts_put_state': 'STATE', 'facts_put_read_error': 'STATE', 'facts_put_unparsable': 'STATE'}


def suggested_entry(pat, ty, writer):
    """the two lines of a registry entry for pattern pat (%d and %s parts)"""
    words = [re.sub(r'%[ds]', '', c).strip('_-').replace('-', '_').upper() for c in pat.split('.')]
    name = 'FK_' + '_'.join(w for w in words if w)
    params, body = [], []
    for part in re.split(r'(%d)', pat):
        if part == '%d':
            v = 'ijklm'[len(params)]
            params.append(v)
            body.append('FKS_##' + v)
        elif part:
            body.append('"%s"' % part)
    define = '#define %s%s %s' % (name, '(%s)' % ', '.join(params) if params else '', ' '.join(body))
    ref = name + ('(%s)' % ', '.join('d' for _ in params) if params else '')
    return '%s\nFACT_KEY(%s, %s, "", "%s",\n\t "MEANING")' % (define, ref, ty, writer)


def needs_constant(reg, value):
    parts = value.split()
    if not parts:
        return None
    out = []
    for p in parts:
        e = reg.exact.get(p)
        if not e or e['params']:
            return None
        out.append(e['name'])
    return ' " " '.join(out)


def looks_like_key(reg, value):
    return value and ' ' not in value and '.' in value and reg.find(value) is not None


def src_files(root):
    for dp, dn, fns in os.walk(os.path.join(root, 'src')):
        dn.sort()
        for fn in sorted(fns):
            if fn.endswith(('.c', '.h')):
                p = os.path.relpath(os.path.join(dp, fn), root)
                if p not in SKIP:
                    yield p


def calls_in(s):
    for m in CALL.finditer(s):
        args = split_args(s, m.end())
        k = KEYARG[m.group(1)]
        if not args or len(args) <= k:
            continue
        yield m, args, k


def convert_text(reg, s):
    """s with literal keys replaced by constants; and the problems left"""
    edits = []  # (start, end, replacement)
    handled = set()
    for m, args, k in calls_in(s):
        a, b = args[k]
        val = literal_value(s[a:b])
        if val is None:
            continue
        handled.add(a + len(s[a:b]) - len(s[a:b].lstrip()))
        if val == '%s':
            continue
        found = reg.find(val)
        if not found:
            continue
        c = constant_for(*found)
        if not c:
            continue
        text, inserts = c
        lead = s[a:b][:len(s[a:b]) - len(s[a:b].lstrip())]
        rest = args[k + 1:]
        new_key = lead + text
        if inserts:
            # the call's key arguments after the format, with the concrete parts put in
            olds = [s[x:y].strip() for x, y in rest]
            vals, oi, ii = [], 0, 0
            total = len(olds) + len(inserts)
            ins = dict(inserts)
            for pos in range(total):
                if pos in ins:
                    vals.append(ins[pos])
                else:
                    vals.append(olds[oi])
                    oi += 1
            end = rest[-1][1] if rest else b
            edits.append((a, end, new_key + ''.join(', ' + v for v in vals)))
        else:
            edits.append((a, b, new_key))
    for a, b, val in string_literals(s):
        if a in handled or val is None:
            continue
        if any(x <= a < y for x, y, _ in edits):
            continue
        # a rule's needs: "nvml.init cuda.device_count"
        if ' ' in val:
            nc = needs_constant(reg, val)
            if nc and all(reg.exact.get(p) for p in val.split()) and re.search(r'\{\s*"[^"]*",\s*"[^"]*",\s*SEV_[A-Z]+,\s*$', s[max(0, a - 200):a]):
                edits.append((a, b, nc))
            continue
        if not looks_like_key(reg, val):
            continue
        e, parts = reg.find(val)
        if any(not p.startswith('%') for p in parts):
            continue  # a concrete instance outside a facts_* call: left for a person
        c = constant_for(e, parts)
        if c and not c[1]:
            edits.append((a, b, c[0]))
    edits.sort()
    out, last = [], 0
    for a, b, r in edits:
        if a < last:
            continue
        out.append(s[last:a])
        out.append(r)
        last = b
    out.append(s[last:])
    return ''.join(out), len(edits)


def add_include(s):
    if '#include "core/factkeys.h"' in s:
        return s
    incs = list(re.finditer(r'^#include "[^"]+"\n', s, re.M))
    if not incs:
        incs = list(re.finditer(r'^#include <[^>]+>\n', s, re.M))
        if not incs:
            return '#include "core/factkeys.h"\n' + s
        e = incs[-1].end()
        return s[:e] + '\n#include "core/factkeys.h"\n' + s[e:]
    # keep the local includes sorted: before the first one that sorts after it
    own = None
    for x in incs:
        name = re.match(r'#include "([^"]+)"', x.group(0)).group(1)
        if x is incs[0] and not name.startswith('core/') and s[x.end():x.end() + 1] == '\n':
            continue  # a .c file's own header first, then a blank line
        if name > 'core/factkeys.h':
            own = x
            break
    if own:
        return s[:own.start()] + '#include "core/factkeys.h"\n' + s[own.start():]
    e = incs[-1].end()
    return s[:e] + '#include "core/factkeys.h"\n' + s[e:]


def cmd_convert(root, files):
    entries, _, _ = load_registry(root)
    reg = Registry(entries)
    files = files or list(src_files(root))
    total = 0
    for p in files:
        path = os.path.join(root, p)
        s = open(path).read()
        t, n = convert_text(reg, s)
        if n:
            t = add_include(t)
            open(path, 'w').write(t)
            total += n
            print('%s: %d' % (p, n))
    print('%d keys converted' % total)


def cmd_check(root):
    entries, defines, text = load_registry(root)
    reg = Registry(entries)
    problems = []
    names = {e['name'] for e in entries}
    for name, (params, pat, line) in defines.items():
        if name not in names:
            problems.append('%s:%d: %s has no FACT_KEY line' % (DEF, line, name))
    seen_pat = {}
    for e in entries:
        if e['pattern'] is None:
            problems.append('%s:%d: FACT_KEY(%s) has no #define' % (DEF, e['line'], e['name']))
            continue
        if not e['meaning'].strip() or e['meaning'].strip() == 'MEANING':
            problems.append('%s:%d: %s has no meaning' % (DEF, e['line'], e['name']))
        if e['pattern'] in seen_pat:
            problems.append('%s:%d: %s declares the pattern of %s again' % (DEF, e['line'], e['name'], seen_pat[e['pattern']]))
        seen_pat[e['pattern']] = e['name']
    layers = sorted({e['pattern'].split('.')[0] for e in entries if e['pattern']})
    layer_format = re.compile(r'^(%s)\.[A-Za-z0-9_.%%-]*%%[a-z]+[A-Za-z0-9_.%%-]*$' % '|'.join(layers))
    uses = {e['name']: [] for e in entries}
    suggest = {}  # pattern: (type, writer) of keys the registry lacks
    texts = {}
    for p in src_files(root):
        s = open(os.path.join(root, p)).read()
        texts[p] = s
        masked = code_mask(s)
        for name in re.findall(r'\bFK_[A-Z0-9_]+\b', masked):
            if name in uses:
                uses[name].append(p)
        reported = set()
        for m, args, k in calls_in(s):
            a, b = args[k]
            val = literal_value(s[a:b])
            line = s.count('\n', 0, a) + 1
            if val is not None and val != '%s':
                reported.add(a + len(s[a:b]) - len(s[a:b].lstrip()))
                f = reg.find(val)
                hint = (' (the registry has %s)' % f[0]['name']) if f else ' (not in the registry: add it to %s)' % DEF
                if not f:
                    suggest.setdefault(INT_SPEC.sub('%d', val), (PUT_TYPE.get(m.group(1), 'ANY'), p[len('src/'):]))
                problems.append('%s:%d: %s names fact key "%s" with a literal%s' % (p, line, m.group(1), val, hint))
        for a, b, val in string_literals(s):
            if val is None or a in reported:
                continue
            line = s.count('\n', 0, a) + 1
            if ' ' not in val and looks_like_key(reg, val) and not val == '%s':
                e = reg.find(val)[0]
                problems.append('%s:%d: literal "%s" spells fact key %s: use the constant' % (p, line, val, e['name']))
            elif layer_format.match(val) and not reg.find(val) and not val.endswith('.%s'):
                # a key format built for a facts_* call through "%s" ("nvml.gpu.%d.nmae"); one whose
                # last part is a table's name ("nvml.gpu.%d.%s") is left to the run-time check
                problems.append('%s:%d: "%s" looks like a fact key format the registry lacks' % (p, line, val))
    # needs lists: every key a rule needs is registered (the rule tables are under src/rules)
    for p, s in texts.items():
        if not p.startswith('src/rules/'):
            continue
        for m in re.finditer(r'\{\s*"([a-z0-9_.-]+)",\s*"([a-z]+)",\s*SEV_[A-Z]+,\s*((?:(?:"(?:[^"\\]|\\.)*"|FK_[A-Z0-9_]+)\s*)+),', s):
            needs = m.group(3)
            line = s.count('\n', 0, m.start()) + 1
            for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', needs):
                for key in lit.split():
                    problems.append('%s:%d: rule %s needs "%s" as a literal: name it by its registry constant' % (p, line, m.group(1), key))
            for name in re.findall(r'FK_[A-Z0-9_]+', needs):
                if name not in names:
                    problems.append('%s:%d: rule %s needs %s, which the registry lacks' % (p, line, m.group(1), name))
    # (c) every entry is used, and its writer names it
    for e in entries:
        if e['pattern'] is None:
            continue
        tables_named = re.findall(r'\(([a-z_/]+\.[ch])\)', e['writer'])
        if not uses[e['name']] and not tables_named:
            problems.append('%s:%d: %s (%s) is used nowhere under src/' % (DEF, e['line'], e['name'], e['pattern']))
        for w in [x.strip() for x in re.split(r',\s*', e['writer']) if x.strip()]:
            wf = w.split(' ')[0]
            path = 'src/' + wf
            if path not in texts and not os.path.exists(os.path.join(root, path)):
                problems.append('%s:%d: %s: writer %s is not a file under src/' % (DEF, e['line'], e['name'], wf))
                continue
            ws = texts.get(path) or open(os.path.join(root, path)).read()
            tables = [t for t in re.findall(r'\(([a-z_/]+\.[ch])\)', w)] if '(' in w else []
            last = re.sub(r'%[ds]', '', e['pattern'].rsplit('.', 1)[-1]).strip('_-')
            if e['name'] in code_mask(ws):
                continue
            found = any(re.search(r'"[^"\n]*\b' + re.escape(last) + r'\b[^"\n]*"', open(os.path.join(root, 'src', t)).read(), re.I)
                        for t in tables + [wf]) if last else False
            if not found:
                problems.append('%s:%d: %s: its writer %s neither uses it nor names "%s"' % (DEF, e['line'], e['name'], wf, last))
    for pr in problems:
        print(pr)
    if suggest:
        print('\nentries to complete (meaning) and add to %s, then run scripts/factkeys.py convert:' % DEF)
        for pat, (ty, writer) in sorted(suggest.items()):
            print(suggested_entry(pat, ty, writer))
    print('%d registry entries; %d problems' % (len(entries), len(problems)))
    return 1 if problems else 0


def main(argv):
    if len(argv) < 2 or argv[1] not in ('check', 'convert'):
        print(__doc__)
        return 2
    if argv[1] == 'check':
        return cmd_check(argv[2] if len(argv) > 2 else '.')
    root = '.'
    cmd_convert(root, argv[2:])
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
