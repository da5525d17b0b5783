/*
 * NVML through dlopen: the function table, loading once, and per-device snapshots with a
 * validity for every value. See nvml.h.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/child.h"
#include "core/util.h"
#include "nvidia/dlload.h"
#include "nvidia/nvml.h"

/* ---- the function table ---- */

typedef struct nvml_fns {
	/* required (one of each pair) */
	nvmlReturn_t (*Init)(void);
	nvmlReturn_t (*Shutdown)(void);
	nvmlReturn_t (*DeviceGetCount)(unsigned *);
	nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t *);
	const char *(*ErrorString)(nvmlReturn_t);
	/* optional */
	nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned);
	nvmlReturn_t (*SystemGetNVMLVersion)(char *, unsigned);
	nvmlReturn_t (*SystemGetCudaDriverVersion)(int *);
	nvmlReturn_t (*SystemGetProcessName)(unsigned, char *, unsigned);
	nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*DeviceGetSerial)(nvmlDevice_t, char *, unsigned);
	nvmlReturn_t (*DeviceGetPcieReplayCounter)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
	nvmlReturn_t (*DeviceGetMinorNumber)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
	nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
	nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, int *);
	nvmlReturn_t (*DeviceGetComputeMode)(nvmlDevice_t, int *);
	nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*DeviceGetMaxMigDeviceCount)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned, nvmlDevice_t *);
	nvmlReturn_t (*DeviceGetGpuInstanceId)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetComputeInstanceId)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*DeviceGetEccMode)(nvmlDevice_t, int *, int *);
	nvmlReturn_t (*DeviceGetTotalEccErrors)(nvmlDevice_t, int, int, unsigned long long *);
	nvmlReturn_t (*DeviceGetRetiredPages)(nvmlDevice_t, int, unsigned *, unsigned long long *);
	nvmlReturn_t (*DeviceGetRetiredPagesPendingStatus)(nvmlDevice_t, int *);
	nvmlReturn_t (*DeviceGetRemappedRows)(nvmlDevice_t, unsigned *, unsigned *, unsigned *, unsigned *);
	nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*DeviceGetTemperatureThreshold)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
	nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetEnforcedPowerLimit)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned *);
	nvmlReturn_t (*DeviceGetClocksEventReasons)(nvmlDevice_t, unsigned long long *);
	nvmlReturn_t (*DeviceGetFanSpeed)(nvmlDevice_t, unsigned *);
	nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
	nvmlReturn_t (*DeviceGetEncoderUtilization)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*DeviceGetDecoderUtilization)(nvmlDevice_t, unsigned *, unsigned *);
	nvmlReturn_t (*DeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *,
						    unsigned long long);
	/* the process calls: v2 and v3 take nvmlProcessInfo_t, v1 the shorter struct */
	nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned *, void *);
	nvmlReturn_t (*DeviceGetGraphicsRunningProcesses)(nvmlDevice_t, unsigned *, void *);
	bool compute_procs_v1, graphics_procs_v1;
	bool compute_procs_v3, graphics_procs_v3; /* the _v3 names were the ones found */
	nvmlReturn_t (*DeviceGetGpuFabricInfo)(nvmlDevice_t, nvmlGpuFabricInfo_t *);
	nvmlReturn_t (*DeviceGetGpuFabricInfoV)(nvmlDevice_t, nvmlGpuFabricInfo_v2_t *);
	nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
	nvmlReturn_t (*DeviceRegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
	nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvmlEventData_t *, unsigned);
	nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
} nvml_fns;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* Serialises callers of gv_nvml_init/shutdown only: nvmlInit can take long (or hang), and the
 * state lock must stay free meanwhile for the status, error strings and readiness checks. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static nvml_fns fn;
static gv_nvml_status status;
static bool initialized; /* nvmlInit succeeded and no shutdown since */
static pid_t init_pid;   /* the process whose nvmlInit status.init_* and initialized describe */

#define SYM(field, ...) (*(void **)&fn.field = gv_dl_sym_first(lib, (const char *const[]){__VA_ARGS__, NULL}))

static void resolve(void)
{
	memset(&fn, 0, sizeof(fn));
	SYM(Init, "nvmlInit_v2", "nvmlInit");
	SYM(Shutdown, "nvmlShutdown");
	SYM(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	SYM(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
	SYM(ErrorString, "nvmlErrorString");

	SYM(SystemGetDriverVersion, "nvmlSystemGetDriverVersion");
	SYM(SystemGetNVMLVersion, "nvmlSystemGetNVMLVersion");
	SYM(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
	SYM(SystemGetProcessName, "nvmlSystemGetProcessName");
	SYM(DeviceGetName, "nvmlDeviceGetName");
	SYM(DeviceGetUUID, "nvmlDeviceGetUUID");
	SYM(DeviceGetSerial, "nvmlDeviceGetSerial");
	SYM(DeviceGetPcieReplayCounter, "nvmlDeviceGetPcieReplayCounter");
	SYM(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo");
	SYM(DeviceGetMinorNumber, "nvmlDeviceGetMinorNumber");
	SYM(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability");
	SYM(DeviceGetMemoryInfo_v2, "nvmlDeviceGetMemoryInfo_v2");
	SYM(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo");
	SYM(DeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode");
	SYM(DeviceGetComputeMode, "nvmlDeviceGetComputeMode");
	SYM(DeviceGetMigMode, "nvmlDeviceGetMigMode");
	SYM(DeviceGetMaxMigDeviceCount, "nvmlDeviceGetMaxMigDeviceCount");
	SYM(DeviceGetMigDeviceHandleByIndex, "nvmlDeviceGetMigDeviceHandleByIndex");
	SYM(DeviceGetGpuInstanceId, "nvmlDeviceGetGpuInstanceId");
	SYM(DeviceGetComputeInstanceId, "nvmlDeviceGetComputeInstanceId");
	SYM(DeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration");
	SYM(DeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration");
	SYM(DeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth");
	SYM(DeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth");
	SYM(DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput");
	SYM(DeviceGetEccMode, "nvmlDeviceGetEccMode");
	SYM(DeviceGetTotalEccErrors, "nvmlDeviceGetTotalEccErrors");
	SYM(DeviceGetRetiredPages, "nvmlDeviceGetRetiredPages");
	SYM(DeviceGetRetiredPagesPendingStatus, "nvmlDeviceGetRetiredPagesPendingStatus");
	SYM(DeviceGetRemappedRows, "nvmlDeviceGetRemappedRows");
	SYM(DeviceGetTemperature, "nvmlDeviceGetTemperature");
	SYM(DeviceGetTemperatureThreshold, "nvmlDeviceGetTemperatureThreshold");
	SYM(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates");
	SYM(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage");
	SYM(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit");
	SYM(DeviceGetPowerManagementDefaultLimit, "nvmlDeviceGetPowerManagementDefaultLimit");
	SYM(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption");
	SYM(DeviceGetClockInfo, "nvmlDeviceGetClockInfo");
	SYM(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo");
	SYM(DeviceGetClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",
	    "nvmlDeviceGetCurrentClocksThrottleReasons");
	SYM(DeviceGetFanSpeed, "nvmlDeviceGetFanSpeed");
	SYM(DeviceGetFieldValues, "nvmlDeviceGetFieldValues");
	SYM(DeviceGetEncoderUtilization, "nvmlDeviceGetEncoderUtilization");
	SYM(DeviceGetDecoderUtilization, "nvmlDeviceGetDecoderUtilization");
	SYM(DeviceGetProcessUtilization, "nvmlDeviceGetProcessUtilization");
	SYM(DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2");
	fn.compute_procs_v3 = fn.DeviceGetComputeRunningProcesses &&
			      gv_dl_sym(lib, "nvmlDeviceGetComputeRunningProcesses_v3") == *(void **)&fn.DeviceGetComputeRunningProcesses;
	if (!fn.DeviceGetComputeRunningProcesses) {
		SYM(DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses");
		fn.compute_procs_v1 = true;
	}
	SYM(DeviceGetGraphicsRunningProcesses, "nvmlDeviceGetGraphicsRunningProcesses_v3",
	    "nvmlDeviceGetGraphicsRunningProcesses_v2");
	fn.graphics_procs_v3 = fn.DeviceGetGraphicsRunningProcesses &&
			       gv_dl_sym(lib, "nvmlDeviceGetGraphicsRunningProcesses_v3") == *(void **)&fn.DeviceGetGraphicsRunningProcesses;
	if (!fn.DeviceGetGraphicsRunningProcesses) {
		SYM(DeviceGetGraphicsRunningProcesses, "nvmlDeviceGetGraphicsRunningProcesses");
		fn.graphics_procs_v1 = true;
	}
	SYM(DeviceGetGpuFabricInfo, "nvmlDeviceGetGpuFabricInfo");
	SYM(DeviceGetGpuFabricInfoV, "nvmlDeviceGetGpuFabricInfoV");
	SYM(EventSetCreate, "nvmlEventSetCreate");
	SYM(DeviceRegisterEvents, "nvmlDeviceRegisterEvents");
	SYM(EventSetWait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
	SYM(EventSetFree, "nvmlEventSetFree");
}

static const char *missing_basic(void)
{
	if (!fn.Init)
		return "nvmlInit_v2";
	if (!fn.Shutdown)
		return "nvmlShutdown";
	if (!fn.DeviceGetCount)
		return "nvmlDeviceGetCount_v2";
	if (!fn.DeviceGetHandleByIndex)
		return "nvmlDeviceGetHandleByIndex_v2";
	if (!fn.ErrorString)
		return "nvmlErrorString";
	return NULL;
}

static const gv_driver_lib libnvml = {"GPUVET_NVML_LIB", "libnvidia-ml.so.1", "nvmlErrorString", resolve,
				      missing_basic};

static void load_locked(void)
{
	if (status.attempted)
		return;
	status.attempted = true;
	status.loaded = gv_dl_load_driver_lib(&libnvml, &lib, status.path, sizeof(status.path), status.error,
					      sizeof(status.error), &status.from_env);
}

bool gv_nvml_load(void)
{
	pthread_mutex_lock(&lock);
	load_locked();
	bool ok = status.loaded;
	pthread_mutex_unlock(&lock);
	return ok;
}

/*
 * NVML's state does not survive fork, and ours would: a supervised child (core/child.h) forked
 * after this process initialised NVML (gpuvet run's job follower, then the explanation's check)
 * inherited init_called and skipped nvmlInit, and its first query answered
 * NVML_ERROR_UNINITIALIZED on a healthy machine (driver.nvml-failed, "nvmlDeviceGetCount").
 * What we recorded of another process's nvmlInit is forgotten: this one initialises NVML itself,
 * and never shuts down on the parent's behalf. Called with lock held.
 */
static void forget_parents_init_locked(void)
{
	if (status.init_called && init_pid != getpid()) {
		status.init_called = false;
		status.init_rc = NVML_SUCCESS;
		status.init_seconds = 0;
		initialized = false;
	}
}

nvmlReturn_t gv_nvml_init(void)
{
	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&lock);
	forget_parents_init_locked();
	load_locked();
	bool called = status.init_called, loaded = status.loaded, have_lib = lib != NULL;
	nvmlReturn_t rc = status.init_rc;
	pthread_mutex_unlock(&lock);
	if (!called) {
		double t0 = now_seconds(), dt = 0;
		if (!have_lib) {
			rc = NVML_ERROR_LIBRARY_NOT_FOUND;
		} else if (!loaded) {
			rc = NVML_ERROR_FUNCTION_NOT_FOUND;
		} else {
			rc = fn.Init();
			dt = now_seconds() - t0;
		}
		pthread_mutex_lock(&lock);
		status.init_called = true;
		status.init_rc = rc;
		status.init_seconds = dt;
		initialized = rc == NVML_SUCCESS;
		init_pid = getpid();
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_unlock(&init_lock);
	return rc;
}

void gv_nvml_status_get(gv_nvml_status *out)
{
	pthread_mutex_lock(&lock);
	forget_parents_init_locked();
	*out = status;
	pthread_mutex_unlock(&lock);
}

void gv_nvml_shutdown(void)
{
	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&lock);
	forget_parents_init_locked(); /* the parent's initialisation is not this process's to end */
	bool was = initialized;
	initialized = false;
	status.init_called = false;
	pthread_mutex_unlock(&lock);
	if (was && fn.Shutdown)
		fn.Shutdown();
	pthread_mutex_unlock(&init_lock);
}

void gv_nvml_unload(void)
{
	gv_nvml_shutdown();
	pthread_mutex_lock(&lock);
	if (lib)
		dlclose(lib);
	lib = NULL;
	memset(&fn, 0, sizeof(fn));
	memset(&status, 0, sizeof(status));
	pthread_mutex_unlock(&lock);
}

bool gv_nvml_has_symbol(const char *sym)
{
	return gv_nvml_symbol(sym) != NULL;
}

void *gv_nvml_symbol(const char *sym)
{
	gv_nvml_load();
	pthread_mutex_lock(&lock);
	void *p = lib && status.loaded ? gv_dl_sym(lib, sym) : NULL;
	pthread_mutex_unlock(&lock);
	return p;
}

/* ---- error names ---- */

static const struct {
	nvmlReturn_t rc;
	const char *name, *text;
} nvml_errors[] = {
	{0, "NVML_SUCCESS", "success"},
	{1, "NVML_ERROR_UNINITIALIZED", "NVML was not first initialized with nvmlInit()"},
	{2, "NVML_ERROR_INVALID_ARGUMENT", "a supplied argument is invalid"},
	{3, "NVML_ERROR_NOT_SUPPORTED", "the requested operation is not available on this device"},
	{4, "NVML_ERROR_NO_PERMISSION", "the current user does not have permission for the operation"},
	{5, "NVML_ERROR_ALREADY_INITIALIZED", "already initialized"},
	{6, "NVML_ERROR_NOT_FOUND", "a query to find an object was unsuccessful"},
	{7, "NVML_ERROR_INSUFFICIENT_SIZE", "an input argument is not large enough"},
	{8, "NVML_ERROR_INSUFFICIENT_POWER", "a device's external power cables are not properly attached"},
	{9, "NVML_ERROR_DRIVER_NOT_LOADED", "NVIDIA driver is not loaded"},
	{10, "NVML_ERROR_TIMEOUT", "user provided timeout passed"},
	{11, "NVML_ERROR_IRQ_ISSUE", "NVIDIA kernel detected an interrupt issue with a GPU"},
	{12, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML shared library couldn't be found or loaded"},
	{13, "NVML_ERROR_FUNCTION_NOT_FOUND", "local version of NVML doesn't implement this function"},
	{14, "NVML_ERROR_CORRUPTED_INFOROM", "infoROM is corrupted"},
	{15, "NVML_ERROR_GPU_IS_LOST", "the GPU has fallen off the bus or has otherwise become inaccessible"},
	{16, "NVML_ERROR_RESET_REQUIRED", "the GPU requires a reset before it can be used again"},
	{17, "NVML_ERROR_OPERATING_SYSTEM", "the GPU control device has been blocked by the operating system/cgroups"},
	{18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH", "RM detects a driver/library version mismatch"},
	{19, "NVML_ERROR_IN_USE", "an operation cannot be performed because the GPU is currently in use"},
	{20, "NVML_ERROR_MEMORY", "insufficient memory"},
	{21, "NVML_ERROR_NO_DATA", "no data"},
	{22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED", "the requested vgpu operation is not available because ECC is enabled"},
	{23, "NVML_ERROR_INSUFFICIENT_RESOURCES", "ran out of critical resources, other than memory"},
	{24, "NVML_ERROR_FREQ_NOT_SUPPORTED", "the frequency is not supported"},
	{25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "the provided version is invalid/unsupported"},
	{26, "NVML_ERROR_DEPRECATED", "the requested functionality has been deprecated"},
	{27, "NVML_ERROR_NOT_READY", "the system is not ready for the request"},
	{28, "NVML_ERROR_GPU_NOT_FOUND", "no GPUs were found"},
	{29, "NVML_ERROR_INVALID_STATE", "resource not in correct state to perform requested operation"},
	{999, "NVML_ERROR_UNKNOWN", "an internal driver error occurred"},
};

const char *gv_nvml_return_name(nvmlReturn_t rc)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(nvml_errors); i++)
		if (nvml_errors[i].rc == rc)
			return nvml_errors[i].name;
	return "NVML_ERROR_UNKNOWN_CODE";
}

const char *gv_nvml_error_string(nvmlReturn_t rc)
{
	const char *s = NULL;
	pthread_mutex_lock(&lock);
	bool have = status.loaded && fn.ErrorString;
	pthread_mutex_unlock(&lock);
	if (have)
		s = fn.ErrorString(rc);
	if (s && *s)
		return s;
	for (size_t i = 0; i < GV_ARRAY_LEN(nvml_errors); i++)
		if (nvml_errors[i].rc == rc)
			return nvml_errors[i].text;
	return "unknown NVML error";
}

/* ---- values ---- */

static bool ready(void)
{
	pthread_mutex_lock(&lock);
	forget_parents_init_locked();
	bool r = initialized;
	pthread_mutex_unlock(&lock);
	return r;
}

gv_vstate gv_nvml_vstate(nvmlReturn_t rc)
{
	if (rc == NVML_SUCCESS)
		return GV_V_OK;
	if (rc == NVML_ERROR_NOT_SUPPORTED || rc == NVML_ERROR_FUNCTION_NOT_FOUND)
		return GV_V_UNSUPPORTED;
	return GV_V_ERROR;
}

bool gv_nvml_put_rc(gv_vstate *st, nvmlReturn_t *out_rc, nvmlReturn_t rc)
{
	*out_rc = rc;
	*st = gv_nvml_vstate(rc);
	return rc == NVML_SUCCESS;
}

static void u64_unsupported(gv_nv_u64 *v)
{
	v->st = GV_V_UNSUPPORTED;
	v->rc = NVML_ERROR_FUNCTION_NOT_FOUND;
	v->v = 0;
}

void gv_nvml_u64_set(gv_nv_u64 *v, nvmlReturn_t rc, unsigned long long value)
{
	v->v = gv_nvml_put_rc(&v->st, &v->rc, rc) ? value : 0;
}

static void str_set(gv_nv_str *s, nvmlReturn_t rc)
{
	if (!gv_nvml_put_rc(&s->st, &s->rc, rc))
		s->v[0] = '\0';
	s->v[sizeof(s->v) - 1] = '\0';
	str_sanitize(s->v);
}

static void str_unsupported(gv_nv_str *s)
{
	s->st = GV_V_UNSUPPORTED;
	s->rc = NVML_ERROR_FUNCTION_NOT_FOUND;
	s->v[0] = '\0';
}

/* Calls fn.F(dev, &unsigned) into a field, or marks the field unsupported when F is missing. */
#define GET_UINT(F, dev, field)                                                                               \
	do {                                                                                                  \
		if (!fn.F) {                                                                                  \
			u64_unsupported(&(field));                                                            \
		} else {                                                                                      \
			unsigned v_ = 0;                                                                      \
			nvmlReturn_t rc_ = fn.F(dev, &v_);                                                    \
			gv_nvml_u64_set(&(field), rc_, v_);                                                   \
		}                                                                                             \
	} while (0)
#define GET_UINT_ARG(F, dev, arg, field)                                                                      \
	do {                                                                                                  \
		if (!fn.F) {                                                                                  \
			u64_unsupported(&(field));                                                            \
		} else {                                                                                      \
			unsigned v_ = 0;                                                                      \
			nvmlReturn_t rc_ = fn.F(dev, arg, &v_);                                               \
			gv_nvml_u64_set(&(field), rc_, v_);                                                   \
		}                                                                                             \
	} while (0)

void gv_nvml_system_info(gv_nvml_system *out)
{
	memset(out, 0, sizeof(*out));
	if (!ready()) {
		nvmlReturn_t rc = gv_nvml_init();
		if (rc != NVML_SUCCESS) {
			str_set(&out->driver_version, rc);
			str_set(&out->nvml_version, rc);
			gv_nvml_u64_set(&out->cuda_driver_version, rc, 0);
			return;
		}
	}
	if (fn.SystemGetDriverVersion)
		str_set(&out->driver_version, fn.SystemGetDriverVersion(out->driver_version.v, sizeof(out->driver_version.v)));
	else
		str_unsupported(&out->driver_version);
	if (fn.SystemGetNVMLVersion)
		str_set(&out->nvml_version, fn.SystemGetNVMLVersion(out->nvml_version.v, sizeof(out->nvml_version.v)));
	else
		str_unsupported(&out->nvml_version);
	if (fn.SystemGetCudaDriverVersion) {
		int v = 0;
		nvmlReturn_t rc = fn.SystemGetCudaDriverVersion(&v);
		gv_nvml_u64_set(&out->cuda_driver_version, rc, v > 0 ? (unsigned long long)v : 0);
	} else {
		u64_unsupported(&out->cuda_driver_version);
	}
}

nvmlReturn_t gv_nvml_device_count(unsigned *count)
{
	*count = 0;
	nvmlReturn_t rc = gv_nvml_init();
	if (rc != NVML_SUCCESS)
		return rc;
	rc = fn.DeviceGetCount(count);
	if (rc != NVML_SUCCESS)
		*count = 0;
	if (*count > 1024) /* a broken library must not make callers loop for ever */
		*count = 1024;
	return rc;
}

nvmlReturn_t gv_nvml_device_handle(unsigned index, nvmlDevice_t *out)
{
	*out = NULL;
	nvmlReturn_t rc = gv_nvml_init();
	if (rc != NVML_SUCCESS)
		return rc;
	return fn.DeviceGetHandleByIndex(index, out);
}

void gv_nvml_device_clear(gv_nvml_device *d)
{
	memset(d, 0, sizeof(*d));
}

/* nvmlDeviceGetMemoryInfo(_v2): the call's result and the figures; *have_reserved when _v2 answered. */
static nvmlReturn_t memory_info(nvmlDevice_t dev, unsigned long long *total, unsigned long long *used,
				unsigned long long *freeb, unsigned long long *reserved, bool *have_reserved)
{
	nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
	*total = *used = *freeb = *reserved = 0;
	*have_reserved = false;
	if (fn.DeviceGetMemoryInfo_v2) {
		nvmlMemory_v2_t m = {.version = NVML_MEMORY_V2};
		rc = fn.DeviceGetMemoryInfo_v2(dev, &m);
		if (rc == NVML_SUCCESS) {
			*total = m.total, *used = m.used, *freeb = m.free, *reserved = m.reserved;
			*have_reserved = true;
		}
	}
	/* an old driver may export _v2 but refuse the struct version: fall back */
	if (rc != NVML_SUCCESS && fn.DeviceGetMemoryInfo) {
		nvmlMemory_t m = {0};
		rc = fn.DeviceGetMemoryInfo(dev, &m);
		if (rc == NVML_SUCCESS)
			*total = m.total, *used = m.used, *freeb = m.free;
	}
	return rc;
}

static void snap_memory(nvmlDevice_t dev, gv_nvml_device *d)
{
	unsigned long long total, used, freeb, reserved;
	bool have_reserved;
	nvmlReturn_t rc = memory_info(dev, &total, &used, &freeb, &reserved, &have_reserved);
	gv_nvml_u64_set(&d->memory_total, rc, total);
	gv_nvml_u64_set(&d->memory_used, rc, used);
	gv_nvml_u64_set(&d->memory_free, rc, freeb);
	if (have_reserved)
		gv_nvml_u64_set(&d->memory_reserved, rc, reserved);
	else
		u64_unsupported(&d->memory_reserved);
}

static void snap_identity(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (fn.DeviceGetName)
		str_set(&d->name, fn.DeviceGetName(dev, d->name.v, sizeof(d->name.v)));
	else
		str_unsupported(&d->name);
	if (fn.DeviceGetUUID)
		str_set(&d->uuid, fn.DeviceGetUUID(dev, d->uuid.v, sizeof(d->uuid.v)));
	else
		str_unsupported(&d->uuid);
	if (fn.DeviceGetSerial) /* NVML_DEVICE_SERIAL_BUFFER_SIZE is 30: the name buffer holds it */
		str_set(&d->serial, fn.DeviceGetSerial(dev, d->serial.v, sizeof(d->serial.v)));
	else
		str_unsupported(&d->serial);
	if (fn.DeviceGetPciInfo) {
		nvmlPciInfo_t pci;
		memset(&pci, 0, sizeof(pci));
		nvmlReturn_t rc = fn.DeviceGetPciInfo(dev, &pci);
		gv_nvml_pci_bus_id(&pci, d->pci_bus_id.v, sizeof(d->pci_bus_id.v));
		str_set(&d->pci_bus_id, rc);
		gv_nvml_u64_set(&d->pci_device_id, rc, pci.pciDeviceId);
		gv_nvml_u64_set(&d->pci_subsystem_id, rc, pci.pciSubSystemId);
	} else {
		str_unsupported(&d->pci_bus_id);
		u64_unsupported(&d->pci_device_id);
		u64_unsupported(&d->pci_subsystem_id);
	}
	GET_UINT(DeviceGetMinorNumber, dev, d->minor_number);
	if (fn.DeviceGetCudaComputeCapability) {
		int major = 0, minor = 0;
		nvmlReturn_t rc = fn.DeviceGetCudaComputeCapability(dev, &major, &minor);
		gv_nvml_u64_set(&d->cc_major, rc, major >= 0 ? (unsigned)major : 0);
		gv_nvml_u64_set(&d->cc_minor, rc, minor >= 0 ? (unsigned)minor : 0);
	} else {
		u64_unsupported(&d->cc_major);
		u64_unsupported(&d->cc_minor);
	}
}

/* The identity's slow calls, measured on an H200 (driver 580, scripts/device/fastprof.sh's NVML
 * shim): 1.5 to 3 ms each, against microseconds for the names. */
static void snap_pcie_max(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetMaxPcieLinkGeneration, dev, d->pcie_gen_max);
	GET_UINT(DeviceGetMaxPcieLinkWidth, dev, d->pcie_width_max);
}

static void snap_temp_slowdown(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetTemperatureThreshold, dev, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, d->temp_slowdown_c);
}

static void snap_temp_shutdown(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetTemperatureThreshold, dev, NVML_TEMPERATURE_THRESHOLD_SHUTDOWN, d->temp_shutdown_c);
}

static void snap_temp_gpu_max(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetTemperatureThreshold, dev, NVML_TEMPERATURE_THRESHOLD_GPU_MAX, d->temp_gpu_max_c);
}

static void snap_max_sm_clock(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetMaxClockInfo, dev, NVML_CLOCK_SM, d->max_sm_clock_mhz);
}

static void snap_max_mem_clock(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetMaxClockInfo, dev, NVML_CLOCK_MEM, d->max_mem_clock_mhz);
}

static void snap_power_limit(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetEnforcedPowerLimit, dev, d->power_limit_mw);
}

static void snap_power_default_limit(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetPowerManagementDefaultLimit, dev, d->power_default_limit_mw);
}

/* MIG mode and the MIG devices: uuid, GPU and compute instance ids, name, memory. */
static void snap_mig(nvmlDevice_t dev, gv_nvml_device *d)
{
	d->mig_count = 0;
	for (unsigned i = 0; i < GV_NVML_MAX_MIG; i++) {
		d->mig_uuid[i].st = GV_V_UNSET;
		memset(&d->mig[i], 0, sizeof(d->mig[i]));
	}
	if (!fn.DeviceGetMigMode) {
		u64_unsupported(&d->mig_mode);
		u64_unsupported(&d->mig_pending);
		return;
	}
	unsigned cur = 0, pending = 0;
	nvmlReturn_t rc = fn.DeviceGetMigMode(dev, &cur, &pending);
	gv_nvml_u64_set(&d->mig_mode, rc, cur == NVML_DEVICE_MIG_ENABLE);
	gv_nvml_u64_set(&d->mig_pending, rc, pending == NVML_DEVICE_MIG_ENABLE);
	unsigned max = 0;
	if (rc != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE || !fn.DeviceGetMaxMigDeviceCount ||
	    !fn.DeviceGetMigDeviceHandleByIndex || fn.DeviceGetMaxMigDeviceCount(dev, &max) != NVML_SUCCESS)
		return;
	for (unsigned i = 0; i < max && i < 64 && d->mig_count < GV_NVML_MAX_MIG; i++) {
		nvmlDevice_t mig = NULL;
		if (fn.DeviceGetMigDeviceHandleByIndex(dev, i, &mig) != NVML_SUCCESS || !mig)
			continue; /* NOT_FOUND: an empty slot */
		gv_nv_str *u = &d->mig_uuid[d->mig_count];
		gv_nvml_mig *m = &d->mig[d->mig_count++];
		if (fn.DeviceGetUUID)
			str_set(u, fn.DeviceGetUUID(mig, u->v, sizeof(u->v)));
		else
			str_unsupported(u);
		GET_UINT(DeviceGetGpuInstanceId, mig, m->gpu_instance_id);
		GET_UINT(DeviceGetComputeInstanceId, mig, m->compute_instance_id);
		if (fn.DeviceGetName)
			str_set(&m->name, fn.DeviceGetName(mig, m->name.v, sizeof(m->name.v)));
		else
			str_unsupported(&m->name);
		unsigned long long total, used, freeb, reserved;
		bool have_reserved;
		nvmlReturn_t mrc = memory_info(mig, &total, &used, &freeb, &reserved, &have_reserved);
		gv_nvml_u64_set(&m->memory_total, mrc, total);
		gv_nvml_u64_set(&m->memory_used, mrc, used);
	}
}

const char *gv_nvml_mig_profile(const char *name, char *out, size_t size)
{
	const char *p = name ? strstr(name, "MIG ") : NULL;
	str_copy(out, size, p ? p + 4 : "");
	return out;
}

static void snap_modes(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (fn.DeviceGetPersistenceMode) {
		int v = 0;
		nvmlReturn_t rc = fn.DeviceGetPersistenceMode(dev, &v);
		gv_nvml_u64_set(&d->persistence, rc, v == NVML_FEATURE_ENABLED);
	} else {
		u64_unsupported(&d->persistence);
	}
	if (fn.DeviceGetComputeMode) {
		int v = 0;
		nvmlReturn_t rc = fn.DeviceGetComputeMode(dev, &v);
		gv_nvml_u64_set(&d->compute_mode, rc, v >= 0 ? (unsigned)v : 0);
	} else {
		u64_unsupported(&d->compute_mode);
	}
}

/* The ECC mode and the health values, one call each below, first as one nvmlDeviceGetFieldValues
 * batch: on an H200 (driver 580) after the utilization, the batch took 4.4 ms and the calls one
 * by one 5.8 ms for the same values (scripts/device/nvml_batch.c, medians of 8, 2026-12-03). Only
 * a field answered NVML_SUCCESS is taken from it; any other answer (not supported, an id an older
 * driver does not know, a batch that fails) leaves the value to its own call, so every error and
 * "not supported" a fact carries is the call's. */
static const struct batch_field {
	unsigned groups; /* the GV_NVML_* group of the part that asks it */
	unsigned id;     /* NVML_FI_DEV_* */
	size_t offset;   /* its gv_nv_u64 in gv_nvml_device */
	bool flag;       /* a yes/no: any non-zero value is 1 */
	/* an ECC counter: taken from the batch only where it says ECC is on (with ECC off the call
	 * answers NOT_SUPPORTED, and a batch's 0 must not read as "no errors") */
	bool ecc_counter;
} batch_fields[] = {
	{GV_NVML_MODES, NVML_FI_DEV_ECC_CURRENT, offsetof(gv_nvml_device, ecc_mode), true, false},
	{GV_NVML_MODES, NVML_FI_DEV_ECC_PENDING, offsetof(gv_nvml_device, ecc_pending), true, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_ECC_SBE_VOL_TOTAL, offsetof(gv_nvml_device, ecc_corrected_volatile), false, true},
	{GV_NVML_HEALTH, NVML_FI_DEV_ECC_SBE_AGG_TOTAL, offsetof(gv_nvml_device, ecc_corrected_aggregate), false, true},
	{GV_NVML_HEALTH, NVML_FI_DEV_ECC_DBE_VOL_TOTAL, offsetof(gv_nvml_device, ecc_uncorrected_volatile), false, true},
	{GV_NVML_HEALTH, NVML_FI_DEV_ECC_DBE_AGG_TOTAL, offsetof(gv_nvml_device, ecc_uncorrected_aggregate), false, true},
	{GV_NVML_HEALTH, NVML_FI_DEV_RETIRED_SBE, offsetof(gv_nvml_device, retired_sbe), false, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_RETIRED_DBE, offsetof(gv_nvml_device, retired_dbe), false, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_RETIRED_PENDING, offsetof(gv_nvml_device, retired_pending), true, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_REMAPPED_COR, offsetof(gv_nvml_device, remapped_correctable), false, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_REMAPPED_UNC, offsetof(gv_nvml_device, remapped_uncorrectable), false, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_REMAPPED_PENDING, offsetof(gv_nvml_device, remap_pending), true, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_REMAPPED_FAILURE, offsetof(gv_nvml_device, remap_failure), true, false},
	{GV_NVML_HEALTH, NVML_FI_DEV_PCIE_REPLAY_COUNTER, offsetof(gv_nvml_device, pcie_replay), false, false},
};
#define N_BATCH_FIELDS (sizeof(batch_fields) / sizeof(batch_fields[0]))

static gv_nv_u64 *batch_value(gv_nvml_device *d, const struct batch_field *b)
{
	return (gv_nv_u64 *)((char *)d + b->offset);
}

static void snap_batch(nvmlDevice_t dev, gv_nvml_device *d, unsigned what)
{
	nvmlFieldValue_t fv[N_BATCH_FIELDS + 1];
	const struct batch_field *asked[N_BATCH_FIELDS + 1];
	int n = 0, ecc_at = -1;
	for (size_t i = 0; i < N_BATCH_FIELDS; i++) {
		if (!(batch_fields[i].groups & what))
			continue;
		/* unset: its part below asks it unless the batch answers */
		batch_value(d, &batch_fields[i])->st = GV_V_UNSET;
		if (batch_fields[i].id == NVML_FI_DEV_ECC_CURRENT)
			ecc_at = n;
		memset(&fv[n], 0, sizeof(fv[n]));
		fv[n].fieldId = batch_fields[i].id;
		asked[n++] = &batch_fields[i];
	}
	if (n && ecc_at < 0) { /* the counters without the modes: the mode too, for them alone */
		memset(&fv[n], 0, sizeof(fv[n]));
		fv[n].fieldId = NVML_FI_DEV_ECC_CURRENT;
		asked[n] = NULL;
		ecc_at = n++;
	}
	if (!n || !fn.DeviceGetFieldValues || fn.DeviceGetFieldValues(dev, n, fv) != NVML_SUCCESS)
		return;
	bool ecc_on = fv[ecc_at].nvmlReturn == NVML_SUCCESS && gv_nvml_field_u64(&fv[ecc_at]) != 0;
	for (int k = 0; k < n; k++) {
		if (!asked[k] || fv[k].nvmlReturn != NVML_SUCCESS || (asked[k]->ecc_counter && !ecc_on))
			continue;
		unsigned long long v = gv_nvml_field_u64(&fv[k]);
		gv_nvml_u64_set(batch_value(d, asked[k]), NVML_SUCCESS, asked[k]->flag ? v != 0 : v);
	}
}

/* Answered by this snapshot's batch. */
static bool batched(const gv_nv_u64 *v)
{
	return v->st == GV_V_OK;
}

static void snap_ecc_mode(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (batched(&d->ecc_mode) && batched(&d->ecc_pending))
		return;
	if (fn.DeviceGetEccMode) {
		int cur = 0, pending = 0;
		nvmlReturn_t rc = fn.DeviceGetEccMode(dev, &cur, &pending);
		gv_nvml_u64_set(&d->ecc_mode, rc, cur == NVML_FEATURE_ENABLED);
		gv_nvml_u64_set(&d->ecc_pending, rc, pending == NVML_FEATURE_ENABLED);
	} else {
		u64_unsupported(&d->ecc_mode);
		u64_unsupported(&d->ecc_pending);
	}
}

static void snap_fabric(nvmlDevice_t dev, gv_nvml_device *d)
{
	nvmlReturn_t frc = NVML_ERROR_FUNCTION_NOT_FOUND;
	if (fn.DeviceGetGpuFabricInfoV) {
		/* the versioned call first; a driver that wants another struct version answers
		 * ARGUMENT_VERSION_MISMATCH and the plain call is tried */
		nvmlGpuFabricInfo_v2_t fi;
		memset(&fi, 0, sizeof(fi));
		fi.version = NVML_GPU_FABRIC_INFO_V2;
		frc = fn.DeviceGetGpuFabricInfoV(dev, &fi);
		if (frc != NVML_ERROR_ARGUMENT_VERSION_MISMATCH && frc != NVML_ERROR_FUNCTION_NOT_FOUND) {
			gv_nvml_u64_set(&d->fabric_state, frc, fi.state);
			gv_nvml_u64_set(&d->fabric_status, frc, (unsigned)fi.status);
		}
	}
	if (frc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH || frc == NVML_ERROR_FUNCTION_NOT_FOUND) {
		if (fn.DeviceGetGpuFabricInfo) {
			nvmlGpuFabricInfo_t fi;
			memset(&fi, 0, sizeof(fi));
			nvmlReturn_t rc = fn.DeviceGetGpuFabricInfo(dev, &fi);
			gv_nvml_u64_set(&d->fabric_state, rc, fi.state);
			gv_nvml_u64_set(&d->fabric_status, rc, (unsigned)fi.status);
		} else if (frc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
			gv_nvml_u64_set(&d->fabric_state, frc, 0);
			gv_nvml_u64_set(&d->fabric_status, frc, 0);
		} else {
			u64_unsupported(&d->fabric_state);
			u64_unsupported(&d->fabric_status);
		}
	}
}

unsigned long long gv_nvml_field_u64(const nvmlFieldValue_t *fv)
{
	switch (fv->valueType) {
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return fv->value.ullVal;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return fv->value.sllVal < 0 ? 0 : (unsigned long long)fv->value.sllVal;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: return fv->value.ulVal;
	case NVML_VALUE_TYPE_SIGNED_INT: return fv->value.siVal < 0 ? 0 : (unsigned)fv->value.siVal;
	case NVML_VALUE_TYPE_UNSIGNED_SHORT: return fv->value.usVal;
	case NVML_VALUE_TYPE_DOUBLE: return fv->value.dVal < 0 ? 0 : (unsigned long long)fv->value.dVal;
	default: return fv->value.uiVal;
	}
}

void gv_nvml_get_field(nvmlDevice_t dev, unsigned field_id, unsigned scope, gv_nv_u64 *out)
{
	if (!fn.DeviceGetFieldValues) {
		u64_unsupported(out);
		return;
	}
	nvmlFieldValue_t fv;
	memset(&fv, 0, sizeof(fv));
	fv.fieldId = field_id;
	fv.scopeId = scope;
	nvmlReturn_t rc = fn.DeviceGetFieldValues(dev, 1, &fv);
	if (rc == NVML_SUCCESS)
		rc = fv.nvmlReturn;
	gv_nvml_u64_set(out, rc, gv_nvml_field_u64(&fv));
}

/* NVENC or NVDEC utilization (percent; the sampling period NVML averaged over is not kept) */
static void get_codec_util(nvmlReturn_t (*f)(nvmlDevice_t, unsigned *, unsigned *), nvmlDevice_t dev, gv_nv_u64 *field)
{
	if (!f) {
		u64_unsupported(field);
		return;
	}
	unsigned util = 0, period_us = 0;
	nvmlReturn_t rc = f(dev, &util, &period_us);
	gv_nvml_u64_set(field, rc, util);
}

static void snap_temperature(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetTemperature, dev, NVML_TEMPERATURE_GPU, d->temperature_c);
	gv_nvml_get_field(dev, NVML_FI_DEV_MEMORY_TEMP, 0, &d->memory_temperature_c);
}

static void snap_utilization(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (fn.DeviceGetUtilizationRates) {
		nvmlUtilization_t u = {0, 0};
		nvmlReturn_t rc = fn.DeviceGetUtilizationRates(dev, &u);
		gv_nvml_u64_set(&d->util_gpu, rc, u.gpu);
		gv_nvml_u64_set(&d->util_memory, rc, u.memory);
	} else {
		u64_unsupported(&d->util_gpu);
		u64_unsupported(&d->util_memory);
	}
	get_codec_util(fn.DeviceGetEncoderUtilization, dev, &d->encoder_util);
	get_codec_util(fn.DeviceGetDecoderUtilization, dev, &d->decoder_util);
}

static void snap_power(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetPowerUsage, dev, d->power_mw);
}

static void snap_energy(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (fn.DeviceGetTotalEnergyConsumption) {
		unsigned long long e = 0;
		nvmlReturn_t rc = fn.DeviceGetTotalEnergyConsumption(dev, &e);
		gv_nvml_u64_set(&d->energy_mj, rc, e);
	} else {
		u64_unsupported(&d->energy_mj);
	}
}

static void snap_clocks(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetClockInfo, dev, NVML_CLOCK_SM, d->sm_clock_mhz);
	GET_UINT_ARG(DeviceGetClockInfo, dev, NVML_CLOCK_MEM, d->mem_clock_mhz);
}

static void snap_clock_reasons(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (fn.DeviceGetClocksEventReasons) {
		unsigned long long r = 0;
		nvmlReturn_t rc = fn.DeviceGetClocksEventReasons(dev, &r);
		gv_nvml_u64_set(&d->clock_event_reasons, rc, r);
	} else {
		u64_unsupported(&d->clock_event_reasons);
	}
}

static void snap_fan(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetFanSpeed, dev, d->fan_percent);
}

static void snap_pcie(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT(DeviceGetCurrPcieLinkGeneration, dev, d->pcie_gen);
	GET_UINT(DeviceGetCurrPcieLinkWidth, dev, d->pcie_width);
}

/* Each call samples the link for about 20 ms (measured on an H200: 49 ms for a dynamic snapshot
 * with both directions, against microseconds for the rest), so it is asked for on its own. */
static void snap_pcie_tx(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_TX_BYTES, d->pcie_tx_kbps);
}

static void snap_pcie_rx(nvmlDevice_t dev, gv_nvml_device *d)
{
	GET_UINT_ARG(DeviceGetPcieThroughput, dev, NVML_PCIE_UTIL_RX_BYTES, d->pcie_rx_kbps);
}

static void get_ecc(nvmlDevice_t dev, int type, int counter, gv_nv_u64 *field)
{
	if (batched(field))
		return;
	if (!fn.DeviceGetTotalEccErrors) {
		u64_unsupported(field);
		return;
	}
	unsigned long long v = 0;
	nvmlReturn_t rc = fn.DeviceGetTotalEccErrors(dev, type, counter, &v);
	gv_nvml_u64_set(field, rc, v);
}

static void get_retired(nvmlDevice_t dev, int cause, gv_nv_u64 *field)
{
	if (batched(field))
		return;
	if (!fn.DeviceGetRetiredPages) {
		u64_unsupported(field);
		return;
	}
	unsigned count = 0;
	nvmlReturn_t rc = fn.DeviceGetRetiredPages(dev, cause, &count, NULL);
	/* with a zero-sized buffer the driver answers the count (SUCCESS or INSUFFICIENT_SIZE) */
	if (rc == NVML_ERROR_INSUFFICIENT_SIZE)
		rc = NVML_SUCCESS;
	gv_nvml_u64_set(field, rc, count);
}

static void snap_pcie_replay(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (!batched(&d->pcie_replay))
		GET_UINT(DeviceGetPcieReplayCounter, dev, d->pcie_replay);
}

static void snap_ecc_counts(nvmlDevice_t dev, gv_nvml_device *d)
{
	get_ecc(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &d->ecc_corrected_volatile);
	get_ecc(dev, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &d->ecc_corrected_aggregate);
	get_ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &d->ecc_uncorrected_volatile);
	get_ecc(dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &d->ecc_uncorrected_aggregate);
}

static void snap_retired_rows(nvmlDevice_t dev, gv_nvml_device *d)
{
	get_retired(dev, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &d->retired_sbe);
	get_retired(dev, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &d->retired_dbe);
	if (batched(&d->retired_pending)) {
		/* the batch's answer */
	} else if (fn.DeviceGetRetiredPagesPendingStatus) {
		int v = 0;
		nvmlReturn_t rc = fn.DeviceGetRetiredPagesPendingStatus(dev, &v);
		gv_nvml_u64_set(&d->retired_pending, rc, v == NVML_FEATURE_ENABLED);
	} else {
		u64_unsupported(&d->retired_pending);
	}
	if (batched(&d->remapped_correctable) && batched(&d->remapped_uncorrectable) && batched(&d->remap_pending) &&
	    batched(&d->remap_failure)) {
		/* the batch's answer */
	} else if (fn.DeviceGetRemappedRows) {
		unsigned corr = 0, unc = 0, pending = 0, failure = 0;
		nvmlReturn_t rc = fn.DeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure);
		gv_nvml_u64_set(&d->remapped_correctable, rc, corr);
		gv_nvml_u64_set(&d->remapped_uncorrectable, rc, unc);
		gv_nvml_u64_set(&d->remap_pending, rc, pending != 0);
		gv_nvml_u64_set(&d->remap_failure, rc, failure != 0);
	} else {
		u64_unsupported(&d->remapped_correctable);
		u64_unsupported(&d->remapped_uncorrectable);
		u64_unsupported(&d->remap_pending);
		u64_unsupported(&d->remap_failure);
	}
}

bool gv_nvml_procs_v3_layout(const char *driver_version)
{
	int major = 0, minor = 0;
	return driver_version && sscanf(driver_version, "%d.%d", &major, &minor) == 2 && major == 535 && minor >= 43 &&
	       minor < 98;
}

/* Fetches one process list (compute or graphics) into d->procs; returns the call's result. */
static nvmlReturn_t fetch_procs(nvmlDevice_t dev, gv_nvml_device *d, bool graphics)
{
	nvmlReturn_t (*call)(nvmlDevice_t, unsigned *, void *) =
		graphics ? fn.DeviceGetGraphicsRunningProcesses : fn.DeviceGetComputeRunningProcesses;
	bool v1 = graphics ? fn.graphics_procs_v1 : fn.compute_procs_v1;
	if (!call)
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	/* R535's ABI break (data/known_bad.csv): its _v3 calls fill nvmlProcessInfo_v3_t */
	char ver[96] = "";
	bool v3 = (graphics ? fn.graphics_procs_v3 : fn.compute_procs_v3) && fn.SystemGetDriverVersion &&
		  fn.SystemGetDriverVersion(ver, sizeof(ver)) == NVML_SUCCESS && gv_nvml_procs_v3_layout(ver);
	size_t esize = v1 ? sizeof(nvmlProcessInfo_v1_t) : v3 ? sizeof(nvmlProcessInfo_v3_t) : sizeof(nvmlProcessInfo_t);
	unsigned cap = GV_NVML_MAX_PROCS, count = cap;
	void *buf = xcalloc(cap, esize);
	nvmlReturn_t rc = call(dev, &count, buf);
	if (rc == NVML_ERROR_INSUFFICIENT_SIZE && count > cap && count < 4096) {
		/* processes come and go between the two calls: leave some room */
		cap = count + 16;
		count = cap;
		free(buf);
		buf = xcalloc(cap, esize);
		rc = call(dev, &count, buf);
	}
	if (rc != NVML_SUCCESS) {
		free(buf);
		return rc;
	}
	if (count > cap)
		count = cap;
	for (unsigned i = 0; i < count; i++) {
		unsigned pid;
		unsigned long long used;
		if (v1) {
			nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)buf + i;
			pid = p->pid, used = p->usedGpuMemory;
		} else if (v3) {
			nvmlProcessInfo_v3_t *p = (nvmlProcessInfo_v3_t *)buf + i;
			pid = p->pid, used = p->usedGpuMemory;
		} else {
			nvmlProcessInfo_t *p = (nvmlProcessInfo_t *)buf + i;
			pid = p->pid, used = p->usedGpuMemory;
		}
		bool dup = false;
		for (unsigned k = 0; k < d->nprocs && !dup; k++)
			dup = d->procs[k].pid == pid;
		if (dup)
			continue;
		if (d->nprocs >= GV_NVML_MAX_PROCS) {
			d->procs_truncated = true;
			break;
		}
		gv_nvml_process *p = &d->procs[d->nprocs++];
		memset(p, 0, sizeof(*p));
		p->pid = pid;
		p->sm_util = -1;
		p->used_bytes = used;
		p->graphics = graphics;
		if (fn.SystemGetProcessName && fn.SystemGetProcessName(pid, p->name, sizeof(p->name)) == NVML_SUCCESS) {
			p->name[sizeof(p->name) - 1] = '\0';
			str_sanitize(p->name);
		} else {
			p->name[0] = '\0';
		}
	}
	free(buf);
	return NVML_SUCCESS;
}

/* Per-process SM utilization over the samples since the last call (the newest per pid); what
 * NVML has where GPM is not (before Hopper). NOT_FOUND: no sample since then, all idle. */
static void snap_proc_util(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (!fn.DeviceGetProcessUtilization) {
		d->proc_util_st = GV_V_UNSUPPORTED;
		return;
	}
	unsigned count = 0;
	nvmlReturn_t rc = fn.DeviceGetProcessUtilization(dev, NULL, &count, d->proc_util_ts);
	if (rc == NVML_ERROR_NOT_FOUND || (rc == NVML_SUCCESS && count == 0)) {
		for (unsigned k = 0; k < d->nprocs; k++)
			d->procs[k].sm_util = 0;
		d->proc_util_st = GV_V_OK;
		return;
	}
	if (rc != NVML_ERROR_INSUFFICIENT_SIZE && rc != NVML_SUCCESS) {
		nvmlReturn_t r2;
		gv_nvml_put_rc(&d->proc_util_st, &r2, rc);
		return;
	}
	if (count > 4096)
		count = 4096;
	unsigned cap = count + 8;
	nvmlProcessUtilizationSample_t *buf = xcalloc(cap, sizeof(*buf));
	count = cap;
	rc = fn.DeviceGetProcessUtilization(dev, buf, &count, d->proc_util_ts);
	if (rc != NVML_SUCCESS) {
		nvmlReturn_t r2;
		gv_nvml_put_rc(&d->proc_util_st, &r2, rc == NVML_ERROR_NOT_FOUND ? NVML_SUCCESS : rc);
		free(buf);
		return;
	}
	if (count > cap)
		count = cap;
	unsigned long long newest = d->proc_util_ts;
	for (unsigned k = 0; k < d->nprocs; k++)
		d->procs[k].sm_util = 0; /* no sample since the last call: idle */
	for (unsigned k = 0; k < d->nprocs; k++) {
		unsigned long long ts = 0;
		for (unsigned i = 0; i < count; i++)
			if (buf[i].pid == d->procs[k].pid && buf[i].timeStamp >= ts) {
				ts = buf[i].timeStamp;
				d->procs[k].sm_util = buf[i].smUtil <= 100 ? (int)buf[i].smUtil : 100;
			}
	}
	for (unsigned i = 0; i < count; i++)
		if (buf[i].timeStamp > newest)
			newest = buf[i].timeStamp;
	d->proc_util_ts = newest;
	d->proc_util_st = GV_V_OK;
	free(buf);
}

static void snap_processes(nvmlDevice_t dev, gv_nvml_device *d)
{
	d->nprocs = 0;
	d->procs_truncated = false;
	nvmlReturn_t rc_c = fetch_procs(dev, d, false);
	nvmlReturn_t rc_g = fetch_procs(dev, d, true);
	/* one list is enough to report; compute's error wins when both fail */
	nvmlReturn_t rc = rc_c == NVML_SUCCESS || rc_g == NVML_SUCCESS ? NVML_SUCCESS : rc_c;
	gv_nvml_put_rc(&d->procs_st, &d->procs_rc, rc);
}

static void snap_proc_util_part(nvmlDevice_t dev, gv_nvml_device *d)
{
	if (d->procs_st == GV_V_OK)
		snap_proc_util(dev, d);
}

void gv_nvml_pci_bus_id(nvmlPciInfo_t *pci, char *out, size_t n)
{
	pci->busId[sizeof(pci->busId) - 1] = '\0';
	pci->busIdLegacy[sizeof(pci->busIdLegacy) - 1] = '\0';
	/* the v1 layout has only the 16-byte id; v2/v3 fill busId */
	const char *id = pci->busId[0] ? pci->busId : pci->busIdLegacy;
	/* the legacy form has a 4-digit domain ("0000:18:00.0"): print it as NVML does now */
	if (strlen(id) == 12 && id[4] == ':')
		snprintf(out, n, "0000%s", id);
	else
		str_copy(out, n, id);
}

/* A snapshot is a table of parts, each a few NVML calls writing fields of its own, asked for by
 * the GV_NVML_* groups. They run one after another: on an H200 (driver 580) the same parts on 8
 * threads took longer than in one (the NVML child of check --fast 58.9 against 49.2 ms, medians
 * of 6, scripts/device/fastprof.sh): NVML serializes a device's queries, and each call waited
 * for the others (the slowest, nvmlDeviceGetMaxClockInfo, 3 ms alone, 40 ms behind them). */
static const struct snap_part {
	unsigned groups; /* the GV_NVML_* bits that ask for it */
	void (*run)(nvmlDevice_t, gv_nvml_device *);
} snap_parts[] = {
	{GV_NVML_NAMES, snap_identity},
	{GV_NVML_NAMES | GV_NVML_READINGS, snap_memory},
	{GV_NVML_LIMITS, snap_pcie_max},
	{GV_NVML_LIMITS, snap_temp_slowdown},
	{GV_NVML_LIMITS, snap_temp_shutdown},
	{GV_NVML_LIMITS, snap_temp_gpu_max},
	{GV_NVML_LIMITS, snap_max_sm_clock},
	{GV_NVML_LIMITS, snap_max_mem_clock},
	{GV_NVML_POWER_LIMIT, snap_power_limit},
	{GV_NVML_LIMITS, snap_power_default_limit},
	{GV_NVML_MODES, snap_modes},
	{GV_NVML_MODES | GV_NVML_MIG, snap_mig},
	{GV_NVML_MODES, snap_ecc_mode},
	{GV_NVML_MODES, snap_fabric},
	{GV_NVML_READINGS, snap_temperature},
	{GV_NVML_LOAD, snap_utilization},
	{GV_NVML_LOAD, snap_power},
	{GV_NVML_ENERGY, snap_energy},
	{GV_NVML_READINGS, snap_clock_reasons}, /* first: --fast asks the clocks only where they say so */
	{GV_NVML_CLOCKS, snap_clocks},
	{GV_NVML_FAN, snap_fan},
	{GV_NVML_READINGS, snap_pcie},
	{GV_NVML_PCIE_THROUGHPUT, snap_pcie_tx},
	{GV_NVML_PCIE_THROUGHPUT, snap_pcie_rx},
	{GV_NVML_HEALTH, snap_pcie_replay},
	{GV_NVML_HEALTH, snap_ecc_counts},
	{GV_NVML_HEALTH, snap_retired_rows},
	{GV_NVML_PROC_LIST, snap_processes},
	{GV_NVML_PROC_UTIL, snap_proc_util_part}, /* after the list: it fills the listed processes */
};

/* The fields GV_NVML_LIMITS fills, by name: what the per-boot cache keeps (probes/nvml_limits.c). */
const gv_nvml_limit_field gv_nvml_limit_fields[] = {
	{"pcie_gen_max", offsetof(gv_nvml_device, pcie_gen_max)},
	{"pcie_width_max", offsetof(gv_nvml_device, pcie_width_max)},
	{"temp_slowdown_c", offsetof(gv_nvml_device, temp_slowdown_c)},
	{"temp_shutdown_c", offsetof(gv_nvml_device, temp_shutdown_c)},
	{"temp_gpu_max_c", offsetof(gv_nvml_device, temp_gpu_max_c)},
	{"max_sm_clock_mhz", offsetof(gv_nvml_device, max_sm_clock_mhz)},
	{"max_mem_clock_mhz", offsetof(gv_nvml_device, max_mem_clock_mhz)},
	{"power_default_limit_mw", offsetof(gv_nvml_device, power_default_limit_mw)},
};
const size_t gv_nvml_n_limit_fields = GV_ARRAY_LEN(gv_nvml_limit_fields);

/* what snap_utilization, snap_power, snap_power_limit, snap_energy, snap_clocks and snap_fan fill */
static const struct {
	unsigned group;
	size_t offset;
} optional_fields[] = {
	{GV_NVML_LOAD, offsetof(gv_nvml_device, util_gpu)},
	{GV_NVML_LOAD, offsetof(gv_nvml_device, util_memory)},
	{GV_NVML_LOAD, offsetof(gv_nvml_device, encoder_util)},
	{GV_NVML_LOAD, offsetof(gv_nvml_device, decoder_util)},
	{GV_NVML_LOAD, offsetof(gv_nvml_device, power_mw)},
	{GV_NVML_POWER_LIMIT, offsetof(gv_nvml_device, power_limit_mw)},
	{GV_NVML_ENERGY, offsetof(gv_nvml_device, energy_mj)},
	{GV_NVML_CLOCKS, offsetof(gv_nvml_device, sm_clock_mhz)},
	{GV_NVML_CLOCKS, offsetof(gv_nvml_device, mem_clock_mhz)},
	{GV_NVML_FAN, offsetof(gv_nvml_device, fan_percent)},
};

unsigned gv_nvml_optional_group(size_t offset)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(optional_fields); i++)
		if (optional_fields[i].offset == offset)
			return optional_fields[i].group;
	return 0;
}

static void snap_run(nvmlDevice_t dev, gv_nvml_device *d, unsigned what)
{
	snap_batch(dev, d, what);
	for (size_t i = 0; i < sizeof(snap_parts) / sizeof(snap_parts[0]); i++)
		if (snap_parts[i].groups & what)
			snap_parts[i].run(dev, d);
}

nvmlReturn_t gv_nvml_snapshot_handle(unsigned index, nvmlDevice_t *dev, nvmlReturn_t *handle_rc)
{
	*dev = NULL;
	*handle_rc = gv_nvml_device_handle(index, dev);
	return *handle_rc;
}

nvmlReturn_t gv_nvml_device_snapshot(unsigned index, unsigned what, gv_nvml_device *d)
{
	d->index = index;
	nvmlDevice_t dev;
	nvmlReturn_t rc = gv_nvml_snapshot_handle(index, &dev, &d->handle_rc);
	if (rc != NVML_SUCCESS)
		return rc;
	snap_run(dev, d, what);
	return NVML_SUCCESS;
}

const char *gv_nvml_compute_mode_name(unsigned long long mode)
{
	switch (mode) {
	case NVML_COMPUTEMODE_DEFAULT: return "default";
	case NVML_COMPUTEMODE_EXCLUSIVE_THREAD: return "exclusive_thread";
	case NVML_COMPUTEMODE_PROHIBITED: return "prohibited";
	case NVML_COMPUTEMODE_EXCLUSIVE_PROCESS: return "exclusive_process";
	default: return "unknown";
	}
}

const char *gv_nvml_fabric_state_name(unsigned long long state)
{
	switch (state) {
	case NVML_GPU_FABRIC_STATE_NOT_SUPPORTED: return "not_supported";
	case NVML_GPU_FABRIC_STATE_NOT_STARTED: return "not_started";
	case NVML_GPU_FABRIC_STATE_IN_PROGRESS: return "in_progress";
	case NVML_GPU_FABRIC_STATE_COMPLETED: return "completed";
	default: return "unknown";
	}
}

const gv_nvml_clock_reason gv_nvml_clock_reasons[] = {
	{NVML_CLOCKS_EVENT_REASON_GPU_IDLE, "gpu_idle", "idle"},
	{NVML_CLOCKS_EVENT_REASON_APPLICATIONS_CLOCKS_SETTING, "applications_clocks_setting", "application clocks setting"},
	{NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP, "sw_power_cap", "power cap"},
	{NVML_CLOCKS_EVENT_REASON_HW_SLOWDOWN, "hw_slowdown", "hardware slowdown"},
	{NVML_CLOCKS_EVENT_REASON_SYNC_BOOST, "sync_boost", "sync boost"},
	{NVML_CLOCKS_EVENT_REASON_SW_THERMAL_SLOWDOWN, "sw_thermal_slowdown", "software thermal slowdown"},
	{NVML_CLOCKS_EVENT_REASON_HW_THERMAL_SLOWDOWN, "hw_thermal_slowdown", "hardware thermal slowdown"},
	{NVML_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN, "hw_power_brake_slowdown", "power brake"},
	{NVML_CLOCKS_EVENT_REASON_DISPLAY_CLOCK_SETTING, "display_clock_setting", "display clock setting"},
};
const size_t gv_nvml_n_clock_reasons = GV_ARRAY_LEN(gv_nvml_clock_reasons);

/* The set reasons of mask joined: their names by "," or their words by ", ", then the bits no
 * entry knows; "none" for 0. Stops at the first one that does not fit. */
static const char *clock_reasons_join(unsigned long long mask, bool words, char *buf, size_t size)
{
	if (!size)
		return buf;
	buf[0] = '\0';
	if (mask == 0) {
		str_copy(buf, size, "none");
		return buf;
	}
	const char *sep = words ? ", " : ",";
	size_t len = 0;
	unsigned long long known = 0;
	for (size_t i = 0; i < gv_nvml_n_clock_reasons; i++) {
		const gv_nvml_clock_reason *r = &gv_nvml_clock_reasons[i];
		known |= r->bit;
		if (mask & r->bit) {
			int n = snprintf(buf + len, size - len, "%s%s", len ? sep : "", words ? r->words : r->name);
			if (n < 0 || (size_t)n >= size - len)
				return buf;
			len += (size_t)n;
		}
	}
	if (mask & ~known)
		snprintf(buf + len, size - len, words ? "%sother (0x%llx)" : "%sother_0x%llx", len ? sep : "",
			 mask & ~known);
	return buf;
}

const char *gv_nvml_clock_reasons_text(unsigned long long mask, char *buf, size_t size)
{
	return clock_reasons_join(mask, false, buf, size);
}

const char *gv_nvml_clock_reasons_words(unsigned long long mask, char *buf, size_t size)
{
	return clock_reasons_join(mask, true, buf, size);
}

/* ---- Xid events ---- */

struct gv_nvml_events {
	nvmlEventSet_t set;
	unsigned ndev;
	nvmlDevice_t devs[64];
};

gv_nvml_events *gv_nvml_events_open(nvmlReturn_t *rc)
{
	*rc = gv_nvml_init();
	if (*rc != NVML_SUCCESS)
		return NULL;
	if (!fn.EventSetCreate || !fn.DeviceRegisterEvents || !fn.EventSetWait || !fn.EventSetFree) {
		*rc = NVML_ERROR_NOT_SUPPORTED;
		return NULL;
	}
	gv_nvml_events *ev = xcalloc(1, sizeof(*ev));
	*rc = fn.EventSetCreate(&ev->set);
	if (*rc != NVML_SUCCESS) {
		free(ev);
		return NULL;
	}
	unsigned n = 0;
	gv_nvml_device_count(&n);
	nvmlReturn_t last = NVML_ERROR_NOT_SUPPORTED;
	unsigned registered = 0;
	for (unsigned i = 0; i < n && i < GV_ARRAY_LEN(ev->devs); i++) {
		nvmlDevice_t dev = NULL;
		if (fn.DeviceGetHandleByIndex(i, &dev) != NVML_SUCCESS)
			continue;
		ev->devs[i] = dev;
		ev->ndev = i + 1;
		last = fn.DeviceRegisterEvents(dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, ev->set);
		if (last == NVML_SUCCESS)
			registered++;
	}
	if (!registered) {
		fn.EventSetFree(ev->set);
		free(ev);
		*rc = n ? last : NVML_ERROR_NOT_FOUND;
		return NULL;
	}
	*rc = NVML_SUCCESS;
	return ev;
}

nvmlReturn_t gv_nvml_events_wait(gv_nvml_events *ev, unsigned timeout_ms, gv_nvml_xid *out)
{
	memset(out, 0, sizeof(*out));
	out->gpu_index = -1;
	if (!ev)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvmlEventData_t data;
	memset(&data, 0, sizeof(data));
	nvmlReturn_t rc = fn.EventSetWait(ev->set, &data, timeout_ms);
	if (rc != NVML_SUCCESS)
		return rc;
	for (unsigned i = 0; i < ev->ndev; i++)
		if (ev->devs[i] && ev->devs[i] == data.device)
			out->gpu_index = (int)i;
	out->xid = data.eventData;
	out->gpu_instance = data.gpuInstanceId;
	out->compute_instance = data.computeInstanceId;
	return NVML_SUCCESS;
}

void gv_nvml_events_close(gv_nvml_events *ev)
{
	if (!ev)
		return;
	fn.EventSetFree(ev->set);
	free(ev);
}

nvmlReturn_t gv_nvml_init_staged(gv_nvml_status *st)
{
	gv_nvml_status_get(st);
	gv_child_stage("libnvidia-ml.so.1", st->path, "nvmlInit_v2");
	nvmlReturn_t rc = gv_nvml_init();
	gv_child_stage_end();
	gv_nvml_status_get(st);
	return rc;
}
