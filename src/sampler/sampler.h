/*
 * The sampler: a snapshot of every GPU through NVML (nvidia/nvml.h) each time it is asked,
 * Xid events from NVML's event API (a thread of its own) and from the kernel log, and the
 * processes holding each GPU with their name and command line from /proc.
 *
 * A reading NVML cannot give (old driver, not supported) is n/a; a call that fails is an error
 * for that reading only. The sampler never stops on errors: a take that gets nothing from any
 * GPU fails (the caller keeps its last good snapshot) and the next take tries again, reopening
 * NVML after repeated failures.
 */
#ifndef GPUVET_SAMPLER_H
#define GPUVET_SAMPLER_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/snapshot.h"

typedef struct sampler sampler;

/* Where snapshots come from for a consumer (serve, watch): NVML through sampler_lazy_take, a
 * script in the tests. take returns NULL with err on failure; it may block (a hung driver). */
typedef struct sample_source {
	void *ctx;
	snapshot *(*take)(void *ctx, char *err, size_t errsize);
} sample_source;

typedef struct sampler_opts {
	bool no_events;      /* no NVML event thread (watch --once) */
	bool no_kmsg;        /* do not follow the kernel log */
	const char *kmsg;    /* kernel log to follow; default /dev/kmsg */
	int health_every;    /* read ECC/retired/remapped counters every Nth take (default 10) */
	int identity_every;  /* re-read identity and limits every Nth take (default 60) */
	bool no_gpm;         /* do not read GPM activity counters (measuring their cost) */
	int processes_every; /* read the processes every Nth take (default 1: every take); between,
				the last list stays */
} sampler_opts;

/* Loads and initialises NVML. NULL with err when it cannot (no library, init failed, no GPUs
 * is not an error: a sampler with 0 GPUs). */
sampler *sampler_open(const sampler_opts *o, char *err, size_t errsize);
/* Takes a snapshot. NULL with err when nothing could be read. */
snapshot *sampler_take(sampler *s, char *err, size_t errsize);
/* The next take reads the health counters (ECC, retired pages, remapped rows, PCIe replays)
 * whatever health_every says: a before-and-after comparison asks for them. */
void sampler_want_health(sampler *s);
/* What the event sources are doing, for humans ("NVML events; kernel log: /dev/kmsg: EACCES"). */
const char *sampler_sources(const sampler *s);
void sampler_close(sampler *s);

/* A sampler for long-running commands (serve): opens NVML on the first take and tries again
 * (every 10 s) while it cannot, so an exporter started before the driver comes up recovers;
 * after 30 failed takes in a row it shuts NVML down and opens it afresh. Zero-initialise, set
 * o, call sampler_lazy_take; sampler_lazy_close at the end. */
typedef struct sampler_lazy {
	sampler_opts o;
	sampler *s;
	double next_open;
	int failures;
} sampler_lazy;
snapshot *sampler_lazy_take(sampler_lazy *l, char *err, size_t errsize);
void sampler_lazy_close(sampler_lazy *l);
#endif
