/*
 * A fake libnvidia-ml for tests: every answer comes from the GPUVET_FAKE_CONFIG file (README.md).
 * Built twice: fake_nvml (the whole API gpuvet uses) and, with FAKE_NVML_BASIC, fake_nvml_basic,
 * which exports only the old unversioned basic symbols plus name, UUID, PCI info (v1 layout) and
 * memory (v1) - an old driver.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_config.h"
#include "nvidia/nvml.h"

#ifdef FAKE_NVML_BASIC
#define FULL_EXPORT __attribute__((visibility("hidden")))
#else
#define FULL_EXPORT FAKE_EXPORT
#endif
#define BASIC_EXPORT FAKE_EXPORT

#define MAX_MIG 8

struct nvmlDevice_st {
	int gpu; /* NVML index */
	int mig; /* -1 for the GPU itself, else the MIG slot */
};
struct nvmlEventSet_st {
	bool registered[FAKE_MAX_GPUS];
};

static struct nvmlDevice_st gpus[FAKE_MAX_GPUS];
static struct nvmlDevice_st migs[FAKE_MAX_GPUS][MAX_MIG];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int init_count;
/* Xid events delivered so far per GPU, and energy calls per GPU */
static int xid_next[FAKE_MAX_GPUS];
static unsigned long energy_calls[FAKE_MAX_GPUS];

static int device_count(void)
{
	long long n = fake_num("device_count", 1, NULL);
	if (n < 0)
		n = 0;
	return n > FAKE_MAX_GPUS ? FAKE_MAX_GPUS : (int)n;
}

/* NVML's state does not survive fork: in the child of a process that initialised it, every call
 * answers NVML_ERROR_UNINITIALIZED until the child calls nvmlInit itself, as the real library
 * does (a cached "initialised" flag inherited across fork is a known trap: NVIDIA/cuCascade#138,
 * geopm/geopm#3083). The child's count starts at 0; the parent's is its own. */
static void child_after_fork(void)
{
	pthread_mutex_init(&lock, NULL); /* another thread may have held it at the fork */
	init_count = 0;
}

__attribute__((constructor)) static void register_fork_handler(void)
{
	pthread_atfork(NULL, NULL, child_after_fork);
}

static bool initialized(void)
{
	pthread_mutex_lock(&lock);
	bool r = init_count > 0;
	pthread_mutex_unlock(&lock);
	return r;
}

/* Common entry of every device call: initialised, a valid handle, the configured error. */
static nvmlReturn_t enter(const char *fn, nvmlDevice_t dev)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	if (!dev || dev->gpu < 0 || dev->gpu >= device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	return (nvmlReturn_t)fake_error(fn, dev->gpu);
}

static nvmlReturn_t copy_str(char *dst, unsigned len, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(src) + 1 > len)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(dst, src, strlen(src) + 1);
	return NVML_SUCCESS;
}

/* A numeric per-GPU value; "unsupported" gives NVML_ERROR_NOT_SUPPORTED. */
static nvmlReturn_t gpu_uint(nvmlDevice_t dev, const char *field, long long dflt, unsigned *out)
{
	bool unsup = false;
	long long v = fake_gpu_num(dev->gpu, field, dflt, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	if (v == -3) /* a default of -3: not configured means not supported */
		return NVML_ERROR_NOT_SUPPORTED;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = (unsigned)v;
	return NVML_SUCCESS;
}

static void default_bus_id(int gpu, char *buf, size_t size)
{
	snprintf(buf, size, "00000000:%02X:00.0", (0x18 + 0x20 * gpu) & 0xff);
}

static const char *gpu_bus_id(int gpu, char *buf, size_t size)
{
	if (!fake_gpu_pick(gpu, "pci_bus_id", buf, size))
		default_bus_id(gpu, buf, size);
	return buf;
}

/* ---- basic ---- */

static nvmlReturn_t do_init(const char *fn)
{
	fake_reload();
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	if (init_count == 0) {
		memset(xid_next, 0, sizeof(xid_next));
		memset(energy_calls, 0, sizeof(energy_calls));
	}
	init_count++;
	for (int i = 0; i < FAKE_MAX_GPUS; i++) {
		gpus[i].gpu = i;
		gpus[i].mig = -1;
		for (int m = 0; m < MAX_MIG; m++) {
			migs[i][m].gpu = i;
			migs[i][m].mig = m;
		}
	}
	pthread_mutex_unlock(&lock);
	return NVML_SUCCESS;
}

BASIC_EXPORT nvmlReturn_t nvmlInit(void)
{
	return do_init("nvmlInit");
}

FULL_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	return do_init("nvmlInit_v2");
}

BASIC_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	nvmlReturn_t rc = init_count > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
	if (init_count > 0)
		init_count--;
	pthread_mutex_unlock(&lock);
	return rc;
}

static const struct {
	int rc;
	const char *text;
} texts[] = {
	{0, "Success"},
	{1, "Uninitialized"},
	{2, "Invalid Argument"},
	{3, "Not Supported"},
	{4, "Insufficient Permissions"},
	{6, "Not Found"},
	{7, "Insufficient Size"},
	{9, "Driver Not Loaded"},
	{10, "Timeout"},
	{12, "NVML Shared Library Not Found"},
	{13, "Function Not Found"},
	{15, "GPU is lost"},
	{17, "Operating System Error"},
	{18, "Driver/library version mismatch"},
	{999, "Unknown Error"},
};

BASIC_EXPORT const char *nvmlErrorString(nvmlReturn_t rc)
{
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if (texts[i].rc == rc)
			return texts[i].text;
	return "Unknown Error";
}

static nvmlReturn_t get_count(const char *fn, unsigned *count)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = (unsigned)device_count();
	return NVML_SUCCESS;
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned *count)
{
	return get_count("nvmlDeviceGetCount", count);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *count)
{
	return get_count("nvmlDeviceGetCount_v2", count);
}

static nvmlReturn_t get_handle(const char *fn, unsigned index, nvmlDevice_t *dev)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error(fn, (int)index < FAKE_MAX_GPUS ? (int)index : -1);
	if (rc)
		return rc;
	if (!dev || index >= (unsigned)device_count())
		return NVML_ERROR_INVALID_ARGUMENT;
	*dev = &gpus[index];
	return NVML_SUCCESS;
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned index, nvmlDevice_t *dev)
{
	return get_handle("nvmlDeviceGetHandleByIndex", index, dev);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned index, nvmlDevice_t *dev)
{
	return get_handle("nvmlDeviceGetHandleByIndex_v2", index, dev);
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t dev, char *name, unsigned len)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetName", dev);
	if (rc)
		return rc;
	char buf[256];
	const char *v = fake_gpu_pick(dev->gpu, "name", buf, sizeof(buf));
	if (dev->mig >= 0) { /* NVML names a MIG device after its GPU and profile */
		char key[64], prof[64], out[320];
		snprintf(key, sizeof(key), "mig.%d.profile", dev->mig);
		const char *p = fake_gpu_pick(dev->gpu, key, prof, sizeof(prof));
		snprintf(out, sizeof(out), "%s MIG %s", v ? v : "NVIDIA H200", p ? p : "1g.18gb");
		return copy_str(name, len, out);
	}
	return copy_str(name, len, v ? v : "NVIDIA H200");
}

static void mig_uuid(int gpu, int m, char *buf, size_t size)
{
	char key[64];
	snprintf(key, sizeof(key), "mig.%d.uuid", m);
	if (!fake_gpu_pick(gpu, key, buf, size))
		snprintf(buf, size, "MIG-fa4e%04x-0000-4000-8000-%012x", gpu, m);
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t dev, char *uuid, unsigned len)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetUUID", dev);
	if (rc)
		return rc;
	char buf[256];
	if (dev->mig >= 0) {
		mig_uuid(dev->gpu, dev->mig, buf, sizeof(buf));
		return copy_str(uuid, len, buf);
	}
	if (!fake_gpu_pick(dev->gpu, "uuid", buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "GPU-fa4e0000-0000-4000-8000-%012x", dev->gpu);
	return copy_str(uuid, len, buf);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t dev, char *serial, unsigned len)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetSerial", dev);
	if (rc)
		return rc;
	char buf[64];
	if (!fake_gpu_pick(dev->gpu, "serial", buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "165432100%04d", dev->gpu);
	return copy_str(serial, len, buf);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetPcieReplayCounter", dev);
	return rc ? rc : gpu_uint(dev, "pcie_replay", 0, v);
}

/* Fills the v2/v3 layout, or with v1 only the first 16 bytes of id and the numbers. */
static nvmlReturn_t pci_info(const char *fn, nvmlDevice_t dev, nvmlPciInfo_t *pci, bool v1)
{
	nvmlReturn_t rc = enter(fn, dev);
	if (rc)
		return rc;
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	char id[64];
	gpu_bus_id(dev->gpu, id, sizeof(id));
	unsigned domain = 0, bus = 0, device = 0, function = 0;
	sscanf(id, "%x:%x:%x.%x", &domain, &bus, &device, &function);
	long long devid = fake_gpu_num(dev->gpu, "pci_device_id", 0x233510de, NULL);
	long long subsys = fake_gpu_num(dev->gpu, "pci_subsystem_id", 0x18df10de, NULL);
	if (v1) {
		/* v1: char busId[16]; domain, bus, device, pciDeviceId, pciSubSystemId; 4 reserved */
		unsigned char *p = (unsigned char *)pci;
		memset(p, 0, 16 + 9 * sizeof(unsigned));
		/* the legacy id has a 4-digit domain: "0000:3B:00.0" */
		snprintf((char *)p, 16, "%04X:%02X:%02X.%X", domain & 0xffff, bus, device, function);
		unsigned nums[5] = {domain, bus, device, (unsigned)devid, (unsigned)subsys};
		memcpy(p + 16, nums, sizeof(nums));
		return NVML_SUCCESS;
	}
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%s", id);
	snprintf(pci->busId, sizeof(pci->busId), "%s", id);
	pci->domain = domain;
	pci->bus = bus;
	pci->device = device;
	pci->pciDeviceId = (unsigned)devid;
	pci->pciSubSystemId = (unsigned)subsys;
	return NVML_SUCCESS;
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	return pci_info("nvmlDeviceGetPciInfo", dev, pci, true);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	return pci_info("nvmlDeviceGetPciInfo_v2", dev, pci, false);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t dev, nvmlPciInfo_t *pci)
{
	return pci_info("nvmlDeviceGetPciInfo_v3", dev, pci, false);
}

#define H200_MEMORY (143771ULL << 20)

static long long processes_memory(int gpu);

/* The GPU's memory, or a MIG device's: mig.M.memory_total (default a seventh of the GPU's, an
 * H200's 1g profile) and mig.M.memory_used (default 0). */
static void memory_values(nvmlDevice_t dev, unsigned long long *total, unsigned long long *used)
{
	int gpu = dev->gpu;
	*total = (unsigned long long)fake_gpu_num(gpu, "memory_total", (long long)H200_MEMORY, NULL);
	*used = (unsigned long long)fake_gpu_num(gpu, "memory_used", processes_memory(gpu), NULL);
	if (dev->mig >= 0) {
		char key[64];
		snprintf(key, sizeof(key), "mig.%d.memory_total", dev->mig);
		*total = (unsigned long long)fake_gpu_num(gpu, key, (long long)(*total / 7), NULL);
		snprintf(key, sizeof(key), "mig.%d.memory_used", dev->mig);
		*used = (unsigned long long)fake_gpu_num(gpu, key, 0, NULL);
	}
	if (*used > *total)
		*used = *total;
}

BASIC_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *m)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMemoryInfo", dev);
	if (rc)
		return rc;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	memory_values(dev, &m->total, &m->used);
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *m)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMemoryInfo_v2", dev);
	if (rc)
		return rc;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (m->version != NVML_MEMORY_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	memory_values(dev, &m->total, &m->used);
	m->reserved = (unsigned long long)fake_gpu_num(dev->gpu, "memory_reserved", 0, NULL);
	m->free = m->total - m->used;
	return NVML_SUCCESS;
}

/* ---- system ---- */

static nvmlReturn_t sys_str(const char *fn, const char *key, const char *dflt, char *out, unsigned len)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	char buf[256];
	const char *v = fake_pick(key, buf, sizeof(buf));
	if (v && strcmp(v, "unsupported") == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	return copy_str(out, len, v ? v : dflt);
}

FULL_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned len)
{
	return sys_str("nvmlSystemGetDriverVersion", "driver_version", "580.159.04", v, len);
}

FULL_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned len)
{
	return sys_str("nvmlSystemGetNVMLVersion", "nvml_version", "13.580.159.04", v, len);
}

static nvmlReturn_t cuda_version(const char *fn, int *v)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	bool unsup = false;
	long long n = fake_num("cuda_driver_version", 13000, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	if (!v)
		return NVML_ERROR_INVALID_ARGUMENT;
	*v = (int)n;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
	return cuda_version("nvmlSystemGetCudaDriverVersion", v);
}

FULL_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v)
{
	return cuda_version("nvmlSystemGetCudaDriverVersion_v2", v);
}

/* ---- processes ----
 * gpu.N.processes = PID:NAME:USED[:graphics];PID:NAME:USED  (a comma list cycles per call) */

struct fproc {
	unsigned pid;
	char name[64];
	unsigned long long used;
	bool graphics;
};

static int parse_procs(const char *v, struct fproc *out, int max)
{
	int n = 0;
	if (!v || !*v || strcmp(v, "none") == 0)
		return 0;
	char *copy = strdup(v), *save = NULL;
	for (char *tok = strtok_r(copy, ";", &save); tok && n < max; tok = strtok_r(NULL, ";", &save)) {
		struct fproc p = {0};
		char *f[4] = {0};
		int nf = 0;
		char *s2 = NULL;
		for (char *x = strtok_r(tok, ":", &s2); x && nf < 4; x = strtok_r(NULL, ":", &s2))
			f[nf++] = x;
		if (nf < 1)
			continue;
		long long num = 0;
		if (!fake_parse_num(f[0], &num))
			continue;
		p.pid = (unsigned)num;
		snprintf(p.name, sizeof(p.name), "%s", nf > 1 ? f[1] : "");
		char *nm = p.name;
		while (*nm == ' ')
			memmove(nm, nm + 1, strlen(nm));
		if (nf > 2 && strcmp(f[2], "n/a") == 0)
			p.used = NVML_VALUE_NOT_AVAILABLE_ULL;
		else
			p.used = nf > 2 && fake_parse_num(f[2], &num) ? (unsigned long long)num : 0;
		p.graphics = nf > 3 && strstr(f[3], "graphics");
		out[n++] = p;
	}
	free(copy);
	return n;
}

/* What the GPU's processes hold, the default of memory_used: on the real library a process on a
 * GPU always holds memory there (a CUDA context alone takes hundreds of MiB), so the GPU's used
 * memory is never 0 beside one. One whose use NVML cannot tell ("n/a") counts as a context. */
static long long processes_memory(int gpu)
{
	char buf[4096];
	struct fproc all[256];
	int n = parse_procs(fake_gpu_pick(gpu, "processes", buf, sizeof(buf)), all, 256);
	unsigned long long sum = 0;
	for (int i = 0; i < n; i++)
		sum += all[i].used == NVML_VALUE_NOT_AVAILABLE_ULL ? 256ULL << 20 : all[i].used;
	return (long long)sum;
}

/* R535's ABI break, as the real drivers 535.43 to 535.86 have it: their _v3 process calls write
 * the larger nvmlProcessInfo_v3_t */
static bool v3_layout(const char *fn)
{
	char buf[256];
	const char *v = fake_pick("driver_version", buf, sizeof(buf));
	int major = 0, minor = 0;
	return strstr(fn, "_v3") && v && sscanf(v, "%d.%d", &major, &minor) == 2 && major == 535 && minor >= 43 &&
	       minor < 98;
}

static nvmlReturn_t procs(const char *fn, nvmlDevice_t dev, unsigned *count, void *infos, bool graphics, bool v1)
{
	nvmlReturn_t rc = enter(fn, dev);
	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	char buf[4096];
	struct fproc all[256];
	const char *v = fake_gpu_pick(dev->gpu, "processes", buf, sizeof(buf));
	if (v && strcmp(v, "unsupported") == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	int n = parse_procs(v, all, 256);
	unsigned want = 0;
	for (int i = 0; i < n; i++)
		if (all[i].graphics == graphics)
			want++;
	if (*count < want || (!infos && want)) {
		*count = want;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	unsigned k = 0;
	for (int i = 0; i < n; i++) {
		if (all[i].graphics != graphics)
			continue;
		if (v1) {
			nvmlProcessInfo_v1_t *p = (nvmlProcessInfo_v1_t *)infos + k++;
			p->pid = all[i].pid;
			p->usedGpuMemory = all[i].used;
		} else if (v3_layout(fn)) {
			nvmlProcessInfo_v3_t *p = (nvmlProcessInfo_v3_t *)infos + k++;
			p->pid = all[i].pid;
			p->usedGpuMemory = all[i].used;
			p->gpuInstanceId = ~0u;
			p->computeInstanceId = ~0u;
			p->usedGpuCcProtectedMemory = 0;
		} else {
			nvmlProcessInfo_t *p = (nvmlProcessInfo_t *)infos + k++;
			p->pid = all[i].pid;
			p->usedGpuMemory = all[i].used;
			p->gpuInstanceId = ~0u;
			p->computeInstanceId = ~0u;
		}
	}
	*count = want;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p)
{
	return procs("nvmlDeviceGetComputeRunningProcesses_v3", d, c, p, false, false);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p)
{
	return procs("nvmlDeviceGetComputeRunningProcesses_v2", d, c, p, false, false);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_v1_t *p)
{
	return procs("nvmlDeviceGetComputeRunningProcesses", d, c, p, false, true);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p)
{
	return procs("nvmlDeviceGetGraphicsRunningProcesses_v3", d, c, p, true, false);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_t *p)
{
	return procs("nvmlDeviceGetGraphicsRunningProcesses_v2", d, c, p, true, false);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned *c, nvmlProcessInfo_v1_t *p)
{
	return procs("nvmlDeviceGetGraphicsRunningProcesses", d, c, p, true, true);
}

/* gpu.N.process_sm_util = PID:PCT;PID:PCT (a comma list cycles per call): one sample per pid,
 * stamped later than any before; unset: NOT_FOUND (no samples) */
static unsigned long long putil_ts = 1000;
static int putil_next[FAKE_MAX_GPUS];

FULL_EXPORT nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t dev, nvmlProcessUtilizationSample_t *u,
							 unsigned *count, unsigned long long last_seen)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetProcessUtilization", dev);
	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* the list advances on the call that takes the samples, not on the one asking their count */
	char buf[1024];
	const char *raw = fake_gpu_raw(dev->gpu, "process_sm_util");
	if (!raw || !*raw)
		return NVML_ERROR_NOT_FOUND;
	pthread_mutex_lock(&lock);
	int item = putil_next[dev->gpu] % fake_list_len(raw);
	pthread_mutex_unlock(&lock);
	const char *v = fake_list_item(raw, item, buf, sizeof(buf));
	if (!v || !*v)
		return NVML_ERROR_NOT_FOUND;
	if (strcmp(v, "unsupported") == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	unsigned n = 1;
	for (const char *c = v; *c; c++)
		n += *c == ';';
	if (!u || *count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	pthread_mutex_lock(&lock);
	unsigned long long ts = ++putil_ts > last_seen ? putil_ts : last_seen + 1;
	putil_ts = ts;
	putil_next[dev->gpu]++;
	pthread_mutex_unlock(&lock);
	unsigned k = 0;
	for (const char *c = v; *c && k < n;) {
		unsigned pid = 0, pct = 0;
		if (sscanf(c, "%u:%u", &pid, &pct) == 2) {
			memset(&u[k], 0, sizeof(u[k]));
			u[k].pid = pid;
			u[k].smUtil = pct;
			u[k].timeStamp = ts;
			k++;
		}
		const char *semi = strchr(c, ';');
		if (!semi)
			break;
		c = semi + 1;
	}
	*count = k;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned pid, char *name, unsigned len)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error("nvmlSystemGetProcessName", -1);
	if (rc)
		return rc;
	struct fproc all[256];
	for (int g = 0; g < device_count(); g++) {
		/* raw value: looking a name up must not advance a cycling list */
		const char *v = fake_gpu_raw(g, "processes");
		if (!v)
			continue;
		char item[4096];
		for (int k = 0; k < fake_list_len(v); k++) {
			int n = parse_procs(fake_list_item(v, k, item, sizeof(item)), all, 256);
			for (int i = 0; i < n; i++)
				if (all[i].pid == pid)
					return copy_str(name, len, all[i].name);
		}
	}
	return NVML_ERROR_NOT_FOUND;
}

/* ---- identity, modes ---- */

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t dev, unsigned *minor)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMinorNumber", dev);
	return rc ? rc : gpu_uint(dev, "minor", dev->gpu, minor);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t dev, int *major, int *minor)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetCudaComputeCapability", dev);
	if (rc)
		return rc;
	char buf[64];
	const char *v = fake_gpu_pick(dev->gpu, "cc", buf, sizeof(buf));
	int a = 9, b = 0;
	if (v && strcmp(v, "unsupported") == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	if (v)
		sscanf(v, "%d.%d", &a, &b);
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	*major = a;
	*minor = b;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t dev, int *mode)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetPersistenceMode", dev);
	unsigned v = 0;
	if (!rc)
		rc = gpu_uint(dev, "persistence", 1, &v);
	if (!rc)
		*mode = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return rc;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t dev, int *mode)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetComputeMode", dev);
	if (rc)
		return rc;
	char buf[64];
	const char *v = fake_gpu_pick(dev->gpu, "compute_mode", buf, sizeof(buf));
	int m = 0;
	if (v) {
		if (strcmp(v, "unsupported") == 0)
			return NVML_ERROR_NOT_SUPPORTED;
		else if (strcmp(v, "exclusive_thread") == 0)
			m = 1;
		else if (strcmp(v, "prohibited") == 0)
			m = 2;
		else if (strcmp(v, "exclusive_process") == 0)
			m = 3;
		else if (strcmp(v, "default") != 0)
			m = atoi(v);
	}
	*mode = m;
	return NVML_SUCCESS;
}

static int mig_count(int gpu)
{
	long long n = fake_gpu_num(gpu, "mig.count", 0, NULL);
	return n < 0 ? 0 : n > MAX_MIG ? MAX_MIG : (int)n;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t dev, unsigned *cur, unsigned *pending)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMigMode", dev);
	if (rc)
		return rc;
	rc = gpu_uint(dev, "mig_mode", 0, cur);
	if (rc)
		return rc;
	return gpu_uint(dev, "mig_pending", *cur, pending);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t dev, unsigned *count)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMaxMigDeviceCount", dev);
	if (rc)
		return rc;
	*count = MAX_MIG - 1; /* 7 on an H100/H200 */
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t dev, unsigned index, nvmlDevice_t *mig)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMigDeviceHandleByIndex", dev);
	if (rc)
		return rc;
	unsigned cur = 0;
	gpu_uint(dev, "mig_mode", 0, &cur);
	if (!cur)
		return NVML_ERROR_INVALID_ARGUMENT;
	if ((int)index >= mig_count(dev->gpu))
		return NVML_ERROR_NOT_FOUND;
	*mig = &migs[dev->gpu][index];
	return NVML_SUCCESS;
}

/* A MIG device's GPU instance id (mig.M.gi, default M + 1) and compute instance id (mig.M.ci,
 * default 0); the GPU itself has neither (INVALID_ARGUMENT, as NVML answers for a GPU handle). */
static nvmlReturn_t mig_id(const char *fn, nvmlDevice_t dev, const char *field, long long dflt, unsigned *id)
{
	nvmlReturn_t rc = enter(fn, dev);
	if (rc)
		return rc;
	if (dev->mig < 0 || !id)
		return NVML_ERROR_INVALID_ARGUMENT;
	char key[64];
	snprintf(key, sizeof(key), "mig.%d.%s", dev->mig, field);
	return gpu_uint(dev, key, dflt, id);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t dev, unsigned *id)
{
	return mig_id("nvmlDeviceGetGpuInstanceId", dev, "gi", dev ? dev->mig + 1 : 0, id);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t dev, unsigned *id)
{
	return mig_id("nvmlDeviceGetComputeInstanceId", dev, "ci", 0, id);
}

/* ---- PCIe ---- */

FULL_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetCurrPcieLinkGeneration", dev);
	return rc ? rc : gpu_uint(dev, "pcie_gen", 5, v);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMaxPcieLinkGeneration", dev);
	return rc ? rc : gpu_uint(dev, "pcie_gen_max", 5, v);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetCurrPcieLinkWidth", dev);
	return rc ? rc : gpu_uint(dev, "pcie_width", 16, v);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMaxPcieLinkWidth", dev);
	return rc ? rc : gpu_uint(dev, "pcie_width_max", 16, v);
}
FULL_EXPORT nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t dev, int counter, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetPcieThroughput", dev);
	if (rc)
		return rc;
	if (counter == NVML_PCIE_UTIL_TX_BYTES)
		return gpu_uint(dev, "pcie_tx_kbps", 0, v);
	if (counter == NVML_PCIE_UTIL_RX_BYTES)
		return gpu_uint(dev, "pcie_rx_kbps", 0, v);
	return NVML_ERROR_INVALID_ARGUMENT;
}

/* ---- ECC, retirement, remapping ---- */

FULL_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t dev, int *cur, int *pending)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetEccMode", dev);
	unsigned c = 0, p = 0;
	if (!rc)
		rc = gpu_uint(dev, "ecc_mode", 1, &c);
	if (!rc)
		rc = gpu_uint(dev, "ecc_pending", c, &p);
	if (!rc) {
		*cur = c ? 1 : 0;
		*pending = p ? 1 : 0;
	}
	return rc;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t dev, int type, int counter, unsigned long long *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetTotalEccErrors", dev);
	if (rc)
		return rc;
	static const char *const fields[2][2] = {
		{"ecc_corrected_volatile", "ecc_corrected_aggregate"},
		{"ecc_uncorrected_volatile", "ecc_uncorrected_aggregate"},
	};
	if (type < 0 || type > 1 || counter < 0 || counter > 1 || !v)
		return NVML_ERROR_INVALID_ARGUMENT;
	unsigned mode = 1;
	gpu_uint(dev, "ecc_mode", 1, &mode);
	if (!mode)
		return NVML_ERROR_NOT_SUPPORTED; /* ECC disabled: no counters */
	bool unsup = false;
	long long n = fake_gpu_num(dev->gpu, fields[type][counter], 0, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	*v = (unsigned long long)n;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t dev, int cause, unsigned *count,
						   unsigned long long *addresses)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetRetiredPages", dev);
	if (rc)
		return rc;
	unsigned n = 0;
	/* page retirement is pre-Ampere: unsupported unless configured */
	rc = gpu_uint(dev, cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? "retired_dbe" : "retired_sbe", -3,
		      &n);
	if (rc)
		return rc;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (*count < n) {
		*count = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (unsigned i = 0; addresses && i < n; i++)
		addresses[i] = 0x100000ULL * (i + 1);
	*count = n;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t dev, int *pending)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetRetiredPagesPendingStatus", dev);
	unsigned v = 0;
	if (!rc)
		rc = gpu_uint(dev, "retired_pending", -3, &v);
	if (!rc)
		*pending = v ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return rc;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t dev, unsigned *corr, unsigned *unc, unsigned *pending,
						   unsigned *failure)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetRemappedRows", dev);
	if (!rc)
		rc = gpu_uint(dev, "remapped_correctable", 0, corr);
	if (!rc)
		rc = gpu_uint(dev, "remapped_uncorrectable", 0, unc);
	if (!rc)
		rc = gpu_uint(dev, "remap_pending", 0, pending);
	if (!rc)
		rc = gpu_uint(dev, "remap_failure", 0, failure);
	return rc;
}

/* ---- thermal, power, clocks ---- */

FULL_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t dev, int sensor, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetTemperature", dev);
	if (rc)
		return rc;
	if (sensor != NVML_TEMPERATURE_GPU)
		return NVML_ERROR_INVALID_ARGUMENT;
	return gpu_uint(dev, "temperature", 35, v);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t dev, int type, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetTemperatureThreshold", dev);
	if (rc)
		return rc;
	switch (type) {
	case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: return gpu_uint(dev, "temp_shutdown", 92, v);
	case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: return gpu_uint(dev, "temp_slowdown", 89, v);
	case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: return gpu_uint(dev, "temp_gpu_max", 87, v);
	default: return NVML_ERROR_NOT_SUPPORTED;
	}
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t dev, nvmlUtilization_t *u)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetUtilizationRates", dev);
	if (!rc)
		rc = gpu_uint(dev, "util_gpu", 0, &u->gpu);
	if (!rc)
		rc = gpu_uint(dev, "util_memory", 0, &u->memory);
	return rc;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t dev, unsigned *mw)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetPowerUsage", dev);
	return rc ? rc : gpu_uint(dev, "power_mw", 75000, mw);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t dev, unsigned *mw)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetEnforcedPowerLimit", dev);
	return rc ? rc : gpu_uint(dev, "power_limit_mw", 700000, mw);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t dev, unsigned *mw)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetPowerManagementDefaultLimit", dev);
	return rc ? rc : gpu_uint(dev, "power_default_limit_mw", 700000, mw);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t dev, unsigned long long *mj)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetTotalEnergyConsumption", dev);
	if (rc)
		return rc;
	bool unsup = false;
	long long start = fake_gpu_num(dev->gpu, "energy_mj", 1000000, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	/* by default one second at the configured power per call: monotonic, like the real counter */
	char pbuf[64];
	long long power = 75000;
	const char *pv = fake_gpu_raw(dev->gpu, "power_mw");
	if (pv)
		fake_parse_num(fake_list_item(pv, 0, pbuf, sizeof(pbuf)), &power);
	long long step = fake_gpu_num(dev->gpu, "energy_step_mj", power, NULL);
	pthread_mutex_lock(&lock);
	unsigned long calls = energy_calls[dev->gpu]++;
	pthread_mutex_unlock(&lock);
	*mj = (unsigned long long)(start + step * (long long)calls);
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetClockInfo", dev);
	if (rc)
		return rc;
	switch (type) {
	case NVML_CLOCK_GRAPHICS: return gpu_uint(dev, "graphics_clock", fake_gpu_num(dev->gpu, "sm_clock", 1980, NULL), mhz);
	case NVML_CLOCK_SM: return gpu_uint(dev, "sm_clock", 1980, mhz);
	case NVML_CLOCK_MEM: return gpu_uint(dev, "mem_clock", 3201, mhz);
	default: return NVML_ERROR_NOT_SUPPORTED;
	}
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t dev, int type, unsigned *mhz)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetMaxClockInfo", dev);
	if (rc)
		return rc;
	switch (type) {
	case NVML_CLOCK_GRAPHICS:
	case NVML_CLOCK_SM: return gpu_uint(dev, "max_sm_clock", 1980, mhz);
	case NVML_CLOCK_MEM: return gpu_uint(dev, "max_mem_clock", 3201, mhz);
	default: return NVML_ERROR_NOT_SUPPORTED;
	}
}

static nvmlReturn_t reasons(const char *fn, nvmlDevice_t dev, unsigned long long *v)
{
	nvmlReturn_t rc = enter(fn, dev);
	if (rc)
		return rc;
	bool unsup = false;
	long long n = fake_gpu_num(dev->gpu, "clock_reasons", 0x1, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	*v = (unsigned long long)n;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t dev, unsigned long long *v)
{
	return reasons("nvmlDeviceGetCurrentClocksEventReasons", dev, v);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t dev, unsigned long long *v)
{
	return reasons("nvmlDeviceGetCurrentClocksThrottleReasons", dev, v);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t dev, unsigned *v)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetFanSpeed", dev);
	/* datacenter boards have no fan: unsupported unless configured */
	return rc ? rc : gpu_uint(dev, "fan", -3, v);
}

static nvmlReturn_t codec_util(const char *call, const char *field, nvmlDevice_t dev, unsigned *util, unsigned *period_us)
{
	nvmlReturn_t rc = enter(call, dev);
	if (rc)
		return rc;
	if (!period_us)
		return NVML_ERROR_INVALID_ARGUMENT;
	*period_us = 167000; /* what an H200 answers */
	return gpu_uint(dev, field, 0, util);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t dev, unsigned *util, unsigned *period_us)
{
	return codec_util("nvmlDeviceGetEncoderUtilization", "encoder_util", dev, util, period_us);
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t dev, unsigned *util, unsigned *period_us)
{
	return codec_util("nvmlDeviceGetDecoderUtilization", "decoder_util", dev, util, period_us);
}

/* ---- fabric ---- */

FULL_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfo(nvmlDevice_t dev, nvmlGpuFabricInfo_t *fi)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetGpuFabricInfo", dev);
	if (rc)
		return rc;
	char buf[64];
	const char *v = fake_gpu_pick(dev->gpu, "fabric_state", buf, sizeof(buf));
	if (!v || strcmp(v, "unsupported") == 0)
		return NVML_ERROR_NOT_SUPPORTED; /* not an NVSwitch system */
	memset(fi, 0, sizeof(*fi));
	if (strcmp(v, "not_supported") == 0)
		fi->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
	else if (strcmp(v, "not_started") == 0)
		fi->state = NVML_GPU_FABRIC_STATE_NOT_STARTED;
	else if (strcmp(v, "in_progress") == 0)
		fi->state = NVML_GPU_FABRIC_STATE_IN_PROGRESS;
	else if (strcmp(v, "completed") == 0)
		fi->state = NVML_GPU_FABRIC_STATE_COMPLETED;
	else
		fi->state = (unsigned char)atoi(v);
	fi->status = (nvmlReturn_t)fake_gpu_num(dev->gpu, "fabric_status", 0, NULL);
	fi->cliqueId = (unsigned)fake_gpu_num(dev->gpu, "fabric_clique", 1, NULL);
	return NVML_SUCCESS;
}

/* the versioned call: the same values in the v2 struct; fabric_info_v = 0 hides it (older driver) */
FULL_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t dev, nvmlGpuFabricInfo_v2_t *fi)
{
	if (!fi)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fi->version != NVML_GPU_FABRIC_INFO_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	if (!fake_num("fabric_info_v", 1, NULL))
		return NVML_ERROR_FUNCTION_NOT_FOUND;
	nvmlGpuFabricInfo_t plain;
	nvmlReturn_t rc = nvmlDeviceGetGpuFabricInfo(dev, &plain);
	if (rc)
		return rc;
	memcpy(fi->clusterUuid, plain.clusterUuid, sizeof(fi->clusterUuid));
	fi->status = plain.status;
	fi->cliqueId = plain.cliqueId;
	fi->state = plain.state;
	fi->healthMask = 0;
	return NVML_SUCCESS;
}

/* ---- events: gpu.N.xid = 79,48 delivers 79, then 48, then times out ---- */

FULL_EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error("nvmlEventSetCreate", -1);
	if (rc)
		return rc;
	*set = calloc(1, sizeof(**set));
	return *set ? NVML_SUCCESS : NVML_ERROR_MEMORY;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t dev, unsigned long long types, nvmlEventSet_t set)
{
	nvmlReturn_t rc = enter("nvmlDeviceRegisterEvents", dev);
	if (rc)
		return rc;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!(types & NVML_EVENT_TYPE_XID_CRITICAL_ERROR))
		return NVML_ERROR_NOT_SUPPORTED;
	set->registered[dev->gpu] = true;
	return NVML_SUCCESS;
}

static nvmlReturn_t event_wait(const char *fn, nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	if (!set || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int g = 0; g < device_count(); g++) {
		if (!set->registered[g])
			continue;
		const char *v = fake_gpu_raw(g, "xid");
		if (!v || !*v)
			continue;
		pthread_mutex_lock(&lock);
		int k = xid_next[g];
		bool have = k < fake_list_len(v);
		if (have)
			xid_next[g]++;
		pthread_mutex_unlock(&lock);
		if (!have)
			continue;
		char item[64];
		long long code = 0;
		fake_parse_num(fake_list_item(v, k, item, sizeof(item)), &code);
		memset(data, 0, sizeof(*data));
		data->device = &gpus[g];
		data->eventType = NVML_EVENT_TYPE_XID_CRITICAL_ERROR;
		data->eventData = (unsigned long long)code;
		data->gpuInstanceId = ~0u;
		data->computeInstanceId = ~0u;
		return NVML_SUCCESS;
	}
	/* nothing to deliver: wait like the real call, but never long in a test */
	long long cap = fake_num("xid_wait_max_ms", 100, NULL);
	fake_sleep_ms((long long)timeout_ms < cap ? (long long)timeout_ms : cap);
	return NVML_ERROR_TIMEOUT;
}

FULL_EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	return event_wait("nvmlEventSetWait_v2", set, data, timeout_ms);
}

FULL_EXPORT nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned timeout_ms)
{
	return event_wait("nvmlEventSetWait", set, data, timeout_ms);
}

FULL_EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	free(set);
	return NVML_SUCCESS;
}

/* ---- NVLink (keys gpu.N.nvlink.*: README.md) ---- */

#include "nvidia/nvlink.h"

/* A link's value: gpu.N.nvlink.L.F, then gpu.N.nvlink.F (every link); gpu.* as everywhere. */
static const char *link_pick(int gpu, unsigned link, const char *field, char *buf, size_t size)
{
	char key[96];
	snprintf(key, sizeof(key), "nvlink.%u.%s", link, field);
	const char *v = fake_gpu_pick(gpu, key, buf, size);
	if (v)
		return v;
	snprintf(key, sizeof(key), "nvlink.%s", field);
	return fake_gpu_pick(gpu, key, buf, size);
}

static long long link_num(int gpu, unsigned link, const char *field, long long dflt, bool *unsup)
{
	char buf[128];
	const char *v = link_pick(gpu, link, field, buf, sizeof(buf));
	long long n = dflt;
	if (!v)
		return dflt;
	if (strcmp(v, "unsupported") == 0) {
		if (unsup)
			*unsup = true;
		return dflt;
	}
	fake_parse_num(v, &n);
	return n;
}

/* Entry of every NVLink call: the common checks, then the link must exist (nvlink.count). */
static nvmlReturn_t link_enter(const char *fn, nvmlDevice_t dev, unsigned link)
{
	nvmlReturn_t rc = enter(fn, dev);
	if (rc)
		return rc;
	long long n = fake_gpu_num(dev->gpu, "nvlink.count", 0, NULL);
	if (n <= 0)
		return NVML_ERROR_NOT_SUPPORTED; /* no NVLink on this GPU */
	if (link >= (unsigned)n || link >= NVML_NVLINK_MAX_LINKS)
		return NVML_ERROR_INVALID_ARGUMENT;
	char key[64];
	snprintf(key, sizeof(key), "nvlink.%u.error.%s", link, fn);
	const char *e = fake_gpu_raw(dev->gpu, key);
	if (e) {
		long long code = 0;
		fake_parse_num(e, &code);
		return (nvmlReturn_t)code;
	}
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t dev, unsigned link, int *active)
{
	nvmlReturn_t rc = link_enter("nvmlDeviceGetNvLinkState", dev, link);
	if (rc)
		return rc;
	char buf[64];
	const char *v = link_pick(dev->gpu, link, "state", buf, sizeof(buf));
	*active = !v || strcmp(v, "active") == 0 || strcmp(v, "1") == 0 ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t dev, unsigned link, unsigned *version)
{
	nvmlReturn_t rc = link_enter("nvmlDeviceGetNvLinkVersion", dev, link);
	if (rc)
		return rc;
	bool unsup = false;
	long long v = link_num(dev->gpu, link, "version", 4, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	*version = (unsigned)v;
	return NVML_SUCCESS;
}

static int remote_type(int gpu, unsigned link)
{
	char buf[64];
	const char *v = link_pick(gpu, link, "remote_type", buf, sizeof(buf));
	if (!v || strcmp(v, "nvswitch") == 0)
		return NVML_NVLINK_DEVICE_TYPE_SWITCH;
	if (strcmp(v, "gpu") == 0)
		return NVML_NVLINK_DEVICE_TYPE_GPU;
	if (strcmp(v, "ibmnpu") == 0)
		return NVML_NVLINK_DEVICE_TYPE_IBMNPU;
	return NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t dev, unsigned link, int *type)
{
	nvmlReturn_t rc = link_enter("nvmlDeviceGetNvLinkRemoteDeviceType", dev, link);
	if (rc)
		return rc;
	*type = remote_type(dev->gpu, link);
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t dev, unsigned link, nvmlPciInfo_t *pci)
{
	nvmlReturn_t rc = link_enter("nvmlDeviceGetNvLinkRemotePciInfo_v2", dev, link);
	if (rc)
		return rc;
	memset(pci, 0, sizeof(*pci));
	char buf[64];
	const char *v = link_pick(dev->gpu, link, "remote_bus_id", buf, sizeof(buf));
	char dflt[32];
	if (!v) {
		if (remote_type(dev->gpu, link) == NVML_NVLINK_DEVICE_TYPE_GPU) {
			/* the next GPU: a pair of bridged boards */
			int n = device_count();
			gpu_bus_id(n > 1 ? (dev->gpu + 1) % n : dev->gpu, dflt, sizeof(dflt));
		} else {
			/* four NVSwitches, links spread over them as on an HGX H100/H200 board */
			snprintf(dflt, sizeof(dflt), "00000000:%02X:00.0", 0x05 + (link % 4));
		}
		v = dflt;
	}
	snprintf(pci->busId, sizeof(pci->busId), "%s", v);
	return NVML_SUCCESS;
}

static const char *counter_field(int counter)
{
	switch (counter) {
	case NVML_NVLINK_ERROR_DL_REPLAY: return "replay";
	case NVML_NVLINK_ERROR_DL_RECOVERY: return "recovery";
	case NVML_NVLINK_ERROR_DL_CRC_FLIT: return "crc_flit";
	case NVML_NVLINK_ERROR_DL_CRC_DATA: return "crc_data";
	case NVML_NVLINK_ERROR_DL_ECC_DATA: return "ecc_data";
	default: return NULL;
	}
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t dev, unsigned link, int counter,
							 unsigned long long *value)
{
	nvmlReturn_t rc = link_enter("nvmlDeviceGetNvLinkErrorCounter", dev, link);
	if (rc)
		return rc;
	const char *field = counter_field(counter);
	if (!field)
		return NVML_ERROR_INVALID_ARGUMENT;
	bool unsup = false;
	long long v = link_num(dev->gpu, link, field, 0, &unsup);
	if (unsup)
		return NVML_ERROR_NOT_SUPPORTED;
	*value = (unsigned long long)v;
	return NVML_SUCCESS;
}

/* The fields gpuvet asks for: per link speed and TX/RX, the memory temperature; anything else is
 * NOT_SUPPORTED. */
/* A device field that answers what its own call answers (the ECC mode, the ECC totals, retired
 * pages, remapped rows, PCIe replays): the value and the code of that call, its faults included,
 * as the H200 (driver 580) answered the batch and the calls alike (scripts/device/nvml_batch.c).
 * False for another field id. */
/* One batch's answers of the calls that carry several of its fields (made once per batch: a value
 * the config cycles per read advances once, as one reading of the GPU). */
struct batch_memo {
	bool mode_read, rows_read;
	nvmlReturn_t mode_rc, rows_rc;
	int cur, pending;
	unsigned rows[4];
};

static bool health_field(nvmlDevice_t dev, nvmlFieldValue_t *fv, struct batch_memo *m)
{
	unsigned u[4] = {0};
	int a = 0;
	unsigned long long ull = 0;
	nvmlReturn_t rc;
	fv->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
	switch (fv->fieldId) {
	case NVML_FI_DEV_ECC_CURRENT:
	case NVML_FI_DEV_ECC_PENDING:
		if (!m->mode_read) {
			m->mode_rc = nvmlDeviceGetEccMode(dev, &m->cur, &m->pending);
			m->mode_read = true;
		}
		rc = m->mode_rc;
		fv->value.uiVal = (unsigned)(fv->fieldId == NVML_FI_DEV_ECC_CURRENT ? m->cur : m->pending);
		break;
	case NVML_FI_DEV_ECC_SBE_VOL_TOTAL:
	case NVML_FI_DEV_ECC_DBE_VOL_TOTAL:
	case NVML_FI_DEV_ECC_SBE_AGG_TOTAL:
	case NVML_FI_DEV_ECC_DBE_AGG_TOTAL: {
		unsigned id = fv->fieldId;
		int type = id == NVML_FI_DEV_ECC_DBE_VOL_TOTAL || id == NVML_FI_DEV_ECC_DBE_AGG_TOTAL
				   ? NVML_MEMORY_ERROR_TYPE_UNCORRECTED
				   : NVML_MEMORY_ERROR_TYPE_CORRECTED;
		int counter = id == NVML_FI_DEV_ECC_SBE_AGG_TOTAL || id == NVML_FI_DEV_ECC_DBE_AGG_TOTAL ? NVML_AGGREGATE_ECC
													     : NVML_VOLATILE_ECC;
		rc = nvmlDeviceGetTotalEccErrors(dev, type, counter, &ull);
		fv->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		fv->value.ullVal = ull;
		break;
	}
	case NVML_FI_DEV_RETIRED_SBE:
	case NVML_FI_DEV_RETIRED_DBE:
		rc = nvmlDeviceGetRetiredPages(dev,
					       fv->fieldId == NVML_FI_DEV_RETIRED_DBE
						       ? NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
						       : NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS,
					       &u[0], NULL);
		if (rc == NVML_ERROR_INSUFFICIENT_SIZE) /* the count alone */
			rc = NVML_SUCCESS;
		fv->value.uiVal = u[0];
		break;
	case NVML_FI_DEV_RETIRED_PENDING:
		rc = nvmlDeviceGetRetiredPagesPendingStatus(dev, &a);
		fv->value.uiVal = a == NVML_FEATURE_ENABLED;
		break;
	case NVML_FI_DEV_REMAPPED_COR:
	case NVML_FI_DEV_REMAPPED_UNC:
	case NVML_FI_DEV_REMAPPED_PENDING:
	case NVML_FI_DEV_REMAPPED_FAILURE:
		if (!m->rows_read) {
			m->rows_rc = nvmlDeviceGetRemappedRows(dev, &m->rows[0], &m->rows[1], &m->rows[2], &m->rows[3]);
			m->rows_read = true;
		}
		rc = m->rows_rc;
		fv->value.uiVal = m->rows[fv->fieldId - NVML_FI_DEV_REMAPPED_COR];
		break;
	case NVML_FI_DEV_PCIE_REPLAY_COUNTER:
		rc = nvmlDeviceGetPcieReplayCounter(dev, &u[0]);
		fv->value.uiVal = u[0];
		break;
	default: return false;
	}
	fv->nvmlReturn = rc;
	if (rc != NVML_SUCCESS)
		fv->value.ullVal = 0;
	return true;
}

FULL_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t dev, int count, nvmlFieldValue_t *values)
{
	nvmlReturn_t rc = enter("nvmlDeviceGetFieldValues", dev);
	if (rc)
		return rc;
	if (count < 0 || (count > 0 && !values))
		return NVML_ERROR_INVALID_ARGUMENT;
	struct batch_memo memo = {0};
	for (int i = 0; i < count; i++) {
		nvmlFieldValue_t *fv = &values[i];
		const char *field = fv->fieldId == NVML_FI_DEV_NVLINK_GET_SPEED		? "speed"
				    : fv->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX ? "tx_kib"
				    : fv->fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX ? "rx_kib"
											  : NULL;
		fv->timestamp = 0;
		fv->latencyUsec = 0;
		fv->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
		fv->value.ullVal = 0;
		if (health_field(dev, fv, &memo))
			continue;
		if (fv->fieldId == NVML_FI_DEV_MEMORY_TEMP) { /* a device field: scopeId is not a link */
			unsigned t = 0;
			fv->nvmlReturn = gpu_uint(dev, "memory_temp", 43, &t);
			fv->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
			fv->value.uiVal = t;
			continue;
		}
		if (!field) {
			fv->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		}
		fv->nvmlReturn = link_enter("nvmlDeviceGetFieldValues", dev, fv->scopeId);
		if (fv->nvmlReturn)
			continue;
		bool unsup = false;
		long long dflt = strcmp(field, "speed") == 0 ? 26562 : 0;
		long long v = link_num(dev->gpu, fv->scopeId, field, dflt, &unsup);
		if (unsup) {
			fv->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		}
		if (strcmp(field, "speed") == 0) {
			fv->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
			fv->value.uiVal = (unsigned)v;
		} else {
			fv->value.ullVal = (unsigned long long)v;
		}
	}
	return NVML_SUCCESS;
}

/* ---- GPM (src/nvidia/gpm_fields.h names the metrics and their config keys) ----
 * gpu.N.gpm = 1 makes the GPU support GPM (default 0: not supported, like pre-Hopper GPUs).
 * gpu.N.gpm.KEY is the value nvmlGpmMetricsGet answers in NVML's unit (percent, MiB/s), taken
 * when the later sample of the pair was taken (a comma list cycles per sample); unset is 0,
 * `unsupported` answers NVML_ERROR_NOT_SUPPORTED for that metric (a GPU without NVLink). */

struct nvmlGpmSample_st {
	int gpu; /* -1 until nvmlGpmSampleGet */
	unsigned long long seq;
	double value[GV_GPM_N];
	int rc[GV_GPM_N];
};
static unsigned long long gpm_seq;

FULL_EXPORT nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t dev, nvmlGpmSupport_t *s)
{
	nvmlReturn_t rc = enter("nvmlGpmQueryDeviceSupport", dev);
	if (rc)
		return rc;
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (s->version != NVML_GPM_SUPPORT_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	s->isSupportedDevice = fake_gpu_num(dev->gpu, "gpm", 0, NULL) != 0;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *out)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error("nvmlGpmSampleAlloc", -1);
	if (rc)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return NVML_ERROR_MEMORY;
	(*out)->gpu = -1;
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	free(s);
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t dev, nvmlGpmSample_t s)
{
	nvmlReturn_t rc = enter("nvmlGpmSampleGet", dev);
	if (rc)
		return rc;
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (fake_gpu_num(dev->gpu, "gpm", 0, NULL) == 0)
		return NVML_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	s->seq = ++gpm_seq;
	pthread_mutex_unlock(&lock);
	s->gpu = dev->gpu;
	for (int k = 0; k < GV_GPM_N; k++) {
		char field[64], buf[64];
		snprintf(field, sizeof(field), "gpm.%s", gv_gpm_fields[k].key);
		const char *v = fake_gpu_pick(dev->gpu, field, buf, sizeof(buf));
		s->rc[k] = NVML_SUCCESS;
		s->value[k] = 0;
		if (v && strcmp(v, "unsupported") == 0)
			s->rc[k] = NVML_ERROR_NOT_SUPPORTED;
		else if (v)
			s->value[k] = strtod(v, NULL);
	}
	return NVML_SUCCESS;
}

FULL_EXPORT nvmlReturn_t nvmlGpmMetricsGet(gv_nvmlGpmMetricsGet_t *m)
{
	if (!initialized())
		return NVML_ERROR_UNINITIALIZED;
	int rc = fake_error("nvmlGpmMetricsGet", -1);
	if (rc)
		return rc;
	if (!m || !m->sample1 || !m->sample2)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (m->version != NVML_GPM_METRICS_GET_VERSION)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	/* the real driver: metrics[] holds at most NVML_GPM_METRIC_MAX; ours is sized GV_GPM_N */
	if (m->numMetrics > GV_GPM_N)
		return NVML_ERROR_INVALID_ARGUMENT;
	const struct nvmlGpmSample_st *a = m->sample1, *b = m->sample2;
	if (a->gpu < 0 || b->gpu < 0 || a->gpu != b->gpu || a->seq >= b->seq)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < m->numMetrics; i++) {
		nvmlGpmMetric_t *x = &m->metrics[i];
		x->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
		x->value = 0;
		for (int k = 0; k < GV_GPM_N; k++)
			if (gv_gpm_fields[k].nvml_id == x->metricId) {
				x->nvmlReturn = b->rc[k];
				x->value = b->rc[k] == NVML_SUCCESS ? b->value[k] : 0;
			}
	}
	return NVML_SUCCESS;
}
