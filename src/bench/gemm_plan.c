/* A GEMM made once and run at will (gemm_plan.h), over bench's GEMM path (gemm_run.h). */
#include "bench/gemm_plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_run.h"
#include "bench/gen.h"

/*
 * The split-K reductions a plan accepts. An algorithm that does not split k computes every
 * element as one sequence of multiply-adds, always in the same order, and passes any mask. Of the
 * split ones, COMPUTE_TYPE and OUTPUT_TYPE write the parts to the workspace and sum them in a
 * separate step, in a fixed order. INPLACE is left out: it adds the parts into D itself, ordered
 * by counters in the workspace, and cuBLASLt's header does not say that this order is the same
 * from run to run; a golden compare that fails on a healthy GPU would be worse than a slower
 * algorithm (at diag's sizes, thousands of rows, the heuristic rarely splits k at all).
 * cuBLAS's documentation also promises bitwise identical results from run to run for one
 * toolkit, architecture and SM count when each stream has its own workspace, as a plan's has.
 * Only two runs of a plan compared on a GPU confirm it.
 */
#define PLAN_REDUCTIONS (GV_CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | GV_CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)

struct gemm_plan {
	bench_ctx *c;
	gpu_dev *d;
	int ordinal, n;
	bench_dtype dt;
	int variant;     /* fp8: gemm_fp8_variants[variant] ran */
	gemm_lane lane;  /* the plan's own handle, stream and events */
	gemm_run g;
	gemm_scalars k;  /* alpha and beta point into it: the plan never moves */
	cublasLtMatmulHeuristicResult_t heur[GEMM_MAX_ALGOS];
	int nheur, algo; /* the heuristic's answers; the one in use */
};

/* The plan's device made current again (another plan's may be). */
static bool plan_use(gemm_plan *p, char *why, size_t whyn)
{
	return gpu_use(p->c->gpu, p->ordinal, why, whyn);
}

static bool lane_make(gemm_plan *p, char *why, size_t whyn)
{
	gpu_session *s = p->c->gpu;
	const gv_cuda_api *cu = s->cu;
	cublasStatus_t st = p->c->lt->Create(&p->lane.handle);
	if (st != CUBLAS_STATUS_SUCCESS) {
		p->lane.handle = NULL;
		snprintf(why, whyn, "cublasLtCreate failed: %s (%d)", cublaslt_status_name(st), st);
		return false;
	}
	CUresult rc;
	if ((rc = cu->cuStreamCreate(&p->lane.stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
		p->lane.stream = NULL;
		gpu_errtext(s, "cuStreamCreate", rc, why, whyn);
		return false;
	}
	if ((rc = cu->cuEventCreate(&p->lane.start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
	    (rc = cu->cuEventCreate(&p->lane.end, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
		gpu_errtext(s, "cuEventCreate", rc, why, whyn);
		return false;
	}
	return true;
}

/* Buffers, descriptors and the first algorithm that runs, for p->variant. False with why;
 * *retry when the next fp8 variant may run (cuBLASLt answered NOT_SUPPORTED). */
static bool plan_build(gemm_plan *p, bool *retry, char *why, size_t whyn)
{
	bench_ctx *c = p->c;
	*retry = false;
	if (!gemm_prepare(c, p->d, p->dt, p->n, p->variant, &p->g, why, whyn))
		return false;
	uint32_t mask = PLAN_REDUCTIONS;
	cublasStatus_t st = c->lt->MatmulPreferenceSetAttribute(p->g.pref, GV_CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
								 &mask, sizeof(mask));
	if (st != CUBLAS_STATUS_SUCCESS) {
		snprintf(why, whyn, "cublasLtMatmulPreferenceSetAttribute (reduction scheme mask) failed: %s (%d)",
			 cublaslt_status_name(st), st);
		return false;
	}
	/* the inputs were generated on the device's stream, the GEMMs run on the plan's */
	CUresult rc = c->gpu->cu->cuStreamSynchronize(p->d->stream);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuStreamSynchronize after the input generator", rc, why, whyn);
		return false;
	}
	p->nheur = gemm_heuristics(c, &p->lane, &p->g, p->dt, p->heur, why, whyn);
	if (p->nheur <= 0)
		return false;
	p->algo = gemm_first_algo(c, p->d, &p->lane, &p->g, p->heur, p->nheur, &p->k, why, whyn);
	if (p->algo < 0) {
		*retry = strstr(why, "NOT_SUPPORTED") != NULL;
		return false;
	}
	return true;
}

gemm_plan *gemm_plan_new(bench_ctx *c, int ordinal, bench_dtype dt, int n, char *why, size_t whyn)
{
	gpu_dev *d = gemm_device(c, ordinal, dt, why, whyn);
	if (!d || !gemm_lt_load(c, why, whyn))
		return NULL;
	gemm_plan *p = xcalloc(1, sizeof(*p));
	p->c = c;
	p->d = d;
	p->ordinal = ordinal;
	p->dt = dt;
	p->algo = -1;
	gemm_scalars_of(gemm_types_of(dt).scale, &p->k);
	if (!lane_make(p, why, whyn)) {
		gemm_plan_free(p);
		return NULL;
	}
	p->n = gemm_fit_n(c, dt, n);
	for (int v = 0; v < (dt == DT_FP8 ? GEMM_FP8_VARIANTS : 1); v++) {
		bool retry;
		p->variant = v;
		if (plan_build(p, &retry, why, whyn))
			return p;
		gemm_free(c, &p->g);
		if (!retry)
			break;
	}
	gemm_plan_free(p);
	return NULL;
}

bool gemm_plan_pick_fastest(gemm_plan *p, char *why, size_t whyn)
{
	if (!plan_use(p, why, whyn))
		return false;
	p->algo = gemm_fastest_algo(p->c, p->d, &p->lane, &p->g, p->heur, p->nheur, p->algo, &p->k, why, whyn);
	/* the trials keep going past a failed one: say whether the one kept runs */
	return gemm_plan_time(p, 1, why, whyn) >= 0;
}

bool gemm_plan_enqueue(gemm_plan *p, int iters, char *why, size_t whyn)
{
	return plan_use(p, why, whyn) &&
	       gemm_enqueue(p->c, &p->lane, &p->g, &p->heur[p->algo].algo, &p->k, iters, why, whyn);
}

bool gemm_plan_sync(gemm_plan *p, char *why, size_t whyn)
{
	if (!plan_use(p, why, whyn))
		return false;
	CUresult rc = p->c->gpu->cu->cuStreamSynchronize(p->lane.stream);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(p->c->gpu, "the GEMMs (cuStreamSynchronize)", rc, why, whyn);
		return false;
	}
	return true;
}

double gemm_plan_time(gemm_plan *p, int iters, char *why, size_t whyn)
{
	if (iters < 1)
		iters = 1;
	if (!plan_use(p, why, whyn))
		return -1;
	return gemm_time(p->c, p->d, &p->lane, &p->g, &p->heur[p->algo].algo, &p->k, iters, why, whyn);
}

bool gemm_plan_verify(gemm_plan *p, size_t rows, size_t cols, verify_result *vr, char *text, size_t textn)
{
	char why[512];
	verify_init(vr);
	if (!gemm_plan_sync(p, why, sizeof(why)) || !gemm_inputs_ok(p->c, p->d, &p->g, p->dt, p->n, why, sizeof(why)) ||
	    !gemm_sample(p->c, &p->g, p->dt, p->n, rows, cols, vr, why, sizeof(why))) {
		verify_init(vr);
		snprintf(text, textn, "not verified: %s", why);
		return false;
	}
	verify_describe(vr, text, textn);
	return vr->checked > 0 && vr->bad == 0;
}

void gemm_plan_reference(const gemm_plan *p, int64_t i, int64_t j, double *ref, double *allowed)
{
	gemm_shape sh = {p->n, p->n, p->n, gemm_types_of(p->dt).transa};
	double l2 = 0;
	verify_reference(p->dt, &sh, GEMM_SEED_A, GEMM_SEED_B, i, j, ref, &l2);
	*allowed = verify_allowed(p->dt, p->n, *ref, l2);
}

double gemm_plan_decode(const gemm_plan *p, const void *d_bytes, int64_t i, int64_t j)
{
	size_t at = ((size_t)i + (size_t)j * (size_t)p->n) * (size_t)gemm_plan_elem_bytes(p);
	return gen_decode(p->dt, (const unsigned char *)d_bytes + at, 1);
}

CUdeviceptr gemm_plan_d(const gemm_plan *p)
{
	return p->g.d;
}

size_t gemm_plan_d_bytes(const gemm_plan *p)
{
	return (size_t)p->n * (size_t)p->n * (size_t)gemm_plan_elem_bytes(p);
}

int gemm_plan_elem_bytes(const gemm_plan *p)
{
	return dtype_get(p->dt)->out_bytes;
}

int gemm_plan_n(const gemm_plan *p)
{
	return p->n;
}

bench_dtype gemm_plan_dtype(const gemm_plan *p)
{
	return p->dt;
}

int gemm_plan_ordinal(const gemm_plan *p)
{
	return p->ordinal;
}

double gemm_plan_tflop(const gemm_plan *p)
{
	return 2.0 * p->n * (double)p->n * p->n / 1e12;
}

CUstream gemm_plan_stream(const gemm_plan *p)
{
	return p->lane.stream;
}

const char *gemm_plan_call(const gemm_plan *p)
{
	return p->dt == DT_FP8 ? gemm_fp8_variants[p->variant].name : NULL;
}

void gemm_plan_free(gemm_plan *p)
{
	if (!p)
		return;
	bench_ctx *c = p->c;
	char why[256];
	/* after an error that broke the context, its memory and streams go with it */
	if (plan_use(p, why, sizeof(why))) {
		const gv_cuda_api *cu = c->gpu->cu;
		if (p->lane.stream) /* GEMMs still queued use the buffers */
			cu->cuStreamSynchronize(p->lane.stream);
		gemm_free(c, &p->g);
		if (p->lane.start && cu->cuEventDestroy)
			cu->cuEventDestroy(p->lane.start);
		if (p->lane.end && cu->cuEventDestroy)
			cu->cuEventDestroy(p->lane.end);
		if (p->lane.stream && cu->cuStreamDestroy)
			cu->cuStreamDestroy(p->lane.stream);
		if (p->lane.handle)
			c->lt->Destroy(p->lane.handle);
	}
	free(p);
}
