/* gzip members from a head compressed per answer and a body compressed once (expo/gzip.h). */
#include "expo/gzip.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#include "core/util.h"
#include "expo/expo.h"

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

struct coding_q {
	double gzip, any;
};

static void coding_item(const char *s, size_t len, double q, void *arg)
{
	struct coding_q *c = arg;
	if ((len == 4 && strncasecmp(s, "gzip", 4) == 0) || (len == 6 && strncasecmp(s, "x-gzip", 6) == 0))
		c->gzip = q > c->gzip ? q : c->gzip;
	else if (len == 1 && *s == '*')
		c->any = q > c->any ? q : c->any;
}

bool expo_gzip_accepted(const char *accept_encoding)
{
	struct coding_q c = {-1, -1};
	expo_header_each(accept_encoding, coding_item, &c);
	return c.gzip >= 0 ? c.gzip > 0 : c.any > 0;
}
