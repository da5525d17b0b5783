#include "core/text.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool text_unsafe_cp(uint32_t cp)
{
	return cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 ||
	       (cp >= 0x200e && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
	       cp == 0x061c;
}

void sb_add_text(strbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);
	while (n) {
		/* runs of plain printable ASCII in one go */
		size_t k = 0;
		while (k < n && p[k] >= 0x20 && p[k] < 0x7f)
			k++;
		if (k) {
			sb_addn(sb, (const char *)p, k);
			p += k, n -= k;
			continue;
		}
		uint32_t cp;
		size_t len = utf8_decode(p, n, &cp);
		if (len == 0) {
			sb_addf(sb, "\\x%02x", *p);
			len = 1;
		} else if (cp == '\n') {
			sb_add(sb, "\\n");
		} else if (cp == '\t') {
			sb_add(sb, "\\t");
		} else if (cp == '\r') {
			sb_add(sb, "\\r");
		} else if (cp == 0x1b) {
			sb_add(sb, "\\e");
		} else if (cp < 0x80 && text_unsafe_cp(cp)) {
			sb_addf(sb, "\\x%02x", (unsigned)cp);
		} else if (text_unsafe_cp(cp)) {
			sb_addf(sb, "\\u%04x", (unsigned)cp);
		} else {
			sb_addn(sb, (const char *)p, len);
		}
		p += len, n -= len;
	}
}

bool text_is_safe(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t n = strlen((const char *)p);
	while (n) {
		uint32_t cp;
		size_t len = utf8_decode(p, n, &cp);
		if (len == 0 || text_unsafe_cp(cp))
			return false;
		p += len, n -= len;
	}
	return true;
}

char *text_safe_dup(const char *s)
{
	strbuf sb;
	sb_init(&sb);
	sb_add_text(&sb, s);
	return sb_steal(&sb);
}

const char *text_safe(char *buf, size_t size, const char *s)
{
	if (!size)
		return buf;
	if (text_is_safe(s) && strlen(s ? s : "") < size) {
		str_copy(buf, size, s ? s : "");
		return buf;
	}
	char *t = text_safe_dup(s);
	size_t n = strlen(t);
	if (n < size) {
		memcpy(buf, t, n + 1);
	} else if (size > 4) {
		/* cut before an escape or a character that the cut would split */
		size_t cut = size - 4;
		while (cut > 0 && ((unsigned char)t[cut] & 0xc0) == 0x80)
			cut--;
		for (size_t i = cut; i > 0 && i + 10 > cut; i--)
			if (t[i - 1] == '\\') {
				cut = i - 1;
				break;
			}
		memcpy(buf, t, cut);
		memcpy(buf + cut, "...", 4);
	} else {
		buf[0] = '\0';
	}
	free(t);
	return buf;
}

/* json_text_safe's scan: hands the text on in runs to put, escapes in between. */
static void json_safe_scan(const char *json, void (*put)(void *ctx, const char *s, size_t n), void *ctx)
{
	const unsigned char *p = (const unsigned char *)json;
	size_t n = strlen(json);
	while (n) {
		size_t k = 0;
		while (k < n && p[k] < 0x7f)
			k++;
		if (k) {
			put(ctx, (const char *)p, k);
			p += k, n -= k;
			continue;
		}
		uint32_t cp;
		size_t len = utf8_decode(p, n, &cp);
		if (len == 0) {
			put(ctx, "\\ufffd", 6);
			len = 1;
		} else if (text_unsafe_cp(cp)) {
			char esc[8];
			snprintf(esc, sizeof(esc), "\\u%04x", (unsigned)cp);
			put(ctx, esc, 6);
		} else {
			put(ctx, (const char *)p, len);
		}
		p += len, n -= len;
	}
}

static void put_strbuf(void *ctx, const char *s, size_t n)
{
	sb_addn(ctx, s, n);
}

static void put_file(void *ctx, const char *s, size_t n)
{
	fwrite(s, 1, n, ctx);
}

char *json_text_safe(const char *json)
{
	strbuf sb;
	sb_init(&sb);
	json_safe_scan(json, put_strbuf, &sb);
	return sb_steal(&sb);
}

void json_print_doc(FILE *out, cJSON *doc)
{
	/* a check's document is ~200 KiB: printed into one buffer of that size, not grown to it,
	 * and written in its runs, not copied once more */
	char *s = doc ? cJSON_PrintBuffered(doc, 256 << 10, 1) : NULL;
	json_safe_scan(s ? s : "null", put_file, out);
	fputc('\n', out);
	free(s);
	cJSON_Delete(doc);
}
