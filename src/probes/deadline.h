/*
 * Running a probe body with a deadline. Driver calls can hang for minutes (nvmlInit or cuInit
 * on a GPU that fell off the bus, a wedged driver): the body runs in its own thread on a private
 * fact store, merged when it finishes in time. On timeout the thread is abandoned (it frees its
 * store if it ever returns) and the caller reports the timeout, so `gpuvet check` always ends.
 */
#ifndef GPUVET_PROBES_DEADLINE_H
#define GPUVET_PROBES_DEADLINE_H
#include <stdbool.h>

#include "probes/probes.h"

/* Runs body(private facts, o); true when it finished within seconds (its facts merged into f). */
bool probe_run_with_deadline(facts *f, void (*body)(facts *, const probe_opts *), const probe_opts *o,
			     double seconds);
#endif
