/*
 * The GPU while the tune probe runs, through the one NVML sampler (sampler/sampler.h):
 * utilization for the input-pipeline verdict, and the clocks, temperature, power and clock
 * event reasons of the timed parts, kept with the result (a slow step on a throttled GPU says
 * so). The probe reports its GPU's UUID; the sampler reads that GPU. Everything is optional:
 * without NVML the sampler does not open and tune reports no utilization.
 */
#ifndef GPUVET_TUNE_SAMPLER_H
#define GPUVET_TUNE_SAMPLER_H
#include <stdbool.h>

typedef struct tune_sampler tune_sampler;

/* NULL when NVML cannot be loaded or initialized (*why says why; may be NULL). */
tune_sampler *tune_sampler_open(const char **why);
/* Reads the GPU with this UUID ("GPU-..."); NULL or not found: NVML's device 0. */
void tune_sampler_select(tune_sampler *s, const char *uuid);
/* Takes one sample; *pct gets the utilization in percent (NVML's rate: the share of the last
 * sample period in which a kernel ran). False when it cannot be read. */
bool tune_sampler_read(tune_sampler *s, double *pct);

typedef struct tune_conditions {
	int index;          /* NVML's index of the GPU sampled; -1 when none */
	int samples;
	double sm_clock_mhz, mem_clock_mhz, power_w; /* means; NAN unknown */
	double temperature_max_c;                    /* NAN unknown */
	char reasons[160];  /* clock event reasons seen, "sw_power_cap,hw_slowdown"; "" none */
	bool slowed;        /* a reason that slows the GPU against the user's will was seen */
	char name[96], uuid[96];
} tune_conditions;
/* What the samples taken so far saw. */
void tune_sampler_conditions(const tune_sampler *s, tune_conditions *out);
void tune_sampler_close(tune_sampler *s);
#endif
