/*
 * Unit tests of gpuvet bench's parts that need no GPU: statistics, peak arithmetic, the input
 * generator's model and the number decoders, the verification bounds (a right GEMM passes, a
 * transposed or perturbed one fails), the PTX kernels' text (entries and parameters, and ptxas
 * for sm_90, sm_80 and sm_75, sm_70 where that ptxas knows it, when the toolkit is installed),
 * the watchdog, the library loaders, the CPU baseline, the report's facts and JSON, and the
 * verdict rules.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/blas.h"
#include "bench/cublaslt.h"
#include "bench/gen.h"
#include "bench/gpu.h"
#include "bench/mtpattern.h"
#include "bench/nccl.h"
#include "bench/ptx.h"
#include "bench/report.h"
#include "bench/stats.h"
#include "bench/verify.h"
#include "bench/watchdog.h"
#include "cmd/cmd.h"
#include "core/proc.h"
#include "kb/kb.h"
#include "kb/kb_peaks.h"
#include "rules/rules.h"
#include "../tools/test_tmp.h"

/* ---- statistics ---- */

static void test_stats(void **s)
{
	(void)s;
	bench_stats st;
	double odd[] = {3, 1, 2};
	assert_true(stats_summarise(odd, 3, &st));
	assert_true(st.median == 2 && st.min == 1 && st.max == 3 && st.n == 3);
	assert_true(fabs(st.spread - 2.0) < 1e-12);
	double even[] = {4, 1, 3, 2};
	assert_true(stats_summarise(even, 4, &st));
	assert_true(st.median == 2.5);
	/* failed timers (NaN, 0, negative, infinite) never count */
	double bad[] = {NAN, 10, 0, -1, INFINITY, 12};
	assert_true(stats_summarise(bad, 6, &st));
	assert_int_equal(st.n, 2);
	assert_true(st.median == 11);
	/* the kept samples are the usable ones, in the order measured */
	assert_int_equal(st.nsamples, 2);
	assert_true(st.samples[0] == 10 && st.samples[1] == 12);
	double many[100];
	for (int i = 0; i < 100; i++)
		many[i] = 100 - i;
	assert_true(stats_summarise(many, 100, &st));
	assert_int_equal(st.n, 100);
	assert_int_equal(st.nsamples, BENCH_STATS_KEEP);
	assert_true(st.samples[0] == 100 && st.samples[BENCH_STATS_KEEP - 1] == 100 - (BENCH_STATS_KEEP - 1));
	double none[] = {NAN, 0};
	assert_false(stats_summarise(none, 2, &st));
	assert_int_equal(st.n, 0);
	assert_true(isnan(stats_median(NULL, 0)));
	/* rates: the slowest repeat is the minimum rate */
	double secs[] = {0.5, 0.25, 1.0};
	assert_true(stats_rates(secs, 3, 10, &st));
	assert_true(st.min == 10 && st.max == 40 && st.median == 20);
	assert_true(st.samples[0] == 20 && st.samples[1] == 40 && st.samples[2] == 10);
	double one = 7;
	assert_true(stats_summarise(&one, 1, &st));
	assert_true(st.spread == 0);
}

/* ---- peaks ---- */

static void test_peaks(void **s)
{
	(void)s;
	const kb *k = kb_global();
	kb_peak p;
	/* H200 bf16: 132 SMs x 2048 FMA/clk/SM x 2 x clock */
	assert_true(kb_compute_peak(k, "NVIDIA H200", "9.0", 132, 1980, "bf16", &p));
	assert_true(fabs(p.value - 132.0 * 2048 * 2 * 1980e6 / 1e12) < 1e-6);
	assert_non_null(strstr(p.how, "2048 FMA/clk/SM"));
	assert_true(kb_compute_peak(k, "NVIDIA H200", "9.0", 132, 1830, "fp16", &p));
	assert_true(fabs(p.value - 989.43) < 0.01); /* the datasheet's 989 TFLOP/s at 1830 MHz */
	/* fp64 uses the tensor-core rate where there is one */
	assert_true(kb_compute_peak(k, "NVIDIA H200", "9.0", 132, 1980, "fp64", &p));
	assert_true(fabs(p.value - 66.9) < 0.1);
	assert_true(kb_compute_peak(k, "NVIDIA H200", NULL, 0, 0, "fp32", &p)); /* cc, SMs, clock from gpu_peaks */
	assert_true(fabs(p.value - 132.0 * 128 * 2 * 1980e6 / 1e12) < 1e-6);
	/* int8 has no arch rate: the datasheet figure scaled by the clock */
	assert_true(kb_compute_peak(k, "NVIDIA H200", "9.0", 132, 990, "int8", &p));
	assert_true(fabs(p.value - 1979.0 / 2) < 1e-6);
	/* an unlisted GPU of a known architecture */
	assert_true(kb_compute_peak(k, "NVIDIA H800 PCIe", "9.0", 114, 1755, "tf32", &p));
	assert_true(fabs(p.value - 114.0 * 1024 * 2 * 1755e6 / 1e12) < 1e-6);
	/* nothing known */
	assert_false(kb_compute_peak(k, "NVIDIA A100-SXM4-80GB", "8.0", 108, 1410, "fp8", &p));
	assert_false(kb_compute_peak(k, "Mystery GPU", "12.7", 10, 1000, "bf16", &p));
	assert_false(kb_compute_peak(k, "NVIDIA H200", "9.0", 132, 1980, "fp4", &p));
	/* memory */
	assert_true(kb_memory_peak(k, "NVIDIA H200", 0, 0, &p));
	assert_true(p.value == 4800);
	assert_true(kb_memory_peak(k, "Mystery GPU", 3201, 6144, &p));
	assert_true(fabs(p.value - 3201e6 * 2 * 6144 / 8 / 1e9) < 1e-6);
	assert_false(kb_memory_peak(k, "Mystery GPU", 0, 6144, &p));
	/* PCIe */
	assert_true(kb_pcie_rate_gbps(5, 16) == 63.0);
	assert_true(kb_pcie_rate_gbps(4, 16) == 31.5);
	assert_true(kb_pcie_rate_gbps(3, 16) == 15.75);
	assert_true(kb_pcie_rate_gbps(4, 8) == 15.75);
	assert_true(kb_pcie_rate_gbps(0, 16) == 0 && kb_pcie_rate_gbps(5, 0) == 0 && kb_pcie_rate_gbps(9, 16) == 0);
}

/* ---- generator model and decoders ---- */

static void test_gen(void **s)
{
	(void)s;
	/* known values (computed by an independent implementation of lowbias32) */
	assert_int_equal(gen_hash32(0), 0);
	assert_int_equal(gen_hash32(1), 0x688990c0u);
	assert_int_equal(gen_hash32(0xdeadbeefu), 0xe628c683u);
	assert_int_equal(gen_bits(DT_BF16, 7, 0), 0xbe66);
	assert_int_equal(gen_bits(DT_BF16, 7, 2), 0xbe7d);
	assert_true(gen_bits(DT_FP64, 7, 0) == 0xbfcba1e62098a08full);
	assert_true(gen_bits(DT_FP64, 7, 1) == 0xbfc7896cb155a8f4ull);
	assert_int_equal(gen_bits(DT_FP8, 7, 0), 0xa6);
	assert_int_equal(gen_bits(DT_INT8, 7, 5), 0x40);
	/* decoders */
	assert_true(gen_decode_fp16(0x3c00) == 1.0 && gen_decode_fp16(0xc000) == -2.0);
	assert_true(gen_decode_fp16(0x0001) == ldexp(1, -24) && isinf(gen_decode_fp16(0x7c00)));
	assert_true(gen_decode_bf16(0x3f80) == 1.0 && gen_decode_bf16(0xc040) == -3.0);
	assert_true(gen_decode_e4m3(0x38) == 1.0 && gen_decode_e4m3(0x7e) == 448.0);
	assert_true(gen_decode_e4m3(0x01) == ldexp(1, -9) && isnan(gen_decode_e4m3(0x7f)) && isnan(gen_decode_e4m3(0xff)));
	/* every generated value: non-zero, finite, magnitude in [1/8, 2) (int8: 1..64) */
	for (int d = 0; d < DT_COUNT; d++)
		for (uint64_t i = 0; i < 20000; i++) {
			double v = gen_value((bench_dtype)d, 0x1234u + (unsigned)d, i * 7919);
			assert_true(isfinite(v) && v != 0);
			if (d == DT_INT8)
				assert_true(fabs(v) >= 1 && fabs(v) <= 64 && v == floor(v));
			else
				assert_true(fabs(v) >= 0.125 && fabs(v) < 2);
			uint64_t bits = gen_bits((bench_dtype)d, 0x1234u + (unsigned)d, i * 7919);
			int w = dtype_get((bench_dtype)d)->in_bytes * 8;
			assert_true(w == 64 || bits >> w == 0);
		}
	/* both signs appear */
	int neg = 0;
	for (uint64_t i = 0; i < 1000; i++)
		neg += gen_value(DT_FP32, 99, i) < 0;
	assert_true(neg > 400 && neg < 600);
	/* output decoding: fp8 results are bf16, int8 results int32 */
	uint16_t bf = 0x4040;
	assert_true(gen_decode(DT_FP8, &bf, 1) == 3.0);
	int32_t iv = -123456;
	assert_true(gen_decode(DT_INT8, &iv, 1) == -123456.0);
	bench_dtype dt;
	assert_true(dtype_parse("BF16", &dt) && dt == DT_BF16);
	assert_false(dtype_parse("fp4", &dt));
}

/* ---- verification ---- */

/* D = op(A) B computed on the CPU in the GPU's arithmetic (accumulate in `acc`, round the output). */
static void cpu_gemm(bench_dtype dt, const gemm_shape *sh, uint32_t sa, uint32_t sb, double *d, bool transpose_b)
{
	for (int64_t j = 0; j < sh->n; j++)
		for (int64_t i = 0; i < sh->m; i++) {
			float accf = 0;
			double accd = 0;
			for (int64_t p = 0; p < sh->k; p++) {
				uint64_t ai = sh->transa ? (uint64_t)(p + i * sh->k) : (uint64_t)(i + p * sh->m);
				uint64_t bi = transpose_b ? (uint64_t)(j + p * sh->k) : (uint64_t)(p + j * sh->k);
				double a = gen_value(dt, sa, ai), b = gen_value(dt, sb, bi);
				if (dt == DT_FP64)
					accd += a * b;
				else
					accf = fmaf((float)a, (float)b, accf);
			}
			double out = dt == DT_FP64 ? accd : accf;
			if (dt == DT_FP16) {
				/* round to fp16's 11 significant bits */
				int e;
				double m = frexp(out, &e);
				out = ldexp(nearbyint(ldexp(m, 11)), e - 11);
			} else if (dt == DT_BF16 || dt == DT_FP8) {
				int e;
				double m = frexp(out, &e);
				out = ldexp(nearbyint(ldexp(m, 8)), e - 8);
			}
			d[i + j * sh->m] = out;
		}
}

static verify_result check_all(bench_dtype dt, const gemm_shape *sh, uint32_t sa, uint32_t sb, const double *d)
{
	int64_t rows[64], cols[64];
	size_t nr = (size_t)sh->m < 64 ? (size_t)sh->m : 64, nc = (size_t)sh->n < 64 ? (size_t)sh->n : 64;
	verify_pick(sh->m, nr, 1, rows);
	verify_pick(sh->n, nc, 2, cols);
	double *got = malloc(nr * nc * sizeof(double));
	for (size_t c = 0; c < nc; c++)
		for (size_t r = 0; r < nr; r++)
			got[r + c * nr] = d[rows[r] + cols[c] * sh->m];
	verify_result vr;
	verify_init(&vr);
	verify_block(dt, sh, sa, sb, rows, nr, cols, nc, got, &vr);
	free(got);
	return vr;
}

static void test_verify(void **s)
{
	(void)s;
	static const bench_dtype types[] = {DT_FP64, DT_FP32, DT_FP16, DT_BF16, DT_FP8, DT_INT8};
	for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		bench_dtype dt = types[t];
		gemm_shape sh = {40, 24, 384, dt == DT_FP8 || dt == DT_INT8};
		double *d = malloc((size_t)(sh.m * sh.n) * sizeof(double));
		cpu_gemm(dt, &sh, 11, 22, d, false);
		verify_result vr = check_all(dt, &sh, 11, 22, d);
		assert_true(vr.checked == (size_t)(sh.m * sh.n));
		if (vr.bad)
			fail_msg("%s: a right GEMM failed (worst %.3g of the bound)", dtype_get(dt)->name, vr.worst);
		/* B transposed by mistake: every check fails badly */
		cpu_gemm(dt, &sh, 11, 22, d, true);
		vr = check_all(dt, &sh, 11, 22, d);
		assert_true(vr.bad > vr.checked * 9 / 10);
		/* swapped seeds (wrong inputs) */
		cpu_gemm(dt, &sh, 22, 11, d, false);
		vr = check_all(dt, &sh, 11, 22, d);
		assert_true(vr.bad > vr.checked * 9 / 10);
		/* one element off by 2% of its l2 scale: caught, and named */
		cpu_gemm(dt, &sh, 11, 22, d, false);
		double ref, l2;
		gemm_shape sq = sh;
		verify_reference(dt, &sq, 11, 22, 5, 7, &ref, &l2);
		d[5 + 7 * sh.m] = ref + 0.06 * l2 + (dt == DT_INT8 ? 1 : 0);
		vr = check_all(dt, &sh, 11, 22, d);
		assert_int_equal(vr.bad, 1);
		assert_true(vr.worst_i == 5 && vr.worst_j == 7);
		char text[256];
		verify_describe(&vr, text, sizeof(text));
		assert_non_null(strstr(text, "D[5,7]"));
		/* NaN is never within a bound */
		d[5 + 7 * sh.m] = NAN;
		vr = check_all(dt, &sh, 11, 22, d);
		assert_int_equal(vr.bad, 1);
		free(d);
	}
	/* the bound is far below the error of a layout mistake (about l2) at k = 8192 */
	for (int dt = 0; dt < DT_COUNT; dt++)
		assert_true(verify_allowed((bench_dtype)dt, 8192, 1.0, 1.0) < 0.1);
	/* picks: distinct, sorted, with both edges */
	int64_t p[16];
	verify_pick(1000, 16, 3, p);
	assert_true(p[0] == 0 && p[15] == 999);
	for (int i = 1; i < 16; i++)
		assert_true(p[i] > p[i - 1]);
	verify_pick(5, 16, 3, p);
	for (int i = 0; i < 5; i++)
		assert_true(p[i] == i);
}

/* ---- PTX text ---- */

/* Parses ".visible .entry NAME(\n\t.param .TYPE NAME,...)" of the module. */
static int parse_entries(const char *text, char names[][32], char params[][64], int max)
{
	int n = 0;
	const char *p = text;
	while ((p = strstr(p, ".visible .entry ")) && n < max) {
		p += strlen(".visible .entry ");
		const char *open = strchr(p, '(');
		assert_non_null(open);
		snprintf(names[n], 32, "%.*s", (int)(open - p), p);
		const char *close = strchr(open, ')');
		assert_non_null(close);
		params[n][0] = 0;
		for (const char *q = open; (q = strstr(q, ".param .")) && q < close; q += 8) {
			char type[8];
			sscanf(q + 8, "%7[a-z0-9]", type);
			if (params[n][0])
				strcat(params[n], " ");
			strcat(params[n], type);
		}
		n++;
		p = close;
	}
	return n;
}

static void test_ptx_text(void **s)
{
	(void)s;
	char names[32][32], params[32][64];
	int n = parse_entries(ptx_bench_module, names, params, 32);
	int table = 0;
	while (ptx_bench_kernels[table].entry)
		table++;
	assert_int_equal(n, table);
	assert_int_equal(n, K_COUNT);
	for (int i = 0; i < n; i++) {
		assert_string_equal(names[i], ptx_bench_kernels[i].entry);
		assert_string_equal(params[i], ptx_bench_kernels[i].params);
	}
	/* the launch code's enum follows the table */
	assert_string_equal(ptx_bench_kernels[K_EMPTY].entry, "gv_empty");
	assert_string_equal(ptx_bench_kernels[K_COPY].entry, "gv_copy");
	assert_string_equal(ptx_bench_kernels[K_TRIAD].entry, "gv_triad");
	assert_string_equal(ptx_bench_kernels[K_READ].entry, "gv_read");
	assert_string_equal(ptx_bench_kernels[K_FILL_B64].entry, "gv_fill_b64");
	assert_string_equal(ptx_bench_kernels[K_MT_FILL].entry, "gv_mt_fill");
	assert_string_equal(ptx_bench_kernels[K_MT_CHECK].entry, "gv_mt_check");
	assert_string_equal(ptx_bench_kernels[K_CMP_B32].entry, "gv_cmp_b32");
	assert_string_equal(ptx_bench_kernels[K_MT_CHECK].params, "u64 u64 u32 u64 u64 u64 u32 u32");
	/* the memory test's 16-byte accesses, its atomics, and a loop for every pattern mode */
	assert_non_null(strstr(ptx_bench_module, "ld.global.v2.u64"));
	assert_non_null(strstr(ptx_bench_module, "st.global.v2.u64"));
	assert_non_null(strstr(ptx_bench_module, "ld.global.v4.u32"));
	assert_non_null(strstr(ptx_bench_module, "atom.global.cas.b64"));
	for (int m = 0; m < MT_MODE_COUNT; m++) {
		char label[32];
		snprintf(label, sizeof(label), "mtf%d_LOOP4:", m);
		assert_non_null(strstr(ptx_bench_module, label));
		snprintf(label, sizeof(label), "mtc%d_LOOP4:", m);
		assert_non_null(strstr(ptx_bench_module, label));
	}
	assert_non_null(strstr(ptx_bench_module, ".version 7.0\n.target sm_70\n.address_size 64\n"));
	/* 16-byte accesses in the stream kernels */
	assert_non_null(strstr(ptx_bench_module, "ld.global.v4.f32"));
	assert_non_null(strstr(ptx_bench_module, "st.global.v4.f32"));
	/* balanced braces, one ret per kernel */
	int depth = 0, rets = 0;
	for (const char *p = ptx_bench_module; *p; p++) {
		depth += *p == '{' ? 1 : *p == '}' ? -1 : 0;
		assert_true(depth >= 0 && depth <= 2);
	}
	for (const char *p = ptx_bench_module; (p = strstr(p, "\tret;")); p++)
		rets++;
	assert_int_equal(depth, 0);
	assert_int_equal(rets, n);
	/* the generator's constants are the model's */
	assert_non_null(strstr(ptx_bench_module, "0x7feb352d") );
	assert_non_null(strstr(ptx_bench_module, "0x846ca68b"));
	char mul[32];
	snprintf(mul, sizeof(mul), "%d", (int32_t)GEN_MUL);
	assert_non_null(strstr(ptx_bench_module, mul));
	snprintf(mul, sizeof(mul), "%d", (int32_t)GEN_H2_XOR);
	assert_non_null(strstr(ptx_bench_module, mul));
}

static const char *find_ptxas(void)
{
	static char path[512];
	const char *env = getenv("PTXAS");
	if (env && access(env, X_OK) == 0)
		return env;
	if (access("/usr/local/cuda/bin/ptxas", X_OK) == 0)
		return "/usr/local/cuda/bin/ptxas";
	const char *p = getenv("PATH");
	strlist dirs = {0};
	sl_split(&dirs, p ? p : "", ":", false);
	for (size_t i = 0; i < dirs.n; i++) {
		snprintf(path, sizeof(path), "%s/ptxas", dirs.v[i]);
		if (access(path, X_OK) == 0) {
			sl_free(&dirs);
			return path;
		}
	}
	sl_free(&dirs);
	return NULL;
}

static void test_ptxas(void **s)
{
	(void)s;
	const char *ptxas = find_ptxas();
	if (!ptxas)
		skip();
	char file[4096], out[4096];
	snprintf(file, sizeof(file), "%s/gpuvet-bench-%d.ptx", test_tmpdir(), (int)getpid());
	snprintf(out, sizeof(out), "%s/gpuvet-bench-%d.cubin", test_tmpdir(), (int)getpid());
	FILE *f = fopen(file, "w");
	assert_non_null(f);
	fputs(ptx_bench_module, f);
	fclose(f);
	/* sm_70 is the module's target; CUDA 13's ptxas no longer knows it (then it is left out,
	 * said, and sm_75 is the oldest checked) */
	const char *archs[] = {"sm_90", "sm_80", "sm_75", "sm_70"};
	int checked = 0;
	for (size_t a = 0; a < sizeof(archs) / sizeof(archs[0]); a++) {
		char arch[32];
		snprintf(arch, sizeof(arch), "-arch=%s", archs[a]);
		char *argv[] = {(char *)ptxas, arch, file, "-o", out, NULL};
		proc_result r;
		proc_run(argv, NULL, NULL, 60000, 1 << 20, &r);
		if (r.status != 0 && r.err && strstr(r.err, "is not defined for option") && strcmp(archs[a], "sm_90") != 0) {
			print_message("ptxas %s: this ptxas does not know %s, not checked\n", ptxas, archs[a]);
		} else if (r.status != 0) {
			fail_msg("ptxas %s: exit %d: %s", archs[a], r.status, r.err);
		} else {
			checked++;
		}
		proc_result_free(&r);
	}
	assert_true(checked >= 2);
	unlink(file);
	unlink(out);
}

/* ---- watchdog ---- */

static _Atomic int hook_status = -1; /* set by the watchdog's thread */
static void hook(int status)
{
	hook_status = status;
}

static void test_watchdog(void **s)
{
	(void)s;
	watchdog_start();
	watchdog_arm("test", 0.05);
	assert_false(watchdog_expired());
	assert_true(watchdog_left() > 0);
	usleep(80000);
	assert_true(watchdog_expired());
	watchdog_disarm();
	assert_false(watchdog_expired());
	/* the hard stop after the grace period */
	watchdog_set_exit_hook(hook);
	watchdog_set_grace(0.05);
	watchdog_arm("a hung test", 0.02);
	for (int i = 0; i < 100 && hook_status < 0; i++)
		usleep(10000);
	assert_int_equal(hook_status, EXIT_INTERNAL);
	watchdog_disarm();
	watchdog_set_exit_hook(NULL);
	watchdog_set_grace(0);
}

/* ---- libraries ---- */

static void test_libraries(void **s)
{
	(void)s;
	/* a file named by the environment that does not load is an error, with no fallback */
	setenv("GPUVET_CUBLASLT_LIB", "/nonexistent/libcublasLt.so.13", 1);
	cublaslt_api lt;
	assert_false(cublaslt_load(&lt));
	assert_non_null(strstr(lt.lib.error, "GPUVET_CUBLASLT_LIB"));
	unsetenv("GPUVET_CUBLASLT_LIB");
	/* the real one where it is installed (a CUDA toolkit, pip wheels) */
	if (cublaslt_load(&lt)) {
		assert_true(lt.version >= 110000);
		char v[32];
		cublaslt_version_text(lt.version, v, sizeof(v));
		assert_true(v[0] >= '1');
		print_message("cuBLASLt %s from %s (%s)\n", v, lt.lib.path, lt.lib.how);
		cublaslt_unload(&lt);
	}
	char v[32];
	cublaslt_version_text(130100, v, sizeof(v));
	assert_string_equal(v, "13.1.0");
	nccl_api nc;
	setenv("GPUVET_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
	assert_false(nccl_load(&nc));
	unsetenv("GPUVET_NCCL_LIB");
	if (nccl_load(&nc)) {
		assert_true(nc.version > 0);
		nccl_unload(&nc);
	}
	nccl_version_text(22803, v, sizeof(v));
	assert_string_equal(v, "2.28.3");
	nccl_version_text(2708, v, sizeof(v));
	assert_string_equal(v, "2.7.8");
	assert_true(nccl_busbw_factor(COLL_ALL_REDUCE, 2) == 1.0);
	assert_true(nccl_busbw_factor(COLL_ALL_REDUCE, 8) == 1.75);
	assert_true(nccl_busbw_factor(COLL_ALL_GATHER, 2) == 0.5);
	assert_true(nccl_busbw_factor(COLL_REDUCE_SCATTER, 4) == 0.75);
	assert_true(nccl_busbw_factor(COLL_ALL_REDUCE, 0) == 0);
	/* BLAS: C = A B on a 3x3 case */
	blas_api b;
	if (!blas_load(&b, 2))
		return;
	double a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 10}, bb[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, c[9];
	blas_gemm(&b, true, 3, a, bb, c);
	for (int i = 0; i < 9; i++)
		assert_true(c[i] == a[i]);
	float af[4] = {1, 2, 3, 4}, bf[4] = {2, 0, 0, 2}, cf[4];
	blas_gemm(&b, false, 2, af, bf, cf);
	assert_true(cf[0] == 2 && cf[3] == 8);
	blas_unload(&b);
	/* bus ids as CUDA and NVML write them */
	assert_true(gpu_same_bus_id("0000:18:00.0", "00000000:18:00.0"));
	assert_false(gpu_same_bus_id("0000:18:00.0", "00000000:38:00.0"));
	assert_false(gpu_same_bus_id("garbage", "00000000:18:00.0"));
}

/* ---- CPU baseline, report, rules ---- */

static void test_cpu_and_report(void **s)
{
	(void)s;
	bench_opts o;
	memset(&o, 0, sizeof(o));
	o.quick = true;
	o.size = 96;
	o.limit_scale = 1;
	bench_report r;
	report_init(&r);
	bench_ctx c;
	memset(&c, 0, sizeof(c));
	c.o = &o;
	c.r = &r;
	watchdog_start();
	bench_cpu(&c);
	const bench_figure *f = report_find(&r, "cpu.gemm.fp32");
	assert_non_null(f);
	if (!f->skipped) {
		assert_true(f->st.n >= 1 && f->st.median > 0);
		assert_int_equal(f->verified, VERIFY_OK);
		assert_int_equal(f->size, 96);
	}
	/* figures into facts and JSON */
	bench_figure *g = report_add(&r, "gemm.bf16", "gemm", "TFLOP/s", "GEMM bf16 %d", 8192);
	double v[] = {700, 760, 750};
	stats_summarise(v, 3, &g->st);
	figure_set_peak(g, 1000, "test");
	figure_set_verified(g, true, "ok");
	g->gpu = 0;
	g->size = 8192;
	report_skip(&r, "gemm.fp8", "gemm", "TFLOP/s", "GEMM fp8", "needs compute capability %s", "8.9");
	assert_true(fabs(figure_pct(g) - 75) < 1e-9);
	facts_put_str(r.facts, "test", "quick", "bench.run");
	report_facts(&r);
	double d;
	assert_true(facts_real(r.facts, &d, "bench.gemm.bf16.pct_peak") && fabs(d - 75) < 1e-9);
	assert_true(facts_true(r.facts, "bench.gemm.bf16.verified"));
	assert_true(facts_true(r.facts, "bench.gemm.fp8.skipped"));
	assert_int_equal(facts_get(r.facts, "bench.gemm.fp8.value")->state, FACT_ABSENT);
	findings fs;
	findings_init(&fs);
	bench_judge(r.facts, kb_global(), &fs);
	assert_null(findings_find(&fs, "bench.gemm-low"));
	cJSON *doc = report_json(&r, &fs);
	assert_string_equal(cJSON_GetObjectItem(doc, "schema")->valuestring, "gpuvet.bench/1");
	assert_true(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "figures")) >= 3);
	assert_non_null(cJSON_GetObjectItem(doc, "facts"));
	cJSON_Delete(doc);
	findings_free(&fs);
	/* the same figure at 45% is a finding */
	double low[] = {450};
	stats_summarise(low, 1, &g->st);
	report_facts(&r);
	findings_init(&fs);
	bench_judge(r.facts, kb_global(), &fs);
	const finding *x = findings_find(&fs, "bench.gemm-low");
	assert_non_null(x);
	assert_int_equal(x->sev, SEV_WARN);
	findings_free(&fs);
	/* speedups: bf16 against fp32 at the same size, the GPU against the CPU at the CPU's size */
	bench_figure *g32 = report_add(&r, "gemm.fp32", "gemm", "TFLOP/s", "GEMM fp32");
	double v32[] = {50};
	stats_summarise(v32, 1, &g32->st);
	g32->size = 8192;
	double v16[] = {750};
	g = report_find(&r, "gemm.bf16"); /* adding figures may move them */
	stats_summarise(v16, 1, &g->st);
	bench_figure *gs = report_add(&r, "gemm.fp32.n96", "gemm", "TFLOP/s", "GEMM fp32 96");
	double vs[] = {5};
	stats_summarise(vs, 1, &gs->st);
	gs->size = 96;
	bench_speedups(&c);
	const bench_figure *sp = report_find(&r, "speedup.bf16_vs_fp32");
	assert_non_null(sp);
	assert_true(fabs(sp->st.median - 15) < 1e-9);
	const bench_figure *cpu32 = report_find(&r, "cpu.gemm.fp32");
	if (cpu32 && !cpu32->skipped) {
		sp = report_find(&r, "speedup.gpu_vs_cpu.fp32");
		assert_non_null(sp);
		assert_true(fabs(sp->st.median - 5 / cpu32->st.median) < 1e-9);
	}
	assert_null(report_find(&r, "speedup.fp8_vs_fp32")); /* fp8 was skipped */
	/* text output mentions what was skipped and why */
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	report_text(mem, &r, NULL, false, true);
	fclose(mem);
	assert_non_null(strstr(buf, "needs compute capability 8.9"));
	assert_non_null(strstr(buf, "GEMM bf16 8192"));
	free(buf);
	report_free(&r);
}

static void test_groups(void **s)
{
	(void)s;
	unsigned m;
	const char *bad = NULL;
	assert_true(bench_parse_groups("gemm,cpu", &m, &bad) && m == (BENCH_G_GEMM | BENCH_G_CPU));
	assert_true(bench_parse_groups("all", &m, &bad) && m == BENCH_G_ALL);
	assert_false(bench_parse_groups("gemm,bogus", &m, &bad));
	assert_string_equal(bad, "bogus");
	assert_false(bench_parse_groups("", &m, &bad));
	/* one table: every group parses by its name to its bit, the bits make up "all", the CPU
	 * alone needs no GPU, and the report has a section for every section a group names, while
	 * every report section but the run's conditions belongs to a group */
	unsigned all = 0;
	for (size_t g = 0; g < BENCH_N_GROUPS; g++) {
		assert_true(bench_parse_groups(bench_groups[g].name, &m, &bad));
		assert_int_equal(m, bench_groups[g].bit);
		assert_int_equal(all & m, 0);
		all |= m;
		assert_non_null(strstr(BENCH_GROUP_NAMES, bench_groups[g].name));
		strlist secs = {0};
		sl_split(&secs, bench_groups[g].sections, " ", false);
		assert_true(secs.n > 0);
		for (size_t k = 0; k < secs.n; k++)
			assert_non_null(report_explain(secs.v[k]));
		sl_free(&secs);
	}
	assert_int_equal(all, BENCH_G_ALL);
	assert_int_equal(bench_gpu_groups(), BENCH_G_ALL & ~(unsigned)BENCH_G_CPU);
	const char *sec;
	for (size_t i = 0; (sec = report_group_at(i, NULL)); i++) {
		if (strcmp(sec, "monitor") == 0)
			continue;
		bool named = false;
		for (size_t g = 0; g < BENCH_N_GROUPS && !named; g++) {
			strlist secs = {0};
			sl_split(&secs, bench_groups[g].sections, " ", false);
			for (size_t k = 0; k < secs.n; k++)
				named = named || strcmp(secs.v[k], sec) == 0;
			sl_free(&secs);
		}
		assert_true(named);
	}
}

static int setup(void **s)
{
	(void)s;
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	if (!k)
		return -1;
	kb_set_global(k);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats),       cmocka_unit_test(test_peaks),     cmocka_unit_test(test_gen),
		cmocka_unit_test(test_verify),      cmocka_unit_test(test_ptx_text),  cmocka_unit_test(test_ptxas),
		cmocka_unit_test(test_watchdog),    cmocka_unit_test(test_libraries), cmocka_unit_test(test_cpu_and_report),
		cmocka_unit_test(test_groups),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
