/*
 * The job doctor's evidence: GPU snapshots averaged over the window, and the CPU time of every
 * thread of every process of the job (/proc/PID/task/TID/stat, fields utime and stime, read
 * through --root) at its start and end.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/json.h"
#include "core/util.h"
#include "doctor/doctor.h"
#include "nvidia/nvml.h"
#include "sampler/snapshot.h"
#include "watch/view.h"

#define ACC_MAX_THREADS 4096

typedef struct thread_ticks {
	unsigned pid, tid;
	unsigned long long ticks; /* utime + stime */
	/* /proc/PID/task/TID/schedstat: ns on a CPU and ns runnable but waiting for one; a thread
	 * that wants a core all the time (on-CPU + waiting = the window) is saturated even when
	 * other programs on the machine keep it from running */
	bool have_sched;
	unsigned long long run_ns, wait_ns;
} thread_ticks;

typedef struct acc_gpu {
	int index;
	char name[96];
	int n, nutil, ngpm[GV_GPM_N], npower, nreasons;
	double util, gpm[GV_GPM_N], power, power_limit, power_default;
	double mem_total, mem_used, job_mem, other_mem, temp_max;
	int job_procs, other_procs;
	int power_cap, thermal, hw;
	double cc;
	bool by_fd; /* found through the device files, not NVML's process list */
	double job_sm, other_sm;
	int nsm;
	bool any_gpm;
} acc_gpu;

/* A process of the job and the GPU device files (/dev/nvidiaN) it holds open. */
typedef struct fd_gpus {
	unsigned pid;
	unsigned long long minors; /* bit N: /dev/nvidiaN (N < 64) */
} fd_gpus;

struct doctor_acc {
	double t0, t1;
	size_t nfd;
	fd_gpus fd[JOB_MAX_PIDS];
	size_t nstart;
	thread_ticks start[ACC_MAX_THREADS];
	int ngpus;
	acc_gpu gpus[DOCTOR_MAX_GPUS];
	unsigned gpu_pids[JOB_MAX_PIDS];
	size_t ngpu_pids;
};

/* utime + stime of one thread; false when unreadable (it ended). */
static bool read_ticks(unsigned pid, unsigned tid, unsigned long long *out)
{
	char path[96], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	if (sysroot_read(path, 4096, &buf, &len, NULL) != 0)
		return false;
	bool ok = false;
	char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (p) {
		/* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
		char state;
		unsigned long long f[12];
		ok = sscanf(p + 1, " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &state, &f[0], &f[1],
			    &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11]) == 13;
		if (ok)
			*out = f[10] + f[11];
	}
	free(buf);
	return ok;
}

/* Every thread of every process of the job, with its ticks now. */
static size_t scan_threads(const job *j, thread_ticks *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < j->n && n < cap; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%u/task", j->pids[i]);
		DIR *d = sysroot_opendir(path);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d)) && n < cap) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			unsigned tid = (unsigned)strtoul(de->d_name, NULL, 10);
			unsigned long long t;
			if (!read_ticks(j->pids[i], tid, &t))
				continue;
			thread_ticks *x = &out[n++];
			*x = (thread_ticks){j->pids[i], tid, t, false, 0, 0};
			char sp[96];
			snprintf(sp, sizeof(sp), "/proc/%u/task/%u/schedstat", j->pids[i], tid);
			char *line = sysroot_read_line(sp);
			if (line && sscanf(line, "%llu %llu", &x->run_ns, &x->wait_ns) == 2)
				x->have_sched = true;
			free(line);
		}
		closedir(d);
	}
	return n;
}

doctor_acc *doctor_acc_new(const job *j)
{
	doctor_acc *a = xcalloc(1, sizeof(*a));
	a->t0 = now_seconds();
	a->nstart = scan_threads(j, a->start, ACC_MAX_THREADS);
	return a;
}

/* The /dev/nvidiaN each process of the job holds open: which GPUs it uses when NVML's process
 * list does not name it (a container with its own PID namespace, where NVML reports host pids). */
static void scan_fds(doctor_acc *a, const job *j)
{
	a->nfd = 0;
	for (size_t i = 0; i < j->n && a->nfd < JOB_MAX_PIDS; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%u/fd", j->pids[i]);
		DIR *d = sysroot_opendir(path);
		if (!d)
			continue;
		unsigned long long minors = 0;
		struct dirent *de;
		int seen = 0;
		while ((de = readdir(d)) && seen++ < 65536) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			char fdp[96];
			snprintf(fdp, sizeof(fdp), "/proc/%u/fd/%s", j->pids[i], de->d_name);
			char *target = sysroot_readlink(fdp);
			unsigned n;
			char rest;
			if (target && sscanf(target, "/dev/nvidia%u%c", &n, &rest) == 1 && n < 64)
				minors |= 1ULL << n;
			free(target);
		}
		closedir(d);
		if (minors)
			a->fd[a->nfd++] = (fd_gpus){j->pids[i], minors};
	}
}

/* Whether a process of the job holds this GPU's device file; adds those processes to gpu_pids. */
static bool job_on_gpu_by_fd(doctor_acc *a, const gpu_sample *g)
{
	if (g->minor < 0 || g->minor >= 64)
		return false;
	bool on = false;
	for (size_t i = 0; i < a->nfd; i++) {
		if (!(a->fd[i].minors & (1ULL << g->minor)))
			continue;
		on = true;
		bool seen = false;
		for (size_t q = 0; q < a->ngpu_pids && !seen; q++)
			seen = a->gpu_pids[q] == a->fd[i].pid;
		if (!seen && a->ngpu_pids < JOB_MAX_PIDS)
			a->gpu_pids[a->ngpu_pids++] = a->fd[i].pid;
	}
	return on;
}

static acc_gpu *acc_gpu_of(doctor_acc *a, const gpu_sample *g)
{
	for (int i = 0; i < a->ngpus; i++)
		if (a->gpus[i].index == g->index)
			return &a->gpus[i];
	if (a->ngpus >= DOCTOR_MAX_GPUS)
		return NULL;
	acc_gpu *x = &a->gpus[a->ngpus++];
	memset(x, 0, sizeof(*x));
	x->index = g->index;
	str_copy(x->name, sizeof(x->name), g->name);
	x->job_mem = x->other_mem = x->mem_used = NAN;
	x->mem_total = x->power_limit = x->power_default = x->temp_max = NAN;
	return x;
}

static double max_known(double a, double b)
{
	return isnan(a) || b > a ? b : a;
}

void doctor_acc_add(doctor_acc *a, const snapshot *s, const job *j)
{
	bool scanned = false;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		double job_mem = NAN;
		if (g->lost)
			continue;
		bool by_fd = false;
		if (!job_on_gpu(j, g, &job_mem)) {
			/* NVML may list host pids only (another PID namespace): the device files say it */
			if (!scanned) {
				scan_fds(a, j);
				scanned = true;
			}
			if (!job_on_gpu_by_fd(a, g))
				continue;
			by_fd = true;
			job_mem = NAN;
		}
		acc_gpu *x = acc_gpu_of(a, g);
		if (!x)
			continue;
		x->by_fd |= by_fd;
		x->n++;
		if (sv_has(g->util_gpu))
			x->util += g->util_gpu.v / 100, x->nutil++;
		for (int k = 0; k < GV_GPM_N; k++)
			if (sv_has(g->gpm[k]))
				x->gpm[k] += g->gpm[k].v, x->ngpm[k]++;
		if (g->gpm_support == GV_GPM_ON)
			x->any_gpm = true;
		if (sv_has(g->power))
			x->power += g->power.v, x->npower++;
		if (sv_has(g->power_limit))
			x->power_limit = g->power_limit.v;
		if (sv_has(g->power_default_limit))
			x->power_default = g->power_default_limit.v;
		if (sv_has(g->mem_total))
			x->mem_total = g->mem_total.v;
		if (sv_has(g->cc))
			x->cc = g->cc.v;
		if (sv_has(g->mem_used))
			x->mem_used = max_known(x->mem_used, g->mem_used.v);
		if (sv_has(g->temp))
			x->temp_max = max_known(x->temp_max, g->temp.v);
		if (!isnan(job_mem))
			x->job_mem = max_known(x->job_mem, job_mem);
		double other = 0;
		int others = 0, mine = 0;
		bool other_known = !by_fd; /* by the device files: NVML's pids may be the job's, seen from the host */
		for (size_t p = 0; p < g->nproc && !by_fd; p++) {
			if (job_has(j, g->procs[p].pid)) {
				mine++;
				bool seen = false;
				for (size_t q = 0; q < a->ngpu_pids && !seen; q++)
					seen = a->gpu_pids[q] == g->procs[p].pid;
				if (!seen && a->ngpu_pids < JOB_MAX_PIDS)
					a->gpu_pids[a->ngpu_pids++] = g->procs[p].pid;
				continue;
			}
			others++;
			if (sv_has(g->procs[p].used_bytes))
				other += g->procs[p].used_bytes.v;
			else
				other_known = false;
		}
		if (other_known)
			x->other_mem = max_known(x->other_mem, other);
		/* per-process SM shares, where NVML has them */
		double jsm = 0, osm = 0;
		bool sm_known = g->nproc > 0 && !by_fd;
		for (size_t p = 0; p < g->nproc && sm_known; p++) {
			if (!sv_has(g->procs[p].sm_util))
				sm_known = false;
			else if (job_has(j, g->procs[p].pid))
				jsm += g->procs[p].sm_util.v / 100;
			else
				osm += g->procs[p].sm_util.v / 100;
		}
		if (sm_known)
			x->job_sm += jsm, x->other_sm += osm, x->nsm++;
		if (mine > x->job_procs)
			x->job_procs = mine;
		if (others > x->other_procs)
			x->other_procs = others;
		if (sv_has(g->clock_reasons)) {
			unsigned long long r = (unsigned long long)g->clock_reasons.v;
			x->nreasons++;
			x->power_cap += (r & CLK_SW_POWER_CAP) != 0;
			x->thermal += (r & (CLK_SW_THERMAL | CLK_HW_THERMAL)) != 0;
			x->hw += (r & (CLK_HW_SLOWDOWN | CLK_HW_POWER_BRAKE)) != 0;
		}
	}
}

static bool is_gpu_pid(const doctor_acc *a, unsigned pid)
{
	for (size_t i = 0; i < a->ngpu_pids; i++)
		if (a->gpu_pids[i] == pid)
			return true;
	return false;
}

void doctor_acc_finish(doctor_acc *a, const job *j, doctor_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	a->t1 = now_seconds();
	ev->pid = j->root;
	ev->alive = j->alive;
	ev->seconds = a->t1 - a->t0;
	ev->tune_tf32_gain = NAN;
	ev->ngpus = a->ngpus;
	for (int i = 0; i < a->ngpus; i++) {
		const acc_gpu *x = &a->gpus[i];
		doctor_gpu *g = &ev->gpus[i];
		g->index = x->index;
		str_copy(g->name, sizeof(g->name), x->name);
		g->samples = x->n;
		g->util = x->nutil ? x->util / x->nutil : NAN;
		g->gpm = x->any_gpm;
		for (int k = 0; k < GV_GPM_N; k++)
			g->act[k] = x->ngpm[k] ? x->gpm[k] / x->ngpm[k] : NAN;
		g->mem_total = x->mem_total;
		g->mem_used = x->mem_used;
		g->job_mem = x->job_mem;
		g->other_mem = x->other_mem;
		g->job_procs = x->job_procs;
		g->other_procs = x->other_procs;
		g->power = x->npower ? x->power / x->npower : NAN;
		g->power_limit = x->power_limit;
		g->power_default_limit = x->power_default;
		g->temp_max = x->temp_max;
		g->power_cap_frac = x->nreasons ? (double)x->power_cap / x->nreasons : 0;
		g->thermal_frac = x->nreasons ? (double)x->thermal / x->nreasons : 0;
		g->hw_slowdown_frac = x->nreasons ? (double)x->hw / x->nreasons : 0;
		g->cc = x->cc;
		g->by_fd = x->by_fd;
		g->job_sm = x->nsm ? x->job_sm / x->nsm : NAN;
		g->other_sm = x->nsm ? x->other_sm / x->nsm : NAN;
	}
	/* CPU: per thread, ticks now minus ticks at the start (0 for threads born since) */
	thread_ticks *end = xcalloc(ACC_MAX_THREADS, sizeof(*end));
	size_t nend = scan_threads(j, end, ACC_MAX_THREADS);
	double hz = (double)sysconf(_SC_CLK_TCK);
	double secs = ev->seconds > 0.05 ? ev->seconds : 0.05;
	doctor_cpu *c = &ev->cpu;
	c->seconds = ev->seconds;
	typedef struct {
		unsigned pid;
		double cpu;    /* cores used, all threads */
		double demand; /* its busiest thread's demand */
	} proc_cpu;
	proc_cpu *procs = xcalloc(JOB_MAX_PIDS, sizeof(*procs));
	size_t nprocs = 0;
	for (size_t i = 0; i < nend; i++) {
		const thread_ticks *b = NULL;
		for (size_t k = 0; k < a->nstart && !b; k++)
			if (a->start[k].pid == end[i].pid && a->start[k].tid == end[i].tid)
				b = &a->start[k];
		unsigned long long before = b ? b->ticks : 0;
		double cores = end[i].ticks > before ? (double)(end[i].ticks - before) / hz / secs : 0;
		/* demand: the share of the window the thread ran or waited to run */
		double demand = cores;
		if (end[i].have_sched && (!b || b->have_sched)) {
			unsigned long long r0 = b ? b->run_ns : 0, w0 = b ? b->wait_ns : 0;
			double d = 0;
			if (end[i].run_ns >= r0)
				d += (double)(end[i].run_ns - r0);
			if (end[i].wait_ns >= w0)
				d += (double)(end[i].wait_ns - w0);
			/* a kernel without schedstats answers zeros: keep the CPU time then */
			if (d > 0)
				demand = d / 1e9 / secs;
			if (demand < cores)
				demand = cores;
			if (demand > 1)
				demand = 1;
		}
		size_t p = 0;
		while (p < nprocs && procs[p].pid != end[i].pid)
			p++;
		if (p == nprocs && nprocs < JOB_MAX_PIDS)
			procs[nprocs++] = (proc_cpu){end[i].pid, 0, 0};
		if (p < nprocs) {
			procs[p].cpu += cores;
			if (demand > procs[p].demand)
				procs[p].demand = demand;
		}
		/* a GPU process's busiest thread; with no GPU process known, the root's */
		bool main = a->ngpu_pids ? is_gpu_pid(a, end[i].pid) : end[i].pid == j->root;
		if (main && (demand > c->main_thread || !c->main_pid)) {
			c->main_thread = demand;
			c->main_pid = end[i].pid;
			c->main_tid = end[i].tid;
		}
	}
	c->nprocs = (int)j->n;
	for (size_t p = 0; p < nprocs; p++) {
		bool main = a->ngpu_pids ? is_gpu_pid(a, procs[p].pid) : procs[p].pid == j->root;
		if (main) {
			c->gpu_procs++;
			if (procs[p].cpu > c->main_cpu)
				c->main_cpu = procs[p].cpu;
		} else if (procs[p].pid != j->root) {
			/* the others but a launcher (a root that holds no GPU: torchrun, a shell) */
			c->workers++;
			c->workers_cpu += procs[p].cpu;
			if (procs[p].demand >= 0.85)
				c->workers_busy++;
		}
	}
	if (c->main_pid == 0 && a->ngpu_pids)
		c->main_pid = a->gpu_pids[0];
	free(procs);
	free(end);
}

void doctor_acc_free(doctor_acc *a)
{
	free(a);
}

void doctor_running_feed(doctor_running *r, const snapshot *s, const job *j)
{
	double now = now_seconds(), window = r->window > 0 ? r->window : 10;
	if (!r->acc) {
		/* the first snapshot only starts the window (GPM needs two samples) */
		r->acc = doctor_acc_new(j);
		r->started = now;
		return;
	}
	doctor_acc_add(r->acc, s, j);
	if (now - r->started < window)
		return;
	doctor_acc_finish(r->acc, j, &r->ev);
	doctor_acc_free(r->acc);
	doctor_diagnose(&r->ev, NULL, &r->v);
	r->have = true;
	r->acc = doctor_acc_new(j);
	r->started = now;
}

char *doctor_text(const doctor_evidence *ev, const doctor_verdict *v, const char *indent)
{
	strbuf b;
	sb_init(&b);
	sb_addf(&b, "job %u: %s [%s, %s]\n", ev->pid, v->title, v->id ? v->id : "?", doctor_level_name(v->level));
	for (size_t i = 0; i < v->nevidence; i++)
		sb_addf(&b, "%s%s\n", indent, v->evidence[i]);
	for (size_t i = 0; i < v->nnote; i++)
		sb_addf(&b, "%snote: %s\n", indent, v->note[i]);
	for (size_t i = 0; i < v->nfix; i++)
		sb_addf(&b, "%s-> %s\n", indent, v->fix[i]);
	return sb_steal(&b);
}

void doctor_running_free(doctor_running *r)
{
	doctor_acc_free(r->acc);
	r->acc = NULL;
}

static cJSON *lines(const char (*arr)[240], size_t n)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(arr[i]));
	return a;
}

cJSON *doctor_json(const doctor_evidence *ev, const doctor_verdict *v)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "schema", "gpuvet.diagnose/1");
	cJSON_AddStringToObject(root, "tool", "gpuvet " GPUVET_VERSION);
	cJSON *jb = cJSON_AddObjectToObject(root, "job");
	cJSON_AddNumberToObject(jb, "pid", ev->pid);
	cJSON_AddBoolToObject(jb, "running", ev->alive);
	cJSON_AddNumberToObject(jb, "seconds", ev->seconds);
	cJSON *cpu = cJSON_AddObjectToObject(jb, "cpu");
	cJSON_AddNumberToObject(cpu, "processes", ev->cpu.nprocs);
	cJSON_AddNumberToObject(cpu, "gpu_processes", ev->cpu.gpu_procs);
	cJSON_AddNumberToObject(cpu, "workers", ev->cpu.workers);
	cJSON_AddNumberToObject(cpu, "workers_saturated", ev->cpu.workers_busy);
	cJSON_AddNumberToObject(cpu, "workers_cores", ev->cpu.workers_cpu);
	cJSON_AddNumberToObject(cpu, "main_pid", ev->cpu.main_pid);
	cJSON_AddNumberToObject(cpu, "main_cores", ev->cpu.main_cpu);
	cJSON_AddNumberToObject(cpu, "main_busiest_thread_ratio", ev->cpu.main_thread);
	if (!isnan(ev->tune_tf32_gain)) {
		cJSON *t = cJSON_AddObjectToObject(jb, "tune");
		cJSON_AddNumberToObject(t, "amp_tf32_speedup", ev->tune_tf32_gain);
		cJSON_AddStringToObject(t, "source", ev->tune_source);
	}
	cJSON *gpus = cJSON_AddArrayToObject(root, "gpus");
	for (int i = 0; i < ev->ngpus; i++) {
		const doctor_gpu *g = &ev->gpus[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(gpus, x);
		cJSON_AddNumberToObject(x, "index", g->index);
		cJSON_AddStringToObject(x, "name", g->name);
		cJSON_AddNumberToObject(x, "samples", g->samples);
		json_add_num(x, "utilization_gpu_ratio", g->util);
		cJSON_AddBoolToObject(x, "gpm", g->gpm);
		cJSON *act = cJSON_AddObjectToObject(x, "activity");
		for (int k = 0; k < GV_GPM_N; k++) {
			char key[64];
			json_add_num(act, gv_gpm_json_key(k, key, sizeof(key)), g->gpm ? g->act[k] : NAN);
		}
		json_add_num(x, "memory_total_bytes", g->mem_total);
		json_add_num(x, "memory_used_bytes", g->mem_used);
		json_add_num(x, "job_memory_bytes", g->job_mem);
		json_add_num(x, "other_memory_bytes", g->other_mem);
		json_add_num(x, "job_sm_util_ratio", g->job_sm);
		json_add_num(x, "other_sm_util_ratio", g->other_sm);
		cJSON_AddNumberToObject(x, "job_processes", g->job_procs);
		cJSON_AddNumberToObject(x, "other_processes", g->other_procs);
		json_add_num(x, "power_w", g->power);
		json_add_num(x, "power_limit_w", g->power_limit);
		json_add_num(x, "power_default_limit_w", g->power_default_limit);
		json_add_num(x, "temperature_max_c", g->temp_max);
		cJSON_AddNumberToObject(x, "power_cap_ratio", g->power_cap_frac);
		cJSON_AddNumberToObject(x, "thermal_slowdown_ratio", g->thermal_frac);
		cJSON_AddNumberToObject(x, "hw_slowdown_ratio", g->hw_slowdown_frac);
	}
	cJSON *d = cJSON_AddObjectToObject(root, "diagnosis");
	cJSON_AddStringToObject(d, "id", v->id ? v->id : "");
	cJSON_AddStringToObject(d, "level", doctor_level_name(v->level));
	cJSON_AddStringToObject(d, "title", v->title);
	if (v->gpu >= 0)
		cJSON_AddNumberToObject(d, "gpu", v->gpu);
	else
		cJSON_AddNullToObject(d, "gpu");
	cJSON *e = cJSON_AddArrayToObject(d, "evidence");
	for (size_t i = 0; i < v->nevidence; i++)
		cJSON_AddItemToArray(e, cJSON_CreateString(v->evidence[i]));
	cJSON_AddItemToObject(d, "fix", lines((const char(*)[240])v->fix, v->nfix));
	cJSON_AddItemToObject(d, "notes", lines((const char(*)[240])v->note, v->nnote));
	return root;
}
