/*
 * The CPU side of a job (sampler/job.h), from /proc through --root: every thread's CPU time
 * (/proc/PID/task/TID/stat, utime + stime) and the time it waited for a core
 * (/proc/PID/task/TID/schedstat), the machine's idle time per CPU (/proc/stat), and the cores
 * the job may use (Cpus_allowed_list of /proc/PID/status, the cgroup's CPU quota: cpu.max, or
 * cpu.cfs_quota_us under cgroup v1). Two marks, one at each end of a window, give each
 * thread's use of a core and the cores left idle (job_cpu_between, pure).
 */
#ifndef GPUVET_SAMPLER_JOBCPU_H
#define GPUVET_SAMPLER_JOBCPU_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/job.h"

#define JOBCPU_MAX_THREADS 4096
#define JOBCPU_MAX_CPUS 1024
/* A thread that used at least this share of a core and gave its CPU up at most this often (a
 * blocking read, a sleep, a futex wait each count one) wanted the core all the time, whatever the
 * run delay reads; `while True: pass` under a loaded machine's preemption gives up none */
#define JOBCPU_BUSY_MIN_CORES 0.3
#define JOBCPU_NEVER_BLOCKED_PER_S 1.0

typedef struct thread_cpu {
	unsigned pid, tid;
	unsigned long long ticks; /* utime + stime, clock ticks */
	/* now_seconds() when this thread was read (0: the mark's t). A mark of many threads on a
	 * loaded machine is read over a while, its first thread long before its last: each thread's
	 * window is between its own two readings */
	double t;
	/* now_seconds() when the thread started (stat's starttime against /proc/uptime; 0 unknown): a
	 * thread born since the first mark has its window from there */
	double born;
	/* ns on a CPU and ns runnable but waiting for one: a thread that wants a core all the time
	 * (on-CPU + waiting = the window) is saturated even when other programs keep it from running */
	bool have_sched;
	unsigned long long run_ns, wait_ns;
	/* the times the thread gave up its CPU itself (/proc/PID/task/TID/status,
	 * voluntary_ctxt_switches). A busy thread that never did wanted the core all the time, however
	 * much of it other programs left it: where the kernel keeps no run delay (the second field of
	 * schedstat reads 0, the first may still count: "8301.. 0 23"), and where a wait in progress
	 * at a reading is not yet in the delay */
	bool have_vol;
	unsigned long long vol_switches;
	char comm[16]; /* the thread's name (/proc/PID/task/TID/comm): "pt_data_worker" */
} thread_cpu;

/* The job's threads and the machine's CPUs at one moment. */
typedef struct job_cpu_mark {
	double t; /* now_seconds() */
	size_t nthreads;
	thread_cpu *threads;
	int ncpus;                    /* highest cpuN of /proc/stat + 1; 0 when unread */
	unsigned long long *cpu_idle; /* idle + iowait ticks per CPU (ncpus; a CPU absent: ~0ULL) */
	double t_cpus;                /* now_seconds() when /proc/stat was read (0: t) */
} job_cpu_mark;

/* Reads the mark now (every thread of every process of the job, at most JOBCPU_MAX_THREADS). */
void job_cpu_mark_take(job_cpu_mark *m, const job *j);
void job_cpu_mark_free(job_cpu_mark *m);

/* The cores a process may use: the CPUs of its affinity and its cgroup's quota. */
typedef struct cpu_limits {
	int nallowed;                              /* CPUs in the affinity list; 0 unknown */
	unsigned char allowed[JOBCPU_MAX_CPUS / 8]; /* bit N: CPU N */
	double quota_cores;                        /* the cgroup's quota in cores; NAN none or unknown */
} cpu_limits;
void job_cpu_limits(unsigned pid, cpu_limits *out);
/* utime + stime (clock ticks) from the text of /proc/PID/stat or /proc/PID/task/TID/stat; false
 * when it does not parse. Pure. */
bool proc_stat_ticks(const char *text, unsigned long long *ticks);
/* starttime (clock ticks after boot) from the same text; false when it does not parse. Pure. */
bool proc_stat_starttime(const char *text, unsigned long long *start);
/* voluntary_ctxt_switches from the text of /proc/PID/task/TID/status; false when absent. Pure. */
bool proc_status_vol_switches(const char *text, unsigned long long *out);
/* "0-15,32-47" into a CPU mask; the count, or -1 when the list does not parse. Pure. */
int cpu_list_parse(const char *list, unsigned char *mask, size_t mask_bytes);
/* /proc/stat's text to idle + iowait ticks per CPU (idle[0..max), ~0ULL for a CPU it lacks); the
 * highest cpuN + 1, 0 for none. Pure. */
int cpu_stat_idle(const char *text, unsigned long long *idle, int max);
/* cgroup v2's cpu.max ("200000 100000", "max 100000") in cores; NAN for no quota. Pure. */
double cpu_max_parse(const char *text);

/* One thread over a window: cores it used and the share of the window it ran or waited to run. */
typedef struct thread_use {
	unsigned pid, tid;
	double cores;  /* CPU time / window */
	double demand; /* (on-CPU + waiting) / window, 0-1; the CPU time alone without schedstats */
	char comm[16];
} thread_use;
/* Each thread of b against a (threads born since count from 0), into out (b->nthreads of them);
 * hz: clock ticks per second. Returns how many. Pure. */
size_t job_cpu_between(const job_cpu_mark *a, const job_cpu_mark *b, double hz, thread_use *out);
/* Idle cores between the marks among the CPUs of lim (all when unknown), at most the quota left
 * after the job's own use (job_cores); NAN when /proc/stat was not read. Pure. */
double job_cpu_idle(const job_cpu_mark *a, const job_cpu_mark *b, double hz, const cpu_limits *lim, double job_cores);
#endif
