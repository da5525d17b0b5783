/*
 * Verification of GEMM results: a sample of output elements is recomputed on the CPU from the
 * generator's model of the inputs (gen.h) and compared with a per-dtype error bound.
 *
 * For element (i, j) with reference r = sum_p a_ip b_pj (exact inputs, computed in double or
 * long double) and l2 = sqrt(sum_p (a_ip b_pj)^2), the GPU's result g passes when
 *
 *	|g - r| <= u_out |r| + (8 u_acc sqrt(k) + 6 u_in) l2 + 1e-300
 *
 * u_out covers rounding of the output, u_acc random-walk rounding in the accumulation (8 sigma
 * of sqrt(k) rounding steps), u_in inputs the GPU rounds (tf32). Integer GEMMs must be exact.
 * With random-sign inputs |r| is about l2, so a wrong layout, a missing tile or garbage gives an
 * error near l2: far above every bound here (the largest, fp8 at k = 8192, is 0.05 l2).
 */
#ifndef GPUVET_BENCH_VERIFY_H
#define GPUVET_BENCH_VERIFY_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/dtype.h"

/* D (m x n) = op(A) (m x k) x B (k x n), column-major, no padding. A is stored k x m and
 * transposed (cuBLAS "T") when transa, else m x k. */
typedef struct gemm_shape {
	int64_t m, n, k;
	bool transa;
} gemm_shape;

typedef struct verify_result {
	size_t checked, bad;
	double worst; /* max over elements of |g - r| / allowed; INFINITY for NaN or a bad integer */
	int64_t worst_i, worst_j;
	double worst_got, worst_ref, worst_allowed;
} verify_result;

double verify_allowed(bench_dtype d, int64_t k, double ref, double l2);
void verify_init(verify_result *r);
/* Judges one element. */
void verify_add(verify_result *r, bench_dtype d, int64_t k, int64_t i, int64_t j, double got, double ref, double l2);

/* The reference and l2 of element (i, j) from seeds of A and B. */
void verify_reference(bench_dtype d, const gemm_shape *s, uint32_t seed_a, uint32_t seed_b, int64_t i, int64_t j,
		      double *ref, double *l2);

/* Judges a block: rows[0..nr) x cols[0..nc), got[r + c * nr] the GPU's values. Generates each
 * needed row of op(A) and column of B once. */
void verify_block(bench_dtype d, const gemm_shape *s, uint32_t seed_a, uint32_t seed_b, const int64_t *rows,
		  size_t nr, const int64_t *cols, size_t nc, const double *got, verify_result *r);

/* Picks n distinct indices in [0, limit) (n <= limit), always including 0 and limit-1 (edge
 * tiles), the rest spread pseudo-randomly by seed; sorted. */
void verify_pick(int64_t limit, size_t n, uint32_t seed, int64_t *out);

/* "1024 elements checked, worst error 0.02 of the bound" or the first bad element. */
void verify_describe(const verify_result *r, char *buf, size_t size);
#endif
