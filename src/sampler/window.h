/*
 * The GPM counters over one measured window, as evidence that a benchmark loaded what it claims
 * (tensor pipes in a bf16 GEMM, DRAM in triad): a GPM sample before the work and one after it,
 * nothing in between (one nvmlGpmSampleGet is ~40 us); bench takes it over repeats of the
 * operation after the timed ones, with idle settles around it (bench_evidence: a sample shows
 * the counters some tens of ms late). GPM metrics between two samples are averages over that
 * interval. NVML wants the two samples at least 100 ms apart
 * (GV_GPM_MIN_INTERVAL): a shorter window is padded with idle time before its end sample.
 *
 * The window also holds what is not measured: the rests between repeats, the padding, the host's
 * gaps. The GPU is idle then, so the activity of the timed work itself is the window's average
 * times window / busy, where busy is the GPU time the repeats took (their events): that is the
 * figure the evidence shows. The window has a GPM sampling state of its own, apart from any
 * sampler's, so it never shortens another reader's interval.
 */
#ifndef GPUVET_SAMPLER_WINDOW_H
#define GPUVET_SAMPLER_WINDOW_H
#include <stdbool.h>
#include <stddef.h>

#include "nvidia/gpm_fields.h"

typedef struct gpm_window gpm_window;

typedef struct gpm_evidence {
	double window_s; /* between the two samples */
	double busy_s;   /* GPU time of the timed work inside it, as the caller measured it */
	double window[GV_GPM_N]; /* averages over the whole window, base units (gpm_fields.h); NAN unknown */
	double busy[GV_GPM_N];   /* the same over the busy time: window x window_s / busy_s, ratios at most 1 */
} gpm_evidence;

/* A window on the GPU of NVML index `index` (NVML initialised). NULL with why when the GPU has
 * no GPM (not Hopper or newer, MIG, an old driver). */
gpm_window *gpm_window_open(unsigned index, char *why, size_t n);
/* The first sample, right before the work. False when it failed. */
bool gpm_window_begin(gpm_window *w);
/* The last sample, after the work (after idle padding up to GV_GPM_MIN_INTERVAL),
 * and the counters over the window. False (out all NAN) without a begin or when a call failed. */
bool gpm_window_end(gpm_window *w, double busy_s, gpm_evidence *out);
void gpm_window_close(gpm_window *w);

/* From window averages to busy-time averages (out->window, window_s and busy_s set): pure. */
void gpm_evidence_scale(gpm_evidence *e);
#endif
