/* Runs a child program (argv, never a shell) with a time limit and a bound on its output: the
 * runner of core/proc_stream.h (its own process group, signals at their defaults, killed with
 * gpuvet), waiting for the end, stdout and stderr collected, SIGKILL at the limit. */
#ifndef GPUVET_PROC_H
#define GPUVET_PROC_H
#include <stdbool.h>
#include <stddef.h>

typedef struct proc_result {
	int status;        /* exit code when exited, -1 otherwise */
	int signal;        /* terminating signal, 0 when exited */
	bool timed_out;    /* killed at the time limit */
	bool truncated;    /* output went over the bound; the rest was discarded */
	bool spawn_failed; /* could not start (errno in spawn_errno) */
	int spawn_errno;
	char *out; /* stdout, NUL-terminated (never NULL after proc_run) */
	size_t out_len;
	char *err; /* stderr, NUL-terminated */
	size_t err_len;
	double seconds;
} proc_result;

/* env: NULL to inherit, else a NULL-terminated "K=V" array. stdin_data may be NULL (stdin on
 * /dev/null); otherwise it is written whole as the child reads. max_output bounds stdout and
 * stderr each. */
int proc_run(char *const argv[], char *const env[], const char *stdin_data, int timeout_ms, size_t max_output,
	     proc_result *res);
void proc_result_free(proc_result *res);
#endif
