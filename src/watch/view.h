/*
 * What gpuvet watch shows, apart from the terminal: one snapshot as text (--once) or JSON
 * (--once --json, schema gpuvet.watch/1 in docs/watch.md), limited to the job a --pid follows
 * (sampler/job.h), and the per-GPU history behind the sparklines.
 */
#ifndef GPUVET_WATCH_VIEW_H
#define GPUVET_WATCH_VIEW_H
#include <stdbool.h>
#include <stdio.h>

#include "health/health.h"
#include "sampler/job.h"
#include "sampler/snapshot.h"

struct cJSON;

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
