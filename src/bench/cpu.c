/* CPU baseline: sgemm and dgemm of the system's BLAS on every core, verified like the GPU's. */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/blas.h"
#include "bench/gen.h"
#include "bench/verify.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"

#define SEED_A 0x1234567u
#define SEED_B 0x89ABCDEu

static int online_cpus(void)
{
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}

struct fill_job {
	bench_dtype dt;
	uint32_t seed;
	void *p;
	size_t from, to;
};

static void *fill_part(void *arg)
{
	struct fill_job *j = arg;
	for (size_t i = j->from; i < j->to; i++) {
		uint64_t bits = gen_bits(j->dt, j->seed, i);
		if (j->dt == DT_FP64)
			memcpy((char *)j->p + i * 8, &bits, 8);
		else {
			uint32_t b = (uint32_t)bits;
			memcpy((char *)j->p + i * 4, &b, 4);
		}
	}
	return NULL;
}

/* Fills n elements with the generator, on up to `threads` threads. */
static void fill_host(bench_dtype dt, uint32_t seed, void *p, size_t n, int threads)
{
	if (threads > 64)
		threads = 64;
	if (threads < 1 || n < (1u << 20))
		threads = 1;
	pthread_t tid[64];
	bool running[64] = {false};
	struct fill_job jobs[64];
	for (int t = 0; t < threads; t++)
		jobs[t] = (struct fill_job){dt, seed, p, n * (size_t)t / (size_t)threads, n * (size_t)(t + 1) / (size_t)threads};
	for (int t = 1; t < threads; t++) {
		running[t] = pthread_create(&tid[t], NULL, fill_part, &jobs[t]) == 0;
		if (!running[t])
			fill_part(&jobs[t]);
	}
	fill_part(&jobs[0]);
	for (int t = 1; t < threads; t++)
		if (running[t])
			pthread_join(tid[t], NULL);
}

static double gflop(int n)
{
	return 2.0 * n * (double)n * n;
}

static void run_one(bench_ctx *c, blas_api *b, bench_dtype dt, int cpus)
{
	const bool dbl = dt == DT_FP64;
	const size_t elt = dbl ? 8 : 4;
	const char *name = dtype_get(dt)->name;
	char id[32], title[64];
	snprintf(id, sizeof(id), "cpu.gemm.%s", name);
	/* time this figure may take (the quick run's 30 s on an H200 keeps 6 s for each CPU type);
	 * the watchdog only catches a hang, at three times that */
	double budget = (c->o->quick ? 6 : 40) * (c->o->limit_scale > 0 ? c->o->limit_scale : 1);
	double t_begin = now_seconds();

	/* the size: the GEMM size unless memory or time say otherwise */
	int n = c->o->size;
	unsigned long long avail = bench_mem_available();
	while (n > 256 && avail && 3.0 * n * (double)n * elt > avail / 2.0)
		n /= 2;
	bench_progress(c, "CPU %s GEMM", name);
	watchdog_arm(dbl ? "CPU dgemm" : "CPU sgemm", 3 * budget);

	/* a small multiplication starts the BLAS threads, a 2048 one estimates the speed (smaller
	 * ones run far below a many-core CPU's rate and would shrink the size for nothing) */
	int n0 = n < 2048 ? n : 2048;
	size_t cap0 = (size_t)n0 * (size_t)n0;
	void *a = malloc(cap0 * elt), *bb = malloc(cap0 * elt), *cc = malloc(cap0 * elt);
	if (!a || !bb || !cc) {
		free(a), free(bb), free(cc);
		report_skip(c->r, id, "cpu", "TFLOP/s", "CPU GEMM", "not enough host memory");
		watchdog_disarm();
		return;
	}
	fill_host(dt, SEED_A, a, cap0, cpus);
	fill_host(dt, SEED_B, bb, cap0, cpus);
	blas_gemm(b, dbl, n0 < 512 ? n0 : 512, a, bb, cc);
	double t0 = now_seconds();
	blas_gemm(b, dbl, n0, a, bb, cc);
	double est_rate = gflop(n0) / (now_seconds() - t0 + 1e-9);
	free(a), free(bb), free(cc);
	int reps = c->o->quick ? 2 : 5;
	/* one multiplication should take at most a third of the budget */
	bool shrunk = false;
	while (n > 256 && gflop(n) / est_rate > budget / 3) {
		n /= 2;
		shrunk = true;
	}
	snprintf(title, sizeof(title), "%s %dx%d (%s)", dbl ? "dgemm" : "sgemm", n, n, b->impl);
	size_t nn = (size_t)n * n;
	a = malloc(nn * elt), bb = malloc(nn * elt), cc = malloc(nn * elt);
	if (!a || !bb || !cc) {
		free(a), free(bb), free(cc);
		report_skip(c->r, id, "cpu", "TFLOP/s", title, "not enough host memory for %d x %d", n, n);
		watchdog_disarm();
		return;
	}
	fill_host(dt, SEED_A, a, nn, cpus);
	fill_host(dt, SEED_B, bb, nn, cpus);
	double secs[16];
	int got = 0;
	for (int i = 0; i < reps && got < 16; i++) {
		double s = now_seconds();
		blas_gemm(b, dbl, n, a, bb, cc);
		secs[got++] = now_seconds() - s;
		double spent = now_seconds() - t_begin, one = now_seconds() - s;
		if (watchdog_expired() || (i + 1 < reps && spent + one > budget))
			break;
	}
	bench_figure *f = report_add(c->r, id, "cpu", "TFLOP/s", "%s", title);
	stats_rates(secs, (size_t)got, gflop(n) / 1e12, &f->st);
	f->size = n;
	if (shrunk)
		figure_set_note(f, "size %d: at %d one multiplication would take about %.0f s", n, c->o->size,
				gflop(c->o->size) / est_rate);
	else if (n != c->o->size)
		figure_set_note(f, "size %d: %d does not fit in half the available memory", n, c->o->size);
	if (strcmp(b->impl, "reference or unknown") == 0)
		figure_set_note(f, "%s is not an optimised BLAS", b->lib.path);

	/* verification: sampled elements against the CPU reference */
	gemm_shape sh = {n, n, n, false};
	size_t nr = n < 32 ? (size_t)n : 32, nc = n < 8 ? (size_t)n : 8;
	int64_t rows[32], cols[8];
	verify_pick(n, nr, 11, rows);
	verify_pick(n, nc, 13, cols);
	double gotv[32 * 8];
	for (size_t j = 0; j < nc; j++)
		for (size_t i = 0; i < nr; i++) {
			size_t idx = (size_t)rows[i] + (size_t)cols[j] * (size_t)n;
			gotv[i + j * nr] = dbl ? ((double *)cc)[idx] : ((float *)cc)[idx];
		}
	verify_result vr;
	verify_init(&vr);
	verify_block(dt, &sh, SEED_A, SEED_B, rows, nr, cols, nc, gotv, &vr);
	char text[256];
	verify_describe(&vr, text, sizeof(text));
	figure_set_verified(f, vr.bad == 0 && vr.checked > 0, text);
	free(a), free(bb), free(cc);
	watchdog_disarm();
}

void bench_cpu(bench_ctx *c)
{
	int cpus = online_cpus();
	blas_api b;
	static const char src[] = "gpuvet bench";
	facts_put_int(c->r->facts, src, cpus, FK_BENCH_CPU_CORES);
	if (!blas_load(&b, cpus)) {
		facts_put_state(c->r->facts, FACT_ERROR, src, b.lib.error, FK_BENCH_LIB_BLAS_PATH);
		report_skip(c->r, "cpu.gemm.fp32", "cpu", "TFLOP/s", "sgemm", "%s", b.lib.error);
		report_skip(c->r, "cpu.gemm.fp64", "cpu", "TFLOP/s", "dgemm", "%s", b.lib.error);
		report_note(c->r, "CPU baseline: %s", b.lib.error);
		return;
	}
	facts_put_str(c->r->facts, src, b.lib.path, FK_BENCH_LIB_BLAS_PATH);
	facts_put_str(c->r->facts, src, b.impl, FK_BENCH_LIB_BLAS_IMPL);
	if (b.config[0])
		facts_put_str(c->r->facts, src, b.config, FK_BENCH_LIB_BLAS_CONFIG);
	if (b.threads > 0)
		facts_put_int(c->r->facts, src, b.threads, FK_BENCH_LIB_BLAS_THREADS);
	run_one(c, &b, DT_FP32, cpus);
	run_one(c, &b, DT_FP64, cpus);
	blas_unload(&b);
}
