/*
 * What gpuvet serve exposes: a snapshot, the health states and the periodic check's findings
 * as Prometheus metric families (docs/serve.md lists them). Pure: everything it shows comes in
 * through metrics_input, so tests render hand-made snapshots and compare values.
 *
 * The body (metrics_render) is rendered once per sample by the sampler thread; the status
 * families (metrics_render_status: sample age, sampler up) are rendered per scrape, so a scrape
 * during a hung or failing sampler shows how stale the body is.
 */
#ifndef GPUVET_SERVE_METRICS_H
#define GPUVET_SERVE_METRICS_H
#include <stdbool.h>
#include <stddef.h>

#include "core/findings.h"
#include "expo/expo.h"
#include "health/health.h"
#include "sampler/snapshot.h"

typedef struct metrics_finding {
	char id[64];
	severity sev;
} metrics_finding;

/* Per-process series are capped (each pid is a series; a node running thousands of short jobs
 * would otherwise grow Prometheus without bound): past the cap a GPU's remaining processes are
 * summed into one pid="other" series. */
#define METRICS_PROCESS_SERIES_DEFAULT 256

struct kb;

typedef struct metrics_input {
	const snapshot *snap;          /* last good snapshot; NULL before the first */
	const struct kb *kb;           /* the Xid catalogue (err_msg labels); NULL: none */
	const health_tracker *health;  /* NULL: no health families */
	bool dcgm;                     /* also the DCGM exporter's names and labels */
	bool dcgm_model_name;          /* and its modelName label (camelCase: promtool's lint names it) */
	bool processes;                /* per-process series (opt-in: pids make many series) */
	size_t process_series_max;     /* at most this many per-process series (0: the default) */
	const char *hostname;          /* the DCGM "Hostname" label */
	/* the periodic check */
	bool have_check;
	double check_wall_time, check_seconds;
	size_t nfindings;
	const metrics_finding *findings;
} metrics_input;

typedef struct metrics_status {
	double sample_age;        /* seconds since the last good snapshot; NaN before the first */
	double last_sample_wall;  /* epoch seconds of the last good snapshot; 0 before the first */
	bool sampler_up;          /* the last attempt succeeded */
	unsigned long long samples_total, errors_total;
	double interval;          /* --interval */
} metrics_status;

void metrics_render(expo *e, const metrics_input *in);

/* The metric families serve writes by hand, one row each: name, type and help. The plain
 * per-GPU readings have their table in sampler/fields.h (snap_fields: gpuvet's and DCGM's
 * names), the GPM counters theirs in nvidia/gpm_fields.h; every other family is a row here, and
 * its writer declares it by its id (metrics_declare). docs/serve.md names every family of the
 * three tables (tests/unit/test_serve.c holds it), and a scrape has no family outside them. */
typedef enum metric_family_id {
	MF_BUILD_INFO, MF_GPUS, MF_GPU_INFO, MF_GPM_SUPPORTED, MF_THROTTLE_REASON, MF_PCIE_THROUGHPUT, MF_ECC_ERRORS,
	MF_RETIRED_PAGES, MF_REMAPPED_ROWS, MF_XID_ERRORS, MF_OWNER_INFO, MF_OWNER_PROCESSES, MF_KUBELET_CHECKPOINT_UP,
	MF_MIG_MODE, MF_MIG_INFO, MF_MIG_MEMORY_USED, MF_MIG_MEMORY_TOTAL, MF_NVLINK_UP, MF_NVLINK_ERRORS,
	MF_NVLINK_DATA_BYTES, MF_HEALTH, MF_CONDITION, MF_PROCESS_MEMORY, MF_PROCESS_SM_UTILIZATION,
	MF_PROCESS_SERIES_FOLDED, MF_FINDING, MF_CHECK_TIMESTAMP, MF_CHECK_DURATION, MF_SAMPLER_UP, MF_SAMPLE_AGE,
	MF_SAMPLE_TIMESTAMP, MF_SAMPLE_INTERVAL, MF_SAMPLES, MF_SAMPLER_ERRORS, MF_HTTP_CONNECTIONS,
	MF_HTTP_CONNECTIONS_CLOSED,
	/* --dcgm-compat */
	MF_DCGM_XID_ERRORS, MF_DCGM_FB_FREE, MF_DCGM_NVLINK_CRC_FLIT, MF_DCGM_NVLINK_CRC_DATA, MF_DCGM_NVLINK_REPLAY,
	MF_DCGM_NVLINK_RECOVERY, MF_DCGM_NVLINK_BANDWIDTH,
	MF_N
} metric_family_id;
typedef struct metric_family {
	const char *name;
	metric_type type;
	const char *help;
} metric_family;
extern const metric_family metric_families[MF_N];
/* Declares family id (its HELP and TYPE lines); with declared, only once per *declared. */
void metrics_declare(expo *e, bool *declared, metric_family_id id);

/* For the writers of metrics.c and metrics_nvlink.c: one GPU's labels, gpuvet's (gpu, uuid) or,
 * with dcgm, dcgm-exporter's (gpu, UUID, pci_bus_id, device, Hostname, DCGM_FI_DRIVER_VERSION,
 * modelName with --dcgm-model-name) and then, as dcgm-exporter has them, the pod or Slurm job
 * that holds the GPU. gpuvet's own GPU series carry the GPU's identity alone, so that a series
 * stays one series when jobs come and go; its owners are gpuvet_gpu_owner_info's. */
typedef struct gpu_labels {
	char index[16], device[24];
	const char *names[12];
	const char *values[12];
	size_t n;
} gpu_labels;
void metrics_gpu_labels(gpu_labels *l, const gpu_sample *g, bool dcgm, const metrics_input *in);
/* The NVLink families (serve/metrics_nvlink.c), called by metrics_render. */
void metrics_render_nvlink(expo *e, const snapshot *s, const metrics_input *in);
void metrics_render_status(expo *e, const metrics_status *st);

/* The labels that name an owner (kind, then namespace, pod, container, pod_uid of a pod; job_id,
 * user of a Slurm job; runtime, container_id of another container), appended to names/values
 * from n on (at most max in all); returns the new count. One table for gpuvet_gpu_owner_info,
 * gpuvet_gpu_owner_processes and the per-process series. */
size_t metrics_owner_labels(const owner *o, const char **names, const char **values, size_t n, size_t max);
#endif
