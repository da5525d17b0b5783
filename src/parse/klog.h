/*
 * Kernel log lines as the logs hold them: the time a line carries in its prefix (a syslog date,
 * an ISO 8601 time, a /dev/kmsg record header "4,1234,5678901,-;"), and the lines of the kernel's
 * out-of-memory killer:
 *
 *   Out of memory: Killed process 4242 (python3) total-vm:..., anon-rss:61234567kB, ...
 *   Memory cgroup out of memory: Killed process 4242 (python3) total-vm:..., anon-rss:...kB, ...
 *   Killed process 4242 (python3) total-vm:...              (kernels before 4.19: the line after
 *                                                            "Out of memory: Kill process ...")
 *
 * Parsing only: no I/O, so it can be fuzzed (the Xid lines: nvidia/xidlog.h).
 */
#ifndef GPUVET_PARSE_KLOG_H
#define GPUVET_PARSE_KLOG_H
#include <stdbool.h>
#include <stddef.h>

/* The time of a line from its prefix (the plen bytes before the message): *time in seconds since
 * the epoch (-1 none), *boot_us for a /dev/kmsg record (microseconds since boot, -1 otherwise).
 * year_hint: the year for syslog dates that carry none ("Nov 29 10:00:00"). */
void klog_time(const char *line, size_t plen, int year_hint, long long *time, long long *boot_us);

typedef struct oom_kill {
	unsigned pid;
	char comm[64];        /* the killed process's name (sanitised) */
	bool cgroup;          /* a memory cgroup's limit (a container's, a Slurm job's), not the host's */
	long long anon_rss_kb; /* its anonymous memory when killed, -1 unknown */
	long long time;       /* as klog_time */
	long long boot_us;
} oom_kill;

/* One log line (len bytes, not necessarily NUL-terminated): true when it is the killer's
 * "Killed process PID (COMM)" line. A line "Memory cgroup out of memory: ..." sets cgroup; a
 * pre-4.19 kernel's two lines say so only on the first, so *cgroup_pending carries it from one
 * line to the next (start it false, one per log). */
bool oom_parse_line(const char *line, size_t len, int year_hint, bool *cgroup_pending, oom_kill *out);
#endif
