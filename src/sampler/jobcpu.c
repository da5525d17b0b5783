/* The CPU side of a job (sampler/jobcpu.h). */
#include "sampler/jobcpu.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"

bool proc_stat_ticks(const char *text, unsigned long long *ticks)
{
	const char *p = text ? strrchr(text, ')') : NULL; /* comm may hold spaces and parentheses */
	if (!p)
		return false;
	/* after ") ": state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
	char state;
	unsigned long long f[12];
	if (sscanf(p + 1, " %c %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &state, &f[0], &f[1], &f[2],
		   &f[3], &f[4], &f[5], &f[6], &f[7], &f[8], &f[9], &f[10], &f[11]) != 13)
		return false;
	*ticks = f[10] + f[11];
	return true;
}

bool proc_status_vol_switches(const char *text, unsigned long long *out)
{
	static const char key[] = "voluntary_ctxt_switches:";
	/* the line starts with the key: "nonvoluntary_ctxt_switches:" holds it too */
	for (const char *p = text; p && (p = strstr(p, key)); p += sizeof(key) - 1) {
		if (p != text && p[-1] != '\n')
			continue;
		char *end;
		unsigned long long v = strtoull(p + sizeof(key) - 1, &end, 10);
		if (end == p + sizeof(key) - 1)
			return false;
		*out = v;
		return true;
	}
	return false;
}

bool proc_stat_starttime(const char *text, unsigned long long *start)
{
	const char *p = text ? strrchr(text, ')') : NULL;
	if (!p)
		return false;
	/* after ") ": state(3), then fields 4-21 (ppid .. itrealvalue; priority and nice may be negative),
	 * then starttime(22) */
	char state;
	int used = 0;
	if (sscanf(p + 1, " %c%n", &state, &used) != 1)
		return false;
	p += 1 + used;
	for (int field = 4; field <= 22; field++) {
		while (*p == ' ')
			p++;
		char *end;
		if (field < 22) {
			(void)strtoll(p, &end, 10);
		} else {
			if (*p == '-')
				return false;
			*start = strtoull(p, &end, 10);
		}
		if (end == p)
			return false;
		p = end;
	}
	return true;
}

/* utime + stime of one thread and the ticks after boot when it started (0: unknown); false when
 * unreadable (it ended). */
static bool read_ticks(unsigned pid, unsigned tid, unsigned long long *out, unsigned long long *start)
{
	char path[96], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	if (sysroot_read(path, 4096, &buf, &len, NULL) != 0)
		return false;
	bool ok = proc_stat_ticks(buf, out);
	if (ok && !proc_stat_starttime(buf, start))
		*start = 0;
	free(buf);
	return ok;
}

int cpu_stat_idle(const char *text, unsigned long long *idle, int max)
{
	int n = 0;
	for (int i = 0; i < max; i++)
		idle[i] = ~0ULL;
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		unsigned cpu;
		unsigned long long f[5];
		/* cpuN user nice system idle iowait ... */
		if (sscanf(line, "cpu%u %llu %llu %llu %llu %llu", &cpu, &f[0], &f[1], &f[2], &f[3], &f[4]) == 6 &&
		    cpu < (unsigned)max) {
			idle[cpu] = f[3] + f[4];
			if ((int)cpu + 1 > n)
				n = (int)cpu + 1;
		}
		line = nl ? nl + 1 : NULL;
	}
	return n;
}

/* /proc/stat's cpuN lines: idle + iowait per CPU. */
static void read_cpus(job_cpu_mark *m)
{
	char *buf = NULL;
	size_t len = 0;
	m->t_cpus = now_seconds();
	if (sysroot_read("/proc/stat", 1 << 20, &buf, &len, NULL) != 0)
		return;
	m->cpu_idle = xmalloc(JOBCPU_MAX_CPUS * sizeof(*m->cpu_idle));
	m->ncpus = cpu_stat_idle(buf, m->cpu_idle, JOBCPU_MAX_CPUS);
	free(buf);
}

void job_cpu_mark_take(job_cpu_mark *m, const job *j)
{
	memset(m, 0, sizeof(*m));
	m->t = now_seconds();
	m->threads = xcalloc(JOBCPU_MAX_THREADS, sizeof(*m->threads));
	/* the seconds since boot (as the threads' start times count them) at m->t */
	double hz = (double)sysconf(_SC_CLK_TCK), uptime = NAN;
	char *up = sysroot_read_line("/proc/uptime");
	if (up)
		uptime = strtod(up, NULL);
	free(up);
	for (size_t i = 0; i < j->n && m->nthreads < JOBCPU_MAX_THREADS; i++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%u/task", j->pids[i]);
		DIR *d = sysroot_opendir(path);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d)) && m->nthreads < JOBCPU_MAX_THREADS) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			unsigned tid = (unsigned)strtoul(de->d_name, NULL, 10);
			unsigned long long t, start;
			if (!read_ticks(j->pids[i], tid, &t, &start))
				continue;
			thread_cpu *x = &m->threads[m->nthreads++];
			*x = (thread_cpu){.pid = j->pids[i], .tid = tid, .ticks = t, .t = now_seconds()};
			if (start > 0 && uptime > 0 && hz > 0 && (double)start / hz <= uptime)
				x->born = m->t - (uptime - (double)start / hz);
			char sp[96];
			snprintf(sp, sizeof(sp), "/proc/%u/task/%u/schedstat", j->pids[i], tid);
			char *line = sysroot_read_line(sp);
			if (line && sscanf(line, "%llu %llu", &x->run_ns, &x->wait_ns) == 2)
				x->have_sched = true;
			free(line);
			/* the times it gave its CPU up itself: with them a busy thread that never blocked
			 * reads as wanting its core all the time, whatever the run delay says (below) */
			char *st = NULL;
			size_t stlen = 0;
			snprintf(sp, sizeof(sp), "/proc/%u/task/%u/status", j->pids[i], tid);
			if (sysroot_read(sp, 8192, &st, &stlen, NULL) == 0)
				x->have_vol = proc_status_vol_switches(st, &x->vol_switches);
			free(st);
			snprintf(sp, sizeof(sp), "/proc/%u/task/%u/comm", j->pids[i], tid);
			line = sysroot_read_line(sp);
			if (line)
				str_copy(x->comm, sizeof(x->comm), line);
			free(line);
		}
		closedir(d);
	}
	read_cpus(m);
}

void job_cpu_mark_free(job_cpu_mark *m)
{
	free(m->threads);
	free(m->cpu_idle);
	memset(m, 0, sizeof(*m));
}

int cpu_list_parse(const char *list, unsigned char *mask, size_t mask_bytes)
{
	memset(mask, 0, mask_bytes);
	int n = 0;
	const char *p = list;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return -1;
	while (*p) {
		char *end;
		unsigned long a = strtoul(p, &end, 10), b;
		if (end == p)
			return -1;
		b = a;
		p = end;
		if (*p == '-') {
			b = strtoul(p + 1, &end, 10);
			if (end == p + 1 || b < a)
				return -1;
			p = end;
		}
		for (unsigned long c = a; c <= b && c < mask_bytes * 8; c++)
			if (!(mask[c / 8] & (1u << (c % 8)))) {
				mask[c / 8] |= (unsigned char)(1u << (c % 8));
				n++;
			}
		if (*p == ',')
			p++;
		else if (*p && *p != '\n' && *p != ' ')
			return -1;
		else
			break;
	}
	return n;
}

double cpu_max_parse(const char *text)
{
	char quota[32];
	double period;
	if (!text || sscanf(text, "%31s %lf", quota, &period) != 2 || strcmp(quota, "max") == 0 || !(period > 0))
		return NAN;
	char *end;
	double q = strtod(quota, &end);
	if (*end != '\0' || !(q > 0))
		return NAN;
	/* a tiny quota over a huge period underflows to 0, a huge one overflows: neither is a quota */
	double cores = q / period;
	return isfinite(cores) && cores > 0 ? cores : NAN;
}

/* The cgroup's CPU quota in cores (v2 cpu.max, v1 cpu.cfs_quota_us / cpu.cfs_period_us). */
static double cgroup_quota(unsigned pid)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/cgroup", pid);
	if (sysroot_read_may_deny(path, 65536, &buf, &len, NULL) != 0)
		return NAN;
	double q = NAN;
	for (char *line = buf; line && *line && isnan(q);) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		/* "0::/kubepods/pod.../cri-containerd-..." (v2) or "4:cpu,cpuacct:/slurm/uid_1/job_42" (v1) */
		char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (c2 && c2[1] == '/') {
			char file[PATH_MAX];
			*c2 = '\0';
			const char *ctrl = c1 + 1, *cg = c2 + 1;
			if (!*ctrl) {
				snprintf(file, sizeof(file), "/sys/fs/cgroup%s/cpu.max", strcmp(cg, "/") ? cg : "");
				char *t = sysroot_read_line(file);
				q = cpu_max_parse(t);
				free(t);
			} else if (strstr(ctrl, "cpu") && (strstr(ctrl, "cpu,") || strcmp(ctrl, "cpu") == 0 ||
							   strstr(ctrl, ",cpu"))) {
				char qf[PATH_MAX], *a, *b;
				snprintf(qf, sizeof(qf), "/sys/fs/cgroup/%s%s/cpu.cfs_quota_us", ctrl, strcmp(cg, "/") ? cg : "");
				snprintf(file, sizeof(file), "/sys/fs/cgroup/%s%s/cpu.cfs_period_us", ctrl, strcmp(cg, "/") ? cg : "");
				a = sysroot_read_line(qf);
				b = sysroot_read_line(file);
				double quota = a ? atof(a) : -1, period = b ? atof(b) : 0;
				if (quota > 0 && period > 0)
					q = quota / period;
				free(a);
				free(b);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(buf);
	return q;
}

void job_cpu_limits(unsigned pid, cpu_limits *out)
{
	memset(out, 0, sizeof(*out));
	out->quota_cores = cgroup_quota(pid);
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (sysroot_read(path, 65536, &buf, &len, NULL) != 0)
		return;
	const char *p = strstr(buf, "\nCpus_allowed_list:");
	if (p) {
		int n = cpu_list_parse(p + strlen("\nCpus_allowed_list:"), out->allowed, sizeof(out->allowed));
		out->nallowed = n > 0 ? n : 0;
	}
	free(buf);
}

size_t job_cpu_between(const job_cpu_mark *a, const job_cpu_mark *b, double hz, thread_use *out)
{
	double window = b->t - a->t > 0.05 ? b->t - a->t : 0.05;
	size_t n = 0;
	for (size_t i = 0; i < b->nthreads; i++) {
		const thread_cpu *e = &b->threads[i], *s = NULL;
		for (size_t k = 0; k < a->nthreads && !s; k++)
			if (a->threads[k].pid == e->pid && a->threads[k].tid == e->tid)
				s = &a->threads[k];
		/* between the thread's own two readings where both were timed; a thread the first mark did
		 * not see (a DataLoader worker forked after it) since its birth, where that is known */
		double secs = window;
		if (s && s->t > 0 && e->t > s->t + 0.05)
			secs = e->t - s->t;
		else if (!s && e->born > 0) {
			double since = (e->t > 0 ? e->t : b->t) - e->born;
			secs = since > 0.05 ? since : 0.05;
		}
		unsigned long long before = s ? s->ticks : 0;
		double cores = e->ticks > before ? (double)(e->ticks - before) / hz / secs : 0;
		double demand = cores;
		if (e->have_sched && (!s || s->have_sched)) {
			unsigned long long r0 = s ? s->run_ns : 0, w0 = s ? s->wait_ns : 0;
			double d = 0;
			if (e->run_ns >= r0)
				d += (double)(e->run_ns - r0);
			if (e->wait_ns >= w0)
				d += (double)(e->wait_ns - w0);
			/* a kernel without schedstats answers zeros: keep the CPU time then */
			if (d > 0)
				demand = d / 1e9 / secs;
			if (demand < cores)
				demand = cores;
		}
		/* a busy thread that never gave its CPU up itself wanted the core all the time: what it
		 * did not get, other programs took. The run delay says so too where the kernel counts it,
		 * but not always: some kernels count none ("N 0 n", CI's), and a wait still in progress at
		 * a reading is not in it yet (a spinning thread read 85% of a core over a 1.5 s window on
		 * a loaded 2-core machine with the delay counted). A thread born since the first mark
		 * counts its switches from 0, as its CPU time. */
		unsigned long long vol0 = s ? s->vol_switches : 0;
		if (demand < 1 && e->have_vol && (!s || s->have_vol) && cores >= JOBCPU_BUSY_MIN_CORES &&
		    e->vol_switches >= vol0 && (double)(e->vol_switches - vol0) <= JOBCPU_NEVER_BLOCKED_PER_S * secs)
			demand = 1; /* busy and never blocked: it was kept from the CPU, not waiting */
		if (demand > 1)
			demand = 1;
		thread_use *u = &out[n++];
		*u = (thread_use){e->pid, e->tid, cores, demand, ""};
		str_copy(u->comm, sizeof(u->comm), e->comm);
	}
	return n;
}

double job_cpu_idle(const job_cpu_mark *a, const job_cpu_mark *b, double hz, const cpu_limits *lim, double job_cores)
{
	if (!a->ncpus || !b->ncpus || !a->cpu_idle || !b->cpu_idle)
		return NAN;
	double secs = a->t_cpus > 0 && b->t_cpus > 0 ? b->t_cpus - a->t_cpus : b->t - a->t;
	if (!(secs > 0))
		return NAN;
	double idle = 0;
	int n = a->ncpus < b->ncpus ? a->ncpus : b->ncpus, counted = 0;
	for (int c = 0; c < n; c++) {
		if (a->cpu_idle[c] == ~0ULL || b->cpu_idle[c] == ~0ULL)
			continue;
		if (lim && lim->nallowed && !(lim->allowed[c / 8] & (1u << (c % 8))))
			continue;
		double x = b->cpu_idle[c] > a->cpu_idle[c] ? (double)(b->cpu_idle[c] - a->cpu_idle[c]) / hz / secs : 0;
		idle += x > 1 ? 1 : x;
		counted++;
	}
	if (!counted)
		return NAN;
	/* a quota caps what the job may take, whatever the machine leaves idle */
	if (lim && !isnan(lim->quota_cores)) {
		double left = lim->quota_cores - (job_cores > 0 ? job_cores : 0);
		if (left < idle)
			idle = left > 0 ? left : 0;
	}
	return idle;
}
