/*
 * The CUDA driver API (libcuda.so.1) loaded at run time with dlopen. Types and enum values are
 * our own declarations of the ABI (numbers from NVIDIA's public cuda.h); no toolkit header is
 * included, so gpuvet builds and runs with no CUDA installed.
 *
 * Which library: GPUVET_CUDA_LIB when set; otherwise libcuda.so.1 through the loader; with --root
 * active and GPUVET_CUDA_LIB unset, the copy inside the root tree's library directories, or none.
 *
 * Required symbols: cuInit, cuDriverGetVersion, cuDeviceGetCount, cuDeviceGet. Everything else in
 * the table may be NULL (old drivers, stub libraries); check before calling.
 *
 *	const gv_cuda_api *cu = gv_cuda_api_get();   NULL when libcuda is not usable
 *	CUresult rc = gv_cuda_init();                  cuInit(0) once, result remembered
 *	if (cu && rc == CUDA_SUCCESS && cu->cuMemAlloc) cu->cuMemAlloc(&p, n);
 */
#ifndef GPUVET_NVIDIA_CUDA_H
#define GPUVET_NVIDIA_CUDA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef uint64_t CUdeviceptr; /* 64-bit on every platform we support (the _v2 API) */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUgraph_st *CUgraph;
typedef struct CUgraphExec_st *CUgraphExec;
typedef int CUdevice_attribute;
typedef int CUjit_option;
typedef int CUstreamCaptureMode;

enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_INVALID_VALUE = 1,
	CUDA_ERROR_OUT_OF_MEMORY = 2,
	CUDA_ERROR_NOT_INITIALIZED = 3,
	CUDA_ERROR_DEINITIALIZED = 4,
	CUDA_ERROR_STUB_LIBRARY = 34,
	/* 35 is the runtime's cudaErrorInsufficientDriver; the driver API reports it too in some
	 * paths (compat libraries), so it is in our table */
	CUDA_ERROR_INSUFFICIENT_DRIVER = 35,
	CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER = 36,
	CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_INVALID_DEVICE = 101,
	CUDA_ERROR_DEVICE_NOT_LICENSED = 102,
	CUDA_ERROR_INVALID_IMAGE = 200,
	CUDA_ERROR_INVALID_CONTEXT = 201,
	CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
	CUDA_ERROR_ECC_UNCORRECTABLE = 214,
	CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
	CUDA_ERROR_INVALID_PTX = 218,
	CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
	CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
	CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
	CUDA_ERROR_FILE_NOT_FOUND = 301,
	CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND = 302,
	CUDA_ERROR_SHARED_OBJECT_INIT_FAILED = 303,
	CUDA_ERROR_OPERATING_SYSTEM = 304,
	CUDA_ERROR_INVALID_HANDLE = 400,
	CUDA_ERROR_NOT_FOUND = 500,
	CUDA_ERROR_NOT_READY = 600,
	CUDA_ERROR_ILLEGAL_ADDRESS = 700,
	CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
	CUDA_ERROR_LAUNCH_TIMEOUT = 702,
	CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
	CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
	CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
	CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
	CUDA_ERROR_LAUNCH_FAILED = 719,
	CUDA_ERROR_NOT_PERMITTED = 800,
	CUDA_ERROR_NOT_SUPPORTED = 801,
	CUDA_ERROR_SYSTEM_NOT_READY = 802,
	CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
	CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
	CUDA_ERROR_MPS_CONNECTION_FAILED = 805,
	CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900,
	CUDA_ERROR_TIMEOUT = 909,
	CUDA_ERROR_UNKNOWN = 999,
};

/* CUdevice_attribute values used by gpuvet */
enum {
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
	CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
	CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, /* kHz */
	CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
	CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT = 17, /* a run-time limit on kernels: the GPU drives a display */
	CU_DEVICE_ATTRIBUTE_INTEGRATED = 18,
	CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
	CU_DEVICE_ATTRIBUTE_COMPUTE_MODE = 20,
	CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31,
	CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
	CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
	CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
	CU_DEVICE_ATTRIBUTE_TCC_DRIVER = 35,
	CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36, /* kHz */
	CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37,
	CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38,
	CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
	CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT = 40,
	CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
	CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
	CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR = 81,
	CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD = 84,
	CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97,
	CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED = 115,
	CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED = 116,
};

/* flags */
enum { CU_CTX_SCHED_BLOCKING_SYNC = 0x04 };
enum { CU_STREAM_DEFAULT = 0x0, CU_STREAM_NON_BLOCKING = 0x1 };
enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_BLOCKING_SYNC = 0x1, CU_EVENT_DISABLE_TIMING = 0x2 };
enum { CU_MEMHOSTALLOC_PORTABLE = 0x01, CU_MEMHOSTALLOC_DEVICEMAP = 0x02, CU_MEMHOSTALLOC_WRITECOMBINED = 0x04 };
enum { CU_MEMHOSTREGISTER_PORTABLE = 0x01, CU_MEMHOSTREGISTER_DEVICEMAP = 0x02 };
enum { CU_STREAM_CAPTURE_MODE_GLOBAL = 0, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1, CU_STREAM_CAPTURE_MODE_RELAXED = 2 };
enum {
	CU_JIT_INFO_LOG_BUFFER = 3,
	CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
	CU_JIT_ERROR_LOG_BUFFER = 5,
	CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
	CU_JIT_OPTIMIZATION_LEVEL = 7,
	CU_JIT_TARGET_FROM_CUCONTEXT = 8,
	CU_JIT_LOG_VERBOSE = 12,
};

/* The function table. Pointers are NULL when the library lacks the symbol. */
typedef struct gv_cuda_api {
	/* required */
	CUresult (*cuInit)(unsigned flags);
	CUresult (*cuDriverGetVersion)(int *version);
	CUresult (*cuDeviceGetCount)(int *count);
	CUresult (*cuDeviceGet)(CUdevice *dev, int ordinal);
	/* device queries */
	CUresult (*cuDeviceGetName)(char *name, int len, CUdevice dev);
	CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute attrib, CUdevice dev);
	CUresult (*cuDeviceGetPCIBusId)(char *bus_id, int len, CUdevice dev);
	CUresult (*cuDeviceTotalMem)(size_t *bytes, CUdevice dev);               /* cuDeviceTotalMem_v2 */
	CUresult (*cuDeviceCanAccessPeer)(int *can, CUdevice dev, CUdevice peer);
	CUresult (*cuGetErrorName)(CUresult rc, const char **name);
	CUresult (*cuGetErrorString)(CUresult rc, const char **text);
	/* contexts */
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice dev);
	CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev);                      /* _v2 preferred */
	CUresult (*cuCtxSetCurrent)(CUcontext ctx);
	CUresult (*cuCtxSynchronize)(void);
	CUresult (*cuCtxEnablePeerAccess)(CUcontext peer, unsigned flags);
	/* memory (the _v2 entry points) */
	CUresult (*cuMemAlloc)(CUdeviceptr *p, size_t bytes);
	CUresult (*cuMemFree)(CUdeviceptr p);
	CUresult (*cuMemGetInfo)(size_t *free_bytes, size_t *total_bytes);
	CUresult (*cuMemAllocHost)(void **p, size_t bytes);
	CUresult (*cuMemHostAlloc)(void **p, size_t bytes, unsigned flags);
	CUresult (*cuMemFreeHost)(void *p);
	CUresult (*cuMemHostRegister)(void *p, size_t bytes, unsigned flags);
	CUresult (*cuMemHostUnregister)(void *p);
	CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
	CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
	CUresult (*cuMemcpyDtoD)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);
	CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s);
	CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);
	CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s);
	CUresult (*cuMemcpyPeerAsync)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
				      size_t bytes, CUstream s);
	CUresult (*cuMemsetD32)(CUdeviceptr dst, unsigned value, size_t count);
	CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t count);
	/* modules and launches */
	CUresult (*cuModuleLoadData)(CUmodule *m, const void *image);
	CUresult (*cuModuleLoadDataEx)(CUmodule *m, const void *image, unsigned nopt, CUjit_option *opts,
				       void **values);
	CUresult (*cuModuleGetFunction)(CUfunction *f, CUmodule m, const char *name);
	CUresult (*cuModuleUnload)(CUmodule m);
	CUresult (*cuLaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				   unsigned bz, unsigned shared_bytes, CUstream s, void **params, void **extra);
	/* streams and events */
	CUresult (*cuStreamCreate)(CUstream *s, unsigned flags);
	CUresult (*cuStreamDestroy)(CUstream s);
	CUresult (*cuStreamSynchronize)(CUstream s);
	CUresult (*cuEventCreate)(CUevent *e, unsigned flags);
	CUresult (*cuEventRecord)(CUevent e, CUstream s);
	CUresult (*cuEventSynchronize)(CUevent e);
	CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
	CUresult (*cuEventDestroy)(CUevent e);
	/* graphs */
	CUresult (*cuStreamBeginCapture)(CUstream s, CUstreamCaptureMode mode);   /* cuStreamBeginCapture_v2 */
	CUresult (*cuStreamEndCapture)(CUstream s, CUgraph *g);
	CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *exec, CUgraph g, unsigned long long flags);
	CUresult (*cuGraphLaunch)(CUgraphExec exec, CUstream s);
	CUresult (*cuGraphExecDestroy)(CUgraphExec exec);
	CUresult (*cuGraphDestroy)(CUgraph g);
} gv_cuda_api;

typedef struct gv_cuda_status {
	bool attempted, loaded, from_env;
	char path[512];
	char error[512];     /* dlerror() or the missing symbol */
	bool init_called;
	CUresult init_rc;
	double init_seconds; /* how long cuInit took */
} gv_cuda_status;

/* Loads libcuda once (thread-safe); true when the required symbols are there. */
bool gv_cuda_load(void);
/* The table, or NULL when the library did not load. */
const gv_cuda_api *gv_cuda_api_get(void);
/* cuInit(0) once (timed); later calls return the first result. CUDA_ERROR_SHARED_OBJECT_INIT_FAILED
 * when libcuda is missing or lacks required symbols (gv_cuda_status_get says which). Blocks as
 * long as cuInit does; gv_cuda_load, gv_cuda_status_get and the result names never wait for it. */
CUresult gv_cuda_init(void);
/* gv_cuda_init as a stage of a supervised child (core/child.h: a hang or a crash in it names
 * cuInit and the library), *st read after it (init_seconds, path). */
CUresult gv_cuda_init_staged(gv_cuda_status *st);
void gv_cuda_status_get(gv_cuda_status *out);
/* Tests only: dlcloses and forgets, so GPUVET_CUDA_LIB is read again. */
void gv_cuda_unload(void);

/* "CUDA_ERROR_NO_DEVICE" for 100: our table, else cuGetErrorName when libcuda is already loaded
 * (never loads it), else "CUDA_ERROR_<code>" (a per-thread buffer). Pure enough for rules. */
const char *gv_cuda_result_name(CUresult rc);
/* cuGetErrorString's text when libcuda is already loaded, else our table's. Never NULL. */
const char *gv_cuda_result_text(CUresult rc);
/* One line for users: the likely cause of this code ("no NVIDIA GPU is visible to this process
 * (CUDA_VISIBLE_DEVICES, container device rules)"), or NULL when we have none. */
const char *gv_cuda_result_cause(CUresult rc);
#endif
