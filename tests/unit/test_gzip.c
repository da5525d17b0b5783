/*
 * expo/gzip.h: a gzip member joined from a head compressed per answer and a body compressed once
 * inflates (zlib in gzip mode, and gzip(1)) to head then body, with a good CRC and length; the
 * Accept-Encoding rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/util.h"
#include "expo/gzip.h"

/* pre + tail + trailer inflated as gzip (windowBits 16+15): the whole stream must end at the
 * trailer's last byte. */
static char *gunzip(const unsigned char *pre, size_t pre_len, const expo_deflated *tail, const unsigned char *trailer,
		    size_t *out_len)
{
	size_t n = pre_len + (tail ? tail->len : 0) + 8;
	unsigned char *all = xmalloc(n);
	memcpy(all, pre, pre_len);
	if (tail)
		memcpy(all + pre_len, tail->data, tail->len);
	memcpy(all + n - 8, trailer, 8);
	z_stream z;
	memset(&z, 0, sizeof(z));
	assert_int_equal(inflateInit2(&z, 16 + 15), Z_OK);
	strbuf sb;
	sb_init(&sb);
	unsigned char buf[4096];
	z.next_in = all;
	z.avail_in = (uInt)n;
	int rc;
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		rc = inflate(&z, Z_NO_FLUSH);
		assert_true(rc == Z_OK || rc == Z_STREAM_END); /* Z_DATA_ERROR: a bad CRC or length */
		sb_addn(&sb, (const char *)buf, sizeof(buf) - z.avail_out);
	} while (rc != Z_STREAM_END);
	assert_int_equal(z.avail_in, 0); /* one member, nothing after it */
	inflateEnd(&z);
	free(all);
	*out_len = sb.len;
	return sb_steal(&sb);
}

static char *pattern(size_t n, unsigned seed)
{
	char *s = xmalloc(n + 1);
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		/* exposition-like: repeated names, changing digits */
		s[i] = (i % 80 == 79) ? '\n' : "gpuvet_gpu_memory_used_bytes{gpu=\"0\"} 0123456789"[(seed >> 16) % 48];
	}
	s[n] = '\0';
	return s;
}

static void join_and_check(const char *head, size_t hl, const char *body, size_t bl)
{
	expo_deflated d;
	assert_true(expo_deflate(body, bl, &d));
	unsigned char *pre, trailer[8];
	size_t pre_len, len;
	assert_true(expo_gzip_join(head, hl, &d, &pre, &pre_len, trailer));
	char *out = gunzip(pre, pre_len, &d, trailer, &len);
	assert_int_equal(len, hl + bl);
	assert_memory_equal(out, head, hl);
	assert_memory_equal(out + hl, body, bl);
	free(out);
	free(pre);
	expo_deflated_free(&d);
}

static void test_join(void **s)
{
	(void)s;
	join_and_check("# HELP gpuvet_sampler_up x\n", 27, "gpuvet_gpus 8\n", 14);
	join_and_check("", 0, "body\n", 5);
	join_and_check("head\n", 5, "", 0);
	/* a body far above the window (32 KiB), a head of several deflate buffers */
	char *head = pattern(40000, 1), *body = pattern(300000, 2);
	join_and_check(head, strlen(head), body, strlen(body));
	/* the body compressed once, joined to two different heads */
	expo_deflated d;
	assert_true(expo_deflate(body, strlen(body), &d));
	for (int k = 0; k < 2; k++) {
		char *h = pattern(1000 + 500 * k, 3 + k);
		unsigned char *pre, trailer[8];
		size_t pre_len, len;
		assert_true(expo_gzip_join(h, strlen(h), &d, &pre, &pre_len, trailer));
		char *out = gunzip(pre, pre_len, &d, trailer, &len);
		assert_int_equal(len, strlen(h) + strlen(body));
		assert_memory_equal(out + strlen(h), body, strlen(body));
		free(out);
		free(pre);
		free(h);
	}
	expo_deflated_free(&d);
	free(head);
	free(body);
}

static void test_head_alone(void **s)
{
	(void)s;
	const char *h = "# HELP gpuvet_sampler_up 1 when the last NVML sample succeeded\n";
	unsigned char *pre, trailer[8];
	size_t pre_len, len;
	assert_true(expo_gzip_join(h, strlen(h), NULL, &pre, &pre_len, trailer));
	char *out = gunzip(pre, pre_len, NULL, trailer, &len);
	assert_int_equal(len, strlen(h));
	assert_memory_equal(out, h, len);
	free(out);
	free(pre);
}

/* gzip(1), a reader of its own, takes the joined member */
static void test_gzip_tool(void **s)
{
	(void)s;
	char *body = pattern(100000, 9);
	const char *h = "status 1\n";
	expo_deflated d;
	assert_true(expo_deflate(body, strlen(body), &d));
	unsigned char *pre, trailer[8];
	size_t pre_len;
	assert_true(expo_gzip_join(h, strlen(h), &d, &pre, &pre_len, trailer));
	const char *tmpdir = getenv("TMPDIR");
	char *tpl = xasprintf("%s/gpuvet-gz-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	int fd = mkstemp(tpl);
	assert_true(fd >= 0);
	FILE *fp = fdopen(fd, "wb");
	fwrite(pre, 1, pre_len, fp);
	fwrite(d.data, 1, d.len, fp);
	fwrite(trailer, 1, 8, fp);
	fclose(fp);
	char *cmd = xasprintf("gzip -t < '%s' && gzip -dc < '%s' | wc -c", tpl, tpl);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	long n = -1;
	assert_int_equal(fscanf(p, "%ld", &n), 1);
	pclose(p);
	assert_int_equal(n, (long)(strlen(h) + strlen(body)));
	unlink(tpl);
	free(cmd);
	free(tpl);
	free(pre);
	expo_deflated_free(&d);
	free(body);
}

static void test_accepted(void **s)
{
	(void)s;
	const char *yes[] = {"gzip", "GZIP", "x-gzip", "deflate, gzip", "gzip;q=0.5", "gzip; q=1", "br;q=1.0, gzip;q=0.8",
			     "*", "*;q=0.1", "identity, *", "gzip,deflate,br"};
	const char *no[] = {NULL, "", "identity", "deflate", "br", "gzip;q=0", "gzip;q=0.0, *", "*;q=0", "gzipx",
			    "gzip;q=-1", "gzip;q=2", "gzip;q=abc", " , ,", "identity;q=0"};
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		if (!expo_gzip_accepted(yes[i]))
			fail_msg("Accept-Encoding %s: gzip expected", yes[i]);
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (expo_gzip_accepted(no[i]))
			fail_msg("Accept-Encoding %s: no gzip expected", no[i] ? no[i] : "(none)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_join),
		cmocka_unit_test(test_head_alone),
		cmocka_unit_test(test_gzip_tool),
		cmocka_unit_test(test_accepted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
