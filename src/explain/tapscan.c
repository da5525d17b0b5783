#include "explain/tapscan.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/tap.h"
#include "core/util.h"

/* the scanner's nice value: on a busy machine the command and the copy come first */
#define SCANNER_NICE 19

struct tapscan {
	sig_scan *scan;
	gv_tap *tap;
	pthread_t tid;
	bool threaded, finished;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;                 /* under mu: the scanner has read the end */
	_Atomic bool stop;         /* tapscan_finish's time is up: read the rest unscanned */
	unsigned long long abandoned; /* the scanner's: bytes read after stop (read by finish after the join) */
	unsigned long long inline_fed; /* without a thread */
};

static void *scanner(void *arg)
{
	tapscan *t = arg;
	/* Linux: the nice value of this thread alone (setpriority(2)); the matcher takes what CPU is
	 * left, and what it cannot keep up with is dropped from the tap, never waited for */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), SCANNER_NICE) != 0) {
	}
	char *buf = xmalloc(1 << 16);
	for (;;) {
		size_t n;
		gv_tap_gap gap;
		gv_tap_status st = gv_tap_read(t->tap, buf, 1 << 16, &n, &gap, -1);
		bool stopped = atomic_load(&t->stop);
		if (!stopped)
			sig_scan_gap(t->scan, gap.bytes, (unsigned long)gap.lines);
		if (st == GV_TAP_END)
			break;
		if (st != GV_TAP_DATA)
			continue;
		if (stopped)
			t->abandoned += n;
		else
			sig_scan_feed(t->scan, buf, n);
	}
	free(buf);
	pthread_mutex_lock(&t->mu);
	t->done = true;
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

tapscan *tapscan_start(const sig_catalogue *c, size_t tap_bytes)
{
	tapscan *t = xcalloc(1, sizeof(*t));
	t->scan = sig_scan_new(c);
	t->tap = gv_tap_new(tap_bytes);
	pthread_mutex_init(&t->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&t->cv, &ca);
	pthread_condattr_destroy(&ca);
	t->threaded = pthread_create(&t->tid, NULL, scanner, t) == 0;
	return t;
}

void tapscan_feed(tapscan *t, const char *p, size_t n)
{
	if (t->threaded) {
		gv_tap_write(t->tap, p, n);
	} else {
		sig_scan_feed(t->scan, p, n);
		t->inline_fed += n;
	}
}

sig_scan *tapscan_finish(tapscan *t, double seconds)
{
	if (t->threaded && !t->finished) {
		gv_tap_close(t->tap);
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		double s = seconds > 0 ? (seconds < 1e6 ? seconds : 1e6) : 0;
		until.tv_sec += (time_t)s;
		until.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_mutex_lock(&t->mu);
		while (!t->done && pthread_cond_timedwait(&t->cv, &t->mu, &until) == 0)
			;
		pthread_mutex_unlock(&t->mu);
		atomic_store(&t->stop, true); /* a no-op when it is done; else the rest goes unscanned, quickly */
		pthread_join(t->tid, NULL);
	}
	t->finished = true;
	return t->scan;
}

unsigned long long tapscan_fed(const tapscan *t)
{
	return t->threaded ? gv_tap_offered(t->tap) : t->inline_fed;
}

unsigned long long tapscan_unscanned(const tapscan *t)
{
	/* abandoned: the scanner's, read after the join (tapscan_finish) */
	return t->threaded ? gv_tap_dropped(t->tap) + (t->finished ? t->abandoned : 0) : 0;
}

void tapscan_free(tapscan *t)
{
	if (!t)
		return;
	tapscan_finish(t, 0);
	sig_scan_free(t->scan);
	gv_tap_free(t->tap);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
	free(t);
}
