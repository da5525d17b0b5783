/*
 * diag's tests that run through bench's measurements: the PCIe link (pinned copies each way, the
 * link's generation and width while it carries them, its replay counter over the copies) and the
 * device memory bandwidth (stream triad). Each figure is judged against the GPU class's expected
 * figure (data/diag_expected.csv) or, where the table has none, against the link's or the
 * datasheet's rate, and says which.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gpu.h"
#include "bench/monitor.h"
#include "diag/diag_internal.h"
#include "sampler/snapshot.h"

/* Without a measured reference, a copy is expected at 75% of the link's rate per direction and
 * triad at 80% of the datasheet bandwidth: on the H200 the measured figures were 87% and 90%. */
#define PCIE_OF_LINK 0.75
#define TRIAD_OF_PEAK 0.80

/* A bench figure that was not measured: a CUDA error is a fail of the GPU, anything else a skip. */
static void figure_missing(diag_result *x, const bench_figure *f, const char *what, const diag_ctx *c)
{
	const char *why = f && f->note ? f->note : "not measured";
	/* an error that broke the context (an illegal address, a launch failure) is the GPU's; one
	 * that did not (no memory free, a missing library) leaves the test unrun */
	if (gpu_broken(c->bc.gpu)) {
		diag_result_set(x, DIAG_FAIL, "%s failed: %s", what, why);
		sl_pushf(&x->evidence, "%s", why);
		diag_result_finding(x, DIAG_F_ERROR, -1);
	} else {
		diag_result_set(x, DIAG_SKIP, "%s not measured: %s", what, why);
	}
}

/* The figure against its expectation into x (value, expected, source, status); `fallback` > 0
 * with its source when the table has no row. */
static void judge_into(diag_result *x, const char *gpu_name, double value, double fallback, const char *fallback_src,
		       diag_finding_id slow)
{
	diag_expect e;
	bool have = diag_expected(gpu_name, x->metric, &e);
	if (!have && fallback > 0 && !strstr(gpu_name, " MIG ")) {
		e = (diag_expect){fallback, 1.0, 0.80, ""};
		str_copy(e.source, sizeof(e.source), fallback_src);
		have = true;
	}
	x->value = value;
	if (!have) {
		snprintf(x->expected_src, sizeof(x->expected_src),
			 "none known for %s: judged against its peers and its history", gpu_name);
		return;
	}
	x->expected = e.value;
	str_copy(x->expected_src, sizeof(x->expected_src), e.source);
	double margin;
	diag_status st = diag_judge_figure(value, &e, true, &margin);
	if (st != DIAG_PASS) {
		sl_pushf(&x->evidence, "%s %.4g %s against %.4g %s expected (%+.1f%%; %s below %.0f%% of it)", x->metric, value,
			 x->unit, e.value, x->unit, margin, st == DIAG_FAIL ? "fail" : "warn",
			 (st == DIAG_FAIL ? e.fail_below : e.warn_below) * 100);
		diag_result_finding(x, slow, st == DIAG_FAIL ? SEV_FAIL : SEV_WARN);
	}
}

static snapshot *health_now(diag_ctx *c)
{
	char err[256];
	return c->bc.mon ? monitor_health_snapshot(c->bc.mon, err, sizeof(err)) : NULL;
}

static double replays_of(const snapshot *s, int nvml)
{
	const gpu_sample *g = s && nvml >= 0 ? snapshot_gpu(s, nvml) : NULL;
	return g && sv_has(g->pcie_replay) ? g->pcie_replay.v : NAN;
}

void diag_t_pcie(diag_ctx *c, diag_gpu *g)
{
	diag_bench_reset(c);
	c->bo.device = g->ordinal;
	snapshot *before = health_now(c);
	diag_arm(c, DIAG_T_PCIE, g->ordinal, "the host-device copies", 90);
	bench_transfer(&c->bc);
	diag_disarm();
	snapshot *after = health_now(c);
	const monitor_gpu_info *gi = monitor_gpu(c->bc.mon, g->nvml);
	static const char *const dirs[][3] = {{"transfer.h2d_pinned", "pcie.h2d", "host-to-device copies"},
					       {"transfer.d2h_pinned", "pcie.d2h", "device-to-host copies"}};
	int link_gen = 0, link_width = 0;
	for (size_t k = 0; k < GV_ARRAY_LEN(dirs); k++) {
		diag_result *x = diag_result_add(c->r, DIAG_T_PCIE, g->ordinal);
		str_copy(x->metric, sizeof(x->metric), dirs[k][1]);
		str_copy(x->unit, sizeof(x->unit), "GB/s");
		const bench_figure *f = report_find(&c->rep, dirs[k][0]);
		if (!f || f->skipped || f->st.n == 0) {
			figure_missing(x, f, dirs[k][2], c);
			continue;
		}
		char src[160];
		snprintf(src, sizeof(src), "%.0f%% of the link's rate (%s)", PCIE_OF_LINK * 100, f->peak_how ? f->peak_how : "");
		judge_into(x, g->name, f->st.median, f->peak > 0 ? f->peak * PCIE_OF_LINK : 0, src, DIAG_F_PCIE_SLOW);
		if (f->verified == VERIFY_FAILED) {
			sl_pushf(&x->evidence, "the copied data came back wrong: %s", f->verify_text ? f->verify_text : "");
			diag_result_finding(x, DIAG_F_ERROR, -1);
		}
		monitor_summary ms;
		diag_phase_evidence(c, x, dirs[k][0], g->ordinal, &ms);
		/* the best the link reached while it carried the copies: a momentary dip is not a fault,
		 * a link that never reached its generation or width under load is */
		bool down = gi && ms.samples > 0 &&
			    ((gi->pcie_gen_max && ms.pcie_gen_max > 0 && (unsigned)ms.pcie_gen_max < gi->pcie_gen_max) ||
			     (gi->pcie_width_max && ms.pcie_width_max > 0 && (unsigned)ms.pcie_width_max < gi->pcie_width_max));
		if (ms.samples > 0) {
			link_gen = ms.pcie_gen_max;
			link_width = ms.pcie_width_max;
		}
		if (down) {
			sl_pushf(&x->evidence, "the link ran at Gen%d x%d while copying; the GPU and slot train to Gen%u x%u",
				 ms.pcie_gen_max, ms.pcie_width_max, gi->pcie_gen_max, gi->pcie_width_max);
			diag_result_finding(x, DIAG_F_PCIE_DOWNTRAINED, -1);
		}
		diag_result_set(x, x->st, "%s %.1f GB/s%s", dirs[k][2], f->st.median,
				down ? "; the link was trained down under load" : "");
		if (isfinite(x->expected))
			snprintf(x->summary + strlen(x->summary), sizeof(x->summary) - strlen(x->summary),
				 " (expected %.1f GB/s, %+.1f%%)", x->expected, (x->value - x->expected) / x->expected * 100);
	}
	/* replays over the copies */
	double r0 = replays_of(before, g->nvml), r1 = replays_of(after, g->nvml);
	diag_result *x = diag_result_add(c->r, DIAG_T_PCIE, g->ordinal);
	str_copy(x->metric, sizeof(x->metric), "pcie.replays");
	if (isfinite(r0) && isfinite(r1)) {
		x->value = r1 - r0;
		x->expected = 0;
		diag_result_set(x, DIAG_PASS, "%.0f PCIe replays during the copies", r1 - r0);
		if (link_gen)
			snprintf(x->summary + strlen(x->summary), sizeof(x->summary) - strlen(x->summary), " (link Gen%d x%d)",
				 link_gen, link_width);
		if (r1 > r0) {
			sl_pushf(&x->evidence, "nvmlDeviceGetPcieReplayCounter: %.0f before the copies, %.0f after", r0, r1);
			diag_result_finding(x, DIAG_F_PCIE_REPLAYS, -1);
		}
	} else {
		diag_result_set(x, DIAG_SKIP, "the PCIe replay counter is not readable here (NVML)");
	}
	snapshot_free(before);
	snapshot_free(after);
}

void diag_t_bandwidth(diag_ctx *c, diag_gpu *g)
{
	diag_bench_reset(c);
	c->bo.device = g->ordinal;
	diag_arm(c, DIAG_T_BANDWIDTH, g->ordinal, "the memory bandwidth kernels", 120);
	bench_memory(&c->bc);
	diag_disarm();
	diag_result *x = diag_result_add(c->r, DIAG_T_BANDWIDTH, g->ordinal);
	str_copy(x->metric, sizeof(x->metric), "memory.triad");
	str_copy(x->unit, sizeof(x->unit), "GB/s");
	const bench_figure *f = report_find(&c->rep, "memory.triad");
	if (!f || f->skipped || f->st.n == 0) {
		figure_missing(x, f, "the triad kernel", c);
		return;
	}
	char src[160];
	snprintf(src, sizeof(src), "%.0f%% of the datasheet's %.0f GB/s", TRIAD_OF_PEAK * 100, f->peak);
	judge_into(x, g->name, f->st.median, f->peak > 0 ? f->peak * TRIAD_OF_PEAK : 0, src, DIAG_F_BANDWIDTH_SLOW);
	if (f->verified == VERIFY_FAILED) {
		sl_pushf(&x->evidence, "the kernel's results were wrong: %s", f->verify_text ? f->verify_text : "");
		diag_result_finding(x, DIAG_F_MEMORY_ERRORS, -1);
	}
	diag_phase_evidence(c, x, "memory.triad", g->ordinal, NULL);
	const char *others[] = {"memory.copy", "memory.scale", "memory.add", "memory.read"};
	for (size_t i = 0; i < GV_ARRAY_LEN(others); i++) {
		const bench_figure *o = report_find(&c->rep, others[i]);
		if (o && !o->skipped && o->st.n)
			diag_result_figure(x, others[i], o->st.median, "GB/s", 1);
	}
	diag_result_set(x, x->st, "stream triad %.0f GB/s", f->st.median);
	if (isfinite(x->expected))
		snprintf(x->summary + strlen(x->summary), sizeof(x->summary) - strlen(x->summary), " (expected %.0f GB/s, %+.1f%%)",
			 x->expected, (x->value - x->expected) / x->expected * 100);
}
