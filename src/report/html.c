#include "report/html.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one (overlong forms,
 * surrogates and code points past U+10FFFF are invalid). */
static size_t utf8_len(const unsigned char *s)
{
	if (s[0] < 0x80)
		return 1;
	size_t n;
	unsigned cp;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	static const unsigned min[] = {0, 0, 0x80, 0x800, 0x10000};
	if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

void html_text(FILE *out, const char *str)
{
	if (!str)
		return;
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		switch (*s) {
		case '&': fputs("&amp;", out); s++; continue;
		case '<': fputs("&lt;", out); s++; continue;
		case '>': fputs("&gt;", out); s++; continue;
		case '"': fputs("&quot;", out); s++; continue;
		case '\'': fputs("&#39;", out); s++; continue;
		case '\t':
		case '\n': fputc(*s++, out); continue;
		default: break;
		}
		size_t n = utf8_len(s);
		/* C0 controls, DEL and the C1 controls (U+0080-U+009F, 0xc2 0x80-0x9f) */
		bool control = *s < 0x20 || *s == 0x7f || (n == 2 && s[0] == 0xc2 && s[1] < 0xa0);
		if (n == 0 || control) {
			fputs("\xef\xbf\xbd", out);
			s += n ? n : 1;
			continue;
		}
		fwrite(s, 1, n, out);
		s += n;
	}
}

void html_textf(FILE *out, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	html_text(out, s);
	free(s);
}

const char *fmt_number(char *buf, size_t size, double v)
{
	if (!isfinite(v)) {
		snprintf(buf, size, "-");
		return buf;
	}
	double a = fabs(v);
	int decimals = a >= 1000 ? 0 : a >= 100 ? 1 : a >= 10 ? 2 : a >= 1 ? 3 : 4;
	snprintf(buf, size, "%.*f", decimals, v);
	if (strchr(buf, '.')) {
		char *e = buf + strlen(buf) - 1;
		while (*e == '0')
			*e-- = '\0';
		if (*e == '.')
			*e = '\0';
	}
	return buf;
}

void html_number(FILE *out, double v)
{
	char b[64];
	fputs(fmt_number(b, sizeof(b), v), out);
}
