#include "bench/monitor.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/stats.h"
#include "core/factkeys.h"
#include "core/util.h"
#include "nvidia/contact.h"
#include "nvidia/nvml.h"

typedef struct sample {
	int phase; /* index into phases, -1 none */
	int gpu;
	double t;
	double sm_mhz, mem_mhz, temp_c, power_w; /* NAN unknown */
	unsigned long long reasons;
	bool reasons_ok;
	int pcie_gen, pcie_width; /* 0 unknown */
	int other_procs;          /* -1 not sampled */
	double act[GV_GPM_N];     /* GPM counters since the previous sample (nvidia/gpm_fields.h), NAN unknown */
} sample;

struct monitor {
	pthread_t thread;
	bool running;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, paused;
	bool busy; /* the thread is in NVML calls (mu released) */
	int interval_ms;
	int ngpu;
	monitor_gpu_info *gpu;
	gv_nvml_device *snap; /* per GPU, kept between samples */
	gv_gpm **gpm;         /* per GPU, NULL without GPM */
	strlist phases;
	int phase;
	sample *s;
	size_t ns, cap;
	unsigned tick;
};

static int other_processes(const gv_nvml_device *d, char *text, size_t n)
{
	int count = 0;
	pid_t me = getpid();
	if (text && n)
		text[0] = 0;
	if (d->procs_st != GV_V_OK)
		return 0;
	for (unsigned i = 0; i < d->nprocs; i++) {
		if ((pid_t)d->procs[i].pid == me)
			continue;
		count++;
		if (text && strlen(text) + 80 < n) {
			char one[160];
			if (d->procs[i].used_bytes != NVML_VALUE_NOT_AVAILABLE_ULL)
				snprintf(one, sizeof(one), "%s%s (pid %u, %llu MiB)", text[0] ? ", " : "",
					 d->procs[i].name[0] ? d->procs[i].name : "?", d->procs[i].pid,
					 d->procs[i].used_bytes >> 20);
			else
				snprintf(one, sizeof(one), "%s%s (pid %u)", text[0] ? ", " : "",
					 d->procs[i].name[0] ? d->procs[i].name : "?", d->procs[i].pid);
			strncat(text, one, n - strlen(text) - 1);
		}
	}
	return count;
}

/* Called with mu held; NVML calls are made without it. */
static void take_samples(monitor *m, bool procs, bool wait_gpm)
{
	while (m->busy) /* one sampler at a time: the thread and monitor_sample_now share m->snap */
		pthread_cond_wait(&m->cv, &m->mu);
	int phase = m->phase;
	m->busy = true;
	pthread_mutex_unlock(&m->mu);
	sample *tmp = xcalloc((size_t)m->ngpu, sizeof(*tmp));
	if (wait_gpm) {
		/* a phase shorter than the interval: its one sample waits for the 100 ms GPM needs */
		double wait = 0;
		for (int g = 0; g < m->ngpu; g++)
			if (gv_gpm_wait(m->gpm[g]) > wait)
				wait = gv_gpm_wait(m->gpm[g]);
		if (wait > 0) {
			struct timespec ts = {0, (long)(wait * 1e9) + 1000000};
			nanosleep(&ts, NULL);
		}
	}
	for (int g = 0; g < m->ngpu; g++) {
		gv_nvml_device *d = &m->snap[g];
		unsigned what = GV_NVML_DYNAMIC | (procs ? GV_NVML_PROCESSES : 0);
		sample *x = &tmp[g];
		x->gpu = g;
		x->phase = phase;
		x->t = now_seconds();
		x->sm_mhz = x->mem_mhz = x->temp_c = x->power_w = NAN;
		x->other_procs = -1;
		for (int k = 0; k < GV_GPM_N; k++)
			x->act[k] = NAN;
		if (m->gpm[g] && gv_gpm_wait(m->gpm[g]) == 0) {
			/* the counters since the previous sample (at least 100 ms ago): what the phase loaded */
			gv_nv_dbl v[GV_GPM_N];
			gv_gpm_take(m->gpm[g], v);
			for (int k = 0; k < GV_GPM_N; k++)
				if (v[k].st == GV_V_OK)
					x->act[k] = v[k].v;
		}
		if (gv_nvml_device_snapshot((unsigned)g, what, d) != NVML_SUCCESS)
			continue;
		if (GV_OK(d->sm_clock_mhz))
			x->sm_mhz = (double)d->sm_clock_mhz.v;
		if (GV_OK(d->mem_clock_mhz))
			x->mem_mhz = (double)d->mem_clock_mhz.v;
		if (GV_OK(d->temperature_c))
			x->temp_c = (double)d->temperature_c.v;
		if (GV_OK(d->power_mw))
			x->power_w = (double)d->power_mw.v / 1000.0;
		if (GV_OK(d->clock_event_reasons)) {
			x->reasons = d->clock_event_reasons.v;
			x->reasons_ok = true;
		}
		if (GV_OK(d->pcie_gen))
			x->pcie_gen = (int)d->pcie_gen.v;
		if (GV_OK(d->pcie_width))
			x->pcie_width = (int)d->pcie_width.v;
		if (procs)
			x->other_procs = other_processes(d, NULL, 0);
	}
	pthread_mutex_lock(&m->mu);
	m->busy = false;
	pthread_cond_broadcast(&m->cv);
	for (int g = 0; g < m->ngpu; g++) {
		if (m->ns == m->cap) {
			m->cap = m->cap ? m->cap * 2 : 1024;
			m->s = xrealloc(m->s, m->cap * sizeof(*m->s));
		}
		m->s[m->ns++] = tmp[g];
	}
	free(tmp);
}

static void *run(void *arg)
{
	monitor *m = arg;
	pthread_mutex_lock(&m->mu);
	while (!m->stop) {
		if (!m->paused) {
			take_samples(m, m->tick % 10 == 0, false);
			m->tick++;
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

monitor *monitor_start(int interval_ms, char *err, size_t n)
{
	if (!gv_nvml_first_contact(err, n)) /* a library that hangs or crashes stays out of the benchmark */
		return NULL;
	nvmlReturn_t rc = gv_nvml_init_quiet();
	if (rc != NVML_SUCCESS) {
		gv_nvml_status st;
		gv_nvml_status_get(&st);
		if (!st.loaded)
			snprintf(err, n, "NVML does not load (%s): %s", st.path[0] ? st.path : "libnvidia-ml.so.1",
				 st.error[0] ? st.error : "not found");
		else
			snprintf(err, n, "nvmlInit failed: %s", gv_nvml_error_string(rc));
		return NULL;
	}
	unsigned count = 0;
	if (gv_nvml_device_count(&count) != NVML_SUCCESS || count == 0) {
		snprintf(err, n, "NVML reports no GPU");
		return NULL;
	}
	if (count > 64)
		count = 64;
	monitor *m = xcalloc(1, sizeof(*m));
	pthread_mutex_init(&m->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&m->cv, &ca);
	pthread_condattr_destroy(&ca);
	m->interval_ms = interval_ms > 0 ? interval_ms : 100;
	m->ngpu = (int)count;
	m->phase = -1;
	m->gpu = xcalloc(count, sizeof(*m->gpu));
	m->snap = xcalloc(count, sizeof(*m->snap));
	m->gpm = xcalloc(count, sizeof(*m->gpm));
	for (unsigned g = 0; g < count; g++) {
		gv_gpm_support sup;
		nvmlReturn_t grc;
		m->gpm[g] = gv_gpm_open(g, &sup, &grc);
		if (m->gpm[g]) {
			gv_nv_dbl v[GV_GPM_N];
			gv_gpm_take(m->gpm[g], v); /* the first sample starts the first interval */
		}
	}
	for (unsigned g = 0; g < count; g++) {
		gv_nvml_device *d = &m->snap[g];
		monitor_gpu_info *gi = &m->gpu[g];
		gv_nvml_device_clear(d);
		gi->index = (int)g;
		if (gv_nvml_device_snapshot(g, GV_NVML_IDENTITY | GV_NVML_PROCESSES, d) != NVML_SUCCESS)
			continue;
		if (GV_OK(d->name))
			str_copy(gi->name, sizeof(gi->name), d->name.v);
		if (GV_OK(d->uuid))
			str_copy(gi->uuid, sizeof(gi->uuid), d->uuid.v);
		if (GV_OK(d->pci_bus_id))
			str_copy(gi->bus_id, sizeof(gi->bus_id), d->pci_bus_id.v);
		if (GV_OK(d->max_sm_clock_mhz))
			gi->max_sm_clock_mhz = (unsigned)d->max_sm_clock_mhz.v;
		if (GV_OK(d->max_mem_clock_mhz))
			gi->max_mem_clock_mhz = (unsigned)d->max_mem_clock_mhz.v;
		if (GV_OK(d->pcie_gen_max))
			gi->pcie_gen_max = (unsigned)d->pcie_gen_max.v;
		if (GV_OK(d->pcie_width_max))
			gi->pcie_width_max = (unsigned)d->pcie_width_max.v;
		if (GV_OK(d->power_limit_mw))
			gi->power_limit_w = (double)d->power_limit_mw.v / 1000.0;
		if (GV_OK(d->temp_slowdown_c))
			gi->temp_slowdown_c = (unsigned)d->temp_slowdown_c.v;
		gi->nprocs_other = (unsigned)other_processes(d, gi->procs_other, sizeof(gi->procs_other));
	}
	if (pthread_create(&m->thread, NULL, run, m) == 0)
		m->running = true;
	return m;
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
	for (int g = 0; g < m->ngpu; g++)
		gv_gpm_close(m->gpm[g]);
	free(m->gpm);
	free(m->gpu);
	free(m->snap);
	free(m->s);
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
	/* a sample of the phase; with GPM one that has its counters (the thread skips GPM when the
	 * previous GPM sample is under 100 ms old) */
	for (size_t i = m->ns; i > 0 && !have && m->phase >= 0; i--) {
		const sample *x = &m->s[i - 1];
		have = x->phase == m->phase && (!m->gpm[x->gpu] || isfinite(x->act[GV_GPM_SM_ACTIVE]));
	}
	if (!have && m->phase >= 0)
		take_samples(m, false, true);
	pthread_mutex_unlock(&m->mu);
}

bool monitor_summary_get(monitor *m, const char *phase, int gpu, monitor_summary *out)
{
	memset(out, 0, sizeof(*out));
	out->sm_clock_median = out->sm_clock_min = out->sm_clock_max = NAN;
	out->temp_max_c = out->power_max_w = out->power_mean_w = NAN;
	double psum = 0, asum[GV_GPM_N] = {0};
	size_t pn = 0, an[GV_GPM_N] = {0};
	for (int k = 0; k < GV_GPM_N; k++)
		out->act_mean[k] = NAN;
	if (!m || gpu < 0 || gpu >= m->ngpu)
		return false;
	pthread_mutex_lock(&m->mu);
	int want = -2; /* -2: whole run */
	if (phase) {
		want = -3;
		for (size_t i = 0; i < m->phases.n; i++)
			if (strcmp(m->phases.v[i], phase) == 0)
				want = (int)i;
	}
	double *clk = xmalloc((m->ns + 1) * sizeof(double));
	double *mclk = xmalloc((m->ns + 1) * sizeof(double));
	size_t nclk = 0, nmclk = 0;
	for (size_t i = 0; i < m->ns; i++) {
		const sample *x = &m->s[i];
		if (x->gpu != gpu || (want != -2 && x->phase != want))
			continue;
		out->samples++;
		if (isfinite(x->sm_mhz))
			clk[nclk++] = x->sm_mhz;
		if (isfinite(x->mem_mhz))
			mclk[nmclk++] = x->mem_mhz;
		if (x->reasons_ok)
			out->reasons |= x->reasons;
		if (isfinite(x->temp_c) && !(x->temp_c <= out->temp_max_c))
			out->temp_max_c = x->temp_c;
		if (isfinite(x->power_w)) {
			if (!(x->power_w <= out->power_max_w))
				out->power_max_w = x->power_w;
			psum += x->power_w;
			pn++;
		}
		if (x->pcie_gen > 0) {
			if (!out->pcie_gen_min || x->pcie_gen < out->pcie_gen_min)
				out->pcie_gen_min = x->pcie_gen;
			if (x->pcie_gen > out->pcie_gen_max)
				out->pcie_gen_max = x->pcie_gen;
		}
		if (x->pcie_width > 0) {
			if (!out->pcie_width_min || x->pcie_width < out->pcie_width_min)
				out->pcie_width_min = x->pcie_width;
			if (x->pcie_width > out->pcie_width_max)
				out->pcie_width_max = x->pcie_width;
		}
		if (x->other_procs > 0 && (unsigned)x->other_procs > out->other_procs)
			out->other_procs = (unsigned)x->other_procs;
		for (int k = 0; k < GV_GPM_N; k++)
			if (isfinite(x->act[k]))
				asum[k] += x->act[k], an[k]++;
	}
	for (int k = 0; k < GV_GPM_N; k++)
		if (an[k])
			out->act_mean[k] = asum[k] / (double)an[k];
	pthread_mutex_unlock(&m->mu);
	if (pn)
		out->power_mean_w = psum / (double)pn;
	bench_stats st;
	if (stats_summarise(clk, nclk, &st)) {
		out->sm_clock_median = st.median;
		out->sm_clock_min = st.min;
		out->sm_clock_max = st.max;
	}
	out->mem_clock_median = nmclk ? stats_median(mclk, nmclk) : NAN;
	free(clk);
	free(mclk);
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
