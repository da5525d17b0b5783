#include "expo/expo.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void expo_init(expo *e, strbuf *out, expo_format fmt)
{
	memset(e, 0, sizeof(*e));
	e->out = out;
	e->fmt = fmt;
}

bool expo_valid_metric_name(const char *name)
{
	if (!name || !*name || !(isalpha((unsigned char)name[0]) || name[0] == '_' || name[0] == ':'))
		return false;
	for (const char *p = name; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_' || *p == ':'))
			return false;
	return true;
}

bool expo_valid_label_name(const char *name)
{
	if (!name || !*name || !(isalpha((unsigned char)name[0]) || name[0] == '_'))
		return false;
	if (name[0] == '_' && name[1] == '_') /* reserved for Prometheus itself */
		return false;
	for (const char *p = name; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '_'))
			return false;
	return true;
}

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 when invalid: overlong forms,
 * surrogates and code points above U+10FFFF are, as Prometheus's parser would say. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	uint32_t cp;
	return utf8_decode(s, n, &cp);
}

/* Backslash and line feed always escaped, the double quote when quote is set; invalid UTF-8
 * (and NUL) become U+FFFD, as Prometheus's parser accepts only UTF-8. */
static void escape(strbuf *sb, const char *value, size_t len, bool quote)
{
	const unsigned char *s = (const unsigned char *)value;
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t n;
		if (c == '\\')
			sb_addn(sb, "\\\\", 2), n = 1;
		else if (c == '\n')
			sb_addn(sb, "\\n", 2), n = 1;
		else if (c == '"' && quote)
			sb_addn(sb, "\\\"", 2), n = 1;
		else if ((n = utf8_seq(s + i, len - i)) == 0 || c == 0)
			sb_add(sb, "\xef\xbf\xbd"), n = 1;
		else
			sb_addn(sb, (const char *)s + i, n);
		i += n;
	}
}

void expo_escape_label(strbuf *sb, const char *value, size_t len)
{
	escape(sb, value, len, true);
}

void expo_escape_help(strbuf *sb, const char *text, expo_format fmt)
{
	escape(sb, text, strlen(text), fmt == EXPO_OPENMETRICS);
}

void expo_format_value(char *buf, size_t size, double v)
{
	if (isnan(v)) {
		str_copy(buf, size, "NaN");
	} else if (isinf(v)) {
		str_copy(buf, size, v > 0 ? "+Inf" : "-Inf");
	} else if (v == floor(v) && fabs(v) < 1e15) {
		snprintf(buf, size, "%.0f", v == 0 ? 0.0 : v); /* no "-0" */
	} else {
		for (int prec = 6; prec <= 17; prec++) {
			snprintf(buf, size, "%.*g", prec, v);
			if (strtod(buf, NULL) == v)
				break;
		}
	}
}

/* The family name without "_total", for OpenMetrics metadata of counters. */
static void add_family_name(expo *e, const char *name)
{
	size_t len = strlen(name);
	if (e->fmt == EXPO_OPENMETRICS && e->type == MT_COUNTER && str_ends(name, "_total"))
		len -= strlen("_total");
	sb_addn(e->out, name, len);
}

bool expo_family(expo *e, const char *name, metric_type type, const char *help)
{
	if (!expo_valid_metric_name(name)) {
		e->bad = true;
		e->family = NULL;
		return false;
	}
	/* an OpenMetrics counter's samples end in _total: a counter named without it (DCGM's
	 * DCGM_FI_DEV_PCIE_REPLAY_COUNTER) is of type unknown there, its samples unchanged */
	if (e->fmt == EXPO_OPENMETRICS && type == MT_COUNTER && !str_ends(name, "_total"))
		type = MT_UNTYPED;
	e->family = name;
	e->type = type;
	e->nfamilies++;
	if (help) {
		sb_add(e->out, "# HELP ");
		add_family_name(e, name);
		sb_addc(e->out, ' ');
		expo_escape_help(e->out, help, e->fmt);
		sb_addc(e->out, '\n');
	}
	const char *tname = type == MT_GAUGE ? "gauge" : type == MT_COUNTER ? "counter" : e->fmt == EXPO_OPENMETRICS ? "unknown" : "untyped";
	sb_add(e->out, "# TYPE ");
	add_family_name(e, name);
	sb_addc(e->out, ' ');
	sb_add(e->out, tname);
	sb_addc(e->out, '\n');
	return true;
}

bool expo_sample_v(expo *e, double value, size_t nlabels, const char *const *names, const char *const *values)
{
	if (!e->family)
		return false;
	for (size_t i = 0; i < nlabels; i++)
		if (values[i] && !expo_valid_label_name(names[i])) {
			e->bad = true;
			return false;
		}
	sb_add(e->out, e->family);
	bool any = false;
	for (size_t i = 0; i < nlabels; i++) {
		if (!values[i])
			continue;
		sb_addc(e->out, any ? ',' : '{');
		any = true;
		sb_add(e->out, names[i]);
		sb_addn(e->out, "=\"", 2);
		expo_escape_label(e->out, values[i], strlen(values[i]));
		sb_addc(e->out, '"');
	}
	if (any)
		sb_addc(e->out, '}');
	char buf[64];
	/* a counter that went backwards or a NaN counter would break rate(); OpenMetrics forbids
	 * negative counters outright */
	if (e->type == MT_COUNTER && (isnan(value) || value < 0))
		value = 0;
	expo_format_value(buf, sizeof(buf), value);
	sb_addc(e->out, ' ');
	sb_add(e->out, buf);
	sb_addc(e->out, '\n');
	e->nsamples++;
	return true;
}

bool expo_sample(expo *e, double value, ...)
{
	const char *names[32], *values[32];
	size_t n = 0;
	va_list ap;
	va_start(ap, value);
	for (;;) {
		const char *name = va_arg(ap, const char *);
		if (!name)
			break;
		const char *val = va_arg(ap, const char *);
		if (n < GV_ARRAY_LEN(names)) {
			names[n] = name;
			values[n] = val;
			n++;
		}
	}
	va_end(ap);
	return expo_sample_v(e, value, n, names, values);
}

void expo_finish(expo *e)
{
	if (e->fmt == EXPO_OPENMETRICS)
		sb_add(e->out, "# EOF\n");
}

/* q of one element's parameters (";version=1.0.0;q=0.5"); 1 when absent, -1 for a q that is not a
 * number from 0 to 1 (RFC 9110's qvalue): such an element is left out, never taken as q=1. */
static double param_q(const char *p, size_t len)
{
	double q = 1;
	const char *end = p + len;
	while (p < end) {
		const char *semi = memchr(p, ';', (size_t)(end - p));
		const char *stop = semi ? semi : end;
		while (p < stop && (*p == ' ' || *p == '\t'))
			p++;
		if (stop - p > 2 && (p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
			char tmp[16];
			size_t n = (size_t)(stop - p - 2);
			if (n >= sizeof(tmp))
				n = sizeof(tmp) - 1;
			memcpy(tmp, p + 2, n);
			tmp[n] = '\0';
			char *e;
			double v = strtod(tmp, &e);
			while (*e == ' ' || *e == '\t')
				e++;
			q = e != tmp && !*e && v >= 0 && v <= 1 ? v : -1;
		}
		p = semi ? semi + 1 : end;
	}
	return q;
}

void expo_header_each(const char *list, expo_header_fn fn, void *arg)
{
	for (const char *p = list; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *s = p;
		while (len && (*s == ' ' || *s == '\t'))
			s++, len--;
		const char *semi = memchr(s, ';', len);
		size_t tlen = semi ? (size_t)(semi - s) : len;
		while (tlen && (s[tlen - 1] == ' ' || s[tlen - 1] == '\t'))
			tlen--;
		double q = semi ? param_q(semi + 1, len - (size_t)(semi + 1 - s)) : 1;
		if (tlen)
			fn(s, tlen, q, arg);
		if (!comma)
			break;
		p = comma + 1;
	}
}

static bool token_is(const char *s, size_t len, const char *name)
{
	return len == strlen(name) && strncasecmp(s, name, len) == 0;
}

struct accept_q {
	double om, text;
};

static void accept_item(const char *s, size_t len, double q, void *arg)
{
	struct accept_q *a = arg;
	if (token_is(s, len, "application/openmetrics-text")) {
		if (q > a->om)
			a->om = q;
	} else if (token_is(s, len, "text/plain") || token_is(s, len, "*/*") || token_is(s, len, "text/*")) {
		if (q > a->text)
			a->text = q;
	}
}

expo_format expo_negotiate(const char *accept)
{
	struct accept_q a = {-1, -1};
	expo_header_each(accept, accept_item, &a);
	return a.om > 0 && a.om >= a.text ? EXPO_OPENMETRICS : EXPO_TEXT;
}
