#include "health/health.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "health/conditions.h"
#include "kb/kb.h"
#include "kb/kb_nvidia.h"

const char *health_state_name(health_state s)
{
	switch (s) {
	case HEALTH_HEALTHY: return "healthy";
	case HEALTH_DEGRADED: return "degraded";
	case HEALTH_UNHEALTHY: return "unhealthy";
	}
	return "unknown";
}

void health_cfg_default(health_cfg *c)
{
	c->util_low = 0.70;
	c->util_low_seconds = 60;
	c->hot_c = 80;
	c->busy_util = 0.30;
	c->xid_hold_seconds = 900;
}

void health_init(health_tracker *t, const health_cfg *cfg)
{
	memset(t, 0, sizeof(*t));
	if (cfg)
		t->cfg = *cfg;
	else
		health_cfg_default(&t->cfg);
}

static health_msg *emit(health_tracker *t, int gpu, const char *id, health_state st, double since, const char *action,
			const char *fmt, ...) GV_PRINTF(7, 8);
static health_msg *emit(health_tracker *t, int gpu, const char *id, health_state st, double since, const char *action,
			const char *fmt, ...)
{
	if (t->nmsg >= HEALTH_MAX_MSGS)
		return NULL;
	health_msg *m = &t->msgs[t->nmsg++];
	memset(m, 0, sizeof(*m));
	m->gpu = gpu;
	str_copy(m->id, sizeof(m->id), id);
	m->state = st;
	m->since = since;
	str_copy(m->action, sizeof(m->action), action);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->text, sizeof(m->text), fmt, ap);
	va_end(ap);
	if (gpu >= 0 && gpu < HEALTH_MAX_GPUS && st > t->gpu_state[gpu])
		t->gpu_state[gpu] = st;
	return m;
}

/* Keeps the start time of a condition: set on its first true sample, cleared when false. */
static double track(double *since, bool cond, double now)
{
	if (!cond)
		*since = -1;
	else if (*since < 0)
		*since = now;
	return cond ? *since : -1;
}

static void rule_input_bound(health_tracker *t, health_gpu_track *tr, const gpu_sample *g, double now)
{
	bool held = sv_has(g->nprocs) && g->nprocs.v > 0;
	bool low = sv_has(g->util_gpu) && g->util_gpu.v < t->cfg.util_low * 100;
	double since = track(&tr->low_since, held && low, now);
	if (since < 0 || now - since < t->cfg.util_low_seconds)
		return;
	char who[96] = "a process";
	if (g->nproc > 0)
		snprintf(who, sizeof(who), "%s (pid %u)%s", g->procs[0].name[0] ? g->procs[0].name : "?", g->procs[0].pid,
			 g->nproc > 1 ? " and others" : "");
	/* GPM tells the two apart: kernels that run (utilization) but fill no SM are tiny kernels
	 * the host waits for, not a GPU starved of data (the job doctor's launch-bound rule) */
	sval sm = g->gpm[GV_GPM_SM_ACTIVE];
	if (sv_has(sm) && launch_tiny_kernels(g->util_gpu.v / 100, sm.v, &LAUNCH_LIMITS_DEFAULT)) {
		emit(t, g->index, "gpu.launch-bound", HEALTH_DEGRADED, since,
		     "launch/sync-bound? fewer .item()/.cpu() syncs, CUDA graphs, torch.compile; "
		     "`gpuvet watch --pid PID --diagnose 10` names the cause",
		     "utilization %.0f%% but SM active %.1f%% for %.0f s while %s holds the GPU: tiny kernels", g->util_gpu.v,
		     sm.v * 100, now - since, who);
		return;
	}
	emit(t, g->index, "gpu.input-bound", HEALTH_DEGRADED, since,
	     "input-bound? raise DataLoader num_workers, set pin_memory=True, prefetch; "
	     "`gpuvet watch --pid PID --diagnose 10` names the cause, `gpuvet tune` measures the settings",
	     "utilization %.0f%%, under %.0f%% for %.0f s while %s holds the GPU", g->util_gpu.v,
	     t->cfg.util_low * 100, now - since, who);
}

static void rule_hot(health_tracker *t, health_gpu_track *tr, const gpu_sample *g, double now)
{
	/* one rule with check's gpu.hot (health/conditions.h) */
	double slow = sv_has(g->temp_slowdown) && g->temp_slowdown.v > 0 ? g->temp_slowdown.v : NAN;
	clocks_level lv = sv_has(g->temp) ? hot_judge(g->temp.v, slow) : CLOCKS_NONE;
	double since = track(&tr->hot_since, lv != CLOCKS_NONE, now);
	if (since < 0)
		return;
	if (lv == CLOCKS_UNHEALTHY)
		emit(t, g->index, "gpu.hot", HEALTH_UNHEALTHY, since,
		     "check airflow and fans now; the GPU slows itself down at this temperature",
		     "temperature %.0f C, at or above its slowdown threshold %.0f C", g->temp.v, g->temp_slowdown.v);
	else if (!isnan(slow))
		emit(t, g->index, "gpu.hot", HEALTH_DEGRADED, since, "check airflow, fans and what runs beside it",
		     "temperature %.0f C, %.0f C below the slowdown threshold", g->temp.v, slow - g->temp.v);
	else
		emit(t, g->index, "gpu.hot", HEALTH_DEGRADED, since, "check airflow, fans and what runs beside it",
		     "temperature %.0f C (>= %d C)", g->temp.v, HOT_C);
}

/* How busy the GPU is for the clock rule: SM active with GPM, NVML utilization without. */
double health_busy(const gpu_sample *g)
{
	return gpu_busy(sv_has(g->gpm[GV_GPM_SM_ACTIVE]) ? g->gpm[GV_GPM_SM_ACTIVE].v : NAN,
			sv_has(g->util_gpu) ? g->util_gpu.v / 100 : NAN);
}

static void rule_throttled(health_tracker *t, health_gpu_track *tr, const gpu_sample *g, double now)
{
	unsigned long long mask = sv_has(g->clock_reasons) ? (unsigned long long)g->clock_reasons.v : 0;
	/* one rule with check's gpu.throttled (health/conditions.h): the power cap at full load is the
	 * expected state, not a degradation */
	clocks_verdict cv = clocks_judge(mask, health_busy(g), sv_has(g->power_limit) ? g->power_limit.v : NAN,
					 sv_has(g->power_default_limit) ? g->power_default_limit.v : NAN);
	bool bad = cv.level >= CLOCKS_DEGRADED;
	double since = track(&tr->throttle_since, bad, now);
	if (since < 0)
		return;
	char words[160];
	clock_reasons_text(cv.reasons, words, sizeof(words));
	health_state st = cv.level == CLOCKS_UNHEALTHY ? HEALTH_UNHEALTHY : HEALTH_DEGRADED;
	char clk[96] = "";
	if (cv.limit_lowered && sv_has(g->power_default_limit))
		snprintf(clk, sizeof(clk), ", power limit %.0f W of the default %.0f W", g->power_limit.v,
			 g->power_default_limit.v);
	else if (sv_has(g->sm_clock) && sv_has(g->sm_clock_max))
		snprintf(clk, sizeof(clk), ", SM clock %.0f of %.0f MHz", g->sm_clock.v, g->sm_clock_max.v);
	emit(t, g->index, "gpu.throttled", st, since, cv.action, "clocks held back: %s%s", words, clk);
}

static void rule_link(health_tracker *t, health_gpu_track *tr, const gpu_sample *g, double now)
{
	/* one rule with check's gpu.pcie-degraded (health/conditions.h) */
	bool narrow, slow;
	clocks_level lv = link_judge(sv_has(g->pcie_width) ? g->pcie_width.v : NAN,
				     sv_has(g->pcie_width_max) ? g->pcie_width_max.v : NAN,
				     sv_has(g->pcie_gen) ? g->pcie_gen.v : NAN, sv_has(g->pcie_gen_max) ? g->pcie_gen_max.v : NAN,
				     health_busy(g), &narrow, &slow);
	double since = track(&tr->link_since, lv != CLOCKS_NONE, now);
	if (since < 0)
		return;
	emit(t, g->index, "gpu.pcie-degraded", HEALTH_DEGRADED, since,
	     "reseat the GPU, check the riser and the slot's BIOS settings (gen and width)",
	     "PCIe link gen %.0f x%.0f, the GPU supports gen %.0f x%.0f%s", g->pcie_gen.v, g->pcie_width.v,
	     g->pcie_gen_max.v, g->pcie_width_max.v, slow && !narrow ? " (while busy)" : "");
}

static void rule_ecc(health_tracker *t, health_gpu_track *tr, const gpu_sample *g, double now)
{
	if (!tr->have_base) {
		tr->have_base = true;
		tr->base_uncorr_volatile = sv_has(g->ecc_uncorr_volatile) ? g->ecc_uncorr_volatile.v : 0;
		tr->base_uncorr_aggregate = sv_has(g->ecc_uncorr_aggregate) ? g->ecc_uncorr_aggregate.v : 0;
		tr->ecc_since = -1;
	}
	double d_vol = sv_has(g->ecc_uncorr_volatile) ? g->ecc_uncorr_volatile.v - tr->base_uncorr_volatile : 0;
	double d_agg = sv_has(g->ecc_uncorr_aggregate) ? g->ecc_uncorr_aggregate.v - tr->base_uncorr_aggregate : 0;
	double d = d_vol > d_agg ? d_vol : d_agg;
	if (d > 0) {
		if (tr->ecc_since < 0)
			tr->ecc_since = now;
		emit(t, g->index, "gpu.ecc-new", HEALTH_UNHEALTHY, tr->ecc_since,
		     "drain the node and reset the GPU (nvidia-smi -r); RMA if it repeats",
		     "%.0f new uncorrected ECC error%s while watching", d, d == 1 ? "" : "s");
	}
	if (sv_has(g->remap_failure) && g->remap_failure.v > 0)
		emit(t, g->index, "gpu.ecc-new", HEALTH_UNHEALTHY, now, "row remapping failed: RMA the GPU",
		     "row remapping failure");
	else if ((sv_has(g->remap_pending) && g->remap_pending.v > 0) ||
		 (sv_has(g->retired_pending) && g->retired_pending.v > 0))
		emit(t, g->index, "gpu.ecc-new", HEALTH_UNHEALTHY, now,
		     "reset the GPU (or reboot) when the job ends to apply the repair",
		     "%s pending", sv_has(g->remap_pending) && g->remap_pending.v > 0 ? "row remap" : "page retirement");
}

static void rule_xid(health_tracker *t, const gpu_sample *g, double now)
{
	for (size_t i = 0; i < g->nxid; i++) {
		const xid_count *x = &g->xids[i];
		if (x->count == 0)
			continue;
		/* one rule with check's gpu.xid (health/conditions.h): the catalogue says whether the code
		 * is the GPU's problem or the application's */
		xid_verdict v = xid_judge(kb_global(), (int)x->code, now - x->last_time <= t->cfg.xid_hold_seconds);
		if (v.level < CLOCKS_DEGRADED)
			continue;
		emit(t, g->index, "gpu.xid", v.level == CLOCKS_UNHEALTHY ? HEALTH_UNHEALTHY : HEALTH_DEGRADED, x->last_time,
		     v.action, "Xid %u%s%s (%llu time%s, last %.0f s ago)", x->code, v.known ? ": " : "", v.meaning, x->count,
		     x->count == 1 ? "" : "s", now - x->last_time);
	}
}

void health_update(health_tracker *t, const snapshot *s, double now)
{
	t->nmsg = 0;
	memset(t->gpu_state, 0, sizeof(t->gpu_state));
	if (!s)
		return;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->index < 0 || g->index >= HEALTH_MAX_GPUS)
			continue;
		health_gpu_track *tr = &t->gpus[g->index];
		/* a different GPU at this index (hot swap, reordering): start over */
		if (!tr->seen || strcmp(tr->uuid, g->uuid) != 0) {
			memset(tr, 0, sizeof(*tr));
			tr->seen = true;
			str_copy(tr->uuid, sizeof(tr->uuid), g->uuid);
			tr->low_since = tr->hot_since = tr->throttle_since = tr->link_since = tr->ecc_since = -1;
		}
		if (g->lost) {
			emit(t, g->index, "gpu.lost", HEALTH_UNHEALTHY, now,
			     "check the kernel log for Xid 79; drain the node, reset the GPU or reboot",
			     "NVML cannot read the GPU: %s", g->error[0] ? g->error : "unknown error");
			rule_xid(t, g, now);
			continue;
		}
		rule_input_bound(t, tr, g, now);
		rule_hot(t, tr, g, now);
		rule_throttled(t, tr, g, now);
		rule_link(t, tr, g, now);
		rule_ecc(t, tr, g, now);
		rule_xid(t, g, now);
	}
}

health_state health_gpu(const health_tracker *t, int gpu)
{
	if (gpu < 0 || gpu >= HEALTH_MAX_GPUS)
		return HEALTH_HEALTHY;
	return t->gpu_state[gpu];
}

health_state health_overall(const health_tracker *t)
{
	health_state worst = HEALTH_HEALTHY;
	for (size_t i = 0; i < HEALTH_MAX_GPUS; i++)
		if (t->gpu_state[i] > worst)
			worst = t->gpu_state[i];
	return worst;
}
