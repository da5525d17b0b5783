/*
 * The live terminal view of gpuvet watch (ncurses): the samples, the keys (watch/keys.h) and the
 * terminal. What the screen shows is laid out without a terminal (watch/layout.h) into a frame
 * of cells, which this paints.
 *
 * Painted into ncurses' virtual screen and sent with one doupdate per frame, so only what
 * changed travels (no flicker, fine over ssh); a resize repaints the whole layout.
 */
#ifndef GPUVET_WATCH_TUI_H
#define GPUVET_WATCH_TUI_H
#include <stdbool.h>

#include "health/health.h"
#include "sampler/sampler.h"
#include "watch/view.h"

typedef struct tui_opts {
	sample_source src;
	double interval;
	health_tracker *health;
	job *job;          /* --pid: refreshed every sample; NULL for everything */
	bool color;
	/* called with every good snapshot (watch --record) */
	void (*on_sample)(void *ctx, const snapshot *s);
	void *on_sample_ctx;
	double max_seconds; /* > 0: quit after this long (tests) */
	/* --pid: the job doctor's running verdict, drawn above the health messages when it has one */
	const struct doctor_live *doctor;
} tui_opts;

/* Runs until q, SIGINT/SIGTERM or max_seconds. Returns 0, or -1 when the terminal could not be
 * set up. */
int tui_run(const tui_opts *o);
#endif
