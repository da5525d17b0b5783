#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "doctor/doctor.h"
#include "explain/verdict.h"
#include "health/health.h"

#define MAX_GPUS 64

typedef struct util_state {
	struct {
		int index;
		char name[96];
		double util_sum;
		unsigned long n;
		double first, last;
		double mem_max;
	} g[MAX_GPUS];
	int ng;
} util_state;

static void util_sample(void *st, const snapshot *s, const job *j)
{
	util_state *u = st;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		double mem = NAN;
		if (!job_on_gpu(j, g, &mem) || !sv_has(g->util_gpu))
			continue;
		int k = 0;
		while (k < u->ng && u->g[k].index != g->index)
			k++;
		if (k == u->ng) {
			if (u->ng == MAX_GPUS)
				continue;
			u->ng++;
			u->g[k].index = g->index;
			str_copy(u->g[k].name, sizeof(u->g[k].name), g->name);
			u->g[k].first = s->time;
		}
		u->g[k].util_sum += g->util_gpu.v;
		u->g[k].n++;
		u->g[k].last = s->time;
		if (!isnan(mem) && mem > u->g[k].mem_max)
			u->g[k].mem_max = mem;
	}
}

static char *util_verdict(void *st, double min_seconds)
{
	util_state *u = st;
	health_cfg hc;
	health_cfg_default(&hc);
	strbuf b;
	sb_init(&b);
	bool any = false;
	for (int k = 0; k < u->ng; k++) {
		double span = u->g[k].last - u->g[k].first;
		if (u->g[k].n < 2 || span < min_seconds)
			continue;
		any = true;
		double mean = u->g[k].util_sum / (double)u->g[k].n;
		if (mean < hc.util_low * 100)
			sb_addf(&b,
				"GPU %d (%s): mean utilization %.0f%% over %.0f s, under %.0f%%: the GPU waited for the job "
				"(input pipeline, CPU-side work, host-device copies or communication); gpuvet tune measures which setting helps\n",
				u->g[k].index, u->g[k].name, mean, span, hc.util_low * 100);
		else
			sb_addf(&b, "GPU %d (%s): mean utilization %.0f%% over %.0f s: the GPU was kept busy\n", u->g[k].index,
				u->g[k].name, mean, span);
	}
	if (!any) {
		sb_free(&b);
		return NULL;
	}
	return sb_steal(&b);
}

job_judge job_judge_utilisation(void)
{
	return (job_judge){xcalloc(1, sizeof(util_state)), util_sample, util_verdict, free};
}

/* ------------------------------------------------------------------ the job doctor */

/* The doctor judges windows of DOCTOR_WINDOW seconds (the CPU time of the job's threads is read
 * at each window's ends, while they still exist); the verdict shown is the one most windows
 * gave (the latest of those), so a job's start-up or tear-down does not decide it. */
#define DOCTOR_WINDOW 10
#define DOCTOR_IDS 24

typedef struct doctor_state {
	doctor_running run;
	double last_started, first;
	struct {
		const char *id;
		int count;
		doctor_evidence ev;
		doctor_verdict v;
	} seen[DOCTOR_IDS];
	int nseen, windows;
	util_state *fallback; /* windows too short: the utilisation verdict */
} doctor_state;

static void doctor_sample(void *st, const snapshot *s, const job *j)
{
	doctor_state *d = st;
	util_sample(d->fallback, s, j);
	if (!d->first)
		d->first = s->time;
	doctor_running_feed(&d->run, s, j);
	if (!d->run.have || d->run.started == d->last_started)
		return;
	d->last_started = d->run.started; /* a window just ended */
	d->windows++;
	if (!d->run.ev.ngpus)
		return; /* the job held no GPU in that window */
	int k = 0;
	while (k < d->nseen && strcmp(d->seen[k].id, d->run.v.id) != 0)
		k++;
	if (k == d->nseen) {
		if (d->nseen == DOCTOR_IDS)
			return;
		d->seen[d->nseen++].id = d->run.v.id;
	}
	d->seen[k].count++;
	d->seen[k].ev = d->run.ev;
	d->seen[k].v = d->run.v;
}

static char *doctor_verdict_text(void *st, double min_seconds)
{
	doctor_state *d = st;
	int best = -1;
	for (int k = 0; k < d->nseen; k++)
		if (best < 0 || d->seen[k].count >= d->seen[best].count)
			best = k;
	if (best < 0 || d->windows * DOCTOR_WINDOW < min_seconds)
		return util_verdict(d->fallback, min_seconds);
	doctor_evidence *ev = &d->seen[best].ev;
	doctor_verdict *v = &d->seen[best].v;
	/* fp32 math on a tensor-core GPU: what `gpuvet tune` measured on this GPU class */
	const char *nohist = getenv("GPUVET_NO_HISTORY");
	if (v->id && strcmp(v->id, "job.fp32-math") == 0 && ev->ngpus > 0 && (!nohist || !*nohist) &&
	    doctor_tune_gain(NULL, ev->gpus[0].name, &ev->tune_tf32_gain, ev->tune_source, sizeof(ev->tune_source)))
		doctor_diagnose(ev, NULL, v);
	strbuf b;
	sb_init(&b);
	char *t = doctor_text(ev, v, "  ");
	sb_addf(&b, "the job doctor, %d of %d windows of %d s: %s", d->seen[best].count, d->windows, DOCTOR_WINDOW, t);
	free(t);
	return sb_steal(&b);
}

static void doctor_free(void *st)
{
	doctor_state *d = st;
	doctor_running_free(&d->run);
	free(d->fallback);
	free(d);
}

job_judge job_judge_doctor(void)
{
	doctor_state *d = xcalloc(1, sizeof(*d));
	d->run.window = DOCTOR_WINDOW;
	d->fallback = xcalloc(1, sizeof(util_state));
	return (job_judge){d, doctor_sample, doctor_verdict_text, doctor_free};
}
