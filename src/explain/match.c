#include <ctype.h>
#include <limits.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "explain/match.h"
#include "kb/kb_nvidia.h"

enum {
	WINDOW = 256 * 1024, /* a scan window */
	OVERLAP = 4 * 1024,  /* kept from one window to the next; a match is at most MATCH_MAX */
	MATCH_MAX = SIG_MATCH_MAX,
	LINE_MAX_BYTES = 64 * 1024,
	MAX_COUNT_PER_WINDOW = 4096, /* matches kept per pattern and window */
	RAW_MAX = 16384,             /* matches kept per window */
	SET_MAX = 24,                /* literal words per pattern */
	WORD_MIN = 3,                /* the shortest literal word a pattern may rest on */
	WORD_MAX = 64,
};

/* ---- what a pattern must contain, and how long a match can be ---- */

/* The literal strings of a subexpression: exact (it matches one of them and nothing else), or
 * required (every match contains one of them), or nothing known (n == 0, !exact). */
typedef struct litset {
	char *s[SET_MAX];
	size_t n;
	bool exact;
	size_t maxlen; /* longest match; SIZE_MAX: unbounded */
} litset;

typedef struct parser {
	const char *p;
	const char *err;
} parser;

static void ls_clear(litset *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->s[i]);
	l->n = 0;
}

static bool ls_has(const litset *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->s[i], s) == 0)
			return true;
	return false;
}

static bool ls_add(litset *l, const char *s)
{
	if (ls_has(l, s))
		return true;
	if (l->n >= SET_MAX || strlen(s) > WORD_MAX)
		return false;
	l->s[l->n++] = xstrdup(s);
	return true;
}

/* The worth of a set as a prefilter: its shortest string (longer is rarer), fewer strings better. */
static size_t ls_score(const litset *l)
{
	if (!l->n)
		return 0;
	size_t m = SIZE_MAX;
	for (size_t i = 0; i < l->n; i++)
		if (strlen(l->s[i]) < m)
			m = strlen(l->s[i]);
	return m * 64 + (SET_MAX - l->n);
}

/* best = the better of best and cand (cand is consumed) */
static void ls_keep_better(litset *best, litset *cand)
{
	if (ls_score(cand) > ls_score(best)) {
		ls_clear(best);
		*best = (litset){.n = cand->n, .maxlen = best->maxlen};
		memcpy(best->s, cand->s, cand->n * sizeof(char *));
		cand->n = 0;
	} else {
		ls_clear(cand);
	}
}

static size_t add_len(size_t a, size_t b) { return a == SIZE_MAX || b == SIZE_MAX ? SIZE_MAX : a + b; }
static size_t mul_len(size_t a, size_t n) { return a == SIZE_MAX || n == SIZE_MAX ? SIZE_MAX : a * n; }

static void parse_alt(parser *ps, litset *out);

static bool parse_count(parser *ps, size_t *v)
{
	if (!isdigit((unsigned char)*ps->p))
		return false;
	size_t n = 0;
	while (isdigit((unsigned char)*ps->p)) {
		n = n * 10 + (size_t)(*ps->p++ - '0');
		if (n > 1000)
			return false;
	}
	*v = n;
	return true;
}

/* A bracket expression; *ps->p is past '['. chars: its members when it has at most 4 (lower
 * case), else "". */
static void parse_bracket(parser *ps, char *chars)
{
	bool neg = false, big = false;
	char set[8];
	size_t n = 0;
	if (*ps->p == '^')
		neg = true, ps->p++;
	bool first = true;
	for (;;) {
		char c = *ps->p;
		if (!c) {
			ps->err = "an unclosed bracket";
			return;
		}
		if (c == ']' && !first) {
			ps->p++;
			break;
		}
		first = false;
		if (c == '\\') {
			/* POSIX reads it as a backslash: [^\n] would not be "any but a newline" */
			ps->err = "a backslash in a bracket expression (POSIX takes it literally: write [ -~] for a line's characters)";
			return;
		}
		if (c == '[' && (ps->p[1] == ':' || ps->p[1] == '.' || ps->p[1] == '=')) {
			const char *e = strstr(ps->p + 2, ":]");
			if (!e)
				e = strchr(ps->p + 2, ']');
			if (!e) {
				ps->err = "an unclosed character class";
				return;
			}
			ps->p = e + 2;
			big = true;
			continue;
		}
		if (ps->p[1] == '-' && ps->p[2] && ps->p[2] != ']') {
			big = true;
			ps->p += 3;
			continue;
		}
		char lc = (char)tolower((unsigned char)c);
		if (!memchr(set, lc, n)) {
			if (n < 4)
				set[n++] = lc;
			else
				big = true;
		}
		ps->p++;
	}
	if (neg || big)
		n = 0;
	memcpy(chars, set, n);
	chars[n] = '\0';
}

/* One atom and its quantifiers. */
static void parse_piece(parser *ps, litset *out)
{
	*out = (litset){.maxlen = 1};
	char c = *ps->p;
	if (c == '(') {
		ps->p++;
		parse_alt(ps, out);
		if (ps->err)
			return;
		if (*ps->p != ')') {
			ps->err = "an unclosed group";
			return;
		}
		ps->p++;
	} else if (c == '[') {
		ps->p++;
		char chars[8];
		parse_bracket(ps, chars);
		if (ps->err)
			return;
		if (*chars) {
			out->exact = true;
			for (const char *q = chars; *q; q++) {
				char one[2] = {*q, '\0'};
				ls_add(out, one);
			}
		}
	} else if (c == '.') {
		ps->p++;
	} else if (c == ' ') {
		ps->p++; /* one blank or none: breaks a literal word */
	} else if (c == '\\') {
		char e = ps->p[1];
		if (!e || isalnum((unsigned char)e)) {
			ps->err = "an escape other than a quoted punctuation character (\\. \\( ...)";
			return;
		}
		char one[2] = {(char)tolower((unsigned char)e), '\0'};
		out->exact = true;
		ls_add(out, one);
		ps->p += 2;
	} else if (c == '^' || c == '$') {
		ps->err = "an anchor (^ or $): the lines of a text are joined";
		return;
	} else if (c == '*' || c == '+' || c == '?' || c == '{') {
		ps->err = "a repetition of nothing";
		return;
	} else {
		char one[2] = {(char)tolower((unsigned char)c), '\0'};
		out->exact = true;
		ls_add(out, one);
		ps->p++;
	}
	for (;;) {
		c = *ps->p;
		size_t lo, hi;
		if (c == '*' || c == '+') {
			ps->err = "an unbounded repetition (* or +): bound it, as {1,64}";
			return;
		} else if (c == '?') {
			lo = 0, hi = 1;
			ps->p++;
		} else if (c == '{') {
			ps->p++;
			if (!parse_count(ps, &lo)) {
				ps->err = "a repetition {m,n} without its bounds";
				return;
			}
			hi = lo;
			if (*ps->p == ',') {
				ps->p++;
				if (!parse_count(ps, &hi)) {
					ps->err = "an unbounded repetition {m,}: give its upper bound";
					return;
				}
			}
			if (*ps->p != '}' || hi < lo) {
				ps->err = "a malformed repetition {m,n}";
				return;
			}
			ps->p++;
		} else {
			break;
		}
		out->maxlen = mul_len(out->maxlen, hi);
		if (lo == 0) {
			ls_clear(out);
			out->exact = false;
		} else if (!(lo == 1 && hi == 1)) {
			out->exact = false; /* repeated: what it matches is no longer one of the strings */
		}
	}
}

/* A concatenation: the exact runs are multiplied out while they stay few, and the best set of
 * the whole (the longest words) is what every match must contain. */
static void parse_concat(parser *ps, litset *out)
{
	litset best = {0}, cur = {.exact = true};
	ls_add(&cur, "");
	bool all_exact = true;
	size_t maxlen = 0;
	while (*ps->p && *ps->p != '|' && *ps->p != ')') {
		litset piece;
		parse_piece(ps, &piece);
		if (ps->err) {
			ls_clear(&piece);
			break;
		}
		maxlen = add_len(maxlen, piece.maxlen);
		if (piece.exact && cur.n * piece.n <= SET_MAX) {
			litset next = {.exact = true};
			bool ok = true;
			for (size_t i = 0; i < cur.n && ok; i++)
				for (size_t k = 0; k < piece.n && ok; k++) {
					char *cat = xasprintf("%s%s", cur.s[i], piece.s[k]);
					ok = ls_add(&next, cat);
					free(cat);
				}
			if (ok) {
				ls_clear(&cur);
				cur = next;
				ls_clear(&piece);
				continue;
			}
			ls_clear(&next);
		}
		/* the run of exact strings ends here */
		all_exact = false;
		ls_keep_better(&best, &cur);
		cur = (litset){.exact = true};
		if (piece.exact) {
			cur = piece; /* a new run starts with it */
			cur.exact = true;
		} else {
			ls_keep_better(&best, &piece);
			ls_add(&cur, "");
		}
	}
	if (ps->err) {
		ls_clear(&best);
		ls_clear(&cur);
		*out = (litset){0};
		return;
	}
	if (all_exact) {
		*out = cur;
	} else {
		ls_keep_better(&best, &cur);
		*out = best;
		out->exact = false;
	}
	out->maxlen = maxlen;
}

static void parse_alt(parser *ps, litset *out)
{
	parse_concat(ps, out);
	if (ps->err)
		return;
	bool known = out->n > 0;
	while (*ps->p == '|') {
		ps->p++;
		litset alt;
		parse_concat(ps, &alt);
		if (ps->err) {
			ls_clear(out);
			return;
		}
		if (alt.maxlen > out->maxlen)
			out->maxlen = alt.maxlen;
		out->exact = out->exact && alt.exact;
		known = known && alt.n > 0;
		for (size_t i = 0; i < alt.n && known; i++)
			known = ls_add(out, alt.s[i]);
		ls_clear(&alt);
		if (!known) {
			ls_clear(out);
			out->exact = false;
		}
	}
}

/* Analyses a pattern (as written in the catalogue): its literal words and its longest match.
 * NULL on success; otherwise what is wrong with it. */
static const char *analyse(const char *pattern, litset *out)
{
	parser ps = {pattern, NULL};
	parse_alt(&ps, out);
	if (!ps.err && *ps.p)
		ps.err = "an unmatched )";
	if (ps.err) {
		ls_clear(out);
		return ps.err;
	}
	if (out->maxlen == SIZE_MAX || out->maxlen > MATCH_MAX) {
		ls_clear(out);
		return "a match could be longer than 2048 bytes";
	}
	for (size_t i = 0; i < out->n; i++)
		if (strlen(out->s[i]) < WORD_MIN) {
			ls_clear(out);
			break;
		}
	if (!out->n)
		return "no literal word of 3 characters that every match contains";
	return NULL;
}

/* The pattern regcomp compiles: lower case (the window is folded beforehand, so no REG_ICASE, whose
 * translated copy of the string made glibc's search quadratic), and a blank outside a bracket
 * expression matches one blank or none. */
static char *expand_pattern(const char *p)
{
	strbuf b;
	sb_init(&b);
	bool in_bracket = false, first = false;
	for (const char *s = p; *s; s++) {
		char c = (char)tolower((unsigned char)*s);
		if (in_bracket) {
			sb_addc(&b, c);
			if (*s == '[' && (s[1] == ':' || s[1] == '.' || s[1] == '=')) {
				const char *e = strstr(s + 2, ":]");
				e = e ? e + 1 : s;
				for (s++; s <= e; s++)
					sb_addc(&b, *s);
				s--;
				first = false;
				continue;
			}
			if (*s == ']' && !first)
				in_bracket = false;
			if (!(first && *s == '^'))
				first = false;
			continue;
		}
		if (*s == '\\' && s[1]) {
			sb_addc(&b, *s++);
			sb_addc(&b, *s);
		} else if (*s == '[') {
			in_bracket = true;
			first = true;
			sb_addc(&b, c);
		} else if (*s == ' ') {
			while (s[1] == ' ')
				s++;
			sb_add(&b, " ?");
		} else {
			sb_addc(&b, c);
		}
	}
	return sb_steal(&b);
}

/* ---- the catalogue ---- */

/* How a pattern's match becomes a signature. */
enum resolve {
	R_SIG,         /* the pattern's own signature */
	R_CUDA_NAME,   /* cudaErrorX, CUDA_ERROR_X in the match */
	R_CUDA_NUMBER, /* the last number of the match is a CUDA code */
	R_NVML_NAME,   /* NVML_ERROR_X, NVMLError_X */
	R_NVML_NUMBER,
	R_XID_NUMBER, /* the last number is an Xid */
};

typedef struct pat {
	regex_t re;
	size_t maxlen;
	int resolve;
	size_t sig;   /* R_SIG */
	size_t group; /* > 0: the match is this subexpression (a message after its API's name) */
} pat;

/* A code of error_codes.csv or xid.csv, and the signature that explains it. */
typedef struct code_ref {
	int api; /* 'c' cuda, 'n' nvml, 'x' xid */
	long code;
	const char *name, *alias; /* lower case copies */
	size_t sig;
} code_ref;

/* The generic forms in which programs print a code: each is declared once here; the codes are the
 * tables'. */
static const struct form {
	const char *pattern;
	int resolve;
} forms[] = {
	/* cudaErrorIllegalAddress (the runtime's enum), CUDA_ERROR_ILLEGAL_ADDRESS (the driver's) */
	{"cudaError[a-z]{2,48}", R_CUDA_NAME},
	{"CUDA_ERROR_[a-z_]{2,48}", R_CUDA_NAME},
	/* "CUDA error 700", "CUDA Error: 2", "cuda runtime error (2)", "CUDA driver error 999" */
	{"cuda (runtime |driver )?(api )?(error|failure)( code)?[ :=#]{0,3}\\(?[0-9]{1,4}", R_CUDA_NUMBER},
	/* "cuInit returned 100", "cudaGetDeviceCount returned 100", "cuInit failed with error code 999",
	 * numba's "CudaAPIError: [34]" */
	{"cu[a-z_]{2,40}(\\(\\))? ?(returned|failed with error code|failed with error|failed with code|failed with|"
	 "failed: error|error code|error|result|status)[ :=#]{0,3}[([]?[0-9]{1,4}",
	 R_CUDA_NUMBER},
	/* NVML_ERROR_GPU_IS_LOST, pynvml's NVMLError_GpuIsLost */
	{"NVML_ERROR_[a-z_]{2,40}", R_NVML_NAME},
	{"NVMLError_[a-z]{2,40}", R_NVML_NAME},
	{"nvml[a-z_]{2,40}(\\(\\))? ?(returned|failed with error code|failed with error|failed with|error code|"
	 "error|result|status)[ :=#]{0,3}\\(?[0-9]{1,3}",
	 R_NVML_NUMBER},
	/* the kernel log's Xid line, and an Xid named in prose or by a tool */
	{"NVRM: Xid \\((PCI:)?[0-9a-f:.]{3,20}\\): ?[0-9]{1,3}", R_XID_NUMBER}, /* "PCI:..." as redacted */
	{"Xid (error|errors|event|events|code)? ?[:=#]? ?[0-9]{1,3}", R_XID_NUMBER},
};

/* Where the message of a code is printed with the API's name before it (the messages that are
 * not distinctive on their own: "invalid argument", "Unknown Error"). "CUDA initialization error on
 * host" is prose, not the message of code 3: after "cuda" comes "error", "failure" or punctuation.
 * "Runtime API error : " is how the CUDA samples' cudaSafeCall() prints it; nvidia-smi prints NVML's
 * message after "Unable to determine the device handle for GPU 0000:0B:00.0: ". */
static const char *const cuda_context =
	"(cuda( runtime| driver)?( api)?|runtime api)(( error| failure)[:'\"(0-9) ]{1,8}|[:'\"(][:'\"(0-9) ]{0,7})";
static const char *const nvml_context =
	"(nvml( error| error code| return code)?[: ]{1,3}|unable to determine the device handle for gpu ?[0-9a-f:.]{6,20}: )";

struct sig_catalogue {
	signature *v;
	char **anchor;
	size_t n, cap;
	pat *p;
	size_t np, pcap;
	code_ref *codes;
	size_t ncodes, ccap;
	strlist owned; /* strings of generated signatures */
	/* the Aho-Corasick automaton of every pattern's literal words */
	uint8_t amap[256];
	size_t ncls, nstates;
	uint32_t *delta;   /* nstates * ncls */
	uint32_t *out_at;  /* nstates + 1: outputs of state s are out[out_at[s] .. out_at[s+1]) */
	uint32_t *out_pat; /* pattern index */
	uint16_t *out_len; /* word length */
	size_t nwords;
};

static const char *own(sig_catalogue *c, char *s)
{
	sl_push_owned(&c->owned, s);
	return s;
}

static signature *new_sig(sig_catalogue *c)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->v = xrealloc(c->v, c->cap * sizeof(*c->v));
		c->anchor = xrealloc(c->anchor, c->cap * sizeof(*c->anchor));
	}
	c->anchor[c->n] = NULL;
	signature *s = &c->v[c->n++];
	memset(s, 0, sizeof(*s));
	s->code = -1;
	s->api = s->codes = s->pattern = s->example = "";
	return s;
}

static void set_causes(signature *s, const char *list)
{
	strlist ids = {0};
	sl_split(&ids, list ? list : "", " ", false);
	s->causes = xcalloc(ids.n + 1, sizeof(char *));
	for (size_t k = 0; k < ids.n; k++)
		s->causes[k] = xstrdup(ids.v[k]);
	s->ncauses = ids.n;
	sl_free(&ids);
}

/* Compiles a pattern; its words join the automaton later. NULL or what is wrong. */
static char *add_pattern(sig_catalogue *c, const char *pattern, int resolve, size_t sig, litset *words)
{
	const char *why = analyse(pattern, words);
	if (why)
		return xasprintf("pattern '%.60s': %s", pattern, why);
	if (c->np == c->pcap) {
		c->pcap = c->pcap ? 2 * c->pcap : 128;
		c->p = xrealloc(c->p, c->pcap * sizeof(*c->p));
	}
	pat *p = &c->p[c->np];
	char *ex = expand_pattern(pattern);
	int rc = regcomp(&p->re, ex, REG_EXTENDED);
	free(ex);
	if (rc != 0) {
		char msg[128];
		regerror(rc, &p->re, msg, sizeof(msg));
		ls_clear(words);
		return xasprintf("pattern '%.60s' does not compile: %s", pattern, msg);
	}
	p->maxlen = words->maxlen;
	p->resolve = resolve;
	p->sig = sig;
	p->group = 0;
	c->np++;
	return NULL;
}

/* "cudaErrorLaunchOutOfResources" -> "launch-out-of-resources"; "CUDA_ERROR_NOT_PERMITTED" ->
 * "not-permitted" */
static char *kebab(const char *name, const char *prefix)
{
	size_t pl = strlen(prefix);
	const char *s = strncasecmp(name, prefix, pl) == 0 ? name + pl : name;
	strbuf b;
	sb_init(&b);
	for (const char *q = s; *q; q++) {
		if (*q == '_') {
			sb_addc(&b, '-');
		} else if (isupper((unsigned char)*q) && q > s && islower((unsigned char)q[-1])) {
			sb_addc(&b, '-');
			sb_addc(&b, (char)tolower((unsigned char)*q));
		} else if (isupper((unsigned char)*q) && q > s && q[1] && islower((unsigned char)q[1]) &&
			   isupper((unsigned char)q[-1])) {
			sb_addc(&b, '-'); /* "ECCUncorrectable" -> "ecc-uncorrectable" */
			sb_addc(&b, (char)tolower((unsigned char)*q));
		} else {
			sb_addc(&b, (char)tolower((unsigned char)*q));
		}
	}
	return sb_steal(&b);
}

static char *lower_dup(const char *s)
{
	char *d = xstrdup(s ? s : "");
	for (char *p = d; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return d;
}

/* A message as a pattern: its regular-expression characters quoted. */
static char *quote_message(const char *m)
{
	strbuf b;
	sb_init(&b);
	for (const char *q = m; *q; q++) {
		if (strchr(".[]()*+?{}|^$\\", *q))
			sb_addc(&b, '\\');
		sb_addc(&b, *q);
	}
	return sb_steal(&b);
}

static void add_code(sig_catalogue *c, int api, long code, const char *name, const char *alias, size_t sig)
{
	if (c->ncodes == c->ccap) {
		c->ccap = c->ccap ? 2 * c->ccap : 128;
		c->codes = xrealloc(c->codes, c->ccap * sizeof(*c->codes));
	}
	c->codes[c->ncodes++] = (code_ref){api, code, own(c, lower_dup(name)), own(c, lower_dup(alias)), sig};
}

static char *load_errors(sig_catalogue *c, const csv_table *t)
{
	for (size_t r = 0; r < t->nrows; r++) {
		const char *id = csv_cell(t, r, "id");
		const char *pattern = csv_cell(t, r, "pattern");
		const char *source = csv_cell(t, r, "source");
		const char *what = !*id ? "id" : !*pattern ? "pattern" : !*source ? "source" : NULL;
		if (what)
			return xasprintf("errors.csv row %zu: empty %s", r + 2, what);
		if (sig_find(c, id))
			return xasprintf("errors.csv row %zu: duplicate id %s", r + 2, id);
		signature *s = new_sig(c);
		s->id = id;
		s->library = csv_cell(t, r, "library");
		s->versions = csv_cell(t, r, "versions");
		s->pattern = pattern;
		s->title = csv_cell(t, r, "title");
		s->advice = csv_cell(t, r, "advice");
		s->example = csv_cell(t, r, "example");
		s->source = source;
		s->table = "errors";
		set_causes(s, csv_cell(t, r, "causes"));
	}
	return NULL;
}

/* The signatures of error_codes.csv: a code either names the row of errors.csv that explains it or
 * becomes its own. */
static char *load_codes(sig_catalogue *c, const csv_table *t)
{
	for (size_t r = 0; r < t->nrows; r++) {
		const char *api = csv_cell(t, r, "api");
		const char *name = csv_cell(t, r, "name"), *alias = csv_cell(t, r, "alias");
		const char *cs = csv_cell(t, r, "code"), *msg = csv_cell(t, r, "message");
		char *end;
		long code = strtol(cs, &end, 10);
		int a = strcmp(api, "cuda") == 0 ? 'c' : strcmp(api, "nvml") == 0 ? 'n' : 0;
		if (!a || end == cs || *end || !*name || !*msg || !*csv_cell(t, r, "source"))
			return xasprintf("error_codes.csv row %zu: api (cuda or nvml), code, name, message and source are "
					 "required", r + 2);
		const char *target = csv_cell(t, r, "signature");
		size_t si;
		if (*target) {
			const signature *s = sig_find(c, target);
			if (!s || strcmp(s->table, "errors") != 0)
				return xasprintf("error_codes.csv row %zu: signature %s is not a row of errors.csv", r + 2, target);
			si = (size_t)(s - c->v);
			signature *w = &c->v[si];
			w->code = w->code < 0 ? code : w->code;
			w->api = a == 'c' ? "cuda" : "nvml";
			w->codes = *w->codes ? own(c, xasprintf("%s, %s %ld", w->codes, api, code))
					     : own(c, xasprintf("%s %ld", api, code));
		} else {
			char *k = kebab(*name ? name : alias, !*name ? "CUDA_ERROR_" : a == 'c' ? "cudaError" : "NVML_ERROR_");
			char *id = xasprintf("%s.%s", a == 'c' ? "cuda" : "nvml", k);
			free(k);
			if (sig_find(c, id)) {
				char *e = xasprintf("error_codes.csv row %zu: the signature %s exists: name it in the signature "
						    "column", r + 2, id);
				free(id);
				return e;
			}
			signature *s = new_sig(c);
			si = c->n - 1;
			s->id = own(c, id);
			s->library = a == 'c' ? "CUDA runtime / driver API" : "NVML";
			s->versions = own(c, *alias ? xasprintf("%s / %s (%ld)", name, alias, code)
						    : xasprintf("%s (%ld)", name, code));
			s->title = msg;
			s->advice = csv_cell(t, r, "advice");
			s->source = csv_cell(t, r, "source");
			s->pattern = s->versions;
			s->example = own(c, a == 'c' ? xasprintf("code=%ld(%s)", code, name) : xasprintf("%s", alias[0] ? alias : name));
			s->table = "error_codes";
			s->code = code;
			s->api = a == 'c' ? "cuda" : "nvml";
			set_causes(s, csv_cell(t, r, "causes"));
		}
		add_code(c, a, code, name, alias, si);
	}
	return NULL;
}

static char *load_xids(sig_catalogue *c, const csv_table *t)
{
	for (size_t r = 0; r < t->nrows; r++) {
		const char *cs = csv_cell(t, r, "code");
		char *end;
		long code = strtol(cs, &end, 10);
		if (end == cs || *end || code < 0 || code > 999)
			return xasprintf("xid.csv row %zu: code '%s' is not a number", r + 2, cs);
		const char *meaning = csv_cell(t, r, "meaning");
		signature *s = new_sig(c);
		s->id = own(c, xasprintf("xid.%ld", code));
		s->library = "kernel (NVRM)";
		const char *name = csv_cell(t, r, "name");
		s->versions = own(c, xasprintf("Xid %ld (%s)", code, *name ? name : "no name"));
		s->title = own(c, xasprintf("Xid %ld: %s", code, *meaning ? meaning : "not described"));
		const char *bucket = csv_cell(t, r, "nvidia_immediate_action");
		const char *words = kb_xid_resolution(bucket);
		s->advice = own(c, words ? xasprintf("%s (NVIDIA's resolution: %s)", csv_cell(t, r, "action"), words)
					 : xasprintf("%s", csv_cell(t, r, "action")));
		s->source = csv_cell(t, r, "source_url");
		s->pattern = own(c, xasprintf("NVRM: Xid (PCI:...): %ld", code));
		s->example = own(c, xasprintf("NVRM: Xid (PCI:0000:18:00): %ld, pid=1234, name=python3", code));
		s->table = "xid";
		s->code = code;
		s->api = "xid";
		const char *causes = csv_cell(t, r, "causes");
		set_causes(s, *causes ? causes : "gpu.xid");
		add_code(c, 'x', code, "", "", c->n - 1);
	}
	return NULL;
}

/* ---- the automaton ---- */

typedef struct word {
	char *s;
	uint32_t pat;
} word;

static char *build_automaton(sig_catalogue *c, word *w, size_t nw)
{
	/* byte classes: each byte of a word its own class, the rest class 0 */
	memset(c->amap, 0, sizeof(c->amap));
	c->ncls = 1;
	size_t total = 1;
	for (size_t i = 0; i < nw; i++) {
		for (const char *q = w[i].s; *q; q++)
			if (!c->amap[(unsigned char)*q])
				c->amap[(unsigned char)*q] = (uint8_t)c->ncls++;
		total += strlen(w[i].s);
	}
	if (c->ncls > 255 || total > UINT32_MAX / 2)
		return xstrdup("too many literal words");
	/* the trie */
	size_t ns = 1, cls = c->ncls;
	uint32_t *go = xcalloc(total * cls, sizeof(uint32_t)); /* 0: none (the root has no parent) */
	uint32_t *fail = xcalloc(total, sizeof(uint32_t));
	uint32_t *nout = xcalloc(total, sizeof(uint32_t));
	uint32_t *term_first = xcalloc(total, sizeof(uint32_t)); /* 1 + index of a word ending here, chained */
	uint32_t *word_next = xcalloc(nw ? nw : 1, sizeof(uint32_t));
	for (size_t i = 0; i < nw; i++) {
		uint32_t s = 0;
		for (const char *q = w[i].s; *q; q++) {
			uint32_t *g = &go[s * cls + c->amap[(unsigned char)*q]];
			if (!*g)
				*g = (uint32_t)ns++;
			s = *g;
		}
		word_next[i] = term_first[s];
		term_first[s] = (uint32_t)i + 1;
	}
	/* breadth first: failure links and the full transition table */
	uint32_t *queue = xcalloc(ns, sizeof(uint32_t));
	size_t qh = 0, qt = 0;
	for (size_t k = 0; k < cls; k++) {
		uint32_t t = go[k];
		if (t) {
			fail[t] = 0;
			queue[qt++] = t;
		}
	}
	while (qh < qt) {
		uint32_t s = queue[qh++];
		for (size_t k = 0; k < cls; k++) {
			uint32_t t = go[s * cls + k];
			if (t) {
				fail[t] = go[fail[s] * cls + k];
				queue[qt++] = t;
			} else {
				go[s * cls + k] = go[fail[s] * cls + k];
			}
		}
	}
	/* outputs: a state's own words, then its failure chain's */
	c->out_at = xcalloc(ns + 1, sizeof(uint32_t));
	size_t nout_total = 0;
	for (size_t s = 0; s < ns; s++) {
		for (uint32_t f = (uint32_t)s;; f = fail[f]) {
			for (uint32_t x = term_first[f]; x; x = word_next[x - 1])
				nout[s]++;
			if (!f)
				break;
		}
		nout_total += nout[s];
	}
	c->out_pat = xcalloc(nout_total ? nout_total : 1, sizeof(uint32_t));
	c->out_len = xcalloc(nout_total ? nout_total : 1, sizeof(uint16_t));
	size_t o = 0;
	for (size_t s = 0; s < ns; s++) {
		c->out_at[s] = (uint32_t)o;
		for (uint32_t f = (uint32_t)s;; f = fail[f]) {
			for (uint32_t x = term_first[f]; x; x = word_next[x - 1]) {
				c->out_pat[o] = w[x - 1].pat;
				c->out_len[o] = (uint16_t)strlen(w[x - 1].s);
				o++;
			}
			if (!f)
				break;
		}
	}
	c->out_at[ns] = (uint32_t)o;
	c->delta = xrealloc(go, ns * cls * sizeof(uint32_t));
	c->nstates = ns;
	c->nwords = nw;
	free(fail);
	free(nout);
	free(term_first);
	free(word_next);
	free(queue);
	return NULL;
}

sig_catalogue *sig_catalogue_from(const csv_table *errors, const csv_table *codes, const csv_table *xid, char **err)
{
	*err = NULL;
	if (!errors) {
		*err = xstrdup("no errors table");
		return NULL;
	}
	sig_catalogue *c = xcalloc(1, sizeof(*c));
	word *w = NULL;
	size_t nw = 0, wcap = 0;
	char *e = load_errors(c, errors);
	if (!e && codes)
		e = load_codes(c, codes);
	if (!e && xid)
		e = load_xids(c, xid);
	/* the patterns: each row's own, each code's message, the generic forms */
#define ADD_WORDS(L, P)                                                                             \
	do {                                                                                        \
		for (size_t k_ = 0; k_ < (L).n; k_++) {                                             \
			if (nw == wcap) {                                                           \
				wcap = wcap ? 2 * wcap : 256;                                       \
				w = xrealloc(w, wcap * sizeof(*w));                                 \
			}                                                                           \
			w[nw++] = (word){(L).s[k_], (uint32_t)(P)};                                 \
		}                                                                                   \
		(L).n = 0;                                                                          \
	} while (0)
	for (size_t i = 0; !e && i < c->n; i++) {
		signature *s = &c->v[i];
		if (strcmp(s->table, "errors") != 0)
			continue;
		litset words;
		char *why = add_pattern(c, s->pattern, R_SIG, i, &words);
		if (why) {
			e = xasprintf("errors.csv row %zu (%s): %s", i + 2, s->id, why);
			free(why);
			break;
		}
		strbuf a;
		sb_init(&a);
		for (size_t k = 0; k < words.n; k++)
			sb_addf(&a, "%s%s", k ? "|" : "", words.s[k]);
		c->anchor[i] = sb_steal(&a);
		ADD_WORDS(words, c->np - 1);
	}
	for (size_t r = 0; !e && codes && r < codes->nrows; r++) {
		const code_ref *cr = &c->codes[r];
		const char *msg = csv_cell(codes, r, "message");
		bool distinct = strcmp(csv_cell(codes, r, "distinct"), "yes") == 0;
		char *q = quote_message(msg);
		/* after the API's name the message is the match: "CUDA error: operation not permitted" is inside
		 * "operation not permitted when stream is capturing" */
		char *pattern = distinct ? xstrdup(q) : xasprintf("%s(%s)", cr->api == 'c' ? cuda_context : nvml_context, q);
		free(q);
		litset words;
		char *why = add_pattern(c, pattern, R_SIG, cr->sig, &words);
		free(pattern);
		if (!why && !distinct)
			c->p[c->np - 1].group = c->p[c->np - 1].re.re_nsub;
		if (why) {
			e = xasprintf("error_codes.csv row %zu: %s", r + 2, why);
			free(why);
			break;
		}
		ADD_WORDS(words, c->np - 1);
	}
	for (size_t i = 0; !e && i < GV_ARRAY_LEN(forms); i++) {
		litset words;
		char *why = add_pattern(c, forms[i].pattern, forms[i].resolve, 0, &words);
		if (why) {
			e = xasprintf("internal: form %zu: %s", i, why);
			free(why);
			break;
		}
		ADD_WORDS(words, c->np - 1);
	}
	/* "GPU has fallen off the bus" is Xid 79's, with the Xid line or without */
	for (size_t i = 0; !e && i < c->ncodes; i++)
		if (c->codes[i].api == 'x' && c->codes[i].code == 79) {
			litset words;
			char *why = add_pattern(c, "fallen off the bus", R_SIG, c->codes[i].sig, &words);
			if (why) {
				e = why;
				break;
			}
			ADD_WORDS(words, c->np - 1);
		}
#undef ADD_WORDS
	for (size_t i = 0; i < c->n; i++)
		if (!c->anchor[i])
			c->anchor[i] = xstrdup("");
	if (!e)
		e = build_automaton(c, w, nw);
	for (size_t i = 0; i < nw; i++)
		free(w[i].s);
	free(w);
	if (e) {
		*err = e;
		sig_catalogue_free(c);
		return NULL;
	}
	return c;
}

sig_catalogue *sig_catalogue_new(const kb *k, char **err)
{
	return sig_catalogue_from(kb_table(k, "errors"), kb_table(k, "error_codes"), kb_table(k, "xid"), err);
}

void sig_catalogue_free(sig_catalogue *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->np; i++)
		regfree(&c->p[i].re);
	for (size_t i = 0; i < c->n; i++) {
		for (size_t k = 0; k < c->v[i].ncauses; k++)
			free(c->v[i].causes[k]);
		free(c->v[i].causes);
		free(c->anchor[i]);
	}
	sl_free(&c->owned);
	free(c->v);
	free(c->anchor);
	free(c->p);
	free(c->codes);
	free(c->delta);
	free(c->out_at);
	free(c->out_pat);
	free(c->out_len);
	free(c);
}

size_t sig_count(const sig_catalogue *c) { return c->n; }
const signature *sig_at(const sig_catalogue *c, size_t i) { return i < c->n ? &c->v[i] : NULL; }
const char *sig_anchor(const sig_catalogue *c, size_t i) { return c->anchor[i]; }
size_t sig_pattern_count(const sig_catalogue *c) { return c->np; }
size_t sig_anchor_count(const sig_catalogue *c) { return c->nwords; }

const signature *sig_find(const sig_catalogue *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].id, id) == 0)
			return &c->v[i];
	return NULL;
}

/* The signature a match of a generic form stands for; (size_t)-1 when it names no known code. */
static size_t resolve(const sig_catalogue *c, int how, const char *m, size_t len, char after)
{
	if (how == R_CUDA_NAME || how == R_NVML_NAME) {
		/* the longest name of the table that the match starts with (a joined line may follow it) */
		int api = how == R_CUDA_NAME ? 'c' : 'n';
		size_t best = (size_t)-1, bl = 0;
		for (size_t i = 0; i < c->ncodes; i++) {
			const code_ref *r = &c->codes[i];
			if (r->api != api)
				continue;
			const char *names[2] = {r->name, r->alias};
			for (int k = 0; k < 2; k++) {
				size_t nl = strlen(names[k]);
				if (nl && nl <= len && nl > bl && memcmp(m, names[k], nl) == 0) {
					best = r->sig;
					bl = nl;
				}
			}
		}
		return best;
	}
	/* the last number of the match, whole (a digit right after it: not this number) */
	if (isdigit((unsigned char)after))
		return (size_t)-1;
	size_t e = len;
	while (e && !isdigit((unsigned char)m[e - 1]))
		e--;
	size_t b = e;
	while (b && isdigit((unsigned char)m[b - 1]))
		b--;
	if (b == e)
		return (size_t)-1;
	long code = 0;
	for (size_t i = b; i < e && code < 100000; i++) /* not strtol: the text goes on after len */
		code = code * 10 + (m[i] - '0');
	if (how == R_CUDA_NUMBER) {
		/* cuDNN, cuBLAS and the other libraries number their own statuses */
		static const char *const libs[] = {"cudnn", "cublas", "cufft", "curand", "cusparse", "cusolver", "cutlass"};
		for (size_t i = 0; i < GV_ARRAY_LEN(libs); i++)
			if (strncmp(m, libs[i], strlen(libs[i])) == 0)
				return (size_t)-1;
		if (code == 0)
			return (size_t)-1;
	}
	int api = how == R_CUDA_NUMBER ? 'c' : how == R_NVML_NUMBER ? 'n' : 'x';
	for (size_t i = 0; i < c->ncodes; i++)
		if (c->codes[i].api == api && c->codes[i].code == code)
			return c->codes[i].sig;
	return (size_t)-1;
}

/* ---- the scan ---- */

typedef struct raw_match {
	uint32_t sig, st, en;
	uint32_t weak; /* a bare number ("cuda runtime error (4)"): the numbering changed in CUDA 10.1, so a
			* message or name on the same line is the better witness */
} raw_match;

struct sig_scan {
	const sig_catalogue *c;
	/* escape-sequence state: 0 text, 1 after ESC, 2 in CSI, 3 in OSC/DCS string, 4 ESC inside it */
	int esc;
	char *line;
	size_t nline;
	unsigned long line_no;     /* input lines started */
	unsigned long line_start;  /* input line of the line being built */
	char *prev;
	size_t nprev;
	int prev_rank;
	bool have_prev;
	char *win, *low;       /* window text and its lower-case copy */
	size_t nwin;
	unsigned long long base; /* offset of win[0] in the normalised text */
	unsigned long long done; /* matches starting before this offset were counted already */
	/* input line and rank of each normalised line in the window */
	size_t *ls_off;
	unsigned long *ls_line;
	int *ls_rank;
	size_t nls, cls;
	unsigned long long bytes, work, skipped;
	bool last_nl; /* the last byte fed ended a line */
	bool at_end;  /* the last window is scanned: the text ends after it */
	/* per pattern: the pending region around its words, where its last match ended */
	size_t *pend_s, *pend_e;
	unsigned long long *pnext;
	raw_match *raw;
	size_t nraw;
	sig_hit *hits; /* one slot per signature; count 0 when not seen */
	sig_hit *out;
	size_t nout;
};

sig_scan *sig_scan_new(const sig_catalogue *c)
{
	sig_scan *s = xcalloc(1, sizeof(*s));
	s->c = c;
	s->line = xmalloc(LINE_MAX_BYTES + 1);
	s->prev = xmalloc(LINE_MAX_BYTES + 1);
	s->win = xmalloc(WINDOW + LINE_MAX_BYTES + 2);
	s->low = xmalloc(WINDOW + LINE_MAX_BYTES + 2); /* the last window's end-of-text newline */
	s->hits = xcalloc(c->n ? c->n : 1, sizeof(*s->hits));
	s->pend_s = xcalloc(c->np ? c->np : 1, sizeof(size_t));
	s->pend_e = xcalloc(c->np ? c->np : 1, sizeof(size_t));
	s->pnext = xcalloc(c->np ? c->np : 1, sizeof(unsigned long long));
	s->raw = xmalloc(RAW_MAX * sizeof(raw_match));
	s->line_no = 1;
	s->line_start = 1;
	return s;
}

void sig_scan_free(sig_scan *s)
{
	if (!s)
		return;
	free(s->line);
	free(s->prev);
	free(s->win);
	free(s->low);
	free(s->ls_off);
	free(s->ls_line);
	free(s->ls_rank);
	free(s->pend_s);
	free(s->pend_e);
	free(s->pnext);
	free(s->raw);
	free(s->hits);
	free(s->out);
	free(s);
}


static size_t ls_index(const sig_scan *s, size_t off)
{
	size_t lo = 0, hi = s->nls;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (s->ls_off[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Runs pattern p over [rs, re) of the window; matches that start at or after limit belong to
 * the next window. */
static void run_region(sig_scan *s, size_t p, size_t rs, size_t re, size_t limit)
{
	const pat *pt = &s->c->p[p];
	unsigned long long nx = s->pnext[p];
	if (nx > s->base && nx - s->base > rs)
		rs = (size_t)(nx - s->base);
	if (rs >= re)
		return;
	if (s->at_end && re == s->nwin)
		re++; /* the end-of-text newline */
	s->work += re - rs;
	size_t counted = 0;
	while (rs < re && rs < limit && counted < MAX_COUNT_PER_WINDOW) {
		regmatch_t m[8];
		m[0].rm_so = (regoff_t)rs;
		m[0].rm_eo = (regoff_t)re;
		size_t g = pt->group < GV_ARRAY_LEN(m) ? pt->group : 0;
		if (regexec(&pt->re, s->low, g + 1, m, REG_STARTEND) != 0)
			break;
		if ((size_t)m[0].rm_so >= limit)
			break;
		size_t st = (size_t)m[g].rm_so, en = (size_t)m[g].rm_eo;
		if (en > s->nwin)
			en = s->nwin;
		if (st > en)
			st = en;
		size_t sig = pt->sig;
		if (pt->resolve != R_SIG) {
			/* a generic form starts a word: "cuInit returned 100", not "executed error 2" (lines are
			 * joined without a separator, so a line's start is a word's start too) */
			size_t li = s->nls ? ls_index(s, st) : 0;
			bool word_start = st == 0 || !(isalnum((unsigned char)s->low[st - 1]) || s->low[st - 1] == '_') ||
					  (s->nls && s->ls_off[li] == st);
			/* and ends with its line, where it can ("NVMLError_Timeout" and a line after it that
			 * starts with a letter, "CUDA error 2" and one that starts with a digit); the whole
			 * match is tried when the line cut it ("cuInit returned" wrapped before "100") */
			size_t le = s->nls && li + 1 < s->nls ? s->ls_off[li + 1] : en;
			sig = (size_t)-1;
			if (word_start && le > st && le < en) {
				sig = resolve(s->c, pt->resolve, s->low + st, le - st, '\0');
				if (sig != (size_t)-1)
					en = le;
			}
			if (word_start && sig == (size_t)-1)
				sig = resolve(s->c, pt->resolve, s->low + st, en - st, en < s->nwin ? s->low[en] : '\0');
		}
		bool weak = pt->resolve == R_CUDA_NUMBER || pt->resolve == R_NVML_NUMBER;
		if (sig != (size_t)-1 && s->nraw < RAW_MAX)
			s->raw[s->nraw++] = (raw_match){(uint32_t)sig, (uint32_t)st, (uint32_t)en, weak};
		counted++;
		rs = en > st ? en : st + 1;
		s->pnext[p] = s->base + rs;
	}
}

static int raw_cmp(const void *a, const void *b)
{
	const raw_match *x = a, *y = b;
	if (x->st != y->st)
		return x->st < y->st ? -1 : 1;
	if (x->en != y->en)
		return x->en > y->en ? -1 : 1; /* the longer first */
	return x->sig < y->sig ? -1 : x->sig > y->sig;
}

static void count_matches(sig_scan *s)
{
	qsort(s->raw, s->nraw, sizeof(*s->raw), raw_cmp);
	/* a bare number yields to any other match on its line */
	for (size_t i = 0; i < s->nraw;) {
		size_t li = ls_index(s, s->raw[i].st), j = i;
		bool strong = false;
		while (j < s->nraw && ls_index(s, s->raw[j].st) == li)
			strong |= !s->raw[j++].weak;
		for (size_t k = i; strong && k < j; k++)
			if (s->raw[k].weak)
				s->raw[k].sig = UINT32_MAX;
		i = j;
	}
	/* a match inside another signature's longer match is that one's detail: dropped */
	uint32_t maxend = 0, maxend_st = 0, maxend_sig = UINT32_MAX;
	for (size_t i = 0; i < s->nraw; i++) {
		raw_match *r = &s->raw[i];
		if (r->sig == UINT32_MAX)
			continue;
		bool inside = maxend_sig != UINT32_MAX && maxend_sig != r->sig &&
			      (maxend > r->en || (maxend == r->en && maxend_st < r->st));
		if (r->en > maxend || maxend_sig == UINT32_MAX) {
			maxend = r->en;
			maxend_st = r->st;
			maxend_sig = r->sig;
		}
		if (inside)
			continue;
		size_t li = ls_index(s, r->st);
		unsigned long line = s->nls ? s->ls_line[li] : s->line_start;
		int rank = s->nls ? s->ls_rank[li] : -1;
		sig_hit *h = &s->hits[r->sig];
		if (h->count == 0) {
			h->sig = r->sig;
			h->at = s->base + r->st;
			h->line = line;
			size_t n = r->en - r->st < sizeof(h->excerpt) - 1 ? r->en - r->st : sizeof(h->excerpt) - 1;
			memcpy(h->excerpt, s->win + r->st, n);
			h->excerpt[n] = '\0';
			str_sanitize(h->excerpt); /* printed to terminals and JSON: ASCII only */
		}
		if (rank >= 0 && rank < SIG_RANKS && !(h->ranks[rank / 8] & (1u << (rank % 8)))) {
			h->ranks[rank / 8] |= (unsigned char)(1u << (rank % 8));
			h->nranks++;
		}
		if (h->count == 0 || h->last_line != line)
			h->count++;
		h->last_line = line;
	}
	s->nraw = 0;
}

/* Searches the window: one pass of the automaton, then each pattern around its words. */
static void scan_window(sig_scan *s, bool final)
{
	if (!s->nwin)
		return;
	const sig_catalogue *c = s->c;
	s->win[s->nwin] = '\0';
	{
		const unsigned char *w = (const unsigned char *)s->win;
		char *lo = s->low;
		for (size_t i = 0, n = s->nwin; i < n; i++)
			lo[i] = (char)(w[i] >= 'A' && w[i] <= 'Z' ? w[i] + 32 : w[i]); /* ASCII: the patterns' case */
		lo[s->nwin] = '\0';
		/* the text's end is a boundary, as a line's end would be: a newline after the last window
		 * ("cannot find -lcuda" and nothing after it), which no match keeps */
		s->at_end = final;
		if (final) {
			lo[s->nwin] = '\n';
			lo[s->nwin + 1] = '\0';
		}
	}
	size_t limit = final || s->nwin <= OVERLAP ? s->nwin : s->nwin - OVERLAP;
	size_t from = s->done > s->base ? (size_t)(s->done - s->base) : 0;
	for (size_t p = 0; p < c->np; p++)
		s->pend_e[p] = 0;
	uint32_t st = 0;
	const size_t cls = c->ncls, nwin = s->nwin;
	const uint32_t *delta = c->delta, *out_at = c->out_at;
	const uint8_t *amap = c->amap;
	const unsigned char *low = (const unsigned char *)s->low;
	for (size_t i = from; i < nwin; i++) {
		if (!st) /* at the root, the bytes that begin no word are skipped at once */
			while (i < nwin && !amap[low[i]])
				i++;
		if (i == nwin)
			break;
		st = delta[st * cls + amap[low[i]]];
		uint32_t o = out_at[st], oe = out_at[st + 1];
		for (; o < oe; o++) {
			size_t p = c->out_pat[o], len = c->out_len[o], maxlen = c->p[p].maxlen;
			size_t a = i + 1 - len; /* where the word starts */
			size_t rs = a + len >= maxlen ? a + len - maxlen : 0;
			size_t re = a + maxlen < s->nwin ? a + maxlen : s->nwin;
			if (rs < from)
				rs = from;
			if (rs >= limit)
				continue; /* only matches that start in the next window contain it */
			if (s->pend_e[p] && rs <= s->pend_e[p]) {
				if (re > s->pend_e[p])
					s->pend_e[p] = re;
			} else {
				if (s->pend_e[p])
					run_region(s, p, s->pend_s[p], s->pend_e[p], limit);
				s->pend_s[p] = rs;
				s->pend_e[p] = re;
			}
		}
	}
	for (size_t p = 0; p < c->np; p++)
		if (s->pend_e[p])
			run_region(s, p, s->pend_s[p], s->pend_e[p], limit);
	count_matches(s);
	if (final)
		return;
	/* keep the overlap */
	size_t keep = s->nwin - limit;
	s->done = s->base + limit;
	memmove(s->win, s->win + limit, keep);
	s->base += limit;
	s->nwin = keep;
	size_t k = 0;
	for (size_t i = 0; i < s->nls; i++)
		if (s->ls_off[i] >= limit || (i + 1 < s->nls ? s->ls_off[i + 1] > limit : true)) {
			s->ls_off[k] = s->ls_off[i] >= limit ? s->ls_off[i] - limit : 0;
			s->ls_line[k] = s->ls_line[i];
			s->ls_rank[k] = s->ls_rank[i];
			k++;
		}
	s->nls = k;
}

/* "rank3", "rank 3", "default3" (torchrun's log prefixes) inside a bracket: the rank, or -1. */
static int bracket_rank(const char *p, size_t n)
{
	static const char *const words[] = {"rank", "default"};
	for (size_t w = 0; w < GV_ARRAY_LEN(words); w++) {
		size_t wl = strlen(words[w]);
		if (n > wl && strncasecmp(p, words[w], wl) == 0) {
			size_t i = wl;
			if (i < n && p[i] == ' ')
				i++;
			if (i < n && isdigit((unsigned char)p[i])) {
				long r = 0;
				while (i < n && isdigit((unsigned char)p[i]) && r < 100000)
					r = r * 10 + (p[i++] - '0');
				if (i == n)
					return r < SIG_RANKS ? (int)r : -1;
			}
		}
	}
	/* mpirun --tag-output: [JOB,RANK] */
	const char *comma = memchr(p, ',', n);
	if (comma && comma > p) {
		bool digits = true;
		for (const char *q = p; q < p + n; q++)
			digits &= isdigit((unsigned char)*q) || q == comma;
		if (digits && comma + 1 < p + n) {
			long r = strtol(comma + 1, NULL, 10);
			return r < SIG_RANKS ? (int)r : -1;
		}
	}
	return -1;
}

/* "[...]" of at most 64 bytes, then an optional "<stdout>"/"<stderr>" and ':'; *rank when it names one. */
static bool is_prefix_end(const char *p, size_t n, size_t *skip, int *rank)
{
	if (n < 2 || p[0] != '[')
		return false;
	size_t i = 1;
	while (i < n && i < 64 && p[i] != ']' && p[i] != '[')
		i++;
	if (i >= n || p[i] != ']')
		return false;
	int r = bracket_rank(p + 1, i - 1);
	if (r >= 0)
		*rank = r;
	i++;
	if (n - i >= 8 && (strncmp(p + i, "<stdout>", 8) == 0 || strncmp(p + i, "<stderr>", 8) == 0))
		i += 8;
	if (i < n && p[i] == ':')
		i++;
	*skip = i;
	return true;
}

static void end_line(sig_scan *s)
{
	char *p = s->line;
	size_t n = s->nline;
	int rank = -1;
	/* leading blanks, bracketed prefixes, quote marks */
	for (;;) {
		size_t skip = 0;
		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		if (is_prefix_end(p, n, &skip, &rank) || (n && *p == '>' && (n == 1 || p[1] == ' ') && (skip = 1))) {
			p += skip;
			n -= skip;
			continue;
		}
		break;
	}
	while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
		n--;
	unsigned long ln = s->line_start;
	s->nline = 0;
	s->line_start = s->line_no;
	if (!n)
		return;
	if (s->have_prev && n == s->nprev && rank == s->prev_rank && memcmp(p, s->prev, n) == 0)
		return; /* a line repeated by the same rank */
	memcpy(s->prev, p, n);
	s->nprev = n;
	s->prev_rank = rank;
	s->have_prev = true;
	if (s->nls == s->cls) {
		s->cls = s->cls ? 2 * s->cls : 256;
		s->ls_off = xrealloc(s->ls_off, s->cls * sizeof(*s->ls_off));
		s->ls_line = xrealloc(s->ls_line, s->cls * sizeof(*s->ls_line));
		s->ls_rank = xrealloc(s->ls_rank, s->cls * sizeof(*s->ls_rank));
	}
	s->ls_off[s->nls] = s->nwin;
	s->ls_line[s->nls] = ln;
	s->ls_rank[s->nls] = rank;
	s->nls++;
	memcpy(s->win + s->nwin, p, n);
	s->nwin += n;
	if (s->nwin >= WINDOW)
		scan_window(s, false);
}

static void put_char(sig_scan *s, char c)
{
	if (c == ' ' && s->nline && s->line[s->nline - 1] == ' ')
		return; /* blanks collapse */
	s->line[s->nline++] = c;
	if (s->nline >= LINE_MAX_BYTES)
		end_line(s); /* a line this long is cut: its line number stays */
}

void sig_scan_feed(sig_scan *s, const char *data, size_t len)
{
	s->bytes += len;
	if (len)
		s->last_nl = data[len - 1] == '\n' || data[len - 1] == '\r';
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)data[i];
		switch (s->esc) {
		case 1: /* after ESC */
			s->esc = c == '[' ? 2 : (c == ']' || c == 'P' || c == '_' || c == '^') ? 3 : 0;
			continue;
		case 2: /* CSI: parameters until a final byte */
			if (c >= 0x40 && c <= 0x7e)
				s->esc = 0;
			else if (c == '\n')
				s->esc = 0, i--; /* a broken sequence does not eat the line */
			continue;
		case 3: /* string: until BEL or ESC \ */
			if (c == 7)
				s->esc = 0;
			else if (c == 0x1b)
				s->esc = 4;
			else if (c == '\n')
				s->esc = 0, i--;
			continue;
		case 4:
			s->esc = c == '\\' ? 0 : 3;
			continue;
		default:
			break;
		}
		if (c > 0x20 && c != 0x7f && c != 0x1b) {
			/* a run of plain bytes, copied at once (the common case) */
			size_t j = i + 1;
			while (j < len) {
				unsigned char d = (unsigned char)data[j];
				if (d <= 0x20 || d == 0x7f || d == 0x1b)
					break;
				j++;
			}
			while (i < j) {
				size_t room = LINE_MAX_BYTES - s->nline, k = j - i < room ? j - i : room;
				memcpy(s->line + s->nline, data + i, k);
				s->nline += k;
				i += k;
				if (s->nline >= LINE_MAX_BYTES)
					end_line(s); /* a line this long is cut: its line number stays */
			}
			i--;
			continue;
		}
		if (c == 0x1b) {
			s->esc = 1;
		} else if (c == '\n' || c == '\r') {
			s->line_no++;
			if (c == '\r' && i + 1 < len && data[i + 1] == '\n')
				i++;
			end_line(s);
		} else if (c < 0x20 || c == 0x7f) {
			put_char(s, ' ');
		} else {
			put_char(s, (char)c);
		}
	}
}

void sig_scan_gap(sig_scan *s, unsigned long long bytes, unsigned long lines)
{
	if (!bytes)
		return;
	if (s->nline)
		end_line(s); /* the part of a line before the gap is a line of its own */
	s->esc = 0;
	scan_window(s, true); /* every match in the window counted */
	s->base += s->nwin;
	s->done = s->base;
	s->nwin = 0;
	s->nls = 0;
	s->have_prev = false;
	s->line_no += lines;
	s->line_start = s->line_no;
	s->skipped += bytes;
	s->last_nl = false;
}

static int hit_cmp(const void *a, const void *b)
{
	const sig_hit *x = a, *y = b;
	if (x->at != y->at)
		return x->at < y->at ? -1 : 1;
	return x->sig < y->sig ? -1 : x->sig > y->sig;
}

const sig_hit *sig_scan_finish(sig_scan *s, size_t *n)
{
	if (s->nline)
		end_line(s);
	scan_window(s, true);
	s->nwin = 0; /* a second finish finds nothing new */
	free(s->out);
	s->out = xcalloc(s->c->n ? s->c->n : 1, sizeof(*s->out));
	s->nout = 0;
	for (size_t i = 0; i < s->c->n; i++)
		if (s->hits[i].count)
			s->out[s->nout++] = s->hits[i];
	qsort(s->out, s->nout, sizeof(*s->out), hit_cmp);
	*n = s->nout;
	return s->out;
}

unsigned long long sig_scan_bytes(const sig_scan *s) { return s->bytes; }
unsigned long long sig_scan_skipped(const sig_scan *s) { return s->skipped; }
unsigned long sig_scan_lines(const sig_scan *s) { return s->bytes || s->skipped ? s->line_no - (s->last_nl ? 1 : 0) : 0; }
unsigned long long sig_scan_work(const sig_scan *s) { return s->work; }

void sig_hit_merge(sig_hit *into, const sig_hit *from)
{
	into->count += from->count;
	for (size_t i = 0; i < sizeof(into->ranks); i++) {
		unsigned char add = from->ranks[i] & (unsigned char)~into->ranks[i];
		for (int b = 0; b < 8; b++)
			into->nranks += (add >> b) & 1u;
		into->ranks[i] |= from->ranks[i];
	}
}

char *sig_hit_ranks(const sig_hit *h, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	for (int r = 0; r < SIG_RANKS;) {
		if (!(h->ranks[r / 8] & (1u << (r % 8)))) {
			r++;
			continue;
		}
		int e = r;
		while (e + 1 < SIG_RANKS && (h->ranks[(e + 1) / 8] & (1u << ((e + 1) % 8))))
			e++;
		char part[32];
		if (e == r)
			snprintf(part, sizeof(part), "%s%d", len ? "," : "", r);
		else
			snprintf(part, sizeof(part), "%s%d-%d", len ? "," : "", r, e);
		if (len + strlen(part) + 4 >= n) {
			snprintf(buf + len, n - len, ",...");
			break;
		}
		memcpy(buf + len, part, strlen(part) + 1);
		len += strlen(part);
		r = e + 1;
	}
	return buf;
}

bool sig_matches(const sig_catalogue *c, size_t i, const char *text, size_t len)
{
	sig_scan *s = sig_scan_new(c);
	sig_scan_feed(s, text, len);
	size_t n;
	const sig_hit *h = sig_scan_finish(s, &n);
	bool found = false;
	for (size_t k = 0; k < n; k++)
		if (h[k].sig == i)
			found = true;
	sig_scan_free(s);
	return found;
}
