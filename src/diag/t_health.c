/*
 * diag's health test: what appeared on each GPU between the start of the run and its end, from
 * the counters NVML keeps (ECC, remapped rows, retired pages) and the Xid events the monitor
 * followed (NVML's events and the kernel log). The state before the run is check's (deployment);
 * this test judges the change that the load brought.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/monitor.h"
#include "diag/diag_internal.h"
#include "health/conditions.h"
#include "kb/kb.h"
#include "sampler/snapshot.h"

static double delta(sval a, sval b)
{
	return sv_has(a) && sv_has(b) ? b.v - a.v : NAN;
}

static unsigned long long xid_count_of(const gpu_sample *g, unsigned code)
{
	for (size_t i = 0; g && i < g->nxid; i++)
		if (g->xids[i].code == code)
			return g->xids[i].count;
	return 0;
}

void diag_judge_health(const gpu_sample *a, const gpu_sample *b, diag_result *x)
{
	if (b->lost) {
		diag_result_set(x, DIAG_FAIL, "NVML cannot reach the GPU any more: %s", b->error[0] ? b->error : "lost");
		sl_pushf(&x->evidence, "NVML: %s", b->error[0] ? b->error : "the GPU is lost");
		diag_result_finding(x, DIAG_F_XID, -1);
		return;
	}
	int problems = 0;
	double du = delta(a->ecc_uncorr_volatile, b->ecc_uncorr_volatile);
	double dc = delta(a->ecc_corr_volatile, b->ecc_corr_volatile);
	double ddbe = delta(a->retired_dbe, b->retired_dbe);
	if (du > 0 || ddbe > 0) {
		sl_pushf(&x->evidence, "uncorrected ECC errors (volatile): %.0f at the start, %.0f at the end",
			 a->ecc_uncorr_volatile.v, b->ecc_uncorr_volatile.v);
		if (ddbe > 0)
			sl_pushf(&x->evidence, "pages retired for double-bit errors: %.0f more", ddbe);
		diag_result_finding(x, DIAG_F_ECC, SEV_FAIL);
		problems++;
	} else if (dc > 0) {
		sl_pushf(&x->evidence, "corrected ECC errors (volatile): %.0f at the start, %.0f at the end", a->ecc_corr_volatile.v,
			 b->ecc_corr_volatile.v);
		diag_result_finding(x, DIAG_F_ECC, SEV_WARN);
		problems++;
	}
	if (!sv_has(b->ecc_uncorr_volatile))
		sl_pushf(&x->evidence, "ECC counters: not readable (ECC off, or a GPU without ECC)");
	bool pend_new = sv_has(b->remap_pending) && b->remap_pending.v > 0 && !(sv_has(a->remap_pending) && a->remap_pending.v > 0);
	bool fail_new = sv_has(b->remap_failure) && b->remap_failure.v > 0 && !(sv_has(a->remap_failure) && a->remap_failure.v > 0);
	double dru = delta(a->remap_uncorr, b->remap_uncorr);
	bool retire_new = sv_has(b->retired_pending) && b->retired_pending.v > 0 &&
			  !(sv_has(a->retired_pending) && a->retired_pending.v > 0);
	if (pend_new || fail_new || dru > 0 || retire_new) {
		if (fail_new)
			sl_pushf(&x->evidence, "nvmlDeviceGetRemappedRows: a row remap failed during the run");
		if (pend_new)
			sl_pushf(&x->evidence, "nvmlDeviceGetRemappedRows: a row remap is pending (it takes effect at the next reset)");
		if (dru > 0)
			sl_pushf(&x->evidence, "rows remapped for uncorrectable errors: %.0f more", dru);
		if (retire_new)
			sl_pushf(&x->evidence, "a page retirement is pending (it takes effect at the next reset)");
		diag_result_finding(x, DIAG_F_REMAP, -1);
		problems++;
	}
	/* Xid events that arrived during the run, judged from the catalogue (data/xid.csv) */
	for (size_t i = 0; i < b->nxid; i++) {
		unsigned code = b->xids[i].code;
		unsigned long long n = b->xids[i].count - xid_count_of(a, code);
		if (n == 0)
			continue;
		xid_verdict v = xid_judge(kb_global(), (int)code, true);
		sl_pushf(&x->evidence, "Xid %u%s%s%s, %llu time%s during the run%s%s", code, v.known ? " (" : "",
			 v.known ? v.name : "", v.known ? ")" : "", n, n == 1 ? "" : "s", v.action ? ": " : "",
			 v.action ? v.action : "");
		if (v.level >= CLOCKS_DEGRADED) {
			diag_result_finding(x, DIAG_F_XID, v.level == CLOCKS_UNHEALTHY ? SEV_FAIL : SEV_WARN);
			problems++;
		}
	}
	x->value = problems;
	x->expected = 0;
	if (problems)
		diag_result_set(x, x->st, "%d kind%s of error appeared during the run", problems, problems == 1 ? "" : "s");
	else
		diag_result_set(x, DIAG_PASS, "no ECC error, row remap, page retirement or Xid appeared during the run");
}

void diag_t_health(diag_ctx *c, diag_gpu *g)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_HEALTH, g->ordinal);
	str_copy(x->metric, sizeof(x->metric), "health.new_errors");
	char err[256] = "";
	snapshot *after = c->bc.mon ? monitor_health_snapshot(c->bc.mon, err, sizeof(err)) : NULL;
	const gpu_sample *a = c->before && g->nvml >= 0 ? snapshot_gpu(c->before, g->nvml) : NULL;
	const gpu_sample *b = after && g->nvml >= 0 ? snapshot_gpu(after, g->nvml) : NULL;
	if (!a || !b)
		diag_result_set(x, DIAG_SKIP, "NVML's counters could not be read before and after the run%s%s", err[0] ? ": " : "",
				err);
	else
		diag_judge_health(a, b, x);
	snapshot_free(after);
}
