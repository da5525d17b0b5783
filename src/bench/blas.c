#include "bench/blas.h"

#include <stdio.h>
#include <string.h>

enum { CBLAS_COL_MAJOR = 102, CBLAS_NO_TRANS = 111 };

static const char *const sonames[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3", NULL};

bool blas_load(blas_api *api, int threads)
{
	memset(api, 0, sizeof(*api));
	lib_spec spec = {"a BLAS library", "GPUVET_BLAS_LIB", sonames, NULL, NULL};
	if (!lib_open(&spec, &api->lib)) {
		snprintf(api->lib.error, sizeof(api->lib.error),
			 "no BLAS library: neither libopenblas.so.0 nor libblas.so.3 loads (install libopenblas0)");
		return false;
	}
	api->cblas_sgemm = lib_sym(&api->lib, "cblas_sgemm");
	api->cblas_dgemm = lib_sym(&api->lib, "cblas_dgemm");
	api->sgemm_ = lib_sym(&api->lib, "sgemm_");
	api->dgemm_ = lib_sym(&api->lib, "dgemm_");
	if (!(api->cblas_sgemm || api->sgemm_) || !(api->cblas_dgemm || api->dgemm_)) {
		snprintf(api->lib.error, sizeof(api->lib.error), "%s has no sgemm/dgemm", api->lib.path);
		lib_close(&api->lib);
		return false;
	}
	char *(*get_config)(void) = lib_sym(&api->lib, "openblas_get_config");
	void (*openblas_threads)(int) = lib_sym(&api->lib, "openblas_set_num_threads");
	void (*mkl_threads)(int) = lib_sym(&api->lib, "MKL_Set_Num_Threads");
	void (*blis_threads)(long) = lib_sym(&api->lib, "bli_thread_set_num_threads");
	if (get_config || openblas_threads) {
		str_copy(api->impl, sizeof(api->impl), "OpenBLAS");
		api->set_num_threads = openblas_threads;
		if (get_config && get_config())
			str_copy(api->config, sizeof(api->config), get_config());
	} else if (mkl_threads) {
		str_copy(api->impl, sizeof(api->impl), "MKL");
		api->set_num_threads = mkl_threads;
	} else if (blis_threads) {
		str_copy(api->impl, sizeof(api->impl), "BLIS");
		if (threads > 0)
			blis_threads(threads);
		api->threads = threads > 0 ? threads : 0;
	} else if (strstr(api->lib.path, "openblas")) {
		/* Debian's OpenBLAS libblas.so.3 exports no openblas_* symbols; it still uses every core. */
		str_copy(api->impl, sizeof(api->impl), "OpenBLAS");
	} else {
		str_copy(api->impl, sizeof(api->impl), "reference or unknown");
	}
	if (api->set_num_threads && threads > 0) {
		api->set_num_threads(threads);
		api->threads = threads;
	}
	return true;
}

void blas_unload(blas_api *api)
{
	lib_close(&api->lib);
	memset(api, 0, sizeof(*api));
}

void blas_gemm(const blas_api *api, bool dbl, int n, const void *a, const void *b, void *c)
{
	if (dbl) {
		if (api->cblas_dgemm) {
			api->cblas_dgemm(CBLAS_COL_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
		} else {
			double one = 1, zero = 0;
			api->dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n, 1, 1);
		}
	} else {
		if (api->cblas_sgemm) {
			api->cblas_sgemm(CBLAS_COL_MAJOR, CBLAS_NO_TRANS, CBLAS_NO_TRANS, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
		} else {
			float one = 1, zero = 0;
			api->sgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n, 1, 1);
		}
	}
}
