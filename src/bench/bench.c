/* Shared pieces of gpuvet bench: the group table, progress, time limits, evidence windows, the speedup tables. */
#include "bench/bench.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/gpu.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "core/util.h"
#include "diagnose/diagnose.h"

#define BENCH_GROUP_ROW_(ID, name, run, gpu, sections) {name, BENCH_G_##ID, run, gpu, sections},
const bench_group bench_groups[BENCH_N_GROUPS] = {BENCH_GROUPS(BENCH_GROUP_ROW_)};
#undef BENCH_GROUP_ROW_

unsigned bench_gpu_groups(void)
{
	unsigned m = 0;
	for (size_t g = 0; g < BENCH_N_GROUPS; g++)
		if (bench_groups[g].gpu)
			m |= bench_groups[g].bit;
	return m;
}

void bench_run_groups(bench_ctx *c)
{
	for (size_t g = 0; g < BENCH_N_GROUPS; g++)
		if (c->o->groups & bench_groups[g].bit)
			bench_groups[g].run(c);
}

void bench_cpu_group(bench_ctx *c)
{
	bench_cpu(c);
	/* the GPU at the CPU's size when that had to be smaller */
	static const bench_dtype cmp[] = {DT_FP32, DT_FP64};
	for (size_t i = 0; c->gpu && (c->o->groups & BENCH_G_GEMM) && i < GV_ARRAY_LEN(cmp); i++) {
		char id[32], gid[32];
		snprintf(id, sizeof(id), "cpu.gemm.%s", dtype_get(cmp[i])->name);
		snprintf(gid, sizeof(gid), "gemm.%s", dtype_get(cmp[i])->name);
		const bench_figure *f = report_find(c->r, id);
		const bench_figure *g = report_find(c->r, gid);
		if (f && !f->skipped && f->size > 0 && g && !g->skipped && g->size != f->size)
			bench_gemm_at(c, cmp[i], (int)f->size);
	}
}

bool bench_parse_groups(const char *list, unsigned *out, const char **bad)
{
	static char badbuf[64];
	strlist parts = {0};
	sl_split(&parts, list ? list : "", ", ", false);
	unsigned mask = 0;
	bool ok = parts.n > 0;
	for (size_t i = 0; i < parts.n && ok; i++) {
		bool found = strcmp(parts.v[i], "all") == 0;
		if (found)
			mask |= BENCH_G_ALL;
		for (size_t g = 0; g < BENCH_N_GROUPS; g++)
			if (strcmp(parts.v[i], bench_groups[g].name) == 0) {
				mask |= bench_groups[g].bit;
				found = true;
			}
		if (!found) {
			str_copy(badbuf, sizeof(badbuf), parts.v[i]);
			if (bad)
				*bad = badbuf;
			ok = false;
		}
	}
	if (!parts.n && bad)
		*bad = "";
	sl_free(&parts);
	if (ok)
		*out = mask;
	return ok;
}

void bench_window_close(bench_ctx *c)
{
	gpm_window_close(c->win);
	c->win = NULL;
	c->win_tried = false;
}

/* Opens (once per GPU) the GPM state of the figure's GPU: false when that GPU has no GPM. */
static bool window_ready(bench_ctx *c, int ordinal)
{
	c->win_ok = false;
	/* NVML is initialised by the monitor: without it there is nothing to sample */
	if (!c->mon || !c->gpu || ordinal < 0 || ordinal >= c->gpu->count || c->gpu->dev[ordinal].nvml_index < 0)
		return false;
	int idx = c->gpu->dev[ordinal].nvml_index;
	if (!c->win_tried || idx != c->win_nvml) {
		bench_window_close(c);
		c->win_tried = true;
		char why[256];
		c->win = gpm_window_open((unsigned)idx, why, sizeof(why));
		c->win_nvml = idx;
		if (!c->win)
			facts_put_state(c->r->facts, FACT_UNSUPPORTED, "nvmlGpmQueryDeviceSupport", why,
					FK_BENCH_MONITOR_GPU_GPM(d), idx);
		else
			facts_put_str(c->r->facts, "nvmlGpmQueryDeviceSupport", "supported", FK_BENCH_MONITOR_GPU_GPM(d), idx);
	}
	return c->win != NULL;
}

void bench_evidence(bench_ctx *c, int ordinal, bench_once_fn once, void *arg, double busy_per_call)
{
	if (c->o->no_evidence || !window_ready(c, ordinal))
		return;
	/* On the H200 a GPM sample reflects the counters some tens of ms late (seen 2026-12-01: a
	 * 100 ms copy right after a sample showed 25% SM active, and the first 7-27 ms GEMM windows
	 * 0-52% tensor active, the rest landing in the next window). Idle before the first sample, so
	 * the timed repeats just before are out of it, and after the work, so all of it is in. */
	sleep_seconds(BENCH_EVIDENCE_SETTLE_S);
	if (!gpm_window_begin(c->win))
		return;
	double busy = 0, t0 = now_seconds();
	char why[256];
	while (busy < BENCH_EVIDENCE_BUSY_S && now_seconds() - t0 < 4 * BENCH_EVIDENCE_BUSY_S && !watchdog_expired()) {
		double t = once(arg, why, sizeof(why));
		if (t < 0)
			break;
		busy += t * busy_per_call;
	}
	sleep_seconds(BENCH_EVIDENCE_SETTLE_S);
	c->win_ok = gpm_window_end(c->win, busy, &c->win_ev) && busy > 0;
}

void bench_window_evidence(bench_ctx *c, bench_figure *f)
{
	f->sm_active = f->tensor_active = f->dram_active = NAN;
	f->window_sm_active = f->window_tensor_active = f->window_dram_active = NAN;
	f->pcie_tx_bps = f->pcie_rx_bps = NAN;
	if (!c->win_ok)
		return;
	c->win_ok = false; /* one window, one figure */
	const gpm_evidence *e = &c->win_ev;
	f->sm_active = e->busy[GV_GPM_SM_ACTIVE];
	f->tensor_active = e->busy[GV_GPM_TENSOR_ACTIVE];
	f->dram_active = e->busy[GV_GPM_DRAM_ACTIVE];
	f->pcie_tx_bps = e->busy[GV_GPM_PCIE_TX];
	f->pcie_rx_bps = e->busy[GV_GPM_PCIE_RX];
	f->window_sm_active = e->window[GV_GPM_SM_ACTIVE];
	f->window_tensor_active = e->window[GV_GPM_TENSOR_ACTIVE];
	f->window_dram_active = e->window[GV_GPM_DRAM_ACTIVE];
	f->activity_window_s = e->window_s;
	f->activity_busy_s = e->busy_s;
	if (isfinite(f->sm_active) && strcmp(f->group, "transfer") == 0)
		figure_set_note(f, "GPM over the timed copies (%.0f ms in a %.0f ms window): PCIe %.1f GB/s to the GPU, %.1f GB/s from it",
				e->busy_s * 1e3, e->window_s * 1e3, isfinite(f->pcie_rx_bps) ? f->pcie_rx_bps / 1e9 : 0,
				isfinite(f->pcie_tx_bps) ? f->pcie_tx_bps / 1e9 : 0);
	else if (isfinite(f->sm_active))
		figure_set_note(f, "GPM over the timed repeats (%.0f ms of GPU time in a %.0f ms window): SM active %.0f%%, "
				   "tensor %.0f%%, DRAM %.0f%%",
				e->busy_s * 1e3, e->window_s * 1e3, f->sm_active * 100,
				isfinite(f->tensor_active) ? f->tensor_active * 100 : 0,
				isfinite(f->dram_active) ? f->dram_active * 100 : 0);
}

int bench_repeat(bench_once_fn once, void *arg, int reps, double *secs, char *why, size_t n)
{
	int got = 0;
	for (int r = 0; r < reps; r++) {
		double t = once(arg, why, n);
		if (t < 0)
			return -1;
		secs[got++] = t;
		if (watchdog_expired())
			break;
	}
	return got;
}

static double t_start;

void bench_progress(bench_ctx *c, const char *fmt, ...)
{
	if (!c->o->progress)
		return;
	if (t_start == 0)
		t_start = now_seconds();
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	c->step++;
	fprintf(stderr, "\r\033[Kgpuvet bench: %s ... (%.0f s)", s, now_seconds() - t_start);
	fflush(stderr);
	free(s);
}

void bench_progress_done(bench_ctx *c)
{
	if (c->o->progress && c->step) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
}

double bench_limit(const bench_ctx *c, double full_seconds)
{
	double s = full_seconds * (c->o->quick ? 0.5 : 1.0);
	if (c->o->limit_scale > 0)
		s *= c->o->limit_scale;
	return s;
}

unsigned long long bench_mem_available(void)
{
	FILE *fp = fopen("/proc/meminfo", "r");
	if (!fp)
		return 0;
	char line[256];
	unsigned long long avail_kb = 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "MemAvailable: %llu kB", &avail_kb) == 1)
			break;
	fclose(fp);
	return avail_kb * 1024;
}

/* A verified, measured figure's median and size; false otherwise. Values, not pointers: adding
 * figures moves the report's array. */
static bool measured(const bench_report *r, const char *id, double *median, long long *size)
{
	const bench_figure *f = report_find(r, id);
	if (!f || f->skipped || f->st.n == 0 || f->verified == VERIFY_FAILED)
		return false;
	*median = f->st.median;
	*size = f->size;
	return true;
}

static void ratio(bench_ctx *c, const char *id, const char *title, double num, double den, const char *how)
{
	if (!(den > 0) || !(num > 0))
		return;
	double v = num / den;
	bench_figure *f = report_add(c->r, id, "speedup", "x", "%s", title);
	stats_summarise(&v, 1, &f->st);
	figure_set_note(f, "%s", how);
}

void bench_speedups(bench_ctx *c)
{
	double fp32, m;
	long long fp32_size, size;
	static const bench_dtype mixed[] = {DT_TF32, DT_FP16, DT_BF16, DT_FP8, DT_INT8, DT_FP64};
	bool have32 = measured(c->r, "gemm.fp32", &fp32, &fp32_size);
	for (size_t i = 0; have32 && i < GV_ARRAY_LEN(mixed); i++) {
		const char *name = dtype_get(mixed[i])->name;
		char id[48], fid[32], title[64], how[128];
		snprintf(fid, sizeof(fid), "gemm.%s", name);
		if (!measured(c->r, fid, &m, &size) || size != fp32_size)
			continue;
		snprintf(id, sizeof(id), "speedup.%s_vs_fp32", name);
		snprintf(title, sizeof(title), "%s vs fp32 GEMM", name);
		snprintf(how, sizeof(how), "%.1f vs %.1f at %lld", m, fp32, fp32_size);
		ratio(c, id, title, m, fp32, how);
	}
	static const bench_dtype cpu_types[] = {DT_FP32, DT_FP64};
	for (size_t i = 0; i < GV_ARRAY_LEN(cpu_types); i++) {
		const char *name = dtype_get(cpu_types[i])->name;
		char id[48], cid[32], gid[48], title[64], how[128];
		double cpu, gpu;
		long long cpu_size, gpu_size;
		snprintf(cid, sizeof(cid), "cpu.gemm.%s", name);
		if (!measured(c->r, cid, &cpu, &cpu_size))
			continue;
		snprintf(gid, sizeof(gid), "gemm.%s", name);
		bool have = measured(c->r, gid, &gpu, &gpu_size) && gpu_size == cpu_size;
		if (!have) {
			snprintf(gid, sizeof(gid), "gemm.%s.n%lld", name, cpu_size);
			have = measured(c->r, gid, &gpu, &gpu_size);
		}
		if (!have)
			continue;
		snprintf(id, sizeof(id), "speedup.gpu_vs_cpu.%s", name);
		snprintf(title, sizeof(title), "GPU vs CPU %s GEMM %lldx%lld", name, cpu_size, cpu_size);
		snprintf(how, sizeof(how), "%.2f vs %.3f TFLOP/s", gpu, cpu);
		ratio(c, id, title, gpu, cpu, how);
	}
}

void bench_judge(facts *f, const kb *k, findings *out)
{
	/* only the bench layer: the other layers' rules judge `gpuvet check`'s facts */
	diagnose_opts o = {.kb = k, .layer = "bench"};
	diagnose(f, &o, out);
}
