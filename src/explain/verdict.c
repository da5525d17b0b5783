#include <math.h>
#include <stdlib.h>

#include "core/util.h"
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
