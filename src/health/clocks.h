/*
 * One rule for "clocks held back" (gpu.throttled), used by check (rules/rules_gpu.c), watch and
 * serve (health/health.c), so the three never disagree:
 *
 *   hardware slowdown or power brake            unhealthy
 *   thermal slowdown (software or hardware)     degraded
 *   software power cap with the enforced limit
 *     below 95% of the board's default           degraded (the limit was lowered)
 *   software power cap while the GPU is busy     info: the expected state at full load
 *     (utilization or SM active >= 50%)
 *   software power cap while it is not busy      degraded (clocks low for no load)
 *   software power cap, busy unknown             info
 *   idle, application/display clocks, sync boost none
 *
 * Pure: the reasons bit mask (NVML's), how busy the GPU is (ratio 0-1, NAN when unknown) and
 * the power limits in W (NAN when unknown).
 */
#ifndef GPUVET_HEALTH_CLOCKS_H
#define GPUVET_HEALTH_CLOCKS_H
#include <stdbool.h>

typedef enum { CLOCKS_NONE = 0, CLOCKS_INFO, CLOCKS_DEGRADED, CLOCKS_UNHEALTHY } clocks_level;

typedef struct clocks_verdict {
	clocks_level level;
	unsigned long long reasons; /* the bits that count for the verdict */
	bool power_capped_busy;     /* the info case */
	bool limit_lowered;
	const char *action;         /* what to do; NULL for none */
} clocks_verdict;

#define CLOCKS_BUSY 0.50
#define CLOCKS_LIMIT_LOWERED 0.95

clocks_verdict clocks_judge(unsigned long long reasons, double busy, double limit_w, double default_limit_w);
#endif
