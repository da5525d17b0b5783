/*
 * What the tune probe (data/tune_torch.py) measured, read from its JSON document (schema
 * gpuvet.tune-probe/1, docs/tune.md) or, when the document is missing or unreadable (the
 * probe was killed), from the RESULT lines it printed on stderr as it went.
 *
 * The probe's output is untrusted: every field is optional and checked (type, range, finite);
 * what does not fit is "unknown" (NAN, -1, "" or NULL), never a crash. Counts are bounded.
 */
#ifndef GPUVET_TUNE_REPORT_H
#define GPUVET_TUNE_REPORT_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

#define TUNE_NAME 40 /* model, setting, status and other short identifiers */

/* The switches of one measured configuration. */
typedef struct tune_config {
	char precision[8]; /* fp32, tf32, fp16, bf16; "" unknown */
	bool grad_scaler, channels_last, cudnn_benchmark, tf32_matmul, tf32_cudnn, compile;
} tune_config;

typedef struct tune_run {
	int id;
	char model[TUNE_NAME], device[8] /* cuda, cpu */, setting[TUNE_NAME], base[TUNE_NAME];
	char status[16]; /* ok, skipped, error, budget */
	char *reason;    /* why not ok; NULL */
	bool reference;  /* the settings of anchors/bench_models.py (not a recommendation) */
	bool reduced;    /* fewer iterations than asked, to fit the budget */
	int batch, iters, warmup, threads;
	double ms, ms_min, ms_max, peak_mib, compile_s; /* NAN when unknown */
	double gpu_util;                                /* mean % during the timed part (NVML); NAN */
	tune_config cfg;
} tune_run;

typedef struct tune_model {
	char name[TUNE_NAME], impl[TUNE_NAME]; /* torchvision, transformers, builtin */
	int batch, image_size, seq_len;        /* -1 when not applicable */
	double params;
	char *note;
} tune_model;

typedef struct tune_pipe {
	int id, workers, batch, batches, image_size;
	bool pin_memory;
	char status[16], setting[TUNE_NAME];
	char *reason;
	double samples_s, gpu_samples_s, seconds, gpu_util; /* NAN when unknown */
	tune_config cfg; /* the training step's settings */
} tune_pipe;

typedef struct tune_rank {
	int rank;
	double ms, peak_mib;
	char *error;
} tune_rank;

typedef struct tune_ddp {
	bool present;
	int id, world_size, batch_per_gpu;
	char model[TUNE_NAME], setting[TUNE_NAME], status[16];
	char *reason;
	double single_ms, ddp_ms, efficiency, memory_balance, samples_s, single_samples_s, single_peak_mib;
	tune_config cfg;
	tune_rank *ranks;
	size_t nranks;
} tune_ddp;

typedef struct tune_env {
	char *python, *executable, *torch, *torch_cuda, *gpu_name, *gpu_cc, *gpu_uuid, *torchvision, *transformers,
		*cpu, *cuda_error;
	long cudnn; /* -1 unknown */
	int gpu_count, cpu_count, cpu_threads;
	double gpu_memory_mib;
	bool cuda_available, bf16_supported;
} tune_env;

typedef struct tune_report {
	char status[16]; /* ok, cpu-only, no-torch, budget, interrupted, error, dry-run; gpuvet adds
			    timeout, crashed, unreadable */
	char *message;
	char started[32]; /* "2026-11-29T10:00:00Z" when the probe said; "" */
	tune_env env;
	double budget_s, elapsed_s;
	int image_size, seq_len;
	bool compile;
	tune_model *models;
	size_t nmodels;
	tune_run *runs;
	size_t nruns;
	tune_pipe *pipes;
	size_t npipes;
	tune_ddp ddp;
	strlist notes;
	strlist skipped; /* "what: reason" */
	bool from_lines; /* assembled from RESULT lines: the document was missing or unreadable */
} tune_report;

/* Bounds on what is read (more is ignored). */
enum { TUNE_MAX_RUNS = 512, TUNE_MAX_MODELS = 16, TUNE_MAX_PIPES = 64, TUNE_MAX_RANKS = 256, TUNE_MAX_NOTES = 64 };

/* Reads the probe's document (doc, len bytes; may be NULL or garbage) and, when it does not
 * parse as a tune-probe document, the RESULT lines' JSON (each without the "RESULT " prefix;
 * may be NULL). Never NULL: a report that holds nothing says so in status "unreadable". */
tune_report *tune_report_parse(const char *doc, size_t len, const strlist *result_lines);
void tune_report_free(tune_report *r);

/* Lookups; NULL when absent. */
const tune_run *tune_find_run(const tune_report *r, const char *model, const char *device, const char *setting);
const tune_model *tune_find_model(const tune_report *r, const char *name);
/* Sets status and message (replacing them). */
void tune_report_set_status(tune_report *r, const char *status, const char *fmt, ...) GV_PRINTF(3, 4);
/* True when at least one GPU step finished. */
bool tune_report_has_gpu(const tune_report *r);
#endif
