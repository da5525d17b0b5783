/*
 * GEMM through cuBLASLt per data type, timed with CUDA events, verified on sampled elements,
 * judged against the dense peak at the SM clock NVML saw while it ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/cublaslt.h"
#include "bench/gen.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/verify.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "kb/kb_peaks.h"

#define SEED_A 0xA5EED001u
#define SEED_B 0xB5EED002u
#define WORKSPACE_BYTES (64ull << 20)
#define MAX_ALGOS 8

static const char src[] = "gpuvet bench";

/* Loads cuBLASLt once and makes a handle for the current device. False with why. */
static bool lt_ready(bench_ctx *c, int ordinal, char *why, size_t n)
{
	const char *cuda_env = getenv("GPUVET_CUDA_LIB");
	if (!c->lt_tried) {
		c->lt_tried = true;
		if (cuda_env && *cuda_env) {
			snprintf(c->lt_error, sizeof(c->lt_error),
				 "GPUVET_CUDA_LIB is set (%s): cuBLASLt would load the system's libcuda.so.1 instead, so "
				 "GEMMs are not run",
				 cuda_env);
		} else {
			cublaslt_api *api = xcalloc(1, sizeof(*api));
			if (cublaslt_load(api)) {
				c->lt = api;
				char v[32];
				cublaslt_version_text(api->version, v, sizeof(v));
				facts_put_str(c->r->facts, src, api->lib.path, FK_BENCH_LIB_CUBLASLT_PATH);
				facts_put_str(c->r->facts, src, v, FK_BENCH_LIB_CUBLASLT_VERSION);
				facts_put_str(c->r->facts, src, api->lib.how, FK_BENCH_LIB_CUBLASLT_FOUND_BY);
			} else {
				str_copy(c->lt_error, sizeof(c->lt_error), api->lib.error);
				free(api);
			}
		}
		if (!c->lt)
			facts_put_state(c->r->facts, cuda_env && *cuda_env ? FACT_UNSUPPORTED : FACT_ERROR, src, c->lt_error,
					FK_BENCH_LIB_CUBLASLT_PATH);
	}
	if (!c->lt) {
		str_copy(why, n, c->lt_error);
		return false;
	}
	if (c->lt_handle && c->lt_device == ordinal)
		return true;
	if (c->lt_handle) {
		c->lt->Destroy(c->lt_handle);
		c->lt_handle = NULL;
	}
	cublasLtHandle_t h = NULL;
	cublasStatus_t st = c->lt->Create(&h);
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(why, n, "cublasLtCreate failed: %s (%d)", cublaslt_status_name(st), st);
		return false;
	}
	c->lt_handle = h;
	c->lt_device = ordinal;
	return true;
}

void bench_gemm_cleanup(bench_ctx *c)
{
	if (c->lt && c->lt_handle) {
		gpu_session *s = c->gpu;
		char err[256];
		if (s && gpu_use(s, c->lt_device, err, sizeof(err)))
			c->lt->Destroy(c->lt_handle);
	}
	c->lt_handle = NULL;
	if (c->lt) {
		cublaslt_unload(c->lt);
		free(c->lt);
		c->lt = NULL;
	}
}

double bench_phase_clock(bench_ctx *c, int ordinal, const char *phase)
{
	if (!c->mon || !c->gpu || ordinal < 0 || ordinal >= c->gpu->count)
		return 0;
	monitor_summary ms;
	if (monitor_summary_get(c->mon, phase, c->gpu->dev[ordinal].nvml_index, &ms) && isfinite(ms.sm_clock_median))
		return ms.sm_clock_median;
	return 0;
}

typedef struct gemm_types {
	int compute, scale, ab, cd;
	bool transa;
} gemm_types;

static gemm_types types_of(bench_dtype dt)
{
	switch (dt) {
	case DT_FP64: return (gemm_types){GV_CUBLAS_COMPUTE_64F, GV_CUDA_R_64F, GV_CUDA_R_64F, GV_CUDA_R_64F, false};
	case DT_FP32: return (gemm_types){GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_32F, GV_CUDA_R_32F, GV_CUDA_R_32F, false};
	case DT_TF32:
		return (gemm_types){GV_CUBLAS_COMPUTE_32F_FAST_TF32, GV_CUDA_R_32F, GV_CUDA_R_32F, GV_CUDA_R_32F, false};
	case DT_FP16: return (gemm_types){GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_32F, GV_CUDA_R_16F, GV_CUDA_R_16F, false};
	case DT_BF16: return (gemm_types){GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_32F, GV_CUDA_R_16BF, GV_CUDA_R_16BF, false};
	/* fp8 and int8 tensor-core GEMMs need A transposed ("TN") */
	case DT_FP8: return (gemm_types){GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_32F, GV_CUDA_R_8F_E4M3, GV_CUDA_R_16BF, true};
	case DT_INT8: return (gemm_types){GV_CUBLAS_COMPUTE_32I, GV_CUDA_R_32I, GV_CUDA_R_8I, GV_CUDA_R_32I, true};
	default: return (gemm_types){0, 0, 0, 0, false};
	}
}

/* Everything one GEMM measurement holds, freed by gemm_free. */
typedef struct gemm_run {
	CUdeviceptr a, b, c, d, ws, scales; /* c: 0 when C is D (in place) */
	cublasLtMatmulDesc_t desc;
	cublasLtMatrixLayout_t la, lb, ld;
	cublasLtMatmulPreference_t pref;
} gemm_run;

static void gemm_free(bench_ctx *c, gemm_run *g)
{
	const gv_cuda_api *cu = c->gpu->cu;
	if (c->lt) {
		if (g->pref)
			c->lt->MatmulPreferenceDestroy(g->pref);
		if (g->la)
			c->lt->MatrixLayoutDestroy(g->la);
		if (g->lb)
			c->lt->MatrixLayoutDestroy(g->lb);
		if (g->ld)
			c->lt->MatrixLayoutDestroy(g->ld);
		if (g->desc)
			c->lt->MatmulDescDestroy(g->desc);
	}
	CUdeviceptr *ptrs[] = {&g->a, &g->b, &g->c, &g->d, &g->ws, &g->scales};
	for (size_t i = 0; i < GV_ARRAY_LEN(ptrs); i++)
		if (*ptrs[i])
			cu->cuMemFree(*ptrs[i]);
	memset(g, 0, sizeof(*g));
}

/* How long the guard kernel keeps the GPU busy ahead of the start event: cublasLtMatmul's host
 * side and the event record take some microseconds; 50 us covers them with room to spare. */
#define GUARD_NS 50000u

/* Runs `iters` GEMMs between the device's events, behind a guard kernel (gpu_guard) so that the
 * events see the GEMMs and not the host enqueueing them; milliseconds per GEMM, or < 0 with why. */
static double time_gemms(bench_ctx *c, gpu_dev *d, gemm_run *g, const cublasLtMatmulAlgo_t *algo, size_t ws_size,
			 const void *alpha, const void *beta, int iters, char *why, size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	CUresult rc = gpu_guard(c->gpu, d, GUARD_NS);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuEventRecord(d->ev_start, d->stream);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuEventRecord", rc, why, n);
		return -1;
	}
	for (int i = 0; i < iters; i++) {
		cublasStatus_t st = c->lt->Matmul(c->lt_handle, g->desc, alpha, (void *)(uintptr_t)g->a, g->la,
						  (void *)(uintptr_t)g->b, g->lb, beta, (void *)(uintptr_t)(g->c ? g->c : g->d), g->ld,
						  (void *)(uintptr_t)g->d, g->ld, algo, (void *)(uintptr_t)g->ws, ws_size,
						  d->stream);
		if (st != CUBLAS_STATUS_SUCCESS) {
			snprintf(why, n, "cublasLtMatmul failed: %s (%d)", cublaslt_status_name(st), st);
			return -1;
		}
	}
	float ms = 0;
	if ((rc = gpu_event_elapsed(c->gpu, d, &ms)) != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "the GEMM (waiting for its end event)", rc, why, n);
		return -1;
	}
	return (double)ms / iters;
}

/* Idles as long as a GEMM of `ms` milliseconds took (at most 50 ms), when it took 5 ms or more:
 * the half duty that keeps long GEMMs off the power limit (see the repeats in
 * gemm_one_variant). Short GEMMs stay back to back: idle gaps of a millisecond did not steady
 * them (int8 and fp8 repeats dipped by 3-7% now and then either way on the H200 machine). */
static void rest_after(double ms)
{
	if (!(ms >= 5))
		return;
	sleep_seconds((ms > 50 ? 50 : ms) / 1000);
}

/* Downloads sampled columns of D and checks sampled elements against the CPU. */
static void verify_gemm(bench_ctx *c, gpu_dev *d, gemm_run *g, bench_dtype dt, int n, bench_figure *f)
{
	const dtype_info *t = dtype_get(dt);
	const gv_cuda_api *cu = c->gpu->cu;
	char why[512];
	if (!gpu_check_fill(c->gpu, d, dt, g->a, (uint64_t)n * n, SEED_A, why, sizeof(why)) ||
	    !gpu_check_fill(c->gpu, d, dt, g->b, (uint64_t)n * n, SEED_B, why, sizeof(why))) {
		figure_set_note(f, "not verified: %s", why);
		report_note(c->r, "GEMM %s: not verified: %s", t->name, why);
		return;
	}
	size_t nr = c->o->quick ? 24 : 48, nc = c->o->quick ? 4 : 8;
	if (nr > (size_t)n)
		nr = (size_t)n;
	if (nc > (size_t)n)
		nc = (size_t)n;
	int64_t rows[48], cols[8];
	verify_pick(n, nr, 0x5151u + (unsigned)dt, rows);
	verify_pick(n, nc, 0x7373u + (unsigned)dt, cols);
	unsigned char *col = xmalloc((size_t)n * (size_t)t->out_bytes);
	double *got = xmalloc(nr * nc * sizeof(double));
	for (size_t j = 0; j < nc; j++) {
		CUresult rc = cu->cuMemcpyDtoH(col, g->d + (uint64_t)cols[j] * (uint64_t)n * (uint64_t)t->out_bytes,
					       (size_t)n * (size_t)t->out_bytes);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(c->gpu, "cuMemcpyDtoH of the GEMM result", rc, why, sizeof(why));
			figure_set_note(f, "not verified: %s", why);
			free(col);
			free(got);
			return;
		}
		for (size_t i = 0; i < nr; i++)
			got[i + j * nr] = gen_decode(dt, col + (size_t)rows[i] * (size_t)t->out_bytes, 1);
	}
	gemm_shape sh = {n, n, n, types_of(dt).transa};
	verify_result vr;
	verify_init(&vr);
	verify_block(dt, &sh, SEED_A, SEED_B, rows, nr, cols, nc, got, &vr);
	verify_describe(&vr, why, sizeof(why));
	figure_set_verified(f, vr.checked > 0 && vr.bad == 0, why);
	free(col);
	free(got);
}

/* fp8 ways of calling cuBLASLt, tried in order when one answers CUBLAS_STATUS_NOT_SUPPORTED.
 * Our scales are 1, cuBLASLt's default without scale pointers: on the H200 machine (cuBLASLt 13,
 * 2026-11-29) only that form ran; per-tensor scale pointers answered NOT_SUPPORTED. */
static const struct fp8_variant {
	const char *name;
	bool scales, c_apart, fast_accum;
} fp8_variants[] = {
	{"no scale pointers", false, false, false},
	{"per-tensor scale pointers", true, false, false},
	{"scale pointers, C apart from D", true, true, false},
	{"scale pointers, fast accumulation", true, false, true},
};

static void gemm_one_variant(bench_ctx *c, bench_dtype dt, int n_req, const char *id, int variant);

static void gemm_one(bench_ctx *c, bench_dtype dt, int n_req, const char *id)
{
	gemm_one_variant(c, dt, n_req, id, 0);
}

/* Allocates and fills A, B (and C apart from D for one fp8 variant), D, the workspace and the
 * fp8 scales, and makes the cuBLASLt descriptors, layouts and preference of an n x n GEMM into
 * g. False with why; what was made is in g for gemm_free. */
static bool gemm_prepare(bench_ctx *c, gpu_dev *d, bench_dtype dt, int n, int variant, gemm_run *g, char *why,
			 size_t whyn)
{
	const dtype_info *t = dtype_get(dt);
	gpu_session *s = c->gpu;
	const gv_cuda_api *cu = s->cu;
	gemm_types ty = types_of(dt);
	uint64_t nn = (uint64_t)n * (uint64_t)n;
	const struct fp8_variant *v = dt == DT_FP8 ? &fp8_variants[variant] : NULL;
	CUresult rc = CUDA_SUCCESS;
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
	const char *what = NULL;
	float ones[2] = {1.0f, 1.0f};
	if ((rc = cu->cuMemAlloc(&g->a, nn * (uint64_t)t->in_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->b, nn * (uint64_t)t->in_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->d, nn * (uint64_t)t->out_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->ws, WORKSPACE_BYTES)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->scales, 256)) != CUDA_SUCCESS ||
	    (v && v->c_apart && (rc = cu->cuMemAlloc(&g->c, nn * (uint64_t)t->out_bytes)) != CUDA_SUCCESS))
		what = "cuMemAlloc";
	else if ((rc = cu->cuMemcpyHtoD(g->scales, ones, sizeof(ones))) != CUDA_SUCCESS)
		what = "cuMemcpyHtoD";
	else if ((rc = gpu_fill(s, d, dt, g->a, nn, SEED_A)) != CUDA_SUCCESS ||
		 (rc = gpu_fill(s, d, dt, g->b, nn, SEED_B)) != CUDA_SUCCESS)
		what = "the input generator (cuLaunchKernel)";
	if (what) {
		gpu_errtext(s, what, rc, why, whyn);
		return false;
	}
	/* descriptors: column-major, square (A is stored k x m and transposed for TN, else m x k) */
	int32_t opa = ty.transa ? GV_CUBLAS_OP_T : GV_CUBLAS_OP_N, opb = GV_CUBLAS_OP_N;
	uint64_t wsb = WORKSPACE_BYTES;
	int8_t fast = 1;
	const void *sa = (const void *)(uintptr_t)g->scales, *sb = (const void *)(uintptr_t)(g->scales + 4);
	if ((st = c->lt->MatmulDescCreate(&g->desc, ty.compute, ty.scale)) != CUBLAS_STATUS_SUCCESS ||
	    (st = c->lt->MatmulDescSetAttribute(g->desc, GV_CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof(opa))) !=
		    CUBLAS_STATUS_SUCCESS ||
	    (st = c->lt->MatmulDescSetAttribute(g->desc, GV_CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof(opb))) !=
		    CUBLAS_STATUS_SUCCESS)
		what = "cublasLtMatmulDesc";
	else if (v && v->fast_accum &&
		 (st = c->lt->MatmulDescSetAttribute(g->desc, GV_CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast))) !=
			 CUBLAS_STATUS_SUCCESS)
		what = "cublasLtMatmulDescSetAttribute (fp8 fast accumulation)";
	else if (v && v->scales &&
		 ((st = c->lt->MatmulDescSetAttribute(g->desc, GV_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa))) !=
			  CUBLAS_STATUS_SUCCESS ||
		  (st = c->lt->MatmulDescSetAttribute(g->desc, GV_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb))) !=
			  CUBLAS_STATUS_SUCCESS))
		what = "cublasLtMatmulDescSetAttribute (fp8 scales)";
	else if ((st = c->lt->MatrixLayoutCreate(&g->la, ty.ab, (uint64_t)n, (uint64_t)n, n)) != CUBLAS_STATUS_SUCCESS ||
		 (st = c->lt->MatrixLayoutCreate(&g->lb, ty.ab, (uint64_t)n, (uint64_t)n, n)) != CUBLAS_STATUS_SUCCESS ||
		 (st = c->lt->MatrixLayoutCreate(&g->ld, ty.cd, (uint64_t)n, (uint64_t)n, n)) != CUBLAS_STATUS_SUCCESS ||
		 (st = c->lt->MatmulPreferenceCreate(&g->pref)) != CUBLAS_STATUS_SUCCESS ||
		 (st = c->lt->MatmulPreferenceSetAttribute(g->pref, GV_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb,
							   sizeof(wsb))) != CUBLAS_STATUS_SUCCESS)
		what = "cublasLt layouts";
	if (what) {
		snprintf(why, whyn, "%s failed: %s (%d)", what, cublaslt_status_name(st), st);
		return false;
	}
	return true;
}

/* alpha = 1 and beta = 0 in the scale type */
typedef struct gemm_scalars {
	double d1, d0;
	float f1, f0;
	int32_t i1, i0;
	const void *alpha, *beta;
} gemm_scalars;

static void scalars_of(int scale, gemm_scalars *k)
{
	*k = (gemm_scalars){1, 0, 1, 0, 1, 0, NULL, NULL};
	k->alpha = scale == GV_CUDA_R_64F ? (const void *)&k->d1 : scale == GV_CUDA_R_32I ? (const void *)&k->i1 : (const void *)&k->f1;
	k->beta = scale == GV_CUDA_R_64F ? (const void *)&k->d0 : scale == GV_CUDA_R_32I ? (const void *)&k->i0 : (const void *)&k->f0;
}

static bool algo_usable(const cublasLtMatmulHeuristicResult_t *h)
{
	return h->state == CUBLAS_STATUS_SUCCESS && h->workspaceSize <= WORKSPACE_BYTES;
}

/* Warms up with the first heuristic answer that runs (the clocks ramp up under load, and a cold
 * first candidate would lose the trial), then times the top answers for about 10 ms each and
 * keeps the fastest. Its index, or -1 with why (none ran: first_ms < 0 when one failed). */
static int gemm_choose(bench_ctx *c, gpu_dev *d, gemm_run *g, const cublasLtMatmulHeuristicResult_t *heur, int nheur,
		       const gemm_scalars *k, char *why, size_t whyn)
{
	int first = -1;
	double first_ms = -1;
	for (int i = 0; i < nheur && first < 0; i++) {
		if (!algo_usable(&heur[i]))
			continue;
		first_ms = time_gemms(c, d, g, &heur[i].algo, WORKSPACE_BYTES, k->alpha, k->beta, 1, why, whyn);
		if (first_ms > 0)
			first = i;
	}
	if (first < 0) {
		if (first_ms >= 0 || !why[0])
			snprintf(why, whyn, "no cuBLASLt algorithm ran");
		return -1;
	}
	/* Timed like PyTorch users time a matmul (and like anchors/bench_torch.py): a few warm-up
	 * GEMMs, then each GEMM timed on its own with CUDA events, the median kept. A long sustained
	 * run measures something else: on an H200 a second of back-to-back bf16 GEMMs pulls the SM
	 * clock from ~1980 to ~1550 MHz under the 700 W limit (seen on 2026-11-29). */
	for (int w = 0; w < 3 && !watchdog_expired(); w++)
		if (time_gemms(c, d, g, &heur[first].algo, WORKSPACE_BYTES, k->alpha, k->beta, 1, why, whyn) < 0)
			break;
	int trial_iters = 3, tries = 4, best = first;
	double best_ms = INFINITY;
	for (int i = first; i < nheur && i < first + tries; i++) {
		if (!algo_usable(&heur[i]))
			continue;
		char e[256];
		double ms = time_gemms(c, d, g, &heur[i].algo, WORKSPACE_BYTES, k->alpha, k->beta, trial_iters, e, sizeof(e));
		if (ms > 0 && ms < best_ms) {
			best_ms = ms;
			best = i;
		}
		if (watchdog_expired())
			break;
	}
	return best;
}

/* One timed repeat (bench_repeat): after a long GEMM (rest_after) the GPU rests as long as it
 * took before the next. Seconds. */
typedef struct gemm_arg {
	bench_ctx *c;
	gpu_dev *d;
	gemm_run *g;
	const cublasLtMatmulAlgo_t *algo;
	const gemm_scalars *k;
	double last_ms; /* < 0 before the first */
} gemm_arg;

static double gemm_once(void *arg, char *why, size_t whyn)
{
	gemm_arg *a = arg;
	if (a->last_ms >= 0)
		rest_after(a->last_ms);
	a->last_ms = time_gemms(a->c, a->d, a->g, a->algo, WORKSPACE_BYTES, a->k->alpha, a->k->beta, 1, why, whyn);
	return a->last_ms < 0 ? -1 : a->last_ms / 1000.0;
}

/* The timed repeats of the chosen algorithm into secs (at most reps); their number, or -1 with
 * why. With the monitor paused; the GPM evidence follows them. */
static int gemm_repeat(bench_ctx *c, gpu_dev *d, int ordinal, const char *id, gemm_run *g,
		       const cublasLtMatmulAlgo_t *algo, const gemm_scalars *k, int reps, double *secs, char *why,
		       size_t whyn)
{
	/* The trial is ~100 ms of full load: on an H200 that is enough for the power limiter to pull
	 * a TF32 GEMM's clock to ~1600 MHz (seen 2026-11-29). Idle briefly, as between a user's
	 * matmuls, so the figure is the one a user's timing loop sees, then warm the winner. */
	sleep_seconds(0.3);
	for (int w = 0; w < 3; w++) /* the winner, warm, at the half duty of the repeats below */
		rest_after(time_gemms(c, d, g, algo, WORKSPACE_BYTES, k->alpha, k->beta, 1, why, whyn));
	/* Each repeat is one GEMM; after a long one (rest_after) the GPU rests as long as it took.
	 * Back to back, a GEMM of 10 ms or more (fp64 at 8192) holds the H200 at its 700 W limit, where the SM clock
	 * swings: single fp64 GEMMs varied by 7.5% and repeats of ~80 ms of GEMMs dipped by 20%,
	 * and the heat carried over into the next data type (tf32 fell from 426 to 365 TFLOP/s
	 * within its repeats; all seen 2026-11-29). At half duty every repeat starts alike. */
	/* Nothing calls NVML while GEMMs are timed: its calls take the driver's locks, and on the
	 * H200 the GEMM right after an NVML sample came out 2-4% slower (int8, fp8, tf32; seen
	 * 2026-11-29). The clocks are read once, after the last repeat; the GPM evidence is taken
	 * after that (bench_evidence), over GEMMs of its own. */
	monitor_phase(c->mon, id);
	monitor_pause(c->mon, true);
	gemm_arg ga = {c, d, g, algo, k, -1};
	int got = bench_repeat(gemm_once, &ga, reps, secs, why, whyn);
	monitor_sample_now(c->mon); /* the clock right after the last repeat, before the evidence */
	if (got > 0)
		bench_evidence(c, ordinal, gemm_once, &ga, 1.0);
	monitor_pause(c->mon, false);
	monitor_phase(c->mon, NULL);
	if (got == 0)
		snprintf(why, whyn, "stopped by the time limit");
	return got > 0 ? got : -1;
}

/* One GEMM figure: checks, sizing, preparation, the algorithm, the repeats, the figure and its
 * verification; every way out goes through `out`, which says why when no figure was made and
 * frees what was made. An fp8 call that cuBLASLt does not support tries the next way of calling
 * it (fp8_variants). */
static void gemm_one_variant(bench_ctx *c, bench_dtype dt, int n_req, const char *id, int variant)
{
	const dtype_info *t = dtype_get(dt);
	const char *unit = t->integer ? "TOP/s" : "TFLOP/s";
	char title[96], why[1024] = "";
	int ordinal = c->o->device;
	snprintf(title, sizeof(title), "GEMM %s %dx%d", t->name, n_req, n_req);
	gemm_run g = {0};
	bool armed = false, retry = false, done = false;
	gpu_session *s = c->gpu;
	gpu_dev *d = NULL;
	if (!s) {
		str_copy(why, sizeof(why), c->gpu_skip[0] ? c->gpu_skip : "no GPU");
		goto out;
	}
	if (!gpu_use(s, ordinal, why, sizeof(why)))
		goto out;
	d = &s->dev[ordinal];
	if (d->cc_major * 10 + d->cc_minor < t->min_cc) {
		snprintf(why, sizeof(why), "needs compute capability %d.%d (this GPU has %d.%d)", t->min_cc / 10,
			 t->min_cc % 10, d->cc_major, d->cc_minor);
		goto out;
	}
	if (!lt_ready(c, ordinal, why, sizeof(why)))
		goto out;
	/* size from free memory: A, B, D and the workspace within 80% of what is free */
	size_t free_b = 0, total_b = 0;
	gpu_mem_info(s, &free_b, &total_b);
	int n = n_req;
	for (;;) {
		double need = (double)n * n * (2.0 * t->in_bytes + t->out_bytes) + WORKSPACE_BYTES + (1 << 20);
		if (need <= 0.8 * (double)free_b || n <= 256)
			break;
		n /= 2;
	}
	if (n != n_req)
		snprintf(title, sizeof(title), "GEMM %s %dx%d", t->name, n, n);
	bench_progress(c, "GEMM %s %d", t->name, n);
	watchdog_arm(title, bench_limit(c, 40));
	armed = true;
	if (!gemm_prepare(c, d, dt, n, variant, &g, why, sizeof(why)))
		goto out;
	cublasLtMatmulHeuristicResult_t heur[MAX_ALGOS];
	int nheur = 0;
	memset(heur, 0, sizeof(heur));
	cublasStatus_t st =
		c->lt->MatmulAlgoGetHeuristic(c->lt_handle, g.desc, g.la, g.lb, g.ld, g.ld, g.pref, MAX_ALGOS, heur, &nheur);
	if (st != CUBLAS_STATUS_SUCCESS || nheur <= 0) {
		snprintf(why, sizeof(why), "cuBLASLt has no algorithm for %s on this GPU (%s)", t->title,
			 st == CUBLAS_STATUS_SUCCESS ? "no heuristic result" : cublaslt_status_name(st));
		goto out;
	}
	gemm_scalars k;
	scalars_of(types_of(dt).scale, &k);
	int best = gemm_choose(c, d, &g, heur, nheur, &k, why, sizeof(why));
	if (best < 0) {
		retry = dt == DT_FP8 && variant + 1 < (int)GV_ARRAY_LEN(fp8_variants) && strstr(why, "NOT_SUPPORTED");
		goto out;
	}
	double secs[32];
	int got = gemm_repeat(c, d, ordinal, id, &g, &heur[best].algo, &k, c->o->quick ? 10 : 20, secs, why, sizeof(why));
	if (got < 0)
		goto out;
	bench_figure *f = report_add(c->r, id, "gemm", unit, "%s", title);
	done = true;
	f->gpu = ordinal;
	f->size = n;
	if (dt == DT_FP8) {
		facts_put_str(c->r->facts, src, fp8_variants[variant].name, FK_BENCH_FIGURE_CALL, id);
		if (variant > 0)
			figure_set_note(f, "cuBLASLt ran fp8 only this way: %s", fp8_variants[variant].name);
	}
	stats_rates(secs, (size_t)got, 2.0 * n * (double)n * n / 1e12, &f->st);
	if (n != n_req)
		figure_set_note(f, "size %d: %d x %d does not fit in the free GPU memory", n, n_req, n_req);
	f->clock_mhz = bench_phase_clock(c, ordinal, id);
	bench_window_evidence(c, f);
	char cc_text[16];
	snprintf(cc_text, sizeof(cc_text), "%d.%d", d->cc_major, d->cc_minor);
	kb_peak pk;
	if (kb_compute_peak(kb_global(), d->name, cc_text, d->sms, f->clock_mhz, t->name, &pk))
		figure_set_peak(f, pk.value, pk.how);
	facts_put_int(c->r->facts, src, best, FK_BENCH_FIGURE_ALGO_RANK, id);
	facts_put_int(c->r->facts, src, (long long)heur[best].workspaceSize, FK_BENCH_FIGURE_WORKSPACE_BYTES, id);
	verify_gemm(c, d, &g, dt, n, f);
out:
	if (!done && !retry)
		report_skip(c->r, id, "gemm", unit, title, "%s", why);
	if (s)
		gemm_free(c, &g);
	if (armed)
		watchdog_disarm();
	if (retry)
		gemm_one_variant(c, dt, n_req, id, variant + 1);
}

void bench_gemm(bench_ctx *c)
{
	for (int dt = 0; dt < DT_COUNT; dt++) {
		if (!c->o->dtypes[dt])
			continue;
		char id[32];
		snprintf(id, sizeof(id), "gemm.%s", dtype_get((bench_dtype)dt)->name);
		gemm_one(c, (bench_dtype)dt, c->o->size, id);
	}
}

void bench_gemm_at(bench_ctx *c, bench_dtype dt, int n)
{
	char id[48];
	snprintf(id, sizeof(id), "gemm.%s.n%d", dtype_get(dt)->name, n);
	gemm_one(c, dt, n, id);
}
