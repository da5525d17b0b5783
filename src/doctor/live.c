/*
 * The job doctor's live pipeline (doctor.h): snapshots in, one verdict per window out, for
 * watch --pid, watch --diagnose and run. The evidence of a window is doctor/evidence.c's; this
 * file keeps the windows, quotes tune's gain and py-spy's frames, counts the verdicts for run,
 * and keeps the job's GPUs over the whole run for the utilisation verdict.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "doctor/doctor.h"
#include "doctor/evidence.h"
#include "health/health.h"

#define LIVE_IDS 24
/* py-spy at most this often (seconds) for a job that keeps waiting (run's windows) */
#define STACK_EVERY 30
#define STACK_TIMEOUT_MS 5000

struct doctor_live {
	doctor_live_opts o;
	bool history;   /* tune's gains may be read */
	doctor_acc *acc;
	double started; /* the snapshot time the open window began at */
	bool have;
	doctor_result last;
	int windows;    /* complete windows */
	struct {
		const char *id;
		int count;
		doctor_result r;
	} seen[LIVE_IDS];
	int nseen;
	gpu_windows total; /* the job's GPUs over the whole run */
	bool gain_looked;
	char gain_gpu[96], gain_source[96];
	double gain;
	double last_stack;
};

doctor_live *doctor_live_new(const doctor_live_opts *o)
{
	doctor_live *d = xcalloc(1, sizeof(*d));
	if (o)
		d->o = *o;
	/* the history database: --db, or the default one unless GPUVET_NO_HISTORY (the tests') */
	const char *nohist = getenv("GPUVET_NO_HISTORY");
	d->history = d->o.db || !nohist || !*nohist;
	d->gain = NAN;
	d->last_stack = -1e18;
	d->total.sums_only = true; /* a run may last days: means, not series */
	return d;
}

/* fp32 math on a tensor-core GPU: what `gpuvet tune` measured on this GPU class, looked up once. */
static bool tune_gain(doctor_live *d, doctor_result *r)
{
	if (!d->history || !r->v.id || strcmp(r->v.id, "job.fp32-math") != 0 || r->ev.ngpus == 0)
		return false;
	const char *name = r->ev.gpus[0].name;
	if (!d->gain_looked || strcmp(d->gain_gpu, name) != 0) {
		d->gain_looked = true;
		str_copy(d->gain_gpu, sizeof(d->gain_gpu), name);
		if (!doctor_tune_gain(d->o.db, name, &d->gain, d->gain_source, sizeof(d->gain_source)))
			d->gain = NAN;
	}
	if (isnan(d->gain))
		return false;
	r->ev.tune_tf32_gain = d->gain;
	str_copy(r->ev.tune_source, sizeof(r->ev.tune_source), d->gain_source);
	return true;
}

/* A waiting job: the Python frames of its main thread, without stopping it (sampler/pystack.h). */
static bool stacks(doctor_live *d, doctor_result *r)
{
	if (!d->o.stacks || !r->v.id || strcmp(r->v.id, "job.gpu-idle") != 0 || !r->ev.alive)
		return false;
	double now = now_seconds();
	if (now - d->last_stack < STACK_EVERY || r->ev.waits.denied)
		return false;
	d->last_stack = now;
	unsigned pid = r->ev.cpu.main_pid ? r->ev.cpu.main_pid : r->ev.pid;
	r->ev.waits.py_tried = true;
	pystack_dump(pid, STACK_TIMEOUT_MS, &r->ev.waits.py);
	return true;
}

static void close_window(doctor_live *d, job *j)
{
	doctor_result *r = &d->last;
	doctor_acc_finish(d->acc, j, &r->ev);
	doctor_acc_free(d->acc);
	d->acc = NULL;
	doctor_diagnose(&r->ev, NULL, &r->v);
	bool more = tune_gain(d, r);
	more |= stacks(d, r);
	if (more)
		doctor_diagnose(&r->ev, NULL, &r->v);
	d->have = true;
	d->windows++;
	if (!r->ev.ngpus)
		return; /* the job held no GPU in that window: not counted for run's verdict */
	int k = 0;
	while (k < d->nseen && strcmp(d->seen[k].id, r->v.id) != 0)
		k++;
	if (k == d->nseen) {
		if (d->nseen == LIVE_IDS)
			return;
		d->seen[d->nseen++].id = r->v.id;
	}
	d->seen[k].count++;
	d->seen[k].r = *r;
}

void doctor_live_feed(doctor_live *d, const snapshot *s, job *j)
{
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		double mem = NAN;
		job_gpu_hold hold = g->lost ? JOB_GPU_NONE : job_gpu(j, g, &mem, NULL, NULL, 0);
		gpu_window *w = hold != JOB_GPU_NONE ? gpu_windows_of(&d->total, g, HEALTH_MAX_GPUS) : NULL;
		if (w)
			gpu_window_add(w, g, s->time, j, hold, mem);
	}
	if (!d->acc) {
		/* the first snapshot only starts the window (GPM needs two samples) */
		d->acc = doctor_acc_new(j);
		d->started = s->time;
		return;
	}
	doctor_acc_add(d->acc, s, j);
	if (d->o.window > 0 && s->time - d->started >= d->o.window) {
		close_window(d, j);
		d->acc = doctor_acc_new(j);
		d->started = s->time;
	}
}

const doctor_result *doctor_live_last(const doctor_live *d)
{
	return d && d->have ? &d->last : NULL;
}

const doctor_result *doctor_live_finish(doctor_live *d, job *j)
{
	if (d->acc)
		close_window(d, j);
	return doctor_live_last(d);
}

/* The utilisation verdict: each GPU the job held, its mean utilization over the samples in which
 * it held it, against watch's low-utilisation threshold (health_cfg util_low, 70%). */
static char *utilisation_text(const doctor_live *d, double min_seconds)
{
	health_cfg hc;
	health_cfg_default(&hc);
	strbuf b;
	sb_init(&b);
	bool any = false;
	for (size_t k = 0; k < d->total.n; k++) {
		gpu_summary g;
		gpu_window_summary(&d->total.w[k], &g);
		double span = g.t_last - g.t_first;
		if (g.samples < 2 || isnan(g.util) || span < min_seconds)
			continue;
		any = true;
		double mean = g.util * 100;
		if (mean < hc.util_low * 100)
			sb_addf(&b,
				"GPU %d (%s): mean utilization %.0f%% over %.0f s, under %.0f%%: the GPU waited for the job "
				"(input pipeline, CPU-side work, host-device copies or communication); gpuvet tune measures which setting helps\n",
				g.index, g.name, mean, span, hc.util_low * 100);
		else
			sb_addf(&b, "GPU %d (%s): mean utilization %.0f%% over %.0f s: the GPU was kept busy\n", g.index, g.name, mean,
				span);
	}
	if (!any) {
		sb_free(&b);
		return NULL;
	}
	return sb_steal(&b);
}

char *doctor_live_report(doctor_live *d, double min_seconds)
{
	int best = -1;
	for (int k = 0; k < d->nseen; k++)
		if (best < 0 || d->seen[k].count >= d->seen[best].count)
			best = k;
	if (best < 0 || d->o.window <= 0 || d->windows * d->o.window < min_seconds)
		return utilisation_text(d, min_seconds);
	const doctor_result *r = &d->seen[best].r;
	strbuf b;
	sb_init(&b);
	char *t = doctor_text(&r->ev, &r->v, "  ");
	sb_addf(&b, "the job doctor, %d of %d windows of %.0f s: %s", d->seen[best].count, d->windows, d->o.window, t);
	free(t);
	return sb_steal(&b);
}

void doctor_live_free(doctor_live *d)
{
	if (!d)
		return;
	doctor_acc_free(d->acc);
	gpu_windows_free(&d->total);
	free(d);
}
