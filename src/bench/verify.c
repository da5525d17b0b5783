#include "bench/verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gen.h"
#include "core/util.h"

double verify_allowed(bench_dtype d, int64_t k, double ref, double l2)
{
	const dtype_info *t = dtype_get(d);
	if (!t || t->integer)
		return 0;
	return t->u_out * fabs(ref) + (8 * t->u_acc * sqrt((double)(k > 0 ? k : 1)) + 6 * t->u_in) * l2 + 1e-300;
}

void verify_init(verify_result *r)
{
	memset(r, 0, sizeof(*r));
	r->worst_i = r->worst_j = -1;
}

void verify_add(verify_result *r, bench_dtype d, int64_t k, int64_t i, int64_t j, double got, double ref, double l2)
{
	double allowed = verify_allowed(d, k, ref, l2);
	double err = fabs(got - ref);
	double ratio;
	if (!isfinite(got))
		ratio = INFINITY;
	else if (allowed == 0)
		ratio = err == 0 ? 0 : INFINITY;
	else
		ratio = err / allowed;
	r->checked++;
	if (!(ratio <= 1))
		r->bad++;
	if (r->checked == 1 || !(ratio <= r->worst)) {
		r->worst = ratio;
		r->worst_i = i;
		r->worst_j = j;
		r->worst_got = got;
		r->worst_ref = ref;
		r->worst_allowed = allowed;
	}
}

static uint64_t a_index(const gemm_shape *s, int64_t i, int64_t p)
{
	return s->transa ? (uint64_t)(p + i * s->k) : (uint64_t)(i + p * s->m);
}

static void fill_row(bench_dtype d, const gemm_shape *s, uint32_t seed, int64_t i, double *out)
{
	for (int64_t p = 0; p < s->k; p++)
		out[p] = gen_value(d, seed, a_index(s, i, p));
}

static void fill_col(bench_dtype d, const gemm_shape *s, uint32_t seed, int64_t j, double *out)
{
	for (int64_t p = 0; p < s->k; p++)
		out[p] = gen_value(d, seed, (uint64_t)(p + j * s->k));
}

static void dot(bench_dtype d, const double *a, const double *b, int64_t k, double *ref, double *l2)
{
	/* long double for fp64: its products carry 106 bits and a double sum would be no better
	 * than the GPU being judged. Other types' products are exact in double. */
	if (d == DT_FP64) {
		long double s = 0, q = 0;
		for (int64_t p = 0; p < k; p++) {
			long double x = (long double)a[p] * b[p];
			s += x;
			q += x * x;
		}
		*ref = (double)s;
		*l2 = sqrt((double)q);
		return;
	}
	double s = 0, q = 0;
	for (int64_t p = 0; p < k; p++) {
		double x = a[p] * b[p];
		s += x;
		q += x * x;
	}
	*ref = s;
	*l2 = sqrt(q);
}

void verify_reference(bench_dtype d, const gemm_shape *s, uint32_t seed_a, uint32_t seed_b, int64_t i, int64_t j,
		      double *ref, double *l2)
{
	double *a = xmalloc((size_t)s->k * sizeof(double));
	double *b = xmalloc((size_t)s->k * sizeof(double));
	fill_row(d, s, seed_a, i, a);
	fill_col(d, s, seed_b, j, b);
	dot(d, a, b, s->k, ref, l2);
	free(a);
	free(b);
}

void verify_block(bench_dtype d, const gemm_shape *s, uint32_t seed_a, uint32_t seed_b, const int64_t *rows,
		  size_t nr, const int64_t *cols, size_t nc, const double *got, verify_result *r)
{
	size_t k = (size_t)s->k;
	double *a = xmalloc(nr * k * sizeof(double));
	double *b = xmalloc(k * sizeof(double));
	for (size_t x = 0; x < nr; x++)
		fill_row(d, s, seed_a, rows[x], a + x * k);
	for (size_t c = 0; c < nc; c++) {
		fill_col(d, s, seed_b, cols[c], b);
		for (size_t x = 0; x < nr; x++) {
			double ref, l2;
			dot(d, a + x * k, b, s->k, &ref, &l2);
			verify_add(r, d, s->k, rows[x], cols[c], got[x + c * nr], ref, l2);
		}
	}
	free(a);
	free(b);
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

void verify_pick(int64_t limit, size_t n, uint32_t seed, int64_t *out)
{
	if (limit <= 0 || n == 0)
		return;
	if ((int64_t)n >= limit) {
		for (int64_t i = 0; i < limit; i++)
			out[i] = i;
		return;
	}
	size_t got = 0;
	out[got++] = 0;
	if (n > 1)
		out[got++] = limit - 1;
	uint32_t h = seed;
	while (got < n) {
		h = gen_hash32(h + 0x632BE5ABu);
		int64_t v = (int64_t)(((uint64_t)h * (uint64_t)limit) >> 32);
		bool dup = false;
		for (size_t x = 0; x < got && !dup; x++)
			dup = out[x] == v;
		if (!dup)
			out[got++] = v;
	}
	qsort(out, n, sizeof(*out), cmp_i64);
}

void verify_describe(const verify_result *r, char *buf, size_t size)
{
	if (r->checked == 0) {
		snprintf(buf, size, "no element checked");
	} else if (r->bad == 0) {
		snprintf(buf, size, "%zu sampled elements match the CPU reference (worst error %.2g of the bound)",
			 r->checked, r->worst);
	} else {
		snprintf(buf, size,
			 "%zu of %zu sampled elements are wrong; e.g. D[%lld,%lld] = %.9g, the CPU reference is %.9g "
			 "(allowed error %.3g)",
			 r->bad, r->checked, (long long)r->worst_i, (long long)r->worst_j, r->worst_got, r->worst_ref,
			 r->worst_allowed);
	}
}
