#include "sampler/window.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "core/util.h"
#include "nvidia/nvml.h"

struct gpm_window {
	gv_gpm *gpm;
	bool begun;
	double t0;
};

gpm_window *gpm_window_open(unsigned index, char *why, size_t n)
{
	gv_gpm_support sup = GV_GPM_UNKNOWN;
	nvmlReturn_t rc = NVML_SUCCESS;
	gv_gpm *g = gv_gpm_open(index, &sup, &rc);
	if (!g) {
		if (why && n)
			snprintf(why, n, "GPU %u: %s", index, gv_gpm_support_text(sup));
		return NULL;
	}
	gpm_window *w = xcalloc(1, sizeof(*w));
	w->gpm = g;
	return w;
}

bool gpm_window_begin(gpm_window *w)
{
	if (!w)
		return false;
	gv_nv_dbl v[GV_GPM_N];
	w->begun = gv_gpm_take(w->gpm, v) == NVML_SUCCESS; /* starts the interval; values are the last one's */
	w->t0 = now_seconds();
	return w->begun;
}

void gpm_evidence_scale(gpm_evidence *e)
{
	double k = e->busy_s > 0 && e->window_s > 0 ? e->window_s / e->busy_s : NAN;
	for (int i = 0; i < GV_GPM_N; i++) {
		double v = e->window[i] * k;
		if (gv_gpm_fields[i].unit == GV_GPM_PERCENT && v > 1)
			v = 1; /* the busy time is the events' and misses the host's share of a repeat */
		e->busy[i] = isfinite(v) ? v : NAN;
	}
}

bool gpm_window_end(gpm_window *w, double busy_s, gpm_evidence *out)
{
	out->window_s = out->busy_s = 0;
	for (int i = 0; i < GV_GPM_N; i++)
		out->window[i] = out->busy[i] = NAN;
	if (!w || !w->begun)
		return false;
	w->begun = false;
	double wait = gv_gpm_wait(w->gpm);
	if (wait > 0)
		sleep_seconds(wait + 0.001);
	gv_nv_dbl v[GV_GPM_N];
	if (gv_gpm_take(w->gpm, v) != NVML_SUCCESS)
		return false;
	out->window_s = now_seconds() - w->t0;
	out->busy_s = busy_s;
	bool any = false;
	for (int i = 0; i < GV_GPM_N; i++)
		if (v[i].st == GV_V_OK) {
			out->window[i] = v[i].v;
			any = true;
		}
	gpm_evidence_scale(out);
	return any;
}

void gpm_window_close(gpm_window *w)
{
	if (!w)
		return;
	gv_gpm_close(w->gpm);
	free(w);
}
