#include "tune/tune_sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/contact.h"
#include "nvidia/nvml.h"

struct tune_sampler {
	unsigned index;
	bool selected;
	gv_nvml_device d;
	int n, n_sm, n_mem, n_power;
	double sm_sum, mem_sum, power_sum, temp_max;
	unsigned long long reasons;
};

tune_sampler *tune_sampler_open(const char **why)
{
	static char contact_err[512];
	if (!gv_nvml_first_contact(contact_err, sizeof(contact_err))) { /* a library that hangs or crashes stays out */
		if (why)
			*why = contact_err;
		return NULL;
	}
	nvmlReturn_t rc = gv_nvml_init_quiet();
	if (rc != NVML_SUCCESS) {
		if (why)
			*why = gv_nvml_error_string(rc);
		return NULL;
	}
	tune_sampler *s = xcalloc(1, sizeof(*s));
	s->temp_max = NAN;
	return s;
}

void tune_sampler_select(tune_sampler *s, const char *uuid)
{
	if (!s)
		return;
	s->index = 0;
	s->selected = true;
	unsigned n = 0;
	if (uuid && *uuid && gv_nvml_device_count(&n) == NVML_SUCCESS)
		for (unsigned i = 0; i < n && i < 1024; i++) {
			gv_nvml_device_clear(&s->d);
			if (gv_nvml_device_snapshot(i, GV_NVML_IDENTITY, &s->d) == NVML_SUCCESS && GV_OK(s->d.uuid) &&
			    strcmp(s->d.uuid.v, uuid) == 0) {
				s->index = i;
				return;
			}
		}
	/* not found (or no UUID): device 0, as CUDA's device 0 most often is */
	gv_nvml_device_clear(&s->d);
	gv_nvml_device_snapshot(0, GV_NVML_IDENTITY, &s->d);
}

bool tune_sampler_read(tune_sampler *s, double *pct)
{
	if (!s)
		return false;
	if (!s->selected)
		tune_sampler_select(s, NULL);
	/* identity was read at select and stays; only what changes is read here */
	if (gv_nvml_device_snapshot(s->index, GV_NVML_DYNAMIC, &s->d) != NVML_SUCCESS)
		return false;
	const gv_nvml_device *d = &s->d;
	s->n++;
	if (GV_OK(d->sm_clock_mhz)) {
		s->sm_sum += (double)d->sm_clock_mhz.v;
		s->n_sm++;
	}
	if (GV_OK(d->mem_clock_mhz)) {
		s->mem_sum += (double)d->mem_clock_mhz.v;
		s->n_mem++;
	}
	if (GV_OK(d->power_mw)) {
		s->power_sum += (double)d->power_mw.v / 1000.0;
		s->n_power++;
	}
	if (GV_OK(d->temperature_c) && (isnan(s->temp_max) || (double)d->temperature_c.v > s->temp_max))
		s->temp_max = (double)d->temperature_c.v;
	if (GV_OK(d->clock_event_reasons))
		s->reasons |= d->clock_event_reasons.v;
	if (!GV_OK(d->util_gpu) || d->util_gpu.v > 100)
		return false;
	*pct = (double)d->util_gpu.v;
	return true;
}

void tune_sampler_conditions(const tune_sampler *s, tune_conditions *out)
{
	memset(out, 0, sizeof(*out));
	out->index = -1;
	out->sm_clock_mhz = out->mem_clock_mhz = out->power_w = out->temperature_max_c = NAN;
	if (!s || !s->n)
		return;
	out->index = (int)s->index;
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
	if (GV_OK(s->d.name))
		str_copy(out->name, sizeof(out->name), s->d.name.v);
	if (GV_OK(s->d.uuid))
		str_copy(out->uuid, sizeof(out->uuid), s->d.uuid.v);
}

void tune_sampler_close(tune_sampler *s)
{
	if (!s)
		return;
	gv_nvml_shutdown();
	free(s);
}
