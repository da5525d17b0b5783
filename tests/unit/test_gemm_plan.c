/*
 * The GEMM plan (bench/gemm_plan.h) on the fake libcuda and the fake cuBLASLt (tests/fake), which
 * compute on the host: a plan of every type is made, runs, and verifies against the CPU; two
 * runs give D bit for bit; a silently corrupted element shows in the golden compare and in the
 * verification; the plan keeps away from the fake's non-deterministic in-place reduction, which
 * bench's preference does not exclude; the faults of cuBLASLt become a NULL plan with why.
 * The paths of the fakes come from CMake (FAKE_CUDA, FAKE_CUBLASLT).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/gemm_plan.h"
#include "bench/gemm_run.h"
#include "bench/gpu.h"
#include "core/util.h"
#include "nvidia/cuda.h"
#include "../tools/test_tmp.h"

#ifndef FAKE_CUDA
#define FAKE_CUDA ""
#define FAKE_CUBLASLT ""
#endif

static char conf_path[4096];

/* The fakes with this configuration: libcuda loaded again (it reads the file at cuInit), the
 * GPU session opened; the fake cuBLASLt reads the file at every cublasLtCreate. */
typedef struct fixture {
	gpu_session s;
	bench_opts o;
	bench_report r;
	bench_ctx c;
} fixture;

static void open_fakes(fixture *x, const char *config, bool with_lt)
{
	FILE *f = fopen(conf_path, "w");
	assert_non_null(f);
	fputs(config, f);
	fclose(f);
	setenv("GPUVET_FAKE_CONFIG", conf_path, 1);
	setenv("GPUVET_CUDA_LIB", FAKE_CUDA, 1);
	if (with_lt)
		setenv("GPUVET_CUBLASLT_LIB", FAKE_CUBLASLT, 1);
	else
		unsetenv("GPUVET_CUBLASLT_LIB");
	gv_cuda_unload();
	memset(x, 0, sizeof(*x));
	if (!gpu_open(&x->s))
		fail_msg("gpu_open: %s", x->s.error);
	report_init(&x->r);
	x->c.o = &x->o;
	x->c.r = &x->r;
	x->c.gpu = &x->s;
}

static void close_fakes(fixture *x)
{
	bench_gemm_cleanup(&x->c);
	gpu_close(&x->s);
	report_free(&x->r);
}

static gemm_plan *plan_ok(fixture *x, bench_dtype dt, int n)
{
	char why[1024] = "";
	gemm_plan *p = gemm_plan_new(&x->c, 0, dt, n, why, sizeof(why));
	if (!p)
		fail_msg("plan %s: %s", dtype_get(dt)->name, why);
	return p;
}

/* D copied to the host after `iters` more GEMMs (0: as it is) */
static unsigned char *run_and_copy(fixture *x, gemm_plan *p, int iters)
{
	char why[512];
	if (iters > 0)
		assert_true(gemm_plan_enqueue(p, iters, why, sizeof(why)));
	assert_true(gemm_plan_sync(p, why, sizeof(why)));
	unsigned char *d = xmalloc(gemm_plan_d_bytes(p));
	assert_int_equal(x->s.cu->cuMemcpyDtoH(d, gemm_plan_d(p), gemm_plan_d_bytes(p)), CUDA_SUCCESS);
	return d;
}

/* The first element where two copies of D differ, or -1; *count: how many differ */
static long long first_difference(const gemm_plan *p, const unsigned char *a, const unsigned char *b, size_t *count)
{
	size_t eb = (size_t)gemm_plan_elem_bytes(p), n = gemm_plan_d_bytes(p) / eb;
	long long first = -1;
	*count = 0;
	for (size_t i = 0; i < n; i++)
		if (memcmp(a + i * eb, b + i * eb, eb) != 0) {
			if (first < 0)
				first = (long long)i;
			++*count;
		}
	return first;
}

static bool same(const gemm_plan *p, const unsigned char *a, const unsigned char *b)
{
	size_t count;
	return first_difference(p, a, b, &count) < 0;
}

static int setup(void **s)
{
	(void)s;
	if (!*FAKE_CUDA || !*FAKE_CUBLASLT)
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/gpuvet-test-gemm-plan-%d.conf", test_tmpdir(), (int)getpid());
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	unlink(conf_path);
	gv_cuda_unload();
	return 0;
}

/* Every type: the plan runs, is verified, and two runs give the same D bit for bit. */
static void test_every_dtype(void **s)
{
	(void)s;
	fixture x;
	open_fakes(&x, "", true);
	for (int dt = 0; dt < DT_COUNT; dt++) {
		gemm_plan *p = plan_ok(&x, (bench_dtype)dt, 96);
		const dtype_info *t = dtype_get((bench_dtype)dt);
		assert_int_equal(gemm_plan_n(p), 96);
		assert_int_equal(gemm_plan_dtype(p), dt);
		assert_int_equal(gemm_plan_ordinal(p), 0);
		assert_int_equal(gemm_plan_elem_bytes(p), t->out_bytes);
		assert_int_equal(gemm_plan_d_bytes(p), 96 * 96 * t->out_bytes);
		assert_true(fabs(gemm_plan_tflop(p) - 2.0 * 96 * 96 * 96 / 1e12) < 1e-15);
		assert_non_null(gemm_plan_stream(p));
		assert_true(dt == DT_FP8 ? gemm_plan_call(p) != NULL : gemm_plan_call(p) == NULL);
		char why[512], text[512];
		double ms = gemm_plan_time(p, 2, why, sizeof(why));
		if (!(ms > 0))
			fail_msg("%s: gemm_plan_time %g: %s", t->name, ms, why);
		verify_result vr;
		if (!gemm_plan_verify(p, 48, 8, &vr, text, sizeof(text)))
			fail_msg("%s: %s", t->name, text);
		assert_int_equal(vr.checked, 48 * 8);
		unsigned char *golden = run_and_copy(&x, p, 0);
		unsigned char *again = run_and_copy(&x, p, 3);
		assert_true(same(p, golden, again));
		/* the reference of an element, against D decoded */
		double ref, allowed;
		gemm_plan_reference(p, 95, 17, &ref, &allowed);
		assert_true(fabs(gemm_plan_decode(p, again, 95, 17) - ref) <= allowed);
		free(golden);
		free(again);
		gemm_plan_free(p);
	}
	assert_true(facts_str(x.r.facts, "bench.lib.cublaslt.found_by") != NULL);
	assert_string_equal(facts_str(x.r.facts, "bench.lib.cublaslt.found_by"), "environment");
	close_fakes(&x);
}

/* The fake's 3rd GEMM on the plan's handle (the plan ran the 1st while choosing its algorithm)
 * writes D[95,0] wrong: the golden compare finds that element and no other, the verification
 * names it (the last row and the first column are always sampled), and the next GEMM is right. */
static void test_corruption(void **s)
{
	(void)s;
	fixture x;
	open_fakes(&x, "cublaslt.corrupt = 3:95:0\n", true);
	gemm_plan *p = plan_ok(&x, DT_BF16, 96);
	unsigned char *golden = run_and_copy(&x, p, 0);
	unsigned char *second = run_and_copy(&x, p, 1);
	assert_true(same(p, golden, second));
	unsigned char *third = run_and_copy(&x, p, 1);
	size_t count;
	assert_int_equal(first_difference(p, golden, third, &count), 95 + 0 * 96);
	assert_int_equal(count, 1);
	double ref, allowed;
	gemm_plan_reference(p, 95, 0, &ref, &allowed);
	assert_true(fabs(gemm_plan_decode(p, golden, 95, 0) - ref) <= allowed);
	assert_true(fabs(gemm_plan_decode(p, third, 95, 0) - ref) > allowed);
	verify_result vr;
	char text[512];
	assert_false(gemm_plan_verify(p, 24, 4, &vr, text, sizeof(text)));
	assert_int_equal(vr.bad, 1);
	assert_int_equal(vr.worst_i, 95);
	assert_int_equal(vr.worst_j, 0);
	assert_non_null(strstr(text, "D[95,0]"));
	char why[256];
	assert_true(gemm_plan_enqueue(p, 1, why, sizeof(why)));
	assert_true(gemm_plan_verify(p, 24, 4, &vr, text, sizeof(text)));
	free(golden);
	free(second);
	free(third);
	gemm_plan_free(p);
	close_fakes(&x);
}

/* cublaslt.nondeterministic: the fake's in-place split-K algorithm, its first answer when the
 * preference allows every reduction (bench's), changes D[0,0] from one call to the next. The plan
 * excludes in-place reductions, so its runs agree; bench's path, driven the same way, does not. */
static void test_determinism(void **s)
{
	(void)s;
	fixture x;
	open_fakes(&x, "cublaslt.nondeterministic = 1\n", true);
	gemm_plan *p = plan_ok(&x, DT_FP32, 64);
	unsigned char *a = run_and_copy(&x, p, 1), *b = run_and_copy(&x, p, 1);
	assert_true(same(p, a, b));
	free(a);
	free(b);
	gemm_plan_free(p);

	char why[512];
	bench_ctx *c = &x.c;
	gpu_dev *d = gemm_device(c, 0, DT_FP32, why, sizeof(why));
	assert_non_null(d);
	assert_true(gemm_lt_ready(c, 0, why, sizeof(why)));
	gemm_lane lane = {c->lt_handle, d->stream, d->ev_start, d->ev_end};
	gemm_run g = {0};
	assert_true(gemm_prepare(c, d, DT_FP32, 64, 0, &g, why, sizeof(why)));
	cublasLtMatmulHeuristicResult_t heur[GEMM_MAX_ALGOS];
	assert_true(gemm_heuristics(c, &lane, &g, DT_FP32, heur, why, sizeof(why)) > 0);
	gemm_scalars k;
	gemm_scalars_of(gemm_types_of(DT_FP32).scale, &k);
	uint32_t d1 = 0, d2 = 0;
	assert_true(gemm_time(c, d, &lane, &g, &heur[0].algo, &k, 1, why, sizeof(why)) >= 0);
	assert_int_equal(x.s.cu->cuMemcpyDtoH(&d1, g.d, 4), CUDA_SUCCESS);
	assert_true(gemm_time(c, d, &lane, &g, &heur[0].algo, &k, 1, why, sizeof(why)) >= 0);
	assert_int_equal(x.s.cu->cuMemcpyDtoH(&d2, g.d, 4), CUDA_SUCCESS);
	assert_int_equal(d1 ^ d2, 1);
	gemm_free(c, &g);
	close_fakes(&x);
}

/* Two plans on one device: their own streams, buffers and workspaces, run side by side, the same D;
 * the optional pick of the fastest algorithm. */
static void test_two_plans(void **s)
{
	(void)s;
	fixture x;
	open_fakes(&x, "cuda.alloc_limit = 1GiB\n", true);
	gemm_plan *p = plan_ok(&x, DT_BF16, 64), *q = plan_ok(&x, DT_BF16, 64);
	assert_true(gemm_plan_stream(p) != gemm_plan_stream(q));
	assert_true(gemm_plan_d(p) != gemm_plan_d(q));
	char why[256];
	assert_true(gemm_plan_enqueue(p, 2, why, sizeof(why)));
	assert_true(gemm_plan_enqueue(q, 2, why, sizeof(why)));
	unsigned char *a = run_and_copy(&x, p, 0), *b = run_and_copy(&x, q, 0);
	assert_true(same(p, a, b));
	/* the fastest of the heuristic's answers (all alike in the fake) still runs and verifies */
	assert_true(gemm_plan_pick_fastest(q, why, sizeof(why)));
	verify_result vr;
	char text[512];
	assert_true(gemm_plan_verify(q, 8, 2, &vr, text, sizeof(text)));
	free(a);
	free(b);
	gemm_plan_free(q);
	gemm_plan_free(p);
	gemm_plan_free(NULL);
	close_fakes(&x);
}

/* n is reduced to fit the free memory as bench does: with 75 MiB free, not even the workspace
 * fits in 80% of it, so n halves down to 256. */
static void test_size_fits(void **s)
{
	(void)s;
	fixture x;
	open_fakes(&x, "gpu.0.memory_total = 75MiB\n", true);
	gemm_plan *p = plan_ok(&x, DT_INT8, 1024);
	assert_int_equal(gemm_plan_n(p), 256);
	verify_result vr;
	char text[512];
	assert_true(gemm_plan_verify(p, 8, 2, &vr, text, sizeof(text)));
	gemm_plan_free(p);
	close_fakes(&x);
}

static void expect_no_plan(const char *config, bool with_lt, bench_dtype dt, const char *why_part)
{
	fixture x;
	open_fakes(&x, config, with_lt);
	char why[1024] = "";
	gemm_plan *p = gemm_plan_new(&x.c, 0, dt, 64, why, sizeof(why));
	assert_null(p);
	if (!strstr(why, why_part))
		fail_msg("%s: expected \"%s\" in \"%s\"", config, why_part, why);
	close_fakes(&x);
}

/* The faults: a NULL plan and why; a GEMM failing later fails the call that ran it. */
static void test_faults(void **s)
{
	(void)s;
	expect_no_plan("cublaslt.heuristics = 0\n", true, DT_BF16, "cuBLASLt has no algorithm for BF16");
	expect_no_plan("error.cublasLtMatmul = 13\n", true, DT_FP16, "cublasLtMatmul failed: CUBLAS_STATUS_EXECUTION_FAILED (13)");
	expect_no_plan("error.cublasLtCreate = 3\n", true, DT_FP32, "cublasLtCreate failed: CUBLAS_STATUS_ALLOC_FAILED");
	expect_no_plan("error.cuMemAlloc = 2\n", true, DT_FP64, "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY");
	expect_no_plan("gpu.0.cc = 8.0\n", true, DT_FP8, "needs compute capability 8.9");
	/* the real cuBLASLt would load the system's libcuda beside the fake one */
	expect_no_plan("", false, DT_BF16, "GPUVET_CUDA_LIB is set");

	fixture x;
	open_fakes(&x, "error.cublasLtMatmul = 13\nerror.cublasLtMatmul.after = 1\n", true);
	gemm_plan *p = plan_ok(&x, DT_TF32, 64);
	char why[256];
	assert_false(gemm_plan_enqueue(p, 1, why, sizeof(why)));
	assert_non_null(strstr(why, "EXECUTION_FAILED"));
	assert_true(gemm_plan_time(p, 1, why, sizeof(why)) < 0);
	gemm_plan_free(p);
	close_fakes(&x);

	/* fp8: every way of calling cuBLASLt is tried in turn until one runs, as in bench (three
	 * algorithms answered NOT_SUPPORTED for the first way) */
	open_fakes(&x, "error.cublasLtMatmul = 15,15,15,0\n", true);
	p = plan_ok(&x, DT_FP8, 64);
	assert_string_equal(gemm_plan_call(p), "per-tensor scale pointers");
	verify_result vr;
	char text[512];
	assert_true(gemm_plan_verify(p, 8, 2, &vr, text, sizeof(text)));
	gemm_plan_free(p);
	close_fakes(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_every_dtype, teardown),
		cmocka_unit_test_teardown(test_corruption, teardown),
		cmocka_unit_test_teardown(test_determinism, teardown),
		cmocka_unit_test_teardown(test_two_plans, teardown),
		cmocka_unit_test_teardown(test_size_fits, teardown),
		cmocka_unit_test_teardown(test_faults, teardown),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
