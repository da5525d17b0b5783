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

typedef struct metrics_input {
	const snapshot *snap;          /* last good snapshot; NULL before the first */
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

/* For the writers of metrics.c and metrics_nvlink.c: one GPU's labels, gpuvet's (gpu, uuid) or,
 * with dcgm, dcgm-exporter's (gpu, UUID, pci_bus_id, device, Hostname, DCGM_FI_DRIVER_VERSION,
 * modelName with --dcgm-model-name), then the pod or Slurm job that holds it */
typedef struct gpu_labels {
	char index[16], device[24];
	const char *names[12];
	const char *values[12];
	size_t n;
} gpu_labels;
void metrics_gpu_labels(gpu_labels *l, const gpu_sample *g, bool dcgm, const metrics_input *in);
/* Declares a family before its first sample: once per *declared. */
void metrics_family_once(expo *e, bool *declared, const char *name, metric_type type, const char *help);
/* The NVLink families (serve/metrics_nvlink.c), called by metrics_render. */
void metrics_render_nvlink(expo *e, const snapshot *s, const metrics_input *in);
void metrics_render_status(expo *e, const metrics_status *st);
#endif
