/*
 * The memory test on a real GPU (CTest label gpu; exit 77 where no GPU is usable, never a fake
 * pass):
 *  - gv_mt_fill writes exactly mtpattern.h's V for every mode, at a 16-byte aligned base and at
 *    one that is not (the scalar path), with an odd word count (the tail);
 *  - gv_mt_check finds nothing in clean memory, leaves ~V with rewrite, either direction, and
 *    counts and records planted wrong words (in the four-deep loop, the one-vector loop, the tail);
 *  - gv_cmp_b32 counts and locates a difference, aligned or not;
 *  - every pattern over 2 GiB (less on a small GPU) finds no error; with an injection it finds
 *    exactly the injected address; the GB/s of every pass are printed;
 *  - 95% of the free memory, taken in chunks and given back; a fill + check over all of it, with
 *    its rate (on an H200: at least 3200 GB/s read + written, its triad being about 4300).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gpu.h"
#include "bench/memtest.h"
#include "bench/mtpattern.h"
#include "bench/watchdog.h"
#include "core/util.h"

static int failures;
#define CHECK(cond, ...)                                                                                               \
	do {                                                                                                           \
		if (!(cond)) {                                                                                         \
			failures++;                                                                                    \
			printf("FAIL %s:%d: ", __FILE__, __LINE__);                                                    \
			printf(__VA_ARGS__);                                                                           \
			printf("\n");                                                                                  \
		}                                                                                                      \
	} while (0)

static gpu_session S;
static gpu_dev *D;

static CUresult fill(CUdeviceptr p, uint64_t n, unsigned mode, uint64_t a, uint64_t b)
{
	void *args[] = {&p, &n, &mode, &a, &b};
	return gpu_launch(&S, D, K_MT_FILL, gpu_grid(D, 8), 256, NULL, args);
}

static CUresult check(CUdeviceptr p, uint64_t n, unsigned mode, uint64_t a, uint64_t b, CUdeviceptr err,
		      unsigned rewrite, unsigned reverse)
{
	void *args[] = {&p, &n, &mode, &a, &b, &err, &rewrite, &reverse};
	return gpu_launch(&S, D, K_MT_CHECK, gpu_grid(D, 4), 256, NULL, args);
}

/* Copies in the kernels' stream (the device's is non-blocking: a plain cuMemcpyHtoD on the
 * legacy stream would not be ordered with its kernels), waited for. */
static void get(void *dst, CUdeviceptr src, size_t n)
{
	CUresult rc = S.cu->cuMemcpyDtoHAsync(dst, src, n, D->stream);
	if (rc == CUDA_SUCCESS)
		rc = S.cu->cuStreamSynchronize(D->stream);
	CHECK(rc == CUDA_SUCCESS, "cuMemcpyDtoHAsync: %d", rc);
}

static void put(CUdeviceptr dst, const void *src, size_t n)
{
	CUresult rc = S.cu->cuMemcpyHtoDAsync(dst, src, n, D->stream);
	if (rc == CUDA_SUCCESS)
		rc = S.cu->cuStreamSynchronize(D->stream);
	CHECK(rc == CUDA_SUCCESS, "cuMemcpyHtoDAsync: %d", rc);
}

static void read_rec(CUdeviceptr err, uint64_t rec[4])
{
	get(rec, err, 32);
}

static void clear_rec(CUdeviceptr err)
{
	uint64_t rec[4] = {0, ~0ull, 0, 0};
	put(err, rec, 32);
}

static void test_kernels(void)
{
	const gv_cuda_api *cu = S.cu;
	const uint64_t n = (1u << 22) + 37;
	CUdeviceptr buf, err;
	CHECK(cu->cuMemAlloc(&buf, (n + 2) * 8) == CUDA_SUCCESS, "cuMemAlloc");
	CHECK(cu->cuMemAlloc(&err, 32) == CUDA_SUCCESS, "cuMemAlloc");
	uint64_t *h = xmalloc((n + 2) * 8);
	for (unsigned m = 0; m < MT_MODE_COUNT; m++)
		for (int shift = 0; shift < 2; shift++) {
			CUdeviceptr p = buf + 8 * (uint64_t)shift;
			uint64_t a = 0x0123456789abcdefull, b = 0xf0f0f0f00f0f0f0full;
			CHECK(fill(p, n, m, a, b) == CUDA_SUCCESS, "gv_mt_fill launch");
			get(h, p, n * 8);
			uint64_t bad = 0;
			for (uint64_t i = 0; i < n; i++)
				bad += h[i] != mt_value(m, i, p, a, b);
			CHECK(bad == 0, "gv_mt_fill mode %u, base %s: %llu of %llu words differ from mtpattern.c", m,
			      shift ? "8 mod 16" : "aligned", (unsigned long long)bad, (unsigned long long)n);
			printf("gv_mt_fill %-8s %-8s: %s\n", mt_mode_name(m), shift ? "unaligned" : "aligned",
			       bad ? "WRONG" : "every word is the model's");
			for (unsigned reverse = 0; reverse < 2; reverse++) {
				/* clean: nothing found; rewrite leaves ~V (and the second direction puts V back) */
				uint64_t ca = a, cb = b, rec[4];
				if (reverse)
					mt_complement(m, &ca, &cb);
				clear_rec(err);
				CHECK(check(p, n, m, ca, cb, err, 1, reverse) == CUDA_SUCCESS, "gv_mt_check launch");
				read_rec(err, rec);
				CHECK(rec[0] == 0 && rec[1] == ~0ull,
				      "gv_mt_check mode %u reverse %u: %llu errors in clean memory", m, reverse,
				      (unsigned long long)rec[0]);
			}
			get(h, p, n * 8);
			bad = 0;
			for (uint64_t i = 0; i < n; i++)
				bad += h[i] != mt_value(m, i, p, a, b);
			CHECK(bad == 0, "gv_mt_check's two rewrites did not leave V (mode %u): %llu words", m,
			      (unsigned long long)bad);
			/* wrong words: the first vectors (four-deep loop), the last vectors (one-vector loop
			 * or tail), the last word */
			uint64_t at[] = {0, 1, 5, 6, 7, n / 2 + 1, n - 3, n - 2, n - 1};
			for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++) {
				uint64_t v = mt_value(m, at[k], p, a, b) ^ (1ull << (k * 7));
				put(p + 8 * at[k], &v, 8);
			}
			for (unsigned reverse = 0; reverse < 2; reverse++) {
				uint64_t rec[4];
				clear_rec(err);
				CHECK(check(p, n, m, a, b, err, 0, reverse) == CUDA_SUCCESS, "gv_mt_check launch");
				read_rec(err, rec);
				bool known = false;
				for (size_t k = 0; k < sizeof(at) / sizeof(at[0]); k++)
					known = known || (rec[1] == at[k] &&
							  rec[2] == (mt_value(m, at[k], p, a, b) ^ (1ull << (k * 7))) &&
							  rec[3] == mt_value(m, at[k], p, a, b));
				CHECK(rec[0] == 9 && known,
				      "gv_mt_check mode %u reverse %u: %llu errors (9 planted), first at %llu (read "
				      "0x%llx, "
				      "expected 0x%llx)",
				      m, reverse, (unsigned long long)rec[0], (unsigned long long)rec[1],
				      (unsigned long long)rec[2], (unsigned long long)rec[3]);
			}
		}
	printf("gv_mt_check: clean memory, rewrite both ways, 9 planted errors found%s\n",
	       failures ? " (see FAIL)" : "");
	/* the compare, in 32-bit words (n2 not a multiple of 4) */
	uint64_t n2 = 2 * n - 1;
	CUdeviceptr y;
	CHECK(cu->cuMemAlloc(&y, (n + 2) * 8) == CUDA_SUCCESS, "cuMemAlloc");
	CHECK(cu->cuMemcpyDtoDAsync(y, buf, (n + 2) * 8, D->stream) == CUDA_SUCCESS, "cuMemcpyDtoDAsync");
	memtest_cmp_result cr;
	char why[512];
	CHECK(memtest_compare(&S, D, buf, y, n2, &cr, why, sizeof(why)), "%s", why);
	CHECK(cr.mismatches == 0 && !cr.any, "gv_cmp_b32: %llu mismatches between copies",
	      (unsigned long long)cr.mismatches);
	uint32_t x32, y32;
	uint64_t spots[] = {3, n, n2 - 1};
	for (int k = 0; k < 3; k++) {
		get(&x32, buf + 4 * spots[k], 4);
		y32 = x32 ^ 0x80000001u;
		put(y + 4 * spots[k], &y32, 4);
	}
	for (int shift = 0; shift < 2; shift++) {
		CHECK(memtest_compare(&S, D, buf + 4 * (uint64_t)shift, y + 4 * (uint64_t)shift, n2 - (uint64_t)shift,
				      &cr, why, sizeof(why)),
		      "%s", why);
		bool known = cr.index + (uint64_t)shift == spots[0] || cr.index + (uint64_t)shift == spots[1] ||
			     cr.index + (uint64_t)shift == spots[2];
		CHECK(cr.mismatches == 3 && known && (cr.x ^ cr.y) == 0x80000001u,
		      "gv_cmp_b32 (base +%d): %llu mismatches (3 planted), first %llu", 4 * shift,
		      (unsigned long long)cr.mismatches, (unsigned long long)cr.index);
	}
	printf("gv_cmp_b32: copies equal, 3 planted differences found, aligned and not\n");
	free(h);
	cu->cuMemFree(buf);
	cu->cuMemFree(err);
	cu->cuMemFree(y);
}

static void print_steps(const memtest_result *r)
{
	for (int i = 0; i < r->nsteps; i++)
		printf("    pass %2d %-62s %7.1f GB/s\n", i + 1, r->steps[i].what,
		       r->steps[i].gpu_s > 0 ? (double)r->steps[i].bytes / r->steps[i].gpu_s / 1e9 : 0);
}

static void test_patterns(void)
{
	size_t free_b = 0, total_b = 0;
	gpu_mem_info(&S, &free_b, &total_b);
	uint64_t want = 2ull << 30;
	if (want > free_b / 2)
		want = free_b / 2;
	memtest_mem m;
	char why[512];
	if (!memtest_alloc(&S, 0.95, want, 0, &m, why, sizeof(why))) {
		CHECK(false, "memtest_alloc of %llu MiB: %s", (unsigned long long)(want >> 20), why);
		return;
	}
	printf("memory test over %llu MiB in %zu chunks, %zu slices\n", (unsigned long long)(m.bytes >> 20), m.nchunks,
	       m.nslices);
	memtest_opts o;
	memset(&o, 0, sizeof(o));
	o.seed = 0x5EED;
	o.inject_offset = MEMTEST_DERIVE;
	o.inject_bit = -1;
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++) {
		memtest_result r;
		bool ok = memtest_run(&S, D, &m, (memtest_pattern)p, &o, &r);
		CHECK(ok, "%s: %s", memtest_pattern_get((memtest_pattern)p)->name, r.error);
		char text[512];
		memtest_describe(&r, text, sizeof(text));
		printf("  %s\n", text);
		print_steps(&r);
		CHECK(ok && r.errors == 0 && !r.stopped && r.nsteps == r.planned_steps, "%s", text);
	}
	for (int p = 0; p < MEMTEST_N_PATTERNS; p++) {
		memtest_opts oi = o;
		oi.inject = true;
		oi.seed = 77 + (uint64_t)p;
		memtest_result r;
		bool ok = memtest_run(&S, D, &m, (memtest_pattern)p, &oi, &r);
		char text[512];
		memtest_describe(&r, text, sizeof(text));
		printf("  injected at 0x%llx bit %d: %s\n", (unsigned long long)r.inject_addr, r.inject_bit, text);
		CHECK(ok && r.injected && r.errors == 1 && r.addr == r.inject_addr &&
			      r.xor_bits == 1ull << r.inject_bit && r.step == r.inject_step,
		      "%s: the injection at 0x%llx bit %d was not found exactly: %s",
		      memtest_pattern_get((memtest_pattern)p)->name, (unsigned long long)r.inject_addr, r.inject_bit,
		      ok ? text : r.error);
	}
	memtest_free(&S, &m);
}

static void test_most_memory(void)
{
	size_t before = 0, total = 0, after = 0;
	gpu_mem_info(&S, &before, &total);
	memtest_mem m;
	char why[512];
	double t0 = now_seconds();
	if (!memtest_alloc(&S, 0.95, 0, 0, &m, why, sizeof(why))) {
		CHECK(false, "memtest_alloc of 95%%: %s", why);
		return;
	}
	printf("95%% of %llu MiB free: %llu MiB in %zu chunks (%.2f s to allocate)\n",
	       (unsigned long long)(before >> 20), (unsigned long long)(m.bytes >> 20), m.nchunks, now_seconds() - t0);
	CHECK((double)m.bytes >= 0.93 * (double)before, "only %llu of %llu MiB free were taken",
	      (unsigned long long)(m.bytes >> 20), (unsigned long long)(before >> 20));
	memtest_opts o;
	memset(&o, 0, sizeof(o));
	o.seed = 1;
	o.inject_offset = MEMTEST_DERIVE;
	o.inject_bit = -1;
	memtest_pattern runs[] = {MEMTEST_WALKING_ONES, MEMTEST_MOVING_INV_RANDOM};
	for (size_t k = 0; k < 2; k++) {
		memtest_result r;
		bool ok = memtest_run(&S, D, &m, runs[k], &o, &r);
		char text[512];
		memtest_describe(&r, text, sizeof(text));
		printf("  %s (%.2f s)\n", text, r.seconds);
		print_steps(&r);
		CHECK(ok && r.errors == 0, "%s", ok ? text : r.error);
		if (ok && r.nsteps >= 2) {
			/* the first fill and its check together: the figure the target is about */
			double gbs = (double)(r.steps[0].bytes + r.steps[1].bytes) /
				     (r.steps[0].gpu_s + r.steps[1].gpu_s) / 1e9;
			printf("  fill + check of %s: %.0f GB/s read + written\n", memtest_pattern_get(runs[k])->name,
			       gbs);
			if (strstr(D->name, "H200"))
				CHECK(gbs >= 3200,
				      "fill + check of %s at %.0f GB/s, below the 3200 GB/s target on an H200",
				      memtest_pattern_get(runs[k])->name, gbs);
		}
	}
	memtest_free(&S, &m);
	gpu_mem_info(&S, &after, &total);
	CHECK(after + (64u << 20) >= before, "memory not given back: %llu MiB free before, %llu after",
	      (unsigned long long)(before >> 20), (unsigned long long)(after >> 20));
}

int main(void)
{
	watchdog_start();
	if (!gpu_open(&S)) {
		printf("SKIP: %s\n", S.error);
		return 77;
	}
	char why[512];
	if (!gpu_use(&S, 0, why, sizeof(why))) {
		printf("FAIL: %s\n", why);
		return 1;
	}
	D = &S.dev[0];
	printf("GPU 0: %s, %d SMs, %llu MiB\n", D->name, D->sms, (unsigned long long)(D->total_mem >> 20));
	watchdog_arm("test_memtest_gpu", 400);
	test_kernels();
	test_patterns();
	test_most_memory();
	watchdog_disarm();
	gpu_close(&S);
	printf("%s: %d failure%s\n", failures ? "FAILED" : "PASSED", failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
