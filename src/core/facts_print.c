/* The facts' JSON text, as cJSON 1.7 prints facts_to_json's tree (facts_print.h). */
#include "core/facts_print.h"

#include <float.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"

/* The text as it grows: appends without strbuf's NUL after each (some 40 a fact). */
typedef struct out {
	char *p;
	size_t len, cap;
} out;

static void grow(out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : 4096;
	while (cap < o->len + n + 1)
		cap *= 2;
	o->p = xrealloc(o->p, cap);
	o->cap = cap;
}

static inline void put(out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->cap)
		grow(o, n);
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static inline void putc1(out *o, char c)
{
	put(o, &c, 1);
}

static void tabs(out *o, int n)
{
	static const char t[] = "\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t";
	while (n > 0) {
		int k = n < (int)sizeof(t) - 1 ? n : (int)sizeof(t) - 1;
		put(o, t, (size_t)k);
		n -= k;
	}
}

/* A JSON string as cJSON escapes it: the two-letter escapes, \u00XX below 0x20, all else as is
 * (the document's safety scan, core/text.c, deals with the rest). */
static void string(out *o, const char *s, size_t n)
{
	/* the bytes cJSON escapes: below 0x20, the quote and the backslash */
#define EIGHT 1, 1, 1, 1, 1, 1, 1, 1
	static const unsigned char escaped[256] = {EIGHT, EIGHT, EIGHT, EIGHT, ['"'] = 1, ['\\'] = 1};
#undef EIGHT
	putc1(o, '"');
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;
	for (;;) {
		while (i < n && !escaped[u[i]])
			i++;
		put(o, s + run, i - run);
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
		put(o, esc, strlen(esc));
		run = ++i;
	}
	putc1(o, '"');
}

static void cstring(out *o, const char *s)
{
	string(o, s, strlen(s));
}

/* An integer below 10^15 in magnitude: its digits, which is what %1.15g prints for it. */
static void small_integer(out *o, long long v)
{
	char buf[24];
	size_t i = sizeof(buf);
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	do
		buf[--i] = (char)('0' + u % 10);
	while (u /= 10);
	if (v < 0)
		buf[--i] = '-';
	put(o, buf + i, sizeof(buf) - i);
}

/* A number as cJSON 1.7 prints one: %1.15g, or %1.17g where that does not read back; not
 * finite, null. */
static void number(out *o, double d)
{
	if (!isfinite(d)) {
		put(o, "null", 4);
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
	put(o, buf, strlen(buf));
}

static void integer(out *o, long long v)
{
	if (v > -1000000000000000LL && v < 1000000000000000LL)
		small_integer(o, v);
	else
		number(o, (double)v);
}

/* One member: depth tabs, "key":<tab> */
static void member(out *o, int depth, const char *key, size_t n)
{
	tabs(o, depth);
	string(o, key, n);
	put(o, ":\t", 2);
}

static void text_member(out *o, int depth, const char *key, const char *value)
{
	put(o, ",\n", 2);
	member(o, depth, key, strlen(key));
	cstring(o, value);
}

static void fact_object(out *o, const fact *ft, int depth)
{
	put(o, "{\n", 2);
	/* cJSON adds no string member for a NULL string */
	if (ft->state == FACT_OK && !(ft->type == FV_STR && !ft->str)) {
		member(o, depth, "value", 5);
		switch (ft->type) {
		case FV_STR: cstring(o, ft->str); break;
		case FV_INT: integer(o, ft->i); break;
		case FV_REAL: number(o, ft->d); break;
		case FV_BOOL: ft->i ? put(o, "true", 4) : put(o, "false", 5); break;
		default: put(o, "null", 4);
		}
		put(o, ",\n", 2);
	}
	member(o, depth, "state", 5);
	cstring(o, fact_state_name(ft->state));
	if (ft->error)
		text_member(o, depth, "error", ft->error);
	if (ft->source)
		text_member(o, depth, "source", ft->source);
	if (ft->sys_errno)
		text_member(o, depth, "errno", sysroot_errno_name(ft->sys_errno));
	if (ft->excerpt)
		text_member(o, depth, "first_bytes", ft->excerpt);
	putc1(o, '\n');
	tabs(o, depth - 1);
	putc1(o, '}');
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
	out o = {0};
	grow(&o, n * 160); /* about what a fact takes */
	put(&o, "{\n", 2);
	for (size_t l = 0; l < nlayers; l++) {
		const char *lk = v[first[l]]->key;
		member(&o, depth, lk, layer_len(lk));
		put(&o, "{\n", 2);
		bool any = false;
		for (size_t i = first[l]; i < n; i++) {
			if (layer_of[i] != l)
				continue;
			if (any)
				put(&o, ",\n", 2);
			any = true;
			const char *key = v[i]->key, *dot = strchr(key, '.');
			const char *rest = dot ? dot + 1 : key;
			member(&o, depth + 1, rest, strlen(rest));
			fact_object(&o, v[i], depth + 2);
		}
		putc1(&o, '\n');
		tabs(&o, depth);
		putc1(&o, '}');
		put(&o, l + 1 < nlayers ? ",\n" : "\n", l + 1 < nlayers ? 2 : 1);
	}
	tabs(&o, depth - 1);
	putc1(&o, '}');
	o.p[o.len] = '\0';
	free(layer_of);
	free(first);
	free(v);
	return o.p;
}
