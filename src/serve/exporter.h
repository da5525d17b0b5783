/*
 * The exporter's state, shared by the HTTP server and the textfile writer: a sampler thread
 * takes a snapshot every interval, updates the health rules and renders the metrics body once;
 * a checker thread runs the check command's probes and rules on a slower interval. A scrape
 * only takes a reference to the current body and adds the few status lines (sample age,
 * sampler up) computed at that moment, so it never waits on NVML, and a scrape while the
 * sampler fails or hangs serves the last good snapshot with its age.
 */
#ifndef GPUVET_SERVE_EXPORTER_H
#define GPUVET_SERVE_EXPORTER_H
#include <stdbool.h>
#include <stddef.h>

#include "expo/gzip.h"
#include "sampler/sampler.h"
#include "serve/metrics.h"

typedef struct exporter_opts {
	double interval;       /* seconds between samples */
	bool dcgm, dcgm_model_name, processes; /* metrics_input */
	size_t process_series_max;              /* metrics_input; 0: the default */
	const char *hostname;
	double check_interval; /* seconds between checks; 0: no check */
	bool check_full;       /* the check's cuInit and Python probes too */
	const health_cfg *health; /* NULL: defaults */
	bool verbose;          /* sampler errors on stderr (each distinct one once) */
} exporter_opts;

typedef struct exporter exporter;

/* A rendered body, shared by the scrapes that send it. */
typedef struct expo_body {
	int refs; /* atomic */
	char *text, *om;
	size_t text_len, om_len;
	/* each compressed by the first scrape that asks for gzip (expo/gzip.h); the HTTP event loop
	 * alone touches them, the freeing excepted */
	expo_deflated text_gz, om_gz;
} expo_body;

/* Starts the sampler thread (its first sample right away) and the checker thread. */
exporter *exporter_start(const exporter_opts *o, sample_source src);
/* An exporter without threads: exporter_tick takes the samples (textfile --once, tests); the
 * check, when asked for, runs once here. */
exporter *exporter_new_unthreaded(const exporter_opts *o, sample_source src);
/* Tells the threads to stop and wakes them; returns at once. Called before the children are
 * killed (SIGTERM), so that a check whose child dies of that kill is not run again in-process. */
void exporter_request_stop(exporter *ex);
/* Stops the threads and frees; true. A thread that does not end within 0.8 s (a hung driver call)
 * is left running and nothing is freed (false): the process is about to exit, and the sample
 * source must not be closed under the thread either. */
bool exporter_stop(exporter *ex);
/* Runs one sample and render in the caller's thread (textfile mode, tests). */
void exporter_tick(exporter *ex);
/* Runs the check's probes and rules in the caller's thread. */
void exporter_run_check(exporter *ex);

/* The current body with a reference (NULL before anything was rendered), and the status at
 * this moment. */
expo_body *exporter_body(exporter *ex, metrics_status *st);
void expo_body_unref(expo_body *b);
/* The whole exposition in one buffer (status first, then the body): for --textfile. */
char *exporter_render_all(exporter *ex, expo_format fmt, size_t *len);
/* Whether the sampler thread made an attempt recently (liveness for /healthz); why when not. */
bool exporter_alive(exporter *ex, char *why, size_t size);
/* Last sampler error ("" when the last sample worked). */
void exporter_last_error(exporter *ex, char *buf, size_t size);
#endif
