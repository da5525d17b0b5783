/*
 * GEMM through cuBLASLt per data type, timed with CUDA events, verified on sampled elements,
 * judged against the dense peak at the SM clock NVML saw while it ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/bench.h"
#include "bench/gemm_run.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "kb/kb_peaks.h"

static const char src[] = "gpuvet bench";

double bench_phase_clock(bench_ctx *c, int ordinal, const char *phase)
{
	if (!c->mon || !c->gpu || ordinal < 0 || ordinal >= c->gpu->count)
		return 0;
	monitor_summary ms;
	if (monitor_summary_get(c->mon, phase, c->gpu->dev[ordinal].nvml_index, &ms) && isfinite(ms.sm_clock_median))
		return ms.sm_clock_median;
	return 0;
}

/* Idles as long as a GEMM of `ms` milliseconds took (at most 50 ms), when it took 5 ms or more:
 * the half duty that keeps long GEMMs off the power limit (see the repeats in
 * gemm_one_variant). Short GEMMs stay back to back: idle gaps of a millisecond did not steady
 * them (int8 and fp8 repeats dipped by 3-7% now and then either way on the H200 machine). */
static void rest_after(double ms)
{
	if (!(ms >= 5))
		return;
	sleep_seconds((ms > 50 ? 50 : ms) / 1000);
}


/* Checks that A and B hold the generated inputs, then sampled elements of D against the CPU. */
static void verify_gemm(bench_ctx *c, gpu_dev *d, gemm_run *g, bench_dtype dt, int n, bench_figure *f)
{
	const dtype_info *t = dtype_get(dt);
	char why[512];
	if (!gemm_inputs_ok(c, d, g, dt, n, why, sizeof(why))) {
		figure_set_note(f, "not verified: %s", why);
		report_note(c->r, "GEMM %s: not verified: %s", t->name, why);
		return;
	}
	verify_result vr;
	if (!gemm_sample(c, g, dt, n, c->o->quick ? 24 : 48, c->o->quick ? 4 : 8, &vr, why, sizeof(why))) {
		figure_set_note(f, "not verified: %s", why);
		return;
	}
	verify_describe(&vr, why, sizeof(why));
	figure_set_verified(f, vr.checked > 0 && vr.bad == 0, why);
}

static void gemm_one_variant(bench_ctx *c, bench_dtype dt, int n_req, const char *id, int variant);

static void gemm_one(bench_ctx *c, bench_dtype dt, int n_req, const char *id)
{
	gemm_one_variant(c, dt, n_req, id, 0);
}

/* Warms up with the first heuristic answer that runs (the clocks ramp up under load, and a cold
 * first candidate would lose the trial), then times the top answers for about 10 ms each and
 * keeps the fastest. Its index, or -1 with why (none ran). */
static int gemm_choose(bench_ctx *c, gpu_dev *d, const gemm_lane *l, gemm_run *g,
		       const cublasLtMatmulHeuristicResult_t *heur, int nheur, const gemm_scalars *k, char *why, size_t whyn)
{
	int first = gemm_first_algo(c, d, l, g, heur, nheur, k, why, whyn);
	if (first < 0)
		return -1;
	return gemm_fastest_algo(c, d, l, g, heur, nheur, first, k, why, whyn);
}

/* One timed repeat (bench_repeat): after a long GEMM (rest_after) the GPU rests as long as it
 * took before the next. Seconds. */
typedef struct gemm_arg {
	bench_ctx *c;
	gpu_dev *d;
	const gemm_lane *l;
	gemm_run *g;
	const cublasLtMatmulAlgo_t *algo;
	const gemm_scalars *k;
	double last_ms; /* < 0 before the first */
} gemm_arg;

static double gemm_once(void *arg, char *why, size_t whyn)
{
	gemm_arg *a = arg;
	if (a->last_ms >= 0)
		rest_after(a->last_ms);
	a->last_ms = gemm_time(a->c, a->d, a->l, a->g, a->algo, a->k, 1, why, whyn);
	return a->last_ms < 0 ? -1 : a->last_ms / 1000.0;
}

/* The timed repeats of the chosen algorithm into secs (at most reps); their number, or -1 with
 * why. With the monitor paused; the GPM evidence follows them. */
static int gemm_repeat(bench_ctx *c, gpu_dev *d, int ordinal, const char *id, const gemm_lane *l, gemm_run *g,
		       const cublasLtMatmulAlgo_t *algo, const gemm_scalars *k, int reps, double *secs, char *why,
		       size_t whyn)
{
	/* The trial is ~100 ms of full load: on an H200 that is enough for the power limiter to pull
	 * a TF32 GEMM's clock to ~1600 MHz (seen 2026-11-29). Idle briefly, as between a user's
	 * matmuls, so the figure is the one a user's timing loop sees, then warm the winner. */
	sleep_seconds(0.3);
	for (int w = 0; w < 3; w++) /* the winner, warm, at the half duty of the repeats below */
		rest_after(gemm_time(c, d, l, g, algo, k, 1, why, whyn));
	/* Each repeat is one GEMM; after a long one (rest_after) the GPU rests as long as it took.
	 * Back to back, a GEMM of 10 ms or more (fp64 at 8192) holds the H200 at its 700 W limit, where the SM clock
	 * swings: single fp64 GEMMs varied by 7.5% and repeats of ~80 ms of GEMMs dipped by 20%,
	 * and the heat carried over into the next data type (tf32 fell from 426 to 365 TFLOP/s
	 * within its repeats; all seen 2026-11-29). At half duty every repeat starts alike. */
	/* Nothing calls NVML while GEMMs are timed: its calls take the driver's locks, and on the
	 * H200 the GEMM right after an NVML sample came out 2-4% slower (int8, fp8, tf32; seen
	 * 2026-11-29). The clocks are read once, after the last repeat; the GPM evidence is taken
	 * after that (bench_evidence), over GEMMs of its own. */
	monitor_phase(c->mon, id);
	monitor_pause(c->mon, true);
	gemm_arg ga = {c, d, l, g, algo, k, -1};
	int got = bench_repeat(gemm_once, &ga, reps, secs, why, whyn);
	monitor_sample_now(c->mon); /* the clock right after the last repeat, before the evidence */
	if (got > 0)
		bench_evidence(c, ordinal, gemm_once, &ga, 1.0);
	monitor_pause(c->mon, false);
	monitor_phase(c->mon, NULL);
	if (got == 0)
		snprintf(why, whyn, "stopped by the time limit");
	return got > 0 ? got : -1;
}

/* One GEMM figure: checks, sizing, preparation, the algorithm, the repeats, the figure and its
 * verification; every way out goes through `out`, which says why when no figure was made and
 * frees what was made. An fp8 call that cuBLASLt does not support tries the next way of calling
 * it (gemm_fp8_variants). */
static void gemm_one_variant(bench_ctx *c, bench_dtype dt, int n_req, const char *id, int variant)
{
	const dtype_info *t = dtype_get(dt);
	const char *unit = t->integer ? "TOP/s" : "TFLOP/s";
	char title[96], why[1024] = "";
	int ordinal = c->o->device;
	snprintf(title, sizeof(title), "GEMM %s %dx%d", t->name, n_req, n_req);
	gemm_run g = {0};
	bool armed = false, retry = false, done = false;
	gpu_session *s = c->gpu;
	gpu_dev *d = gemm_device(c, ordinal, dt, why, sizeof(why));
	if (!d || !gemm_lt_ready(c, ordinal, why, sizeof(why)))
		goto out;
	/* the device's own stream and events, and bench's handle */
	gemm_lane lane = {c->lt_handle, d->stream, d->ev_start, d->ev_end};
	int n = gemm_fit_n(c, dt, n_req);
	if (n != n_req)
		snprintf(title, sizeof(title), "GEMM %s %dx%d", t->name, n, n);
	bench_progress(c, "GEMM %s %d", t->name, n);
	watchdog_arm(title, bench_limit(c, 40));
	armed = true;
	if (!gemm_prepare(c, d, dt, n, variant, &g, why, sizeof(why)))
		goto out;
	cublasLtMatmulHeuristicResult_t heur[GEMM_MAX_ALGOS];
	int nheur = gemm_heuristics(c, &lane, &g, dt, heur, why, sizeof(why));
	if (nheur <= 0)
		goto out;
	gemm_scalars k;
	gemm_scalars_of(gemm_types_of(dt).scale, &k);
	int best = gemm_choose(c, d, &lane, &g, heur, nheur, &k, why, sizeof(why));
	if (best < 0) {
		retry = dt == DT_FP8 && variant + 1 < GEMM_FP8_VARIANTS && strstr(why, "NOT_SUPPORTED");
		goto out;
	}
	double secs[32];
	int got = gemm_repeat(c, d, ordinal, id, &lane, &g, &heur[best].algo, &k, c->o->quick ? 10 : 20, secs, why,
			      sizeof(why));
	if (got < 0)
		goto out;
	bench_figure *f = report_add(c->r, id, "gemm", unit, "%s", title);
	done = true;
	f->gpu = ordinal;
	f->size = n;
	if (dt == DT_FP8) {
		facts_put_str(c->r->facts, src, gemm_fp8_variants[variant].name, FK_BENCH_FIGURE_CALL, id);
		if (variant > 0)
			figure_set_note(f, "cuBLASLt ran fp8 only this way: %s", gemm_fp8_variants[variant].name);
	}
	stats_rates(secs, (size_t)got, 2.0 * n * (double)n * n / 1e12, &f->st);
	if (n != n_req)
		figure_set_note(f, "size %d: %d x %d does not fit in the free GPU memory", n, n_req, n_req);
	f->clock_mhz = bench_phase_clock(c, ordinal, id);
	bench_window_evidence(c, f);
	char cc_text[16];
	snprintf(cc_text, sizeof(cc_text), "%d.%d", d->cc_major, d->cc_minor);
	kb_peak pk;
	if (kb_compute_peak(kb_global(), d->name, cc_text, d->sms, f->clock_mhz, t->name, &pk))
		figure_set_peak(f, pk.value, pk.how);
	facts_put_int(c->r->facts, src, best, FK_BENCH_FIGURE_ALGO_RANK, id);
	facts_put_int(c->r->facts, src, (long long)heur[best].workspaceSize, FK_BENCH_FIGURE_WORKSPACE_BYTES, id);
	verify_gemm(c, d, &g, dt, n, f);
out:
	if (!done && !retry)
		report_skip(c->r, id, "gemm", unit, title, "%s", why);
	if (s)
		gemm_free(c, &g);
	if (armed)
		watchdog_disarm();
	if (retry)
		gemm_one_variant(c, dt, n_req, id, variant + 1);
}

void bench_gemm(bench_ctx *c)
{
	for (int dt = 0; dt < DT_COUNT; dt++) {
		if (!c->o->dtypes[dt])
			continue;
		char id[32];
		snprintf(id, sizeof(id), "gemm.%s", dtype_get((bench_dtype)dt)->name);
		gemm_one(c, (bench_dtype)dt, c->o->size, id);
	}
}

void bench_gemm_at(bench_ctx *c, bench_dtype dt, int n)
{
	char id[48];
	snprintf(id, sizeof(id), "gemm.%s.n%d", dtype_get(dt)->name, n);
	gemm_one(c, dt, n, id);
}
