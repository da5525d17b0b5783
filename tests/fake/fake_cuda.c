/*
 * A fake libcuda for tests, configured by the same GPUVET_FAKE_CONFIG file as the fake NVML
 * (README.md). Devices come from the gpu.N.* keys, in CUDA order (cuda.order = 1,0 maps CUDA
 * ordinal i to NVML index order[i]). Device memory is one arena of host memory (bounded by
 * cuda.alloc_limit; device pointers are host pointers), with bad cells on request
 * (cuda.mem_stuck_bit); the kernels that have a model (fake_kernels.c: the input generators and
 * the memory test's) compute at launch, the others do nothing; events time real intervals.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "fake_config.h"
#include "fake_cuda.h"
#include "nvidia/cuda.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool initialized;
static long long allocated; /* bytes handed out by cuMemAlloc */

struct CUctx_st {
	int dev;
};
struct CUmod_st {
	int dummy;
};
struct CUfunc_st {
	char name[64];
	fake_kernel_fn run; /* NULL: the kernel does nothing here */
};
struct CUstream_st {
	int dummy;
};
struct CUevent_st {
	double t;
};
struct CUgraph_st {
	int dummy;
};
struct CUgraphExec_st {
	int dummy;
};
static struct CUctx_st contexts[FAKE_MAX_GPUS];
static struct CUmod_st the_module;
/* one handle per kernel name, as the real cuModuleGetFunction gives */
#define FAKE_MAX_FUNCTIONS 64
static struct CUfunc_st functions[FAKE_MAX_FUNCTIONS];
static int nfunctions;
static struct CUgraph_st the_graph;
static struct CUgraphExec_st the_exec;

static int count(void)
{
	long long n = fake_raw("cuda.device_count") ? fake_num("cuda.device_count", 1, NULL)
						    : fake_num("device_count", 1, NULL);
	if (n < 0)
		n = 0;
	return n > FAKE_MAX_GPUS ? FAKE_MAX_GPUS : (int)n;
}

/* NVML index of CUDA ordinal i (cuda.order, default identity). */
static int nvml_index(int i)
{
	const char *order = fake_raw("cuda.order");
	if (!order || i >= fake_list_len(order))
		return i;
	char buf[32];
	long long n = i;
	fake_parse_num(fake_list_item(order, i, buf, sizeof(buf)), &n);
	return (int)n;
}

/* Common entry: the configured error, then "initialised?" and "valid device?". */
static CUresult enter(const char *fn, int dev, bool needs_dev)
{
	int rc = fake_error(fn, dev >= 0 ? nvml_index(dev) : -1);
	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	bool init = initialized;
	pthread_mutex_unlock(&lock);
	if (!init)
		return CUDA_ERROR_NOT_INITIALIZED;
	if (needs_dev && (dev < 0 || dev >= count()))
		return CUDA_ERROR_INVALID_DEVICE;
	/* without devices nothing but the queries work */
	if (count() == 0 && !needs_dev)
		return CUDA_ERROR_NO_DEVICE;
	return CUDA_SUCCESS;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

FAKE_EXPORT CUresult cuInit(unsigned flags)
{
	fake_reload();
	int rc = fake_error("cuInit", -1);
	if (!rc) {
		char buf[32];
		long long n;
		const char *v = fake_pick("cuda.init", buf, sizeof(buf));
		if (v && fake_parse_num(v, &n))
			rc = (int)n;
	}
	if (!rc && flags != 0)
		rc = CUDA_ERROR_INVALID_VALUE;
	if (!rc && count() == 0)
		rc = CUDA_ERROR_NO_DEVICE; /* what the real cuInit says with no GPU */
	if (!rc) {
		pthread_mutex_lock(&lock);
		initialized = true;
		for (int i = 0; i < FAKE_MAX_GPUS; i++)
			contexts[i].dev = i;
		pthread_mutex_unlock(&lock);
	}
	return rc;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int *v)
{
	int rc = fake_error("cuDriverGetVersion", -1);
	if (rc)
		return rc;
	if (!v)
		return CUDA_ERROR_INVALID_VALUE;
	const char *own = fake_raw("cuda.driver_version");
	long long n = 13000;
	if (own)
		n = fake_num("cuda.driver_version", 13000, NULL);
	else
		n = fake_num("cuda_driver_version", 13000, NULL);
	*v = (int)n;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int *n)
{
	CUresult rc = enter("cuDeviceGetCount", -1, false);
	if (rc && rc != CUDA_ERROR_NO_DEVICE)
		return rc;
	if (!n)
		return CUDA_ERROR_INVALID_VALUE;
	*n = count();
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
	CUresult rc = enter("cuDeviceGet", ordinal, true);
	if (rc)
		return rc;
	*dev = ordinal;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = enter("cuDeviceGetName", dev, true);
	if (rc)
		return rc;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	char buf[256];
	const char *v = fake_gpu_pick(nvml_index(dev), "name", buf, sizeof(buf));
	snprintf(name, (size_t)len, "%s", v ? v : "NVIDIA H200");
	return CUDA_SUCCESS;
}

static void bus_id(int dev, unsigned *domain, unsigned *bus, unsigned *device, unsigned *fn)
{
	char buf[64];
	int g = nvml_index(dev);
	*domain = *bus = *device = *fn = 0;
	if (fake_gpu_pick(g, "pci_bus_id", buf, sizeof(buf)))
		sscanf(buf, "%x:%x:%x.%x", domain, bus, device, fn);
	else
		*bus = (0x18 + 0x20 * g) & 0xff;
}

FAKE_EXPORT CUresult cuDeviceGetPCIBusId(char *out, int len, CUdevice dev)
{
	CUresult rc = enter("cuDeviceGetPCIBusId", dev, true);
	if (rc)
		return rc;
	if (!out || len < 13)
		return CUDA_ERROR_INVALID_VALUE;
	unsigned d, b, s, f;
	bus_id(dev, &d, &b, &s, &f);
	snprintf(out, (size_t)len, "%04x:%02x:%02x.%x", d, b, s, f);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice dev)
{
	CUresult rc = enter("cuDeviceGetAttribute", dev, true);
	if (rc)
		return rc;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	int g = nvml_index(dev);
	char buf[64];
	int major = 9, minor = 0;
	const char *cc = fake_gpu_pick(g, "cc", buf, sizeof(buf));
	if (cc)
		sscanf(cc, "%d.%d", &major, &minor);
	unsigned d, b, s, f;
	bus_id(dev, &d, &b, &s, &f);
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = major; break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = minor; break;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = (int)fake_gpu_num(g, "sm_count", 132, NULL); break;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *value = (int)fake_gpu_num(g, "max_sm_clock", 1980, NULL) * 1000; break;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *value = (int)fake_gpu_num(g, "max_mem_clock", 3201, NULL) * 1000; break;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *value = (int)fake_gpu_num(g, "bus_width", 6144, NULL); break;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: *value = 50 << 20; break;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *value = (int)b; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *value = (int)s; break;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *value = (int)d; break;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *value = 2048; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *value = 48 << 10; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: *value = 227 << 10; break;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: *value = 228 << 10; break;
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *value = (int)fake_gpu_num(g, "kernel_exec_timeout", 0, NULL); break;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *value = (int)fake_gpu_num(g, "ecc_mode", 1, NULL); break;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *value = 3; break;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
	default: *value = 0; break;
	}
	return CUDA_SUCCESS;
}

static long long total_mem(int dev)
{
	return fake_gpu_num(nvml_index(dev), "memory_total", 143771LL << 20, NULL);
}

FAKE_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = enter("cuDeviceTotalMem_v2", dev, true);
	if (rc)
		return rc;
	*bytes = (size_t)total_mem(dev);
	return CUDA_SUCCESS;
}

/* cuda.peer.I.J = 0/1 (CUDA ordinals); default cuda.peer (1): every pair of distinct GPUs. */
static bool peer_ok(int a, int b)
{
	char key[64];
	if (a == b)
		return false;
	snprintf(key, sizeof(key), "cuda.peer.%d.%d", a, b);
	const char *v = fake_raw(key);
	long long n = 1;
	if (v)
		fake_parse_num(v, &n);
	else
		n = fake_num("cuda.peer", 1, NULL);
	return n != 0;
}

FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	CUresult rc = enter("cuDeviceCanAccessPeer", dev, true);
	if (rc)
		return rc;
	if (peer < 0 || peer >= count())
		return CUDA_ERROR_INVALID_DEVICE;
	*can = peer_ok(dev, peer);
	return CUDA_SUCCESS;
}

static const struct {
	int rc;
	const char *name, *text;
} names[] = {
	{0, "CUDA_SUCCESS", "no error"},
	{1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	{2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	{3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	{34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	{46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	{100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	{101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	{209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	{218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	{222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
	{700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	{716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	{304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
	{800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	{802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
	{803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	{999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

FAKE_EXPORT CUresult cuGetErrorName(CUresult rc, const char **s)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].rc == rc) {
			*s = names[i].name;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult rc, const char **s)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].rc == rc) {
			*s = names[i].text;
			return CUDA_SUCCESS;
		}
	*s = NULL;
	return CUDA_ERROR_INVALID_VALUE;
}

/* ---- contexts ---- */

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
	CUresult rc = enter("cuDevicePrimaryCtxRetain", dev, true);
	if (rc)
		return rc;
	*ctx = &contexts[dev];
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	return enter("cuDevicePrimaryCtxRelease_v2", dev, true);
}

static _Thread_local CUcontext current;

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = enter("cuCtxSetCurrent", -1, false);
	if (!rc)
		current = ctx;
	return rc;
}

FAKE_EXPORT CUresult cuCtxSynchronize(void)
{
	CUresult rc = enter("cuCtxSynchronize", -1, false);
	return rc ? rc : current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

FAKE_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned flags)
{
	CUresult rc = enter("cuCtxEnablePeerAccess", -1, false);
	if (rc)
		return rc;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!peer || flags)
		return CUDA_ERROR_INVALID_VALUE;
	return peer_ok(current->dev, peer->dev) ? CUDA_SUCCESS : CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
}

/* ---- memory: one arena of host memory stands in for device memory ---- */

/* The arena is reserved once (address space only: pages are real once touched, and given back
 * on free) and handed out first fit, 256-byte aligned, in address order, so that an offset
 * into it names a cell: the first allocation of a process starts at offset 0. */
#define ARENA_ALIGN 256
typedef struct span {
	size_t off, size;
} span;
static unsigned char *arena;
static size_t arena_size;
static span *spans; /* live allocations, by offset */
static size_t nspans, spans_cap;

static bool arena_ready(void)
{
	if (arena)
		return true;
	for (size_t size = 64ull << 30; size >= (1ull << 30); size /= 2) {
		void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p != MAP_FAILED) {
			arena = p;
			arena_size = size;
			return true;
		}
	}
	return false;
}

/* dlclose: the allocation table goes with the library (the arena's pages are the mapping's) */
__attribute__((destructor)) static void arena_fini(void)
{
	free(spans);
	spans = NULL;
	nspans = spans_cap = 0;
	/* and the arena's address space: a test that loads the fake again maps a new one (under
	 * ThreadSanitizer the address space for mappings is small) */
	if (arena)
		munmap(arena, arena_size);
	arena = NULL;
	arena_size = 0;
}

/* under the lock */
static bool arena_alloc(size_t bytes, size_t *off)
{
	size_t size = (bytes + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN, at = 0, i = 0;
	if (!arena_ready() || size < bytes)
		return false;
	for (; i < nspans; i++) {
		if (spans[i].off - at >= size)
			break;
		at = (spans[i].off + spans[i].size + ARENA_ALIGN - 1) / ARENA_ALIGN * ARENA_ALIGN;
	}
	if (i == nspans && (at > arena_size || arena_size - at < size))
		return false;
	if (nspans == spans_cap) {
		size_t cap = spans_cap ? 2 * spans_cap : 64;
		span *v = realloc(spans, cap * sizeof(*v));
		if (!v)
			return false;
		spans = v;
		spans_cap = cap;
	}
	memmove(&spans[i + 1], &spans[i], (nspans - i) * sizeof(*spans));
	spans[i] = (span){at, bytes};
	nspans++;
	*off = at;
	return true;
}

/* the live allocation that holds offset off, -1 for none (under the lock) */
static long span_of(size_t off)
{
	size_t lo = 0, hi = nspans;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (spans[mid].off + spans[mid].size <= off)
			lo = mid + 1;
		else if (spans[mid].off > off)
			hi = mid;
		else
			return (long)mid;
	}
	return -1;
}

bool fake_dev_range(uintptr_t p, size_t n)
{
	if (!arena || p < (uintptr_t)arena || p - (uintptr_t)arena >= arena_size)
		return false;
	size_t off = p - (uintptr_t)arena;
	pthread_mutex_lock(&lock);
	long i = span_of(off);
	bool ok = i >= 0 && off + n <= spans[i].off + spans[i].size && off + n >= off;
	pthread_mutex_unlock(&lock);
	return ok;
}

/* Device address and size of the arena: tests name a bad cell by its offset into it
 * (cuda.mem_stuck_bit) and find where their allocations lie. */
FAKE_EXPORT void *fakeCudaDeviceMemory(size_t *size)
{
	pthread_mutex_lock(&lock);
	arena_ready();
	if (size)
		*size = arena_size;
	pthread_mutex_unlock(&lock);
	return arena;
}

/* ---- bad cells ---- */

#define MAX_FAULTS 8
static struct fault {
	size_t off; /* byte offset of the 64-bit word in the arena */
	int bit;    /* 0-63, little-endian in that word */
	int value;  /* what it reads as */
} faults[MAX_FAULTS];
static int nfaults;

/* cuda.mem_stuck_bit = OFFSET:BIT[:VALUE], a comma list of them (a list, not a cycle) */
void fake_dev_faults_load(void)
{
	const char *v = fake_raw("cuda.mem_stuck_bit");
	int n = 0;
	for (int i = 0; v && i < fake_list_len(v) && n < MAX_FAULTS; i++) {
		char item[96], *colon, *colon2;
		fake_list_item(v, i, item, sizeof(item));
		long long off, bit, value = 1;
		if (!(colon = strchr(item, ':')))
			continue;
		*colon = 0;
		if ((colon2 = strchr(colon + 1, ':'))) {
			*colon2 = 0;
			if (!fake_parse_num(colon2 + 1, &value))
				continue;
		}
		if (!fake_parse_num(item, &off) || !fake_parse_num(colon + 1, &bit) || off < 0 || bit < 0 || bit > 63)
			continue;
		faults[n++] = (struct fault){(size_t)off & ~(size_t)7, (int)bit, value != 0};
	}
	nfaults = n;
}

void fake_dev_read(void *dst, uintptr_t src, size_t n)
{
	memmove(dst, (const void *)src, n);
	if (!nfaults || !arena || src < (uintptr_t)arena)
		return;
	size_t off = src - (uintptr_t)arena;
	for (int i = 0; i < nfaults; i++) {
		size_t byte = faults[i].off + (size_t)faults[i].bit / 8;
		if (byte < off || byte - off >= n)
			continue;
		unsigned char *b = (unsigned char *)dst + (byte - off), mask = (unsigned char)(1u << faults[i].bit % 8);
		*b = faults[i].value ? (unsigned char)(*b | mask) : (unsigned char)(*b & ~mask);
	}
}

uint64_t fake_dev_read64(uintptr_t src)
{
	uint64_t v;
	fake_dev_read(&v, src, 8);
	return v;
}

uint32_t fake_dev_read32(uintptr_t src)
{
	uint32_t v;
	fake_dev_read(&v, src, 4);
	return v;
}

FAKE_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
	CUresult rc = enter("cuMemAlloc_v2", -1, false);
	if (rc)
		return rc;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!p || bytes == 0)
		return CUDA_ERROR_INVALID_VALUE;
	long long limit = fake_num("cuda.alloc_limit", 256LL << 20, NULL);
	pthread_mutex_lock(&lock);
	size_t off = 0;
	bool ok = allocated + (long long)bytes <= limit && arena_alloc(bytes, &off);
	if (ok)
		allocated += (long long)bytes;
	pthread_mutex_unlock(&lock);
	if (!ok)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*p = (CUdeviceptr)(uintptr_t)(arena + off);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFree_v2(CUdeviceptr p)
{
	CUresult rc = enter("cuMemFree_v2", -1, false);
	if (rc)
		return rc;
	if (!p)
		return CUDA_SUCCESS;
	pthread_mutex_lock(&lock);
	long i = arena && p >= (uintptr_t)arena ? span_of((size_t)(p - (uintptr_t)arena)) : -1;
	if (i < 0 || spans[i].off != (size_t)(p - (uintptr_t)arena)) {
		pthread_mutex_unlock(&lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	span sp = spans[i];
	memmove(&spans[i], &spans[i + 1], (nspans - (size_t)i - 1) * sizeof(*spans));
	nspans--;
	allocated -= (long long)sp.size;
	/* the whole pages of it go back to the system */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t from = (sp.off + page - 1) / page * page, to = (sp.off + sp.size) / page * page;
	if (to > from)
		madvise(arena + from, to - from, MADV_DONTNEED);
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemGetInfo_v2(size_t *freeb, size_t *total)
{
	CUresult rc = enter("cuMemGetInfo_v2", -1, false);
	if (rc)
		return rc;
	if (!current)
		return CUDA_ERROR_INVALID_CONTEXT;
	long long t = total_mem(current->dev);
	long long used = fake_gpu_num(nvml_index(current->dev), "memory_used", 0, NULL);
	pthread_mutex_lock(&lock);
	long long f = t - used - allocated;
	pthread_mutex_unlock(&lock);
	*total = (size_t)t;
	*freeb = f > 0 ? (size_t)f : 0;
	return CUDA_SUCCESS;
}

static CUresult host_alloc(const char *fn, void **p, size_t bytes)
{
	CUresult rc = enter(fn, -1, false);
	if (rc)
		return rc;
	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	*p = malloc(bytes ? bytes : 1);
	return *p ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuMemAllocHost_v2(void **p, size_t bytes)
{
	return host_alloc("cuMemAllocHost_v2", p, bytes);
}

FAKE_EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned flags)
{
	(void)flags;
	return host_alloc("cuMemHostAlloc", p, bytes);
}

FAKE_EXPORT CUresult cuMemFreeHost(void *p)
{
	CUresult rc = enter("cuMemFreeHost", -1, false);
	if (!rc)
		free(p);
	return rc;
}

FAKE_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags)
{
	(void)flags;
	CUresult rc = enter("cuMemHostRegister_v2", -1, false);
	return rc ? rc : (!p || !bytes) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostUnregister(void *p)
{
	CUresult rc = enter("cuMemHostUnregister", -1, false);
	return rc ? rc : p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy(const char *fn, void *dst, const void *src, size_t n)
{
	CUresult rc = enter(fn, -1, false);
	if (rc)
		return rc;
	if ((!dst || !src) && n)
		return CUDA_ERROR_INVALID_VALUE;
	if (n)
		memmove(dst, src, n);
	return CUDA_SUCCESS;
}

#define DPTR(x) ((void *)(uintptr_t)(x))

FAKE_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	return copy("cuMemcpyHtoD_v2", DPTR(dst), src, n);
}
/* a copy out of device memory reads its bad cells as bad */
static CUresult copy_dev(const char *fn, void *dst, CUdeviceptr src, size_t n)
{
	CUresult rc = enter(fn, -1, false);
	if (rc)
		return rc;
	if ((!dst || !src) && n)
		return CUDA_ERROR_INVALID_VALUE;
	fake_dev_faults_load();
	if (n)
		fake_dev_read(dst, (uintptr_t)src, n);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	return copy_dev("cuMemcpyDtoH_v2", dst, src, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	return copy_dev("cuMemcpyDtoD_v2", DPTR(dst), src, n);
}
FAKE_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s)
{
	(void)s;
	return copy("cuMemcpyHtoDAsync_v2", DPTR(dst), src, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	return copy_dev("cuMemcpyDtoHAsync_v2", dst, src, n);
}
FAKE_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s)
{
	(void)s;
	return copy_dev("cuMemcpyDtoDAsync_v2", DPTR(dst), src, n);
}
FAKE_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
				       CUstream s)
{
	(void)s;
	if (!dctx || !sctx)
		return CUDA_ERROR_INVALID_CONTEXT;
	return copy_dev("cuMemcpyPeerAsync", DPTR(dst), src, n);
}

FAKE_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned v, size_t n)
{
	CUresult rc = enter("cuMemsetD32_v2", -1, false);
	if (rc)
		return rc;
	unsigned *p = DPTR(dst);
	for (size_t i = 0; i < n; i++)
		p[i] = v;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n)
{
	CUresult rc = enter("cuMemsetD8_v2", -1, false);
	if (!rc)
		memset(DPTR(dst), v, n);
	return rc;
}

/* ---- modules, launches ---- */

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule *m, const void *image)
{
	CUresult rc = enter("cuModuleLoadData", -1, false);
	if (rc)
		return rc;
	if (!m || !image)
		return CUDA_ERROR_INVALID_VALUE;
	*m = &the_module;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n, CUjit_option *o, void **v)
{
	(void)n, (void)o, (void)v;
	CUresult rc = enter("cuModuleLoadDataEx", -1, false);
	if (rc)
		return rc;
	if (!m || !image)
		return CUDA_ERROR_INVALID_VALUE;
	*m = &the_module;
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
	CUresult rc = enter("cuModuleGetFunction", -1, false);
	if (rc)
		return rc;
	if (!f || !m || !name)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	int i = 0;
	while (i < nfunctions && strcmp(functions[i].name, name) != 0)
		i++;
	if (i == nfunctions && nfunctions < FAKE_MAX_FUNCTIONS) {
		snprintf(functions[i].name, sizeof(functions[i].name), "%s", name);
		functions[i].run = fake_kernel_model(name);
		nfunctions++;
	}
	pthread_mutex_unlock(&lock);
	if (i == FAKE_MAX_FUNCTIONS)
		return CUDA_ERROR_NOT_FOUND;
	*f = &functions[i];
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule m)
{
	CUresult rc = enter("cuModuleUnload", -1, false);
	return rc ? rc : m ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
				    unsigned bz, unsigned shm, CUstream s, void **params, void **extra)
{
	(void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s, (void)extra;
	CUresult rc = enter("cuLaunchKernel", -1, false);
	if (rc)
		return rc;
	if (!f)
		return CUDA_ERROR_INVALID_HANDLE;
	if (!f->run)
		return CUDA_SUCCESS;
	if (!params)
		return CUDA_ERROR_INVALID_VALUE;
	/* the kernel runs now, on this thread: the stream's order is the calls' order */
	fake_dev_faults_load();
	return f->run(params);
}

/* ---- streams, events, graphs ---- */

FAKE_EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
	(void)flags;
	CUresult rc = enter("cuStreamCreate", -1, false);
	if (rc)
		return rc;
	*s = calloc(1, sizeof(**s));
	return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
	CUresult rc = enter("cuStreamDestroy_v2", -1, false);
	if (!rc)
		free(s);
	return rc;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream s)
{
	(void)s;
	return enter("cuStreamSynchronize", -1, false);
}

FAKE_EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
	(void)flags;
	CUresult rc = enter("cuEventCreate", -1, false);
	if (rc)
		return rc;
	*e = calloc(1, sizeof(**e));
	return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
	(void)s;
	CUresult rc = enter("cuEventRecord", -1, false);
	if (rc)
		return rc;
	if (!e)
		return CUDA_ERROR_INVALID_HANDLE;
	e->t = now_ms();
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent e)
{
	CUresult rc = enter("cuEventSynchronize", -1, false);
	return rc ? rc : e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	CUresult rc = enter("cuEventElapsedTime", -1, false);
	if (rc)
		return rc;
	if (!ms || !a || !b)
		return CUDA_ERROR_INVALID_HANDLE;
	char buf[64];
	const char *v = fake_pick("cuda.event_ms", buf, sizeof(buf));
	*ms = v ? (float)atof(v) : (float)(b->t - a->t);
	return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy_v2(CUevent e)
{
	CUresult rc = enter("cuEventDestroy_v2", -1, false);
	if (!rc)
		free(e);
	return rc;
}

FAKE_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
	(void)s, (void)mode;
	return enter("cuStreamBeginCapture_v2", -1, false);
}

FAKE_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
	(void)s;
	CUresult rc = enter("cuStreamEndCapture", -1, false);
	if (!rc)
		*g = &the_graph;
	return rc;
}

FAKE_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph g, unsigned long long flags)
{
	(void)g, (void)flags;
	CUresult rc = enter("cuGraphInstantiateWithFlags", -1, false);
	if (!rc)
		*exec = &the_exec;
	return rc;
}

FAKE_EXPORT CUresult cuGraphLaunch(CUgraphExec exec, CUstream s)
{
	(void)s;
	CUresult rc = enter("cuGraphLaunch", -1, false);
	return rc ? rc : exec ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

FAKE_EXPORT CUresult cuGraphExecDestroy(CUgraphExec exec)
{
	(void)exec;
	return enter("cuGraphExecDestroy", -1, false);
}

FAKE_EXPORT CUresult cuGraphDestroy(CUgraph g)
{
	(void)g;
	return enter("cuGraphDestroy", -1, false);
}
