/*
 * The memory test (src/bench/memtest.h) against the fake libcuda, whose kernel models compute
 * with the same pattern model as the PTX (tests/fake/fake_kernels.c):
 *  - the pattern values: known values worked out apart from the C model, complements, and what
 *    the fake's gv_mt_fill / gv_mt_check / gv_cmp_b32 leave in memory (tails, an address that is
 *    not 16-byte aligned, rewrite, reverse); the GEMM input generators' model on the fake;
 *  - memtest_alloc takes a fraction of the free memory in chunks within cuda.alloc_limit, and
 *    memtest_free gives all of it back;
 *  - every pattern passes on healthy memory; a stuck bit (cuda.mem_stuck_bit) is found by every
 *    pattern that can see it, at its device address; an injection is found at the injected
 *    address and nowhere else; a stop flag ends a run early;
 *  - the buffer compare counts and locates a difference, accumulating over launches.
 * The path of the fake comes from CMake (FAKE_CUDA).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/gen.h"
#include "bench/gpu.h"
#include "bench/memtest.h"
#include "bench/mtpattern.h"
#include "bench/watchdog.h"
#include "core/util.h"
#include "nvidia/cuda.h"
#include "../tools/test_tmp.h"

#ifndef FAKE_CUDA
#define FAKE_CUDA ""
#endif

static char conf_path[4096];
static gpu_session S;
static gpu_dev *D;

/* Writes the fake's configuration and opens the fake GPU with it. gpuvet calls cuInit once a
 * process; the fake reads its configuration again at every cuInit, so the test calls it. */
static void open_fake(const char *config)
{
	FILE *f = fopen(conf_path, "w");
	assert_non_null(f);
	fputs(config, f);
	fclose(f);
	setenv("GPUVET_FAKE_CONFIG", conf_path, 1);
	setenv("GPUVET_CUDA_LIB", FAKE_CUDA, 1);
	if (gv_cuda_load())
		assert_int_equal(gv_cuda_api_get()->cuInit(0), CUDA_SUCCESS);
	if (!gpu_open(&S))
		fail_msg("gpu_open on the fake: %s", S.error);
	char why[512];
	if (!gpu_use(&S, 0, why, sizeof(why)))
		fail_msg("gpu_use on the fake: %s", why);
	D = &S.dev[0];
}

static void close_fake(void)
{
	gpu_close(&S);
	D = NULL;
}

/* The fake's device memory: tests name a bad cell by its offset into it. */
static uintptr_t fake_base(void)
{
	void *h = dlopen(FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
	assert_non_null(h);
	void *(*fn)(size_t *) = (void *(*)(size_t *))dlsym(h, "fakeCudaDeviceMemory");
	assert_non_null(fn);
	uintptr_t b = (uintptr_t)fn(NULL);
	dlclose(h);
	return b;
}

static size_t free_now(void)
{
	size_t f = 0, t = 0;
	assert_true(gpu_mem_info(&S, &f, &t));
	return f;
}

/* ---- the pattern model ---- */

static void test_values(void **s)
{
	(void)s;
	/* mode 2, worked out apart from mtpattern.c (lowbias32 by hand in another language) */
	assert_true(mt_value(MT_MODE_RANDOM, 0, 0, 0, 0) == 0x7b2bf47700000000ull);
	assert_true(mt_value(MT_MODE_RANDOM, 1, 0x1000, 0x0123456789abcdefull, 0) == 0xb1fd6d68e4c32badull);
	assert_true(mt_value(MT_MODE_RANDOM, 12345, 0, 0x0123456789abcdefull, 0xffff0000ffff0000ull) ==
		    0x375fbaa313607d86ull);
	/* only the low 32 bits of i count (it repeats every 32 GiB) */
	assert_true(mt_value(MT_MODE_RANDOM, (1ull << 32) + 7, 0, 42, 0) == 0xfff88170444bdf57ull);
	assert_true(mt_value(MT_MODE_RANDOM, 7, 0, 42, 0) == 0xfff88170444bdf57ull);
	/* the others, and p matters only to the address mode */
	assert_true(mt_value(MT_MODE_CONST, 99, 0x7000, 0x5555, 1) == 0x5555);
	assert_true(mt_value(MT_MODE_ADDRESS, 3, 0x7f0000001000ull, 0, 0) == 0x7f0000001018ull);
	assert_true(mt_value(MT_MODE_ADDRESS, 3, 0x7f0000001000ull, ~0ull, 0) == ~0x7f0000001018ull);
	assert_true(mt_value(MT_MODE_RANDOM, 5, 0x1000, 9, 0) == mt_value(MT_MODE_RANDOM, 5, 0x9000, 9, 0));
	assert_true(mt_value(MT_MODE_COUNT, 1, 2, 3, 4) == 0);
	/* complements: the same mode with its parameter inverted, for every mode */
	for (unsigned m = 0; m < MT_MODE_COUNT; m++) {
		uint64_t a = 0x1234, b = 0x77, ca = a, cb = b;
		mt_complement(m, &ca, &cb);
		for (uint64_t i = 0; i < 1000; i++)
			assert_true(mt_value(m, i * 977, 0x10000, ca, cb) == ~mt_value(m, i * 977, 0x10000, a, b));
		assert_non_null(mt_mode_name(m));
	}
	assert_null(mt_mode_name(MT_MODE_COUNT));
	/* the random words look random: about half the bits set */
	int ones = 0;
	for (uint64_t i = 0; i < 1000; i++)
		ones += __builtin_popcountll(mt_value(MT_MODE_RANDOM, i, 0, 0xfeed, 0));
	assert_true(ones > 30000 && ones < 34000);
	/* the table */
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++) {
		const memtest_pattern_info *in = memtest_pattern_get((memtest_pattern)p);
		assert_non_null(in);
		memtest_pattern q;
		assert_true(memtest_pattern_parse(in->name, &q) && q == (memtest_pattern)p);
		assert_non_null(strstr(in->origin, "memtest86+ test"));
		assert_true(strlen(in->description) > 10);
	}
	memtest_pattern q;
	assert_false(memtest_pattern_parse("bit_fade", &q));
	assert_null(memtest_pattern_get(MEMTEST_N_PATTERNS));
	char bits[64];
	memtest_bits_text(1ull << 3, bits, sizeof(bits));
	assert_string_equal(bits, "bit 3");
	memtest_bits_text(1ull << 3 | 1ull << 17 | 1ull << 63, bits, sizeof(bits));
	assert_string_equal(bits, "bits 3, 17, 63");
	memtest_bits_text(0xff00ff, bits, sizeof(bits));
	assert_string_equal(bits, "16 bits");
}

/* ---- the fake's kernels ---- */

static void launch_fill(CUdeviceptr p, uint64_t n, unsigned mode, uint64_t a, uint64_t b)
{
	void *args[] = {&p, &n, &mode, &a, &b};
	assert_int_equal(gpu_launch(&S, D, K_MT_FILL, 4, 256, NULL, args), CUDA_SUCCESS);
}

static void launch_check(CUdeviceptr p, uint64_t n, unsigned mode, uint64_t a, uint64_t b, CUdeviceptr err,
			 unsigned rewrite, unsigned reverse)
{
	void *args[] = {&p, &n, &mode, &a, &b, &err, &rewrite, &reverse};
	assert_int_equal(gpu_launch(&S, D, K_MT_CHECK, 4, 256, NULL, args), CUDA_SUCCESS);
}

static void clear_rec(CUdeviceptr err)
{
	uint64_t rec[4] = {0, ~0ull, 0, 0};
	assert_int_equal(S.cu->cuMemcpyHtoD(err, rec, sizeof(rec)), CUDA_SUCCESS);
}

static void test_fake_kernels(void **s)
{
	(void)s;
	open_fake("cuda.alloc_limit = 64MiB\n");
	const gv_cuda_api *cu = S.cu;
	/* distinct handles per kernel */
	assert_true(D->k[K_MT_FILL] != D->k[K_MT_CHECK] && D->k[K_MT_CHECK] != D->k[K_CMP_B32]);
	assert_true(D->k[K_COPY] != D->k[K_SET]);
	const uint64_t n = 1001; /* odd: a tail word */
	CUdeviceptr buf, err;
	assert_int_equal(cu->cuMemAlloc(&buf, (n + 2) * 8), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemAlloc(&err, 32), CUDA_SUCCESS);
	uint64_t *h = xmalloc((n + 2) * 8);
	/* every mode, at a 16-byte aligned base and at one that is not */
	for (unsigned m = 0; m < MT_MODE_COUNT; m++)
		for (int shift = 0; shift < 2; shift++) {
			CUdeviceptr p = buf + 8 * (uint64_t)shift;
			launch_fill(p, n, m, 0xabcdef0123ull, 0x5a5a);
			assert_int_equal(cu->cuMemcpyDtoH(h, p, n * 8), CUDA_SUCCESS);
			for (uint64_t i = 0; i < n; i++)
				assert_true(h[i] == mt_value(m, i, p, 0xabcdef0123ull, 0x5a5a));
			/* a clean check finds nothing; with rewrite it leaves the complement */
			clear_rec(err);
			launch_check(p, n, m, 0xabcdef0123ull, 0x5a5a, err, 1, (unsigned)shift);
			uint64_t rec[4];
			assert_int_equal(cu->cuMemcpyDtoH(rec, err, 32), CUDA_SUCCESS);
			assert_true(rec[0] == 0 && rec[1] == ~0ull);
			assert_int_equal(cu->cuMemcpyDtoH(h, p, n * 8), CUDA_SUCCESS);
			for (uint64_t i = 0; i < n; i++)
				assert_true(h[i] == ~mt_value(m, i, p, 0xabcdef0123ull, 0x5a5a));
		}
	/* the fake's own words against the values worked out by hand (test_values) */
	launch_fill(buf, 2, MT_MODE_RANDOM, 0, 0);
	assert_int_equal(cu->cuMemcpyDtoH(h, buf, 16), CUDA_SUCCESS);
	assert_true(h[0] == 0x7b2bf47700000000ull);
	launch_fill(buf, 2, MT_MODE_ADDRESS, 0, 0);
	assert_int_equal(cu->cuMemcpyDtoH(h, buf, 16), CUDA_SUCCESS);
	assert_true(h[0] == buf && h[1] == buf + 8);
	/* two wrong words: both counted, one of them claimed with what was read and expected */
	launch_fill(buf, n, MT_MODE_CONST, 0, 0);
	uint64_t bad = 0x10;
	assert_int_equal(cu->cuMemcpyHtoD(buf + 8 * 17, &bad, 8), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemcpyHtoD(buf + 8 * (n - 1), &bad, 8), CUDA_SUCCESS);
	for (unsigned reverse = 0; reverse < 2; reverse++) {
		clear_rec(err);
		launch_check(buf, n, MT_MODE_CONST, 0, 0, err, 0, reverse);
		uint64_t rec[4];
		assert_int_equal(cu->cuMemcpyDtoH(rec, err, 32), CUDA_SUCCESS);
		assert_int_equal(rec[0], 2);
		assert_true(rec[1] == 17 || rec[1] == n - 1);
		assert_true(rec[2] == 0x10 && rec[3] == 0);
	}
	/* an unknown mode does nothing */
	clear_rec(err);
	launch_check(buf, n, MT_MODE_COUNT, 0, 0, err, 1, 0);
	assert_int_equal(cu->cuMemcpyDtoH(h, buf + 8 * 17, 8), CUDA_SUCCESS);
	assert_true(h[0] == 0x10);
	/* a launch outside an allocation is an illegal address, as on a GPU */
	CUdeviceptr past = buf + (n + 2) * 8;
	uint64_t many = 4096, zero = 0;
	unsigned mode = 0;
	void *args[] = {&past, &many, &mode, &zero, &zero};
	assert_int_equal(gpu_launch(&S, D, K_MT_FILL, 4, 256, NULL, args), CUDA_ERROR_ILLEGAL_ADDRESS);
	free(h);
	cu->cuMemFree(buf);
	cu->cuMemFree(err);
	/* the GEMM input generators are modelled too: gpu_check_fill holds on the fake */
	for (int dt = 0; dt < DT_COUNT; dt++) {
		CUdeviceptr p;
		uint64_t elems = 10000;
		assert_int_equal(cu->cuMemAlloc(&p, elems * 8), CUDA_SUCCESS);
		assert_int_equal(gpu_fill(&S, D, (bench_dtype)dt, p, elems, 77 + (unsigned)dt), CUDA_SUCCESS);
		char why[512];
		if (!gpu_check_fill(&S, D, (bench_dtype)dt, p, elems, 77 + (unsigned)dt, why, sizeof(why)))
			fail_msg("%s", why);
		cu->cuMemFree(p);
	}
	close_fake();
}

static void test_compare(void **s)
{
	(void)s;
	open_fake("cuda.alloc_limit = 64MiB\n");
	const gv_cuda_api *cu = S.cu;
	const uint64_t n = 4099; /* vectors of four and a tail of three */
	CUdeviceptr x, y;
	assert_int_equal(cu->cuMemAlloc(&x, n * 4 + 16), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemAlloc(&y, n * 4 + 16), CUDA_SUCCESS);
	uint32_t *h = xmalloc(n * 4 + 16);
	for (uint64_t i = 0; i < n + 4; i++)
		h[i] = gen_hash32((uint32_t)i);
	assert_int_equal(cu->cuMemcpyHtoD(x, h, n * 4 + 16), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemcpyHtoD(y, h, n * 4 + 16), CUDA_SUCCESS);
	memtest_cmp_result cr;
	char why[256];
	assert_true(memtest_compare(&S, D, x, y, n, &cr, why, sizeof(why)));
	assert_false(cr.any);
	assert_int_equal(cr.mismatches, 0);
	/* one word differs in y */
	uint32_t flipped = h[2049] ^ 0x100;
	assert_int_equal(cu->cuMemcpyHtoD(y + 2049 * 4, &flipped, 4), CUDA_SUCCESS);
	assert_true(memtest_compare(&S, D, x, y, n, &cr, why, sizeof(why)));
	assert_true(cr.any);
	assert_int_equal(cr.mismatches, 1);
	assert_int_equal(cr.index, 2049);
	assert_true(cr.x == h[2049] && cr.y == flipped);
	/* bases that are not 16-byte aligned: the same word, one index lower */
	assert_true(memtest_compare(&S, D, x + 4, y + 4, n, &cr, why, sizeof(why)));
	assert_true(cr.mismatches == 1 && cr.index == 2048);
	/* a compare that accumulates: three launches, one read, then clear */
	memtest_cmp c;
	assert_true(memtest_cmp_init(&S, &c, why, sizeof(why)));
	for (int i = 0; i < 3; i++)
		assert_int_equal(memtest_cmp_launch(&S, D, &c, x, y, n, NULL), CUDA_SUCCESS);
	assert_int_equal(memtest_cmp_read(&S, D, &c, NULL, &cr), CUDA_SUCCESS);
	assert_true(cr.mismatches == 3 && cr.launches == 3 && cr.index == 2049);
	assert_int_equal(memtest_cmp_reset(&S, D, &c, NULL), CUDA_SUCCESS);
	assert_int_equal(memtest_cmp_launch(&S, D, &c, x, x, n, NULL), CUDA_SUCCESS);
	assert_int_equal(memtest_cmp_read(&S, D, &c, NULL, &cr), CUDA_SUCCESS);
	assert_true(cr.mismatches == 0 && !cr.any && cr.launches == 1);
	memtest_cmp_free(&S, &c);
	free(h);
	cu->cuMemFree(x);
	cu->cuMemFree(y);
	close_fake();
}

/* ---- allocation ---- */

static void check_layout(const memtest_mem *m, uint64_t slice_bytes)
{
	uint64_t sum = 0;
	size_t k = 0;
	for (size_t c = 0; c < m->nchunks; c++) {
		assert_true(m->chunk[c].bytes <= MEMTEST_CHUNK_MAX && m->chunk[c].bytes % MEMTEST_CHUNK_MIN == 0);
		sum += m->chunk[c].bytes;
		/* the slices cover the chunk in order, none over the slice size, whole vectors */
		uint64_t off = 0;
		for (; k < m->nslices && m->slice[k].chunk == c; k++) {
			assert_true(m->slice[k].base == m->chunk[c].base + off);
			assert_true(m->slice[k].words * 8 <= slice_bytes && m->slice[k].words % 2 == 0);
			off += m->slice[k].words * 8;
		}
		assert_true(off == m->chunk[c].bytes);
	}
	assert_true(k == m->nslices && sum == m->bytes);
}

static void test_alloc(void **s)
{
	(void)s;
	/* the limit, not the free memory cuMemGetInfo reports, is what holds: chunks halve until they fit */
	open_fake("cuda.alloc_limit = 40MiB\n");
	size_t before = free_now();
	memtest_mem m;
	char why[512];
	assert_true(memtest_alloc(&S, 0.95, 0, 3 << 20, &m, why, sizeof(why)));
	assert_true(m.bytes <= (40u << 20) - (256u << 10));
	assert_true(m.bytes >= (40u << 20) - (256u << 10) - MEMTEST_CHUNK_MIN);
	assert_true(m.nchunks >= 2 && m.err != 0);
	assert_true(m.free_before == before);
	check_layout(&m, 3 << 20);
	memtest_free(&S, &m);
	assert_int_equal(m.nchunks, 0);
	assert_true(free_now() == before);
	memtest_free(&S, &m); /* twice is harmless */
	close_fake();
	/* a fraction of what is free */
	open_fake("cuda.alloc_limit = 1GiB\ngpu.0.memory_total = 64MiB\n");
	before = free_now();
	assert_true(memtest_alloc(&S, 0.5, 0, 0, &m, why, sizeof(why)));
	uint64_t want = (uint64_t)(0.5 * (double)before) - (256u << 10);
	assert_true(m.bytes <= want && m.bytes + MEMTEST_CHUNK_MIN > want);
	check_layout(&m, MEMTEST_SLICE_MAX);
	memtest_free(&S, &m);
	/* at most max_bytes */
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 0, &m, why, sizeof(why)));
	assert_true(m.bytes == 8 << 20);
	memtest_free(&S, &m);
	assert_true(free_now() == before);
	close_fake();
	/* nothing to take */
	open_fake("cuda.alloc_limit = 1MiB\n");
	assert_false(memtest_alloc(&S, 0.95, 0, 0, &m, why, sizeof(why)));
	assert_non_null(strstr(why, "no device memory to test"));
	assert_int_equal(m.nchunks, 0);
	close_fake();
	open_fake("error.cuMemAlloc = 999\n");
	assert_false(memtest_alloc(&S, 0.95, 0, 0, &m, why, sizeof(why)));
	assert_non_null(strstr(why, "cuMemAlloc"));
	close_fake();
}

/* ---- patterns ---- */

static memtest_opts opts(void)
{
	memtest_opts o;
	memset(&o, 0, sizeof(o));
	o.seed = 0x5EED;
	o.inject_offset = MEMTEST_DERIVE;
	o.inject_bit = -1;
	return o;
}

static void test_patterns_healthy(void **s)
{
	(void)s;
	open_fake("cuda.alloc_limit = 64MiB\n");
	memtest_mem m;
	char why[512];
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	assert_true(m.nslices >= 8);
	memtest_opts o = opts();
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++) {
		memtest_result r;
		if (!memtest_run(&S, D, &m, (memtest_pattern)p, &o, &r))
			fail_msg("%s: %s", memtest_pattern_get((memtest_pattern)p)->name, r.error);
		char text[512];
		memtest_describe(&r, text, sizeof(text));
		print_message("%s\n", text);
		assert_int_equal(r.errors, 0);
		assert_false(r.stopped || r.injected);
		assert_int_equal(r.step, 0);
		assert_true(r.nsteps == r.planned_steps && r.nsteps > 1);
		assert_true(r.bytes >= 2 * m.bytes && r.seconds > 0);
		assert_non_null(strstr(text, "no error in"));
		uint64_t sum = 0;
		for (int i = 0; i < r.nsteps; i++) {
			assert_true(r.steps[i].what[0] && r.steps[i].errors == 0);
			sum += r.steps[i].bytes;
		}
		assert_true(sum == r.bytes);
	}
	/* walking ones: 8 positions, or all 64 with long */
	memtest_result r;
	assert_true(memtest_run(&S, D, &m, MEMTEST_WALKING_ONES, &o, &r));
	assert_int_equal(r.nsteps, 16);
	assert_string_equal(r.steps[15].what, "check 1 << 63");
	o.long_run = true;
	assert_true(memtest_run(&S, D, &m, MEMTEST_WALKING_ONES, &o, &r));
	assert_int_equal(r.nsteps, 128);
	assert_int_equal(r.errors, 0);
	/* the moving inversions leave the pattern itself behind: zeros after moving_inv_01 */
	uint64_t w[4];
	assert_true(memtest_run(&S, D, &m, MEMTEST_MOVING_INV_01, &o, &r));
	assert_int_equal(S.cu->cuMemcpyDtoH(w, m.slice[3].base + 64, sizeof(w)), CUDA_SUCCESS);
	assert_true(w[0] == 0 && w[3] == 0);
	/* own address leaves each word's complemented address */
	assert_true(memtest_run(&S, D, &m, MEMTEST_OWN_ADDRESS, &o, &r));
	assert_int_equal(S.cu->cuMemcpyDtoH(w, m.slice[2].base, sizeof(w)), CUDA_SUCCESS);
	assert_true(w[1] == ~(m.slice[2].base + 8));
	/* the random pattern is the documented one, per slice */
	assert_true(memtest_run(&S, D, &m, MEMTEST_BLOCK_MOVE, &o, &r));
	const memtest_slice *sl = &m.slice[5];
	uint64_t a = memtest_slice_seed(sl->base, o.seed ^ 0xB10C);
	assert_int_equal(S.cu->cuMemcpyDtoH(w, sl->base + 8 * 10, 8), CUDA_SUCCESS);
	assert_int_equal(S.cu->cuMemcpyDtoH(w + 1, sl->base + 8 * (sl->words / 2 + 10), 8), CUDA_SUCCESS);
	assert_true(w[0] == mt_value(MT_MODE_RANDOM, 10, sl->base, a, 0) && w[1] == w[0]);
	assert_true(memtest_slice_seed(m.slice[4].base, 1) != memtest_slice_seed(m.slice[5].base, 1));
	memtest_free(&S, &m);
	/* no memory */
	memtest_result r0;
	assert_false(memtest_run(&S, D, &m, MEMTEST_OWN_ADDRESS, &o, &r0));
	assert_non_null(strstr(r0.error, "no device memory"));
	close_fake();
}

static void test_stuck_bit(void **s)
{
	(void)s;
	/* a bad cell 1 MiB + 0x238 into the device memory, bit 5 stuck at 1 */
	const uint64_t off = (1u << 20) + 0x238;
	const int bit = 5;
	char conf[256];
	snprintf(conf, sizeof(conf), "cuda.alloc_limit = 64MiB\ncuda.mem_stuck_bit = %llu:%d\n",
		 (unsigned long long)off, bit);
	open_fake(conf);
	memtest_mem m;
	char why[512];
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	CUdeviceptr cell = (CUdeviceptr)(fake_base() + off);
	/* the cell is in the tested memory, and its slice */
	const memtest_slice *sl = NULL;
	for (size_t i = 0; i < m.nslices; i++)
		if (cell >= m.slice[i].base && cell < m.slice[i].base + m.slice[i].words * 8)
			sl = &m.slice[i];
	assert_non_null(sl);
	memtest_opts o = opts();
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++) {
		memtest_result r;
		assert_true(memtest_run(&S, D, &m, (memtest_pattern)p, &o, &r));
		char text[512];
		memtest_describe(&r, text, sizeof(text));
		print_message("%s\n", text);
		/* block move's random words show a stuck-at-1 bit only where the pattern has a 0 */
		uint64_t half = sl->words / 2, w = (cell - sl->base) / 8;
		uint64_t want =
			mt_value(MT_MODE_RANDOM, w % half, sl->base, memtest_slice_seed(sl->base, o.seed ^ 0xB10C), 0);
		bool visible = p != MEMTEST_BLOCK_MOVE || !(want >> bit & 1);
		if (!visible) {
			assert_int_equal(r.errors, 0);
			continue;
		}
		assert_true(r.errors >= 1);
		assert_true(r.addr == cell);
		assert_true(r.xor_bits == 1ull << bit);
		assert_true(r.read >> bit & 1);
		assert_true(r.step >= 2 && r.step <= r.nsteps);
		char addr[64];
		snprintf(addr, sizeof(addr), "at 0x%llx", (unsigned long long)cell);
		assert_non_null(strstr(text, addr));
		assert_non_null(strstr(text, "(bit 5)"));
		assert_non_null(strstr(text, memtest_pattern_get((memtest_pattern)p)->name));
		if (p == MEMTEST_WALKING_ONES)
			assert_int_equal(r.errors, 8); /* bit 5 is none of the 8 positions: every check sees it */
		if (p == MEMTEST_OWN_ADDRESS)
			assert_int_equal(r.errors, 1); /* the address or its complement has a 0 there */
		if (p == MEMTEST_MOVING_INV_01)
			assert_int_equal(r.errors, 2); /* both checks of zeros */
		if (p == MEMTEST_BLOCK_MOVE && w < half)
			assert_int_equal(r.errors, 2); /* the cell and its copy in the second half */
	}
	/* block move, with the cell stuck at the complement of what its pattern writes there: found,
	 * and in its copy (the copy engine read it bad) */
	uint64_t w = (cell - sl->base) / 8, half = sl->words / 2;
	CUdeviceptr slice_base = sl->base;
	memtest_free(&S, &m);
	close_fake();
	uint64_t want =
		mt_value(MT_MODE_RANDOM, w % half, slice_base, memtest_slice_seed(slice_base, o.seed ^ 0xB10C), 0);
	snprintf(conf, sizeof(conf), "cuda.alloc_limit = 64MiB\ncuda.mem_stuck_bit = %llu:%d:%d\n",
		 (unsigned long long)off, bit, (int)(~want >> bit & 1));
	open_fake(conf);
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	assert_true(m.slice[0].base <= cell && cell < m.slice[m.nslices - 1].base + 8 * m.slice[m.nslices - 1].words);
	memtest_result r;
	assert_true(memtest_run(&S, D, &m, MEMTEST_BLOCK_MOVE, &o, &r));
	assert_true(r.errors == (w < half ? 2u : 1u) && r.addr == cell && r.xor_bits == 1ull << bit && r.step == 3);
	memtest_free(&S, &m);
	close_fake();
	/* stuck at 0 is seen too (walking ones: the check of that very bit) */
	snprintf(conf, sizeof(conf), "cuda.alloc_limit = 64MiB\ncuda.mem_stuck_bit = %llu:9:0\n",
		 (unsigned long long)off);
	open_fake(conf);
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	assert_true(memtest_run(&S, D, &m, MEMTEST_WALKING_ONES, &o, &r));
	assert_true(r.errors == 1 && r.addr == (CUdeviceptr)(fake_base() + off) && r.step == 4);
	assert_true(r.expected == 1u << 9 && r.read == 0);
	memtest_free(&S, &m);
	close_fake();
}

static void test_injection(void **s)
{
	(void)s;
	open_fake("cuda.alloc_limit = 64MiB\n");
	memtest_mem m;
	char why[512];
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++)
		for (int chosen = 0; chosen < 2; chosen++) {
			memtest_opts o = opts();
			o.inject = true;
			o.seed = 1000 + (uint64_t)p;
			if (chosen) {
				o.inject_offset = 3 * (1u << 20) + 0x1238; /* in the fourth slice */
				o.inject_bit = 3;
			}
			memtest_result r;
			if (!memtest_run(&S, D, &m, (memtest_pattern)p, &o, &r))
				fail_msg("%s: %s", memtest_pattern_get((memtest_pattern)p)->name, r.error);
			char text[512];
			memtest_describe(&r, text, sizeof(text));
			print_message("%s (injected at 0x%llx, bit %d)\n", text, (unsigned long long)r.inject_addr,
				      r.inject_bit);
			assert_true(r.injected);
			assert_true(r.inject_addr >= m.chunk[0].base);
			assert_true(r.inject_now == (r.inject_was ^ 1ull << r.inject_bit));
			if (chosen)
				assert_true(r.inject_addr == m.slice[3].base + 0x1238 && r.inject_bit == 3);
			/* found exactly there, by the check right after it */
			assert_int_equal(r.errors, 1);
			assert_true(r.addr == r.inject_addr);
			assert_true(r.xor_bits == 1ull << r.inject_bit);
			assert_true(r.read == r.inject_now);
			assert_int_equal(r.step, r.inject_step);
			assert_int_equal(r.steps[r.step - 1].errors, 1);
		}
	/* past the end */
	memtest_opts o = opts();
	o.inject = true;
	o.inject_offset = m.bytes + 8;
	memtest_result r;
	assert_false(memtest_run(&S, D, &m, MEMTEST_OWN_ADDRESS, &o, &r));
	assert_non_null(strstr(r.error, "injection offset"));
	memtest_free(&S, &m);
	close_fake();
}

static volatile sig_atomic_t stop_flag;
static pthread_t test_thread;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_flag = 1;
}

/* As in diag and bench: the flag is set by a signal handler in the thread that runs the test
 * (SIGINT there, SIGUSR1 here), never written from another thread. */
static void *set_stop(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
	pthread_kill(test_thread, SIGUSR1);
	return NULL;
}

static void test_stop(void **s)
{
	(void)s;
	/* 5 ms a launch: 8 slices x 32 passes would take 1.3 s */
	open_fake("cuda.alloc_limit = 64MiB\nhang.cuLaunchKernel = 5\n");
	memtest_mem m;
	char why[512];
	assert_true(memtest_alloc(&S, 0.95, 8 << 20, 1 << 20, &m, why, sizeof(why)));
	memtest_opts o = opts();
	o.stop = &stop_flag;
	stop_flag = 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, NULL), 0);
	test_thread = pthread_self();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, set_stop, (void *)(uintptr_t)100000), 0);
	memtest_result r;
	assert_true(memtest_run(&S, D, &m, MEMTEST_MOVING_INV_8BIT, &o, &r));
	pthread_join(t, NULL);
	assert_true(r.stopped);
	assert_true(r.nsteps < r.planned_steps);
	assert_true(r.seconds < 0.6);
	char text[512];
	memtest_describe(&r, text, sizeof(text));
	assert_non_null(strstr(text, "stopped before the end"));
	/* set before the start: nothing runs */
	assert_true(memtest_run(&S, D, &m, MEMTEST_OWN_ADDRESS, &o, &r));
	assert_true(r.stopped && r.nsteps == 0 && r.bytes == 0);
	/* the watchdog's soft limit stops it the same way */
	stop_flag = 0;
	o.deadline_s = 0.05;
	assert_true(memtest_run(&S, D, &m, MEMTEST_MOVING_INV_8BIT, &o, &r));
	assert_true(r.stopped && r.seconds < 0.6);
	assert_false(watchdog_expired()); /* disarmed again */
	memtest_free(&S, &m);
	close_fake();
	/* a failing launch is an error, not a pass */
	open_fake("cuda.alloc_limit = 64MiB\nerror.cuLaunchKernel = 719\n");
	assert_true(memtest_alloc(&S, 0.95, 4 << 20, 0, &m, why, sizeof(why)));
	o = opts();
	assert_false(memtest_run(&S, D, &m, MEMTEST_OWN_ADDRESS, &o, &r));
	assert_non_null(strstr(r.error, "cuLaunchKernel"));
	memtest_free(&S, &m);
	close_fake();
}

static int setup(void **s)
{
	(void)s;
	if (!*FAKE_CUDA)
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/gpuvet-test-memtest-%d.conf", test_tmpdir(), (int)getpid());
	watchdog_start();
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	unlink(conf_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_values),           cmocka_unit_test(test_fake_kernels),
		cmocka_unit_test(test_compare),          cmocka_unit_test(test_alloc),
		cmocka_unit_test(test_patterns_healthy), cmocka_unit_test(test_stuck_bit),
		cmocka_unit_test(test_injection),        cmocka_unit_test(test_stop),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
