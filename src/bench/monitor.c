#include "bench/monitor.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/factkeys.h"
#include "core/util.h"
#include "nvidia/nvml.h"
#include "sampler/sampler.h"
#include "sampler/summary.h"

struct monitor {
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, paused;
	bool busy; /* a take is in progress (mu released): the sampler is not reentrant */
	int interval_ms;
	int ngpu;
	monitor_gpu_info *gpu;
	sampler *smp;
	strlist phases;
	int phase;
	job me;             /* this process: the others' processes are the ones counted */
	gpu_windows whole;  /* every sample of the run, per GPU (sampler/summary.h) */
	gpu_windows *by_phase; /* phases.n of them */
};

/* The processes on a GPU other than this one; their names and memory into text. */
static int other_processes(const gpu_sample *g, char *text, size_t n)
{
	int count = 0;
	unsigned me = (unsigned)getpid();
	if (text && n)
		text[0] = 0;
	if (!sv_has(g->nprocs))
		return -1;
	for (size_t i = 0; i < g->nproc; i++) {
		const gpu_process *p = &g->procs[i];
		if (p->pid == me)
			continue;
		count++;
		if (text && strlen(text) + 80 < n) {
			char one[160];
			if (sv_has(p->used_bytes))
				snprintf(one, sizeof(one), "%s%s (pid %u, %llu MiB)", text[0] ? ", " : "", p->name[0] ? p->name : "?",
					 p->pid, (unsigned long long)p->used_bytes.v >> 20);
			else
				snprintf(one, sizeof(one), "%s%s (pid %u)", text[0] ? ", " : "", p->name[0] ? p->name : "?", p->pid);
			strncat(text, one, n - strlen(text) - 1);
		}
	}
	/* more holders than the snapshot lists: counted, not named */
	if (g->nprocs.v > (double)g->nproc)
		count += (int)(g->nprocs.v - (double)g->nproc);
	return count;
}

/* Called with mu held; the sampler is called without it. */
static void take_samples(monitor *m)
{
	while (m->busy) /* one take at a time: the thread and monitor_sample_now share the sampler */
		pthread_cond_wait(&m->cv, &m->mu);
	int phase = m->phase;
	m->busy = true;
	pthread_mutex_unlock(&m->mu);
	char err[256];
	snapshot *snap = sampler_take(m->smp, err, sizeof(err));
	pthread_mutex_lock(&m->mu);
	m->busy = false;
	pthread_cond_broadcast(&m->cv);
	for (int g = 0; snap && g < snap->ngpus && g < m->ngpu; g++) {
		const gpu_sample *x = &snap->gpus[g];
		if (x->lost)
			continue;
		job_gpu_hold hold = job_on_gpu(&m->me, x, NULL) ? JOB_GPU_NVML : JOB_GPU_NONE;
		gpu_window_add(gpu_windows_of(&m->whole, x, 0), x, snap->time, &m->me, hold, NAN);
		if (phase >= 0)
			gpu_window_add(gpu_windows_of(&m->by_phase[phase], x, 0), x, snap->time, &m->me, hold, NAN);
	}
	snapshot_free(snap);
}

static void *run(void *arg)
{
	monitor *m = arg;
	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		if (!m->paused) {
			take_samples(m);
		}
		double wake = now_seconds() + m->interval_ms / 1000.0;
		struct timespec ts;
		ts.tv_sec = (time_t)wake;
		ts.tv_nsec = (long)((wake - (double)ts.tv_sec) * 1e9);
		while (!m->stop && now_seconds() < wake)
			if (pthread_cond_timedwait(&m->cv, &m->mu, &ts) == ETIMEDOUT)
				break;
	}
	pthread_mutex_unlock(&m->mu);
	return NULL;
}

static monitor *start(int interval_ms, bool events, char *err, size_t n)
{
	/* the one sampler (sampler/sampler.h): its first contact keeps a library that hangs or crashes
	 * out of the benchmark. No Xid sources (but for diag) and no GPM here (each benchmark's
	 * evidence has its own, bench_evidence); health counters and PCIe throughput (~40 ms of NVML
	 * calls) only in the first take, before any benchmark, and when asked for
	 * (monitor_health_snapshot); the processes every 10th (once a second) */
	sampler_opts o = {.no_events = !events, .no_kmsg = !events, .no_gpm = true, .health_every = 1 << 30,
			  .identity_every = 1 << 30, .processes_every = 10};
	sampler *smp = sampler_open(&o, err, n);
	if (!smp)
		return NULL;
	snapshot *first = sampler_take(smp, err, n);
	if (!first || first->ngpus == 0) {
		if (first)
			snprintf(err, n, "NVML reports no GPU");
		snapshot_free(first);
		sampler_close(smp);
		return NULL;
	}
	int count = first->ngpus > 64 ? 64 : first->ngpus;
	monitor *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	m->interval_ms = interval_ms > 0 ? interval_ms : 100;
	m->ngpu = count;
	m->phase = -1;
	m->smp = smp;
	m->me.root = (unsigned)getpid();
	m->me.alive = true;
	m->me.n = 1;
	m->me.pids[0] = m->me.root;
	m->gpu = xcalloc((size_t)count, sizeof(*m->gpu));
	for (int g = 0; g < count; g++) {
		const gpu_sample *x = &first->gpus[g];
		monitor_gpu_info *gi = &m->gpu[g];
		gi->index = g;
		str_copy(gi->name, sizeof(gi->name), x->name);
		str_copy(gi->uuid, sizeof(gi->uuid), x->uuid);
		str_copy(gi->serial, sizeof(gi->serial), x->serial);
		str_copy(gi->bus_id, sizeof(gi->bus_id), x->pci_bus_id);
		if (x->lost)
			continue;
		gi->max_sm_clock_mhz = sv_has(x->sm_clock_max) ? (unsigned)x->sm_clock_max.v : 0;
		gi->max_mem_clock_mhz = sv_has(x->mem_clock_max) ? (unsigned)x->mem_clock_max.v : 0;
		gi->pcie_gen_max = sv_has(x->pcie_gen_max) ? (unsigned)x->pcie_gen_max.v : 0;
		gi->pcie_width_max = sv_has(x->pcie_width_max) ? (unsigned)x->pcie_width_max.v : 0;
		gi->power_limit_w = sv_has(x->power_limit) ? x->power_limit.v : 0;
		gi->temp_slowdown_c = sv_has(x->temp_slowdown) ? (unsigned)x->temp_slowdown.v : 0;
		int others = other_processes(x, gi->procs_other, sizeof(gi->procs_other));
		gi->nprocs_other = others > 0 ? (unsigned)others : 0;
	}
	snapshot_free(first);
	if (pthread_create(&m->thread, NULL, run, m) == 0)
		m->running = true;
	return m;
}

monitor *monitor_start(int interval_ms, char *err, size_t n)
{
	return start(interval_ms, false, err, n);
}

monitor *monitor_start_events(int interval_ms, char *err, size_t n)
{
	return start(interval_ms, true, err, n);
}

snapshot *monitor_health_snapshot(monitor *m, char *err, size_t n)
{
	if (!m) {
		snprintf(err, n, "NVML is not in use");
		return NULL;
	}
	pthread_mutex_lock(&m->mu);
	while (m->busy) /* the sampler is not reentrant: wait for the thread's take */
		pthread_cond_wait(&m->cv, &m->mu);
	m->busy = true;
	pthread_mutex_unlock(&m->mu);
	sampler_want_health(m->smp);
	snapshot *snap = sampler_take(m->smp, err, n);
	pthread_mutex_lock(&m->mu);
	m->busy = false;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	return snap;
}

void monitor_stop(monitor *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->stop = true;
	pthread_cond_broadcast(&m->cv);
	pthread_mutex_unlock(&m->mu);
	if (m->running)
		pthread_join(m->thread, NULL);
	pthread_mutex_destroy(&m->mu);
	pthread_cond_destroy(&m->cv);
	sampler_close(m->smp);
	free(m->gpu);
	gpu_windows_free(&m->whole);
	for (size_t i = 0; i < m->phases.n; i++)
		gpu_windows_free(&m->by_phase[i]);
	free(m->by_phase);
	sl_free(&m->phases);
	free(m);
}

int monitor_gpu_count(const monitor *m)
{
	return m ? m->ngpu : 0;
}

const monitor_gpu_info *monitor_gpu(const monitor *m, int idx)
{
	return m && idx >= 0 && idx < m->ngpu ? &m->gpu[idx] : NULL;
}

int monitor_find_bus(const monitor *m, const char *bus_id)
{
	unsigned a[4], b[4];
	if (!m || !bus_id || sscanf(bus_id, "%x:%x:%x.%x", &a[0], &a[1], &a[2], &a[3]) != 4)
		return -1;
	for (int g = 0; g < m->ngpu; g++)
		if (sscanf(m->gpu[g].bus_id, "%x:%x:%x.%x", &b[0], &b[1], &b[2], &b[3]) == 4 && a[0] == b[0] &&
		    a[1] == b[1] && a[2] == b[2] && a[3] == b[3])
			return g;
	return -1;
}

void monitor_phase(monitor *m, const char *phase)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	if (!phase) {
		m->phase = -1;
	} else {
		int idx = -1;
		for (size_t i = 0; i < m->phases.n; i++)
			if (strcmp(m->phases.v[i], phase) == 0)
				idx = (int)i;
		if (idx < 0) {
			sl_push(&m->phases, phase);
			idx = (int)m->phases.n - 1;
			m->by_phase = xrealloc(m->by_phase, m->phases.n * sizeof(*m->by_phase));
			memset(&m->by_phase[idx], 0, sizeof(*m->by_phase));
		}
		m->phase = idx;
	}
	pthread_mutex_unlock(&m->mu);
}

void monitor_pause(monitor *m, bool paused)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->paused = paused;
	pthread_cond_broadcast(&m->cv);
	/* let a sample in progress finish, so nothing calls NVML while latencies are measured */
	while (paused && m->busy)
		pthread_cond_wait(&m->cv, &m->mu);
	pthread_mutex_unlock(&m->mu);
}

void monitor_sample_now(monitor *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	bool have = false;
	for (size_t i = 0; m->phase >= 0 && i < m->by_phase[m->phase].n && !have; i++)
		have = m->by_phase[m->phase].w[i].n > 0;
	if (!have && m->phase >= 0)
		take_samples(m);
	pthread_mutex_unlock(&m->mu);
}

bool monitor_summary_get(monitor *m, const char *phase, int gpu, monitor_summary *out)
{
	memset(out, 0, sizeof(*out));
	out->sm_clock_median = out->sm_clock_min = out->sm_clock_max = out->mem_clock_median = NAN;
	out->temp_max_c = out->power_max_w = out->power_mean_w = NAN;
	if (!m || gpu < 0 || gpu >= m->ngpu)
		return false;
	pthread_mutex_lock(&m->mu);
	const gpu_windows *set = &m->whole;
	if (phase) {
		set = NULL;
		for (size_t i = 0; i < m->phases.n; i++)
			if (strcmp(m->phases.v[i], phase) == 0)
				set = &m->by_phase[i];
	}
	const gpu_window *w = set ? gpu_windows_find(set, gpu) : NULL;
	gpu_summary s;
	if (w)
		gpu_window_summary(w, &s);
	pthread_mutex_unlock(&m->mu);
	if (!w)
		return false;
	/* the monitor's figures are the window summary's (sampler/summary.h) */
	out->samples = (size_t)s.samples;
	out->sm_clock_median = s.sm_clock_median;
	out->sm_clock_min = s.sm_clock_min;
	out->sm_clock_max = s.sm_clock_max;
	out->mem_clock_median = s.mem_clock_median;
	out->reasons = s.reasons;
	out->temp_max_c = s.temp_max;
	out->power_max_w = s.power_max;
	out->power_mean_w = s.power;
	out->pcie_gen_min = s.pcie_gen_min;
	out->pcie_gen_max = s.pcie_gen_max;
	out->pcie_width_min = s.pcie_width_min;
	out->pcie_width_max = s.pcie_width_max;
	out->other_procs = s.other_procs > 0 ? (unsigned)s.other_procs : 0;
	return out->samples > 0;
}

void monitor_facts(monitor *m, facts *f)
{
	static const char src[] = "NVML during gpuvet bench";
	if (!m)
		return;
	for (int g = 0; g < m->ngpu; g++) {
		const monitor_gpu_info *gi = &m->gpu[g];
		if (gi->name[0])
			facts_put_str(f, src, gi->name, FK_BENCH_MONITOR_GPU_NAME(d), g);
		if (gi->bus_id[0])
			facts_put_str(f, src, gi->bus_id, FK_BENCH_MONITOR_GPU_PCI_BUS_ID(d), g);
		if (gi->max_sm_clock_mhz)
			facts_put_int(f, src, gi->max_sm_clock_mhz, FK_BENCH_MONITOR_GPU_MAX_SM_CLOCK_MHZ(d), g);
		if (gi->pcie_gen_max)
			facts_put_int(f, src, gi->pcie_gen_max, FK_BENCH_MONITOR_GPU_PCIE_GEN_MAX(d), g);
		if (gi->pcie_width_max)
			facts_put_int(f, src, gi->pcie_width_max, FK_BENCH_MONITOR_GPU_PCIE_WIDTH_MAX(d), g);
		if (gi->power_limit_w > 0)
			facts_put_real(f, src, gi->power_limit_w, FK_BENCH_MONITOR_GPU_POWER_LIMIT_W(d), g);
		if (gi->temp_slowdown_c)
			facts_put_int(f, src, gi->temp_slowdown_c, FK_BENCH_MONITOR_GPU_TEMPERATURE_SLOWDOWN_C(d), g);
		facts_put_int(f, src, gi->nprocs_other, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES(d), g);
		if (gi->procs_other[0])
			facts_put_str(f, src, gi->procs_other, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES_TEXT(d), g);
		monitor_summary s;
		if (!monitor_summary_get(m, NULL, g, &s))
			continue;
		facts_put_int(f, src, (long long)s.samples, FK_BENCH_MONITOR_GPU_SAMPLES(d), g);
		if (isfinite(s.sm_clock_median)) {
			facts_put_real(f, src, s.sm_clock_median, FK_BENCH_MONITOR_GPU_SM_CLOCK_MEDIAN_MHZ(d), g);
			facts_put_real(f, src, s.sm_clock_min, FK_BENCH_MONITOR_GPU_SM_CLOCK_MIN_MHZ(d), g);
		}
		facts_put_int(f, src, (long long)s.reasons, FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS(d), g);
		char buf[256];
		facts_put_str(f, src, gv_nvml_clock_reasons_text(s.reasons, buf, sizeof(buf)),
			      FK_BENCH_MONITOR_GPU_CLOCK_EVENT_REASONS_TEXT(d), g);
		if (isfinite(s.temp_max_c))
			facts_put_real(f, src, s.temp_max_c, FK_BENCH_MONITOR_GPU_TEMPERATURE_MAX_C(d), g);
		if (isfinite(s.power_max_w))
			facts_put_real(f, src, s.power_max_w, FK_BENCH_MONITOR_GPU_POWER_MAX_W(d), g);
		if (s.other_procs > gi->nprocs_other)
			facts_put_int(f, src, s.other_procs, FK_BENCH_MONITOR_GPU_OTHER_PROCESSES(d), g);
	}
}
