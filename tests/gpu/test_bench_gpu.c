/*
 * gpuvet bench on a real GPU (CTest label gpu; exit 77 where no GPU is usable, never a fake pass):
 *  - the PTX input generators write exactly what gen.c models, for every data type;
 *  - the stream kernels compute every element right, including a tail that is not a multiple
 *    of the unrolled grid;
 *  - the empty kernel launches plainly and from a CUDA graph;
 *  - every benchmark group at small sizes produces verified figures (GEMMs of every type the GPU
 *    supports, bandwidth, transfers, P2P and NCCL when there are two GPUs).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gen.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "kb/kb.h"

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

static void test_fill(gpu_session *s, gpu_dev *d)
{
	const gv_cuda_api *cu = s->cu;
	const uint64_t n = (1u << 20) + 37;
	for (int dt = 0; dt < DT_COUNT; dt++) {
		CUdeviceptr p = 0;
		CUresult rc = cu->cuMemAlloc(&p, n * 8);
		CHECK(rc == CUDA_SUCCESS, "cuMemAlloc %d", rc);
		rc = gpu_fill(s, d, (bench_dtype)dt, p, n, 0xC0FFEEu + (unsigned)dt);
		CHECK(rc == CUDA_SUCCESS, "gpu_fill %s: %d", dtype_get((bench_dtype)dt)->name, rc);
		char why[512];
		bool ok = gpu_check_fill(s, d, (bench_dtype)dt, p, n, 0xC0FFEEu + (unsigned)dt, why, sizeof(why));
		CHECK(ok, "%s generator: %s", dtype_get((bench_dtype)dt)->name, why);
		/* every element, not only the sampled stretches */
		int bytes = dtype_get((bench_dtype)dt)->in_bytes;
		unsigned char *h = malloc(n * (uint64_t)bytes);
		cu->cuMemcpyDtoH(h, p, n * (uint64_t)bytes);
		uint64_t bad = 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t got = 0, want = gen_bits((bench_dtype)dt, 0xC0FFEEu + (unsigned)dt, i);
			memcpy(&got, h + i * (uint64_t)bytes, (size_t)bytes);
			bad += got != want;
		}
		CHECK(bad == 0, "%s generator: %llu of %llu elements differ from the model", dtype_get((bench_dtype)dt)->name,
		      (unsigned long long)bad, (unsigned long long)n);
		printf("generator %s: %s\n", dtype_get((bench_dtype)dt)->name, bad ? "WRONG" : "matches the model");
		free(h);
		cu->cuMemFree(p);
	}
}

static void test_stream_kernels(gpu_session *s, gpu_dev *d)
{
	const gv_cuda_api *cu = s->cu;
	uint64_t n4 = 1000003; /* not a multiple of anything the launch uses */
	CUdeviceptr a, b, c, out;
	unsigned grid = gpu_grid(d, 4), block = 256;
	cu->cuMemAlloc(&a, n4 * 16);
	cu->cuMemAlloc(&b, n4 * 16);
	cu->cuMemAlloc(&c, n4 * 16);
	cu->cuMemAlloc(&out, (size_t)grid * block * 4);
	float one = 1, two = 2, three = 3, sc = 0.5f;
	void *sa[] = {&a, &n4, &one}, *sb[] = {&b, &n4, &two}, *sc3[] = {&c, &n4, &three};
	gpu_launch(s, d, K_SET, grid, block, NULL, sa);
	gpu_launch(s, d, K_SET, grid, block, NULL, sb);
	gpu_launch(s, d, K_SET, grid, block, NULL, sc3);
	void *copy[] = {&a, &c, &n4}, *scale[] = {&c, &b, &n4, &sc}, *add[] = {&a, &b, &c, &n4},
	     *triad[] = {&b, &c, &a, &n4, &sc}, *rd[] = {&a, &out, &n4};
	struct {
		const char *name;
		gpu_kernel k;
		void **args;
		CUdeviceptr *dst;
		float want;
	} steps[] = {
		{"copy", K_COPY, copy, &c, 1.0f},     {"scale", K_SCALE, scale, &b, 0.5f},
		{"add", K_ADD, add, &c, 1.5f},        {"triad", K_TRIAD, triad, &a, 1.25f},
	};
	float *h = malloc(n4 * 16);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		CUresult rc = gpu_launch(s, d, steps[i].k, grid, block, NULL, steps[i].args);
		CHECK(rc == CUDA_SUCCESS, "%s launch %d", steps[i].name, rc);
		cu->cuStreamSynchronize(d->stream);
		cu->cuMemcpyDtoH(h, *steps[i].dst, n4 * 16);
		uint64_t bad = 0;
		for (uint64_t k = 0; k < n4 * 4; k++)
			bad += h[k] != steps[i].want;
		CHECK(bad == 0, "%s: %llu elements wrong", steps[i].name, (unsigned long long)bad);
		printf("kernel %s: %s\n", steps[i].name, bad ? "WRONG" : "every element right");
	}
	gpu_launch(s, d, K_READ, grid, block, NULL, rd);
	cu->cuStreamSynchronize(d->stream);
	float *part = malloc((size_t)grid * block * 4);
	cu->cuMemcpyDtoH(part, out, (size_t)grid * block * 4);
	double sum = 0;
	for (size_t i = 0; i < (size_t)grid * block; i++)
		sum += part[i];
	CHECK(sum == 1.25 * (double)n4 * 4, "read: sum %.1f, expected %.1f", sum, 1.25 * (double)n4 * 4);
	printf("kernel read: sum %s\n", sum == 1.25 * (double)n4 * 4 ? "right" : "WRONG");
	free(part);
	free(h);
	cu->cuMemFree(a);
	cu->cuMemFree(b);
	cu->cuMemFree(c);
	cu->cuMemFree(out);
}

/* The guard kernel keeps the GPU busy for the time asked: an event recorded after it on the
 * same stream is at least that late (a functional check, not a timing claim: the bound is the
 * requested duration, which the kernel must not cut short). */
static void test_guard(gpu_session *s, gpu_dev *d)
{
	const gv_cuda_api *cu = s->cu;
	uint64_t ns = 2000000; /* 2 ms */
	CUresult rc = cu->cuEventRecord(d->ev_start, d->stream);
	if (rc == CUDA_SUCCESS)
		rc = gpu_guard(s, d, NULL, ns);
	float ms = 0;
	if (rc == CUDA_SUCCESS)
		rc = gpu_event_elapsed(s, d, &ms);
	CHECK(rc == CUDA_SUCCESS, "guard kernel: CUDA error %d", rc);
	CHECK(ms >= 1.99f, "guard kernel of 2 ms ended after %.3f ms", ms);
	printf("guard kernel: 2 ms asked, %.3f ms between the events\n", ms);
}

static void test_groups(gpu_session *s, monitor *mon)
{
	bench_opts o;
	memset(&o, 0, sizeof(o));
	o.quick = true;
	o.size = 1024;
	o.transfer_bytes = 64 << 20;
	o.groups = BENCH_G_ALL;
	o.limit_scale = 2;
	for (int i = 0; i < DT_COUNT; i++)
		o.dtypes[i] = true;
	bench_report r;
	report_init(&r);
	bench_ctx c;
	memset(&c, 0, sizeof(c));
	c.o = &o;
	c.r = &r;
	c.gpu = s;
	c.mon = mon;
	bench_gemm(&c);
	bench_memory(&c);
	bench_transfer(&c);
	bench_launch(&c);
	bench_multi(&c);
	bench_gemm_cleanup(&c);
	bench_window_close(&c);
	gpu_dev *d = &s->dev[0];
	int cc = d->cc_major * 10 + d->cc_minor;
	for (size_t i = 0; i < r.n; i++) {
		const bench_figure *f = &r.v[i];
		printf("%-28s %s %10.3f %-8s %s%s\n", f->id, f->skipped ? "skipped" : "measured", f->st.median, f->unit,
		       f->verified == VERIFY_OK ? "verified" : f->verified == VERIFY_FAILED ? "WRONG" : "",
		       f->note ? f->note : "");
		CHECK(f->verified != VERIFY_FAILED, "%s: %s", f->id, f->verify_text ? f->verify_text : "wrong");
		if (str_starts(f->id, "gemm.")) {
			bench_dtype dt;
			bool known = dtype_parse(f->id + 5, &dt);
			if (known && cc >= dtype_get(dt)->min_cc) {
				CHECK(!f->skipped, "%s skipped: %s", f->id, f->note ? f->note : "");
				CHECK(f->skipped || f->verified == VERIFY_OK, "%s not verified: %s", f->id, f->note ? f->note : "");
			}
		}
		if (str_starts(f->id, "memory.") || !strcmp(f->id, "transfer.h2d_pinned"))
			CHECK(!f->skipped && f->verified == VERIFY_OK, "%s not measured or not verified", f->id);
		if (str_starts(f->id, "launch."))
			CHECK(!f->skipped && f->st.median > 0 && f->st.median < 1000, "%s: %g us", f->id, f->st.median);
	}
	const bench_figure *plain = report_find(&r, "launch.back_to_back"), *graph = report_find(&r, "launch.graph");
	if (plain && graph && !plain->skipped && !graph->skipped)
		CHECK(graph->st.median < plain->st.median, "graph replay %.2f us is not below a plain launch %.2f us",
		      graph->st.median, plain->st.median);
	for (size_t i = 0; i < r.notes.n; i++)
		printf("note: %s\n", r.notes.v[i]);
	report_free(&r);
}

int main(void)
{
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	if (!k) {
		printf("knowledge base: %s\n", err);
		return 1;
	}
	kb_set_global(k);
	watchdog_start();
	gpu_session s;
	if (!gpu_open(&s)) {
		printf("SKIP: %s\n", s.error);
		return 77;
	}
	char why[512];
	if (!gpu_use(&s, 0, why, sizeof(why))) {
		printf("FAIL: %s\n", why);
		return 1;
	}
	printf("GPU 0: %s, compute capability %d.%d, %d SMs, L2 %d KiB\n", s.dev[0].name, s.dev[0].cc_major,
	       s.dev[0].cc_minor, s.dev[0].sms, s.dev[0].l2_bytes >> 10);
	watchdog_arm("test_bench_gpu", 300);
	test_fill(&s, &s.dev[0]);
	test_stream_kernels(&s, &s.dev[0]);
	test_guard(&s, &s.dev[0]);
	char merr[256];
	monitor *mon = monitor_start(100, merr, sizeof(merr));
	for (int i = 0; i < s.count; i++)
		s.dev[i].nvml_index = monitor_find_bus(mon, s.dev[i].bus_id);
	test_groups(&s, mon);
	monitor_stop(mon);
	watchdog_disarm();
	gpu_close(&s);
	kb_free(k);
	printf("%s: %d failure%s\n", failures ? "FAILED" : "PASSED", failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
