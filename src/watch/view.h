/*
 * What gpuvet watch shows, apart from the terminal: the job a --pid follows (the process and
 * its descendants), one snapshot as text (--once) or JSON (--once --json, schema
 * gpuvet.watch/1 in docs/watch.md), and the per-GPU history behind the sparklines.
 */
#ifndef GPUVET_WATCH_VIEW_H
#define GPUVET_WATCH_VIEW_H
#include <stdbool.h>
#include <stdio.h>

#include "health/health.h"
#include "sampler/snapshot.h"

struct cJSON;

/* A job: a process and its descendants (a torchrun and its workers), from /proc (--root); or
 * every process of a Kubernetes pod or a Slurm job (fleet/attrib.h: --pod, --job), with theirs. */
#define JOB_MAX_PIDS 256
typedef struct job {
	unsigned root;  /* the process followed; for a pod or Slurm job its lowest pid */
	bool alive;     /* the root process exists (a pod or job: one of its processes does) */
	size_t n;
	unsigned pids[JOB_MAX_PIDS];
	char pod[256];  /* --pod: name, namespace/name or UID; "" */
	char slurm[48]; /* --job: ID or ID.STEP; "" */
} job;
void job_scan(job *j, unsigned root);
/* Every process whose owner matches pod (or, when pod is NULL or "", the Slurm job slurm). */
void job_scan_owner(job *j, const char *pod, const char *slurm);
/* The same job again: its processes now (after job_scan or job_scan_owner). */
void job_rescan(job *j);
/* "process 4242", "pod research/trainer", "Slurm job 4242" */
const char *job_text(const job *j, char *buf, size_t size);
bool job_has(const job *j, unsigned pid);
/* Whether the GPU runs a process of the job; the job's memory on it (bytes, NAN when unknown). */
bool job_on_gpu(const job *j, const gpu_sample *g, double *mem_bytes);

typedef struct view_opts {
	const job *job; /* NULL: every GPU and process */
	bool color;
} view_opts;

/* "12.3 GiB"; "n/a" for a reading without a value. */
const char *fmt_bytes(char *buf, size_t size, sval v);
/* The value as "%.0f<unit>" or "n/a". */
const char *fmt_val(char *buf, size_t size, sval v, const char *unit);

/* A GPU name that fits width columns: as is, else without its "NVIDIA " prefix, else cut with a
 * '~' at the end. Never wider than width, so the next column keeps its gap. */
const char *view_gpu_name(char *buf, size_t size, const char *name, int width);

void view_text(FILE *out, const snapshot *s, const health_tracker *h, const view_opts *o);
struct cJSON *view_json(const snapshot *s, const health_tracker *h, const view_opts *o);
/* NVLink of one GPU (watch/view_nvlink.c): a line under its row; an "nvlink" member of its object. */
void view_nvlink_text(FILE *out, const gpu_sample *g);
void view_nvlink_json(struct cJSON *x, const gpu_sample *g);

/* Per-GPU rings of recent values for the sparklines. */
#define RING_LEN 900
typedef struct gpu_ring {
	double t[RING_LEN];
	float util[RING_LEN]; /* 0..1, NAN when unknown */
	float mem[RING_LEN];  /* used / total */
	size_t head, n;
} gpu_ring;
void ring_push(gpu_ring *r, double t, const gpu_sample *g);
/* Fills out[0..width) with the mean of each column's time bucket over the last span seconds
 * ending at now (NAN where no sample fell); which = 0 utilization, 1 memory. */
void ring_series(const gpu_ring *r, double now, double span, int width, int which, float *out);
#endif
