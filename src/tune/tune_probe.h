/*
 * Runs the tune probe (data/tune_torch.py, embedded) with a Python interpreter as a child:
 * argv, never a shell; the script written to a private temporary directory; a time limit a
 * little over the probe's own budget; bounded output. The probe dies with gpuvet (even killed by
 * SIGKILL: core/proc_stream.h), and the directory of a run that died is removed by the next. While it runs, its stderr protocol
 * (PROGRESS, MARK, RESULT lines; data/tune_torch.py describes it) drives a progress line on the
 * terminal and the GPU-utilization sampling between MARK begin and MARK end.
 */
#ifndef GPUVET_TUNE_PROBE_H
#define GPUVET_TUNE_PROBE_H
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "core/util.h"
#include "tune/tune_report.h"
#include "tune/tune_sampler.h"

/* ---- GPU utilization per timed part (MARK begin N ... MARK end N) ---- */
typedef struct tune_util_mark {
	int id;
	double sum, max;
	int n;
} tune_util_mark;

typedef struct tune_util_log {
	tune_util_mark *v;
	size_t n, cap;
	long open; /* index in v of the mark being sampled, -1 when none */
} tune_util_log;

void tune_util_init(tune_util_log *l);
void tune_util_begin(tune_util_log *l, int id); /* closes any open mark */
void tune_util_end(tune_util_log *l, int id);
void tune_util_sample(tune_util_log *l, double pct); /* ignored when no mark is open */
bool tune_util_mean(const tune_util_log *l, int id, double *mean);
/* Fills gpu_util of the runs and pipeline configurations by their id. */
void tune_util_apply(const tune_util_log *l, tune_report *r);
void tune_util_free(tune_util_log *l);

/* ---- the stderr protocol ---- */
typedef struct tune_stream {
	int step, steps;    /* from the last PROGRESS line */
	char label[128];
	strlist results;    /* RESULT lines' JSON, in order */
	size_t results_bytes;
	strlist tail;       /* the last free-text lines (warnings, a traceback) */
	size_t free_lines;  /* free-text lines seen in all */
	tune_util_log util;
	char gpu_uuid[96];  /* from the env RESULT, for the sampler */
	bool echo;          /* print free-text lines to stderr as they come (-v) */
	bool progress_shown;
} tune_stream;

/* Removes TMP/gpuvet-tune-* directories of runs that died: ours, whose lock nobody holds (or
 * without a lock and a day old), holding only what a run writes. Returns how many. */
int tune_remove_stale_dirs(const char *tmp);

void tune_stream_init(tune_stream *s);
/* One stderr line of the probe. Returns 1 for PROGRESS, 2 for RESULT env (gpu_uuid set), else 0. */
int tune_stream_line(tune_stream *s, const char *line);
void tune_stream_free(tune_stream *s);
/* The free-text tail as one string (last lines, newline-separated); caller frees. */
char *tune_stream_tail(const tune_stream *s, size_t max_lines);

/* ---- the run ---- */
typedef struct tune_probe_opts {
	const char *python;      /* interpreter (path or name on PATH) */
	const strlist *args;     /* the script's arguments (--budget is added from budget_s) */
	double budget_s;
	bool progress;           /* draw a progress line on stderr */
	bool echo;               /* copy the probe's free-text stderr to ours */
	volatile sig_atomic_t *stop;
	tune_sampler *sampler;   /* NULL: no utilization figures */
	const char *save_raw;    /* write the probe's stdout here; NULL */
} tune_probe_opts;

/* Runs the probe and returns what it measured (never NULL). The status says what went wrong
 * when nothing could be read: "no-python" (the interpreter does not start), "crashed",
 * "timeout", "interrupted", "unreadable" (with the probe's last stderr lines in the message). */
tune_report *tune_probe_run(const tune_probe_opts *o);

/* The interpreter to use: --python, else the active virtualenv ($VIRTUAL_ENV/bin/python), else the
 * active conda environment ($CONDA_PREFIX/bin/python), else python3 on PATH. *why says which. */
char *tune_pick_python(const char *opt, const char **why);
#endif
