/*
 * Runs a child program (argv, never a shell) like proc_run, for children that work for minutes
 * and talk while they do: stderr is handed over line by line as it comes (progress lines),
 * stdout is collected (bounded), a tick callback runs at a fixed period while waiting (to sample
 * something during the run), and the run can be stopped from outside (Ctrl-C).
 *
 * The child runs in its own process group with stdin on /dev/null, and gets SIGKILL when the
 * calling thread ends (PR_SET_PDEATHSIG: gpuvet killed by SIGKILL leaves no child behind; call
 * it from a thread that lives as long as the child should, the main thread). Stopping (the stop flag, or
 * the time limit) sends SIGINT (stop) or SIGTERM (time limit) to the whole group, so the child
 * can still print what it finished; after grace_ms the group gets SIGKILL. When the child exits
 * while something it started still holds the pipes, the rest of the group is killed too.
 */
#ifndef GPUVET_PROC_STREAM_H
#define GPUVET_PROC_STREAM_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct proc_stream_opts {
	char *const *argv;
	char *const *env;            /* NULL to inherit, else a NULL-terminated "K=V" array */
	int timeout_ms;              /* then SIGTERM to the group */
	int grace_ms;                /* after SIGINT/SIGTERM, before SIGKILL (default 5000 when 0) */
	size_t max_stdout;           /* bytes of stdout kept; the rest is discarded (truncated) */
	size_t max_line;             /* stderr lines longer than this are cut (default 65536 when 0) */
	int tick_ms;                 /* period of on_tick; 0 for none */
	void (*on_line)(void *ctx, const char *line); /* each stderr line, without its newline */
	void (*on_tick)(void *ctx);
	/* When *stop becomes nonzero the group gets SIGINT; 2 or more: SIGKILL at once. The caller's
	 * signal handler sets it; install it without SA_RESTART so the wait wakes up. */
	volatile sig_atomic_t *stop;
	void *ctx;
} proc_stream_opts;

typedef struct proc_stream_result {
	int status;        /* exit code when exited, -1 otherwise */
	int signal;        /* terminating signal, 0 when exited */
	bool timed_out;    /* the time limit was reached */
	bool interrupted;  /* *stop was seen */
	bool killed;       /* the group needed SIGKILL */
	bool truncated;    /* stdout went over max_stdout */
	bool spawn_failed; /* could not start (errno in spawn_errno) */
	int spawn_errno;
	char *out;         /* stdout, NUL-terminated (never NULL after proc_stream_run) */
	size_t out_len;
	size_t lines;      /* stderr lines handed over */
	double seconds;
} proc_stream_result;

/* Starts argv (PATH searched) in a process group of its own, with stdin from in_fd (-1:
 * /dev/null), stdout and stderr on out_fd and err_fd, signals unblocked and SIGINT, SIGTERM,
 * SIGPIPE, SIGHUP at their defaults; the child gets SIGKILL when the calling thread ends
 * (PR_SET_PDEATHSIG), so gpuvet killed outright leaves no child behind. fork and exec (posix_spawn
 * cannot set that); only async-signal-safe calls in the child. Returns 0 with *pid, or the
 * errno of a child that could not start. proc_run and proc_stream_run start their children so. */
#include <sys/types.h>
int proc_spawn(char *const *argv, char *const *envp, int in_fd, int out_fd, int err_fd, pid_t *pid);

/* Returns 0 when the child ran (whatever its outcome), -1 when it could not start. */
int proc_stream_run(const proc_stream_opts *o, proc_stream_result *res);
void proc_stream_result_free(proc_stream_result *res);

/* Splits a byte stream into lines: feed chunks, get complete lines through the callback; lines
 * over max are cut to max bytes (the rest up to the newline is dropped). Exposed for tests. */
typedef struct line_splitter {
	char *buf;
	size_t len, cap, max;
	bool skipping; /* inside the dropped rest of an over-long line */
	void (*on_line)(void *ctx, const char *line);
	void *ctx;
	size_t count;
} line_splitter;
void line_splitter_init(line_splitter *ls, size_t max, void (*on_line)(void *ctx, const char *line), void *ctx);
void line_splitter_feed(line_splitter *ls, const char *data, size_t n);
void line_splitter_finish(line_splitter *ls); /* hands over a last line without a newline */
void line_splitter_free(line_splitter *ls);
#endif
