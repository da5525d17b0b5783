/*
 * From what the tune probe measured to what to do: each setting's gain over the run it changes,
 * the CPU vs GPU table, recommendations ranked by measured gain with the code to add, the input
 * pipeline's verdict, DDP scaling, and a verdict against the figures the knowledge base holds
 * for this GPU class (data/tune_expect.csv). Pure: no I/O.
 */
#ifndef GPUVET_TUNE_ADVICE_H
#define GPUVET_TUNE_ADVICE_H
#include <stdbool.h>
#include <stddef.h>

#include "kb/kb.h"
#include "tune/tune_report.h"

/* A gain is recommended from this speedup up; under 1/this it is a loss. Medians of 10 steps
 * on a GPU vary by 1-2% between runs, so smaller differences are noise. */
#define TUNE_GAIN_MIN 1.05
/* A setting that saves this much memory without costing speed is worth it too. */
#define TUNE_MEMORY_MIN 0.20
/* Verdict: a step time within this fraction of the expected one is "as expected". */
/* Defaults where data/tune_expect.csv gives no tolerance for a row: a step more than 10% slower
 * than expected is a finding; a peak memory off by more than 15% "differs". */
#define TUNE_VERDICT_TOLERANCE 0.10
#define TUNE_MEMORY_TOLERANCE 0.15

typedef struct tune_setting_info {
	const char *key;   /* as the probe names it: tf32, amp_bf16, ... */
	const char *title; /* "AMP bf16" */
	const char *group; /* precision, layout, cudnn, compile, pipeline, reference */
	const char *why;   /* one line: what it does */
	const char *code;  /* the lines to add (newline-separated) */
} tune_setting_info;

/* NULL for a setting gpuvet does not know (its runs are still shown). */
const tune_setting_info *tune_setting(const char *key);
/* The TF32 lines differ by PyTorch version (the allow_tf32 flags are deprecated from 2.9). */
const char *tune_setting_code(const tune_setting_info *s, const char *torch_version);

typedef struct tune_gain {
	const tune_run *run, *base;
	double speedup;    /* base ms / run ms */
	double mem_saving; /* 1 - run peak / base peak; NAN when either is unknown */
} tune_gain;

/* One model: a row of the table, and its settings' gains. */
typedef struct tune_summary {
	const char *model;
	const tune_model *meta; /* NULL when the probe did not describe it */
	int batch;
	const tune_run *gpu_fp32, *cpu_fp32, *best; /* best: fastest finished GPU run (not reference) */
	double speedup;       /* CPU fp32 ms / GPU fp32 ms */
	double tuned_speedup; /* CPU fp32 ms / best ms */
	double tuned_gain;    /* GPU fp32 ms / best ms */
	char best_desc[160];  /* "AMP bf16 + channels_last + cudnn.benchmark" */
	tune_gain *gains;
	size_t ngains;
} tune_summary;

typedef struct tune_rec_model {
	const char *model, *base_setting;
	double speedup, mem_saving;
} tune_rec_model;

typedef struct tune_rec {
	const tune_setting_info *info;
	double score;      /* geometric mean of the speedups over the models that measured it */
	double mem_saving; /* largest saving among the models; NAN */
	tune_rec_model per[TUNE_MAX_MODELS];
	size_t nper;
	bool alternative;  /* another precision was chosen first */
	bool for_memory;   /* recommended for the memory it saves, not for speed */
	char *code;        /* the lines to add, filled in */
	char *detail;      /* pipeline: "num_workers=8, pin_memory=True" */
} tune_rec;

typedef struct tune_verdict {
	const char *model, *setting, *metric, *source, *gpu;
	int batch;
	double measured, expected;
	double ratio;     /* step_ms: expected / measured (under 1: slower); peak_mib: measured / expected */
	double tolerance; /* the fraction either way that is still "as expected" (the row's, else the default) */
	const char *word; /* "as expected", "slower than expected", "faster than expected", "differs" */
	bool bad;         /* a step more than `tolerance` slower than expected */
} tune_verdict;

typedef struct tune_pipeline_view {
	bool present;
	const tune_pipe *dflt, *best; /* DataLoader defaults (0 workers, no pinning), fastest */
	double gain;                  /* best / default samples per second */
	double gpu_samples_s;         /* the GPU's own rate with the data already there */
	double dflt_fraction, best_fraction; /* of gpu_samples_s */
	bool starves_default, starves_best;  /* under 90% of what the GPU takes */
} tune_pipeline_view;

typedef struct tune_advice {
	tune_summary *sums;
	size_t nsums;
	tune_rec *recs; /* ranked: recommended first by score, alternatives after */
	size_t nrecs;
	tune_verdict *verdicts;
	size_t nverdicts;
	tune_pipeline_view pipe;
	const char *ddp_word; /* "scales well" ...; NULL without a DDP figure */
	bool any_bad_verdict;
} tune_advice;

tune_advice *tune_advise(const tune_report *r, const kb *k);
void tune_advice_free(tune_advice *a);

/* "1.75x faster, 46% less memory" (no memory part when unknown or under 2%). */
void tune_format_gain(char *out, size_t n, double speedup, double mem_saving);
/* "AMP bf16 + channels_last" for a measured configuration. */
void tune_describe_config(char *out, size_t n, const tune_config *c);
#endif
