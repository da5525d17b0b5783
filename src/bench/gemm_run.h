/*
 * One n x n GEMM through cuBLASLt, the one path under bench's GEMM figures (gemm.c) and the GEMM
 * plan (gemm_plan.h): cuBLASLt loaded once per run, the types of each dtype, the buffers filled
 * from fixed seeds (gen.h) and the descriptors, the heuristic's algorithm, the calls and their
 * event timing, and the sampled verification of D against the CPU (verify.h).
 *
 * Column-major and square: D (n x n) = op(A) x B with alpha = 1, beta = 0; A is stored k x m and
 * transposed ("TN") for fp8 and int8, which tensor cores need, else m x k.
 */
#ifndef GPUVET_BENCH_GEMM_RUN_H
#define GPUVET_BENCH_GEMM_RUN_H
#include <stdbool.h>
#include <stddef.h>

#include "bench/bench.h"
#include "bench/cublaslt.h"
#include "bench/gpu.h"
#include "bench/verify.h"

#define GEMM_SEED_A 0xA5EED001u
#define GEMM_SEED_B 0xB5EED002u
#define GEMM_WORKSPACE_BYTES (64ull << 20)
#define GEMM_MAX_ALGOS 8

/* cuBLASLt's compute, scale, A/B and C/D types of a dtype, and whether A is transposed */
typedef struct gemm_types {
	int compute, scale, ab, cd;
	bool transa;
} gemm_types;
gemm_types gemm_types_of(bench_dtype dt);

/* fp8 ways of calling cuBLASLt, tried in order when one answers CUBLAS_STATUS_NOT_SUPPORTED. */
typedef struct gemm_fp8_variant {
	const char *name;
	bool scales, c_apart, fast_accum;
} gemm_fp8_variant;
#define GEMM_FP8_VARIANTS 4
extern const gemm_fp8_variant gemm_fp8_variants[GEMM_FP8_VARIANTS];

/* alpha = 1 and beta = 0 in the scale type; alpha and beta point into the struct, which must
 * not move after gemm_scalars_of */
typedef struct gemm_scalars {
	double d1, d0;
	float f1, f0;
	int32_t i1, i0;
	const void *alpha, *beta;
} gemm_scalars;
void gemm_scalars_of(int scale, gemm_scalars *k);

/* Where GEMMs run: the cuBLASLt handle, the stream, and the two events that time them. Bench
 * uses the device's stream and events (gpu.h); a plan has its own. */
typedef struct gemm_lane {
	cublasLtHandle_t handle;
	CUstream stream;
	CUevent start, end;
} gemm_lane;

/* Everything one GEMM holds, freed by gemm_free. */
typedef struct gemm_run {
	CUdeviceptr a, b, c, d, ws, scales; /* c: 0 when C is D (in place) */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, ld;
	cublasLtMatmulPreference_t pref;
} gemm_run;

/* Loads cuBLASLt once per run (c->lt; its facts into c->r). False with why. With GPUVET_CUDA_LIB
 * set (a libcuda other than the system's: a test double, a specific driver) it loads only when
 * GPUVET_CUBLASLT_LIB names a cuBLASLt too, one that goes with that libcuda: the real one would
 * load the system's libcuda.so.1. */
bool gemm_lt_load(bench_ctx *c, char *why, size_t n);
/* gemm_lt_load, then bench's handle (c->lt_handle) for device `ordinal`, made again when the
 * device changes. False with why. */
bool gemm_lt_ready(bench_ctx *c, int ordinal, char *why, size_t n);

/* CUDA device `ordinal` made current, if it can run dtype (its compute capability); NULL with why
 * (no GPU session: c->gpu_skip). */
gpu_dev *gemm_device(bench_ctx *c, int ordinal, bench_dtype dt, char *why, size_t n);
/* n_req, halved (not below 256) until A, B, D and the workspace fit in 80% of the free memory of
 * the current device. */
int gemm_fit_n(bench_ctx *c, bench_dtype dt, int n_req);

/* Allocates and fills A, B (and C apart from D for one fp8 variant), D, the workspace and the
 * fp8 scales, and makes the cuBLASLt descriptors, layouts and preference of an n x n GEMM into
 * g. The inputs are generated on the device's stream. False with why; what was made is in g for
 * gemm_free. */
bool gemm_prepare(bench_ctx *c, gpu_dev *d, bench_dtype dt, int n, int variant, gemm_run *g, char *why, size_t whyn);
void gemm_free(bench_ctx *c, gemm_run *g);
/* The heuristic's answers for g (at most GEMM_MAX_ALGOS): their number, or 0 with why. */
int gemm_heuristics(bench_ctx *c, const gemm_lane *l, gemm_run *g, bench_dtype dt,
		    cublasLtMatmulHeuristicResult_t heur[GEMM_MAX_ALGOS], char *why, size_t whyn);
bool gemm_algo_usable(const cublasLtMatmulHeuristicResult_t *h);

/* Enqueues `iters` GEMMs on the lane's stream, no wait. False with why. */
bool gemm_enqueue(bench_ctx *c, const gemm_lane *l, gemm_run *g, const cublasLtMatmulAlgo_t *algo,
		  const gemm_scalars *k, int iters, char *why, size_t n);
/* Runs `iters` GEMMs between the lane's events, behind a guard kernel (gpu_guard) so that the
 * events see the GEMMs and not the host enqueueing them; milliseconds per GEMM, or < 0 with why. */
double gemm_time(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g, const cublasLtMatmulAlgo_t *algo,
		 const gemm_scalars *k, int iters, char *why, size_t n);
/* The first usable heuristic answer that runs: its index, or -1 with why. */
int gemm_first_algo(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g,
		    const cublasLtMatmulHeuristicResult_t *heur, int nheur, const gemm_scalars *k, char *why, size_t whyn);
/* From answer `first` (one that ran): warms it up, times it and the next few, and returns the
 * index of the fastest (first when none did better). */
int gemm_fastest_algo(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g,
		      const cublasLtMatmulHeuristicResult_t *heur, int nheur, int first, const gemm_scalars *k, char *why,
		      size_t whyn);

/* A and B still hold the generated inputs (gpu_check_fill). False with why. */
bool gemm_inputs_ok(bench_ctx *c, gpu_dev *d, gemm_run *g, bench_dtype dt, int n, char *why, size_t whyn);
/* Downloads nr sampled rows of nc sampled columns of D (both clamped to n; rows 0 and n-1 and
 * columns 0 and n-1 always among them) and judges them against the CPU reference into vr. D
 * must be complete (the caller waited for its stream). False with why when the copy failed. */
bool gemm_sample(bench_ctx *c, gemm_run *g, bench_dtype dt, int n, size_t nr, size_t nc, verify_result *vr, char *why,
		 size_t whyn);
#endif
