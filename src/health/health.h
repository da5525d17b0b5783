/*
 * Health over time: rules that look at a stream of snapshots, not at one, and say for each GPU
 * whether it is healthy, degraded or unhealthy, with a message and the action to take.
 *
 *   gpu.input-bound   utilization under 70% for N seconds while a process holds the GPU
 *   gpu.launch-bound  the same, where GPM shows the SMs nearly empty while kernels run (tiny
 *                     kernels and host syncs: launch_tiny_kernels of health/conditions.h, the
 *                     job doctor's rule too)
 *   gpu.hot           temperature at or above 80 C or within 5 C of the slowdown threshold
 *                     (unhealthy at it): health/conditions.h, shared with check
 *   gpu.throttled     clocks held back: the one rule of health/conditions.h (shared with check);
 *                     the power cap at full load is not a condition
 *   gpu.pcie-degraded link width below its maximum; generation below its maximum while busy
 *                     (50%: SM active with GPM, else utilization): health/conditions.h
 *   gpu.ecc-new       uncorrected ECC errors that appeared while watching; pending remaps,
 *                     remap failures, pending page retirement
 *   gpu.xid           Xid events (NVML events, kernel log), explained from data/xid.csv: the
 *                     one rule of health/conditions.h (xid_judge), shared with check
 *   gpu.lost          NVML cannot read the GPU any more (fell off the bus, needs a reset)
 *
 * Pure: health_update takes snapshots and a clock value, so the rules are tested with
 * synthetic streams.
 */
#ifndef GPUVET_HEALTH_H
#define GPUVET_HEALTH_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/snapshot.h"

typedef enum { HEALTH_HEALTHY = 0, HEALTH_DEGRADED = 1, HEALTH_UNHEALTHY = 2 } health_state;
const char *health_state_name(health_state s); /* "healthy", "degraded", "unhealthy" */

typedef struct health_cfg {
	double util_low;         /* ratio, 0.70 */
	double util_low_seconds; /* N: how long utilization must stay low, 60 */
	double hot_c;            /* 80 */
	double busy_util;        /* unused: the link rule's busy threshold is LINK_BUSY (health/conditions.h) */
	double xid_hold_seconds; /* an Xid keeps its GPU non-healthy this long, 900 */
} health_cfg;
void health_cfg_default(health_cfg *c);

typedef struct health_msg {
	int gpu;
	char id[24];
	health_state state;
	char text[240];   /* what is wrong, with the values */
	char action[240]; /* what to do */
	double since;     /* clock value when the condition started */
} health_msg;

#define HEALTH_MAX_GPUS 64
#define HEALTH_MAX_MSGS 256

/* Per GPU memory of the past: when utilization went low, ECC counts at the start. */
typedef struct health_gpu_track {
	bool seen;
	char uuid[80];
	double low_since;  /* < 0 when utilization is not low */
	double hot_since, throttle_since, link_since;
	bool have_base;
	double base_uncorr_volatile, base_uncorr_aggregate;
	double ecc_since;
	unsigned long long xid_total_seen;
} health_gpu_track;

typedef struct health_tracker {
	health_cfg cfg;
	health_gpu_track gpus[HEALTH_MAX_GPUS];
	size_t nmsg;
	health_msg msgs[HEALTH_MAX_MSGS];
	health_state gpu_state[HEALTH_MAX_GPUS];
} health_tracker;

void health_init(health_tracker *t, const health_cfg *cfg);
/* Feeds one snapshot taken at clock value now (seconds); recomputes the messages and states. */
void health_update(health_tracker *t, const snapshot *s, double now);
/* The state of one GPU (healthy when unknown). */
health_state health_gpu(const health_tracker *t, int gpu);
/* How busy a GPU is (ratio): gpu_busy (health/conditions.h) of its sample. */
double health_busy(const gpu_sample *g);
/* The worst state over all GPUs. */
health_state health_overall(const health_tracker *t);
#endif
