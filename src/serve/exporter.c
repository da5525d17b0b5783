#include "serve/exporter.h"
#include "core/cli.h"
#include "core/proc.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cjson/cJSON.h>
#include <time.h>

#include "core/util.h"
#include "diagnose/diagnose.h"
#include "kb/kb.h"

struct exporter {
	exporter_opts o;
	sample_source src;
	health_tracker health; /* sampler thread only */

	pthread_mutex_t mu; /* guards what follows */
	pthread_cond_t wake;
	bool stopping;
	expo_body *body;
	double last_good_mono, last_good_wall, last_attempt_mono;
	bool up, have_good;
	unsigned long long samples, errors;
	char last_error[256];
	snapshot *last_good; /* sampler thread writes; kept for renders after failures */
	/* the periodic check */
	bool have_check;
	double check_wall, check_seconds;
	size_t nfindings;
	metrics_finding *findings;

	pthread_t sampler_tid, checker_tid;
	bool sampler_started, checker_started;
};

void expo_body_unref(expo_body *b)
{
	if (b && atomic_fetch_sub_explicit((_Atomic int *)&b->refs, 1, memory_order_acq_rel) == 1) {
		free(b->text);
		free(b->om);
		expo_deflated_free(&b->text_gz);
		expo_deflated_free(&b->om_gz);
		free(b);
	}
}

static char *render_body(exporter *ex, const snapshot *s, expo_format fmt, size_t *len)
{
	metrics_input in = {0};
	in.snap = s;
	in.kb = kb_global();
	in.health = &ex->health;
	in.dcgm = ex->o.dcgm;
	in.dcgm_model_name = ex->o.dcgm_model_name;
	in.processes = ex->o.processes;
	in.process_series_max = ex->o.process_series_max;
	in.hostname = ex->o.hostname;
	pthread_mutex_lock(&ex->mu);
	in.have_check = ex->have_check;
	in.check_wall_time = ex->check_wall;
	in.check_seconds = ex->check_seconds;
	in.nfindings = ex->nfindings;
	metrics_finding *copy = NULL;
	if (ex->nfindings) {
		copy = xmalloc(ex->nfindings * sizeof(*copy));
		memcpy(copy, ex->findings, ex->nfindings * sizeof(*copy));
	}
	pthread_mutex_unlock(&ex->mu);
	in.findings = copy;
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, fmt);
	metrics_render(&e, &in);
	expo_finish(&e);
	free(copy);
	*len = sb.len;
	return sb_steal(&sb);
}

void exporter_tick(exporter *ex)
{
	char err[256] = "";
	double t0 = now_seconds();
	snapshot *s = ex->src.take(ex->src.ctx, err, sizeof(err));
	double now = now_seconds();
	if (s) {
		health_update(&ex->health, s, now);
		snapshot_free(ex->last_good);
		ex->last_good = s;
	} else if (ex->o.verbose) {
		pthread_mutex_lock(&ex->mu);
		bool same = strcmp(err, ex->last_error) == 0;
		pthread_mutex_unlock(&ex->mu);
		if (!same)
			fprintf(stderr, "gpuvet: sampler: %s\n", err);
	}
	/* the body is rendered again after a failure too, so findings of a late check show up;
	 * its GPU series are those of the last good snapshot */
	expo_body *b = xcalloc(1, sizeof(*b));
	b->refs = 1;
	b->text = render_body(ex, ex->last_good, EXPO_TEXT, &b->text_len);
	b->om = render_body(ex, ex->last_good, EXPO_OPENMETRICS, &b->om_len);
	pthread_mutex_lock(&ex->mu);
	expo_body *old = ex->body;
	ex->body = b;
	ex->last_attempt_mono = now;
	ex->up = s != NULL;
	if (s) {
		ex->samples++;
		ex->have_good = true;
		ex->last_good_mono = s->time > 0 ? s->time : t0;
		ex->last_good_wall = s->wall_time > 0 ? s->wall_time : (double)time(NULL);
		ex->last_error[0] = '\0';
	} else {
		ex->errors++;
		str_copy(ex->last_error, sizeof(ex->last_error), err[0] ? err : "sample failed");
	}
	pthread_mutex_unlock(&ex->mu);
	expo_body_unref(old);
}

static void timespec_after(struct timespec *ts, double seconds)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	double whole = floor(seconds);
	ts->tv_sec += (time_t)whole;
	ts->tv_nsec += (long)((seconds - whole) * 1e9);
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* Sleeps until stopping or seconds passed; returns false when stopping. */
static bool nap(exporter *ex, double seconds)
{
	struct timespec ts;
	timespec_after(&ts, seconds > 0 ? seconds : 0);
	pthread_mutex_lock(&ex->mu);
	while (!ex->stopping) {
		if (pthread_cond_timedwait(&ex->wake, &ex->mu, &ts) != 0)
			break;
	}
	bool go = !ex->stopping;
	pthread_mutex_unlock(&ex->mu);
	return go;
}

static void *sampler_main(void *arg)
{
	exporter *ex = arg;
	double next = now_seconds();
	for (;;) {
		exporter_tick(ex);
		next += ex->o.interval;
		double now = now_seconds();
		if (next < now) /* a slow sample: do not try to catch up with a burst */
			next = now + ex->o.interval;
		if (!nap(ex, next - now))
			break;
	}
	return NULL;
}

/* One series per id: the first is the most severe after sorting. */
static size_t add_finding(metrics_finding **v, size_t n, const char *id, severity sev)
{
	for (size_t k = 0; k < n; k++)
		if (strcmp((*v)[k].id, id) == 0)
			return n;
	*v = xrealloc(*v, (n + 1) * sizeof(**v));
	memset(&(*v)[n], 0, sizeof(**v));
	str_copy((*v)[n].id, sizeof((*v)[n].id), id);
	(*v)[n].sev = sev;
	return n + 1;
}

/* The periodic check runs as a child (`gpuvet check --json`), so that what it loads (libcuda,
 * the Python layer's file scans) and anything that goes wrong in a probe stay out of the
 * long-lived exporter. Returns false when the child could not be run; the caller then checks
 * in process. */
static bool check_in_child(exporter *ex, metrics_finding **v, size_t *n)
{
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0)
		return false;
	exe[len] = '\0';
	/* only gpuvet itself: a test program embedding the exporter must not start itself again */
	const char *base = strrchr(exe, '/');
	if (!str_starts(base ? base + 1 : exe, "gpuvet"))
		return false;
	char *argv[12];
	int a = 0;
	argv[a++] = exe;
	if (gopts.root) {
		static char root_opt[4200];
		snprintf(root_opt, sizeof(root_opt), "--root=%s", gopts.root);
		argv[a++] = root_opt;
	}
	if (gopts.kb_dir) {
		static char kb_opt[4200];
		snprintf(kb_opt, sizeof(kb_opt), "--kb=%s", gopts.kb_dir);
		argv[a++] = kb_opt;
	}
	argv[a++] = "check";
	argv[a++] = "--json";
	argv[a++] = "--no-history";
	if (!ex->o.check_full)
		argv[a++] = "--fast";
	argv[a] = NULL;
	proc_result r;
	if (proc_run(argv, NULL, NULL, 120000, 64 << 20, &r) != 0 || r.timed_out || r.signal) {
		proc_result_free(&r);
		return false;
	}
	cJSON *doc = cJSON_ParseWithLength(r.out, r.out_len);
	proc_result_free(&r);
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "findings");
	if (!cJSON_IsArray(arr)) {
		cJSON_Delete(doc);
		return false;
	}
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
	{
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
		const cJSON *sv = cJSON_GetObjectItemCaseSensitive(x, "severity");
		severity sev;
		if (cJSON_IsString(id) && cJSON_IsString(sv) && severity_parse(sv->valuestring, &sev))
			*n = add_finding(v, *n, id->valuestring, sev);
	}
	cJSON_Delete(doc);
	return true;
}

void exporter_run_check(exporter *ex)
{
	double t0 = now_seconds();
	metrics_finding *v = NULL;
	size_t n = 0;
	bool ok = check_in_child(ex, &v, &n);
	pthread_mutex_lock(&ex->mu);
	bool stopping = ex->stopping;
	pthread_mutex_unlock(&ex->mu);
	if (!ok && stopping) { /* the check was killed because we stop: no second one in-process */
		free(v);
		return;
	}
	if (!ok) {
		free(v);
		v = NULL;
		n = 0;
		facts *f = facts_new();
		probe_opts po = {.fast = !ex->o.check_full, .no_python = !ex->o.check_full, .python_timeout_ms = 20000};
		diagnose_opts o = {.probes = &po};
		findings fs;
		findings_init(&fs);
		diagnose(f, &o, &fs);
		for (size_t i = 0; i < fs.n; i++)
			n = add_finding(&v, n, fs.v[i].id, fs.v[i].sev);
		findings_free(&fs);
		facts_free(f);
	}
	pthread_mutex_lock(&ex->mu);
	free(ex->findings);
	ex->findings = v;
	ex->nfindings = n;
	ex->have_check = true;
	ex->check_wall = (double)time(NULL);
	ex->check_seconds = now_seconds() - t0;
	pthread_mutex_unlock(&ex->mu);
}

static void *checker_main(void *arg)
{
	exporter *ex = arg;
	do
		exporter_run_check(ex);
	while (nap(ex, ex->o.check_interval));
	return NULL;
}

static exporter *exporter_new(const exporter_opts *o, sample_source src)
{
	exporter *ex = xcalloc(1, sizeof(*ex));
	ex->o = *o;
	if (ex->o.interval <= 0)
		ex->o.interval = 1;
	ex->src = src;
	health_init(&ex->health, o->health);
	pthread_mutex_init(&ex->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* nap() waits on the monotonic clock */
	pthread_cond_init(&ex->wake, &ca);
	pthread_condattr_destroy(&ca);
	return ex;
}

exporter *exporter_start(const exporter_opts *o, sample_source src)
{
	exporter *ex = exporter_new(o, src);
	ex->sampler_started = pthread_create(&ex->sampler_tid, NULL, sampler_main, ex) == 0;
	if (o->check_interval > 0)
		ex->checker_started = pthread_create(&ex->checker_tid, NULL, checker_main, ex) == 0;
	return ex;
}

exporter *exporter_new_unthreaded(const exporter_opts *o, sample_source src)
{
	exporter *ex = exporter_new(o, src);
	if (o->check_interval > 0)
		exporter_run_check(ex);
	return ex;
}

void exporter_request_stop(exporter *ex)
{
	if (!ex)
		return;
	pthread_mutex_lock(&ex->mu);
	ex->stopping = true;
	pthread_cond_broadcast(&ex->wake);
	pthread_mutex_unlock(&ex->mu);
}

bool exporter_stop(exporter *ex)
{
	if (!ex)
		return true;
	exporter_request_stop(ex);
	/* a thread stuck in a hung driver call must not hold the process: give them 0.8 s (every
	 * command ends within a second of SIGTERM), then leave the exporter to the exit */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_nsec += 800000000L;
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	if ((ex->sampler_started && pthread_timedjoin_np(ex->sampler_tid, NULL, &dl) != 0) ||
	    (ex->checker_started && pthread_timedjoin_np(ex->checker_tid, NULL, &dl) != 0))
		return false;
	expo_body_unref(ex->body);
	snapshot_free(ex->last_good);
	free(ex->findings);
	pthread_cond_destroy(&ex->wake);
	pthread_mutex_destroy(&ex->mu);
	free(ex);
	return true;
}

expo_body *exporter_body(exporter *ex, metrics_status *st)
{
	pthread_mutex_lock(&ex->mu);
	expo_body *b = ex->body;
	if (b)
		atomic_fetch_add_explicit((_Atomic int *)&b->refs, 1, memory_order_relaxed);
	if (st) {
		st->sample_age = ex->have_good ? now_seconds() - ex->last_good_mono : NAN;
		st->last_sample_wall = ex->have_good ? ex->last_good_wall : 0;
		st->sampler_up = ex->up;
		st->samples_total = ex->samples;
		st->errors_total = ex->errors;
		st->interval = ex->o.interval;
	}
	pthread_mutex_unlock(&ex->mu);
	return b;
}

char *exporter_render_all(exporter *ex, expo_format fmt, size_t *len)
{
	metrics_status st;
	expo_body *b = exporter_body(ex, &st);
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, fmt);
	metrics_render_status(&e, &st);
	if (b)
		sb_addn(&sb, fmt == EXPO_OPENMETRICS ? b->om : b->text, fmt == EXPO_OPENMETRICS ? b->om_len : b->text_len);
	else
		expo_finish(&e);
	expo_body_unref(b);
	*len = sb.len;
	return sb_steal(&sb);
}

bool exporter_alive(exporter *ex, char *why, size_t size)
{
	pthread_mutex_lock(&ex->mu);
	double since = ex->last_attempt_mono > 0 ? now_seconds() - ex->last_attempt_mono : -1;
	double limit = 3 * ex->o.interval + 10;
	bool alive = since >= 0 && since <= limit;
	if (!alive)
		snprintf(why, size, since < 0 ? "the sampler has not finished a first sample" : "the sampler is stuck: last attempt %.0f s ago",
			 since);
	else if (!ex->up)
		snprintf(why, size, "sampler failing: %s", ex->last_error);
	else
		snprintf(why, size, "ok");
	pthread_mutex_unlock(&ex->mu);
	return alive;
}

void exporter_last_error(exporter *ex, char *buf, size_t size)
{
	pthread_mutex_lock(&ex->mu);
	str_copy(buf, size, ex->last_error);
	pthread_mutex_unlock(&ex->mu);
}
