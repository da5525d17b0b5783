/* What diag's tests share: the run's context and the tests' entry points (one file each). */
#ifndef GPUVET_DIAG_INTERNAL_H
#define GPUVET_DIAG_INTERNAL_H
#include <signal.h>
#include <stdbool.h>

#include "bench/bench.h"
#include "diag/diag.h"

struct snapshot;

typedef struct diag_ctx {
	diag_run *r;
	const diag_opts *o;
	const diag_level *lv;
	bench_opts bo;         /* bench's options for the parts diag runs through bench */
	bench_report rep;      /* bench's figures of the part running now (diag_bench_reset) */
	bench_ctx bc;          /* bc.gpu NULL: no GPU test can run (bc.gpu_error says why) */
	struct snapshot *before; /* the health counters at the start; NULL without NVML */
	volatile sig_atomic_t *stop;
	int step, steps;       /* progress */
	double gemm_seconds;   /* the repeated GEMMs' time per GPU (--duration or the level's) */
	double power_seconds;
	bool injected;         /* --inject was applied (once, on the first GPU tested) */
	bool multi_ran;        /* bench's multi-GPU group ran (once for the p2p and nccl tests) */
	char driver_hung[256]; /* the deployment check found the driver hung: why (no session is opened) */
} diag_ctx;

/* True once SIGINT or SIGTERM asked the run to stop. */
static inline bool diag_stopping(const diag_ctx *c)
{
	return c->stop && *c->stop;
}
/* A fresh bench report for the next part run through bench (bench's figure ids repeat per GPU). */
void diag_bench_reset(diag_ctx *c);
/* The progress line on stderr ("[3/12] GPU 0: gemm bf16"), only with o->progress. */
void diag_progress(diag_ctx *c, const char *fmt, ...) GV_PRINTF(2, 3);
/* A deadline for a part of a test: the watchdog (bench/watchdog.h) is armed with it, scaled by
 * --limit-scale; past it and its grace the hang hook ends the run with the partial results. */
void diag_arm(diag_ctx *c, int test, int gpu, const char *what, double seconds);
void diag_disarm(void);
/* The summary of GPU ordinal's NVML samples in monitor phase `phase` into evidence lines of x
 * (clocks, power against the limit, temperature, throttle reasons); false without samples. */
struct monitor_summary;
bool diag_phase_evidence(diag_ctx *c, diag_result *x, const char *phase, int ordinal, struct monitor_summary *out);
/* The diag_gpu of a CUDA ordinal. */
diag_gpu *diag_gpu_of(diag_ctx *c, int ordinal);

/* The tests (t_*.c): each adds its results to c->r. */
void diag_t_deployment(diag_ctx *c);
void diag_t_gemm(diag_ctx *c, diag_gpu *g);
void diag_t_memory(diag_ctx *c, diag_gpu *g);
void diag_t_pcie(diag_ctx *c, diag_gpu *g);
void diag_t_bandwidth(diag_ctx *c, diag_gpu *g);
void diag_t_power(diag_ctx *c, diag_gpu *g);
void diag_t_p2p(diag_ctx *c);
void diag_t_nccl(diag_ctx *c);
void diag_t_health(diag_ctx *c, diag_gpu *g);
#endif
