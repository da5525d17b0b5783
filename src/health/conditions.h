/*
 * The health conditions that check (rules/rules_gpu.c) and watch/serve (health/health.c) share,
 * one definition each, so the three never disagree. Pure functions of readings.
 *
 * gpu.throttled, clocks held back:
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
#ifndef GPUVET_HEALTH_CONDITIONS_H
#define GPUVET_HEALTH_CONDITIONS_H
#include <stdbool.h>

#include "sampler/busy.h"

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

/* gpu.hot: at or above the slowdown threshold unhealthy; at or above 80 C, or within 5 C of
 * the slowdown threshold, degraded (CLOCKS_* levels; slowdown_c NAN or <= 0 when unknown). */
#define HOT_C 80
#define HOT_MARGIN_C 5
clocks_level hot_judge(double temp_c, double slowdown_c);

/* gpu.pcie-degraded: the link narrower than the GPU's maximum; or a generation below its
 * maximum while the GPU is busy (>= 50%: an idle GPU lowers its link to save power). Degraded
 * or none; *narrow and *slow say which. Readings NAN when unknown. */
#define LINK_BUSY 0.50

/* gpu.xid: one Xid code, from the kernel log (check) or NVML's events and /dev/kmsg (watch,
 * serve), judged from the Xid catalogue (data/xid.csv):
 *
 *   not recent (an earlier boot; older than watch's hold time)   CLOCKS_INFO: context only
 *   an application fault (the catalogue says "info": 13, 31, 43)  CLOCKS_INFO: not the GPU's
 *   the GPU's fault (the catalogue says "fail": 48, 79, 94, 95)   unhealthy
 *   any other code, or one the catalogue lacks                    degraded
 *
 * check warns from degraded up and reports the info cases as info; watch and serve show a
 * condition from degraded up. action: the catalogue's, or where to look the code up. */
#define XID_LOOKUP_ACTION "look the code up in NVIDIA's Xid catalogue (docs.nvidia.com/deploy/xid-errors) and the kernel log"
struct kb;
typedef struct xid_verdict {
	clocks_level level;
	bool known;                  /* the catalogue has the code, with a meaning */
	const char *name, *meaning;  /* the catalogue's; "" when not known */
	const char *action;
	const char *resolution;      /* NVIDIA's resolution in words (kb_xid_resolution); "" when none */
} xid_verdict;
xid_verdict xid_judge(const struct kb *k, int code, bool recent);


/* Launch/sync-bound, the one judgement of watch's gpu.launch-bound and the job doctor's
 * job.launch-bound: kernels run (utilization) but fill almost no SM: tiny kernels, each waited
 * for by the host. Either of
 *
 *   utilization - SM active >= gap, SM active < sm_share of utilization   (H200: 25% against 0.0%)
 *   utilization >= util_min, SM active < sm_trace of utilization           (H200: 14% against 0.01%)
 *
 * The second is the same job on a slower host: fewer launches a second bring the utilization under
 * the gap, but what runs still fills no SM. A starved GPU's kernels are real ones that fill the SMs
 * while they run (CPU-fed training on the H200: 4% against 3.1%, 12-28% against 9-11%), so the
 * share of utilization tells the two apart at any utilization; util_min keeps a GPU that runs
 * almost nothing (a stray kernel now and then) out. Ratios 0-1; false when either is NAN. */
typedef struct launch_limits {
	double gap, sm_share, util_min, sm_trace;
} launch_limits;
#define LAUNCH_GAP 0.15
#define LAUNCH_SM_SHARE 0.25
#define LAUNCH_UTIL_MIN 0.05
#define LAUNCH_SM_TRACE 0.05
#define LAUNCH_LIMITS_DEFAULT ((launch_limits){LAUNCH_GAP, LAUNCH_SM_SHARE, LAUNCH_UTIL_MIN, LAUNCH_SM_TRACE})
bool launch_tiny_kernels(double util, double sm_active, const launch_limits *l);

/* A GPU's memory counts as full (check's gpu.memory-held, the job doctor's memory pressure) above
 * this share of its total: past it a new allocator peak, a cuDNN workspace or another job fails. */
#define MEMORY_FULL_RATIO 0.90
clocks_level link_judge(double width, double width_max, double gen, double gen_max, double busy, bool *narrow,
			bool *slow);
#endif
