/*
 * libcuda through dlopen: loading once, the function table, cuInit once, and result codes with
 * their names and likely causes. See cuda.h.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/child.h"
#include "core/util.h"
#include "nvidia/cuda.h"
#include "nvidia/dlload.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static gv_cuda_api api;
static gv_cuda_status status;

#define SYM(field, ...) (*(void **)&api.field = gv_dl_sym_first(lib, (const char *const[]){__VA_ARGS__, NULL}))

static void resolve(void)
{
	memset(&api, 0, sizeof(api));
	SYM(cuInit, "cuInit");
	SYM(cuDriverGetVersion, "cuDriverGetVersion");
	SYM(cuDeviceGetCount, "cuDeviceGetCount");
	SYM(cuDeviceGet, "cuDeviceGet");
	SYM(cuDeviceGetName, "cuDeviceGetName");
	SYM(cuDeviceGetAttribute, "cuDeviceGetAttribute");
	SYM(cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId");
	SYM(cuDeviceTotalMem, "cuDeviceTotalMem_v2");
	SYM(cuDeviceCanAccessPeer, "cuDeviceCanAccessPeer");
	SYM(cuGetErrorName, "cuGetErrorName");
	SYM(cuGetErrorString, "cuGetErrorString");
	SYM(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	SYM(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
	SYM(cuCtxSetCurrent, "cuCtxSetCurrent");
	SYM(cuCtxSynchronize, "cuCtxSynchronize");
	SYM(cuCtxEnablePeerAccess, "cuCtxEnablePeerAccess");
	SYM(cuMemAlloc, "cuMemAlloc_v2");
	SYM(cuMemFree, "cuMemFree_v2");
	SYM(cuMemGetInfo, "cuMemGetInfo_v2");
	SYM(cuMemAllocHost, "cuMemAllocHost_v2");
	SYM(cuMemHostAlloc, "cuMemHostAlloc");
	SYM(cuMemFreeHost, "cuMemFreeHost");
	SYM(cuMemHostRegister, "cuMemHostRegister_v2");
	SYM(cuMemHostUnregister, "cuMemHostUnregister");
	SYM(cuMemcpyHtoD, "cuMemcpyHtoD_v2");
	SYM(cuMemcpyDtoH, "cuMemcpyDtoH_v2");
	SYM(cuMemcpyDtoD, "cuMemcpyDtoD_v2");
	SYM(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
	SYM(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
	SYM(cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
	SYM(cuMemcpyPeerAsync, "cuMemcpyPeerAsync");
	SYM(cuMemsetD32, "cuMemsetD32_v2");
	SYM(cuMemsetD8, "cuMemsetD8_v2");
	SYM(cuModuleLoadData, "cuModuleLoadData");
	SYM(cuModuleLoadDataEx, "cuModuleLoadDataEx");
	SYM(cuModuleGetFunction, "cuModuleGetFunction");
	SYM(cuModuleUnload, "cuModuleUnload");
	SYM(cuLaunchKernel, "cuLaunchKernel");
	SYM(cuStreamCreate, "cuStreamCreate");
	SYM(cuStreamDestroy, "cuStreamDestroy_v2");
	SYM(cuStreamSynchronize, "cuStreamSynchronize");
	SYM(cuEventCreate, "cuEventCreate");
	SYM(cuEventRecord, "cuEventRecord");
	SYM(cuEventSynchronize, "cuEventSynchronize");
	SYM(cuEventElapsedTime, "cuEventElapsedTime_v2", "cuEventElapsedTime");
	SYM(cuEventDestroy, "cuEventDestroy_v2");
	SYM(cuStreamBeginCapture, "cuStreamBeginCapture_v2");
	SYM(cuStreamEndCapture, "cuStreamEndCapture");
	SYM(cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
	SYM(cuGraphLaunch, "cuGraphLaunch");
	SYM(cuGraphExecDestroy, "cuGraphExecDestroy");
	SYM(cuGraphDestroy, "cuGraphDestroy");
}

static const char *missing_required(void)
{
	return !api.cuInit		   ? "cuInit"
	       : !api.cuDriverGetVersion ? "cuDriverGetVersion"
	       : !api.cuDeviceGetCount   ? "cuDeviceGetCount"
	       : !api.cuDeviceGet	   ? "cuDeviceGet"
					   : NULL;
}

static const gv_driver_lib libcuda = {"GPUVET_CUDA_LIB", "libcuda.so.1", "cuInit", resolve, missing_required};

static void load_locked(void)
{
	if (status.attempted)
		return;
	status.attempted = true;
	status.loaded = gv_dl_load_driver_lib(&libcuda, &lib, status.path, sizeof(status.path), status.error,
					      sizeof(status.error), &status.from_env);
}

bool gv_cuda_load(void)
{
	pthread_mutex_lock(&lock);
	load_locked();
	bool ok = status.loaded;
	pthread_mutex_unlock(&lock);
	return ok;
}

const gv_cuda_api *gv_cuda_api_get(void)
{
	return gv_cuda_load() ? &api : NULL;
}

/* Serialises callers of gv_cuda_init only: cuInit can take seconds (or hang), and the state lock
 * must stay free meanwhile for gv_cuda_status_get, gv_cuda_load and the error names. */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

CUresult gv_cuda_init(void)
{
	pthread_mutex_lock(&init_lock);
	pthread_mutex_lock(&lock);
	load_locked();
	bool called = status.init_called, loaded = status.loaded;
	CUresult rc = status.init_rc;
	pthread_mutex_unlock(&lock);
	if (!called) {
		double t0 = now_seconds(), dt = 0;
		if (!loaded) {
			rc = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		} else {
			rc = api.cuInit(0);
			dt = now_seconds() - t0;
		}
		pthread_mutex_lock(&lock);
		status.init_called = true;
		status.init_rc = rc;
		status.init_seconds = dt;
		pthread_mutex_unlock(&lock);
	}
	pthread_mutex_unlock(&init_lock);
	return rc;
}

void gv_cuda_status_get(gv_cuda_status *out)
{
	pthread_mutex_lock(&lock);
	*out = status;
	pthread_mutex_unlock(&lock);
}

void gv_cuda_unload(void)
{
	pthread_mutex_lock(&lock);
	if (lib)
		dlclose(lib);
	lib = NULL;
	memset(&api, 0, sizeof(api));
	memset(&status, 0, sizeof(status));
	pthread_mutex_unlock(&lock);
}

/* ---- result codes ---- */

static const struct {
	CUresult rc;
	const char *name, *text, *cause;
} results[] = {
	{0, "CUDA_SUCCESS", "no error", NULL},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument", "a bad argument reached the driver (a bug in the caller)"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory",
	 "the GPU's memory is full: other processes hold it (nvidia-smi lists them) or the request is too large"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error",
	 "cuInit was not called or failed before; look at cuInit's own result"},
	{4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down", "the process is exiting and the driver is unloading"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library",
	 "the libcuda.so loaded is the toolkit's link-time stub (lib64/stubs), not the driver's: remove the stubs "
	 "directory from LD_LIBRARY_PATH"},
	{35, "CUDA_ERROR_INSUFFICIENT_DRIVER", "CUDA driver version is insufficient for CUDA runtime version",
	 "the installed driver is older than the CUDA runtime needs: upgrade the driver or use an older CUDA build"},
	{36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "API call requires a newer CUDA driver",
	 "the program uses a call this driver does not have: upgrade the driver"},
	{46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable",
	 "the GPU is in exclusive-process compute mode and another process holds it, or it is prohibited"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected",
	 "no GPU is visible to this process: CUDA_VISIBLE_DEVICES hides them, the container lacks the devices, or "
	 "the driver sees none"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal",
	 "a device index beyond the visible GPUs (check CUDA_VISIBLE_DEVICES)"},
	{102, "CUDA_ERROR_DEVICE_NOT_LICENSED", "device doesn't have valid Grid license", "vGPU without a valid licence"},
	{200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid",
	 "a corrupt or mismatched cubin/fatbin was loaded"},
	{201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context", "no context is current in this thread"},
	{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device",
	 "the program or library was not built for this GPU's compute capability (no SASS and no usable PTX)"},
	{214, "CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered",
	 "the GPU reported an uncorrectable memory error: drain it and reset the GPU"},
	{217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices",
	 "P2P is not possible between these GPUs (topology, ACS, IOMMU)"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed", "the PTX does not compile for this GPU"},
	{221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found",
	 "libnvidia-ptxjitcompiler is missing from the driver installation (containers: capability compute)"},
	{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain",
	 "the PTX is newer than this driver understands: upgrade the driver or build with an older toolkit"},
	{302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "link to a shared object failed to resolve", NULL},
	{303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialization failed",
	 "libcuda could not be loaded or initialized"},
	{304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS",
	 "an operating-system call failed: often /dev/nvidia* permissions or a container's device rules"},
	{400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle", NULL},
	{500, "CUDA_ERROR_NOT_FOUND", "named symbol not found", NULL},
	{600, "CUDA_ERROR_NOT_READY", "device not ready", NULL},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered",
	 "a kernel read or wrote out of bounds; the context is unusable until the process restarts"},
	{701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch", NULL},
	{702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated",
	 "a kernel ran past the display watchdog: use a GPU without a display attached"},
	{715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered", NULL},
	{719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure",
	 "a kernel crashed; look for Xid errors in the kernel log (sudo dmesg | grep -i xid)"},
	{800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted",
	 "the operation is not allowed here (permissions on /dev/nvidia*, a restricted container, or MPS)"},
	{801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported", "this GPU or driver does not support the operation"},
	{802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized",
	 "on NVSwitch systems (HGX): nvidia-fabricmanager is not running or has not finished"},
	{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination",
	 "the user-space driver libraries and the kernel module are different versions (after an upgrade without "
	 "reboot, or a cuda-compat package that does not fit)"},
	{804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW",
	 "a cuda-compat (forward compatibility) libcuda is used on a GPU that does not support it (GeForce): remove "
	 "the compat directory from the library path"},
	{805, "CUDA_ERROR_MPS_CONNECTION_FAILED", "MPS client failed to connect to the MPS control daemon or the MPS server",
	 "CUDA_MPS_PIPE_DIRECTORY points to an MPS daemon that is not running"},
	{909, "CUDA_ERROR_TIMEOUT", "wait operation timed out", NULL},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error",
	 "often after suspend/resume or a driver hiccup: reload nvidia_uvm (sudo rmmod nvidia_uvm && sudo modprobe "
	 "nvidia_uvm) or reboot"},
};

static const gv_cuda_api *loaded_api(void)
{
	pthread_mutex_lock(&lock);
	bool ok = status.loaded;
	pthread_mutex_unlock(&lock);
	return ok ? &api : NULL;
}

static int find_result(CUresult rc)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(results); i++)
		if (results[i].rc == rc)
			return (int)i;
	return -1;
}

const char *gv_cuda_result_name(CUresult rc)
{
	int i = find_result(rc);
	if (i >= 0)
		return results[i].name;
	/* ask the library only when it is already loaded: naming a code must not load it */
	const gv_cuda_api *cu = loaded_api();
	const char *s = NULL;
	if (cu && cu->cuGetErrorName && cu->cuGetErrorName(rc, &s) == CUDA_SUCCESS && s)
		return s;
	static _Thread_local char buf[32];
	snprintf(buf, sizeof(buf), "CUDA_ERROR_%d", rc);
	return buf;
}

const char *gv_cuda_result_text(CUresult rc)
{
	const gv_cuda_api *cu = loaded_api();
	const char *s = NULL;
	if (cu && cu->cuGetErrorString && cu->cuGetErrorString(rc, &s) == CUDA_SUCCESS && s && *s)
		return s;
	int i = find_result(rc);
	return i >= 0 ? results[i].text : "unknown CUDA error";
}

const char *gv_cuda_result_cause(CUresult rc)
{
	int i = find_result(rc);
	return i >= 0 ? results[i].cause : NULL;
}

CUresult gv_cuda_init_staged(gv_cuda_status *st)
{
	gv_cuda_status_get(st);
	gv_child_stage("libcuda.so.1", st->path, "cuInit");
	CUresult rc = gv_cuda_init();
	gv_child_stage_end();
	gv_cuda_status_get(st);
	return rc;
}
