/*
 * The history store: every check, bench, tune and watch --record run, kept in one SQLite file
 * (schema in docs/history.md).
 *
 * Where: history_default_path(): --db PATH, else $GPUVET_DB, else $XDG_DATA_HOME/gpuvet/history.db,
 * else ~/.local/share/gpuvet/history.db. Directories are created 0700, the file 0600.
 *
 * Safety: WAL mode and a 5 s busy timeout, so concurrent writers wait instead of losing runs.
 * A run is built in memory and written by history_run_finish() in one transaction: a process
 * killed before or during it leaves no trace of the run (watch --record may flush samples early
 * with history_run_flush(); such a run stays marked "incomplete" until finished, and readers hide
 * incomplete runs unless asked). A file that is not SQLite, a SQLite file of another application,
 * one from a newer gpuvet or one with a schema version no gpuvet writes (negative) is reported
 * with its path and never written to. A run killed at any
 * point leaves a journal or WAL that the next opening rolls back or recovers (through a read-write
 * connection); a file of ours that SQLite finds corrupt is moved aside by the next writer
 * (PATH.corrupt-TIMESTAMP, never deleted), which starts a new history and says so
 * (history_notice). A file gpuvet may not write (or in a directory it may not write) is opened for
 * reading as it is, unless a journal waits for a recovery, which is then reported as needing write
 * access. A FIFO or other non-regular file at the path is refused without being opened for
 * reading in blocking mode.
 *
 * Writing a run (bench, tune, watch --record, check):
 *
 *	char *err = NULL;
 *	history *h = history_open(db_opt, HISTORY_WRITE, &err);   // db_opt: --db or NULL
 *	if (!h) { gv_warning("history not stored: %s", err); free(err); ... }
 *	hist_run *r = history_run_begin(HIST_BENCH, argc, argv);  // sets host, UTC start time
 *	history_run_context_from_facts(r, f);                     // GPUs, driver, CUDA (optional)
 *	history_run_set(r, HIST_META_CUBLASLT, "13.0.0.19");     // library versions
 *	history_run_gpu_conditions(r, 0, 1980, 3201, 61, 688.5, NULL);
 *	history_run_add_result(r, &(hist_result){.name = "gemm.bf16.8192", .value = 756.2,
 *		.unit = "TFLOP/s", .better = HIST_HIGHER_BETTER, .min = 750.1, .max = 760.0,
 *		.repeats = 20, .gpu = 0, .params_json = "{\"size\":8192,\"pct_peak\":76.4}"});
 *	long long id;
 *	if (!history_run_finish(h, r, &id, &err)) { ... }        // r is freed either way
 *	history_close(h);
 *
 * The hist_run builder never fails (allocation failure exits, as everywhere in gpuvet); every
 * text argument is copied. Values that are unknown are NAN (doubles) or -1 / 0 as documented.
 */
#ifndef GPUVET_STORE_HISTORY_H
#define GPUVET_STORE_HISTORY_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"
#include "core/findings.h"

/* "gpuv" in PRAGMA application_id; the schema version is PRAGMA user_version. */
#define HISTORY_APPLICATION_ID 0x67707576
#define HISTORY_SCHEMA_VERSION 3

typedef struct history history;
typedef struct hist_run hist_run;

typedef enum { HIST_CHECK, HIST_BENCH, HIST_TUNE, HIST_WATCH, HIST_DIAG } hist_kind;
#define HIST_KIND_LAST HIST_DIAG
const char *hist_kind_name(hist_kind k); /* "check", "bench", "tune", "watch", "diag" */
bool hist_kind_parse(const char *s, hist_kind *out);

/* ------------------------------------------------------------------ opening */

/* The database path: explicit (--db) when not NULL, then $GPUVET_DB, $XDG_DATA_HOME (absolute
 * only), $HOME/.local/share. Returns a malloc'd path, or NULL when none can be formed (no HOME). */
char *history_default_path(const char *explicit_path);

typedef enum {
	HISTORY_READ,  /* the file must exist; an older schema is upgraded in place */
	HISTORY_WRITE, /* creates the directories (0700) and the file (0600) when missing */
} history_mode;

/* Opens the store at path (NULL: history_default_path(NULL)). Before anything is written, checks
 * that the file is SQLite with gpuvet's application_id (or empty), that its schema is not newer
 * than this build's, and (HISTORY_WRITE) PRAGMA quick_check, which moves a corrupt file aside;
 * migrates older schemas. On failure returns NULL and sets *err (malloc'd, names the file and
 * what to do). */
history *history_open(const char *path, history_mode mode, char **err);
void history_close(history *h);
/* What opening did that the user must be told, or NULL: a corrupt file of ours moved aside
 * ("... is corrupt (...); moved it aside to PATH.corrupt-20261201T083900Z, a new history starts
 * here"). Callers print it as a warning. */
const char *history_notice(const history *h);
const char *history_path(const history *h);
int history_schema_version(const history *h); /* user_version after migrations */

/* ------------------------------------------------------------------ writing a run */

/* Starts a run in memory: kind, UTC start time, host name, the gpuvet version and the command
 * line: argv as the command function got it (argv[0] "bench"), joined with shell quoting and
 * stored as "gpuvet bench ..."; argc 0 / argv NULL for none. Nothing touches the file. */
hist_run *history_run_begin(hist_kind kind, int argc, char *const *argv);

/* Machine context, key/value (a later set replaces). Well-known keys: */
#define HIST_META_DRIVER "driver"           /* "580.95.05" */
#define HIST_META_CUDA_DRIVER "cuda.driver" /* the driver's CUDA version, "13.0" */
#define HIST_META_CUDA_RUNTIME "cuda.runtime"
#define HIST_META_CUBLASLT "cublaslt"
#define HIST_META_CUDNN "cudnn"
#define HIST_META_NCCL "nccl"
#define HIST_META_TORCH "torch"
#define HIST_META_PYTHON "python"
#define HIST_META_KERNEL "kernel"
#define HIST_META_CPU "cpu"
void history_run_set(hist_run *r, const char *key, const char *value);
/* A one-line headline for `history list` ("2 fail, 1 warn", "bf16 756 TFLOP/s"); optional: without
 * it list shows the first results. */
void history_run_set_summary(hist_run *r, const char *summary);

/* A GPU of the machine (index as NVML numbers it). Text may be NULL when unknown. */
void history_run_add_gpu(hist_run *r, int index, const char *name, const char *uuid, const char *bus_id);
/* Conditions seen on GPU index during the run: SM and memory clocks (MHz), the highest temperature
 * (C), mean power (W), clock event reasons in words ("sw_power_cap,hw_slowdown"); NAN / NULL for
 * unknown. Adds the GPU row when history_run_add_gpu was not called for it. */
void history_run_gpu_conditions(hist_run *r, int index, double sm_clock_mhz, double mem_clock_mhz,
				double temperature_c, double power_w, const char *throttle_reasons);
/* Fills GPUs (nvml.gpu.N.name/uuid/pci_bus_id, clocks, temperature, power, clock event reasons),
 * driver, cuda.driver, kernel, python, torch and torch.cuda (python.torch.cuda) from a check fact
 * store; missing facts are skipped. */
void history_run_context_from_facts(hist_run *r, const facts *f);

typedef enum { HIST_LOWER_BETTER = -1, HIST_NEUTRAL = 0, HIST_HIGHER_BETTER = 1 } hist_direction;

typedef struct hist_result {
	const char *name;  /* dotted, stable across runs: "gemm.bf16.8192", "membw.triad" */
	double value;      /* the headline figure (the median of repeats) */
	const char *unit;  /* "TFLOP/s", "GB/s", "us", "ms", "x" (NULL: none) */
	hist_direction better;
	double min, max;   /* over repeats; set NAN when unknown (a zero-initialized struct means 0) */
	int repeats;       /* 0 when unknown */
	int gpu;           /* the GPU index it was measured on, -1 for none or several */
	const char *params_json; /* extra parameters, a JSON object as text ("{\"size\":8192}"), or NULL */
} hist_result;
/* Adds a result. (name, gpu) identifies it within a run and across runs in compare; a later add
 * with the same name and gpu replaces. */
void history_run_add_result(hist_run *r, const hist_result *res);
/* Convenience: value only; min and max unknown, repeats 0, gpu -1, no params. */
void history_run_add_value(hist_run *r, const char *name, double value, const char *unit, hist_direction better);

/* Check runs: every finding (id, severity, title, evidence, fix), and as results the counts
 * findings.fail / findings.warn / findings.info (lower is better). */
void history_run_add_findings(hist_run *r, const findings *fs);

/* watch --record: one sampled value of metric ("utilization_gpu", "temperature_c", "power_w",
 * "sm_clock_mhz", ...) for GPU index at t (Unix seconds, UTC, with fraction). */
void history_run_add_sample(hist_run *r, double t, int gpu, const char *metric, double value);
/* For long recordings: writes the run (marked incomplete) and the samples buffered so far in one
 * transaction and frees them from memory. Returns false with *err on failure (the buffered samples
 * are kept for the next attempt). */
bool history_run_flush(history *h, hist_run *r, char **err);

/* Writes the run in one transaction (BEGIN IMMEDIATE ... COMMIT, waiting up to the busy timeout
 * for other writers), marks it complete with the UTC finish time, and frees r in every case.
 * *id_out (may be NULL) gets the run id. Returns false with *err set on failure. */
bool history_run_finish(history *h, hist_run *r, long long *id_out, char **err);
/* Frees a run without writing (a run already flushed stays as incomplete). */
void history_run_discard(hist_run *r);

/* ------------------------------------------------------------------ reading */

typedef struct hist_result_row {
	char *name, *unit, *params_json; /* params_json NULL when none */
	double value, min, max;          /* NAN when unknown */
	hist_direction better;
	int repeats, gpu;
} hist_result_row;

typedef struct hist_finding_row {
	char *id, *severity, *title;
	char *evidence_json, *fix_json; /* JSON arrays of strings */
} hist_finding_row;

typedef struct hist_gpu_row {
	int index;
	char *name, *uuid, *bus_id, *throttle; /* NULL when unknown */
	double sm_clock_mhz, mem_clock_mhz, temperature_c, power_w; /* NAN when unknown */
} hist_gpu_row;

typedef struct hist_meta_row {
	char *key, *value;
} hist_meta_row;

typedef struct hist_run_row {
	long long id;
	hist_kind kind;
	char *started_utc, *finished_utc; /* ISO 8601, "2026-11-29T10:15:03.120Z"; finished NULL when incomplete */
	char *host, *command, *version, *summary;
	bool complete;
	hist_gpu_row *gpus;
	size_t ngpus;
	hist_meta_row *meta;
	size_t nmeta;
	hist_result_row *results; /* sorted by name, gpu */
	size_t nresults;
	hist_finding_row *findings;
	size_t nfindings;
	long long nsamples; /* count only; samples are read with history_samples() */
} hist_run_row;

typedef struct hist_query {
	bool any_kind;    /* false: only runs of kind */
	hist_kind kind;
	bool incomplete;  /* include incomplete runs */
	long long limit;  /* 0: all */
	bool oldest_first;
} hist_query;

/* Runs matching q (NULL: every complete run), newest first unless q->oldest_first, with all their
 * parts. Returns false with *err on a database error. Free with hist_runs_free. It holds every run
 * in memory: a read that may meet the whole history (export, report) goes through history_each. */
bool history_list(history *h, const hist_query *q, hist_run_row **out, size_t *n, char **err);

/* Called with each run in turn; the row is freed when it returns, unless the callback moves its
 * contents out (copies the struct and zeroes *r). Returning false stops the read (no error). */
typedef bool (*history_run_cb)(void *ctx, hist_run_row *r);
/* The runs of history_list one by one, read a page at a time in one read transaction: what is held
 * is one page of runs (64), whatever the history's size. False with *err on a database error. */
bool history_each(history *h, const hist_query *q, history_run_cb cb, void *ctx, char **err);
/* How many runs of each kind history_each would give for q (its limit included): counts[kind]. */
bool history_count(history *h, const hist_query *q, long long counts[HIST_KIND_LAST + 1], char **err);
/* One run by id; returns false with *err ("no run 42 in PATH") when absent. */
bool history_get(history *h, long long id, hist_run_row *out, char **err);
/* The newest complete run, of kind when kind_or_neg >= 0. */
bool history_latest(history *h, int kind_or_neg, hist_run_row *out, char **err);
void hist_run_row_free(hist_run_row *r);
void hist_runs_free(hist_run_row *v, size_t n);

/* Samples of a run in time order; callback returns false to stop. */
bool history_samples(history *h, long long run_id,
		     bool (*cb)(void *ctx, double t, int gpu, const char *metric, double value), void *ctx, char **err);

/* Named baselines: a name pointing at a run ("h200-golden" -> 17). */
bool history_baseline_set(history *h, const char *name, long long run_id, char **err);
bool history_baseline_get(history *h, const char *name, long long *run_id, char **err);
/* Calls cb for each baseline in name order. */
bool history_baseline_list(history *h, void (*cb)(void *ctx, const char *name, long long run_id, const char *set_utc),
			   void *ctx, char **err);
bool history_baseline_delete(history *h, const char *name, char **err);

/* Keeps the newest keep complete runs (of every kind together), deletes older ones and incomplete
 * runs with no sign of life (last sample, else start) for a day; runs named by a baseline are
 * kept. *deleted gets the count. */
bool history_gc(history *h, long long keep, long long *deleted, char **err);

/* ------------------------------------------------------------------ comparing */

typedef struct hist_change {
	const char *name; /* points into the rows compared */
	const char *unit;
	int gpu;
	hist_direction better;
	bool in_a, in_b;
	double a, b;      /* values (NAN when missing on that side) */
	double pct;       /* (b - a) / |a| * 100; NAN when not computable */
	double spread_pct; /* the larger of the two runs' spreads of the figure (hist_spread_pct); NAN unknown */
	bool regression;  /* worse than threshold_pct in the direction of better, and than spread_pct */
	bool improvement; /* better than threshold_pct and than spread_pct */
	bool within_spread; /* past threshold_pct either way, but within the figure's own spread: noise */
} hist_change;

/* A figure's spread over its repeats in %, as bench measures it: (max / min - 1) * 100, or
 * (max - min) / |value| * 100 where min is not above 0; NAN when the run kept no min and max. */
double hist_spread_pct(double value, double min, double max);
/* Whether a change of pct % counts past threshold_pct and past the figure's spread (NAN: not
 * known, the threshold alone decides). worse_pct is the change in the figure's bad direction. */
bool hist_change_counts(double worse_pct, double threshold_pct, double spread_pct);

/* Per result of a (the old run) and b (the new one), matched by (name, gpu), in name order;
 * results in only one run are listed with in_a / in_b false. A change within the figure's own
 * measured spread (the larger of the two runs') is neither a regression nor an improvement, however
 * far past the threshold: a figure that moved 2726% between its own repeats says nothing by
 * moving 34% between runs. Returns the number of changes in *out (malloc'd; free it, not its
 * strings) and the number of regressions. */
size_t history_compare(const hist_run_row *a, const hist_run_row *b, double threshold_pct, hist_change **out,
		       size_t *nregressions);

/* ------------------------------------------------------------------ time */

/* Now as ISO 8601 UTC with milliseconds ("2026-11-29T10:15:03.120Z"). */
char *hist_now_utc(void);
/* An ISO 8601 UTC time as local time "2026-11-29 11:15:03" into buf; the input on parse failure. */
const char *hist_utc_to_local(const char *iso, char *buf, size_t size);
#endif
