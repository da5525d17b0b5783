/*
 * A bounded walk of the examined machine's disk for copies of the CUDA libraries (the "clean up
 * leftovers" step of every set-up guide): depth, entry count and time limits; /proc, /sys, /dev,
 * /run, container storage and network or virtual file systems are skipped; symlinked directories
 * are not followed.
 */
#ifndef GPUVET_LIBSCAN_H
#define GPUVET_LIBSCAN_H
#include <stdbool.h>
#include <stdio.h>

#include "core/util.h"
#include "toolkit/cudalibs.h"

typedef struct libscan_opts {
	int max_depth;       /* directories below a start directory (default 16) */
	long max_entries;    /* directory entries read in all (default 2,000,000) */
	double time_limit_s; /* default 30 */
	FILE *progress;      /* a terminal to draw progress on, or NULL */
} libscan_opts;

typedef struct libscan_result {
	cuda_libs libs;   /* the copies found (names: every path seen that leads to each) */
	long entries;     /* directory entries read */
	long dirs;        /* directories opened */
	double seconds;
	bool truncated;   /* a limit stopped the walk */
	const char *limit_hit; /* "time", "entries", "depth" or NULL */
	strlist skipped;  /* mount points and directories not entered, with why */
} libscan_result;

void libscan_defaults(libscan_opts *o);
/* Walks the start directories (paths of the examined machine; NULL or none: /usr, /opt, /home,
 * /root, /srv and HOME). */
void libscan_run(const strlist *starts, const libscan_opts *o, libscan_result *r);
void libscan_free(libscan_result *r);
#endif
