#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/util.h"
#include "rules/rules_nvidia.h"

bool nv_driver_expected(const facts *f)
{
	/* a version file that is there but unreadable or garbled still means something of the driver is */
	const fact *kmod = facts_get(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	if ((kmod && kmod->state != FACT_ABSENT) || facts_true(f, FK_DEVICES_DXG))
		return true;
	long long n = facts_int_or(f, 0, FK_HARDWARE_PCI_COUNT);
	for (long long i = 0; i < n && i < 256; i++) {
		const char *drv = facts_str(f, FK_HARDWARE_PCI_DRIVER(lld), i);
		if (drv && strcmp(drv, "nvidia") == 0)
			return true;
	}
	return false;
}

int nv_gpu_count(const facts *f)
{
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	return n < 0 ? 0 : n > 256 ? 256 : (int)n;
}

const char *nv_gpu_label(const facts *f, int i, char *buf, size_t size)
{
	const char *name = facts_str(f, FK_NVML_GPU_NAME(d), i);
	const char *bus = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i);
	if (name && bus)
		snprintf(buf, size, "GPU %d (%s, %s)", i, name, bus);
	else if (name || bus)
		snprintf(buf, size, "GPU %d (%s)", i, name ? name : bus);
	else
		snprintf(buf, size, "GPU %d", i);
	return buf;
}

const char *nv_driver_branch(const char *version, char *buf, size_t size)
{
	buf[0] = '\0';
	if (!version)
		return buf;
	size_t n = strcspn(version, ".");
	if (n == 0 || n >= size)
		return buf;
	memcpy(buf, version, n);
	buf[n] = '\0';
	return buf;
}

const char *nv_nvml_readers(const facts *f, char *buf, size_t size)
{
	const fact *lib = facts_get(f, FK_NVML_LIBRARY);
	const char *path = lib && lib->state == FACT_OK && lib->type == FV_STR ? lib->str : NULL;
	if (path && lib->source && strcmp(lib->source, "GPUVET_NVML_LIB") == 0)
		snprintf(buf, size, "gpuvet read %s (GPUVET_NVML_LIB); nvidia-smi and DCGM load the system's "
				    "libnvidia-ml.so.1, which may answer otherwise", path);
	else
		snprintf(buf, size, "nvidia-smi, DCGM and gpuvet serve read the GPUs through the same library (%s)",
			 path ? path : "libnvidia-ml.so.1");
	return buf;
}

long long nv_mib(long long bytes)
{
	return bytes / (1024 * 1024);
}
