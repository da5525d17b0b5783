#include "tune/tune_sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/nvml.h"
#include "sampler/sampler.h"
#include "sampler/summary.h"

struct tune_sampler {
	sampler *smp; /* the one NVML sampler (sampler/sampler.h) */
	int index;
	bool selected;
	char name[96], uuid[96];
	gpu_window w; /* the conditions of the timed parts (sampler/summary.h) */
};

tune_sampler *tune_sampler_open(const char **why)
{
	static char err[512];
	/* no Xid sources and no GPM: utilization and the conditions of the timed parts; health counters,
	 * PCIe throughput (~40 ms of NVML calls) and the processes only in the first take */
	sampler_opts o = {.no_events = true, .no_kmsg = true, .no_gpm = true, .health_every = 1 << 30,
			  .identity_every = 1 << 30, .processes_every = 1 << 30};
	sampler *smp = sampler_open(&o, err, sizeof(err));
	if (!smp) {
		if (why)
			*why = err;
		return NULL;
	}
	tune_sampler *s = xcalloc(1, sizeof(*s));
	s->smp = smp;
	gpu_window_init(&s->w, 0, NULL);
	s->w.sums_only = true;
	return s;
}

/* The GPU sampled, from a snapshot: the one with this UUID, else NVML's device 0 (as CUDA's
 * device 0 most often is). */
static const gpu_sample *pick(tune_sampler *s, const snapshot *snap)
{
	const gpu_sample *g = snapshot_gpu(snap, s->index);
	if (g && !s->name[0]) {
		str_copy(s->name, sizeof(s->name), g->name);
		str_copy(s->uuid, sizeof(s->uuid), g->uuid);
	}
	return g;
}

void tune_sampler_select(tune_sampler *s, const char *uuid)
{
	if (!s)
		return;
	s->index = 0;
	s->selected = true;
	s->name[0] = s->uuid[0] = 0;
	char err[256];
	snapshot *snap = sampler_take(s->smp, err, sizeof(err));
	for (int i = 0; snap && uuid && *uuid && i < snap->ngpus; i++)
		if (strcmp(snap->gpus[i].uuid, uuid) == 0)
			s->index = snap->gpus[i].index;
	if (snap)
		pick(s, snap);
	snapshot_free(snap);
}

bool tune_sampler_read(tune_sampler *s, double *pct)
{
	if (!s)
		return false;
	if (!s->selected)
		tune_sampler_select(s, NULL);
	char err[256];
	snapshot *snap = sampler_take(s->smp, err, sizeof(err));
	const gpu_sample *g = snap ? pick(s, snap) : NULL;
	if (!g || g->lost) {
		snapshot_free(snap);
		return false;
	}
	gpu_window_add(&s->w, g, snap->time, NULL, JOB_GPU_NONE, NAN);
	bool ok = sv_has(g->util_gpu) && g->util_gpu.v <= 100;
	if (ok)
		*pct = g->util_gpu.v;
	snapshot_free(snap);
	return ok;
}

void tune_sampler_conditions(const tune_sampler *s, tune_conditions *out)
{
	memset(out, 0, sizeof(*out));
	out->index = -1;
	out->sm_clock_mhz = out->mem_clock_mhz = out->power_w = out->temperature_max_c = NAN;
	if (!s || !s->w.n)
		return;
	gpu_summary sum;
	gpu_window_summary(&s->w, &sum);
	out->index = s->index;
	out->samples = sum.samples;
	out->sm_clock_mhz = sum.sm_clock_mean;
	out->mem_clock_mhz = sum.mem_clock_mean;
	out->power_w = sum.power;
	out->temperature_max_c = sum.temp_max;
	/* idle and application-clock reasons say nothing about the timed steps */
	unsigned long long shown = sum.reasons & GV_NVML_REASONS_BAD;
	if (shown)
		gv_nvml_clock_reasons_text(shown, out->reasons, sizeof(out->reasons));
	out->slowed = shown != 0;
	str_copy(out->name, sizeof(out->name), s->name);
	str_copy(out->uuid, sizeof(out->uuid), s->uuid);
}

void tune_sampler_close(tune_sampler *s)
{
	if (!s)
		return;
	sampler_close(s->smp);
	gv_nvml_shutdown();
	gpu_window_free(&s->w);
	free(s);
}
