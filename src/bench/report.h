/*
 * What one `gpuvet bench` run measured: figures (a value with its repeats' statistics, the peak
 * it is judged against, whether the result was verified), notes on what could not run, and the
 * conditions seen during the run. Rendered as text or JSON, turned into facts for the verdict
 * rules (rules_bench.c), and stored in the history database.
 */
#ifndef GPUVET_BENCH_REPORT_H
#define GPUVET_BENCH_REPORT_H
#include <stdbool.h>
#include <stdio.h>

#include "bench/stats.h"
#include "core/facts.h"
#include "core/findings.h"
#include "core/util.h"

typedef enum { VERIFY_NONE = -1, VERIFY_FAILED = 0, VERIFY_OK = 1 } verify_state;

typedef struct bench_figure {
	char *id;    /* dotted, stable: "gemm.bf16", "memory.triad", "transfer.h2d_pinned", "launch.graph" */
	char *group; /* "gemm", "memory", "transfer", "launch", "p2p", "nccl", "cpu", "speedup" */
	char *title; /* "GEMM bf16 8192x8192" */
	char *unit;  /* "TFLOP/s", "TOP/s", "GB/s", "us", "x" */
	bool lower_is_better; /* latencies */
	bench_stats st;       /* over repeats; st.n == 0 when not measured */
	double peak;          /* same unit; 0 when unknown */
	char *peak_how;       /* how the peak was obtained */
	verify_state verified;
	char *verify_text;
	char *note;     /* skipped: why; else anything worth saying ("size 4096: ...") */
	bool skipped;   /* not measured */
	int gpu;        /* CUDA device index; -1 for the CPU or several GPUs */
	long long size; /* GEMM n, bytes moved per repeat, message size: what the figure was measured at */
	double clock_mhz; /* median SM clock during the measurement (0 unknown) */
	/* GPM counters over the timed repeats (ratios; NAN or 0 unknown: set by bench_window_evidence),
	 * the evidence that it loaded what it claims (tensor pipes in a bf16 GEMM, DRAM in triad), and
	 * the window they come from: its length and the GPU time of the repeats in it */
	double sm_active, tensor_active, dram_active;
	double activity_window_s, activity_busy_s;
	double window_sm_active, window_tensor_active, window_dram_active; /* the window's own averages */
	double pcie_tx_bps, pcie_rx_bps; /* GPM PCIe traffic over the timed repeats, bytes/s (NAN or 0 unknown) */
} bench_figure;

typedef struct bench_report {
	bench_figure *v;
	size_t n, cap;
	strlist notes; /* what could not run, in plain words */
	facts *facts;  /* conditions (layer "bench"): GPUs, libraries, monitor; figures are added by report_facts */
	double started; /* wall clock (time(NULL)) */
	double seconds; /* how long the run took */
	bool quick;
} bench_report;

void report_init(bench_report *r);
void report_free(bench_report *r);
bench_figure *report_add(bench_report *r, const char *id, const char *group, const char *unit, const char *titlefmt,
			 ...) GV_PRINTF(5, 6);
/* A figure that could not be measured, with the reason. */
bench_figure *report_skip(bench_report *r, const char *id, const char *group, const char *unit, const char *title,
			  const char *whyfmt, ...) GV_PRINTF(6, 7);
bench_figure *report_find(const bench_report *r, const char *id);
void report_note(bench_report *r, const char *fmt, ...) GV_PRINTF(2, 3);
void figure_set_note(bench_figure *f, const char *fmt, ...) GV_PRINTF(2, 3);
void figure_set_peak(bench_figure *f, double peak, const char *how);
void figure_set_verified(bench_figure *f, bool ok, const char *text);
/* median / peak in percent; NAN when either is unknown */
double figure_pct(const bench_figure *f);

/* Adds every figure to r->facts as bench.<id>.{value,min,max,spread,peak,pct_peak,verified,
 * skipped,size,clock_mhz} (docs/facts/bench.md). */
void report_facts(bench_report *r);

struct cJSON;
/* {"schema": "gpuvet.bench/1", "figures": [...], "notes": [...], "findings": [...], "facts": {...}} */
struct cJSON *report_json(const bench_report *r, const findings *fs);
/* Tables per group, then the findings. explain adds how each figure is measured. */
void report_text(FILE *out, const bench_report *r, const findings *fs, bool color, bool explain);

/* How a figure group is measured, for --explain (NULL for unknown groups). */
const char *report_explain(const char *group);
/* The groups in display order: the group id and its title for i = 0, 1, ... until NULL. */
const char *report_group_at(size_t i, const char **title);
/* The name a figure is kept under in the history: the id, with the GEMM size for GEMMs
 * ("gemm.bf16.8192"), so that figures measured at other sizes are not compared. malloc'd. */
char *report_result_name(const char *id, long long size);
#endif
