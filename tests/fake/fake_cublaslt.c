/*
 * A fake cuBLASLt for tests, loaded through GPUVET_CUBLASLT_LIB beside the fake libcuda (whose
 * device pointers are host pointers) and configured by the same GPUVET_FAKE_CONFIG file
 * (README.md, "Keys: cuBLASLt"). The entry points of src/bench/cublaslt.h: descriptors, layouts
 * and preferences keep what they are given; the heuristic answers a few algorithms; Matmul
 * computes D = alpha op(A) op(B) + beta C on the host at once (the stream is ignored),
 * column-major, for the type combinations gpuvet bench uses, in double (long double for fp64,
 * exact integers for int8) and rounded to the output type. Naive loops: tests use n of 64-256.
 *
 * Faults: an algorithm whose in-place split-K reduction is not deterministic
 * (cublaslt.nondeterministic), silent corruption of one element (cublaslt.corrupt), no algorithm
 * (cublaslt.heuristics = 0), and any call failing through error.FN (error.cublasLtMatmul = 13).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/cublaslt.h"
#include "fake_config.h"

#define ALGO_MAGIC 0xFA4Eu
#define MAX_ANSWERS 8

struct cublasLtContext {
	unsigned long matmuls; /* Matmul calls on this handle (cublaslt.corrupt counts them) */
};

enum { OBJ_DESC = 1, OBJ_LAYOUT, OBJ_PREF };
/* descriptors, layouts and preferences are one opaque type in cublaslt.h */
struct gv_cublasLtOpaque {
	int kind;
	int compute, scale;            /* desc */
	int32_t transa, transb;
	const float *a_scale, *b_scale;
	int type;                      /* layout */
	uint64_t rows, cols;
	int64_t ld;
	uint64_t max_workspace;        /* preference */
	uint32_t reductions;
};

static cublasStatus_t make(cublasLtMatmulDesc_t *out, int kind)
{
	if (!out)
		return CUBLAS_STATUS_INVALID_VALUE;
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return CUBLAS_STATUS_ALLOC_FAILED;
	(*out)->kind = kind;
	return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t destroy(const char *fn, struct gv_cublasLtOpaque *o, int kind)
{
	int rc = fake_error(fn, -1);
	if (rc)
		return rc;
	if (o && o->kind != kind)
		return CUBLAS_STATUS_INVALID_VALUE;
	free(o);
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- handle, version ---- */

FAKE_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
	fake_reload(); /* the file is read again and the call counters start over */
	int rc = fake_error("cublasLtCreate", -1);
	if (rc)
		return rc;
	if (!h)
		return CUBLAS_STATUS_INVALID_VALUE;
	*h = calloc(1, sizeof(**h));
	return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

FAKE_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
	int rc = fake_error("cublasLtDestroy", -1);
	if (rc)
		return rc;
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	free(h);
	return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT size_t cublasLtGetVersion(void)
{
	return (size_t)fake_num("cublaslt.version", 130100, NULL);
}

/* ---- matmul descriptors ---- */

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, int compute, int scale)
{
	int rc = fake_error("cublasLtMatmulDescCreate", -1);
	if (rc)
		return rc;
	cublasStatus_t st = make(d, OBJ_DESC);
	if (st == CUBLAS_STATUS_SUCCESS) {
		(*d)->compute = compute;
		(*d)->scale = scale;
	}
	return st;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d)
{
	return destroy("cublasLtMatmulDescDestroy", d, OBJ_DESC);
}

/* The attributes gpuvet sets, each of its own size; any other is INVALID_VALUE (a wrong number in
 * cublaslt.h shows here). */
FAKE_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, int attr, const void *buf, size_t size)
{
	int rc = fake_error("cublasLtMatmulDescSetAttribute", -1);
	if (rc)
		return rc;
	if (!d || d->kind != OBJ_DESC || !buf)
		return CUBLAS_STATUS_INVALID_VALUE;
	switch (attr) {
	case GV_CUBLASLT_MATMUL_DESC_TRANSA:
	case GV_CUBLASLT_MATMUL_DESC_TRANSB:
		if (size != sizeof(int32_t))
			return CUBLAS_STATUS_INVALID_VALUE;
		memcpy(attr == GV_CUBLASLT_MATMUL_DESC_TRANSA ? &d->transa : &d->transb, buf, size);
		return CUBLAS_STATUS_SUCCESS;
	case GV_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
	case GV_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
		if (size != sizeof(void *))
			return CUBLAS_STATUS_INVALID_VALUE;
		memcpy(attr == GV_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER ? &d->a_scale : &d->b_scale, buf, size);
		return CUBLAS_STATUS_SUCCESS;
	case GV_CUBLASLT_MATMUL_DESC_FAST_ACCUM: return size == sizeof(int8_t) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
}

/* ---- layouts, preferences ---- */

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, int type, uint64_t rows, uint64_t cols,
						     int64_t ld)
{
	int rc = fake_error("cublasLtMatrixLayoutCreate", -1);
	if (rc)
		return rc;
	if ((int64_t)rows > ld || ld <= 0)
		return CUBLAS_STATUS_INVALID_VALUE; /* column-major: ld >= rows */
	cublasStatus_t st = make(l, OBJ_LAYOUT);
	if (st == CUBLAS_STATUS_SUCCESS) {
		(*l)->type = type;
		(*l)->rows = rows;
		(*l)->cols = cols;
		(*l)->ld = ld;
	}
	return st;
}

FAKE_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l)
{
	return destroy("cublasLtMatrixLayoutDestroy", l, OBJ_LAYOUT);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p)
{
	int rc = fake_error("cublasLtMatmulPreferenceCreate", -1);
	if (rc)
		return rc;
	cublasStatus_t st = make(p, OBJ_PREF);
	if (st == CUBLAS_STATUS_SUCCESS)
		(*p)->reductions = GV_CUBLASLT_REDUCTION_SCHEME_MASK; /* cuBLASLt's default: every scheme */
	return st;
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p)
{
	return destroy("cublasLtMatmulPreferenceDestroy", p, OBJ_PREF);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p, int attr, const void *buf,
							       size_t size)
{
	int rc = fake_error("cublasLtMatmulPreferenceSetAttribute", -1);
	if (rc)
		return rc;
	if (!p || p->kind != OBJ_PREF || !buf)
		return CUBLAS_STATUS_INVALID_VALUE;
	if (attr == GV_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t))
		memcpy(&p->max_workspace, buf, size);
	else if (attr == GV_CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK && size == sizeof(uint32_t))
		memcpy(&p->reductions, buf, size);
	else
		return CUBLAS_STATUS_INVALID_VALUE;
	return CUBLAS_STATUS_SUCCESS;
}

/* ---- types ---- */

/* The combinations gpuvet bench uses (compute, A/B, C/D, A transposed): fp8 and int8 only "TN",
 * as on the GPU. */
static bool supported(const struct gv_cublasLtOpaque *d, int ab, int cd)
{
	static const struct {
		int compute, ab, cd;
		bool tn_only;
	} combos[] = {
		{GV_CUBLAS_COMPUTE_64F, GV_CUDA_R_64F, GV_CUDA_R_64F, false},
		{GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_32F, GV_CUDA_R_32F, false},
		{GV_CUBLAS_COMPUTE_32F_FAST_TF32, GV_CUDA_R_32F, GV_CUDA_R_32F, false},
		{GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_16F, GV_CUDA_R_16F, false},
		{GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_16BF, GV_CUDA_R_16BF, false},
		{GV_CUBLAS_COMPUTE_32F, GV_CUDA_R_8F_E4M3, GV_CUDA_R_16BF, true},
		{GV_CUBLAS_COMPUTE_32I, GV_CUDA_R_8I, GV_CUDA_R_32I, true},
	};
	for (size_t i = 0; i < sizeof(combos) / sizeof(combos[0]); i++)
		if (combos[i].compute == d->compute && combos[i].ab == ab && combos[i].cd == cd)
			return !combos[i].tn_only || (d->transa == GV_CUBLAS_OP_T && d->transb == GV_CUBLAS_OP_N);
	return false;
}

static double from_half(uint16_t b)
{
	int e = (b >> 10) & 31, m = b & 1023;
	double v = e == 0 ? m * 0x1p-24 : e == 31 ? (m ? NAN : INFINITY) : (1024 + m) * ldexp(1, e - 25);
	return b >> 15 ? -v : v;
}

static double from_e4m3(uint8_t b)
{
	int e = (b >> 3) & 15, m = b & 7;
	double v = e == 15 && m == 7 ? NAN : e == 0 ? m * 0x1p-9 : (8 + m) * ldexp(1, e - 10);
	return b >> 7 ? -v : v;
}

static double element(int type, const void *base, size_t i)
{
	const unsigned char *p = base;
	switch (type) {
	case GV_CUDA_R_64F: {
		double v;
		memcpy(&v, p + 8 * i, 8);
		return v;
	}
	case GV_CUDA_R_32F: {
		float v;
		memcpy(&v, p + 4 * i, 4);
		return v;
	}
	case GV_CUDA_R_16F: {
		uint16_t b;
		memcpy(&b, p + 2 * i, 2);
		return from_half(b);
	}
	case GV_CUDA_R_16BF: {
		uint16_t b;
		memcpy(&b, p + 2 * i, 2);
		uint32_t u = (uint32_t)b << 16;
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	case GV_CUDA_R_8F_E4M3: return from_e4m3(p[i]);
	case GV_CUDA_R_8I: return (int8_t)p[i];
	case GV_CUDA_R_32I: {
		int32_t v;
		memcpy(&v, p + 4 * i, 4);
		return v;
	}
	default: return NAN;
	}
}

/* float to fp16, rounded to nearest even (subnormals, overflow to infinity) */
static uint16_t to_half(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000, m = x & 0x7FFFFF;
	int e = (int)((x >> 23) & 0xFF) - 127 + 15;
	if (((x >> 23) & 0xFF) == 0xFF)
		return (uint16_t)(sign | 0x7C00 | (m ? 0x200 : 0));
	if (e >= 31)
		return (uint16_t)(sign | 0x7C00);
	int shift = 13;
	uint32_t base = (uint32_t)e << 10;
	if (e <= 0) { /* subnormal: the implicit bit joins the mantissa */
		if (e < -10)
			return (uint16_t)sign;
		m |= 0x800000;
		shift = 14 - e;
		base = 0;
	}
	uint32_t h = base + (m >> shift), rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
	if (rem > half || (rem == half && (h & 1)))
		h++; /* a carry into the exponent is right */
	return (uint16_t)(sign | h);
}

static void put(int type, void *base, size_t i, double v)
{
	unsigned char *p = base;
	float f = (float)v;
	uint32_t u;
	memcpy(&u, &f, 4);
	switch (type) {
	case GV_CUDA_R_64F: memcpy(p + 8 * i, &v, 8); break;
	case GV_CUDA_R_32F: memcpy(p + 4 * i, &f, 4); break;
	case GV_CUDA_R_16F: {
		uint16_t b = to_half(f);
		memcpy(p + 2 * i, &b, 2);
		break;
	}
	case GV_CUDA_R_16BF: {
		uint16_t b = (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16); /* nearest even */
		memcpy(p + 2 * i, &b, 2);
		break;
	}
	case GV_CUDA_R_32I: {
		int32_t x = (int32_t)v;
		memcpy(p + 4 * i, &x, 4);
		break;
	}
	default: break;
	}
}

/* alpha or beta, in the scale type */
static double scalar(int scale, const void *p)
{
	if (scale == GV_CUDA_R_64F)
		return *(const double *)p;
	if (scale == GV_CUDA_R_32I)
		return *(const int32_t *)p;
	return *(const float *)p;
}

/* ---- heuristic, matmul ---- */

/* The algorithms answered: cublaslt.heuristics of them (default 3). When the preference allows
 * an in-place split-K reduction (cuBLASLt's default), the first one is such an algorithm, as the
 * real heuristic may prefer at small sizes; the others do not split k. */
FAKE_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t d,
							 cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
							 cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dl,
							 cublasLtMatmulPreference_t p, int requested,
							 cublasLtMatmulHeuristicResult_t *res, int *returned)
{
	int rc = fake_error("cublasLtMatmulAlgoGetHeuristic", -1);
	if (rc)
		return rc;
	if (!h || !d || !a || !b || !c || !dl || !p || !res || !returned || requested <= 0)
		return CUBLAS_STATUS_INVALID_VALUE;
	*returned = 0;
	long long n = fake_num("cublaslt.heuristics", 3, NULL);
	if (n > MAX_ANSWERS)
		n = MAX_ANSWERS;
	if (n > requested)
		n = requested;
	if (a->type != b->type || c->type != dl->type || !supported(d, a->type, dl->type) || n <= 0)
		return CUBLAS_STATUS_NOT_SUPPORTED; /* what cuBLASLt answers when no algorithm fits */
	bool inplace = p->reductions & GV_CUBLASLT_REDUCTION_SCHEME_INPLACE;
	for (int i = 0; i < n; i++) {
		memset(&res[i], 0, sizeof(res[i]));
		res[i].algo.data[0] = ALGO_MAGIC;
		res[i].algo.data[1] = (uint64_t)i;
		res[i].algo.data[2] = i == 0 && inplace ? GV_CUBLASLT_REDUCTION_SCHEME_INPLACE : GV_CUBLASLT_REDUCTION_SCHEME_NONE;
		res[i].state = CUBLAS_STATUS_SUCCESS;
		res[i].wavesCount = 1;
	}
	*returned = (int)n;
	return CUBLAS_STATUS_SUCCESS;
}

/* "ITER:ROW:COL" (ITER * for every call): whether this call corrupts, and where */
static bool corrupt_at(unsigned long call, int64_t *row, int64_t *col)
{
	char buf[128], iter[32];
	const char *v = fake_pick("cublaslt.corrupt", buf, sizeof(buf));
	long long r, c;
	if (!v || sscanf(v, "%31[^:]:%lld:%lld", iter, &r, &c) != 3)
		return false;
	long long it = 0;
	if (strcmp(iter, "*") != 0 && (!fake_parse_num(iter, &it) || (unsigned long long)it != call))
		return false;
	*row = r;
	*col = c;
	return true;
}

/* op(X)(i, p) of a stored matrix: X[i + p ld], or X[p + i ld] when transposed */
static size_t at(int32_t op, int64_t i, int64_t p, int64_t ld)
{
	return op == GV_CUBLAS_OP_T ? (size_t)(p + i * ld) : (size_t)(i + p * ld);
}

FAKE_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A,
					  cublasLtMatrixLayout_t la, const void *B, cublasLtMatrixLayout_t lb,
					  const void *beta, const void *C, cublasLtMatrixLayout_t lc, void *D,
					  cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws,
					  size_t ws_size, void *stream)
{
	(void)ws, (void)ws_size, (void)stream;
	int rc = fake_error("cublasLtMatmul", -1);
	if (rc)
		return rc;
	if (!h)
		return CUBLAS_STATUS_NOT_INITIALIZED;
	if (!d || !alpha || !beta || !A || !B || !C || !D || !la || !lb || !lc || !ld || (algo && algo->data[0] != ALGO_MAGIC))
		return CUBLAS_STATUS_INVALID_VALUE;
	if (!supported(d, la->type, ld->type) || lb->type != la->type || lc->type != ld->type)
		return CUBLAS_STATUS_NOT_SUPPORTED;
	/* D is m x n, op(A) m x k, op(B) k x n */
	int64_t m = (int64_t)ld->rows, n = (int64_t)ld->cols;
	int64_t k = (int64_t)(d->transa == GV_CUBLAS_OP_T ? la->rows : la->cols);
	if ((int64_t)(d->transa == GV_CUBLAS_OP_T ? la->cols : la->rows) != m ||
	    (int64_t)(d->transb == GV_CUBLAS_OP_T ? lb->cols : lb->rows) != k ||
	    (int64_t)(d->transb == GV_CUBLAS_OP_T ? lb->rows : lb->cols) != n || lc->rows != ld->rows || lc->cols != ld->cols)
		return CUBLAS_STATUS_INVALID_VALUE;
	unsigned long call = ++h->matmuls;
	int64_t bad_i = -1, bad_j = -1;
	bool corrupt = corrupt_at(call, &bad_i, &bad_j);
	double al = scalar(d->scale, alpha), be = scalar(d->scale, beta);
	double sa = d->a_scale ? *d->a_scale : 1, sb = d->b_scale ? *d->b_scale : 1;
	for (int64_t j = 0; j < n; j++)
		for (int64_t i = 0; i < m; i++) {
			long double s = 0;
			int64_t si = 0;
			for (int64_t p = 0; p < k; p++) {
				double x = element(la->type, A, at(d->transa, i, p, la->ld));
				double y = element(lb->type, B, at(d->transb, p, j, lb->ld));
				if (d->compute == GV_CUBLAS_COMPUTE_32I)
					si += (int64_t)x * (int64_t)y;
				else if (d->compute == GV_CUBLAS_COMPUTE_64F)
					s += (long double)x * y;
				else
					s += x * y; /* products of 16-bit and narrower inputs are exact in double */
			}
			double v = d->compute == GV_CUBLAS_COMPUTE_32I ? (double)si : (double)s;
			v = al * sa * sb * v + (be != 0 ? be * element(lc->type, C, at(GV_CUBLAS_OP_N, i, j, lc->ld)) : 0);
			if (corrupt && i == bad_i && j == bad_j)
				v = 2 * v + (v < 0 ? -1 : 1); /* silently wrong: |error| = |v| + 1 */
			put(ld->type, D, at(GV_CUBLAS_OP_N, i, j, ld->ld), v);
		}
	/* an in-place split-K reduction that adds its parts in a varying order: the lowest bit of
	 * D[0,0] differs from one call to the next */
	if (algo && algo->data[2] == GV_CUBLASLT_REDUCTION_SCHEME_INPLACE && fake_num("cublaslt.nondeterministic", 0, NULL) &&
	    call % 2 == 0)
		((unsigned char *)D)[0] ^= 1;
	return CUBLAS_STATUS_SUCCESS;
}
