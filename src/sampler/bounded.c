#include "sampler/bounded.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util.h"

/* Shared by the caller and the thread; the last of the two to let go frees it. */
struct take {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	sample_source src;
	snapshot *snap;
	char err[256];
	bool done;
	int refs;
};

static void release(struct take *t)
{
	pthread_mutex_lock(&t->mu);
	bool last = --t->refs == 0;
	pthread_mutex_unlock(&t->mu);
	if (!last)
		return;
	snapshot_free(t->snap); /* a take that finished after its caller gave up */
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

static void *run(void *arg)
{
	struct take *t = arg;
	char err[256] = "";
	snapshot *s = t->src.take(t->src.ctx, err, sizeof(err));
	pthread_mutex_lock(&t->mu);
	t->snap = s;
	str_copy(t->err, sizeof(t->err), err);
	t->done = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	release(t);
	return NULL;
}

snapshot *sample_take_within(const sample_source *src, double seconds, char *err, size_t errsize, bool *stuck)
{
	*stuck = false;
	struct take *t = xcalloc(1, sizeof(*t));
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->src = *src;
	t->refs = 2;
	pthread_t tid;
	if (pthread_create(&tid, NULL, run, t) != 0) {
		pthread_cond_destroy(&t->cv);
		pthread_mutex_destroy(&t->mu);
		free(t); /* no thread: the take in line, unbounded as before */
		return src->take(src->ctx, err, errsize);
	}
	pthread_detach(tid);
	double deadline = now_seconds() + seconds;
	pthread_mutex_lock(&t->mu);
	while (!t->done && now_seconds() < deadline) {
		struct timespec until; /* the condition's clock is the real time: a step at a time */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 50 * 1000 * 1000;
		if (until.tv_nsec >= 1000 * 1000 * 1000) {
			until.tv_sec++;
			until.tv_nsec -= 1000 * 1000 * 1000;
		}
		pthread_cond_timedwait(&t->cv, &t->mu, &until);
	}
	snapshot *s = NULL;
	if (t->done) {
		s = t->snap;
		t->snap = NULL;
		if (!s)
			str_copy(err, errsize, t->err);
	} else {
		*stuck = true;
		snprintf(err, errsize, "NVML did not answer within %.0f s (nvmlInit or a device query hangs)", seconds);
	}
	pthread_mutex_unlock(&t->mu);
	release(t);
	return s;
}
