/*
 * cuBLASLt loaded at run time. The types and enum values below are our own declarations of
 * cuBLASLt's ABI; the numbers were checked against CUDA 13.0's cublasLt.h, cublas_api.h and
 * library_types.h (they are stable since CUDA 11), which are never included.
 *
 * Which library: GPUVET_CUBLASLT_LIB when set; else libcublasLt.so.13 / .12 / .11 through the
 * loader; else a pip wheel's copy (nvidia/cu13/lib, nvidia/cublas/lib in site-packages).
 */
#ifndef GPUVET_BENCH_CUBLASLT_H
#define GPUVET_BENCH_CUBLASLT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/libfind.h"

typedef int cublasStatus_t;
enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_ALLOC_FAILED = 3,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_ARCH_MISMATCH = 8,
	CUBLAS_STATUS_MAPPING_ERROR = 11,
	CUBLAS_STATUS_EXECUTION_FAILED = 13,
	CUBLAS_STATUS_INTERNAL_ERROR = 14,
	CUBLAS_STATUS_NOT_SUPPORTED = 15,
	CUBLAS_STATUS_LICENSE_ERROR = 16,
};

/* cudaDataType_t (library_types.h) */
enum {
	GV_CUDA_R_32F = 0,
	GV_CUDA_R_64F = 1,
	GV_CUDA_R_16F = 2,
	GV_CUDA_R_8I = 3,
	GV_CUDA_R_32I = 10,
	GV_CUDA_R_16BF = 14,
	GV_CUDA_R_8F_E4M3 = 28,
};
/* cublasComputeType_t */
enum {
	GV_CUBLAS_COMPUTE_32F = 68,
	GV_CUBLAS_COMPUTE_32F_FAST_TF32 = 77,
	GV_CUBLAS_COMPUTE_64F = 70,
	GV_CUBLAS_COMPUTE_32I = 72,
};
enum { GV_CUBLAS_OP_N = 0, GV_CUBLAS_OP_T = 1 };
/* cublasLtMatmulDescAttributes_t */
enum {
	GV_CUBLASLT_MATMUL_DESC_TRANSA = 3,        /* int32_t */
	GV_CUBLASLT_MATMUL_DESC_TRANSB = 4,        /* int32_t */
	GV_CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17, /* const void * (device) */
	GV_CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,
	GV_CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25,   /* int8_t */
};
/* cublasLtMatmulPreferenceAttributes_t */
enum {
	GV_CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1, /* uint64_t */
	/* uint32_t, a mask of cublasLtReductionScheme_t: the heuristic answers only algorithms whose
	 * split-K reduction is one of these (an algorithm that does not split k always qualifies);
	 * default GV_CUBLASLT_REDUCTION_SCHEME_MASK, every scheme */
	GV_CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,
};
/* cublasLtReductionScheme_t: how the partial dot products of a split-K algorithm are summed
 * (CUDA 13.0's cublasLt.h). NONE: k is not split, each element is one sequence. INPLACE: the
 * parts are added into D itself, with counters in the workspace ordering them. COMPUTE_TYPE /
 * OUTPUT_TYPE: the parts go to the workspace (in the compute or output type) and a separate
 * step sums them. */
enum {
	GV_CUBLASLT_REDUCTION_SCHEME_NONE = 0,
	GV_CUBLASLT_REDUCTION_SCHEME_INPLACE = 1,
	GV_CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE = 2,
	GV_CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE = 4,
	GV_CUBLASLT_REDUCTION_SCHEME_MASK = 7,
};

typedef struct cublasLtContext *cublasLtHandle_t;
typedef struct gv_cublasLtOpaque *cublasLtMatmulDesc_t;
typedef struct gv_cublasLtOpaque *cublasLtMatrixLayout_t;
typedef struct gv_cublasLtOpaque *cublasLtMatmulPreference_t;
typedef struct {
	uint64_t data[8];
} cublasLtMatmulAlgo_t;
typedef struct {
	cublasLtMatmulAlgo_t algo;
	size_t workspaceSize;
	cublasStatus_t state;
	float wavesCount;
	int reserved[4];
} cublasLtMatmulHeuristicResult_t;

typedef struct cublaslt_api {
	lib_handle lib;
	size_t version; /* cublasLtGetVersion: 130000 + ... (major*10000 + minor*100 + patch) */
	cublasStatus_t (*Create)(cublasLtHandle_t *);
	cublasStatus_t (*Destroy)(cublasLtHandle_t);
	size_t (*GetVersion)(void);
	cublasStatus_t (*MatmulDescCreate)(cublasLtMatmulDesc_t *, int computeType, int scaleType);
	cublasStatus_t (*MatmulDescDestroy)(cublasLtMatmulDesc_t);
	cublasStatus_t (*MatmulDescSetAttribute)(cublasLtMatmulDesc_t, int attr, const void *buf, size_t size);
	cublasStatus_t (*MatrixLayoutCreate)(cublasLtMatrixLayout_t *, int type, uint64_t rows, uint64_t cols, int64_t ld);
	cublasStatus_t (*MatrixLayoutDestroy)(cublasLtMatrixLayout_t);
	cublasStatus_t (*MatmulPreferenceCreate)(cublasLtMatmulPreference_t *);
	cublasStatus_t (*MatmulPreferenceDestroy)(cublasLtMatmulPreference_t);
	cublasStatus_t (*MatmulPreferenceSetAttribute)(cublasLtMatmulPreference_t, int attr, const void *buf,
						       size_t size);
	cublasStatus_t (*MatmulAlgoGetHeuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
						 cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
						 cublasLtMatmulPreference_t, int requested,
						 cublasLtMatmulHeuristicResult_t *results, int *returned);
	cublasStatus_t (*Matmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *alpha, const void *A,
				 cublasLtMatrixLayout_t, const void *B, cublasLtMatrixLayout_t, const void *beta,
				 const void *C, cublasLtMatrixLayout_t, void *D, cublasLtMatrixLayout_t,
				 const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSize, void *stream);
} cublaslt_api;

/* Loads the library and every symbol above. False with api->lib.error set otherwise. */
bool cublaslt_load(cublaslt_api *api);
void cublaslt_unload(cublaslt_api *api);
/* "CUBLAS_STATUS_NOT_SUPPORTED" */
const char *cublaslt_status_name(cublasStatus_t s);
/* "13.0.2" from the version number */
void cublaslt_version_text(size_t version, char *buf, size_t size);
#endif
