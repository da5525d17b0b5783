#include "sampler/snapshot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

const clock_reason_desc clock_reasons[] = {
	{CLK_GPU_IDLE, "gpu_idle", "idle"},
	{CLK_APP_CLOCKS, "applications_clocks_setting", "application clocks setting"},
	{CLK_SW_POWER_CAP, "sw_power_cap", "power cap"},
	{CLK_HW_SLOWDOWN, "hw_slowdown", "hardware slowdown"},
	{CLK_SYNC_BOOST, "sync_boost", "sync boost"},
	{CLK_SW_THERMAL, "sw_thermal_slowdown", "software thermal slowdown"},
	{CLK_HW_THERMAL, "hw_thermal_slowdown", "hardware thermal slowdown"},
	{CLK_HW_POWER_BRAKE, "hw_power_brake_slowdown", "power brake"},
	{CLK_DISPLAY_CLOCKS, "display_clock_setting", "display clock setting"},
};
const size_t n_clock_reasons = GV_ARRAY_LEN(clock_reasons);

const char *clock_reasons_text(unsigned long long mask, char *buf, size_t size)
{
	if (size == 0)
		return buf;
	buf[0] = '\0';
	if (mask == 0) {
		str_copy(buf, size, "none");
		return buf;
	}
	size_t len = 0;
	for (size_t i = 0; i < n_clock_reasons; i++) {
		if (!(mask & clock_reasons[i].bit))
			continue;
		int n = snprintf(buf + len, size - len, "%s%s", len ? ", " : "", clock_reasons[i].words);
		if (n < 0 || (size_t)n >= size - len)
			break;
		len += (size_t)n;
	}
	unsigned long long known = 0;
	for (size_t i = 0; i < n_clock_reasons; i++)
		known |= clock_reasons[i].bit;
	if ((mask & ~known) && len < size)
		snprintf(buf + len, size - len, "%sother (0x%llx)", len ? ", " : "", mask & ~known);
	return buf;
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
