/*
 * Unit tests of the tap (core/tap.h), the ring between gpuvet run's copy of its command's output
 * and the matcher: records come back byte for byte however often the ring wraps; a write that
 * does not fit keeps what fits and drops the rest, counted with its newlines, and the reader is
 * told where the gap is; a writer without any reader, or with one far slower than it, never
 * waits; a reader asleep on an empty tap wakes for a write and for the close; the end reports the
 * bytes dropped after the last record.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/tap.h"
#include "core/util.h"

#define HDR 24 /* a record's header (tap.c) */

/* the byte at offset o of a test stream; a '\n' now and then */
static char at(unsigned long long o)
{
	return o % 97 == 96 ? '\n' : (char)('a' + (o * 7 + o / 251) % 26);
}

static void fill(char *p, unsigned long long from, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = at(from + i);
}

static unsigned long long newlines(unsigned long long from, unsigned long long n)
{
	unsigned long long k = 0;
	for (unsigned long long i = 0; i < n; i++)
		k += at(from + i) == '\n';
	return k;
}

/* Records of every size from 1 to 120 through a 256-byte ring, many times round. */
static void test_wrap(void **s)
{
	(void)s;
	gv_tap *t = gv_tap_new(256);
	char in[128], out[128];
	unsigned long long off = 0;
	for (int round = 0; round < 50; round++)
		for (size_t n = 1; n <= 120; n++) {
			fill(in, off, n);
			assert_int_equal(gv_tap_write(t, in, n), n);
			size_t got;
			gv_tap_gap gap;
			assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
			assert_int_equal(got, n);
			assert_int_equal(gap.bytes, 0);
			assert_memory_equal(in, out, n);
			off += n;
		}
	/* two records in the ring at once, across its end */
	fill(in, 0, 100);
	assert_int_equal(gv_tap_write(t, in, 100), 100);
	assert_int_equal(gv_tap_write(t, in + 50, 50), 50);
	size_t got;
	gv_tap_gap gap;
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(got, 100);
	assert_memory_equal(in, out, 100);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(got, 50);
	assert_memory_equal(in + 50, out, 50);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_EMPTY);
	assert_int_equal(gv_tap_offered(t), off + 150);
	assert_int_equal(gv_tap_dropped(t), 0);
	gv_tap_free(t);
}

/* A full tap drops; the part of a write that fits is kept; the next record carries the gap. */
static void test_drop_counting(void **s)
{
	(void)s;
	gv_tap *t = gv_tap_new(128);
	char in[512], out[512];
	fill(in, 0, sizeof(in));
	/* 200 bytes into 128 - HDR of room: the first 104 kept, 96 dropped */
	assert_int_equal(gv_tap_write(t, in, 200), 128 - HDR);
	assert_int_equal(gv_tap_dropped(t), 200 - (128 - HDR));
	/* full: a whole write dropped */
	assert_int_equal(gv_tap_write(t, in + 200, 50), 0);
	assert_int_equal(gv_tap_dropped(t), 146);
	assert_int_equal(gv_tap_offered(t), 250);
	size_t got;
	gv_tap_gap gap;
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(got, 128 - HDR);
	assert_int_equal(gap.bytes, 0);
	assert_memory_equal(in, out, got);
	/* room again: the next record says what was dropped before it, and its newlines */
	assert_int_equal(gv_tap_write(t, in + 250, 10), 10);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(got, 10);
	assert_memory_equal(in + 250, out, 10);
	assert_int_equal(gap.bytes, 146);
	assert_int_equal(gap.lines, newlines(104, 146));
	assert_true(gap.lines > 0);
	/* a drop after the last record: reported at the end */
	assert_int_equal(gv_tap_write(t, in, 120), 128 - HDR);
	assert_int_equal(gv_tap_write(t, in, 30), 0);
	gv_tap_close(t);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(gap.bytes, 0);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_END);
	assert_int_equal(gap.bytes, 120 - (128 - HDR) + 30);
	assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, -1), GV_TAP_END); /* and stays so */
	gv_tap_free(t);
}

/* A record longer than the reader's buffer comes in pieces, its gap with the first. */
static void test_long_record(void **s)
{
	(void)s;
	gv_tap *t = gv_tap_new(64);
	char in[100], out[16];
	fill(in, 0, sizeof(in));
	assert_int_equal(gv_tap_write(t, in, 100), 40);
	assert_int_equal(gv_tap_write(t, in, 1), 0); /* full */
	size_t got;
	gv_tap_gap gap;
	size_t seen = 0;
	while (seen < 40) {
		assert_int_equal(gv_tap_read(t, out, sizeof(out), &got, &gap, 0), GV_TAP_DATA);
		assert_int_equal(gap.bytes, 0);
		assert_memory_equal(in + seen, out, got);
		seen += got;
	}
	assert_int_equal(seen, 40);
	assert_int_equal(gv_tap_write(t, in, 5), 5);
	assert_int_equal(gv_tap_read(t, out, 2, &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(gap.bytes, 61);
	assert_int_equal(gv_tap_read(t, out, 2, &got, &gap, 0), GV_TAP_DATA);
	assert_int_equal(gap.bytes, 0);
	gv_tap_free(t);
}

/* With no reader at all, 64 MiB of writes into a 4 KiB tap return: the writer never waits. */
static void test_writer_never_waits(void **s)
{
	(void)s;
	gv_tap *t = gv_tap_new(4096);
	char *chunk = malloc(1 << 16);
	fill(chunk, 0, 1 << 16);
	size_t kept = 0;
	for (int i = 0; i < 1024; i++)
		kept += gv_tap_write(t, chunk, 1 << 16);
	assert_int_equal(kept, 4096 - HDR);
	assert_int_equal(gv_tap_offered(t), 64ull << 20);
	assert_int_equal(gv_tap_dropped(t), (64ull << 20) - kept);
	/* an empty read with a bound returns at the bound */
	gv_tap *e = gv_tap_new(256);
	size_t got;
	gv_tap_gap gap;
	assert_int_equal(gv_tap_read(e, chunk, 1 << 16, &got, &gap, 30), GV_TAP_EMPTY);
	assert_int_equal(got, 0);
	gv_tap_free(e);
	free(chunk);
	gv_tap_free(t);
}

/* A slow reader on its own thread: the writer goes on regardless; what the reader gets is the
 * stream in order, with exactly the dropped bytes (and their newlines) missing where it is told. */
struct reader {
	gv_tap *t;
	unsigned long long off, bytes, gaps, bad;
	int delay_every;
};

static void *read_all(void *arg)
{
	struct reader *r = arg;
	char buf[3000];
	for (int k = 0;; k++) {
		size_t n;
		gv_tap_gap gap;
		gv_tap_status st = gv_tap_read(r->t, buf, sizeof(buf), &n, &gap, -1);
		if (gap.bytes) {
			r->gaps++;
			if (gap.lines != newlines(r->off, gap.bytes))
				r->bad++;
			r->off += gap.bytes;
		}
		if (st == GV_TAP_END)
			break;
		for (size_t i = 0; i < n; i++)
			r->bad += buf[i] != at(r->off + i);
		r->off += n;
		r->bytes += n;
		if (r->delay_every && k % r->delay_every == 0) {
			struct timespec ts = {.tv_sec = 0, .tv_nsec = 200000};
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static void run_threaded(size_t cap, int delay_every, unsigned long long total, size_t chunk_max, bool expect_drops)
{
	gv_tap *t = gv_tap_new(cap);
	struct reader r = {.t = t, .delay_every = delay_every};
	pthread_t tid;
	assert_int_equal(pthread_create(&tid, NULL, read_all, &r), 0);
	char *chunk = malloc(chunk_max);
	unsigned long long off = 0;
	size_t n = 1;
	while (off < total) {
		n = n * 5 % chunk_max + 1; /* sizes of every kind */
		if (n > total - off)
			n = (size_t)(total - off);
		fill(chunk, off, n);
		gv_tap_write(t, chunk, n);
		off += n;
	}
	gv_tap_close(t);
	pthread_join(tid, NULL);
	assert_int_equal(r.bad, 0);
	assert_int_equal(r.off, total); /* every byte read or counted as dropped */
	assert_int_equal(r.bytes + gv_tap_dropped(t), total);
	assert_int_equal(gv_tap_offered(t), total);
	if (expect_drops)
		assert_true(r.gaps > 0);
	free(chunk);
	gv_tap_free(t);
}

static void test_threaded(void **s)
{
	(void)s;
	/* a reader that naps: drops, and the stream still reads true around them */
	run_threaded(8192, 1, 32ull << 20, 65536, true);
	/* a reader that keeps up with a large tap: whatever it gets is exact, asleep and woken often */
	run_threaded(1 << 20, 0, 16ull << 20, 4096, false);
}

/* A reader asleep on an empty tap wakes for a write and for the close. */
static void *late_writer(void *arg)
{
	gv_tap *t = arg;
	struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000000};
	nanosleep(&ts, NULL);
	gv_tap_write(t, "hello\n", 6);
	nanosleep(&ts, NULL);
	gv_tap_close(t);
	return NULL;
}

static void test_wake(void **s)
{
	(void)s;
	gv_tap *t = gv_tap_new(1024);
	pthread_t tid;
	assert_int_equal(pthread_create(&tid, NULL, late_writer, t), 0);
	char buf[16];
	size_t n;
	gv_tap_gap gap;
	assert_int_equal(gv_tap_read(t, buf, sizeof(buf), &n, &gap, -1), GV_TAP_DATA);
	assert_int_equal(n, 6);
	assert_memory_equal(buf, "hello\n", 6);
	assert_int_equal(gv_tap_read(t, buf, sizeof(buf), &n, &gap, -1), GV_TAP_END);
	assert_int_equal(gap.bytes, 0);
	pthread_join(tid, NULL);
	gv_tap_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wrap),
		cmocka_unit_test(test_drop_counting),
		cmocka_unit_test(test_long_record),
		cmocka_unit_test(test_writer_never_waits),
		cmocka_unit_test(test_threaded),
		cmocka_unit_test(test_wake),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
