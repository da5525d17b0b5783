/* Resident size of a process after each group of NVML calls gpuvet serve makes, and whether
 * libcuda.so has been mapped by then (scripts/device/serve_mem.sh builds and runs it): which
 * call makes NVML load libcuda and the 13.5 MiB anonymous mapping seen in gpuvet serve. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef int (*f_void)(void);
typedef int (*f_dev_idx)(unsigned, void **);
typedef int (*f_dev_ptr)(void *, void *);
typedef int (*f_dev_uint_ptr)(void *, unsigned, void *);
typedef int (*f_dev_2ptr)(void *, void *, void *);
typedef int (*f_buf)(char *, unsigned);
typedef int (*f_int)(int *);
typedef int (*f_dev_buf)(void *, char *, unsigned);
typedef int (*f_evcreate)(void **);
typedef int (*f_evreg)(void *, unsigned long long, void *);
typedef int (*f_evwait)(void *, void *, unsigned);

static void report(const char *stage)
{
	char line[256];
	long rss = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			sscanf(line + 6, "%ld", &rss);
	if (f)
		fclose(f);
	int cuda = 0;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "libcuda.so"))
			cuda = 1;
	if (f)
		fclose(f);
	printf("%-48s VmRSS %6ld kB  libcuda %s\n", stage, rss, cuda ? "mapped" : "-");
	fflush(stdout);
}

#define SYM(t, n) t n = (t)dlsym(h, #n)

int main(void)
{
	report("start");
	void *h = dlopen("libnvidia-ml.so.1", RTLD_LAZY);
	if (!h) {
		printf("no libnvidia-ml.so.1\n");
		return 77;
	}
	report("dlopen libnvidia-ml.so.1");
	SYM(f_void, nvmlInit_v2);
	nvmlInit_v2();
	report("nvmlInit_v2");
	char buf[256];
	SYM(f_buf, nvmlSystemGetDriverVersion);
	SYM(f_buf, nvmlSystemGetNVMLVersion);
	nvmlSystemGetDriverVersion(buf, sizeof(buf));
	nvmlSystemGetNVMLVersion(buf, sizeof(buf));
	report("driver and NVML versions");
	SYM(f_int, nvmlSystemGetCudaDriverVersion);
	int cv = 0;
	nvmlSystemGetCudaDriverVersion(&cv);
	report("nvmlSystemGetCudaDriverVersion");
	SYM(f_dev_idx, nvmlDeviceGetHandleByIndex_v2);
	SYM(f_dev_buf, nvmlDeviceGetName);
	SYM(f_dev_buf, nvmlDeviceGetUUID);
	SYM(f_dev_ptr, nvmlDeviceGetPciInfo_v3);
	void *dev = NULL;
	static char big[4096];
	nvmlDeviceGetHandleByIndex_v2(0, &dev);
	nvmlDeviceGetName(dev, buf, sizeof(buf));
	nvmlDeviceGetUUID(dev, buf, sizeof(buf));
	if (nvmlDeviceGetPciInfo_v3)
		nvmlDeviceGetPciInfo_v3(dev, big);
	report("handle, name, UUID, PCI");
	SYM(f_dev_2ptr, nvmlDeviceGetCudaComputeCapability);
	int ma, mi;
	nvmlDeviceGetCudaComputeCapability(dev, &ma, &mi);
	report("nvmlDeviceGetCudaComputeCapability");
	SYM(f_dev_ptr, nvmlDeviceGetMemoryInfo);
	SYM(f_dev_ptr, nvmlDeviceGetUtilizationRates);
	SYM(f_dev_ptr, nvmlDeviceGetPowerUsage);
	SYM(f_dev_uint_ptr, nvmlDeviceGetTemperature);
	SYM(f_dev_uint_ptr, nvmlDeviceGetClockInfo);
	SYM(f_dev_ptr, nvmlDeviceGetCurrentClocksEventReasons);
	nvmlDeviceGetMemoryInfo(dev, big);
	nvmlDeviceGetUtilizationRates(dev, big);
	nvmlDeviceGetPowerUsage(dev, big);
	nvmlDeviceGetTemperature(dev, 0, big);
	nvmlDeviceGetClockInfo(dev, 1, big);
	if (nvmlDeviceGetCurrentClocksEventReasons)
		nvmlDeviceGetCurrentClocksEventReasons(dev, big);
	report("memory, utilization, power, temperature, clocks");
	SYM(f_dev_2ptr, nvmlDeviceGetComputeRunningProcesses_v3);
	unsigned n = 0;
	if (nvmlDeviceGetComputeRunningProcesses_v3)
		nvmlDeviceGetComputeRunningProcesses_v3(dev, &n, NULL);
	report("nvmlDeviceGetComputeRunningProcesses_v3");
	SYM(f_dev_2ptr, nvmlDeviceGetMigMode);
	SYM(f_dev_2ptr, nvmlDeviceGetEccMode);
	if (nvmlDeviceGetEccMode)
		nvmlDeviceGetEccMode(dev, big, big + 64);
	if (nvmlDeviceGetMigMode)
		nvmlDeviceGetMigMode(dev, big, big + 64);
	report("ECC and MIG modes");
	SYM(f_evcreate, nvmlEventSetCreate);
	SYM(f_evreg, nvmlDeviceRegisterEvents);
	SYM(f_evwait, nvmlEventSetWait_v2);
	void *set = NULL;
	nvmlEventSetCreate(&set);
	nvmlDeviceRegisterEvents(dev, 0x8ull /* Xid */, set);
	report("event set, Xid events registered");
	if (nvmlEventSetWait_v2)
		nvmlEventSetWait_v2(set, big, 1);
	report("nvmlEventSetWait_v2 (1 ms)");
	return 0;
}
