#include "bench/cublaslt.h"

#include <stdio.h>
#include <string.h>

static const char *const sonames[] = {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11", NULL};
static const char *const wheels[] = {"nvidia/cu13/lib", "nvidia/cublas/lib", NULL};

bool cublaslt_load(cublaslt_api *api)
{
	memset(api, 0, sizeof(*api));
	lib_spec spec = {"cuBLASLt", "GPUVET_CUBLASLT_LIB", sonames, wheels, "cublasLtCreate"};
	if (!lib_open(&spec, &api->lib))
		return false;
	const lib_symbol syms[] = {
		{"cublasLtCreate", (void **)&api->Create},
		{"cublasLtDestroy", (void **)&api->Destroy},
		{"cublasLtGetVersion", (void **)&api->GetVersion},
		{"cublasLtMatmulDescCreate", (void **)&api->MatmulDescCreate},
		{"cublasLtMatmulDescDestroy", (void **)&api->MatmulDescDestroy},
		{"cublasLtMatmulDescSetAttribute", (void **)&api->MatmulDescSetAttribute},
		{"cublasLtMatrixLayoutCreate", (void **)&api->MatrixLayoutCreate},
		{"cublasLtMatrixLayoutDestroy", (void **)&api->MatrixLayoutDestroy},
		{"cublasLtMatmulPreferenceCreate", (void **)&api->MatmulPreferenceCreate},
		{"cublasLtMatmulPreferenceDestroy", (void **)&api->MatmulPreferenceDestroy},
		{"cublasLtMatmulPreferenceSetAttribute", (void **)&api->MatmulPreferenceSetAttribute},
		{"cublasLtMatmulAlgoGetHeuristic", (void **)&api->MatmulAlgoGetHeuristic},
		{"cublasLtMatmul", (void **)&api->Matmul},
	};
	if (!lib_bind(&api->lib, syms, sizeof(syms) / sizeof(syms[0])))
		return false;
	api->version = api->GetVersion();
	return true;
}

void cublaslt_unload(cublaslt_api *api)
{
	lib_close(&api->lib);
	memset(api, 0, sizeof(*api));
}

const char *cublaslt_status_name(cublasStatus_t s)
{
	switch (s) {
	case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
	case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
	case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
	case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
	case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
	case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
	case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
	case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
	case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
	case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
	default: return "CUBLAS_STATUS_UNKNOWN";
	}
}

void cublaslt_version_text(size_t v, char *buf, size_t size)
{
	/* CUBLAS_VERSION = major * 10000 + minor * 100 + patch (13.0.2 -> 130002) */
	if (v == 0)
		snprintf(buf, size, "unknown");
	else
		snprintf(buf, size, "%zu.%zu.%zu", v / 10000, v / 100 % 100, v % 100);
}
