/* `gpuvet tune` output: the text report and the gpuvet.tune/1 JSON document (docs/tune.md). */
#ifndef GPUVET_TUNE_RENDER_H
#define GPUVET_TUNE_RENDER_H
#include <stdbool.h>
#include <stdio.h>

#include "tune/tune_advice.h"
#include "tune/tune_report.h"
#include "tune/tune_sampler.h"

typedef struct tune_render_opts {
	bool color;
	bool verbose;     /* min/max, iterations, configs of every run */
	const char *date; /* "2026-12-01": the table's date column */
	const tune_conditions *cond; /* the GPU during the timed steps (NVML); NULL */
} tune_render_opts;

void tune_render_text(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o);
/* Caller frees with cJSON_Delete. */
struct cJSON *tune_render_json(const tune_report *r, const tune_advice *a, const tune_render_opts *o);
#endif
