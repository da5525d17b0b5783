#include "sampler/job.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "fleet/attrib.h"
#include "sampler/procfd.h"


/* The parent of pid from /proc/PID/stat ("pid (comm) state ppid ..."); 0 when unreadable. */
static unsigned parent_of(unsigned pid)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	if (sysroot_read(path, 4096, &buf, &len, NULL) != 0)
		return 0;
	unsigned ppid = 0;
	char *close = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (close) {
		char state;
		if (sscanf(close + 1, " %c %u", &state, &ppid) != 2)
			ppid = 0;
	}
	free(buf);
	return ppid;
}

void job_scan(job *j, unsigned root)
{
	memset(j, 0, sizeof(*j));
	j->root = root;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u", root);
	j->alive = sysroot_is_dir(path);
	if (!j->alive)
		return;
	j->pids[j->n++] = root;
	/* every process and its parent, then the descendants breadth first */
	size_t cap = 1024, np = 0;
	unsigned (*pp)[2] = xmalloc(cap * sizeof(*pp));
	DIR *d = sysroot_opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		unsigned pid = (unsigned)strtoul(de->d_name, NULL, 10);
		unsigned ppid = parent_of(pid);
		if (!ppid)
			continue;
		if (np == cap) {
			if (cap >= (1u << 20))
				break;
			cap *= 2;
			pp = xrealloc(pp, cap * sizeof(*pp));
		}
		pp[np][0] = pid;
		pp[np][1] = ppid;
		np++;
	}
	if (d)
		closedir(d);
	for (size_t k = 0; k < j->n && j->n < JOB_MAX_PIDS; k++)
		for (size_t i = 0; i < np && j->n < JOB_MAX_PIDS; i++)
			if (pp[i][1] == j->pids[k] && !job_has(j, pp[i][0]))
				j->pids[j->n++] = pp[i][0];
	free(pp);
}

void job_scan_owner(job *j, const char *pod, const char *slurm)
{
	char want_pod[sizeof(j->pod)], want_job[sizeof(j->slurm)];
	str_copy(want_pod, sizeof(want_pod), pod ? pod : "");
	str_copy(want_job, sizeof(want_job), want_pod[0] || !slurm ? "" : slurm);
	memset(j, 0, sizeof(*j));
	memcpy(j->pod, want_pod, sizeof(j->pod));
	memcpy(j->slurm, want_job, sizeof(j->slurm));
	/* one cache for the process: watch and run scan from one thread at a time */
	static owner_cache *cache;
	if (!cache)
		cache = owner_cache_new();
	DIR *d = sysroot_opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)) && j->n < JOB_MAX_PIDS) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		int pid = (int)strtol(de->d_name, NULL, 10);
		const owner *o = owner_cache_get(cache, pid);
		if (j->pod[0] ? owner_matches_pod(o, j->pod) : owner_matches_job(o, j->slurm)) {
			j->pids[j->n++] = (unsigned)pid;
			if (!j->root || (unsigned)pid < j->root)
				j->root = (unsigned)pid;
		}
	}
	if (d)
		closedir(d);
	j->alive = j->n > 0;
}

void job_rescan(job *j)
{
	if (j->pod[0] || j->slurm[0]) {
		char pod[sizeof(j->pod)], slurm[sizeof(j->slurm)];
		memcpy(pod, j->pod, sizeof(pod));
		memcpy(slurm, j->slurm, sizeof(slurm));
		job_scan_owner(j, pod, slurm);
	} else {
		job_scan(j, j->root);
	}
}

const char *job_text(const job *j, char *buf, size_t size)
{
	if (j->pod[0])
		snprintf(buf, size, "pod %s", j->pod);
	else if (j->slurm[0])
		snprintf(buf, size, "Slurm job %s", j->slurm);
	else
		snprintf(buf, size, "process %u", j->root);
	return buf;
}

bool job_has(const job *j, unsigned pid)
{
	for (size_t i = 0; i < j->n; i++)
		if (j->pids[i] == pid)
			return true;
	return false;
}

bool job_on_gpu(const job *j, const gpu_sample *g, double *mem_bytes)
{
	bool on = false;
	double mem = 0;
	bool mem_known = true;
	for (size_t i = 0; i < g->nproc; i++) {
		if (!job_has(j, g->procs[i].pid))
			continue;
		on = true;
		if (sv_has(g->procs[i].used_bytes))
			mem += g->procs[i].used_bytes.v;
		else
			mem_known = false;
	}
	if (mem_bytes)
		*mem_bytes = on && mem_known ? mem : NAN;
	return on;
}


/* The /dev/nvidiaN each process of the job holds open. */
/* Bit N of *minors for a descriptor on /dev/nvidiaN (N < 64). */
static bool note_device(const proc_fd *fd, void *minors)
{
	unsigned n;
	char rest;
	if (sscanf(fd->link, "/dev/nvidia%u%c", &n, &rest) == 1 && n < 64)
		*(unsigned long long *)minors |= 1ULL << n;
	return true;
}

static void read_devices(job *j)
{
	j->devs_read = true;
	for (size_t i = 0; i < j->n; i++) {
		j->dev_minors[i] = 0;
		proc_fd_each(j->pids[i], PROC_FD_SCAN, note_device, &j->dev_minors[i]);
	}
}

static void add_holder(unsigned *holders, size_t *n, size_t cap, unsigned pid)
{
	if (!holders)
		return;
	for (size_t q = 0; q < *n; q++)
		if (holders[q] == pid)
			return;
	if (*n < cap)
		holders[(*n)++] = pid;
}

job_gpu_hold job_gpu(job *j, const gpu_sample *g, double *mem_bytes, unsigned *holders, size_t *n, size_t cap)
{
	if (job_on_gpu(j, g, mem_bytes)) {
		for (size_t p = 0; p < g->nproc; p++)
			if (job_has(j, g->procs[p].pid))
				add_holder(holders, n, cap, g->procs[p].pid);
		return JOB_GPU_NVML;
	}
	if (mem_bytes)
		*mem_bytes = NAN;
	if (g->minor < 0 || g->minor >= 64)
		return JOB_GPU_NONE;
	if (!j->devs_read)
		read_devices(j);
	bool on = false;
	for (size_t i = 0; i < j->n; i++)
		if (j->dev_minors[i] & (1ULL << g->minor)) {
			on = true;
			add_holder(holders, n, cap, j->pids[i]);
		}
	return on ? JOB_GPU_DEVICE : JOB_GPU_NONE;
}
