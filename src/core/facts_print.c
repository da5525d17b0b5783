/* The facts' JSON text, as cJSON 1.7 prints facts_to_json's tree (facts_print.h). */
#include "core/facts_print.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"

static void tabs(strbuf *b, int n)
{
	static const char t[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
	while (n > 0) {
		int k = n < (int)sizeof(t) - 1 ? n : (int)sizeof(t) - 1;
		sb_addn(b, t, (size_t)k);
		n -= k;
	}
}

/* A JSON string as cJSON escapes it: the two-letter escapes, \u00XX below 0x20, all else as is
 * (the document's safety scan, core/text.c, deals with the rest). */
static void string(strbuf *b, const char *s, size_t n)
{
	/* the bytes cJSON escapes: below 0x20, the quote and the backslash */
#define EIGHT 1, 1, 1, 1, 1, 1, 1, 1
	static const unsigned char escaped[256] = {EIGHT, EIGHT, EIGHT, EIGHT, ['"'] = 1, ['\\'] = 1};
#undef EIGHT
	sb_addc(b, '"');
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;
	for (;;) {
		while (i < n && !escaped[u[i]])
			i++;
		sb_addn(b, s + run, i - run);
		if (i == n)
			break;
		char esc[8] = {'\\', 0, 0};
		switch (u[i]) {
		case '"': esc[1] = '"'; break;
		case '\\': esc[1] = '\\'; break;
		case '\b': esc[1] = 'b'; break;
		case '\f': esc[1] = 'f'; break;
		case '\n': esc[1] = 'n'; break;
		case '\r': esc[1] = 'r'; break;
		case '\t': esc[1] = 't'; break;
		default: snprintf(esc, sizeof(esc), "\\u%04x", u[i]);
		}
		sb_add(b, esc);
		run = ++i;
	}
	sb_addc(b, '"');
}

static void cstring(strbuf *b, const char *s)
{
	string(b, s, strlen(s));
}

/* A number as cJSON 1.7 prints one: %1.15g, or %1.17g where that does not read back; not
 * finite, null. */
static void number(strbuf *b, double d)
{
	if (!isfinite(d)) {
		sb_add(b, "null");
		return;
	}
	char buf[32];
	snprintf(buf, sizeof(buf), "%1.15g", d);
	double back = strtod(buf, NULL);
	double big = fabs(d) > fabs(back) ? fabs(d) : fabs(back);
	if (!(fabs(back - d) <= big * DBL_EPSILON))
		snprintf(buf, sizeof(buf), "%1.17g", d);
	/* JSON's decimal point, whatever LC_NUMERIC says (as cJSON) */
	char point = localeconv()->decimal_point[0];
	for (char *p = buf; point != '.' && *p; p++)
		if (*p == point)
			*p = '.';
	sb_add(b, buf);
}

/* One member: depth tabs, "key":<tab> */
static void member(strbuf *b, int depth, const char *key, size_t n)
{
	tabs(b, depth);
	string(b, key, n);
	sb_addn(b, ":\t", 2);
}

static void text_member(strbuf *b, int depth, const char *key, const char *value)
{
	sb_addn(b, ",\n", 2);
	member(b, depth, key, strlen(key));
	cstring(b, value);
}

static void fact_object(strbuf *b, const fact *ft, int depth)
{
	sb_addn(b, "{\n", 2);
	/* cJSON adds no string member for a NULL string */
	if (ft->state == FACT_OK && !(ft->type == FV_STR && !ft->str)) {
		member(b, depth, "value", 5);
		switch (ft->type) {
		case FV_STR: cstring(b, ft->str); break;
		case FV_INT: number(b, (double)ft->i); break;
		case FV_REAL: number(b, ft->d); break;
		case FV_BOOL: sb_add(b, ft->i ? "true" : "false"); break;
		default: sb_add(b, "null");
		}
		sb_addn(b, ",\n", 2);
	}
	member(b, depth, "state", 5);
	cstring(b, fact_state_name(ft->state));
	if (ft->error)
		text_member(b, depth, "error", ft->error);
	if (ft->source)
		text_member(b, depth, "source", ft->source);
	if (ft->sys_errno)
		text_member(b, depth, "errno", sysroot_errno_name(ft->sys_errno));
	if (ft->excerpt)
		text_member(b, depth, "first_bytes", ft->excerpt);
	sb_addc(b, '\n');
	tabs(b, depth - 1);
	sb_addc(b, '}');
}

/* The layer of a key: what comes before its first dot, or the whole key. */
static size_t layer_len(const char *key)
{
	const char *dot = strchr(key, '.');
	return dot ? (size_t)(dot - key) : strlen(key);
}

char *facts_json_print(const facts *f, int depth)
{
	size_t n;
	const fact **v = facts_list(f, &n);
	/* the layers in the order they first appear, each fact under its own (as facts_to_json) */
	size_t *layer_of = xcalloc(n ? n : 1, sizeof(*layer_of)), *first = xcalloc(n ? n : 1, sizeof(*first));
	size_t nlayers = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = layer_len(v[i]->key), l = 0;
		/* most facts follow one of their layer: look at the last layer first */
		if (nlayers && layer_len(v[first[nlayers - 1]]->key) == len &&
		    memcmp(v[first[nlayers - 1]]->key, v[i]->key, len) == 0)
			l = nlayers - 1;
		else
			for (l = 0; l < nlayers; l++)
				if (layer_len(v[first[l]]->key) == len && memcmp(v[first[l]]->key, v[i]->key, len) == 0)
					break;
		if (l == nlayers)
			first[nlayers++] = i;
		layer_of[i] = l;
	}
	strbuf b;
	sb_init(&b);
	sb_addn(&b, "{\n", 2);
	for (size_t l = 0; l < nlayers; l++) {
		const char *lk = v[first[l]]->key;
		member(&b, depth, lk, layer_len(lk));
		sb_addn(&b, "{\n", 2);
		bool any = false;
		for (size_t i = first[l]; i < n; i++) {
			if (layer_of[i] != l)
				continue;
			if (any)
				sb_addn(&b, ",\n", 2);
			any = true;
			const char *key = v[i]->key, *dot = strchr(key, '.');
			const char *rest = dot ? dot + 1 : key;
			member(&b, depth + 1, rest, strlen(rest));
			fact_object(&b, v[i], depth + 2);
		}
		sb_addc(&b, '\n');
		tabs(&b, depth);
		sb_addc(&b, '}');
		sb_addn(&b, l + 1 < nlayers ? ",\n" : "\n", l + 1 < nlayers ? 2 : 1);
	}
	tabs(&b, depth - 1);
	sb_addc(&b, '}');
	free(layer_of);
	free(first);
	free(v);
	return sb_steal(&b);
}
