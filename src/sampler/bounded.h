/*
 * One take from a sample source under a deadline. After the first contact NVML is called in
 * this process, and a device query can hang as long as the driver does: `watch --once` must end
 * by itself, with the deadline `check` gives NVML. The take runs in a thread of its own; when it
 * does not finish in time it is abandoned, stuck where it is, and the caller is told so: it must
 * not touch the source again, nor call anything that takes NVML's locks (nvmlShutdown, exit
 * handlers), and ends with _exit.
 */
#ifndef GPUVET_SAMPLER_BOUNDED_H
#define GPUVET_SAMPLER_BOUNDED_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/sampler.h"

/* src->take within seconds. NULL with err when it failed or did not finish (*stuck true: the
 * thread still runs the take). */
snapshot *sample_take_within(const sample_source *src, double seconds, char *err, size_t errsize, bool *stuck);
#endif
