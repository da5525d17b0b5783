#include "tune/tune_sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/nvml.h"
#include "sampler/sampler.h"

struct tune_sampler {
	sampler *smp; /* the one NVML sampler (sampler/sampler.h) */
	int index;
	bool selected;
	char name[96], uuid[96];
	int n, n_sm, n_mem, n_power;
	double sm_sum, mem_sum, power_sum, temp_max;
	unsigned long long reasons;
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
	s->temp_max = NAN;
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
	s->n++;
	if (sv_has(g->sm_clock)) {
		s->sm_sum += g->sm_clock.v;
		s->n_sm++;
	}
	if (sv_has(g->mem_clock)) {
		s->mem_sum += g->mem_clock.v;
		s->n_mem++;
	}
	if (sv_has(g->power)) {
		s->power_sum += g->power.v;
		s->n_power++;
	}
	if (sv_has(g->temp) && (isnan(s->temp_max) || g->temp.v > s->temp_max))
		s->temp_max = g->temp.v;
	if (sv_has(g->clock_reasons))
		s->reasons |= (unsigned long long)g->clock_reasons.v;
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
	if (!s || !s->n)
		return;
	out->index = s->index;
	out->samples = s->n;
	if (s->n_sm)
		out->sm_clock_mhz = s->sm_sum / s->n_sm;
	if (s->n_mem)
		out->mem_clock_mhz = s->mem_sum / s->n_mem;
	if (s->n_power)
		out->power_w = s->power_sum / s->n_power;
	out->temperature_max_c = s->temp_max;
	/* idle and application-clock reasons say nothing about the timed steps */
	unsigned long long shown = s->reasons & GV_NVML_REASONS_BAD;
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
	free(s);
}
