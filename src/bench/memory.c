/*
 * Device memory bandwidth with the PTX stream kernels (copy, scale, add, triad, read) over
 * arrays of at least 4x the L2 cache, 16-byte accesses. GB/s counts bytes read plus written.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "kb/kb_peaks.h"

#define SCALAR 0.5f /* b = s c etc.: with a = 1 every value stays exact in fp32 */

typedef struct stream_kernel {
	const char *name;
	gpu_kernel k;
	int arrays_moved; /* arrays read + written per launch */
	float expect;     /* value every element of the written array holds afterwards */
} stream_kernel;

/* In this order each kernel's output depends only on arrays the earlier ones left, so repeating
 * a kernel is idempotent: c = a = 1, b = s c = 0.5, c = a + b = 1.5, a = b + s c = 1.25. */
static const stream_kernel kernels[] = {
	{"copy", K_COPY, 2, 1.0f},
	{"scale", K_SCALE, 2, 0.5f},
	{"add", K_ADD, 3, 1.5f},
	{"triad", K_TRIAD, 3, 1.25f},
	{"read", K_READ, 1, 1.25f},
};

typedef struct shape {
	unsigned grid, block;
} shape;

typedef struct arrays {
	CUdeviceptr a, b, c, out;
	uint64_t n4; /* 16-byte vectors per array */
	size_t out_floats;
} arrays;

static CUresult launch(bench_ctx *c, gpu_dev *d, const stream_kernel *k, arrays *x, shape sh)
{
	float s = SCALAR;
	void *copy_args[] = {&x->a, &x->c, &x->n4};
	void *scale_args[] = {&x->c, &x->b, &x->n4, &s};
	void *add_args[] = {&x->a, &x->b, &x->c, &x->n4};
	void *triad_args[] = {&x->b, &x->c, &x->a, &x->n4, &s};
	void *read_args[] = {&x->a, &x->out, &x->n4};
	void **args = k->k == K_COPY ? copy_args
		      : k->k == K_SCALE ? scale_args
		      : k->k == K_ADD ? add_args
		      : k->k == K_TRIAD ? triad_args
					: read_args;
	return gpu_launch(c->gpu, d, k->k, sh.grid, sh.block, NULL, args);
}

/* ms per launch over `iters` launches; < 0 with why on error. */
static double time_kernel(bench_ctx *c, gpu_dev *d, const stream_kernel *k, arrays *x, shape sh, int iters, char *why,
			  size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	CUresult rc = cu->cuEventRecord(d->ev_start, d->stream);
	for (int i = 0; rc == CUDA_SUCCESS && i < iters; i++)
		rc = launch(c, d, k, x, sh);
	float ms = 0;
	if (rc == CUDA_SUCCESS)
		rc = gpu_event_elapsed(c->gpu, d, &ms);
	if (rc != CUDA_SUCCESS) {
		char what[64];
		snprintf(what, sizeof(what), "the %s kernel", k->name);
		gpu_errtext(c->gpu, what, rc, why, n);
		return -1;
	}
	return (double)ms / iters;
}

/* Samples of the written array (start, middle, end) must all equal the expected value. */
static bool check_array(bench_ctx *c, CUdeviceptr p, uint64_t n4, float want, char *why, size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	uint64_t nf = n4 * 4, chunk = 1024;
	uint64_t starts[3] = {0, nf / 2, nf > chunk ? nf - chunk : 0};
	float buf[1024];
	for (int s = 0; s < 3; s++) {
		uint64_t len = starts[s] + chunk <= nf ? chunk : nf - starts[s];
		CUresult rc = cu->cuMemcpyDtoH(buf, p + starts[s] * 4, len * 4);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(c->gpu, "cuMemcpyDtoH", rc, why, n);
			return false;
		}
		for (uint64_t i = 0; i < len; i++)
			if (buf[i] != want) {
				snprintf(why, n, "element %llu is %g, expected %g", (unsigned long long)(starts[s] + i),
					 (double)buf[i], (double)want);
				return false;
			}
	}
	snprintf(why, n, "3072 sampled elements hold the expected %g", (double)want);
	return true;
}

static bool check_read(bench_ctx *c, arrays *x, shape sh, char *why, size_t n)
{
	size_t threads = (size_t)sh.grid * sh.block;
	float *part = xmalloc(threads * sizeof(float));
	CUresult rc = c->gpu->cu->cuMemcpyDtoH(part, x->out, threads * sizeof(float));
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuMemcpyDtoH", rc, why, n);
		free(part);
		return false;
	}
	double sum = 0;
	for (size_t i = 0; i < threads; i++)
		sum += part[i];
	free(part);
	double want = 1.25 * (double)x->n4 * 4;
	bool ok = fabs(sum - want) <= 1e-6 * want;
	snprintf(why, n, "sum of the array %.0f, expected %.0f", sum, want);
	return ok;
}

/* The driver's own device-to-device copy (cuMemcpyDtoDAsync): what PyTorch's tensor.copy_()
 * calls for contiguous tensors, so the figure users compare against. Runs after the kernels
 * (a = 1.25 then), copying a into c. */
static double time_memcpy(bench_ctx *c, gpu_dev *d, arrays *x, uint64_t bytes, int iters, char *why, size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	if (!cu->cuMemcpyDtoDAsync) {
		snprintf(why, n, "this libcuda has no cuMemcpyDtoDAsync");
		return -1;
	}
	CUresult rc = cu->cuEventRecord(d->ev_start, d->stream);
	for (int i = 0; rc == CUDA_SUCCESS && i < iters; i++)
		rc = cu->cuMemcpyDtoDAsync(x->c, x->a, bytes, d->stream);
	float ms = 0;
	if (rc == CUDA_SUCCESS)
		rc = gpu_event_elapsed(c->gpu, d, &ms);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuMemcpyDtoDAsync", rc, why, n);
		return -1;
	}
	return (double)ms / iters;
}

/* one repeat (bench_repeat): seconds per kernel or copy of the repeat's iters */
typedef struct kernel_arg {
	bench_ctx *c;
	gpu_dev *d;
	const stream_kernel *k;
	arrays *x;
	shape sh;
	int iters;
} kernel_arg;

static double kernel_once(void *arg, char *why, size_t n)
{
	kernel_arg *a = arg;
	double ms = time_kernel(a->c, a->d, a->k, a->x, a->sh, a->iters, why, n);
	return ms < 0 ? -1 : ms / 1000.0;
}

typedef struct memcpy_arg {
	bench_ctx *c;
	gpu_dev *d;
	arrays *x;
	uint64_t bytes;
	int iters;
} memcpy_arg;

static double memcpy_once(void *arg, char *why, size_t n)
{
	memcpy_arg *a = arg;
	double ms = time_memcpy(a->c, a->d, a->x, a->bytes, a->iters, why, n);
	return ms < 0 ? -1 : ms / 1000.0;
}

static void memcpy_figure(bench_ctx *c, gpu_dev *d, arrays *x, uint64_t bytes, int ordinal, const kb_peak *pk)
{
	const char *id = "memory.memcpy";
	char why[512];
	double first = time_memcpy(c, d, x, bytes, 3, why, sizeof(why));
	if (first <= 0) {
		report_skip(c->r, id, "memory", "GB/s", "driver device-to-device copy", "%s", why);
		return;
	}
	int iters = (int)ceil((c->o->quick ? 20.0 : 50.0) / first);
	iters = iters < 1 ? 1 : iters > 2000 ? 2000 : iters;
	int reps = c->o->quick ? 5 : 10;
	double secs[16];
	int got = 0;
	monitor_phase(c->mon, id);
	memcpy_arg ma = {c, d, x, bytes, iters};
	if (!watchdog_expired())
		got = bench_repeat(memcpy_once, &ma, reps, secs, why, sizeof(why));
	monitor_sample_now(c->mon);
	if (got > 0)
		bench_evidence(c, ordinal, memcpy_once, &ma, iters);
	monitor_phase(c->mon, NULL);
	if (got <= 0) {
		report_skip(c->r, id, "memory", "GB/s", "driver device-to-device copy", "%s",
			    got < 0 ? why : "stopped by the time limit");
		return;
	}
	bench_figure *f = report_add(c->r, id, "memory", "GB/s", "driver device-to-device copy (%llu MiB)",
				     (unsigned long long)(bytes >> 20));
	f->gpu = ordinal;
	f->size = (long long)bytes;
	stats_rates(secs, (size_t)got, 2.0 * (double)bytes / 1e9, &f->st);
	f->clock_mhz = bench_phase_clock(c, ordinal, id);
	bench_window_evidence(c, f);
	if (pk)
		figure_set_peak(f, pk->value, pk->how);
	char check[160];
	bool ok = check_array(c, x->c, x->n4, 1.25f, check, sizeof(check));
	figure_set_verified(f, ok, check);
}

void bench_memory(bench_ctx *c)
{
	char why[512];
	const char *ids[] = {"memory.copy", "memory.scale", "memory.add", "memory.triad", "memory.read"};
	if (!c->gpu) {
		for (size_t i = 0; i < GV_ARRAY_LEN(kernels); i++)
			report_skip(c->r, ids[i], "memory", "GB/s", kernels[i].name, "%s", c->gpu_skip[0] ? c->gpu_skip : "no GPU");
		return;
	}
	gpu_session *s = c->gpu;
	int ordinal = c->o->device;
	if (!gpu_use(s, ordinal, why, sizeof(why))) {
		for (size_t i = 0; i < GV_ARRAY_LEN(kernels); i++)
			report_skip(c->r, ids[i], "memory", "GB/s", kernels[i].name, "%s", why);
		return;
	}
	gpu_dev *d = &s->dev[ordinal];
	const gv_cuda_api *cu = s->cu;
	size_t free_b = 0, total_b = 0;
	gpu_mem_info(s, &free_b, &total_b);
	uint64_t l2 = d->l2_bytes > 0 ? (uint64_t)d->l2_bytes : (64u << 20);
	uint64_t want = c->o->quick ? (1ull << 30) : (2ull << 30);
	if (want < 4 * l2)
		want = 4 * l2;
	uint64_t bytes = want;
	while (bytes > 4 * l2 && 3.0 * (double)bytes > 0.6 * (double)free_b)
		bytes /= 2;
	if (bytes < 4 * l2 || 3.0 * (double)bytes > 0.9 * (double)free_b) {
		for (size_t i = 0; i < GV_ARRAY_LEN(kernels); i++)
			report_skip(c->r, ids[i], "memory", "GB/s", kernels[i].name,
				    "not enough free GPU memory for three arrays of 4x the L2 cache (%llu MiB free)",
				    (unsigned long long)(free_b >> 20));
		return;
	}
	bytes &= ~(uint64_t)0xFFFF;
	bench_progress(c, "memory bandwidth");
	watchdog_arm("memory bandwidth", bench_limit(c, 60));
	arrays x = {0};
	x.n4 = bytes / 16;
	unsigned maxt = d->max_threads_per_sm > 0 ? (unsigned)d->max_threads_per_sm : 2048;
	/* Resident grids (a grid-stride loop over the whole array) and, second, the one-shot shape
	 * BabelStream uses: enough blocks that each thread does one pass of the 4-vector body. */
	uint64_t oneshot = x.n4 / (4 * 256);
	if (oneshot < 1)
		oneshot = 1;
	if (oneshot > 0x7fffffffu)
		oneshot = 0x7fffffffu;
	shape shapes[] = {{gpu_grid(d, maxt / 256), 256}, {(unsigned)oneshot, 256},
			  {gpu_grid(d, maxt / 1024 ? maxt / 1024 : 1), 1024}, {gpu_grid(d, maxt / 512), 512},
			  {gpu_grid(d, maxt / 512), 256}};
	int nshapes = c->o->quick ? 2 : 5;
	x.out_floats = 0;
	for (int i = 0; i < nshapes; i++)
		if ((size_t)shapes[i].grid * shapes[i].block > x.out_floats)
			x.out_floats = (size_t)shapes[i].grid * shapes[i].block;
	CUresult rc;
	float one = 1, two = 2, three = 3;
	void *set_a[] = {&x.a, &x.n4, &one}, *set_b[] = {&x.b, &x.n4, &two}, *set_c[] = {&x.c, &x.n4, &three};
	if ((rc = cu->cuMemAlloc(&x.a, bytes)) != CUDA_SUCCESS || (rc = cu->cuMemAlloc(&x.b, bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&x.c, bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuMemAlloc(&x.out, x.out_floats * sizeof(float))) != CUDA_SUCCESS) {
		gpu_errtext(s, "cuMemAlloc", rc, why, sizeof(why));
		goto fail_all;
	}
	if ((rc = gpu_launch(s, d, K_SET, gpu_grid(d, 8), 256, NULL, set_a)) != CUDA_SUCCESS ||
	    (rc = gpu_launch(s, d, K_SET, gpu_grid(d, 8), 256, NULL, set_b)) != CUDA_SUCCESS ||
	    (rc = gpu_launch(s, d, K_SET, gpu_grid(d, 8), 256, NULL, set_c)) != CUDA_SUCCESS ||
	    (rc = cu->cuStreamSynchronize(d->stream)) != CUDA_SUCCESS) {
		gpu_errtext(s, "initialising the arrays", rc, why, sizeof(why));
		goto fail_all;
	}
	kb_peak pk;
	monitor_gpu_info const *mg = monitor_gpu(c->mon, d->nvml_index);
	double max_mem_mhz = mg && mg->max_mem_clock_mhz ? mg->max_mem_clock_mhz : d->mem_clock_khz / 1000.0;
	bool have_peak = kb_memory_peak(kb_global(), d->name, max_mem_mhz, d->bus_width_bits, &pk);

	for (size_t ki = 0; ki < GV_ARRAY_LEN(kernels); ki++) {
		const stream_kernel *k = &kernels[ki];
		double moved = (double)bytes * k->arrays_moved;
		/* the best launch shape, by a short trial */
		shape best = shapes[0];
		double best_ms = INFINITY;
		for (int i = 0; i < nshapes; i++) {
			if (time_kernel(c, d, k, &x, shapes[i], 1, why, sizeof(why)) < 0)
				break;
			double ms = time_kernel(c, d, k, &x, shapes[i], 3, why, sizeof(why));
			if (ms > 0 && ms < best_ms) {
				best_ms = ms;
				best = shapes[i];
			}
		}
		if (!isfinite(best_ms)) {
			report_skip(c->r, ids[ki], "memory", "GB/s", k->name, "%s", why);
			continue;
		}
		int iters = (int)ceil((c->o->quick ? 20.0 : 50.0) / best_ms);
		if (iters < 1)
			iters = 1;
		if (iters > 2000)
			iters = 2000;
		time_kernel(c, d, k, &x, best, iters, why, sizeof(why)); /* warm-up */
		int reps = c->o->quick ? 5 : 10;
		double secs[16];
		int got = 0;
		monitor_phase(c->mon, ids[ki]);
		kernel_arg ka = {c, d, k, &x, best, iters};
		got = bench_repeat(kernel_once, &ka, reps, secs, why, sizeof(why));
		monitor_sample_now(c->mon);
		if (got > 0)
			bench_evidence(c, ordinal, kernel_once, &ka, iters);
		monitor_phase(c->mon, NULL);
		if (got <= 0) {
			report_skip(c->r, ids[ki], "memory", "GB/s", k->name, "%s", got < 0 ? why : "stopped by the time limit");
			continue;
		}
		bench_figure *f = report_add(c->r, ids[ki], "memory", "GB/s", "%s (%llu MiB arrays)", k->name,
					     (unsigned long long)(bytes >> 20));
		f->gpu = ordinal;
		f->size = (long long)bytes;
		stats_rates(secs, (size_t)got, moved / 1e9, &f->st);
		f->clock_mhz = bench_phase_clock(c, ordinal, ids[ki]);
		bench_window_evidence(c, f);
		if (have_peak)
			figure_set_peak(f, pk.value, pk.how);
		char check[160];
		bool ok;
		if (k->k == K_READ)
			ok = check_read(c, &x, best, check, sizeof(check));
		else
			ok = check_array(c, k->k == K_COPY || k->k == K_ADD ? x.c : k->k == K_SCALE ? x.b : x.a, x.n4,
					 k->expect, check, sizeof(check));
		figure_set_verified(f, ok, check);
		facts_put_int(c->r->facts, "gpuvet bench", best.grid, FK_BENCH_FIGURE_GRID, ids[ki]);
		facts_put_int(c->r->facts, "gpuvet bench", best.block, FK_BENCH_FIGURE_BLOCK, ids[ki]);
		if (watchdog_expired())
			break;
	}
	memcpy_figure(c, d, &x, bytes, ordinal, have_peak ? &pk : NULL);
	goto done;
fail_all:
	for (size_t i = 0; i < GV_ARRAY_LEN(kernels); i++)
		report_skip(c->r, ids[i], "memory", "GB/s", kernels[i].name, "%s", why);
done:
	if (x.a)
		cu->cuMemFree(x.a);
	if (x.b)
		cu->cuMemFree(x.b);
	if (x.c)
		cu->cuMemFree(x.c);
	if (x.out)
		cu->cuMemFree(x.out);
	watchdog_disarm();
}
