/*
 * How busy a GPU is (ratio 0-1): GPM's SM active where it was read, else NVML's utilization (any
 * kernel running counts there); NAN when neither is known. The one busy measure of the clock and
 * link rules, watch's health, the job doctor and the window summary's phases (sampler/summary.h).
 * Its own header: health/conditions.h (a layer up) declares its rules on it without the sampler's
 * types.
 */
#ifndef GPUVET_SAMPLER_BUSY_H
#define GPUVET_SAMPLER_BUSY_H
double gpu_busy(double sm_active, double util);
#endif
