/* One GEMM through cuBLASLt (gemm_run.h): what bench's figures and the GEMM plan share. */
#include "bench/gemm_run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gen.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"

static const char src[] = "gpuvet bench";

bool gemm_lt_load(bench_ctx *c, char *why, size_t n)
{
	const char *cuda_env = getenv("GPUVET_CUDA_LIB"), *lt_env = getenv("GPUVET_CUBLASLT_LIB");
	/* a cuBLASLt named with the libcuda goes with it (tests: the fakes) */
	bool refuse = cuda_env && *cuda_env && !(lt_env && *lt_env);
	if (!c->lt_tried) {
		c->lt_tried = true;
		if (refuse) {
			snprintf(c->lt_error, sizeof(c->lt_error),
				 "GPUVET_CUDA_LIB is set (%s): cuBLASLt would load the system's libcuda.so.1 instead, so "
				 "GEMMs are not run (unless GPUVET_CUBLASLT_LIB names a cuBLASLt that goes with it)",
				 cuda_env);
		} else {
			cublaslt_api *api = xcalloc(1, sizeof(*api));
			if (cublaslt_load(api)) {
				c->lt = api;
				char v[32];
				cublaslt_version_text(api->version, v, sizeof(v));
				if (c->r) {
					facts_put_str(c->r->facts, src, api->lib.path, FK_BENCH_LIB_CUBLASLT_PATH);
					facts_put_str(c->r->facts, src, v, FK_BENCH_LIB_CUBLASLT_VERSION);
					facts_put_str(c->r->facts, src, api->lib.how, FK_BENCH_LIB_CUBLASLT_FOUND_BY);
				}
			} else {
				str_copy(c->lt_error, sizeof(c->lt_error), api->lib.error);
				free(api);
			}
		}
		if (!c->lt && c->r)
			facts_put_state(c->r->facts, refuse ? FACT_UNSUPPORTED : FACT_ERROR, src, c->lt_error,
					FK_BENCH_LIB_CUBLASLT_PATH);
	}
	if (!c->lt) {
		str_copy(why, n, c->lt_error);
		return false;
	}
	return true;
}

bool gemm_lt_ready(bench_ctx *c, int ordinal, char *why, size_t n)
{
	if (!gemm_lt_load(c, why, n))
		return false;
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

gemm_types gemm_types_of(bench_dtype dt)
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

/* Our scales are 1, cuBLASLt's default without scale pointers: on the H200 machine (cuBLASLt 13,
 * 2026-11-29) only that form ran; per-tensor scale pointers answered NOT_SUPPORTED. */
const gemm_fp8_variant gemm_fp8_variants[GEMM_FP8_VARIANTS] = {
	{"no scale pointers", false, false, false},
	{"per-tensor scale pointers", true, false, false},
	{"scale pointers, C apart from D", true, true, false},
	{"scale pointers, fast accumulation", true, false, true},
};

void gemm_scalars_of(int scale, gemm_scalars *k)
{
	*k = (gemm_scalars){1, 0, 1, 0, 1, 0, NULL, NULL};
	k->alpha = scale == GV_CUDA_R_64F ? (const void *)&k->d1 : scale == GV_CUDA_R_32I ? (const void *)&k->i1 : (const void *)&k->f1;
	k->beta = scale == GV_CUDA_R_64F ? (const void *)&k->d0 : scale == GV_CUDA_R_32I ? (const void *)&k->i0 : (const void *)&k->f0;
}

gpu_dev *gemm_device(bench_ctx *c, int ordinal, bench_dtype dt, char *why, size_t n)
{
	const dtype_info *t = dtype_get(dt);
	gpu_session *s = c->gpu;
	if (!s) {
		str_copy(why, n, c->gpu_skip[0] ? c->gpu_skip : "no GPU");
		return NULL;
	}
	if (!gpu_use(s, ordinal, why, n))
		return NULL;
	gpu_dev *d = &s->dev[ordinal];
	if (d->cc_major * 10 + d->cc_minor < t->min_cc) {
		snprintf(why, n, "needs compute capability %d.%d (this GPU has %d.%d)", t->min_cc / 10, t->min_cc % 10,
			 d->cc_major, d->cc_minor);
		return NULL;
	}
	return d;
}

int gemm_fit_n(bench_ctx *c, bench_dtype dt, int n_req)
{
	const dtype_info *t = dtype_get(dt);
	size_t free_b = 0, total_b = 0;
	gpu_mem_info(c->gpu, &free_b, &total_b);
	int n = n_req;
	for (;;) {
		double need = (double)n * n * (2.0 * t->in_bytes + t->out_bytes) + GEMM_WORKSPACE_BYTES + (1 << 20);
		if (need <= 0.8 * (double)free_b || n <= 256)
			break;
		n /= 2;
	}
	return n;
}

void gemm_free(bench_ctx *c, gemm_run *g)
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

bool gemm_prepare(bench_ctx *c, gpu_dev *d, bench_dtype dt, int n, int variant, gemm_run *g, char *why, size_t whyn)
{
	const dtype_info *t = dtype_get(dt);
	gpu_session *s = c->gpu;
	const gv_cuda_api *cu = s->cu;
	gemm_types ty = gemm_types_of(dt);
	uint64_t nn = (uint64_t)n * (uint64_t)n;
	const gemm_fp8_variant *v = dt == DT_FP8 ? &gemm_fp8_variants[variant] : NULL;
	CUresult rc = CUDA_SUCCESS;
	cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
	const char *what = NULL;
	float ones[2] = {1.0f, 1.0f};
	if ((rc = cu->cuMemAlloc(&g->a, nn * (uint64_t)t->in_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->b, nn * (uint64_t)t->in_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->d, nn * (uint64_t)t->out_bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->ws, GEMM_WORKSPACE_BYTES)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&g->scales, 256)) != CUDA_SUCCESS ||
	    (v && v->c_apart && (rc = cu->cuMemAlloc(&g->c, nn * (uint64_t)t->out_bytes)) != CUDA_SUCCESS))
		what = "cuMemAlloc";
	else if ((rc = cu->cuMemcpyHtoD(g->scales, ones, sizeof(ones))) != CUDA_SUCCESS)
		what = "cuMemcpyHtoD";
	else if ((rc = gpu_fill(s, d, dt, g->a, nn, GEMM_SEED_A)) != CUDA_SUCCESS ||
		 (rc = gpu_fill(s, d, dt, g->b, nn, GEMM_SEED_B)) != CUDA_SUCCESS)
		what = "the input generator (cuLaunchKernel)";
	if (what) {
		gpu_errtext(s, what, rc, why, whyn);
		return false;
	}
	/* descriptors: column-major, square (A is stored k x m and transposed for TN, else m x k) */
	int32_t opa = ty.transa ? GV_CUBLAS_OP_T : GV_CUBLAS_OP_N, opb = GV_CUBLAS_OP_N;
	uint64_t wsb = GEMM_WORKSPACE_BYTES;
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

int gemm_heuristics(bench_ctx *c, const gemm_lane *l, gemm_run *g, bench_dtype dt,
		    cublasLtMatmulHeuristicResult_t heur[GEMM_MAX_ALGOS], char *why, size_t whyn)
{
	int nheur = 0;
	memset(heur, 0, GEMM_MAX_ALGOS * sizeof(*heur));
	cublasStatus_t st =
		c->lt->MatmulAlgoGetHeuristic(l->handle, g->desc, g->la, g->lb, g->ld, g->ld, g->pref, GEMM_MAX_ALGOS, heur, &nheur);
	if (st != CUBLAS_STATUS_SUCCESS || nheur <= 0) {
		snprintf(why, whyn, "cuBLASLt has no algorithm for %s on this GPU (%s)", dtype_get(dt)->title,
			 st == CUBLAS_STATUS_SUCCESS ? "no heuristic result" : cublaslt_status_name(st));
		return 0;
	}
	return nheur;
}

bool gemm_algo_usable(const cublasLtMatmulHeuristicResult_t *h)
{
	return h->state == CUBLAS_STATUS_SUCCESS && h->workspaceSize <= GEMM_WORKSPACE_BYTES;
}

bool gemm_enqueue(bench_ctx *c, const gemm_lane *l, gemm_run *g, const cublasLtMatmulAlgo_t *algo,
		  const gemm_scalars *k, int iters, char *why, size_t n)
{
	for (int i = 0; i < iters; i++) {
		cublasStatus_t st = c->lt->Matmul(l->handle, g->desc, k->alpha, (void *)(uintptr_t)g->a, g->la,
						  (void *)(uintptr_t)g->b, g->lb, k->beta, (void *)(uintptr_t)(g->c ? g->c : g->d),
						  g->ld, (void *)(uintptr_t)g->d, g->ld, algo, (void *)(uintptr_t)g->ws,
						  GEMM_WORKSPACE_BYTES, l->stream);
		if (st != CUBLAS_STATUS_SUCCESS) {
			snprintf(why, n, "cublasLtMatmul failed: %s (%d)", cublaslt_status_name(st), st);
			return false;
		}
	}
	return true;
}

/* How long the guard kernel keeps the GPU busy ahead of the start event: cublasLtMatmul's host
 * side and the event record take some microseconds; 50 us covers them with room to spare. */
#define GUARD_NS 50000u

double gemm_time(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g, const cublasLtMatmulAlgo_t *algo,
		 const gemm_scalars *k, int iters, char *why, size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	CUresult rc = gpu_guard(c->gpu, d, l->stream, GUARD_NS);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuEventRecord(l->start, l->stream);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuEventRecord", rc, why, n);
		return -1;
	}
	if (!gemm_enqueue(c, l, g, algo, k, iters, why, n))
		return -1;
	float ms = 0;
	if ((rc = gpu_events_elapsed(c->gpu, l->stream, l->start, l->end, &ms)) != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "the GEMM (waiting for its end event)", rc, why, n);
		return -1;
	}
	return (double)ms / iters;
}

int gemm_first_algo(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g,
		    const cublasLtMatmulHeuristicResult_t *heur, int nheur, const gemm_scalars *k, char *why, size_t whyn)
{
	int first = -1;
	double first_ms = -1;
	why[0] = 0;
	for (int i = 0; i < nheur && first < 0; i++) {
		if (!gemm_algo_usable(&heur[i]))
			continue;
		first_ms = gemm_time(c, d, l, g, &heur[i].algo, k, 1, why, whyn);
		if (first_ms > 0)
			first = i;
	}
	if (first < 0 && (first_ms >= 0 || !why[0]))
		snprintf(why, whyn, "no cuBLASLt algorithm ran");
	return first;
}

int gemm_fastest_algo(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g,
		      const cublasLtMatmulHeuristicResult_t *heur, int nheur, int first, const gemm_scalars *k, char *why,
		      size_t whyn)
{
	/* Timed like PyTorch users time a matmul (and like anchors/bench_torch.py): a few warm-up
	 * GEMMs, then each GEMM timed on its own with CUDA events, the median kept. A long sustained
	 * run measures something else: on an H200 a second of back-to-back bf16 GEMMs pulls the SM
	 * clock from ~1980 to ~1550 MHz under the 700 W limit (seen on 2026-11-29). */
	for (int w = 0; w < 3 && !watchdog_expired(); w++)
		if (gemm_time(c, d, l, g, &heur[first].algo, k, 1, why, whyn) < 0)
			break;
	int trial_iters = 3, tries = 4, best = first;
	double best_ms = INFINITY;
	for (int i = first; i < nheur && i < first + tries; i++) {
		if (!gemm_algo_usable(&heur[i]))
			continue;
		char e[256];
		double ms = gemm_time(c, d, l, g, &heur[i].algo, k, trial_iters, e, sizeof(e));
		if (ms > 0 && ms < best_ms) {
			best_ms = ms;
			best = i;
		}
		if (watchdog_expired())
			break;
	}
	return best;
}

bool gemm_inputs_ok(bench_ctx *c, gpu_dev *d, gemm_run *g, bench_dtype dt, int n, char *why, size_t whyn)
{
	return gpu_check_fill(c->gpu, d, dt, g->a, (uint64_t)n * n, GEMM_SEED_A, why, whyn) &&
	       gpu_check_fill(c->gpu, d, dt, g->b, (uint64_t)n * n, GEMM_SEED_B, why, whyn);
}

bool gemm_sample(bench_ctx *c, gemm_run *g, bench_dtype dt, int n, size_t nr, size_t nc, verify_result *vr, char *why,
		 size_t whyn)
{
	const dtype_info *t = dtype_get(dt);
	const gv_cuda_api *cu = c->gpu->cu;
	if (nr > (size_t)n)
		nr = (size_t)n;
	if (nc > (size_t)n)
		nc = (size_t)n;
	int64_t *rows = xmalloc((nr ? nr : 1) * sizeof(int64_t)), *cols = xmalloc((nc ? nc : 1) * sizeof(int64_t));
	verify_pick(n, nr, 0x5151u + (unsigned)dt, rows);
	verify_pick(n, nc, 0x7373u + (unsigned)dt, cols);
	unsigned char *col = xmalloc((size_t)n * (size_t)t->out_bytes);
	double *got = xmalloc((nr * nc > 0 ? nr * nc : 1) * sizeof(double));
	bool ok = true;
	for (size_t j = 0; j < nc && ok; j++) {
		CUresult rc = cu->cuMemcpyDtoH(col, g->d + (uint64_t)cols[j] * (uint64_t)n * (uint64_t)t->out_bytes,
					       (size_t)n * (size_t)t->out_bytes);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(c->gpu, "cuMemcpyDtoH of the GEMM result", rc, why, whyn);
			ok = false;
			break;
		}
		for (size_t i = 0; i < nr; i++)
			got[i + j * nr] = gen_decode(dt, col + (size_t)rows[i] * (size_t)t->out_bytes, 1);
	}
	if (ok) {
		gemm_shape sh = {n, n, n, gemm_types_of(dt).transa};
		verify_init(vr);
		verify_block(dt, &sh, GEMM_SEED_A, GEMM_SEED_B, rows, nr, cols, nc, got, vr);
	}
	free(rows);
	free(cols);
	free(col);
	free(got);
	return ok;
}
