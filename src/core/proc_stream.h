/*
 * Runs a child program (argv, never a shell) like proc_run, for children that work for minutes
 * and talk while they do: stderr is handed over line by line as it comes (progress lines),
 * stdout is collected (bounded), a tick callback runs at a fixed period while waiting (to sample
 * something during the run), and the run can be stopped from outside (Ctrl-C).
 *
 * This is gpuvet's one process runner: proc_run (core/proc.h) is this with stderr collected and
 * the time limit killing at once.
 *
 * The child runs in its own process group with stdin on /dev/null (or fed stdin_data), SIGINT,
 * SIGTERM, SIGPIPE and SIGHUP at their defaults and no signal blocked, and gets SIGKILL when the
 * calling thread ends (PR_SET_PDEATHSIG: gpuvet killed by SIGKILL leaves no child behind; call it
 * from a thread that lives as long as the child should). Stopping (the stop flag, or the time
 * limit) sends SIGINT (stop) or SIGTERM (time limit) to the whole group, so the child can still
 * print what it finished; after grace_ms the group gets SIGKILL (at once with kill_at_limit).
 * When the child exits while something it started still holds the pipes, the rest of the group
 * is killed 2 s later.
 */
#ifndef GPUVET_PROC_STREAM_H
#define GPUVET_PROC_STREAM_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct proc_stream_opts {
	char *const *argv;
	char *const *env;            /* NULL to inherit, else a NULL-terminated "K=V" array */
	const char *stdin_data;      /* written to the child's stdin as it reads, then closed; NULL: /dev/null */
	int timeout_ms;              /* then SIGTERM to the group; 0 for no limit */
	bool kill_at_limit;          /* the limit or a stop sends SIGKILL at once, no SIGTERM and grace */
	int grace_ms;                /* after SIGINT/SIGTERM, before SIGKILL (default 5000 when 0) */
	size_t max_stdout;           /* bytes of stdout kept; the rest is discarded (truncated) */
	size_t max_stderr;           /* bytes of stderr kept in err (0: none kept) */
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
	char *err;         /* stderr up to max_stderr, NUL-terminated (never NULL after proc_stream_run) */
	size_t err_len;
	bool err_truncated; /* stderr went over max_stderr */
	size_t lines;      /* stderr lines handed over */
	double seconds;
} proc_stream_result;

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
