/*
 * The tap (tap.h). Positions are byte counts since the start (64 bits: they never wrap); a
 * position's place in the ring is its remainder by the capacity. head: the end of what the writer
 * has published; tail: the end of what the reader has consumed. Each record is a header
 * (struct rec) and its bytes, either of which may wrap around the ring's end.
 */
#include "core/tap.h"

#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/util.h"

struct rec {
	uint64_t len;       /* bytes of the record after this header */
	uint64_t gap_bytes; /* dropped just before them */
	uint64_t gap_lines;
};

struct gv_tap {
	char *buf;
	size_t cap;
	int efd; /* the reader's wake-up; -1 without one (the reader then naps) */
	_Atomic uint64_t head, tail;
	_Atomic bool closed, sleeping;
	_Atomic unsigned long long offered, dropped;
	/* the writer's alone: dropped since its last record */
	uint64_t pend_bytes, pend_lines;
	/* the gap after the last record, set before closed */
	uint64_t end_bytes, end_lines;
	/* the reader's alone: bytes left of the record it is in */
	uint64_t rem;
};

gv_tap *gv_tap_new(size_t capacity)
{
	gv_tap *t = xcalloc(1, sizeof(*t));
	t->cap = capacity < 64 ? 64 : capacity;
	t->buf = xmalloc(t->cap);
	t->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return t;
}

void gv_tap_free(gv_tap *t)
{
	if (!t)
		return;
	if (t->efd >= 0)
		close(t->efd);
	free(t->buf);
	free(t);
}

static void put(gv_tap *t, uint64_t pos, const void *src, size_t n)
{
	size_t at = (size_t)(pos % t->cap), first = t->cap - at < n ? t->cap - at : n;
	memcpy(t->buf + at, src, first);
	memcpy(t->buf, (const char *)src + first, n - first);
}

static void get(const gv_tap *t, uint64_t pos, void *dst, size_t n)
{
	size_t at = (size_t)(pos % t->cap), first = t->cap - at < n ? t->cap - at : n;
	memcpy(dst, t->buf + at, first);
	memcpy((char *)dst + first, t->buf, n - first);
}

static uint64_t count_lines(const char *p, size_t n)
{
	uint64_t k = 0;
	const char *end = p + n;
	while (p < end && (p = memchr(p, '\n', (size_t)(end - p)))) {
		k++;
		p++;
	}
	return k;
}

static void drop(gv_tap *t, const char *p, size_t n)
{
	t->pend_bytes += n;
	t->pend_lines += count_lines(p, n);
	atomic_fetch_add_explicit(&t->dropped, n, memory_order_relaxed);
}

/* The reader may be asleep: wake it. seq_cst with its own store of sleeping and load of head
 * (gv_tap_read): either it sees what was just published or this sees it asleep. */
static void wake(gv_tap *t)
{
	atomic_thread_fence(memory_order_seq_cst);
	if (t->efd >= 0 && atomic_load(&t->sleeping)) {
		uint64_t one = 1;
		ssize_t w = write(t->efd, &one, sizeof(one)); /* non-blocking; a full counter is a wake-up already */
		(void)w;
	}
}

size_t gv_tap_write(gv_tap *t, const void *p, size_t n)
{
	if (!n)
		return 0;
	atomic_fetch_add_explicit(&t->offered, n, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&t->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&t->tail, memory_order_acquire);
	size_t room = t->cap - (size_t)(head - tail);
	if (room <= sizeof(struct rec)) {
		drop(t, p, n);
		return 0;
	}
	size_t k = room - sizeof(struct rec) < n ? room - sizeof(struct rec) : n;
	struct rec r = {.len = k, .gap_bytes = t->pend_bytes, .gap_lines = t->pend_lines};
	put(t, head, &r, sizeof(r));
	put(t, head + sizeof(r), p, k);
	t->pend_bytes = t->pend_lines = 0;
	if (k < n)
		drop(t, (const char *)p + k, n - k);
	atomic_store_explicit(&t->head, head + sizeof(r) + k, memory_order_release);
	wake(t);
	return k;
}

void gv_tap_close(gv_tap *t)
{
	t->end_bytes = t->pend_bytes;
	t->end_lines = t->pend_lines;
	atomic_store_explicit(&t->closed, true, memory_order_release);
	wake(t);
}

/* Sleeps until the writer may have written (or closed), at most timeout_ms (-1: no bound). */
static void nap(gv_tap *t, int timeout_ms)
{
	if (t->efd < 0) { /* no eventfd: short naps */
		int ms = timeout_ms < 0 || timeout_ms > 5 ? 5 : timeout_ms;
		sleep_seconds(ms / 1000.0);
		return;
	}
	struct pollfd pf = {.fd = t->efd, .events = POLLIN};
	if (poll(&pf, 1, timeout_ms) > 0) {
		uint64_t v;
		ssize_t r = read(t->efd, &v, sizeof(v));
		(void)r;
	}
}

gv_tap_status gv_tap_read(gv_tap *t, void *buf, size_t cap, size_t *n, gv_tap_gap *gap, int timeout_ms)
{
	*n = 0;
	*gap = (gv_tap_gap){0};
	double until = timeout_ms >= 0 ? now_seconds() + timeout_ms / 1000.0 : 0;
	uint64_t tail = atomic_load_explicit(&t->tail, memory_order_relaxed);
	for (;;) {
		uint64_t head = atomic_load_explicit(&t->head, memory_order_acquire);
		if (head != tail) {
			if (!t->rem) {
				struct rec r;
				get(t, tail, &r, sizeof(r));
				tail += sizeof(r);
				t->rem = r.len;
				gap->bytes = r.gap_bytes;
				gap->lines = r.gap_lines;
			}
			size_t k = t->rem < cap ? (size_t)t->rem : cap;
			get(t, tail, buf, k);
			t->rem -= k;
			atomic_store_explicit(&t->tail, tail + k, memory_order_release);
			*n = k;
			return GV_TAP_DATA;
		}
		if (atomic_load_explicit(&t->closed, memory_order_acquire)) {
			/* closed after its last record was published: one more look, then the end */
			if (atomic_load_explicit(&t->head, memory_order_acquire) != tail)
				continue;
			gap->bytes = t->end_bytes;
			gap->lines = t->end_lines;
			return GV_TAP_END;
		}
		int left = -1;
		if (timeout_ms >= 0) {
			double l = until - now_seconds();
			if (l <= 0)
				return GV_TAP_EMPTY;
			left = (int)(l * 1000) + 1;
		}
		atomic_store(&t->sleeping, true);
		/* seq_cst against wake(): a record published before this store is seen here */
		if (atomic_load(&t->head) == tail && !atomic_load(&t->closed))
			nap(t, left);
		atomic_store(&t->sleeping, false);
	}
}

unsigned long long gv_tap_offered(const gv_tap *t)
{
	return atomic_load_explicit(&t->offered, memory_order_relaxed);
}

unsigned long long gv_tap_dropped(const gv_tap *t)
{
	return atomic_load_explicit(&t->dropped, memory_order_relaxed);
}
