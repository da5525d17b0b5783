#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "probes/deadline.h"
#include "core/sysroot.h"
#include "nvidia/libfile.h"

struct deadline_job {
	void (*body)(facts *, const probe_opts *);
	probe_opts o;
	facts *f;
	pthread_mutex_t m;
	pthread_cond_t c;
	bool done, abandoned;
};

static void job_free(struct deadline_job *j)
{
	facts_free(j->f);
	pthread_mutex_destroy(&j->m);
	pthread_cond_destroy(&j->c);
	free(j);
}

static void *worker(void *arg)
{
	struct deadline_job *j = arg;
	j->body(j->f, &j->o);
	pthread_mutex_lock(&j->m);
	j->done = true;
	bool abandoned = j->abandoned;
	pthread_cond_signal(&j->c);
	pthread_mutex_unlock(&j->m);
	if (abandoned) /* nobody waits any more: the last one out frees */
		job_free(j);
	return NULL;
}

bool probe_run_with_deadline(facts *f, void (*body)(facts *, const probe_opts *), const probe_opts *o,
			     double seconds)
{
	struct deadline_job *j = xcalloc(1, sizeof(*j));
	j->body = body;
	j->o = *o;
	j->f = facts_new();
	pthread_mutex_init(&j->m, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&j->c, &ca);
	pthread_condattr_destroy(&ca);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_t tid;
	bool started = pthread_create(&tid, &attr, worker, j) == 0;
	pthread_attr_destroy(&attr);
	if (!started) { /* no thread: run inline, without a deadline rather than not at all */
		body(f, o);
		job_free(j);
		return true;
	}
	struct timespec until;
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += (time_t)seconds;
	until.tv_nsec += (long)((seconds - (double)(time_t)seconds) * 1e9);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&j->m);
	while (!j->done) {
		int rc = pthread_cond_timedwait(&j->c, &j->m, &until);
		if (rc == ETIMEDOUT)
			break;
	}
	bool done = j->done;
	if (!done)
		j->abandoned = true;
	pthread_mutex_unlock(&j->m);
	if (done) {
		facts_move(f, j->f);
		job_free(j);
	}
	return done;
}

void probe_run_driver_body(facts *f, void (*body)(facts *, const probe_opts *), const probe_opts *o, double seconds,
			   const char *source, const char *who, const char *detail, const char *init_key,
			   const char *timeout_key)
{
	if (probe_run_with_deadline(f, body, o, seconds))
		return;
	char why[200];
	snprintf(why, sizeof(why), "%s did not answer within %.0f s%s", who, seconds, detail);
	facts_put_state(f, FACT_ERROR, source, why, "%s", init_key);
	facts_put_bool(f, source, true, "%s", timeout_key);
}

bool probe_put_library_failed(facts *f, const gv_child_report *r, const char *env, const char *prefix,
			      const char *library_key, const char *version_key, char *what, size_t size)
{
	gv_child_describe(r, what, size);
	const char *src = getenv(env) && *getenv(env) ? env : "dlopen";
	bool loading = strcmp(r->call, "dlopen") == 0 && r->in_call;
	if (loading || !r->call[0])
		facts_put_state(f, FACT_ERROR, src, what, "%s", library_key);
	else
		facts_put_str(f, src, sysroot_strip(r->file), "%s", library_key);
	char path[PATH_MAX], ver[64];
	if (gv_driver_lib_find(prefix, path, sizeof(path), ver, sizeof(ver)))
		facts_put_str(f, path, ver, "%s", version_key);
	return loading;
}
