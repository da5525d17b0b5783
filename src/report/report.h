/*
 * gpuvet report: one self-contained HTML page (inline CSS and SVG, no script, no fetch) from the
 * history database and/or given JSON documents of check, bench, tune and history export.
 *
 * Every input becomes a run in the history's own JSON form (docs/history.md, gpuvet.history/1),
 * so the page is drawn from one model whatever it was read from:
 *
 *	report_data *d = report_data_new();
 *	report_add_history(d, h, 200, &err);                  // the newest 200 runs of a database
 *	report_add_file(d, "bench.json", fp, max, &err);      // or documents, in any order
 *	report_write_html(stdout, d, &(report_opts){.threshold_pct = 5});
 *	report_data_free(d);
 *
 * Memory is bounded whatever the inputs' size: the page keeps the newest REPORT_RUNS_MAX runs of
 * everything read (an older run is counted, then freed), a history is read a page of runs at a
 * time, a history export run by run (report/runstream.h), and samples only for the recordings
 * drawn.
 */
#ifndef GPUVET_REPORT_REPORT_H
#define GPUVET_REPORT_REPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "store/history.h"

typedef struct report_data report_data;

/* The runs a page keeps and draws at most: the newest of all it read. The page says how many it
 * left out; its counts of runs are of all. */
#define REPORT_RUNS_MAX 2000

typedef struct report_opts {
	const char *title;    /* NULL: "gpuvet report: HOST" */
	double threshold_pct; /* a change worse than this is a regression, as `history compare` */
	const char *generated_utc; /* NULL: now (tests pass a fixed time) */
} report_opts;

report_data *report_data_new(void);
void report_data_free(report_data *d);

/* Every complete run of the database (newest limit of them, 0 for all; counted all, the newest
 * REPORT_RUNS_MAX kept), with the samples of the watch --record runs drawn. False with *err
 * (malloc'd) on a database error. */
bool report_add_history(report_data *d, history *h, long long limit, char **err);
/* One JSON document: gpuvet.check/1, gpuvet.bench/1, gpuvet.tune/1, gpuvet.history/1 (every run
 * in it) or gpuvet.history.samples/1 (attached to its run, else a watch run of its own). name is
 * shown as the source. False with *err naming the file and what is wrong. */
bool report_add_document(report_data *d, const char *name, const char *text, size_t len, char **err);
/* A document read from in: a gpuvet.history/1 document whose first member is its schema (as
 * gpuvet writes every one) run by run, whatever its size; any other whole, when not larger than
 * max bytes. False with *err naming the file and what is wrong. */
bool report_add_file(report_data *d, const char *name, FILE *in, size_t max, char **err);
/* One run object of the history's form (owned by d from now). */
struct cJSON;
void report_add_run(report_data *d, const char *name, struct cJSON *run);
/* Runs kept (drawn), and runs read (counted): more read than kept when some were left out. */
size_t report_run_count(const report_data *d);
size_t report_runs_read(const report_data *d);
/* The history could not be read (why: the message naming the file): the page is made from the
 * documents alone and says so at its top. */
void report_history_unread(report_data *d, const char *why);

void report_write_html(FILE *out, const report_data *d, const report_opts *o);
#endif
