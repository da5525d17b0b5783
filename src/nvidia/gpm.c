/*
 * GPM counters through NVML (nvml.h, "GPM"): per GPU support, two sample buffers, and the
 * metrics of gpm_fields.h between consecutive samples. Every nvmlGpm* symbol is optional.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/nvml.h"

/* the layouts of nvml.h (CUDA 12.0-13.0, x86_64 and aarch64): scripts/device/gpm.sh compares
 * them with the toolkit's header on the GPU machine */
_Static_assert(sizeof(nvmlGpmMetric_t) == 40, "nvmlGpmMetric_t is 40 bytes");
_Static_assert(offsetof(nvmlGpmMetric_t, value) == 8 && offsetof(nvmlGpmMetric_t, metricInfo) == 16,
	       "nvmlGpmMetric_t layout");
_Static_assert(offsetof(gv_nvmlGpmMetricsGet_t, sample1) == 8 && offsetof(gv_nvmlGpmMetricsGet_t, metrics) == 24,
	       "nvmlGpmMetricsGet_t layout");
_Static_assert(sizeof(nvmlGpmSupport_t) == 8, "nvmlGpmSupport_t is 8 bytes");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32 && offsetof(nvmlProcessUtilizationSample_t, smUtil) == 16,
	       "nvmlProcessUtilizationSample_t layout");

typedef struct gpm_fns {
	nvmlReturn_t (*QueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t *);
	nvmlReturn_t (*SampleAlloc)(nvmlGpmSample_t *);
	nvmlReturn_t (*SampleFree)(nvmlGpmSample_t);
	nvmlReturn_t (*SampleGet)(nvmlDevice_t, nvmlGpmSample_t);
	nvmlReturn_t (*MetricsGet)(gv_nvmlGpmMetricsGet_t *);
	nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned *, unsigned *);
} gpm_fns;

struct gv_gpm {
	unsigned index;
	gpm_fns fn;
	nvmlGpmSample_t prev, cur;
	bool have_prev;
	double t_prev; /* now_seconds() of prev */
};

const char *gv_gpm_support_text(gv_gpm_support s)
{
	switch (s) {
	case GV_GPM_ON: return "supported";
	case GV_GPM_NO_SYMBOLS: return "driver without GPM (nvmlGpm* missing, R520 or newer has it)";
	case GV_GPM_UNSUPPORTED: return "not supported by this GPU (GPM needs Hopper or newer)";
	case GV_GPM_MIG: return "MIG mode (device-level GPM counters are not available)";
	case GV_GPM_FAILED: return "GPM call failed";
	case GV_GPM_UNKNOWN: break;
	}
	return "unknown";
}

const char *gv_gpm_support_name(gv_gpm_support s)
{
	switch (s) {
	case GV_GPM_ON: return "supported";
	case GV_GPM_NO_SYMBOLS: return "driver_without_gpm";
	case GV_GPM_UNSUPPORTED: return "not_supported";
	case GV_GPM_MIG: return "mig";
	case GV_GPM_FAILED: return "failed";
	case GV_GPM_UNKNOWN: break;
	}
	return "unknown";
}

static void resolve(gpm_fns *f)
{
	*(void **)&f->QueryDeviceSupport = gv_nvml_symbol("nvmlGpmQueryDeviceSupport");
	*(void **)&f->SampleAlloc = gv_nvml_symbol("nvmlGpmSampleAlloc");
	*(void **)&f->SampleFree = gv_nvml_symbol("nvmlGpmSampleFree");
	*(void **)&f->SampleGet = gv_nvml_symbol("nvmlGpmSampleGet");
	*(void **)&f->MetricsGet = gv_nvml_symbol("nvmlGpmMetricsGet");
	*(void **)&f->GetMigMode = gv_nvml_symbol("nvmlDeviceGetMigMode");
}

gv_gpm *gv_gpm_open(unsigned index, gv_gpm_support *support, nvmlReturn_t *rc)
{
	return gv_gpm_open_mig(index, -1, support, rc);
}

gv_gpm *gv_gpm_open_mig(unsigned index, int mig_enabled, gv_gpm_support *support, nvmlReturn_t *rc)
{
	*support = GV_GPM_UNKNOWN;
	*rc = NVML_SUCCESS;
	gpm_fns f;
	resolve(&f);
	if (!f.QueryDeviceSupport || !f.SampleAlloc || !f.SampleFree || !f.SampleGet || !f.MetricsGet) {
		*support = GV_GPM_NO_SYMBOLS;
		*rc = NVML_ERROR_FUNCTION_NOT_FOUND;
		return NULL;
	}
	nvmlDevice_t dev = NULL;
	*rc = gv_nvml_device_handle(index, &dev);
	if (*rc != NVML_SUCCESS) {
		*support = GV_GPM_FAILED;
		return NULL;
	}
	if (mig_enabled < 0 && f.GetMigMode) {
		unsigned cur = 0, pending = 0;
		if (f.GetMigMode(dev, &cur, &pending) == NVML_SUCCESS && cur == NVML_DEVICE_MIG_ENABLE)
			mig_enabled = 1;
	}
	if (mig_enabled > 0) {
		*support = GV_GPM_MIG;
		*rc = NVML_ERROR_NOT_SUPPORTED;
		return NULL;
	}
	nvmlGpmSupport_t s = {NVML_GPM_SUPPORT_VERSION, 0};
	*rc = f.QueryDeviceSupport(dev, &s);
	if (*rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
		*support = GV_GPM_NO_SYMBOLS;
		return NULL;
	}
	if (*rc == NVML_ERROR_NOT_SUPPORTED || (*rc == NVML_SUCCESS && !s.isSupportedDevice)) {
		*support = GV_GPM_UNSUPPORTED;
		if (*rc == NVML_SUCCESS)
			*rc = NVML_ERROR_NOT_SUPPORTED;
		return NULL;
	}
	if (*rc != NVML_SUCCESS) {
		*support = GV_GPM_FAILED;
		return NULL;
	}
	gv_gpm *g = xcalloc(1, sizeof(*g));
	g->index = index;
	g->fn = f;
	if ((*rc = f.SampleAlloc(&g->prev)) != NVML_SUCCESS || (*rc = f.SampleAlloc(&g->cur)) != NVML_SUCCESS) {
		gv_gpm_close(g);
		*support = GV_GPM_FAILED;
		return NULL;
	}
	*support = GV_GPM_ON;
	return g;
}

nvmlReturn_t gv_gpm_take(gv_gpm *g, gv_nv_dbl out[GV_GPM_N])
{
	for (int k = 0; k < GV_GPM_N; k++)
		out[k] = (gv_nv_dbl){GV_V_UNSET, NVML_SUCCESS, 0};
	nvmlDevice_t dev = NULL;
	nvmlReturn_t rc = gv_nvml_device_handle(g->index, &dev);
	if (rc == NVML_SUCCESS)
		rc = g->fn.SampleGet(dev, g->cur);
	if (rc != NVML_SUCCESS) {
		/* the next good sample starts a new interval */
		g->have_prev = false;
		for (int k = 0; k < GV_GPM_N; k++)
			out[k] = (gv_nv_dbl){GV_V_ERROR, rc, 0};
		return rc;
	}
	if (g->have_prev) {
		gv_nvmlGpmMetricsGet_t m;
		memset(&m, 0, sizeof(m));
		m.version = NVML_GPM_METRICS_GET_VERSION;
		m.numMetrics = GV_GPM_N;
		m.sample1 = g->prev;
		m.sample2 = g->cur;
		for (int k = 0; k < GV_GPM_N; k++)
			m.metrics[k].metricId = gv_gpm_fields[k].nvml_id;
		nvmlReturn_t mrc = g->fn.MetricsGet(&m);
		for (int k = 0; k < GV_GPM_N; k++) {
			nvmlReturn_t r = mrc != NVML_SUCCESS ? mrc : m.metrics[k].nvmlReturn;
			double v = r == NVML_SUCCESS ? gv_gpm_to_base(gv_gpm_fields[k].unit, m.metrics[k].value) : 0;
			out[k] = (gv_nv_dbl){gv_nvml_vstate(r), r, v};
		}
	}
	/* the newer sample is the start of the next interval */
	nvmlGpmSample_t t = g->prev;
	g->prev = g->cur;
	g->cur = t;
	g->have_prev = true;
	g->t_prev = now_seconds();
	return NVML_SUCCESS;
}

double gv_gpm_wait(const gv_gpm *g)
{
	if (!g || !g->have_prev)
		return 0;
	double left = GV_GPM_MIN_INTERVAL - (now_seconds() - g->t_prev);
	return left > 0 ? left : 0;
}

void gv_gpm_close(gv_gpm *g)
{
	if (!g)
		return;
	if (g->prev)
		g->fn.SampleFree(g->prev);
	if (g->cur)
		g->fn.SampleFree(g->cur);
	free(g);
}
