/*
 * NVML: the driver's user-space library, its versions, and per GPU identity, modes, PCIe link,
 * ECC and memory health, temperatures, clocks and their event reasons, processes, fabric state.
 * Through src/nvidia/nvml.h (dlopen; every optional symbol may be missing).
 *
 * Facts: nvml.*  (core/factkeys.def, docs/facts.md; how: docs/facts/nvidia.md)
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/child.h"
#include "core/factkeys.h"
#include "core/sysroot.h"
#include "core/trace.h"
#include "sampler/fields.h"
#include "nvidia/dlload.h"
#include "nvidia/libfile.h"
#include "nvidia/nvml.h"
#include "probes/deadline.h"
#include "probes/nvml_limits.h"
#include "probes/probes.h"

/* The fact for one value: ok, unsupported, or error with NVML's code and text. */
static void put_state_of(facts *f, gv_vstate st, nvmlReturn_t rc, const char *source, const char *key)
{
	char why[256];
	if (st == GV_V_UNSUPPORTED) {
		snprintf(why, sizeof(why), "%s",
			 rc == NVML_ERROR_FUNCTION_NOT_FOUND ? "this driver's NVML lacks the call" : "not supported on this GPU");
		facts_put_state(f, FACT_UNSUPPORTED, source, why, "%s", key);
	} else {
		snprintf(why, sizeof(why), "%s (%d): %s", gv_nvml_return_name(rc), rc, gv_nvml_error_string(rc));
		facts_put_state(f, FACT_ERROR, source, why, "%s", key);
	}
}

/* The key of a value (a registry constant and its arguments), and whether it holds one: an unset
 * value puts nothing, an unsupported or failed one puts its state; true only when the caller
 * should put the value under `key`. */
static bool value_key(facts *f, gv_vstate st, nvmlReturn_t rc, const char *source, char *key, size_t size,
		      const char *keyfmt, va_list ap) GV_PRINTF(7, 0);
static bool value_key(facts *f, gv_vstate st, nvmlReturn_t rc, const char *source, char *key, size_t size,
		      const char *keyfmt, va_list ap)
{
	vsnprintf(key, size, keyfmt, ap);
	if (st == GV_V_UNSET)
		return false;
	if (st != GV_V_OK) {
		put_state_of(f, st, rc, source, key);
		return false;
	}
	return true;
}

/* put_u64 and the others: the value, or its state, under the key keyfmt formats */
#define VALUE_KEY(ok, v, source, keyfmt)                                                                               \
	char key[128];                                                                                                 \
	va_list ap;                                                                                                    \
	va_start(ap, keyfmt);                                                                                          \
	bool ok = value_key(f, (v)->st, (v)->rc, source, key, sizeof(key), keyfmt, ap);                                \
	va_end(ap)

static bool put_u64(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...) GV_PRINTF(4, 5);
static bool put_u64(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...)
{
	VALUE_KEY(ok, v, source, keyfmt);
	if (ok)
		facts_put_int(f, source, (long long)v->v, "%s", key);
	return ok;
}

static void put_bool(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...) GV_PRINTF(4, 5);
static void put_bool(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...)
{
	VALUE_KEY(ok, v, source, keyfmt);
	if (ok)
		facts_put_bool(f, source, v->v != 0, "%s", key);
}

static void put_str(facts *f, const gv_nv_str *v, const char *source, const char *keyfmt, ...) GV_PRINTF(4, 5);
static void put_str(facts *f, const gv_nv_str *v, const char *source, const char *keyfmt, ...)
{
	VALUE_KEY(ok, v, source, keyfmt);
	if (ok)
		facts_put_str(f, source, v->v, "%s", key);
}

/* milliwatts as watts */
static void put_watts(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...) GV_PRINTF(4, 5);
static void put_watts(facts *f, const gv_nv_u64 *v, const char *source, const char *keyfmt, ...)
{
	VALUE_KEY(ok, v, source, keyfmt);
	if (ok)
		facts_put_real(f, source, v->v / 1000.0, "%s", key);
}

static void probe_library(facts *f, const gv_nvml_status *st)
{
	if (st->loaded) {
		const char *shown = sysroot_strip(st->path);
		facts_put_str(f, st->from_env ? "GPUVET_NVML_LIB" : "dlopen", shown, FK_NVML_LIBRARY);
		char ver[64], path[PATH_MAX];
		if (gv_driver_lib_file_version(st->path, "libnvidia-ml.so.", ver, sizeof(ver)))
			facts_put_str(f, sysroot_strip(st->path), ver, FK_NVML_LIBRARY_FILE_VERSION);
		else if (gv_driver_lib_find("libnvidia-ml.so.", path, sizeof(path), ver, sizeof(ver)))
			/* loaded under another name (a copy, a test double): the installed driver's file */
			facts_put_str(f, path, ver, FK_NVML_LIBRARY_FILE_VERSION);
		else
			facts_put_state(f, FACT_ABSENT, st->path, "no version in the file name", FK_NVML_LIBRARY_FILE_VERSION);
		return;
	}
	/* not there at all (absent) is not the same as there but unusable (error) */
	bool missing = strstr(st->error, "No such file") || strstr(st->error, "not found in the root tree") ||
		       strstr(st->error, "cannot open shared object file");
	facts_put_state(f, missing ? FACT_ABSENT : FACT_ERROR, st->from_env ? "GPUVET_NVML_LIB" : "dlopen", st->error,
			FK_NVML_LIBRARY);
	/* the file may exist yet fail to load: its name still tells the user-space driver version */
	char path[PATH_MAX], ver[64];
	if (gv_driver_lib_find("libnvidia-ml.so.", path, sizeof(path), ver, sizeof(ver)))
		facts_put_str(f, path, ver, FK_NVML_LIBRARY_FILE_VERSION);
}

static void probe_processes(facts *f, const gv_nvml_device *d, int i)
{
	if (d->procs_st != GV_V_OK) {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_PROCESSES_COUNT(d), i);
		put_state_of(f, d->procs_st, d->procs_rc, "nvmlDeviceGetComputeRunningProcesses", key);
		return;
	}
	const char *src = "nvmlDeviceGetComputeRunningProcesses";
	facts_put_int(f, src, d->nprocs, FK_NVML_GPU_PROCESSES_COUNT(d), i);
	if (d->procs_truncated)
		facts_put_bool(f, src, true, FK_NVML_GPU_PROCESSES_TRUNCATED(d), i);
	for (unsigned k = 0; k < d->nprocs; k++) {
		const gv_nvml_process *p = &d->procs[k];
		facts_put_int(f, src, p->pid, FK_NVML_GPU_PROCESSES_PID(d, u), i, k);
		char name[256];
		str_copy(name, sizeof(name), p->name);
		if (!name[0]) {
			/* NVML cannot always name it (other namespaces): /proc knows, when it is ours */
			char path[64];
			snprintf(path, sizeof(path), "/proc/%u/comm", p->pid);
			char *comm = sysroot_read_line(path);
			if (comm) {
				str_copy(name, sizeof(name), comm);
				str_sanitize(name);
				free(comm);
			}
		}
		if (name[0])
			facts_put_str(f, "nvmlSystemGetProcessName", name, FK_NVML_GPU_PROCESSES_NAME(d, u), i, k);
		else
			facts_put_state(f, FACT_UNSUPPORTED, "nvmlSystemGetProcessName", "process name unknown",
					FK_NVML_GPU_PROCESSES_NAME(d, u), i, k);
		if (p->used_bytes == NVML_VALUE_NOT_AVAILABLE_ULL)
			facts_put_state(f, FACT_UNSUPPORTED, src, "not available (containers, or no permission)",
					FK_NVML_GPU_PROCESSES_USED_BYTES(d, u), i, k);
		else
			facts_put_int(f, src, (long long)p->used_bytes, FK_NVML_GPU_PROCESSES_USED_BYTES(d, u), i, k);
		facts_put_str(f, src, p->graphics ? "graphics" : "compute", FK_NVML_GPU_PROCESSES_TYPE(d, u), i, k);
	}
}

struct device_job {
	facts *f; /* the job's own store, merged in GPU order so the output stays stable */
	int index;
	nvml_limits *limits; /* the per-boot cache of the fixed limits (NULL: none) */
	bool fast;           /* check --fast: the limits from the cache, no energy, no per-process SM share */
	pthread_t tid;
	bool started;
};

/* --fast reads the GPU's load (utilization, power draw) and its enforced power limit only where a
 * verdict reads them: the power cap's (health/conditions.h, clocks_judge: a capped GPU is fine
 * busy, not idle or below its default limit) and the PCIe generation's (link_judge: an idle GPU
 * lowers its link, so only a loaded one's counts). A value NVML did not answer counts as a reason
 * to read them. On an H200 (driver 580) the two calls took 1.6 and 2.0 ms; left out, 2.2 ms less
 * in all, since the clock calls then pay part of what they shared (scripts/device/nvml_cost.c). */
static bool fast_needs_load(const gv_nvml_device *d)
{
	if (!GV_OK(d->clock_event_reasons) || (d->clock_event_reasons.v & NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP))
		return true;
	return GV_OK(d->pcie_gen) && (!GV_OK(d->pcie_gen_max) || d->pcie_gen.v < d->pcie_gen_max.v);
}

/* The current clocks are evidence of one verdict only, gpu.throttled, which the clock event
 * reasons decide (clocks_judge: a slowdown, or the power cap): --fast asks them where the reasons
 * show one of those or could not be read. 1.1 ms on an H200 (driver 580). */
static bool fast_needs_clocks(const gv_nvml_device *d)
{
	return !GV_OK(d->clock_event_reasons) ||
	       (d->clock_event_reasons.v & (GV_NVML_REASONS_BAD | NVML_CLOCKS_EVENT_REASON_SW_POWER_CAP));
}

/* A process on a GPU holds memory there (a CUDA context alone takes hundreds of MiB), so where
 * nvmlDeviceGetMemoryInfo_v2 says none is in use (its used leaves out the driver's reserve) the
 * list is empty and --fast does not ask it: 0.4 ms on an H100 (driver 580). Under MIG the
 * processes are the instances'; v1's used counts the reserve and is never 0: both ask. */
static bool fast_needs_processes(const gv_nvml_device *d)
{
	bool none_in_use = GV_OK(d->memory_used) && d->memory_used.v == 0 && GV_OK(d->memory_reserved) &&
			   GV_OK(d->mig_mode) && !d->mig_mode.v;
	return !none_in_use;
}

/* Why --fast has no value for a field (NULL: it reads it, or the full check does not either). */
static const char *fast_not_read(size_t nvml_off)
{
	switch (gv_nvml_optional_group(nvml_off)) {
	case GV_NVML_LOAD:
	case GV_NVML_POWER_LIMIT:
		return "not read by --fast: no verdict needs it here (the clocks are not power-capped and the PCIe link "
		       "runs at its full generation); gpuvet check reads it";
	case GV_NVML_CLOCKS:
		return "not read by --fast: no verdict needs it here (the clock event reasons show no slowdown and no "
		       "power cap); gpuvet check reads it";
	case GV_NVML_ENERGY: return "not read by --fast (the energy counter takes 3 ms on an H200); gpuvet check reads it";
	case GV_NVML_FAN: return "not read by --fast: no verdict reads it; gpuvet check, watch and serve report it";
	default: return NULL;
	}
}

/* The readings sampler/fields.h gives a fact key, each as its kind says; under --fast, those it
 * left out as absent, with the reason. */
static void put_fields(facts *f, const gv_nvml_device *d, int i, bool fast)
{
	for (size_t k = 0; k < n_snap_fields; k++) {
		const snap_field *sf = &snap_fields[k];
		if (!sf->fact || sf->nvml_off == SNAP_NO_NVML)
			continue;
		const gv_nv_u64 *v = (const gv_nv_u64 *)(const void *)((const char *)d + sf->nvml_off);
		const char *why = fast && v->st == GV_V_UNSET ? fast_not_read(sf->nvml_off) : NULL;
		if (why) {
			char key[128];
			snprintf(key, sizeof(key), "nvml.gpu.%d.%s", i, sf->fact);
			facts_put_state(f, FACT_ABSENT, "--fast", why, "%s", key);
			continue;
		}
		/* the registry has each one: nvml.gpu.N. and the table's name */
		if (sf->fact_kind == 'b')
			put_bool(f, v, sf->call, "nvml.gpu.%d.%s", i, sf->fact);
		else if (sf->fact_kind == 'w')
			put_watts(f, v, sf->call, "nvml.gpu.%d.%s", i, sf->fact);
		else
			put_u64(f, v, sf->call, "nvml.gpu.%d.%s", i, sf->fact);
	}
}

static void probe_device(facts *f, int i, nvml_limits *limits, bool fast);

static void *device_job_run(void *arg)
{
	struct device_job *j = arg;
	probe_device(j->f, j->index, j->limits, j->fast);
	return NULL;
}

/* One thread per GPU: NVML answers each device independently, and on an 8-GPU machine the
 * snapshots one after another would make up most of `check --fast`'s time. */
static void probe_devices_parallel(facts *f, unsigned n, nvml_limits *limits, bool fast)
{
	struct device_job *jobs = xcalloc(n ? n : 1, sizeof(*jobs));
	for (unsigned i = 0; i < n; i++) {
		jobs[i].f = facts_new();
		jobs[i].index = (int)i;
		jobs[i].limits = limits;
		jobs[i].fast = fast;
		jobs[i].started = pthread_create(&jobs[i].tid, NULL, device_job_run, &jobs[i]) == 0;
		if (!jobs[i].started)
			device_job_run(&jobs[i]);
	}
	for (unsigned i = 0; i < n; i++) {
		if (jobs[i].started)
			pthread_join(jobs[i].tid, NULL);
		facts_merge(f, jobs[i].f);
		facts_free(jobs[i].f);
	}
	free(jobs);
}

static void probe_device(facts *f, int i, nvml_limits *limits, bool fast)
{
	gv_nvml_device *d = xcalloc(1, sizeof(*d));
	nvmlReturn_t rc = gv_nvml_device_snapshot((unsigned)i, fast ? GV_NVML_FAST : GV_NVML_ALL, d);
	gv_trace("nvml gpu %d snapshot", i);
	if (rc != NVML_SUCCESS) {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_NAME(d), i);
		put_state_of(f, GV_V_ERROR, rc, "nvmlDeviceGetHandleByIndex", key);
		free(d);
		return;
	}
	/* the fixed limits: --fast takes this boot's cached ones (nvml_limits.h); asked, they refresh it */
	const char *uuid = GV_OK(d->uuid) ? d->uuid.v : NULL;
	bool cached = fast && nvml_limits_get(limits, uuid, d);
	if (fast && !cached)
		gv_nvml_device_snapshot((unsigned)i, GV_NVML_LIMITS, d);
	if (!cached)
		nvml_limits_put(limits, uuid, d);
	gv_trace("nvml gpu %d limits (%s)", i, cached ? "cache" : "asked");
	bool load = !fast || fast_needs_load(d), clocks = !fast || fast_needs_clocks(d);
	bool procs = !fast || fast_needs_processes(d);
	unsigned extra = (load ? GV_NVML_LOAD | GV_NVML_POWER_LIMIT : 0) | (clocks ? GV_NVML_CLOCKS : 0) |
			 (procs ? GV_NVML_PROC_LIST : 0);
	if (fast && extra)
		gv_nvml_device_snapshot((unsigned)i, extra, d);
	gv_trace("nvml gpu %d load (%s)", i, !fast ? "full" : load ? "asked" : "not needed");
	gv_trace("nvml gpu %d clocks (%s)", i, !fast ? "full" : clocks ? "asked" : "not needed");
	gv_trace("nvml gpu %d processes (%s)", i, !fast ? "full" : procs ? "asked" : "not needed");
	if (cached)
		facts_put_str(f, nvml_limits_path(limits), "cache", FK_NVML_GPU_LIMITS_FROM(d), i);
	else
		facts_put_str(f, "nvmlDeviceGet* (GV_NVML_LIMITS)", "nvml", FK_NVML_GPU_LIMITS_FROM(d), i);
	put_str(f, &d->name, "nvmlDeviceGetName", FK_NVML_GPU_NAME(d), i);
	put_str(f, &d->uuid, "nvmlDeviceGetUUID", FK_NVML_GPU_UUID(d), i);
	put_str(f, &d->pci_bus_id, "nvmlDeviceGetPciInfo", FK_NVML_GPU_PCI_BUS_ID(d), i);
	if (GV_OK(d->pci_device_id)) {
		/* NVML packs device << 16 | vendor; hardware.pci.N.device_id has the device part alone */
		char hex[16];
		snprintf(hex, sizeof(hex), "0x%04llx", (d->pci_device_id.v >> 16) & 0xffff);
		facts_put_str(f, "nvmlDeviceGetPciInfo", hex, FK_NVML_GPU_PCI_DEVICE_ID(d), i);
	}
	put_u64(f, &d->minor_number, "nvmlDeviceGetMinorNumber", FK_NVML_GPU_MINOR_NUMBER(d), i);
	if (GV_OK(d->cc_major)) {
		char cc[32];
		snprintf(cc, sizeof(cc), "%llu.%llu", d->cc_major.v, d->cc_minor.v);
		facts_put_str(f, "nvmlDeviceGetCudaComputeCapability", cc, FK_NVML_GPU_CC(d), i);
	} else {
		put_str(f, &(gv_nv_str){.st = d->cc_major.st, .rc = d->cc_major.rc}, "nvmlDeviceGetCudaComputeCapability",
			FK_NVML_GPU_CC(d), i);
	}
	/* the plain readings: one table with the sampler, serve and watch (sampler/fields.h) */
	put_fields(f, d, i, fast);
	/* whether watch and serve can read the GPM activity counters here, and why not */
	gv_gpm_support gs;
	nvmlReturn_t grc;
	gv_gpm_close(gv_gpm_open_mig((unsigned)i, GV_OK(d->mig_mode) ? (int)d->mig_mode.v : -1, &gs, &grc));
	gv_trace("nvml gpu %d gpm support", i);
	if (gs == GV_GPM_FAILED) {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_GPM(d), i);
		put_state_of(f, GV_V_ERROR, grc, "nvmlGpmQueryDeviceSupport", key);
	} else
		facts_put_str(f, "nvmlGpmQueryDeviceSupport", gv_gpm_support_name(gs), FK_NVML_GPU_GPM(d), i);
	put_u64(f, &d->memory_free, "nvmlDeviceGetMemoryInfo", FK_NVML_GPU_MEMORY_FREE_BYTES(d), i);
	put_bool(f, &d->persistence, "nvmlDeviceGetPersistenceMode", FK_NVML_GPU_PERSISTENCE(d), i);
	if (GV_OK(d->compute_mode))
		facts_put_str(f, "nvmlDeviceGetComputeMode", gv_nvml_compute_mode_name(d->compute_mode.v),
			      FK_NVML_GPU_COMPUTE_MODE(d), i);
	else
		put_u64(f, &d->compute_mode, "nvmlDeviceGetComputeMode", FK_NVML_GPU_COMPUTE_MODE(d), i);
	put_bool(f, &d->mig_mode, "nvmlDeviceGetMigMode", FK_NVML_GPU_MIG_MODE(d), i);
	put_bool(f, &d->mig_pending, "nvmlDeviceGetMigMode", FK_NVML_GPU_MIG_PENDING(d), i);
	if (GV_OK(d->mig_mode) && d->mig_mode.v) {
		facts_put_int(f, "nvmlDeviceGetMigDeviceHandleByIndex", d->mig_count, FK_NVML_GPU_MIG_COUNT(d), i);
		for (unsigned m = 0; m < d->mig_count; m++) {
			put_str(f, &d->mig_uuid[m], "nvmlDeviceGetUUID", FK_NVML_GPU_MIG_UUID(d, u), i, m);
		}
	}
	put_bool(f, &d->ecc_mode, "nvmlDeviceGetEccMode", FK_NVML_GPU_ECC_ENABLED(d), i);
	put_bool(f, &d->ecc_pending, "nvmlDeviceGetEccMode", FK_NVML_GPU_ECC_PENDING(d), i);
	const char *th = "nvmlDeviceGetTemperatureThreshold";
	put_u64(f, &d->temp_gpu_max_c, th, FK_NVML_GPU_TEMPERATURE_GPU_MAX_C(d), i);
	const char *cr = "nvmlDeviceGetCurrentClocksEventReasons";
	if (put_u64(f, &d->clock_event_reasons, cr, FK_NVML_GPU_CLOCK_EVENT_REASONS(d), i)) {
		char text[512];
		gv_nvml_clock_reasons_text(d->clock_event_reasons.v, text, sizeof(text));
		facts_put_str(f, cr, text, FK_NVML_GPU_CLOCK_EVENT_REASONS_TEXT(d), i);
	} else {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_CLOCK_EVENT_REASONS_TEXT(d), i);
		if (d->clock_event_reasons.st != GV_V_UNSET)
			put_state_of(f, d->clock_event_reasons.st, d->clock_event_reasons.rc, cr, key);
	}
	if (procs)
		probe_processes(f, d, i);
	else /* none can be there (fast_needs_processes): the count, and where it comes from */
		facts_put_int(f, "nvmlDeviceGetMemoryInfo: no memory in use on this GPU, so no process holds it", 0,
			      FK_NVML_GPU_PROCESSES_COUNT(d), i);
	gv_trace("nvml gpu %d processes", i);
	const char *fab = "nvmlDeviceGetGpuFabricInfo";
	if (GV_OK(d->fabric_state)) {
		facts_put_str(f, fab, gv_nvml_fabric_state_name(d->fabric_state.v), FK_NVML_GPU_FABRIC_STATE(d), i);
		nvmlReturn_t frc = (nvmlReturn_t)d->fabric_status.v;
		if (frc == NVML_SUCCESS)
			facts_put_str(f, fab, "ok", FK_NVML_GPU_FABRIC_STATUS(d), i);
		else {
			char why[256];
			snprintf(why, sizeof(why), "%s (%d): %s", gv_nvml_return_name(frc), frc, gv_nvml_error_string(frc));
			facts_put_state(f, FACT_ERROR, fab, why, FK_NVML_GPU_FABRIC_STATUS(d), i);
		}
	} else {
		char key[64];
		snprintf(key, sizeof(key), FK_NVML_GPU_FABRIC_STATE(d), i);
		put_state_of(f, d->fabric_state.st, d->fabric_state.rc, fab, key);
	}
	free(d);
	probe_nvlink_gpu(f, i);
	gv_trace("nvml gpu %d nvlink", i);
}

/* nvmlInit and the queries: under a deadline, since a wedged driver can hang them for minutes */
static void nvml_body(facts *f, const probe_opts *o)
{
	gv_nvml_status st;
	gv_trace("nvml init");
	nvmlReturn_t rc = gv_nvml_init_staged(&st);
	gv_trace("nvml init done");
	facts_put_int(f, "nvmlInit_v2", rc, FK_NVML_INIT_CODE);
	facts_put_real(f, "nvmlInit_v2", st.init_seconds, FK_NVML_INIT_SECONDS);
	if (rc != NVML_SUCCESS) {
		char why[256];
		snprintf(why, sizeof(why), "%s (%d): %s", gv_nvml_return_name(rc), rc, gv_nvml_error_string(rc));
		facts_put_state(f, FACT_ERROR, "nvmlInit_v2", why, FK_NVML_INIT);
		return;
	}
	facts_put_str(f, "nvmlInit_v2", "ok", FK_NVML_INIT);

	gv_child_stage("libnvidia-ml.so.1", st.path, "nvmlSystemGet* and nvmlDevice* queries");
	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	put_str(f, &sys.driver_version, "nvmlSystemGetDriverVersion", FK_NVML_DRIVER_VERSION);
	put_str(f, &sys.nvml_version, "nvmlSystemGetNVMLVersion", FK_NVML_NVML_VERSION);
	if (put_u64(f, &sys.cuda_driver_version, "nvmlSystemGetCudaDriverVersion", FK_NVML_CUDA_DRIVER_VERSION)) {
		char v[32];
		unsigned long long c = sys.cuda_driver_version.v;
		snprintf(v, sizeof(v), "%llu.%llu", c / 1000, (c % 1000) / 10);
		facts_put_str(f, "nvmlSystemGetCudaDriverVersion", v, FK_NVML_CUDA_VERSION);
	}

	gv_trace("nvml system");
	unsigned n = 0;
	rc = gv_nvml_device_count(&n);
	if (rc != NVML_SUCCESS) {
		char why[256];
		snprintf(why, sizeof(why), "%s (%d): %s", gv_nvml_return_name(rc), rc, gv_nvml_error_string(rc));
		facts_put_state(f, FACT_ERROR, "nvmlDeviceGetCount", why, FK_NVML_DEVICE_COUNT_ERROR);
		gv_child_stage_end();
		return;
	}
	facts_put_int(f, "nvmlDeviceGetCount", n, FK_NVML_DEVICE_COUNT);
	nvml_limits *limits = GV_OK(sys.driver_version) ? nvml_limits_open(sys.driver_version.v) : NULL;
	probe_devices_parallel(f, n < 256 ? n : 256, limits, o->fast);
	nvml_limits_close(limits);
	gv_trace("nvml devices");
	gv_child_stage_end();
}

void probe_nvml(facts *f, const probe_opts *o)
{
	/* loading cannot hang in practice and says what is installed: outside the deadline */
	gv_nvml_load();
	gv_trace("nvml loaded");
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	probe_library(f, &st);
	/* nvml.device_count is put only when NVML answered it: "NVML reports 0 GPUs" must never be
	 * read into a library that did not load or initialise */
	if (!st.loaded) {
		facts_put_state(f, FACT_ABSENT, "dlopen", "libnvidia-ml not loaded", FK_NVML_INIT);
		return;
	}
	probe_run_driver_body(f, nvml_body, o, gv_driver_timeout(30), "nvmlInit_v2", "NVML",
			      " (nvmlInit or a device query hangs)", FK_NVML_INIT, FK_NVML_TIMEOUT);
}

/* The NVML child hung, crashed or exited: what the parent knows without loading the library.
 * nvml.library and nvml.init carry the failure (rules that read them see a broken NVML); the
 * driver.library-* finding tells the story. */
void probe_nvml_failed(facts *f, const probe_opts *o, const gv_child_report *r)
{
	(void)o;
	char what[PATH_MAX + 300];
	probe_put_library_failed(f, r, "GPUVET_NVML_LIB", "libnvidia-ml.so.", FK_NVML_LIBRARY,
				 FK_NVML_LIBRARY_FILE_VERSION, what, sizeof(what));
	facts_put_state(f, FACT_ERROR, "nvmlInit_v2", what, FK_NVML_INIT);
	if (r->outcome == GV_CHILD_HUNG)
		facts_put_bool(f, "nvmlInit (GPUVET_DRIVER_TIMEOUT)", true, FK_NVML_TIMEOUT);
}
