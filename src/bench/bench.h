/*
 * gpuvet bench: the run's options and context, and the benchmark groups. Each group adds its
 * figures to the report (report.h), says in a note what it could not run and why, and never
 * stops the others: no GPU still gives the CPU baseline.
 */
#ifndef GPUVET_BENCH_BENCH_H
#define GPUVET_BENCH_BENCH_H
#include <stdbool.h>
#include <stddef.h>

#include "bench/dtype.h"
#include "bench/report.h"
#include "sampler/window.h"

typedef struct bench_opts {
	bool quick;
	bool force;             /* run although other processes use the GPU */
	bool progress;          /* a progress line on stderr */
	int size;               /* GEMM n (default 8192) */
	long long transfer_bytes; /* host<->device buffer (default 1 GiB) */
	unsigned groups;        /* BENCH_G_* to run */
	bool dtypes[DT_COUNT];  /* GEMM types to run */
	int device;             /* CUDA device for single-GPU benchmarks */
	double limit_scale;     /* multiplies every watchdog limit (tests, slow machines) */
	bool no_evidence;       /* no GPM evidence windows (diag: its figures are judged without them) */
	bool transfer_basic;    /* only the pinned one-way copies (diag) */
} bench_opts;

/* The benchmark groups (--only), declared once, in the order they run: X(ID, name, run, gpu,
 * sections). Launch latency runs first, on a context that has done nothing else yet, as a
 * bare launch loop measures it; the report shows sections in its own order (report.c), and
 * `sections` names the report sections a group's figures go to. gpu: it needs the CUDA session
 * (and the busy check). bench_groups[] in bench.c is this table as data. */
#define BENCH_GROUPS(X)                                                                                         \
	X(LAUNCH, "launch", bench_launch, true, "launch")                                                       \
	X(GEMM, "gemm", bench_gemm, true, "gemm speedup")                                                       \
	X(MEMORY, "memory", bench_memory, true, "memory")                                                       \
	X(TRANSFER, "transfer", bench_transfer, true, "transfer")                                               \
	X(MULTI, "multi", bench_multi, true, "p2p nccl")                                                        \
	X(CPU, "cpu", bench_cpu_group, false, "cpu speedup")

#define BENCH_GI_(ID, ...) BENCH_GI_##ID,
enum { BENCH_GROUPS(BENCH_GI_) BENCH_N_GROUPS };
#undef BENCH_GI_
#define BENCH_G_(ID, ...) BENCH_G_##ID = 1u << BENCH_GI_##ID,
enum { BENCH_GROUPS(BENCH_G_) BENCH_G_ALL = (1u << BENCH_N_GROUPS) - 1 };
#undef BENCH_G_
/* "launch gemm memory transfer multi cpu": the names as one string literal, for --help */
#define BENCH_GROUP_NAME_(ID, name, ...) name " "
#define BENCH_GROUP_NAMES BENCH_GROUPS(BENCH_GROUP_NAME_)

struct bench_ctx;
typedef struct bench_group {
	const char *name;
	unsigned bit;
	void (*run)(struct bench_ctx *c);
	bool gpu;
	const char *sections;
} bench_group;
extern const bench_group bench_groups[BENCH_N_GROUPS];
/* The groups that need the GPU session, as a mask. */
unsigned bench_gpu_groups(void);
/* Runs the groups of c->o->groups in their order. */
void bench_run_groups(struct bench_ctx *c);

/* "gemm,memory,transfer,launch,multi,cpu" (any order, "all") -> mask; false (with *bad set) on an unknown name. */
bool bench_parse_groups(const char *list, unsigned *out, const char **bad);

struct gpu_session;
struct monitor;
struct cublaslt_api;

typedef struct bench_ctx {
	const bench_opts *o;
	bench_report *r;
	int step, steps;          /* progress */
	struct gpu_session *gpu;  /* NULL when no GPU benchmark can run (why in gpu_error) */
	char gpu_error[512];
	char gpu_skip[96];        /* the short reason GPU figures show when skipped ("no GPU") */
	struct monitor *mon;      /* NULL without NVML */
	struct cublaslt_api *lt;  /* loaded on first use; NULL after a failed load (why in lt_error) */
	bool lt_tried;
	char lt_error[1024];
	void *lt_handle;          /* cublasLtHandle_t of the device in use */
	int lt_device;
	struct gpm_window *win;   /* the evidence window's GPM state (sampler/window.h), of GPU win_nvml */
	bool win_tried;           /* win_nvml was asked (win NULL: that GPU has no GPM) */
	int win_nvml;
	bool win_ok;              /* the last window gave counters (in win_ev) */
	gpm_evidence win_ev;
} bench_ctx;

/* Opens the GPUs (cuInit, the devices) into c->gpu and NVML's monitor into c->mon, with their
 * state as facts of c->r; what failed is in c->gpu_error (c->gpu NULL) and a note. xid_events:
 * the monitor follows Xid events too (diag). bench_close_gpus releases both. */
void bench_open_gpus(bench_ctx *c, bool xid_events);
void bench_close_gpus(bench_ctx *c);

/* One timed repeat of a measurement: its time in seconds, or < 0 with why. */
typedef double (*bench_once_fn)(void *arg, char *why, size_t n);
/* Up to reps repeats into secs, stopping early when the watchdog expires (after at least one);
 * their number, or -1 with why when one failed. Nothing else runs between the repeats. */
int bench_repeat(bench_once_fn once, void *arg, int reps, double *secs, char *why, size_t n);

/* Progress line on stderr ("[3/14] GEMM bf16"), only when o->progress. */
void bench_progress(bench_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void bench_progress_done(bench_ctx *c);
/* MemAvailable of /proc/meminfo in bytes; 0 when unknown. */
unsigned long long bench_mem_available(void);
/* A watchdog limit for a benchmark, scaled by --quick and limit_scale. */
double bench_limit(const bench_ctx *c, double full_seconds);

/* GPU benchmarks (gemm.c, memory.c, transfer.c, launch.c, multi.c); each needs c->gpu. */
void bench_gemm(bench_ctx *c);
/* One more GEMM of dtype at size n (the CPU's size when it differs), as figure gemm.<dt>.n<N>. */
void bench_gemm_at(bench_ctx *c, bench_dtype dt, int n);
void bench_memory(bench_ctx *c);
void bench_transfer(bench_ctx *c);
void bench_launch(bench_ctx *c);
void bench_multi(bench_ctx *c);
/* Releases what the GPU benchmarks keep between groups (the cuBLASLt handle and library). */
void bench_gemm_cleanup(bench_ctx *c);

/* The SM clock (MHz) NVML saw on CUDA device `ordinal` during `phase`, else 0. */
double bench_phase_clock(bench_ctx *c, int ordinal, const char *phase);
/* The GPM evidence of a figure (sampler/window.h), taken after its timed repeats so that they
 * run exactly as before: an idle settle, a sample, `once` repeated back to back until about
 * BENCH_EVIDENCE_BUSY_S of GPU time (busy_per_call x what once returns), an idle settle, a
 * sample. The same operation on the same buffers as the timed repeats; the counters are scaled
 * to its busy time. Nothing on a GPU without GPM. bench_window_evidence puts it in the figure. */
#define BENCH_EVIDENCE_BUSY_S 0.3
#define BENCH_EVIDENCE_SETTLE_S 0.2
void bench_evidence(bench_ctx *c, int ordinal, bench_once_fn once, void *arg, double busy_per_call);
/* The last window's GPM counters into the figure, and a note saying them. */
void bench_window_evidence(bench_ctx *c, bench_figure *f);
void bench_window_close(bench_ctx *c);

/* Runs the rules of layer "bench" (rules_bench.c) over a run's facts. */
struct kb;
void bench_judge(facts *f, const struct kb *k, findings *out);

/* CPU baseline (cpu.c): sgemm/dgemm through the system's BLAS. gpu_tflops[dt] (NAN when unknown)
 * feed the CPU vs GPU table when the GPU ran at the same size. */
void bench_cpu(bench_ctx *c);
/* The cpu group: the CPU baseline, then the GPU's GEMM at the CPU's size where that had to be
 * smaller, so that the two compare. */
void bench_cpu_group(bench_ctx *c);
/* The speedup tables from figures already in the report. */
void bench_speedups(bench_ctx *c);
#endif
