/*
 * The CPU's BLAS, loaded at run time for the CPU baseline: OpenBLAS (libopenblas.so.0) first,
 * then whatever libblas.so.3 the system's alternatives point at (OpenBLAS, BLIS, MKL, or the
 * slow reference BLAS). GPUVET_BLAS_LIB names a file to load instead.
 */
#ifndef GPUVET_BENCH_BLAS_H
#define GPUVET_BENCH_BLAS_H
#include <stdbool.h>
#include <stddef.h>

#include "bench/libfind.h"

typedef struct blas_api {
	lib_handle lib;
	char impl[32];     /* "OpenBLAS", "BLIS", "MKL", "reference or unknown" */
	char config[160];  /* openblas_get_config() when available */
	int threads;       /* threads the library was told to use (0: its own default) */
	/* CBLAS when exported, else the Fortran interface */
	void (*cblas_sgemm)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
			    const float *b, int ldb, float beta, float *c, int ldc);
	void (*cblas_dgemm)(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
			    const double *b, int ldb, double beta, double *c, int ldc);
	void (*sgemm_)(const char *ta, const char *tb, const int *m, const int *n, const int *k, const float *alpha,
		       const float *a, const int *lda, const float *b, const int *ldb, const float *beta, float *c,
		       const int *ldc, size_t la, size_t lb);
	void (*dgemm_)(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
		       const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
		       const int *ldc, size_t la, size_t lb);
	void (*set_num_threads)(int);
} blas_api;

/* Loads a BLAS with sgemm and dgemm and asks it to use `threads` threads when it can be told
 * (OpenBLAS, MKL, BLIS); threads <= 0 leaves its default. */
bool blas_load(blas_api *api, int threads);
void blas_unload(blas_api *api);
/* C = A x B, square n x n, column-major, no transposes; dbl selects fp64. */
void blas_gemm(const blas_api *api, bool dbl, int n, const void *a, const void *b, void *c);
#endif
