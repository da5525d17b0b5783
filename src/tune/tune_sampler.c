/* A small NVML reader of its own: only utilization, by UUID. When the nvidia module's loader
 * (src/nvidia/nvml.h) is merged, this file becomes a thin adapter over it. */
#include "tune/tune_sampler.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

typedef int nvml_ret;
typedef struct nvml_device_st *nvml_device;
typedef struct {
	unsigned int gpu, memory;
} nvml_utilization;

struct tune_sampler {
	void *lib;
	nvml_ret (*shutdown)(void);
	nvml_ret (*by_index)(unsigned int, nvml_device *);
	nvml_ret (*by_uuid)(const char *, nvml_device *);
	nvml_ret (*utilization)(nvml_device, nvml_utilization *);
	nvml_device dev;
	bool have_dev;
};

static void *sym(void *lib, const char *versioned, const char *plain)
{
	void *p = versioned ? dlsym(lib, versioned) : NULL;
	return p ? p : dlsym(lib, plain);
}

tune_sampler *tune_sampler_open(const char **why)
{
	const char *path = getenv("GPUVET_NVML_LIB");
	void *lib = dlopen(path && *path ? path : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		if (why)
			*why = "NVML (libnvidia-ml.so.1) cannot be loaded";
		return NULL;
	}
	nvml_ret (*init)(void) = (nvml_ret(*)(void))sym(lib, "nvmlInit_v2", "nvmlInit");
	tune_sampler *s = xcalloc(1, sizeof(*s));
	s->lib = lib;
	s->shutdown = (nvml_ret(*)(void))dlsym(lib, "nvmlShutdown");
	s->by_index = (nvml_ret(*)(unsigned int, nvml_device *))sym(lib, "nvmlDeviceGetHandleByIndex_v2",
								      "nvmlDeviceGetHandleByIndex");
	s->by_uuid = (nvml_ret(*)(const char *, nvml_device *))dlsym(lib, "nvmlDeviceGetHandleByUUID");
	s->utilization = (nvml_ret(*)(nvml_device, nvml_utilization *))dlsym(lib, "nvmlDeviceGetUtilizationRates");
	if (!init || !s->by_index || !s->utilization || init() != 0) {
		if (why)
			*why = "NVML does not initialize or lacks nvmlDeviceGetUtilizationRates";
		dlclose(lib);
		free(s);
		return NULL;
	}
	return s;
}

void tune_sampler_select(tune_sampler *s, const char *uuid)
{
	if (!s)
		return;
	nvml_device d = NULL;
	if (uuid && *uuid && s->by_uuid && s->by_uuid(uuid, &d) == 0) {
		s->dev = d;
		s->have_dev = true;
		return;
	}
	s->have_dev = s->by_index(0, &d) == 0;
	s->dev = d;
}

bool tune_sampler_read(tune_sampler *s, double *pct)
{
	if (!s)
		return false;
	if (!s->have_dev)
		tune_sampler_select(s, NULL);
	nvml_utilization u;
	if (!s->have_dev || s->utilization(s->dev, &u) != 0 || u.gpu > 100)
		return false;
	*pct = u.gpu;
	return true;
}

void tune_sampler_close(tune_sampler *s)
{
	if (!s)
		return;
	if (s->shutdown)
		s->shutdown();
	dlclose(s->lib);
	free(s);
}
