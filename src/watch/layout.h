/*
 * The live view's screen as a pure function: the terminal's size, the samples and the view's
 * state in, a frame of styled cells out (watch/frame.h). No terminal, no clock, no file is
 * touched here, so a unit test lays out any size (tests/unit/test_watch_layout.c).
 *
 * From the top: the header; a row per GPU with bars; under each, graphs of utilization and
 * memory over the span; the job doctor's verdict (--pid); the processes (watch/proc_table.h)
 * under a title naming the sort; the health messages; the footer of keys (watch/keys.h).
 *
 * The rows are shared out so that a tall terminal is used: every GPU row first (a terminal too
 * short for them shows as many as fit, keeping three process rows, and says so), then one graph
 * row per GPU while six process rows stay, then every process, then the rows still left make
 * the graphs taller (up to LAYOUT_GRAPH_MAX rows each).
 */
#ifndef GPUVET_WATCH_LAYOUT_H
#define GPUVET_WATCH_LAYOUT_H
#include <stdbool.h>

#include "health/health.h"
#include "sampler/job.h"
#include "sampler/snapshot.h"
#include "watch/frame.h"
#include "watch/keys.h"
#include "watch/view.h"

#define LAYOUT_GRAPH_MAX 48 /* a tall terminal with one GPU: most of its height */

typedef struct watch_model {
	const snapshot *snap; /* NULL: no sample yet */
	const snapshot *prev; /* the sample before, for %CPU; NULL: none yet */
	const gpu_ring *rings; /* by GPU index, for the graphs */
	int nrings;
	const health_tracker *health;
	const job *job;         /* --pid, --pod, --job; NULL: everything */
	const char *error;      /* the sampler's last error; NULL or "" none */
	const char *doctor;     /* the job doctor's running verdict; NULL none */
	const char *doctor_fix; /* its first fix; NULL none */
	bool doctor_warn;
	double interval; /* seconds between samples */
	double now;      /* now_seconds(): the graphs end here */
	const char *clock; /* the time of day for the header ("12:34:56") */
	bool utf8;         /* block characters; else ASCII */
} watch_model;

/* Lays the view out into f (its size is the terminal's) and keeps ui->scroll within range and
 * the selected GPU in view. */
void watch_layout(frame *f, const watch_model *m, watch_ui *ui);
#endif
