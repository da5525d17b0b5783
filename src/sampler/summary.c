/* One GPU over a window of samples (sampler/summary.h). */
#include "sampler/summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

void gpu_window_init(gpu_window *w, int index, const char *name)
{
	memset(w, 0, sizeof(*w));
	w->index = index;
	str_copy(w->name, sizeof(w->name), name ? name : "");
	w->power_max = w->power_limit = w->power_default = w->mem_total = w->mem_used = NAN;
	w->job_mem = w->other_mem = w->temp_max = w->sm_last = w->mclk_last = NAN;
}

static double max_known(double a, double b)
{
	return isnan(a) || b > a ? b : a;
}

static void push(double **v, size_t *n, size_t *cap, double x)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 64;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	(*v)[(*n)++] = x;
}

static void pcie_seen(int *min, int *max, sval v)
{
	if (!sv_has(v) || v.v <= 0)
		return;
	int x = (int)v.v;
	if (!*min || x < *min)
		*min = x;
	if (x > *max)
		*max = x;
}

void gpu_window_add(gpu_window *w, const gpu_sample *g, double t, const job *j, job_gpu_hold hold, double job_mem)
{
	if (g->lost)
		return;
	bool by_fd = j && hold == JOB_GPU_DEVICE;
	if (!w->n)
		w->t_first = t;
	w->t_last = t;
	w->n++;
	w->by_fd |= by_fd;
	if (!w->name[0])
		str_copy(w->name, sizeof(w->name), g->name);
	if (sv_has(g->util_gpu))
		w->util += g->util_gpu.v / 100, w->nutil++;
	for (int k = 0; k < GV_GPM_N; k++)
		if (sv_has(g->gpm[k]))
			w->gpm[k] += g->gpm[k].v, w->ngpm[k]++;
	if (g->gpm_support == GV_GPM_ON)
		w->any_gpm = true;
	if (sv_has(g->power)) {
		w->power += g->power.v, w->npower++;
		w->power_max = max_known(w->power_max, g->power.v);
	}
	if (sv_has(g->power_limit))
		w->power_limit = g->power_limit.v;
	if (sv_has(g->power_default_limit))
		w->power_default = g->power_default_limit.v;
	if (sv_has(g->mem_total))
		w->mem_total = g->mem_total.v;
	if (sv_has(g->cc))
		w->cc = g->cc.v;
	if (sv_has(g->mem_used))
		w->mem_used = max_known(w->mem_used, g->mem_used.v);
	if (sv_has(g->temp))
		w->temp_max = max_known(w->temp_max, g->temp.v);
	if (sv_has(g->sm_clock)) {
		if (!w->sums_only)
			push(&w->clk, &w->nclk, &w->cap_clk, g->sm_clock.v);
		w->sm_last = g->sm_clock.v;
		w->sm_sum += g->sm_clock.v, w->nsm_clk++;
	}
	if (sv_has(g->mem_clock)) {
		if (!w->sums_only)
			push(&w->mclk, &w->nmclk, &w->cap_mclk, g->mem_clock.v);
		w->mclk_last = g->mem_clock.v;
		w->mclk_sum += g->mem_clock.v, w->nmem_clk++;
	}
	pcie_seen(&w->pcie[0], &w->pcie[1], g->pcie_gen);
	pcie_seen(&w->pcie[2], &w->pcie[3], g->pcie_width);
	if (j && !isnan(job_mem))
		w->job_mem = max_known(w->job_mem, job_mem);
	if (!j || isnan(job_mem))
		w->job_mem_gaps = true;
	if (!w->sums_only) {
		if (w->nmem == w->cap_mem) {
			w->cap_mem = w->cap_mem ? w->cap_mem * 2 : 64;
			w->mem = xrealloc(w->mem, w->cap_mem * sizeof(*w->mem));
			w->busy = xrealloc(w->busy, w->cap_mem * sizeof(*w->busy));
		}
		w->mem[w->nmem][0] = t;
		w->mem[w->nmem][1] = j ? job_mem : NAN;
		w->mem[w->nmem][2] = sv_has(g->mem_used) ? g->mem_used.v : NAN;
		w->busy[w->nmem] = gpu_busy(sv_has(g->gpm[GV_GPM_SM_ACTIVE]) ? g->gpm[GV_GPM_SM_ACTIVE].v : NAN,
					   sv_has(g->util_gpu) ? g->util_gpu.v / 100 : NAN);
		w->nmem++;
	}

	/* the processes: the job's and the others' (by the device file, NVML's pids may be the
	 * job's seen from the host: the others are unknown then) */
	double other = 0;
	int others = 0, mine = 0;
	bool other_known = !by_fd;
	for (size_t p = 0; p < g->nproc && !by_fd; p++) {
		if (j && job_has(j, g->procs[p].pid)) {
			mine++;
			continue;
		}
		others++;
		if (sv_has(g->procs[p].used_bytes))
			other += g->procs[p].used_bytes.v;
		else
			other_known = false;
	}
	if (other_known)
		w->other_mem = max_known(w->other_mem, other);
	if (!by_fd && sv_has(g->nprocs) && g->nprocs.v > (double)g->nproc)
		others += (int)(g->nprocs.v - (double)g->nproc); /* counted by NVML, not listed */
	if (mine > w->job_procs)
		w->job_procs = mine;
	if (others > w->other_procs)
		w->other_procs = others;
	double jsm = 0, osm = 0;
	bool sm_known = g->nproc > 0 && !by_fd;
	for (size_t p = 0; p < g->nproc && sm_known; p++) {
		if (!sv_has(g->procs[p].sm_util))
			sm_known = false;
		else if (j && job_has(j, g->procs[p].pid))
			jsm += g->procs[p].sm_util.v / 100;
		else
			osm += g->procs[p].sm_util.v / 100;
	}
	if (sm_known)
		w->job_sm += jsm, w->other_sm += osm, w->nsm++;
	if (sv_has(g->clock_reasons)) {
		unsigned long long r = (unsigned long long)g->clock_reasons.v;
		w->reasons |= r;
		w->nreasons++;
		w->power_cap += (r & CLK_SW_POWER_CAP) != 0;
		w->thermal += (r & (CLK_SW_THERMAL | CLK_HW_THERMAL)) != 0;
		w->hw += (r & (CLK_HW_SLOWDOWN | CLK_HW_POWER_BRAKE)) != 0;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* median, min and max of v[0..n) (n > 0), v unchanged */
static void order_stats(const double *v, size_t n, double *median, double *min, double *max)
{
	double *c = xmalloc(n * sizeof(*c));
	memcpy(c, v, n * sizeof(*c));
	qsort(c, n, sizeof(*c), cmp_double);
	*median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	if (min)
		*min = c[0];
	if (max)
		*max = c[n - 1];
	free(c);
}

/* The memory series (column col of w->mem): its line, ends and steadiness. */
static void growth(const gpu_window *w, int col, gpu_summary *o)
{
	size_t n = 0;
	double st = 0, sm = 0, stt = 0, stm = 0, first = NAN, last = NAN;
	for (size_t i = 0; i < w->nmem; i++) {
		double t = w->mem[i][0] - w->t_first, m = w->mem[i][col];
		if (isnan(m))
			continue;
		n++;
		st += t, sm += m, stt += t * t, stm += t * m;
		if (isnan(first))
			first = m;
		last = m;
	}
	o->mem_first = first;
	o->mem_last = last;
	double den = (double)n * stt - st * st;
	if (n < 4 || !(den > 0))
		return;
	o->mem_growth = ((double)n * stm - st * sm) / den;
	/* steady: the highest value of each quarter of the window above the quarter's before it, so
	 * one allocation (a step) or a ramp that levels off is not a growth */
	double span = w->t_last - w->t_first, q[4] = {NAN, NAN, NAN, NAN};
	if (!(span > 0))
		return;
	for (size_t i = 0; i < w->nmem; i++) {
		double m = w->mem[i][col];
		if (isnan(m))
			continue;
		int k = (int)((w->mem[i][0] - w->t_first) / span * 4);
		k = k < 0 ? 0 : k > 3 ? 3 : k;
		q[k] = max_known(q[k], m);
	}
	o->mem_steady = q[0] < q[1] && q[1] < q[2] && q[2] < q[3]; /* false with an empty quarter (NAN) */
}

double gpu_busy(double sm_active, double util)
{
	return !isnan(sm_active) ? sm_active : util;
}

/* Whether samples [a, b) of the busy series are one phase: idle (mean under PHASE_IDLE, none at
 * PHASE_BUSY) or busy (mean at least PHASE_BUSY, none under PHASE_IDLE); *mean their mean. */
static int phase_of(const double *busy, size_t a, size_t b, double *mean)
{
	double sum = 0, lo = INFINITY, hi = -INFINITY;
	size_t n = 0;
	for (size_t i = a; i < b; i++) {
		if (isnan(busy[i]))
			continue;
		sum += busy[i];
		lo = busy[i] < lo ? busy[i] : lo;
		hi = busy[i] > hi ? busy[i] : hi;
		n++;
	}
	if (n < 2)
		return 0;
	*mean = sum / (double)n;
	if (*mean < PHASE_IDLE && hi < PHASE_BUSY)
		return -1;
	if (*mean >= PHASE_BUSY && lo >= PHASE_IDLE)
		return 1;
	return 0;
}

/* An idle part and a busy part, the one after the other (gpu_summary.phase_t). */
static void phases(const gpu_window *w, gpu_summary *o)
{
	o->phase_t = o->busy_before = o->busy_after = NAN;
	size_t n = w->nmem, least = n / 4 > 2 ? n / 4 : 2;
	if (!w->busy || n < 2 * least)
		return;
	double best = 0;
	for (size_t k = least; k + least <= n; k++) {
		double before, after;
		int p = phase_of(w->busy, 0, k, &before), q = phase_of(w->busy, k, n, &after);
		if (p && q && p != q && fabs(after - before) > best) {
			best = fabs(after - before);
			o->phase_t = w->mem[k][0] - w->t_first;
			o->busy_before = before;
			o->busy_after = after;
		}
	}
}

void gpu_window_summary(const gpu_window *w, gpu_summary *o)
{
	memset(o, 0, sizeof(*o));
	o->index = w->index;
	str_copy(o->name, sizeof(o->name), w->name);
	o->samples = w->n;
	o->t_first = w->t_first;
	o->t_last = w->t_last;
	o->util = w->nutil ? w->util / w->nutil : NAN;
	o->gpm = w->any_gpm;
	for (int k = 0; k < GV_GPM_N; k++)
		o->act[k] = w->ngpm[k] ? w->gpm[k] / w->ngpm[k] : NAN;
	o->cc = w->cc;
	o->mem_total = w->mem_total;
	o->mem_used = w->mem_used;
	o->job_mem = w->job_mem;
	o->other_mem = w->other_mem;
	o->mem_growth = o->mem_first = o->mem_last = NAN;
	o->mem_growth_gpu = w->job_mem_gaps;
	growth(w, w->job_mem_gaps ? 2 : 1, o);
	o->job_sm = w->nsm ? w->job_sm / w->nsm : NAN;
	o->other_sm = w->nsm ? w->other_sm / w->nsm : NAN;
	o->job_procs = w->job_procs;
	o->by_fd = w->by_fd;
	o->other_procs = w->other_procs;
	o->power = w->npower ? w->power / w->npower : NAN;
	o->power_max = w->power_max;
	o->power_limit = w->power_limit;
	o->power_default_limit = w->power_default;
	o->temp_max = w->temp_max;
	o->reasons = w->reasons;
	o->power_cap_frac = w->nreasons ? (double)w->power_cap / w->nreasons : 0;
	o->thermal_frac = w->nreasons ? (double)w->thermal / w->nreasons : 0;
	o->hw_slowdown_frac = w->nreasons ? (double)w->hw / w->nreasons : 0;
	o->sm_clock_median = o->sm_clock_min = o->sm_clock_max = o->mem_clock_median = NAN;
	if (w->nclk)
		order_stats(w->clk, w->nclk, &o->sm_clock_median, &o->sm_clock_min, &o->sm_clock_max);
	if (w->nmclk)
		order_stats(w->mclk, w->nmclk, &o->mem_clock_median, NULL, NULL);
	o->sm_clock_last = w->sm_last;
	o->mem_clock_last = w->mclk_last;
	o->sm_clock_mean = w->nsm_clk ? w->sm_sum / w->nsm_clk : NAN;
	o->mem_clock_mean = w->nmem_clk ? w->mclk_sum / w->nmem_clk : NAN;
	o->pcie_gen_min = w->pcie[0];
	o->pcie_gen_max = w->pcie[1];
	o->pcie_width_min = w->pcie[2];
	o->pcie_width_max = w->pcie[3];
	phases(w, o);
}

void gpu_window_free(gpu_window *w)
{
	free(w->clk);
	free(w->mclk);
	free(w->mem);
	free(w->busy);
	w->clk = w->mclk = NULL;
	w->mem = NULL;
	w->busy = NULL;
	w->nclk = w->nmclk = w->nmem = w->cap_clk = w->cap_mclk = w->cap_mem = 0;
}

gpu_window *gpu_windows_find(const gpu_windows *s, int index)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->w[i].index == index)
			return &s->w[i];
	return NULL;
}

gpu_window *gpu_windows_of(gpu_windows *s, const gpu_sample *g, size_t max)
{
	gpu_window *w = gpu_windows_find(s, g->index);
	if (w)
		return w;
	if (max && s->n >= max)
		return NULL;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->w = xrealloc(s->w, s->cap * sizeof(*s->w));
	}
	w = &s->w[s->n++];
	gpu_window_init(w, g->index, g->name);
	w->sums_only = s->sums_only;
	return w;
}

void gpu_windows_free(gpu_windows *s)
{
	for (size_t i = 0; i < s->n; i++)
		gpu_window_free(&s->w[i]);
	free(s->w);
	bool sums_only = s->sums_only;
	memset(s, 0, sizeof(*s));
	s->sums_only = sums_only;
}
