/*
 * diag's GEMM tests: GEMMs through cuBLASLt checked against the CPU on sampled elements, then
 * repeated with every output compared on the GPU with the first one's (gv_cmp_b32): a GEMM of the
 * same inputs with the same algorithm gives the same bits, so any difference is a wrong result the
 * GPU computed and nothing reported (silent data corruption, what gpu-burn hunts). The gemm test
 * runs the tensor-core precisions for the stress time; the power test runs the heaviest of them,
 * bf16 at 16384 (each compare then costs about 2% of a GEMM), back to back for minutes and judges
 * the board at its power limit: the power drawn, the clocks and their reasons, the throughput's
 * steadiness.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gemm_plan.h"
#include "bench/gen.h"
#include "bench/gpu.h"
#include "bench/memtest.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "bench/stats.h"
#include "diag/diag_internal.h"
#include "kb/kb_peaks.h"
#include "sampler/snapshot.h"

#define BATCH_S 0.1       /* GPU time between two reads of the compare record */
#define MAX_BATCHES 20000 /* throughput samples kept: 33 minutes of batches */

typedef struct stress_out {
	bool ran;
	int n;
	long long iters;
	double seconds;
	double tflops_median, tflops_min, tflops_max;
	double tflops_first, tflops_last; /* the mean of the first and last fifth of the batches */
	size_t nbatch;
	uint64_t mismatched_words;
	long long bad_batches;
	long long first_bad_iter; /* -1 none */
	memtest_cmp_result first; /* the first mismatch's record */
	double got, golden, ref, allowed;
	int64_t bad_i, bad_j;
	bool cpu_ok;
	char cpu_text[256];
	bool injected;
	long long inject_iter;
	int64_t inject_i, inject_j;
	char error[512];
	bool skipped; /* the GPU or the library cannot run this type: not the GPU's fault */
} stress_out;

/* A throughput for a summary line: whole numbers from 100 up, three digits below (the fakes) */
static const char *rate(double v, char *buf, size_t n)
{
	snprintf(buf, n, v >= 100 ? "%.0f" : "%.3g", v);
	return buf;
}

/* Flips one bit of element (i, j) of D in place, after the GEMM that wrote it (--inject gemm). */
static bool corrupt_element(diag_ctx *c, gemm_plan *p, int64_t i, int64_t j, char *why, size_t n)
{
	const gv_cuda_api *cu = c->bc.gpu->cu;
	int eb = gemm_plan_elem_bytes(p);
	CUdeviceptr at = gemm_plan_d(p) + (uint64_t)(i + j * gemm_plan_n(p)) * (uint64_t)eb;
	unsigned char buf[8];
	CUresult rc;
	if (!gemm_plan_sync(p, why, n))
		return false;
	if ((rc = cu->cuMemcpyDtoH(buf, at, (size_t)eb)) != CUDA_SUCCESS ||
	    (buf[0] ^= 0x02, (rc = cu->cuMemcpyHtoD(at, buf, (size_t)eb)) != CUDA_SUCCESS)) {
		gpu_errtext(c->bc.gpu, "the injection's copy", rc, why, n);
		return false;
	}
	return true;
}

/* The element a mismatching 32-bit word belongs to, its value in D and in the golden copy, and the
 * CPU's reference for it. */
static void locate(diag_ctx *c, gemm_plan *p, CUdeviceptr golden, bench_dtype dt, const memtest_cmp_result *m,
		   stress_out *o)
{
	int eb = gemm_plan_elem_bytes(p), n = gemm_plan_n(p);
	uint64_t byte = m->index * 4;
	unsigned char d_bytes[8] = {0}, g_bytes[8] = {0};
	if (eb == 2) {
		/* two elements in the word: the one whose half differs */
		bool high = (m->x >> 16) != (m->y >> 16) && (m->x & 0xffff) == (m->y & 0xffff);
		byte += high ? 2 : 0;
		uint16_t dx = (uint16_t)(high ? m->x >> 16 : m->x), gy = (uint16_t)(high ? m->y >> 16 : m->y);
		memcpy(d_bytes, &dx, 2);
		memcpy(g_bytes, &gy, 2);
	} else if (eb == 4) {
		memcpy(d_bytes, &m->x, 4);
		memcpy(g_bytes, &m->y, 4);
	} else { /* 8: the golden element whole, D's with the differing word in its place */
		byte = byte / 8 * 8;
		c->bc.gpu->cu->cuMemcpyDtoH(g_bytes, golden + byte, 8);
		memcpy(d_bytes, g_bytes, 8);
		memcpy(d_bytes + (m->index % 2) * 4, &m->x, 4);
	}
	uint64_t e = byte / (uint64_t)eb;
	o->bad_i = (int64_t)(e % (uint64_t)n);
	o->bad_j = (int64_t)(e / (uint64_t)n);
	o->got = gen_decode(dt, d_bytes, 1);
	o->golden = gen_decode(dt, g_bytes, 1);
	gemm_plan_reference(p, o->bad_i, o->bad_j, &o->ref, &o->allowed);
}

/*
 * `seconds` of GEMMs of dt at n on GPU g, every output compared with the first (golden) one; the
 * NVML samples of the time go to monitor phase `phase`. inject: one element of one output is
 * corrupted (the run must find it).
 */
static void stress(diag_ctx *c, diag_gpu *g, bench_dtype dt, int n_req, double seconds, const char *phase, bool inject,
		   stress_out *o)
{
	memset(o, 0, sizeof(*o));
	o->first_bad_iter = -1;
	o->inject_iter = -1;
	gpu_session *s = c->bc.gpu;
	char why[512] = "";
	gemm_plan *p = gemm_plan_new(&c->bc, g->ordinal, dt, n_req, why, sizeof(why));
	CUdeviceptr golden = 0;
	memtest_cmp cmp = {0};
	double *tf = NULL;
	CUevent e0 = NULL, e1 = NULL;
	const gv_cuda_api *cu = s->cu;
	if (!p) {
		o->skipped = !gpu_broken(s);
		str_copy(o->error, sizeof(o->error), why);
		return;
	}
	o->n = gemm_plan_n(p);
	verify_result vr;
	o->cpu_ok = gemm_plan_verify(p, 24, 4, &vr, o->cpu_text, sizeof(o->cpu_text));
	if (!o->cpu_ok && vr.checked == 0) { /* not checked at all: an error, not a wrong result */
		snprintf(o->error, sizeof(o->error), "the first GEMM could not be checked: %s", o->cpu_text);
		goto out;
	}
	gpu_dev *d = &s->dev[g->ordinal];
	size_t bytes = gemm_plan_d_bytes(p);
	CUresult rc;
	if ((rc = cu->cuMemAlloc(&golden, bytes)) != CUDA_SUCCESS || (rc = cu->cuMemcpyDtoD(golden, gemm_plan_d(p), bytes)) != CUDA_SUCCESS ||
	    (rc = cu->cuEventCreate(&e0, 0)) != CUDA_SUCCESS || (rc = cu->cuEventCreate(&e1, 0)) != CUDA_SUCCESS) {
		gpu_errtext(s, "the golden copy of the GEMM's output", rc, o->error, sizeof(o->error));
		goto out;
	}
	if (!memtest_cmp_init(s, &cmp, o->error, sizeof(o->error)))
		goto out;
	double ms = gemm_plan_time(p, 2, why, sizeof(why));
	if (ms <= 0) {
		snprintf(o->error, sizeof(o->error), "%s", why);
		goto out;
	}
	int k = (int)(BATCH_S * 1000 / ms);
	k = k < 1 ? 1 : k > 512 ? 512 : k;
	tf = xmalloc(MAX_BATCHES * sizeof(double));
	CUstream st = gemm_plan_stream(p);
	uint64_t words = bytes / 4;
	if (inject) {
		o->inject_iter = 2LL * k; /* in the third batch, once the loop is warm */
		o->inject_i = o->n / 3;
		o->inject_j = o->n / 5;
	}
	monitor_phase(c->bc.mon, phase);
	double t0 = now_seconds();
	while (now_seconds() - t0 < seconds && !diag_stopping(c) && !watchdog_expired() && o->nbatch < MAX_BATCHES) {
		if ((rc = cu->cuEventRecord(e0, st)) != CUDA_SUCCESS) {
			gpu_errtext(s, "cuEventRecord", rc, o->error, sizeof(o->error));
			break;
		}
		for (int i = 0; i < k; i++, o->iters++) {
			if (!gemm_plan_enqueue(p, 1, o->error, sizeof(o->error)))
				goto stop;
			if (o->iters == o->inject_iter) {
				if (!corrupt_element(c, p, o->inject_i, o->inject_j, o->error, sizeof(o->error)))
					goto stop;
				o->injected = true;
			}
			if ((rc = memtest_cmp_launch(s, d, &cmp, gemm_plan_d(p), golden, words, st)) != CUDA_SUCCESS) {
				gpu_errtext(s, "the compare kernel", rc, o->error, sizeof(o->error));
				goto stop;
			}
		}
		float bms = 0;
		memtest_cmp_result m;
		if ((rc = cu->cuEventRecord(e1, st)) != CUDA_SUCCESS || (rc = cu->cuEventSynchronize(e1)) != CUDA_SUCCESS ||
		    (rc = cu->cuEventElapsedTime(&bms, e0, e1)) != CUDA_SUCCESS ||
		    (rc = memtest_cmp_read(s, d, &cmp, st, &m)) != CUDA_SUCCESS) {
			gpu_errtext(s, "the GEMMs and their compares", rc, o->error, sizeof(o->error));
			break;
		}
		if (bms > 0)
			tf[o->nbatch++] = gemm_plan_tflop(p) * k / (bms / 1000.0);
		if (m.mismatches) {
			o->mismatched_words += m.mismatches;
			o->bad_batches++;
			if (o->first_bad_iter < 0) {
				o->first_bad_iter = o->iters - k;
				o->first = m;
				locate(c, p, golden, dt, &m, o);
			}
			if ((rc = memtest_cmp_reset(s, d, &cmp, st)) != CUDA_SUCCESS) {
				gpu_errtext(s, "the compare record", rc, o->error, sizeof(o->error));
				break;
			}
		}
	}
stop:
	o->seconds = now_seconds() - t0;
	monitor_sample_now(c->bc.mon);
	monitor_phase(c->bc.mon, NULL);
	o->ran = o->nbatch > 0;
	if (o->nbatch) {
		size_t q = o->nbatch / 5 ? o->nbatch / 5 : 1;
		double a = 0, b = 0;
		for (size_t i = 0; i < q; i++) {
			a += tf[i];
			b += tf[o->nbatch - 1 - i];
		}
		o->tflops_first = a / (double)q;
		o->tflops_last = b / (double)q;
		o->tflops_min = o->tflops_max = tf[0];
		for (size_t i = 1; i < o->nbatch; i++) {
			o->tflops_min = tf[i] < o->tflops_min ? tf[i] : o->tflops_min;
			o->tflops_max = tf[i] > o->tflops_max ? tf[i] : o->tflops_max;
		}
		o->tflops_median = stats_median(tf, o->nbatch);
	}
out:
	free(tf);
	if (e0)
		cu->cuEventDestroy(e0);
	if (e1)
		cu->cuEventDestroy(e1);
	memtest_cmp_free(s, &cmp);
	if (golden)
		cu->cuMemFree(golden);
	gemm_plan_free(p);
}

/* The outcome of one stress run into x: the wrong results first, then the errors. */
static void judge_results(diag_result *x, const stress_out *o, const char *type)
{
	if (!o->cpu_ok) {
		sl_pushf(&x->evidence, "%s at %d: the first GEMM against the CPU: %s", type, o->n, o->cpu_text);
		diag_result_finding(x, DIAG_F_GEMM_WRONG, -1);
	}
	if (o->mismatched_words) {
		sl_pushf(&x->evidence,
			 "%s at %d: %llu of %lld outputs differed from the first one's (%llu 32-bit words), the first in "
			 "GEMM %lld",
			 type, o->n, (unsigned long long)o->bad_batches, o->iters, (unsigned long long)o->mismatched_words,
			 o->first_bad_iter + 1);
		sl_pushf(&x->evidence, "element (row %lld, column %lld): read %.9g, the first run's %.9g, the CPU's %.9g (allowed error %.3g)",
			 (long long)o->bad_i, (long long)o->bad_j, o->got, o->golden, o->ref, o->allowed);
		diag_result_finding(x, DIAG_F_GEMM_WRONG, -1);
	}
	if (o->injected)
		sl_pushf(&x->evidence, "--inject gemm: one bit of element (row %lld, column %lld) flipped after GEMM %lld: %s",
			 (long long)o->inject_i, (long long)o->inject_j, o->inject_iter + 1,
			 o->mismatched_words ? "found" : "NOT found");
	if (o->error[0] && !o->skipped) {
		sl_pushf(&x->evidence, "%s: %s", type, o->error);
		diag_result_finding(x, DIAG_F_ERROR, -1);
	}
}

/* The types the gemm test runs on this GPU: the tensor-core precisions of its compute capability,
 * bf16 first (the one the expected figure is for), and fp64 on HPC parts (compute capability
 * N.0: P100, V100, A100, H100/H200, B200 run fp64 at half or more of fp32's rate). */
static int gemm_types(const gpu_dev *d, bool all, bench_dtype *out)
{
	int cc = d->cc_major * 10 + d->cc_minor, n = 0;
	const bench_dtype order[] = {DT_BF16, DT_FP16, DT_TF32, DT_FP8, DT_INT8, DT_FP64};
	for (size_t i = 0; i < GV_ARRAY_LEN(order); i++) {
		if (cc < dtype_get(order[i])->min_cc)
			continue;
		if (order[i] == DT_FP64 && !(d->cc_minor == 0 && d->cc_major >= 6))
			continue;
		out[n++] = order[i];
		if (!all)
			break;
	}
	if (n == 0)
		out[n++] = DT_FP32;
	return n;
}

void diag_t_gemm(diag_ctx *c, diag_gpu *g)
{
	gpu_dev *d = &c->bc.gpu->dev[g->ordinal];
	bench_dtype types[8];
	int nt = gemm_types(d, c->lv->gemm_all_types || c->o->tests_given, types);
	/* the headline type takes 40% of the time, the others share the rest, 3 s each at least */
	double total = c->gemm_seconds;
	for (int t = 0; t < nt && !diag_stopping(c); t++) {
		const char *type = dtype_get(types[t])->name;
		double secs = nt == 1 ? total : t == 0 ? total * 0.4 : total * 0.6 / (nt - 1);
		if (secs < 3 && nt > 1)
			secs = 3;
		diag_result *x = diag_result_add(c->r, DIAG_T_GEMM, g->ordinal);
		snprintf(x->metric, sizeof(x->metric), "gemm.%s", type);
		diag_result_set(x, DIAG_PASS, "%s: running", type);
		str_copy(x->unit, sizeof(x->unit), dtype_get(types[t])->integer ? "TOP/s" : "TFLOP/s");
		char phase[64], what[96];
		snprintf(phase, sizeof(phase), "diag.gemm.%s.gpu%d", type, g->ordinal);
		snprintf(what, sizeof(what), "the %s GEMMs", type);
		diag_progress(c, "GPU %d: gemm %s, %.0f s", g->ordinal, type, secs);
		diag_arm(c, DIAG_T_GEMM, g->ordinal, what, secs + 60);
		bool inject = c->o->inject == DIAG_INJECT_GEMM && !c->injected && t == 0;
		stress_out o;
		stress(c, g, types[t], c->o->gemm_n > 0 ? c->o->gemm_n : 8192, secs, phase, inject, &o);
		diag_disarm();
		c->injected |= o.injected;
		x->seconds = o.seconds;
		if (o.skipped && !o.ran) {
			diag_result_set(x, DIAG_SKIP, "%s not run: %s", type, o.error);
			continue;
		}
		judge_results(x, &o, type);
		if (o.ran) {
			diag_expect e;
			x->value = o.tflops_median;
			if (diag_expected(g->name, x->metric, &e)) {
				x->expected = e.value;
				str_copy(x->expected_src, sizeof(x->expected_src), e.source);
				double margin;
				diag_status st = diag_judge_figure(o.tflops_median, &e, true, &margin);
				if (st != DIAG_PASS && !diag_stopping(c)) {
					sl_pushf(&x->evidence, "%s %.0f %s against %.0f expected (%+.1f%%)", type, o.tflops_median, x->unit,
						 e.value, margin);
					diag_result_finding(x, DIAG_F_GEMM_SLOW, st == DIAG_FAIL ? SEV_FAIL : SEV_WARN);
				}
			} else {
				snprintf(x->expected_src, sizeof(x->expected_src),
					 "none known for %s at the power limit: judged against its peers and its history", g->name);
			}
			diag_phase_evidence(c, x, phase, g->ordinal, NULL);
			diag_result_figure(x, "gemm.iterations", (double)o.iters, "", 0);
		}
		char r1[32], r2[32], r3[32];
		diag_result_set(x, x->st, "%s %dx%d: %s %s (%s-%s) over %.0f s; %lld outputs compared with the first: %s", type,
				o.n, o.n, rate(o.tflops_median, r1, sizeof(r1)), x->unit, rate(o.tflops_min, r2, sizeof(r2)),
				rate(o.tflops_max, r3, sizeof(r3)), o.seconds, o.iters,
				o.mismatched_words ? "some DIFFER" : o.cpu_ok ? "all identical, the first matched the CPU"
									  : "identical, but the first did not match the CPU");
	}
}

void diag_judge_power(double mean_w, double max_w, double limit_w, unsigned long long reasons, double temp_max_c,
		      double tflops_first, double tflops_last, diag_result *x)
{
	if (isfinite(mean_w)) {
		x->value = mean_w;
		if (limit_w > 0) {
			x->expected = limit_w;
			snprintf(x->expected_src, sizeof(x->expected_src), "the enforced power limit (NVML)");
		}
		/* a board held at its limit shows the power cap; one far below it without the cap is held
		 * back by something else (cooling, power delivery), which the reasons name */
		if (limit_w > 0 && mean_w < 0.90 * limit_w && !(reasons & CLK_SW_POWER_CAP)) {
			sl_pushf(&x->evidence, "%.0f W mean is %.0f%% of the %.0f W limit, and the power cap never engaged", mean_w,
				 mean_w / limit_w * 100, limit_w);
			diag_result_finding(x, DIAG_F_POWER_LOW, -1);
		}
		diag_result_figure(x, "power.watts_max", max_w, "W", 0);
		diag_result_figure(x, "power.temperature_max_c", temp_max_c, "C", -1);
	}
	if (reasons & (CLK_HW_SLOWDOWN | CLK_HW_POWER_BRAKE)) {
		sl_pushf(&x->evidence, "hardware slowdown%s under load", reasons & CLK_HW_POWER_BRAKE ? " (power brake)" : "");
		diag_result_finding(x, DIAG_F_THROTTLED, SEV_FAIL);
	} else if (reasons & (CLK_SW_THERMAL | CLK_HW_THERMAL)) {
		sl_pushf(&x->evidence, "thermal slowdown under load (at most %.0f C)", temp_max_c);
		diag_result_finding(x, DIAG_F_THROTTLED, SEV_WARN);
	}
	if (tflops_first > 0 && tflops_last < 0.95 * tflops_first) {
		sl_pushf(&x->evidence, "throughput %.4g TFLOP/s in the first fifth of the steady part, %.4g in the last (%+.1f%%)",
			 tflops_first, tflops_last, (tflops_last - tflops_first) / tflops_first * 100);
		diag_result_finding(x, DIAG_F_UNSTABLE, -1);
	}
}

void diag_t_power(diag_ctx *c, diag_gpu *g)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_POWER, g->ordinal);
	str_copy(x->metric, sizeof(x->metric), "power.watts");
	str_copy(x->unit, sizeof(x->unit), "W");
	if (g->mig) {
		diag_result_set(x, DIAG_SKIP, "a MIG instance shares the board's power with the others: run the power test on the "
					      "whole GPU (MIG off)");
		return;
	}
	gpu_dev *d = &c->bc.gpu->dev[g->ordinal];
	bench_dtype dt = d->cc_major * 10 + d->cc_minor >= dtype_get(DT_BF16)->min_cc ? DT_BF16 : DT_FP16;
	double secs = c->power_seconds > 0 ? c->power_seconds : 180;
	/* the first 15% (at least 5 s) heat the board up: judged apart from the steady part */
	double ramp = secs * 0.15 < 5 ? 5 : secs * 0.15;
	char phase[64], ramp_phase[64], what[96];
	snprintf(phase, sizeof(phase), "diag.power.gpu%d", g->ordinal);
	snprintf(ramp_phase, sizeof(ramp_phase), "diag.power.ramp.gpu%d", g->ordinal);
	snprintf(what, sizeof(what), "the power test's GEMMs");
	diag_progress(c, "GPU %d: power, %.0f s", g->ordinal, secs);
	diag_arm(c, DIAG_T_POWER, g->ordinal, what, ramp + secs + 60);
	stress_out warm, o;
	int n = c->o->gemm_n > 0 ? 2 * c->o->gemm_n : 16384;
	stress(c, g, dt, n, ramp, ramp_phase, false, &warm);
	bool steady = warm.ran && !diag_stopping(c);
	if (steady)
		stress(c, g, dt, n, secs - ramp, phase, false, &o);
	else
		o = warm;
	diag_disarm();
	x->seconds = warm.seconds + (steady ? o.seconds : 0);
	if (!o.ran && o.skipped) {
		diag_result_set(x, DIAG_SKIP, "not run: %s", o.error);
		return;
	}
	judge_results(x, &warm, dtype_get(dt)->name);
	if (steady)
		judge_results(x, &o, dtype_get(dt)->name);
	monitor_summary ms = {0};
	bool have = o.ran && diag_phase_evidence(c, x, phase, g->ordinal, &ms);
	const monitor_gpu_info *gi = monitor_gpu(c->bc.mon, g->nvml);
	double limit = gi ? gi->power_limit_w : 0;
	if (o.ran)
		diag_result_figure(x, "power.tflops", o.tflops_median, "TFLOP/s", 1);
	if (!diag_stopping(c) && o.ran)
		diag_judge_power(have ? ms.power_mean_w : NAN, have ? ms.power_max_w : NAN, limit, have ? ms.reasons : 0,
				 have ? ms.temp_max_c : NAN, o.tflops_first, o.tflops_last, x);
	if (have)
		diag_result_figure(x, "power.sm_clock_mhz", ms.sm_clock_median, "MHz", 1);
	if (!isfinite(x->value))
		diag_result_set(x, x->st, "%s %d: %.0f TFLOP/s over %.0f s; no power reading from NVML", dtype_get(dt)->name, o.n,
				o.tflops_median, x->seconds);
	else
		diag_result_set(x, x->st, "%.0f W mean (%.0f W at most) of the %.0f W limit, %s %d at %.0f TFLOP/s (%.0f-%.0f) over %.0f s, "
				"%lld outputs compared: %s",
				x->value, ms.power_max_w, limit, dtype_get(dt)->name, o.n, o.tflops_median, o.tflops_min, o.tflops_max,
				x->seconds, warm.iters + (steady ? o.iters : 0),
				warm.mismatched_words + (steady ? o.mismatched_words : 0) ? "some DIFFER" : "all identical");
}
