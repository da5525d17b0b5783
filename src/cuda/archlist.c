#include "cuda/archlist.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

bool cc_parse(const char *cc, int *major, int *minor)
{
	int a = 0, b = 0;
	if (!cc || version_parse(cc, &a, &b, NULL) < 2 || a <= 0 || a > 99 || b < 0 || b > 9)
		return false;
	*major = a;
	*minor = b;
	return true;
}

/* "sm_90a" -> ptx false, sm 90, variant 'a'. */
static bool parse_token(const char *t, bool *ptx, int *sm, char *variant)
{
	const char *p;
	if (str_starts(t, "sm_"))
		p = t + 3, *ptx = false;
	else if (str_starts(t, "compute_"))
		p = t + 8, *ptx = true;
	else
		return false;
	if (!isdigit((unsigned char)*p))
		return false;
	char *end;
	long v = strtol(p, &end, 10);
	if (v < 10 || v > 999)
		return false;
	*sm = (int)v;
	*variant = (*end == 'a' || *end == 'f') ? *end : 0;
	return true;
}

bool arch_tokens_cover(const char *tokens, int major, int minor, char *how, size_t n)
{
	if (!tokens)
		return false;
	strlist t = {0};
	sl_split(&t, tokens, " ,;", false);
	int gpu = major * 10 + minor;
	bool sass = false, ptx = false;
	char sass_tok[32] = "", ptx_tok[32] = "";
	for (size_t i = 0; i < t.n; i++) {
		bool is_ptx;
		int sm;
		char v;
		if (!parse_token(t.v[i], &is_ptx, &sm, &v))
			continue;
		int tmaj = sm / 10, tmin = sm % 10;
		bool ok;
		if (v == 'a')
			ok = sm == gpu;
		else if (is_ptx && !v)
			ok = gpu >= sm;
		else
			ok = tmaj == major && tmin <= minor;
		if (!ok)
			continue;
		if (!is_ptx && !sass) {
			sass = true;
			str_copy(sass_tok, sizeof(sass_tok), t.v[i]);
		} else if (is_ptx && !ptx) {
			ptx = true;
			str_copy(ptx_tok, sizeof(ptx_tok), t.v[i]);
		}
	}
	sl_free(&t);
	if (how && n) {
		if (sass)
			snprintf(how, n, "%s", sass_tok);
		else if (ptx)
			snprintf(how, n, "%s (PTX, JIT-compiled by the driver at first use)", ptx_tok);
		else
			how[0] = '\0';
	}
	return sass || ptx;
}

bool arch_tokens_from_dotted(const char *dotted, char *out, size_t n)
{
	strbuf sass, ptx;
	sb_init(&sass);
	sb_init(&ptx);
	strlist t = {0};
	sl_split(&t, dotted ? dotted : "", " ;,", false);
	for (size_t i = 0; i < t.n; i++) {
		int a, b;
		const char *s = t.v[i];
		if (!isdigit((unsigned char)*s) || version_parse(s, &a, &b, NULL) < 2 || a <= 0 || a > 99 || b < 0 ||
		    b > 9)
			continue;
		const char *tail = s;
		while (*tail && (isdigit((unsigned char)*tail) || *tail == '.'))
			tail++;
		char v = (*tail == 'a' || *tail == 'f') ? *tail : 0;
		char tok[32];
		if (v)
			snprintf(tok, sizeof(tok), "sm_%d%c", a * 10 + b, v);
		else
			snprintf(tok, sizeof(tok), "sm_%d", a * 10 + b);
		if (sass.len)
			sb_addc(&sass, ' ');
		sb_add(&sass, tok);
		if (strstr(tail, "+PTX") || strstr(tail, "+ptx")) {
			if (ptx.len)
				sb_addc(&ptx, ' ');
			sb_addf(&ptx, "compute_%d", a * 10 + b);
		}
	}
	sl_free(&t);
	bool any = sass.len > 0;
	if (ptx.len) {
		sb_addc(&sass, ' ');
		sb_add(&sass, ptx.buf);
	}
	str_copy(out, n, sass.buf ? sass.buf : "");
	sb_free(&sass);
	sb_free(&ptx);
	return any;
}

bool arch_tokens_max(const char *tokens, char *out, size_t n)
{
	strlist t = {0};
	sl_split(&t, tokens ? tokens : "", " ,;", false);
	int best = -1;
	for (size_t i = 0; i < t.n; i++) {
		bool is_ptx;
		int sm;
		char v;
		if (parse_token(t.v[i], &is_ptx, &sm, &v) && sm > best)
			best = sm;
	}
	sl_free(&t);
	if (best < 0)
		return false;
	snprintf(out, n, "%d.%d", best / 10, best % 10);
	return true;
}
