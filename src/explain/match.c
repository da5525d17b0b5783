#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "explain/match.h"

enum {
	WINDOW = 256 * 1024, /* a scan window */
	OVERLAP = 4 * 1024,  /* kept from one window to the next; a match is at most MATCH_MAX */
	MATCH_MAX = 2048,
	LINE_MAX_BYTES = 64 * 1024,
	MAX_COUNT_PER_WINDOW = 4096, /* matches counted per signature and window */
};

struct sig_catalogue {
	signature *v;
	regex_t *re;
	char **anchor;
	size_t n;
};

static const char *cell(const csv_table *t, size_t r, const char *col)
{
	return csv_cell(t, r, col);
}

/* A space in the pattern matches any run of blanks, none included (lines are joined without a
 * separator and blanks are collapsed). Spaces inside a bracket expression stay. */
static char *expand_pattern(const char *p)
{
	strbuf b;
	sb_init(&b);
	bool in_bracket = false;
	for (const char *s = p; *s; s++) {
		if (in_bracket) {
			sb_addc(&b, *s);
			if (*s == ']' && s[-1] != '[' && !(s[-1] == '^' && s[-2] == '['))
				in_bracket = false;
			continue;
		}
		if (*s == '\\' && s[1]) {
			sb_addc(&b, *s++);
			sb_addc(&b, *s);
		} else if (*s == '[') {
			in_bracket = true;
			sb_addc(&b, *s);
		} else if (*s == ' ') {
			while (s[1] == ' ')
				s++;
			sb_add(&b, " ?");
		} else {
			sb_addc(&b, *s);
		}
	}
	return sb_steal(&b);
}

static bool literal_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '-' || c == ':' || c == '/' || c == '\'' || c == ',' ||
	       c == '=' || c == '@' || c == '#' || c == '%' || c == '<' || c == '>' || c == '"' || c == ';' || c == '!';
}

/* The longest run of literal characters outside groups and brackets, when the pattern has no
 * top-level alternation; a character made optional by ?, * or {0 is not part of a run. */
static char *anchor_of(const char *p)
{
	int depth = 0;
	for (const char *s = p; *s; s++) {
		if (*s == '\\' && s[1]) {
			s++;
			continue;
		}
		if (*s == '(')
			depth++;
		else if (*s == ')')
			depth--;
		else if (*s == '|' && depth == 0)
			return xstrdup("");
	}
	char best[128] = "", cur[128] = "";
	size_t nb = 0, nc = 0;
	depth = 0;
	bool in_bracket = false;
	for (const char *s = p;; s++) {
		char lit = 0;
		bool breaks = false;
		if (!*s) {
			breaks = true;
		} else if (in_bracket) {
			if (*s == ']')
				in_bracket = false;
			breaks = true;
		} else if (*s == '[') {
			in_bracket = true;
			if (s[1] == ']')
				s++;
			else if (s[1] == '^' && s[2] == ']')
				s += 2;
			breaks = true;
		} else if (*s == '(') {
			depth++;
			breaks = true;
		} else if (*s == ')') {
			depth--;
			breaks = true;
		} else if (depth > 0) {
			breaks = true;
		} else if (*s == '\\' && s[1]) {
			s++;
			if (literal_char(*s) || *s == '.' || *s == '(' || *s == ')' || *s == '[' || *s == ']' || *s == '+' ||
			    *s == '*' || *s == '?' || *s == '|' || *s == '$' || *s == '^')
				lit = *s;
			else
				breaks = true;
		} else if (literal_char(*s)) {
			lit = *s;
		} else {
			breaks = true;
		}
		if (lit && (s[1] == '?' || s[1] == '*' || (s[1] == '{' && s[2] == '0'))) {
			lit = 0;
			breaks = true;
		}
		if (lit && nc + 1 < sizeof(cur)) {
			cur[nc++] = (char)tolower((unsigned char)lit);
			cur[nc] = '\0';
		}
		if (breaks || !lit) {
			if (nc > nb) {
				memcpy(best, cur, nc + 1);
				nb = nc;
			}
			nc = 0;
			cur[0] = '\0';
		}
		if (!*s)
			break;
	}
	return xstrdup(nb >= 4 ? best : "");
}

sig_catalogue *sig_catalogue_new(const csv_table *t, char **err)
{
	sig_catalogue *c = xcalloc(1, sizeof(*c));
	*err = NULL;
	if (!t) {
		*err = xstrdup("no errors table");
		free(c);
		return NULL;
	}
	c->v = xcalloc(t->nrows ? t->nrows : 1, sizeof(*c->v));
	c->re = xcalloc(t->nrows ? t->nrows : 1, sizeof(*c->re));
	c->anchor = xcalloc(t->nrows ? t->nrows : 1, sizeof(*c->anchor));
	for (size_t r = 0; r < t->nrows; r++) {
		signature *s = &c->v[c->n];
		s->id = cell(t, r, "id");
		s->library = cell(t, r, "library");
		s->versions = cell(t, r, "versions");
		s->pattern = cell(t, r, "pattern");
		s->title = cell(t, r, "title");
		s->advice = cell(t, r, "advice");
		s->example = cell(t, r, "example");
		s->source = cell(t, r, "source");
		const char *what = !*s->id ? "id" : !*s->pattern ? "pattern" : !*s->source ? "source" : NULL;
		if (what) {
			*err = xasprintf("errors.csv row %zu: empty %s", r + 2, what);
			break;
		}
		for (size_t k = 0; k < c->n; k++)
			if (strcmp(c->v[k].id, s->id) == 0) {
				*err = xasprintf("errors.csv row %zu: duplicate id %s", r + 2, s->id);
				break;
			}
		if (*err)
			break;
		char *pat = expand_pattern(s->pattern);
		int rc = regcomp(&c->re[c->n], pat, REG_EXTENDED | REG_ICASE);
		free(pat);
		if (rc != 0) {
			char msg[128];
			regerror(rc, &c->re[c->n], msg, sizeof(msg));
			*err = xasprintf("errors.csv row %zu (%s): pattern does not compile: %s", r + 2, s->id, msg);
			break;
		}
		strlist ids = {0};
		sl_split(&ids, cell(t, r, "causes"), " ", false);
		s->causes = xcalloc(ids.n + 1, sizeof(char *));
		for (size_t k = 0; k < ids.n; k++)
			s->causes[k] = xstrdup(ids.v[k]);
		s->ncauses = ids.n;
		sl_free(&ids);
		c->anchor[c->n] = anchor_of(s->pattern);
		c->n++;
	}
	if (*err) {
		sig_catalogue_free(c);
		return NULL;
	}
	return c;
}

void sig_catalogue_free(sig_catalogue *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		regfree(&c->re[i]);
		for (size_t k = 0; k < c->v[i].ncauses; k++)
			free(c->v[i].causes[k]);
		free(c->v[i].causes);
		free(c->anchor[i]);
	}
	free(c->v);
	free(c->re);
	free(c->anchor);
	free(c);
}

size_t sig_count(const sig_catalogue *c) { return c->n; }
const signature *sig_at(const sig_catalogue *c, size_t i) { return i < c->n ? &c->v[i] : NULL; }
const char *sig_anchor(const sig_catalogue *c, size_t i) { return c->anchor[i]; }

const signature *sig_find(const sig_catalogue *c, const char *id)
{
	for (size_t i = 0; i < c->n; i++)
		if (strcmp(c->v[i].id, id) == 0)
			return &c->v[i];
	return NULL;
}

/* ---- the scan ---- */

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
	bool have_prev;
	char *win, *low;       /* window text and its lower-case copy */
	size_t nwin;
	unsigned long long base; /* offset of win[0] in the normalised text */
	unsigned long long done; /* matches starting before this offset were counted already */
	/* input line of each normalised line in the window */
	size_t *ls_off;
	unsigned long *ls_line;
	size_t nls, cls;
	unsigned long long bytes;
	bool last_nl; /* the last byte fed ended a line */
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
	s->win = xmalloc(WINDOW + LINE_MAX_BYTES + 1);
	s->low = xmalloc(WINDOW + LINE_MAX_BYTES + 1);
	s->hits = xcalloc(c->n ? c->n : 1, sizeof(*s->hits));
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
	free(s->hits);
	free(s->out);
	free(s);
}

static unsigned long line_at(const sig_scan *s, size_t off)
{
	size_t lo = 0, hi = s->nls;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (s->ls_off[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return s->nls ? s->ls_line[lo] : s->line_start;
}

/* Searches the window; matches that start at or after limit belong to the next window. */
static void scan_window(sig_scan *s, bool final)
{
	if (!s->nwin)
		return;
	s->win[s->nwin] = '\0';
	for (size_t i = 0; i < s->nwin; i++)
		s->low[i] = (char)tolower((unsigned char)s->win[i]);
	s->low[s->nwin] = '\0';
	size_t limit = final || s->nwin <= OVERLAP ? s->nwin : s->nwin - OVERLAP;
	size_t from = s->done > s->base ? (size_t)(s->done - s->base) : 0;
	for (size_t i = 0; i < s->c->n; i++) {
		const char *a = s->c->anchor[i];
		if (*a && !strstr(s->low + from, a)) /* the anchor cannot start before from's match */
			continue;
		size_t pos = from, counted = 0;
		while (pos < limit && counted < MAX_COUNT_PER_WINDOW) {
			regmatch_t m;
			if (regexec(&s->c->re[i], s->win + pos, 1, &m, pos ? REG_NOTBOL : 0) != 0)
				break;
			size_t st = pos + (size_t)m.rm_so, en = pos + (size_t)m.rm_eo;
			if (st >= limit)
				break;
			sig_hit *h = &s->hits[i];
			if (h->count == 0) {
				h->sig = i;
				h->at = s->base + st;
				h->line = line_at(s, st);
				size_t n = en - st < sizeof(h->excerpt) - 1 ? en - st : sizeof(h->excerpt) - 1;
				memcpy(h->excerpt, s->win + st, n);
				h->excerpt[n] = '\0';
				str_sanitize(h->excerpt); /* printed to terminals and JSON: ASCII only */
			}
			h->count++;
			counted++;
			pos = en > st ? en : st + 1;
		}
	}
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
			k++;
		}
	s->nls = k;
}

static bool is_prefix_end(const char *p, size_t n, size_t *skip)
{
	/* "[...]" of at most 64 bytes followed by optional ':' */
	if (n < 2 || p[0] != '[')
		return false;
	size_t i = 1;
	while (i < n && i < 64 && p[i] != ']' && p[i] != '[')
		i++;
	if (i >= n || p[i] != ']')
		return false;
	i++;
	if (i < n && p[i] == ':')
		i++;
	*skip = i;
	return true;
}

static void end_line(sig_scan *s)
{
	char *p = s->line;
	size_t n = s->nline;
	/* leading blanks, bracketed prefixes, quote marks */
	for (;;) {
		size_t skip = 0;
		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		if (is_prefix_end(p, n, &skip) || (n && *p == '>' && (n == 1 || p[1] == ' ') && (skip = 1))) {
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
	if (s->have_prev && n == s->nprev && memcmp(p, s->prev, n) == 0)
		return; /* a repeated line */
	memcpy(s->prev, p, n);
	s->nprev = n;
	s->have_prev = true;
	if (s->nls == s->cls) {
		s->cls = s->cls ? 2 * s->cls : 256;
		s->ls_off = xrealloc(s->ls_off, s->cls * sizeof(*s->ls_off));
		s->ls_line = xrealloc(s->ls_line, s->cls * sizeof(*s->ls_line));
	}
	s->ls_off[s->nls] = s->nwin;
	s->ls_line[s->nls] = ln;
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
unsigned long sig_scan_lines(const sig_scan *s) { return s->bytes ? s->line_no - (s->last_nl ? 1 : 0) : 0; }

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
