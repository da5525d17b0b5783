/*
 * diag's node tests over several GPUs, through bench's multi-GPU group: GPU-to-GPU copies between
 * every pair (NVLink or PCIe) and NCCL's all-reduce over every GPU. On one GPU they are skipped.
 * Each copy's figure is judged against the median of the pairs (a slow pair is the link to look
 * at); a copy that fails, or data that comes back wrong, fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gpu.h"
#include "bench/stats.h"
#include "diag/diag_internal.h"

static int tested_gpus(const diag_ctx *c)
{
	int n = 0;
	for (int i = 0; i < c->r->ngpus; i++)
		n += c->r->gpus[i].tested;
	return n;
}

/* bench's multi group runs once for both node tests: on the first of them */
static void run_multi(diag_ctx *c)
{
	if (c->multi_ran)
		return;
	c->multi_ran = true;
	diag_bench_reset(c);
	diag_arm(c, DIAG_T_P2P, -1, "the GPU-to-GPU copies and NCCL", 300);
	bench_multi(&c->bc);
	diag_disarm();
}

void diag_judge_p2p(const bench_report *rep, bool context_broken, diag_result *x)
{
	double v[256];
	size_t n = 0;
	int failed = 0;
	for (size_t i = 0; i < rep->n; i++) {
		const bench_figure *f = &rep->v[i];
		if (strcmp(f->group, "p2p") != 0)
			continue;
		if (f->skipped) {
			if (f->note && context_broken) {
				sl_pushf(&x->evidence, "%s: %s", f->title, f->note);
				failed++;
			} else if (n == 0 && f->note) {
				sl_pushf(&x->evidence, "%s: %s", f->title, f->note);
			}
			continue;
		}
		if (f->verified == VERIFY_FAILED) {
			sl_pushf(&x->evidence, "%s: the data came back wrong: %s", f->title, f->verify_text ? f->verify_text : "");
			failed++;
		}
		diag_result_figure(x, f->id, f->st.median, "GB/s", 1);
		/* both ways at once count both directions: judged apart from the one-way copies */
		if (n < GV_ARRAY_LEN(v) && !strstr(f->id, ".both"))
			v[n++] = f->st.median;
	}
	if (n == 0 && !failed) {
		diag_result_set(x, DIAG_SKIP, "no GPU-to-GPU copy was measured%s%s", x->evidence.n ? ": " : "",
				x->evidence.n ? x->evidence.v[0] : "");
		return;
	}
	double med = 0;
	if (n) {
		med = stats_median(v, n);
		x->value = v[0];
		for (size_t i = 1; i < n; i++)
			if (v[i] < x->value)
				x->value = v[i];
		x->expected = med * DIAG_PEER_WARN;
		snprintf(x->expected_src, sizeof(x->expected_src), "%.0f%% of the median of the %zu copies", DIAG_PEER_WARN * 100, n);
		/* a pair well below the others is the link to look at; two copies (two GPUs) have no
		 * median that says which of them is off */
		for (size_t i = 0; n >= 3 && i < x->nextra; i++)
			if (!strstr(x->extra[i].metric, ".both") && x->extra[i].value < DIAG_PEER_WARN * med) {
				sl_pushf(&x->evidence, "%s %.1f GB/s against the pairs' median %.1f GB/s", x->extra[i].metric,
					 x->extra[i].value, med);
				diag_result_finding(x, DIAG_F_P2P_FAIL, x->extra[i].value < DIAG_PEER_FAIL * med ? SEV_FAIL : SEV_WARN);
			}
	}
	if (failed)
		diag_result_finding(x, DIAG_F_P2P_FAIL, SEV_FAIL);
	diag_result_set(x, x->st, "%zu one-way GPU-to-GPU copies, slowest %.1f GB/s, median %.1f GB/s%s", n, n ? x->value : 0, med,
			failed ? "; some failed" : "");
}

void diag_t_p2p(diag_ctx *c)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_P2P, -1);
	str_copy(x->metric, sizeof(x->metric), "p2p.min");
	str_copy(x->unit, sizeof(x->unit), "GB/s");
	if (tested_gpus(c) < 2) {
		diag_result_set(x, DIAG_SKIP, "needs two GPUs or more (%d tested)", tested_gpus(c));
		return;
	}
	run_multi(c);
	diag_judge_p2p(&c->rep, gpu_broken(c->bc.gpu), x);
}

void diag_judge_nccl(const bench_report *rep, diag_result *x)
{
	const bench_figure *best = NULL;
	bool failed = false;
	for (size_t i = 0; i < rep->n; i++) {
		const bench_figure *f = &rep->v[i];
		if (strcmp(f->group, "nccl") != 0)
			continue;
		if (f->skipped) {
			if (f->note && !best)
				sl_pushf(&x->evidence, "%s: %s", f->title, f->note);
			/* NCCL that loaded but failed (an init or a collective), not one that is missing */
			failed |= f->note && strstr(f->note, "failed") != NULL;
			continue;
		}
		if (strstr(f->id, "all_reduce") && (!best || f->size > best->size))
			best = f;
	}
	if (!best) {
		diag_result_set(x, failed ? DIAG_FAIL : DIAG_SKIP, "no NCCL all-reduce was measured%s%s", x->evidence.n ? ": " : "",
				x->evidence.n ? x->evidence.v[0] : "");
		if (failed)
			diag_result_finding(x, DIAG_F_NCCL_FAIL, -1);
		return;
	}
	x->value = best->st.median;
	if (best->verified == VERIFY_FAILED) {
		sl_pushf(&x->evidence, "the all-reduce's result was wrong: %s", best->verify_text ? best->verify_text : "");
		diag_result_finding(x, DIAG_F_NCCL_FAIL, SEV_FAIL);
	}
	diag_result_set(x, x->st, "%s: %.1f GB/s bus bandwidth", best->title, best->st.median);
}

void diag_t_nccl(diag_ctx *c)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_NCCL, -1);
	str_copy(x->metric, sizeof(x->metric), "nccl.all_reduce");
	str_copy(x->unit, sizeof(x->unit), "GB/s");
	if (tested_gpus(c) < 2) {
		diag_result_set(x, DIAG_SKIP, "needs two GPUs or more (%d tested)", tested_gpus(c));
		return;
	}
	run_multi(c);
	diag_judge_nccl(&c->rep, x);
}
