/*
 * A process's open descriptors, from /proc/PID/fd (through --root): the one loop the sampler's
 * readers share (the job's GPU device files, a rank's sockets, a pipe's other end, the data
 * files a job reads).
 */
#ifndef GPUVET_SAMPLER_PROCFD_H
#define GPUVET_SAMPLER_PROCFD_H
#include <stdbool.h>

/* At most this many entries of one process's directory are looked at: a process can hold a
 * million descriptors, and the sampler reads a job's every few seconds. */
#define PROC_FD_SCAN 65536

typedef struct proc_fd {
	unsigned pid;
	const char *name; /* the descriptor's number as its directory entry: "7" */
	const char *path; /* "/proc/PID/fd/7", for stat (the file it names) */
	const char *link; /* what it names: "/data/x.tar", "socket:[123]", "pipe:[45]", "/dev/nvidia0" */
} proc_fd;

/* Calls each(fd, arg) for each open descriptor whose link reads, in the directory's order, until
 * it returns false or max entries were looked at. False when the directory cannot be opened
 * (the process is gone, or another user's). */
bool proc_fd_each(unsigned pid, int max, bool (*each)(const proc_fd *fd, void *arg), void *arg);

#endif
