/* The live view's frame of styled cells (watch/frame.h). */
#include "watch/frame.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void frame_init(frame *f, int rows, int cols)
{
	f->rows = rows > 0 && cols > 0 ? rows : 0;
	f->cols = rows > 0 && cols > 0 ? cols : 0;
	size_t n = (size_t)f->rows * (size_t)f->cols;
	f->cell = xmalloc((n ? n : 1) * sizeof(*f->cell));
	for (size_t i = 0; i < n; i++)
		f->cell[i] = (frame_cell){.ch = ' ', .style = FS_PLAIN};
}

void frame_free(frame *f)
{
	free(f->cell);
	f->cell = NULL;
	f->rows = f->cols = 0;
}

/* The next code point of UTF-8 text; a byte that starts no valid sequence is itself (as Latin-1
 * would read it), so broken text still takes one cell per byte. */
static uint32_t next_cp(const char **s)
{
	const unsigned char *p = (const unsigned char *)*s;
	uint32_t c = p[0];
	int n = c >= 0xf0 && c < 0xf8 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
	if (c >= 0xf8)
		n = 0;
	uint32_t v = n == 3 ? c & 0x07 : n == 2 ? c & 0x0f : c & 0x1f;
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			*s += 1;
			return c;
		}
		v = v << 6 | (p[i] & 0x3f);
	}
	*s += n + 1;
	return n ? v : c;
}

static bool writable(const frame *f, int y, int x)
{
	return y >= 0 && y < f->rows && x >= 0 && x < f->cols - 1;
}

int frame_put(frame *f, int y, int x, int style, const char *text)
{
	for (const char *s = text ? text : ""; *s;) {
		uint32_t c = next_cp(&s);
		if (c < 0x20 || c == 0x7f)
			c = '?';
		if (writable(f, y, x))
			f->cell[(size_t)y * (size_t)f->cols + (size_t)x] = (frame_cell){.ch = c, .style = (uint8_t)style};
		x++;
	}
	return x;
}

int frame_putf(frame *f, int y, int x, int style, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return frame_put(f, y, x, style, buf);
}

int frame_fill(frame *f, int y, int x, int n, int style, uint32_t ch)
{
	for (int i = 0; i < n; i++, x++)
		if (writable(f, y, x))
			f->cell[(size_t)y * (size_t)f->cols + (size_t)x] = (frame_cell){.ch = ch, .style = (uint8_t)style};
	return x;
}

void frame_style(frame *f, int y, int x, int n, int style)
{
	for (int i = 0; i < n; i++, x++)
		if (writable(f, y, x))
			f->cell[(size_t)y * (size_t)f->cols + (size_t)x].style = (uint8_t)style;
}

static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3f));
	out[2] = (char)(0x80 | (c >> 6 & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

const char *frame_row(const frame *f, int y, char *buf, size_t size)
{
	if (!size)
		return buf;
	buf[0] = '\0';
	if (y < 0 || y >= f->rows)
		return buf;
	size_t len = 0, keep = 0; /* keep: the length up to the last non-blank */
	for (int x = 0; x < f->cols; x++) {
		char u[4];
		size_t n = put_utf8(u, f->cell[(size_t)y * (size_t)f->cols + (size_t)x].ch);
		if (len + n >= size)
			break;
		memcpy(buf + len, u, n);
		len += n;
		if (!(n == 1 && u[0] == ' '))
			keep = len;
	}
	buf[keep] = '\0';
	return buf;
}

int frame_width(const char *text)
{
	int n = 0;
	for (const char *s = text ? text : ""; *s; n++)
		next_cp(&s);
	return n;
}
