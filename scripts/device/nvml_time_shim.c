/* A timing shim for NVML (a developer's tool, scripts/device/fastprof.sh): gpuvet loads it
 * through GPUVET_NVML_LIB; each function gpuvet looks up forwards to the real library's and
 * appends "pid name seconds" to $NVML_SHIM_OUT. Every NVML entry gpuvet uses takes at most six
 * integer or pointer arguments and returns an int (nvmlErrorString a pointer), so one forwarder
 * shape serves them all under the x86-64 System V convention. A name the real library lacks
 * answers NVML_ERROR_FUNCTION_NOT_FOUND (13). The names: every "nvml..." string of src/nvidia. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static void *real_lib(void)
{
	static void *h;
	if (!h)
		h = dlopen(getenv("NVML_SHIM_REAL") ? getenv("NVML_SHIM_REAL") : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	return h;
}
static void note(const char *name, double dt)
{
	const char *o = getenv("NVML_SHIM_OUT");
	if (!o)
		return;
	char b[192];
	int n = snprintf(b, sizeof b, "%d %s %.7f\n", (int)getpid(), name, dt);
	int fd = open(o, O_WRONLY | O_APPEND | O_CREAT, 0644);
	if (fd >= 0) {
		if (write(fd, b, (size_t)n) < 0) {}
		close(fd);
	}
}
typedef long (*fwd6)(long, long, long, long, long, long);
#define F(name)                                                                        \
	long name(long a, long b, long c, long d, long e, long g)                      \
	{                                                                              \
		static fwd6 p;                                                         \
		static int tried;                                                      \
		if (!tried) {                                                          \
			void *h = real_lib();                                          \
			p = h ? (fwd6)dlsym(h, #name) : NULL;                          \
			tried = 1;                                                     \
		}                                                                      \
		if (!p)                                                                \
			return 13;                                                     \
		struct timespec t0, t1;                                                \
		clock_gettime(CLOCK_MONOTONIC, &t0);                                   \
		long r = p(a, b, c, d, e, g);                                          \
		clock_gettime(CLOCK_MONOTONIC, &t1);                                   \
		note(#name, (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9); \
		return r;                                                              \
	}
const char *nvmlErrorString(int rc)
{
	static const char *(*p)(int);
	if (!p && real_lib())
		p = (const char *(*)(int))dlsym(real_lib(), "nvmlErrorString");
	return p ? p(rc) : "unknown";
}
F(nvmlDeviceGetClockInfo)
F(nvmlDeviceGetComputeMode)
F(nvmlDeviceGetComputeRunningProcesses)
F(nvmlDeviceGetComputeRunningProcesses_v2)
F(nvmlDeviceGetComputeRunningProcesses_v3)
F(nvmlDeviceGetCount)
F(nvmlDeviceGetCount_v2)
F(nvmlDeviceGetCudaComputeCapability)
F(nvmlDeviceGetCurrPcieLinkGeneration)
F(nvmlDeviceGetCurrPcieLinkWidth)
F(nvmlDeviceGetCurrentClocksEventReasons)
F(nvmlDeviceGetCurrentClocksThrottleReasons)
F(nvmlDeviceGetDecoderUtilization)
F(nvmlDeviceGetEccMode)
F(nvmlDeviceGetEncoderUtilization)
F(nvmlDeviceGetEnforcedPowerLimit)
F(nvmlDeviceGetFanSpeed)
F(nvmlDeviceGetFieldValues)
F(nvmlDeviceGetGpuFabricInfo)
F(nvmlDeviceGetGpuFabricInfoV)
F(nvmlDeviceGetGraphicsRunningProcesses)
F(nvmlDeviceGetGraphicsRunningProcesses_v2)
F(nvmlDeviceGetGraphicsRunningProcesses_v3)
F(nvmlDeviceGetHandleByIndex)
F(nvmlDeviceGetHandleByIndex_v2)
F(nvmlDeviceGetMaxClockInfo)
F(nvmlDeviceGetMaxMigDeviceCount)
F(nvmlDeviceGetMaxPcieLinkGeneration)
F(nvmlDeviceGetMaxPcieLinkWidth)
F(nvmlDeviceGetMemoryInfo)
F(nvmlDeviceGetMemoryInfo_v2)
F(nvmlDeviceGetMigDeviceHandleByIndex)
F(nvmlDeviceGetMigMode)
F(nvmlDeviceGetMinorNumber)
F(nvmlDeviceGetName)
F(nvmlDeviceGetNvLinkErrorCounter)
F(nvmlDeviceGetNvLinkRemoteDeviceType)
F(nvmlDeviceGetNvLinkRemotePciInfo)
F(nvmlDeviceGetNvLinkRemotePciInfo_v2)
F(nvmlDeviceGetNvLinkState)
F(nvmlDeviceGetNvLinkVersion)
F(nvmlDeviceGetPciInfo)
F(nvmlDeviceGetPciInfo_v2)
F(nvmlDeviceGetPciInfo_v3)
F(nvmlDeviceGetPcieReplayCounter)
F(nvmlDeviceGetPcieThroughput)
F(nvmlDeviceGetPersistenceMode)
F(nvmlDeviceGetPowerManagementDefaultLimit)
F(nvmlDeviceGetPowerUsage)
F(nvmlDeviceGetProcessUtilization)
F(nvmlDeviceGetRemappedRows)
F(nvmlDeviceGetRetiredPages)
F(nvmlDeviceGetRetiredPagesPendingStatus)
F(nvmlDeviceGetSerial)
F(nvmlDeviceGetTemperature)
F(nvmlDeviceGetTemperatureThreshold)
F(nvmlDeviceGetTotalEccErrors)
F(nvmlDeviceGetTotalEnergyConsumption)
F(nvmlDeviceGetUUID)
F(nvmlDeviceGetUtilizationRates)
F(nvmlDeviceRegisterEvents)
F(nvmlEventSetCreate)
F(nvmlEventSetFree)
F(nvmlEventSetWait)
F(nvmlEventSetWait_v2)
F(nvmlGpmMetricsGet)
F(nvmlGpmQueryDeviceSupport)
F(nvmlGpmSampleAlloc)
F(nvmlGpmSampleFree)
F(nvmlGpmSampleGet)
F(nvmlInit)
F(nvmlInit_v2)
F(nvmlShutdown)
F(nvmlSystemGetCudaDriverVersion)
F(nvmlSystemGetCudaDriverVersion_v2)
F(nvmlSystemGetDriverVersion)
F(nvmlSystemGetNVMLVersion)
F(nvmlSystemGetProcessName)
