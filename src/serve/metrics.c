#include "serve/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kb/kb_nvidia.h"
#include "nvidia/nvml.h"
#include "sampler/fields.h"

#define F(field) offsetof(gpu_sample, field)

/* The plain per-GPU families come from sampler/fields.h: gpuvet's names, and with
 * --dcgm-compat the DCGM exporter's names, units and meaning (its etc/default-counters.csv), for
 * dashboards written against it (Grafana 12239). DCGM's counters carry no "_total"; they are
 * typed untyped so that promtool's lint stays quiet while the names stay DCGM's, but for
 * DCGM_FI_DEV_PCIE_REPLAY_COUNTER: promtool's lint reports "_counter" in a name whatever its type
 * ("metric name should not include type 'counter'"), so it is typed counter, as dcgm-exporter
 * types it (docs/serve.md, "promtool"). The profiling fields
 * (DCGM_FI_PROF_*) are NVML's GPM counters, from nvidia/gpm_fields.h (render_gpm). */
static metric_type mtype(char t)
{
	return t == 'c' ? MT_COUNTER : t == 'u' ? MT_UNTYPED : MT_GAUGE;
}

static sval field(const gpu_sample *g, size_t offset)
{
	sval v;
	memcpy(&v, (const char *)g + offset, sizeof(v));
	return v;
}

const metric_family metric_families[MF_N] = {
	[MF_BUILD_INFO] = {.name = "gpuvet_build_info", .type = MT_GAUGE, .help = "gpuvet's version; always 1."},
	[MF_GPUS] = {.name = "gpuvet_gpus", .type = MT_GAUGE, .help = "GPUs NVML reports."},
	[MF_GPU_INFO] = {.name = "gpuvet_gpu_info", .type = MT_GAUGE,
			 .help = "Identity of each GPU; always 1. Join on gpu and uuid for the name and bus id."},
	[MF_GPM_SUPPORTED] = {.name = "gpuvet_gpu_gpm_supported", .type = MT_GAUGE,
			      .help = "1 when gpuvet reads the GPU's GPM activity counters (NVML GPM: Hopper and newer), 0 when not."},
	[MF_THROTTLE_REASON] = {.name = "gpuvet_gpu_throttle_reason", .type = MT_GAUGE,
				.help = "1 when this clock event reason holds the clocks back (NVML clock event reasons)."},
	[MF_PCIE_THROUGHPUT] = {.name = "gpuvet_gpu_pcie_throughput_bytes_per_second", .type = MT_GAUGE,
				.help = "PCIe throughput over NVML's last 20 ms window, by direction (tx: GPU to host)."},
	[MF_ECC_ERRORS] = {.name = "gpuvet_gpu_ecc_errors_total", .type = MT_COUNTER,
			   .help = "ECC errors; scope volatile counts since the driver loaded, aggregate over the GPU's life."},
	[MF_RETIRED_PAGES] = {.name = "gpuvet_gpu_retired_pages", .type = MT_GAUGE,
			      .help = "Pages retired, by cause (single-bit, double-bit errors)."},
	[MF_REMAPPED_ROWS] = {.name = "gpuvet_gpu_remapped_rows", .type = MT_GAUGE,
			      .help = "Rows remapped, by the kind of error that caused it."},
	[MF_XID_ERRORS] = {.name = "gpuvet_gpu_xid_errors_total", .type = MT_COUNTER,
			   .help = "Xid events seen since gpuvet started (NVML events and kernel log), by code, with "
				   "NVIDIA's message for the code (err_msg)."},
	[MF_OWNER_INFO] = {.name = "gpuvet_gpu_owner_info", .type = MT_GAUGE,
			   .help = "Who holds each GPU, one series per owner (a pod's container, a Slurm job, another "
				   "container), from its processes and the kubelet's allocations; always 1. Join on gpu "
				   "and uuid: * on(gpu, uuid) group_left(namespace, pod) gpuvet_gpu_owner_info."},
	[MF_OWNER_PROCESSES] = {.name = "gpuvet_gpu_owner_processes", .type = MT_GAUGE,
				.help = "Processes each owner of gpuvet_gpu_owner_info runs on the GPU; 0 for a pod the "
					"kubelet allocated the GPU to that does not use it (yet)."},
	[MF_KUBELET_CHECKPOINT_UP] = {.name = "gpuvet_kubelet_checkpoint_up", .type = MT_GAUGE,
				      .help = "1 when the kubelet's device-plugin checkpoint was read (the pods each GPU is "
					      "allocated to), 0 when it is there but cannot be read or parsed; absent where "
					      "there is none."},
	[MF_MIG_MODE] = {.name = "gpuvet_gpu_mig_mode", .type = MT_GAUGE,
			 .help = "1 when the GPU is in MIG mode (nvmlDeviceGetMigMode), 0 when not."},
	[MF_MIG_INFO] = {.name = "gpuvet_gpu_mig_info", .type = MT_GAUGE,
			 .help = "Each MIG device of a GPU in MIG mode: its UUID, GPU and compute instance ids and "
				 "profile; always 1."},
	[MF_MIG_MEMORY_USED] = {.name = "gpuvet_gpu_mig_memory_used_bytes", .type = MT_GAUGE,
				.help = "Device memory in use on each MIG device."},
	[MF_MIG_MEMORY_TOTAL] = {.name = "gpuvet_gpu_mig_memory_total_bytes", .type = MT_GAUGE,
				 .help = "Device memory of each MIG device."},
	[MF_NVLINK_UP] = {.name = "gpuvet_gpu_nvlink_up", .type = MT_GAUGE,
			  .help = "1 when the NVLink link is active, 0 when it is down (nvmlDeviceGetNvLinkState)."},
	[MF_NVLINK_ERRORS] = {.name = "gpuvet_gpu_nvlink_errors_total", .type = MT_COUNTER,
			      .help = "NVLink data-link errors since the driver loaded, by type (CRC flit, CRC data, "
				      "replay, recovery)."},
	[MF_NVLINK_DATA_BYTES] = {.name = "gpuvet_gpu_nvlink_data_bytes_total", .type = MT_COUNTER,
				  .help = "NVLink payload bytes since the driver loaded, by direction (tx: sent by this GPU)."},
	[MF_HEALTH] = {.name = "gpuvet_gpu_health", .type = MT_GAUGE,
		       .help = "1 for the GPU's current health state (healthy, degraded, unhealthy), 0 for the others."},
	[MF_CONDITION] = {.name = "gpuvet_gpu_condition", .type = MT_GAUGE,
			  .help = "Active health conditions (gpu.hot, gpu.throttled, gpu.input-bound, ...), with the "
				  "state each causes."},
	[MF_PROCESS_MEMORY] = {.name = "gpuvet_process_gpu_memory_bytes", .type = MT_GAUGE,
			       .help = "Device memory used by each process holding a GPU (per-process series, --processes); "
				       "past --process-series, the rest of a GPU's processes are summed in one series "
				       "with pid=\"other\"."},
	[MF_PROCESS_SM_UTILIZATION] = {.name = "gpuvet_process_sm_utilization_ratio", .type = MT_GAUGE,
				       .help = "Fraction of the GPU's SM time each process used over the last sample "
					       "period (nvmlDeviceGetProcessUtilization; --processes); pid=\"other\" sums "
					       "the processes past --process-series."},
	[MF_PROCESS_SERIES_FOLDED] = {.name = "gpuvet_process_series_folded", .type = MT_GAUGE,
				      .help = "Processes summed into pid=\"other\" because the per-process series reached "
					      "--process-series."},
	[MF_FINDING] = {.name = "gpuvet_finding", .type = MT_GAUGE,
			.help = "Findings of the periodic gpuvet check (docs/findings.md), 1 each; none when all is well."},
	[MF_CHECK_TIMESTAMP] = {.name = "gpuvet_check_timestamp_seconds", .type = MT_GAUGE,
				.help = "When the periodic check last finished (Unix time)."},
	[MF_CHECK_DURATION] = {.name = "gpuvet_check_duration_seconds", .type = MT_GAUGE,
			       .help = "How long the periodic check took."},
	[MF_SAMPLER_UP] = {.name = "gpuvet_sampler_up", .type = MT_GAUGE,
			   .help = "1 when the last NVML sample succeeded; 0 while failing (the GPU series then repeat "
				   "the last good sample)."},
	[MF_SAMPLE_AGE] = {.name = "gpuvet_sample_age_seconds", .type = MT_GAUGE,
			   .help = "Age of the GPU series served: seconds since the last good NVML sample."},
	[MF_SAMPLE_TIMESTAMP] = {.name = "gpuvet_sample_timestamp_seconds", .type = MT_GAUGE,
				 .help = "When the last good NVML sample was taken (Unix time)."},
	[MF_SAMPLE_INTERVAL] = {.name = "gpuvet_sample_interval_seconds", .type = MT_GAUGE,
				.help = "The sampling interval (--interval)."},
	[MF_SAMPLES] = {.name = "gpuvet_samples_total", .type = MT_COUNTER, .help = "NVML samples taken successfully."},
	[MF_SAMPLER_ERRORS] = {.name = "gpuvet_sampler_errors_total", .type = MT_COUNTER, .help = "NVML samples that failed."},
	[MF_HTTP_CONNECTIONS] = {.name = "gpuvet_http_connections", .type = MT_GAUGE,
				 .help = "HTTP connections open now, by state: idle (no request yet), headers (request "
					 "under way), answering."},
	[MF_HTTP_CONNECTIONS_CLOSED] = {.name = "gpuvet_http_connections_closed_total", .type = MT_COUNTER,
					.help = "HTTP connections the exporter closed, by rule: evicted (to make room), "
						"deadline, refused, hung_up, not_allowed."},
	/* DCGM's counters are typed counter as dcgm-exporter types them (its etc/default-counters.csv),
	 * although their names lack "_total" (promtool's lint says so: docs/serve.md, "promtool") */
	[MF_DCGM_XID_ERRORS] = {.name = "DCGM_FI_DEV_XID_ERRORS", .type = MT_GAUGE,
				.help = "Value of the last XID error encountered."},
	[MF_DCGM_FB_FREE] = {.name = "DCGM_FI_DEV_FB_FREE", .type = MT_GAUGE, .help = "Framebuffer memory free (in MiB)."},
	[MF_DCGM_NVLINK_CRC_FLIT] = {.name = "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", .type = MT_COUNTER,
				     .help = "Total number of NVLink flow-control CRC errors."},
	[MF_DCGM_NVLINK_CRC_DATA] = {.name = "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", .type = MT_COUNTER,
				     .help = "Total number of NVLink data CRC errors."},
	[MF_DCGM_NVLINK_REPLAY] = {.name = "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", .type = MT_COUNTER,
				   .help = "Total number of NVLink retries."},
	[MF_DCGM_NVLINK_RECOVERY] = {.name = "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", .type = MT_COUNTER,
				     .help = "Total number of NVLink recovery errors."},
	[MF_DCGM_NVLINK_BANDWIDTH] = {.name = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", .type = MT_COUNTER,
				      .help = "Total number of NVLink bandwidth counters for all lanes (payload bytes sent "
					      "and received)."},
};

void metrics_declare(expo *e, bool *declared, metric_family_id id)
{
	if (declared && *declared)
		return;
	expo_family(e, metric_families[id].name, metric_families[id].type, metric_families[id].help);
	if (declared)
		*declared = true;
}

/* ------------------------------------------------------------------ owners */

static const char *owner_kind_name(owner_kind k)
{
	switch (k) {
	case OWNER_POD: return "pod";
	case OWNER_SLURM: return "slurm";
	case OWNER_CONTAINER: return "container";
	default: return NULL;
	}
}

size_t metrics_owner_labels(const owner *o, const char **names, const char **values, size_t n, size_t max)
{
	static const struct {
		owner_kind kind;
		const char *label;
		size_t off;
	} labels[] = {
		{.kind = OWNER_POD, .label = "namespace", .off = offsetof(owner, namespace_)},
		{.kind = OWNER_POD, .label = "pod", .off = offsetof(owner, pod)},
		{.kind = OWNER_POD, .label = "container", .off = offsetof(owner, container)},
		{.kind = OWNER_POD, .label = "pod_uid", .off = offsetof(owner, pod_uid)},
		{.kind = OWNER_SLURM, .label = "job_id", .off = offsetof(owner, job)},
		{.kind = OWNER_SLURM, .label = "user", .off = offsetof(owner, user)},
		{.kind = OWNER_CONTAINER, .label = "runtime", .off = offsetof(owner, runtime)},
		{.kind = OWNER_CONTAINER, .label = "container_id", .off = offsetof(owner, container_id)},
	};
	const char *kind = owner_kind_name(o->kind);
	if (!kind || n >= max)
		return n;
	names[n] = "kind", values[n++] = kind;
	for (size_t k = 0; k < GV_ARRAY_LEN(labels) && n < max; k++) {
		const char *v = (const char *)o + labels[k].off;
		if (labels[k].kind == o->kind && v[0])
			names[n] = labels[k].label, values[n++] = v;
	}
	return n;
}

/* One owner of a GPU: from its processes, from the kubelet's allocations, or both. */
typedef struct gpu_owner {
	owner o;
	int gpu_instance; /* a MIG allocation's GPU instance; -1 */
	unsigned procs;
} gpu_owner;
#define MAX_GPU_OWNERS (SNAP_MAX_PROCS + SNAP_MAX_ALLOCS)

static bool same_owner(const owner *a, const owner *b)
{
	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case OWNER_POD:
		if (a->pod_uid[0] || b->pod_uid[0])
			return strcmp(a->pod_uid, b->pod_uid) == 0 && strcmp(a->container, b->container) == 0;
		return strcmp(a->namespace_, b->namespace_) == 0 && strcmp(a->pod, b->pod) == 0 &&
		       strcmp(a->container, b->container) == 0;
	case OWNER_SLURM: return strcmp(a->job, b->job) == 0 && strcmp(a->user, b->user) == 0;
	case OWNER_CONTAINER: return strcmp(a->container_id, b->container_id) == 0;
	default: return false;
	}
}

/* The GPU's owners: each owner of its processes once, with its count, then each pod the kubelet
 * allocated it to (the same pod's container is one owner: a process whose container could not be
 * named takes the allocation's). */
static size_t gpu_owners(const gpu_sample *g, gpu_owner *out)
{
	size_t n = 0;
	for (size_t k = 0; k < g->nproc; k++) {
		const owner *o = &g->procs[k].owner;
		if (o->kind == OWNER_NONE)
			continue;
		size_t i = 0;
		while (i < n && !same_owner(&out[i].o, o))
			i++;
		if (i == n && n < MAX_GPU_OWNERS)
			out[n++] = (gpu_owner){.o = *o, .gpu_instance = -1, .procs = 0};
		if (i < n)
			out[i].procs++;
	}
	for (size_t k = 0; k < g->nalloc; k++) {
		const gpu_alloc *a = &g->alloc[k];
		size_t i = 0;
		for (; i < n; i++) {
			owner *o = &out[i].o;
			if (o->kind == OWNER_POD && strcmp(o->pod_uid, a->owner.pod_uid) == 0 &&
			    (strcmp(o->container, a->owner.container) == 0 || !o->container[0]))
				break;
		}
		if (i < n) {
			if (!out[i].o.container[0])
				str_copy(out[i].o.container, sizeof(out[i].o.container), a->owner.container);
			if (out[i].gpu_instance < 0)
				out[i].gpu_instance = a->gpu_instance;
		} else if (n < MAX_GPU_OWNERS) {
			out[n++] = (gpu_owner){.o = a->owner, .gpu_instance = a->gpu_instance, .procs = 0};
		}
	}
	return n;
}

/* Whose job holds the GPU, as dcgm-exporter names it (on its own series only, --dcgm-compat):
 * pod, namespace, container for the first Kubernetes pod among its processes, else the first pod
 * the kubelet allocated it to (dcgm-exporter asks the kubelet for the allocations); hpc_job for
 * the first Slurm job (dcgm-exporter's HPC job mapping label). None when the GPU's processes are
 * the host's. */
static void dcgm_owner_labels(gpu_labels *l, const gpu_sample *g)
{
	const owner *pod = NULL, *job = NULL;
	for (size_t k = 0; k < g->nproc; k++) {
		const owner *o = &g->procs[k].owner;
		if (o->kind == OWNER_POD && !pod)
			pod = o;
		else if (o->kind == OWNER_SLURM && !job)
			job = o;
	}
	for (size_t k = 0; k < g->nalloc && !(pod && pod->pod[0]); k++)
		if (g->alloc[k].owner.pod[0])
			pod = &g->alloc[k].owner;
	if (pod && pod->pod[0]) {
		l->names[l->n] = "pod", l->values[l->n++] = pod->pod;
		l->names[l->n] = "namespace", l->values[l->n++] = pod->namespace_;
		if (pod->container[0])
			l->names[l->n] = "container", l->values[l->n++] = pod->container;
	}
	if (job)
		l->names[l->n] = "hpc_job", l->values[l->n++] = job->job;
}

void metrics_gpu_labels(gpu_labels *l, const gpu_sample *g, bool dcgm, const metrics_input *in)
{
	snprintf(l->index, sizeof(l->index), "%d", g->index);
	l->names[0] = "gpu", l->values[0] = l->index;
	if (!dcgm) {
		l->names[1] = "uuid", l->values[1] = g->uuid;
		l->n = 2;
		return;
	}
	snprintf(l->device, sizeof(l->device), "nvidia%d", g->minor >= 0 ? g->minor : g->index);
	l->names[1] = "UUID", l->values[1] = g->uuid;
	l->names[2] = "pci_bus_id", l->values[2] = g->pci_bus_id;
	l->names[3] = "device", l->values[3] = l->device;
	l->names[4] = "Hostname", l->values[4] = in->hostname ? in->hostname : "";
	l->n = 5;
	if (in->snap && in->snap->driver_version[0])
		l->names[l->n] = "DCGM_FI_DRIVER_VERSION", l->values[l->n++] = in->snap->driver_version;
	if (in->dcgm_model_name)
		l->names[l->n] = "modelName", l->values[l->n++] = g->name;
	dcgm_owner_labels(l, g);
}

static void our_labels(gpu_labels *l, const gpu_sample *g)
{
	metrics_gpu_labels(l, g, false, NULL);
}

static void family_once(expo *e, bool *declared, const char *name, metric_type type, const char *help)
{
	if (!*declared)
		expo_family(e, name, type, help);
	*declared = true;
}

/* The same labels plus one or two more. */
static void sample_plus(expo *e, double v, const gpu_labels *l, const char *n1, const char *v1, const char *n2,
			const char *v2)
{
	const char *names[16], *values[16];
	size_t n = l->n;
	memcpy(names, l->names, n * sizeof(*names));
	memcpy(values, l->values, n * sizeof(*values));
	if (n1)
		names[n] = n1, values[n++] = v1;
	if (n2)
		names[n] = n2, values[n++] = v2;
	expo_sample_v(e, v, n, names, values);
}

/* MIG: the mode of each GPU that has one, and each MIG device of a GPU in MIG mode (gpuvet's
 * labels gpu, uuid of the GPU, gpu_instance_id, compute_instance_id; with --dcgm-compat also
 * DCGM_FI_DEV_FB_USED and _FREE per GPU instance, with dcgm-exporter's GPU_I_ID and
 * GPU_I_PROFILE). */
static void mig_ids(const snap_mig *m, char *gi, char *ci, size_t size)
{
	snprintf(gi, size, "%d", m->gpu_instance);
	snprintf(ci, size, "%d", m->compute_instance);
}

/* dcgm-exporter's series of one MIG device: the GPU's DCGM labels, GPU_I_PROFILE and GPU_I_ID.
 * Only the memory families: where dcgm-exporter labels every field of a MIG GPU by instance,
 * gpuvet keeps the GPU's own series for the device-wide readings (docs/serve.md). */
static void dcgm_mig_memory(expo *e, const gpu_sample *g, const metrics_input *in, bool free_)
{
	for (size_t k = 0; !g->lost && k < g->nmig; k++) {
		const snap_mig *m = &g->mig[k];
		if (!sv_has(m->mem_used) || (free_ && !sv_has(m->mem_total)))
			continue;
		double mib = (free_ ? m->mem_total.v - m->mem_used.v : m->mem_used.v) / (1024.0 * 1024.0);
		char gi[16], ci[16];
		mig_ids(m, gi, ci, sizeof(gi));
		gpu_labels l;
		metrics_gpu_labels(&l, g, true, in);
		sample_plus(e, mib < 0 ? 0 : mib, &l, "GPU_I_PROFILE", m->profile[0] ? m->profile : NULL, "GPU_I_ID",
			    m->gpu_instance >= 0 ? gi : NULL);
	}
}

static void render_field_families(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	for (size_t f = 0; f < n_snap_fields; f++) {
		const snap_field *sf = &snap_fields[f];
		const char *name = dcgm ? sf->dcgm : sf->prom;
		if (!name)
			continue;
		bool declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			sval v = field(g, sf->off);
			if (!sv_has(v) || g->lost)
				continue; /* n/a: no sample rather than a made-up value */
			family_once(e, &declared, name, mtype(dcgm ? sf->dcgm_type : sf->prom_type),
				    dcgm ? sf->dcgm_help : sf->prom_help);
			gpu_labels l;
			metrics_gpu_labels(&l, g, dcgm, in);
			expo_sample_v(e, v.v * (dcgm ? sf->dcgm_scale : sf->prom_scale), l.n, l.names, l.values);
		}
		if (dcgm && sf->off == F(mem_used) && declared) /* and each MIG device's, in the same family */
			for (int i = 0; i < s->ngpus; i++)
				dcgm_mig_memory(e, &s->gpus[i], in, false);
	}
}

/* The GPM activity counters, one family per row of nvidia/gpm_fields.h: gpuvet's name, and
 * DCGM's with --dcgm-compat. Absent where the GPU has no GPM (never a made-up value); DCGM's
 * graphics-engine field alone falls back to NVML's utilization.gpu there, so the DCGM
 * dashboard's utilization panel keeps working (docs/serve.md). */
static void render_gpm(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	bool any = false;
	for (int i = 0; i < s->ngpus && !any; i++)
		any = !s->gpus[i].lost && s->gpus[i].gpm_support != 0;
	if (!dcgm && any) {
		metrics_declare(e, NULL, MF_GPM_SUPPORTED);
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (g->lost || !g->gpm_support)
				continue;
			gpu_labels l;
			our_labels(&l, g);
			expo_sample_v(e, g->gpm_support == GV_GPM_ON ? 1 : 0, l.n, l.names, l.values);
		}
	}
	for (int k = 0; k < GV_GPM_N; k++) {
		const gv_gpm_field *f = &gv_gpm_fields[k];
		const char *name = dcgm ? f->dcgm_name : f->prom_name;
		bool declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (g->lost)
				continue;
			sval v = g->gpm[k];
			if (!sv_has(v) && dcgm && k == GV_GPM_GRAPHICS && g->gpm_support != GV_GPM_ON && sv_has(g->util_gpu))
				v = sv_ok(g->util_gpu.v * 0.01);
			if (!sv_has(v))
				continue;
			family_once(e, &declared, name, MT_GAUGE, f->help);
			gpu_labels l;
			metrics_gpu_labels(&l, g, dcgm, in);
			expo_sample_v(e, v.v, l.n, l.names, l.values);
		}
	}
}

static void render_info(expo *e, const snapshot *s)
{
	metrics_declare(e, NULL, MF_GPU_INFO);
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		char minor[16];
		snprintf(minor, sizeof(minor), "%d", g->minor);
		const char *names[] = {"gpu", "uuid", "name", "pci_bus_id", "minor_number", "driver_version"};
		const char *values[] = {l.index, g->uuid, g->name, g->pci_bus_id, g->minor >= 0 ? minor : NULL,
					s->driver_version[0] ? s->driver_version : NULL};
		expo_sample_v(e, 1, GV_ARRAY_LEN(names), names, values);
	}
}

static void render_throttle(expo *e, const snapshot *s)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (!sv_has(g->clock_reasons) || g->lost)
			continue;
		metrics_declare(e, &declared, MF_THROTTLE_REASON);
		gpu_labels l;
		our_labels(&l, g);
		unsigned long long mask = (unsigned long long)g->clock_reasons.v;
		for (size_t r = 0; r < gv_nvml_n_clock_reasons; r++)
			sample_plus(e, (mask & gv_nvml_clock_reasons[r].bit) ? 1 : 0, &l, "reason", gv_nvml_clock_reasons[r].name, NULL, NULL);
	}
}

static void render_pcie_throughput(expo *e, const snapshot *s)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost || (!sv_has(g->pcie_tx_kbps) && !sv_has(g->pcie_rx_kbps)))
			continue;
		metrics_declare(e, &declared, MF_PCIE_THROUGHPUT);
		gpu_labels l;
		our_labels(&l, g);
		if (sv_has(g->pcie_tx_kbps))
			sample_plus(e, g->pcie_tx_kbps.v * 1024, &l, "direction", "tx", NULL, NULL);
		if (sv_has(g->pcie_rx_kbps))
			sample_plus(e, g->pcie_rx_kbps.v * 1024, &l, "direction", "rx", NULL, NULL);
	}
}

static void render_ecc(expo *e, const snapshot *s)
{
	static const struct {
		size_t off;
		const char *type, *scope;
	} ecc[] = {
		{F(ecc_corr_volatile), "corrected", "volatile"},
		{F(ecc_uncorr_volatile), "uncorrected", "volatile"},
		{F(ecc_corr_aggregate), "corrected", "aggregate"},
		{F(ecc_uncorr_aggregate), "uncorrected", "aggregate"},
	};
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost)
			continue;
		gpu_labels l;
		our_labels(&l, g);
		for (size_t k = 0; k < GV_ARRAY_LEN(ecc); k++) {
			sval v = field(g, ecc[k].off);
			if (!sv_has(v))
				continue;
			metrics_declare(e, &declared, MF_ECC_ERRORS);
			sample_plus(e, v.v, &l, "type", ecc[k].type, "scope", ecc[k].scope);
		}
	}
}

static void render_pair(expo *e, const snapshot *s, metric_family_id id, const char *label, size_t off1,
			const char *v1, size_t off2, const char *v2)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		sval a = field(g, off1), b = field(g, off2);
		if (g->lost || (!sv_has(a) && !sv_has(b)))
			continue;
		metrics_declare(e, &declared, id);
		gpu_labels l;
		our_labels(&l, g);
		if (sv_has(a))
			sample_plus(e, a.v, &l, label, v1, NULL, NULL);
		if (sv_has(b))
			sample_plus(e, b.v, &l, label, v2, NULL, NULL);
	}
}

/* NVIDIA's message for an Xid code (data/xid.csv); NULL when the catalogue has none. */
static const char *xid_message(const metrics_input *in, unsigned code)
{
	kb_xid x;
	if (in->kb && kb_xid_lookup(in->kb, (int)code, &x) && x.message && x.message[0])
		return x.message;
	return NULL;
}

static void render_xid(expo *e, const snapshot *s, bool dcgm, const metrics_input *in)
{
	metrics_declare(e, NULL, MF_XID_ERRORS);
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		for (size_t k = 0; k < g->nxid; k++) {
			char code[16];
			snprintf(code, sizeof(code), "%u", g->xids[k].code);
			sample_plus(e, (double)g->xids[k].count, &l, "xid", code, "err_msg", xid_message(in, g->xids[k].code));
		}
	}
	if (!dcgm)
		return;
	/* dcgm-exporter's: the last code, with err_code and err_msg (its words for no Xid and for a
	 * code it does not know: "No Error", "Unknown Error") */
	metrics_declare(e, NULL, MF_DCGM_XID_ERRORS);
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		unsigned last = 0;
		double t = -1;
		for (size_t k = 0; k < g->nxid; k++)
			if (g->xids[k].last_time > t)
				t = g->xids[k].last_time, last = g->xids[k].code;
		gpu_labels l;
		metrics_gpu_labels(&l, g, true, in);
		char code[16];
		snprintf(code, sizeof(code), "%u", last);
		const char *msg = last == 0 ? "No Error" : xid_message(in, last);
		sample_plus(e, last, &l, "err_code", code, "err_msg", msg ? msg : "Unknown Error");
	}
}

static void render_dcgm_fb_free(expo *e, const snapshot *s, const metrics_input *in)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost || !sv_has(g->mem_used) || !sv_has(g->mem_total))
			continue;
		metrics_declare(e, &declared, MF_DCGM_FB_FREE);
		gpu_labels l;
		metrics_gpu_labels(&l, g, true, in);
		double free_mib = (g->mem_total.v - g->mem_used.v) / (1024.0 * 1024.0);
		expo_sample_v(e, free_mib < 0 ? 0 : free_mib, l.n, l.names, l.values);
	}
	for (int i = 0; declared && i < s->ngpus; i++)
		dcgm_mig_memory(e, &s->gpus[i], in, true);
}

static void render_health(expo *e, const snapshot *s, const health_tracker *h)
{
	metrics_declare(e, NULL, MF_HEALTH);
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		health_state st = health_gpu(h, g->index);
		for (int k = HEALTH_HEALTHY; k <= HEALTH_UNHEALTHY; k++)
			sample_plus(e, st == (health_state)k ? 1 : 0, &l, "state", health_state_name((health_state)k), NULL,
				    NULL);
	}
	metrics_declare(e, NULL, MF_CONDITION);
	/* one series per GPU and condition id: a GPU with two Xid codes keeps the worse state */
	for (size_t m = 0; m < h->nmsg; m++) {
		const health_msg *msg = &h->msgs[m];
		bool dup = false;
		for (size_t k = 0; k < m && !dup; k++)
			dup = h->msgs[k].gpu == msg->gpu && strcmp(h->msgs[k].id, msg->id) == 0;
		if (dup)
			continue;
		health_state worst = msg->state;
		for (size_t k = m + 1; k < h->nmsg; k++)
			if (h->msgs[k].gpu == msg->gpu && strcmp(h->msgs[k].id, msg->id) == 0 && h->msgs[k].state > worst)
				worst = h->msgs[k].state;
		const gpu_sample *g = snapshot_gpu(s, msg->gpu);
		if (!g)
			continue;
		gpu_labels l;
		our_labels(&l, g);
		sample_plus(e, 1, &l, "condition", msg->id, "state", health_state_name(worst));
	}
}

/* The per-process series of one family (memory, or SM utilization): the first max_series
 * processes a series each, with their owner's labels; each GPU's rest summed in pid="other".
 * Returns how many were summed. */
static size_t render_process_family(expo *e, const snapshot *s, size_t max_series, metric_family_id id)
{
	metrics_declare(e, NULL, id);
	size_t series = 0, folded = 0;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		gpu_labels l;
		our_labels(&l, g);
		double rest = 0;
		size_t nrest = 0;
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			double v = NAN;
			if (id == MF_PROCESS_MEMORY && sv_has(p->used_bytes))
				v = p->used_bytes.v;
			else if (id == MF_PROCESS_SM_UTILIZATION && sv_has(p->sm_util))
				v = p->sm_util.v * 0.01;
			if (series >= max_series) {
				if (!isnan(v))
					rest += v;
				nrest++;
				continue;
			}
			series++;
			if (isnan(v) && id == MF_PROCESS_SM_UTILIZATION)
				continue; /* n/a: no series (memory keeps its NaN series, as before) */
			char pid[16];
			snprintf(pid, sizeof(pid), "%u", p->pid);
			const char *names[16] = {"gpu", "uuid", "pid", "name", "type"};
			const char *values[16] = {l.index, g->uuid, pid, p->name, p->type};
			size_t n = metrics_owner_labels(&p->owner, names, values, 5, GV_ARRAY_LEN(names));
			expo_sample_v(e, v, n, names, values);
		}
		if (nrest) {
			const char *names[] = {"gpu", "uuid", "pid"};
			const char *values[] = {l.index, g->uuid, "other"};
			expo_sample_v(e, rest, GV_ARRAY_LEN(names), names, values);
			folded += nrest;
		}
	}
	return folded;
}

static void render_processes(expo *e, const snapshot *s, size_t max_series)
{
	size_t folded = render_process_family(e, s, max_series, MF_PROCESS_MEMORY);
	render_process_family(e, s, max_series, MF_PROCESS_SM_UTILIZATION);
	metrics_declare(e, NULL, MF_PROCESS_SERIES_FOLDED);
	expo_sample_v(e, (double)folded, 0, NULL, NULL);
}

/* gpuvet_gpu_owner_info and gpuvet_gpu_owner_processes: one series per GPU and owner. The family
 * is declared on every GPU machine, owners or not. */
static void render_owners(expo *e, const snapshot *s)
{
	for (int pass = 0; pass < 2; pass++) {
		metrics_declare(e, NULL, pass == 0 ? MF_OWNER_INFO : MF_OWNER_PROCESSES);
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			gpu_owner *owners = xcalloc(MAX_GPU_OWNERS, sizeof(*owners));
			size_t n = gpu_owners(g, owners);
			char index[16];
			snprintf(index, sizeof(index), "%d", g->index);
			for (size_t k = 0; k < n; k++) {
				char gi[16];
				snprintf(gi, sizeof(gi), "%d", owners[k].gpu_instance);
				const char *names[16] = {"gpu", "uuid"};
				const char *values[16] = {index, g->uuid};
				size_t m = metrics_owner_labels(&owners[k].o, names, values, 2, GV_ARRAY_LEN(names) - 1);
				if (owners[k].gpu_instance >= 0)
					names[m] = "gpu_instance_id", values[m++] = gi;
				expo_sample_v(e, pass == 0 ? 1 : (double)owners[k].procs, m, names, values);
			}
			free(owners);
		}
	}
	if (s->kubelet_checkpoint != 0) {
		metrics_declare(e, NULL, MF_KUBELET_CHECKPOINT_UP);
		expo_sample_v(e, s->kubelet_checkpoint > 0 ? 1 : 0, 0, NULL, NULL);
	}
}

static void render_mig(expo *e, const snapshot *s)
{
	bool declared = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost || !sv_has(g->mig_mode))
			continue;
		metrics_declare(e, &declared, MF_MIG_MODE);
		gpu_labels l;
		our_labels(&l, g);
		expo_sample_v(e, g->mig_mode.v ? 1 : 0, l.n, l.names, l.values);
	}
	static const metric_family_id ids[] = {MF_MIG_INFO, MF_MIG_MEMORY_USED, MF_MIG_MEMORY_TOTAL};
	for (size_t f = 0; f < GV_ARRAY_LEN(ids); f++) {
		declared = false;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			for (size_t k = 0; !g->lost && k < g->nmig; k++) {
				const snap_mig *m = &g->mig[k];
				sval v = ids[f] == MF_MIG_INFO ? sv_ok(1) : ids[f] == MF_MIG_MEMORY_USED ? m->mem_used : m->mem_total;
				if (!sv_has(v))
					continue;
				metrics_declare(e, &declared, ids[f]);
				char index[16], gi[16], ci[16];
				snprintf(index, sizeof(index), "%d", g->index);
				mig_ids(m, gi, ci, sizeof(gi));
				const char *names[] = {"gpu", "uuid", "gpu_instance_id", "compute_instance_id", "mig_uuid", "profile"};
				const char *values[] = {index, g->uuid, m->gpu_instance >= 0 ? gi : NULL,
							m->compute_instance >= 0 ? ci : NULL, m->uuid[0] ? m->uuid : NULL,
							m->profile[0] ? m->profile : NULL};
				expo_sample_v(e, v.v, ids[f] == MF_MIG_INFO ? 6 : 4, names, values);
			}
		}
	}
}

static void render_findings(expo *e, const metrics_input *in)
{
	metrics_declare(e, NULL, MF_FINDING);
	for (size_t i = 0; i < in->nfindings; i++)
		expo_sample(e, 1, "id", in->findings[i].id, "severity", severity_name(in->findings[i].sev), NULL);
	metrics_declare(e, NULL, MF_CHECK_TIMESTAMP);
	expo_sample(e, in->check_wall_time, NULL);
	metrics_declare(e, NULL, MF_CHECK_DURATION);
	expo_sample(e, in->check_seconds, NULL);
}

void metrics_render(expo *e, const metrics_input *in)
{
	metrics_declare(e, NULL, MF_BUILD_INFO);
	expo_sample(e, 1, "version", GPUVET_VERSION, NULL);
	const snapshot *s = in->snap;
	if (s) {
		metrics_declare(e, NULL, MF_GPUS);
		expo_sample(e, s->ngpus, NULL);
		render_info(e, s);
		render_field_families(e, s, false, in);
		render_gpm(e, s, false, in);
		render_throttle(e, s);
		render_pcie_throughput(e, s);
		render_ecc(e, s);
		render_pair(e, s, MF_RETIRED_PAGES, "cause", F(retired_sbe), "sbe", F(retired_dbe), "dbe");
		render_pair(e, s, MF_REMAPPED_ROWS, "type", F(remap_corr), "correctable", F(remap_uncorr), "uncorrectable");
		render_xid(e, s, in->dcgm, in);
		render_owners(e, s);
		render_mig(e, s);
		metrics_render_nvlink(e, s, in);
		if (in->health)
			render_health(e, s, in->health);
		if (in->processes)
			render_processes(e, s, in->process_series_max ? in->process_series_max : METRICS_PROCESS_SERIES_DEFAULT);
		if (in->dcgm) {
			render_field_families(e, s, true, in);
			render_gpm(e, s, true, in);
			render_dcgm_fb_free(e, s, in);
		}
	}
	if (in->have_check)
		render_findings(e, in);
}

void metrics_render_status(expo *e, const metrics_status *st)
{
	metrics_declare(e, NULL, MF_SAMPLER_UP);
	expo_sample(e, st->sampler_up ? 1 : 0, NULL);
	metrics_declare(e, NULL, MF_SAMPLE_AGE);
	expo_sample(e, st->sample_age, NULL);
	metrics_declare(e, NULL, MF_SAMPLE_TIMESTAMP);
	expo_sample(e, st->last_sample_wall, NULL);
	metrics_declare(e, NULL, MF_SAMPLE_INTERVAL);
	expo_sample(e, st->interval, NULL);
	metrics_declare(e, NULL, MF_SAMPLES);
	expo_sample(e, (double)st->samples_total, NULL);
	metrics_declare(e, NULL, MF_SAMPLER_ERRORS);
	expo_sample(e, (double)st->errors_total, NULL);
}
