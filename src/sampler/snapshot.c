#include "sampler/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

sval sv_from_nvml(gv_nv_u64 f, double scale)
{
	switch (f.st) {
	case GV_V_OK: return sv_ok((double)f.v * scale);
	case GV_V_UNSUPPORTED: return (sval){0, SV_NA};
	case GV_V_ERROR: return (sval){0, SV_ERR};
	default: return (sval){0, SV_NONE};
	}
}

const char *clock_reasons_text(unsigned long long mask, char *buf, size_t size)
{
	return gv_nvml_clock_reasons_words(mask, buf, size);
}

snapshot *snapshot_new(int ngpus)
{
	snapshot *s = xcalloc(1, sizeof(*s));
	if (ngpus < 0)
		ngpus = 0;
	s->ngpus = ngpus;
	s->gpus = ngpus ? xcalloc((size_t)ngpus, sizeof(*s->gpus)) : NULL;
	for (int i = 0; i < ngpus; i++) {
		s->gpus[i].index = i;
		s->gpus[i].minor = -1;
	}
	return s;
}

void snapshot_free(snapshot *s)
{
	if (!s)
		return;
	free(s->gpus);
	free(s);
}

snapshot *snapshot_dup(const snapshot *s)
{
	if (!s)
		return NULL;
	snapshot *d = xmalloc(sizeof(*d));
	*d = *s;
	d->gpus = s->ngpus ? xmalloc((size_t)s->ngpus * sizeof(*s->gpus)) : NULL;
	if (s->ngpus)
		memcpy(d->gpus, s->gpus, (size_t)s->ngpus * sizeof(*s->gpus));
	return d;
}

const gpu_sample *snapshot_gpu(const snapshot *s, int index)
{
	if (!s)
		return NULL;
	for (int i = 0; i < s->ngpus; i++)
		if (s->gpus[i].index == index)
			return &s->gpus[i];
	return NULL;
}

bool gpu_has_pid(const gpu_sample *g, unsigned pid)
{
	for (size_t i = 0; i < g->nproc; i++)
		if (g->procs[i].pid == pid)
			return true;
	return false;
}
