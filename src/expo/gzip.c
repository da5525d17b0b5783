/* gzip members from a head compressed per answer and a body compressed once (expo/gzip.h). */
#include "expo/gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "core/util.h"

/* raw deflate (no zlib or gzip wrapper: the gzip header and trailer are ours) */
static bool deflate_init(z_stream *z)
{
	memset(z, 0, sizeof(*z));
	return deflateInit2(z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) == Z_OK;
}

/* All of in through deflate with flush (Z_FINISH, Z_SYNC_FLUSH), appended to sb. */
static bool deflate_all(z_stream *z, const char *in, size_t len, int flush, strbuf *sb)
{
	z->next_in = (Bytef *)(uintptr_t)in;
	z->avail_in = (uInt)len;
	unsigned char buf[16384];
	for (;;) {
		z->next_out = buf;
		z->avail_out = sizeof(buf);
		int rc = deflate(z, flush);
		if (rc == Z_STREAM_ERROR)
			return false;
		sb_addn(sb, (const char *)buf, sizeof(buf) - z->avail_out);
		if (flush == Z_FINISH ? rc == Z_STREAM_END : z->avail_out != 0)
			return true;
	}
}

bool expo_deflate(const char *in, size_t len, expo_deflated *out)
{
	memset(out, 0, sizeof(*out));
	z_stream z;
	if (len > 0xffffffffu || !deflate_init(&z))
		return false;
	strbuf sb;
	sb_init(&sb);
	bool ok = deflate_all(&z, in, len, Z_FINISH, &sb);
	deflateEnd(&z);
	if (!ok) {
		sb_free(&sb);
		return false;
	}
	out->len = sb.len;
	out->data = (unsigned char *)sb_steal(&sb);
	out->crc = crc32(crc32(0, Z_NULL, 0), (const Bytef *)in, (uInt)len);
	out->in_len = len;
	return true;
}

void expo_deflated_free(expo_deflated *d)
{
	free(d->data);
	memset(d, 0, sizeof(*d));
}

static void put_le32(unsigned char *p, unsigned long v)
{
	p[0] = (unsigned char)(v & 0xff);
	p[1] = (unsigned char)((v >> 8) & 0xff);
	p[2] = (unsigned char)((v >> 16) & 0xff);
	p[3] = (unsigned char)((v >> 24) & 0xff);
}

bool expo_gzip_join(const char *head, size_t head_len, const expo_deflated *tail, unsigned char **pre, size_t *pre_len,
		    unsigned char trailer[8])
{
	*pre = NULL;
	*pre_len = 0;
	z_stream z;
	if (head_len > 0xffffffffu || !deflate_init(&z))
		return false;
	strbuf sb;
	sb_init(&sb);
	/* ID1 ID2, deflate, no flags, no mtime, no extra flags, OS unknown */
	static const char header[10] = {0x1f, (char)0x8b, 8, 0, 0, 0, 0, 0, 0, (char)0xff};
	sb_addn(&sb, header, sizeof(header));
	bool ok = deflate_all(&z, head, head_len, tail ? Z_SYNC_FLUSH : Z_FINISH, &sb);
	deflateEnd(&z);
	if (!ok) {
		sb_free(&sb);
		return false;
	}
	unsigned long crc = crc32(crc32(0, Z_NULL, 0), (const Bytef *)head, (uInt)head_len);
	size_t total = head_len;
	if (tail) {
		crc = crc32_combine(crc, tail->crc, (z_off_t)tail->in_len);
		total += tail->in_len;
	}
	put_le32(trailer, crc);
	put_le32(trailer + 4, (unsigned long)(total & 0xffffffffu));
	*pre_len = sb.len;
	*pre = (unsigned char *)sb_steal(&sb);
	return true;
}

/* q of one coding's parameters ("q=0.5"); 1 without one, -1 for a q that is not 0 to 1 */
static double coding_q(const char *p, size_t len)
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

bool expo_gzip_accepted(const char *accept_encoding)
{
	if (!accept_encoding)
		return false;
	double q_gzip = -1, q_any = -1;
	const char *p = accept_encoding;
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		const char *s = p;
		while (len && (*s == ' ' || *s == '\t'))
			s++, len--;
		const char *semi = memchr(s, ';', len);
		size_t tlen = semi ? (size_t)(semi - s) : len;
		while (tlen && (s[tlen - 1] == ' ' || s[tlen - 1] == '\t'))
			tlen--;
		double q = semi ? coding_q(semi + 1, len - (size_t)(semi + 1 - s)) : 1;
		if ((tlen == 4 && strncasecmp(s, "gzip", 4) == 0) || (tlen == 6 && strncasecmp(s, "x-gzip", 6) == 0))
			q_gzip = q > q_gzip ? q : q_gzip;
		else if (tlen == 1 && *s == '*')
			q_any = q > q_any ? q : q_any;
		if (!comma)
			break;
		p = comma + 1;
	}
	return q_gzip >= 0 ? q_gzip > 0 : q_any > 0;
}
