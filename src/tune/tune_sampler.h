/*
 * GPU utilization while the tune probe runs, through NVML (loaded with dlopen; GPUVET_NVML_LIB
 * names another library). The probe reports its GPU's UUID; the sampler reads that GPU.
 * Everything is optional: without NVML the sampler does not open and tune reports no
 * utilization.
 */
#ifndef GPUVET_TUNE_SAMPLER_H
#define GPUVET_TUNE_SAMPLER_H
#include <stdbool.h>

typedef struct tune_sampler tune_sampler;

/* NULL when NVML cannot be loaded or initialized (*why says why; may be NULL). */
tune_sampler *tune_sampler_open(const char **why);
/* Reads the GPU with this UUID ("GPU-..."); NULL or unknown: NVML's device 0. */
void tune_sampler_select(tune_sampler *s, const char *uuid);
/* Current utilization in percent (NVML's GPU utilization rate: the share of the last sample
 * period in which a kernel ran). */
bool tune_sampler_read(tune_sampler *s, double *pct);
void tune_sampler_close(tune_sampler *s);
#endif
