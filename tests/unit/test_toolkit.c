/* Unit tests of the CUDA version parsers, the library-name matcher and the cuDNN KB lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "kb/kb.h"
#include "kb/kb_cudnn.h"
#include "toolkit/cuda_version.h"
#include "toolkit/cudalibs.h"

#define S(x) x, strlen(x)

static void test_version_files(void **s)
{
	(void)s;
	char v[64];
	assert_true(cuda_version_from_json(S("{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.4.1\"}}"), v, sizeof(v)));
	assert_string_equal(v, "12.4.1");
	assert_true(cuda_version_from_json(S("{\"cuda_cudart\": {\"version\": \"12.4.127\"}}"), v, sizeof(v)));
	assert_string_equal(v, "12.4.127");
	assert_false(cuda_version_from_json(S("{\"cuda\": {\"version\": 12}}"), v, sizeof(v)));
	assert_false(cuda_version_from_json(S("{\"cuda\": {\"version\": \"garbage\"}}"), v, sizeof(v)));
	assert_false(cuda_version_from_json(S("not json"), v, sizeof(v)));
	assert_true(cuda_version_from_txt(S("CUDA Version 11.8.89\n"), v, sizeof(v)));
	assert_string_equal(v, "11.8.89");
	assert_false(cuda_version_from_txt(S("CUDA Version \n"), v, sizeof(v)));
	/* a 10 KiB run of digits: bounded, still "X.Y" only when it parses */
	char *big = malloc(20000);
	memcpy(big, "CUDA Version ", 13);
	memset(big + 13, '9', 19000);
	big[19013] = '\0';
	assert_false(cuda_version_from_txt(big, strlen(big), v, sizeof(v)));
	free(big);
}

static void test_nvcc_output(void **s)
{
	(void)s;
	char v[64];
	const char *out = "nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\n"
			  "Built on Wed_Aug_20_01:58:59_PM_PDT_2025\nCuda compilation tools, release 13.0, V13.0.88\n"
			  "Build cuda_13.0.r13.0/compiler.36424714_0\n";
	assert_true(cuda_version_from_nvcc(S(out), v, sizeof(v)));
	assert_string_equal(v, "13.0.88");
	assert_true(cuda_version_from_nvcc(S("Cuda compilation tools, release 9.2\n"), v, sizeof(v)));
	assert_string_equal(v, "9.2");
	assert_false(cuda_version_from_nvcc(S("segmentation fault\n"), v, sizeof(v)));
	char bin[] = "release \0\xff\x01 V1";
	assert_false(cuda_version_from_nvcc(bin, sizeof(bin), v, sizeof(v)));
}

static void test_headers(void **s)
{
	(void)s;
	char v[64];
	long x;
	const char *h = "/* cudnn */\n#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 14\n#  define CUDNN_PATCHLEVEL 0\n"
			"#define CUDNN_VERSION (CUDNN_MAJOR * 10000)\n";
	assert_true(header_version("cudnn", S(h), v, sizeof(v)));
	assert_string_equal(v, "9.14.0");
	assert_true(header_define_int(S(h), "CUDNN_MINOR", &x));
	assert_int_equal(x, 14);
	assert_false(header_define_int(S(h), "CUDNN_VERSION", &x)); /* an expression, not a number */
	assert_false(header_define_int(S("#define CUDNN_MAJORX 3\n"), "CUDNN_MAJOR", &x));
	assert_true(header_version("cudart", S("#define CUDART_VERSION  12040\n"), v, sizeof(v)));
	assert_string_equal(v, "12.4");
	assert_true(header_version("nccl", S("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n"), v, sizeof(v)));
	assert_string_equal(v, "2.28.9");
	assert_true(header_version("cublas", S("#define CUBLAS_VER_MAJOR 13\n#define CUBLAS_VER_MINOR 1\n"
						"#define CUBLAS_VER_PATCH 0\n#define CUBLAS_VER_BUILD 3\n"), v, sizeof(v)));
	assert_string_equal(v, "13.1.0.3");
	assert_false(header_version("cudnn", S("#define CUDNN_MAJOR 9\n"), v, sizeof(v)));
}

static void test_libnames(void **s)
{
	(void)s;
	char v[64];
	assert_true(libname_version("libcudnn.so.9.14.0", v, sizeof(v)));
	assert_string_equal(v, "9.14.0");
	assert_false(libname_version("libcudnn.so.9", v, sizeof(v)));
	assert_true(libname_version("libnvidia-ml.so.580.95.05", v, sizeof(v)));
	assert_int_equal(libname_major("libcudart.so.12.4.127"), 12);
	assert_int_equal(libname_major("libcudart.so"), -1);
	assert_string_equal(cuda_lib_match("libcudnn.so.9"), "cudnn");
	assert_string_equal(cuda_lib_match("libcudnn_ops.so.9.1.0"), "cudnn_ops");
	assert_string_equal(cuda_lib_match("libcublasLt.so.13"), "cublasLt");
	assert_string_equal(cuda_lib_match("libnvidia-ml.so.1"), "nvidia-ml");
	assert_string_equal(cuda_lib_match("libcuda.so"), "cuda");
	assert_null(cuda_lib_match("libcudart_static.a"));
	assert_null(cuda_lib_match("libcudadevrt.a"));
	assert_null(cuda_lib_match("libcudnn.so.9.bak"));
	assert_null(cuda_lib_match("libnvrtc-builtins.so.13.0"));
	char *so = cuda_lib_soname("cudnn", 9);
	assert_string_equal(so, "libcudnn.so.9");
	free(so);
}

static void test_kb_cudnn(void **s)
{
	(void)s;
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	assert_non_null(k);
	unsigned long m = kb_cudnn_cuda_majors(k, "8.9.7");
	assert_true(m & (1ul << 12));
	assert_false(m & (1ul << 13));
	m = kb_cudnn_cuda_majors(k, "9.14.0"); /* the "9.11-9.16" row */
	assert_true(m & (1ul << 13));
	assert_true(m & (1ul << 12));
	m = kb_cudnn_cuda_majors(k, "8.8.1"); /* "8.8.x" */
	assert_true(m & (1ul << 11));
	assert_int_equal(kb_cudnn_cuda_majors(k, "1.0.0"), 0);
	assert_int_equal(kb_cudnn_cuda_majors(k, NULL), 0);
	kb_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_files), cmocka_unit_test(test_nvcc_output), cmocka_unit_test(test_headers),
		cmocka_unit_test(test_libnames), cmocka_unit_test(test_kb_cudnn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
