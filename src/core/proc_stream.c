#include "core/proc_stream.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/child.h"
#include "core/reaper.h"
#include "core/util.h"

extern char **environ;

/* ---- line splitter ---- */

void line_splitter_init(line_splitter *ls, size_t max, void (*on_line)(void *ctx, const char *line), void *ctx)
{
	memset(ls, 0, sizeof(*ls));
	ls->max = max ? max : 65536;
	ls->on_line = on_line;
	ls->ctx = ctx;
}

static void ls_emit(line_splitter *ls)
{
	if (!ls->buf) {
		ls->cap = 64;
		ls->buf = xmalloc(ls->cap);
	}
	ls->buf[ls->len] = '\0';
	/* a CR before the newline is not part of the line */
	if (ls->len > 0 && ls->buf[ls->len - 1] == '\r')
		ls->buf[ls->len - 1] = '\0';
	ls->count++;
	if (ls->on_line)
		ls->on_line(ls->ctx, ls->buf);
	ls->len = 0;
}

void line_splitter_feed(line_splitter *ls, const char *data, size_t n)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		if (ls->skipping) {
			if (nl)
				ls->skipping = false;
		} else {
			size_t room = ls->max - ls->len;
			size_t keep = take < room ? take : room;
			if (ls->len + keep + 1 > ls->cap) {
				ls->cap = (ls->len + keep + 1) * 2;
				if (ls->cap > ls->max + 1)
					ls->cap = ls->max + 1;
				ls->buf = xrealloc(ls->buf, ls->cap);
			}
			memcpy(ls->buf + ls->len, data, keep);
			ls->len += keep;
			if (nl) {
				ls_emit(ls);
			} else if (ls->len >= ls->max) {
				/* cut here: hand over what fits and drop the rest of this line */
				ls_emit(ls);
				ls->skipping = true;
			}
		}
		if (!nl)
			break;
		n -= take + 1;
		data = nl + 1;
	}
}

void line_splitter_finish(line_splitter *ls)
{
	if (ls->len > 0 && !ls->skipping)
		ls_emit(ls);
	ls->len = 0;
	ls->skipping = false;
}

void line_splitter_free(line_splitter *ls)
{
	free(ls->buf);
	ls->buf = NULL;
	ls->len = ls->cap = 0;
}

/* ---- the runner (proc_run too: core/proc.c) ---- */

static void append_bounded(char **buf, size_t *len, size_t *cap, const char *data, size_t n, size_t max,
			   bool *truncated)
{
	if (*len + n > max) {
		*truncated = true;
		n = *len < max ? max - *len : 0;
	}
	if (n == 0)
		return;
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = xrealloc(*buf, *cap);
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

static int ms_until(double deadline)
{
	double left = (deadline - now_seconds()) * 1000.0;
	if (left <= 0)
		return 0;
	if (left > 1e9)
		return 1000000000;
	return (int)left + 1;
}

/* fork and exec, with what posix_spawn cannot do: the child gets SIGKILL when we die (even by
 * SIGKILL), so a killed run leaves no probe behind. Only async-signal-safe calls in the child.
 * in_fd is the child's stdin, -1 for /dev/null. Returns 0, or the errno of a child that could
 * not start. */
static int spawn_child(const proc_stream_opts *o, int in_fd, int out_fd, int err_fd, pid_t *pid_out)
{
	int ep[2]; /* the child's exec errno; end of file when exec worked */
	if (pipe2(ep, O_CLOEXEC) < 0)
		return errno;
	pid_t parent = getpid();
	char *const *env = o->env ? o->env : environ;
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(ep[0]);
		close(ep[1]);
		return e;
	}
	if (pid == 0) {
		/* own process group: a stop reaches the child's children (DataLoader workers, DDP
		 * ranks), and the terminal's Ctrl-C reaches only us, so we decide what the child gets */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent) /* we died before the line above */
			_exit(127);
		static const int defaults[] = {SIGINT, SIGTERM, SIGPIPE, SIGHUP, SIGXFSZ};
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			sigaction(defaults[i], &dfl, NULL);
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		int in = in_fd >= 0 ? in_fd : open("/dev/null", O_RDONLY);
		if (in < 0 || dup2(in, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
			int e = errno;
			(void)!write(ep[1], &e, sizeof(e));
			_exit(127);
		}
		execvpe(o->argv[0], o->argv, env);
		int e = errno;
		(void)!write(ep[1], &e, sizeof(e));
		_exit(127);
	}
	close(ep[1]);
	int e = 0;
	ssize_t n;
	while ((n = read(ep[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(ep[0]);
	if (n == (ssize_t)sizeof(e)) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		return e ? e : ECHILD;
	}
	*pid_out = pid;
	return 0;
}

/* Writes what the child's stdin takes now, without blocking and without SIGPIPE when the child
 * closed it (the signal is blocked in this thread and a pending one taken back). Returns false
 * when stdin is done: all written, or the child will read no more. */
static bool feed_stdin(int fd, const char *data, size_t len, size_t *off)
{
	sigset_t pipe_set, old;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	bool more = true;
	while (*off < len) {
		ssize_t w = write(fd, data + *off, len - *off);
		if (w > 0) {
			*off += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			break;
		more = false; /* EPIPE: the child closed its stdin */
		break;
	}
	if (!more) {
		struct timespec zero = {0, 0};
		sigset_t pending;
		sigpending(&pending);
		if (sigismember(&pending, SIGPIPE))
			sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return more && *off < len;
}

/* SIGKILL to the child, its group and every process below it, also those that left the group
 * (setsid): nothing it started outlives it (core/reaper.h). */
static void kill_all(pid_t pid)
{
	reaper_kill_tree(pid);
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL); /* also when it left the group */
}

/* The time limit or a stop: SIGTERM (SIGINT for a stop) to the group and SIGKILL after the grace,
 * or SIGKILL at once with kill_at_limit. */
static void stop_group(const proc_stream_opts *o, proc_stream_result *res, pid_t pid, bool by_stop, int grace_ms,
		       double now, bool *stopping, double *kill_at)
{
	*stopping = true;
	if (o->kill_at_limit) {
		res->killed = true;
		kill_all(pid);
		*kill_at = now;
		return;
	}
	kill(-pid, by_stop ? SIGINT : SIGTERM);
	*kill_at = now + grace_ms / 1000.0;
}

enum { FD_OUT, FD_ERR, FD_IN };

int proc_stream_run(const proc_stream_opts *o, proc_stream_result *res)
{
	memset(res, 0, sizeof(*res));
	res->status = -1;
	res->out = xcalloc(1, 1);
	res->err = xcalloc(1, 1);
	size_t ocap = 1, ecap = 1;
	int grace_ms = o->grace_ms > 0 ? o->grace_ms : 5000;
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1}; /* pipe2 leaves them as they are on failure */
	if (pipe2(po, O_CLOEXEC) < 0 || pipe2(pe, O_CLOEXEC) < 0 || (o->stdin_data && pipe2(pi, O_CLOEXEC) < 0)) {
		res->spawn_failed = true;
		res->spawn_errno = errno;
		int *ends[] = {po, pe, pi};
		for (size_t i = 0; i < 3; i++)
			for (size_t k = 0; k < 2; k++)
				if (ends[i][k] >= 0)
					close(ends[i][k]);
		return -1;
	}
	pid_t pid = -1;
	double t0 = now_seconds();
	int rc = spawn_child(o, pi[0], po[1], pe[1], &pid);
	close(po[1]);
	close(pe[1]);
	if (pi[0] >= 0)
		close(pi[0]);
	if (rc != 0) {
		close(po[0]);
		close(pe[0]);
		if (pi[1] >= 0)
			close(pi[1]);
		res->spawn_failed = true;
		res->spawn_errno = rc;
		return -1;
	}
	gv_child_track(pid); /* ^C and SIGTERM of gpuvet kill it too (core/child.h) */
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	size_t in_len = o->stdin_data ? strlen(o->stdin_data) : 0, in_off = 0;
	if (pi[1] >= 0) {
		fcntl(pi[1], F_SETFL, O_NONBLOCK);
		if (!feed_stdin(pi[1], o->stdin_data, in_len, &in_off)) {
			close(pi[1]);
			pi[1] = -1;
		}
	}
	line_splitter ls;
	line_splitter_init(&ls, o->max_line, o->on_line, o->ctx);

	struct pollfd fds[3] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}, {pi[1], POLLOUT, 0}};
	int open_fds = 2;
	double deadline = t0 + (o->timeout_ms > 0 ? o->timeout_ms : 1000000000) / 1000.0;
	double next_tick = o->tick_ms > 0 ? t0 + o->tick_ms / 1000.0 : 0;
	double kill_at = 0;   /* when stopping: SIGKILL then */
	double reaped_at = 0; /* the child exited; its pipes may still be held by its children */
	bool reaped = false, stopping = false;
	int st = 0;
	char chunk[16384];
	while (open_fds > 0) {
		double now = now_seconds();
		if (o->stop && *o->stop && !res->interrupted) {
			res->interrupted = true;
			if (!stopping)
				stop_group(o, res, pid, true, grace_ms, now, &stopping, &kill_at);
		}
		if (o->stop && *o->stop >= 2 && !res->killed) {
			res->killed = true;
			kill_all(pid);
		}
		/* a SIGINT/SIGTERM pending for gpuvet (serve blocks them for sigwait) counts as the time
		 * limit, so that the signal gets its turn */
		if (!stopping && (now >= deadline || gv_child_stop_pending())) {
			res->timed_out = true;
			stop_group(o, res, pid, false, grace_ms, now, &stopping, &kill_at);
		}
		if (stopping && !res->killed && now >= kill_at) {
			res->killed = true;
			kill_all(pid);
		}
		if (!reaped) {
			pid_t w = waitpid(pid, &st, WNOHANG);
			if (w == pid) {
				reaped = true;
				reaped_at = now;
			}
		}
		if (reaped && now - reaped_at > 2.0) {
			/* the child is gone but something it started holds the pipes open: its group is
			 * killed; what left the group was adopted by gpuvet and ends with it (core/reaper.h) */
			kill(-pid, SIGKILL);
			break;
		}
		if (o->tick_ms > 0 && now >= next_tick) {
			if (o->on_tick)
				o->on_tick(o->ctx);
			while (next_tick <= now)
				next_tick += o->tick_ms / 1000.0;
		}
		/* wake up for the next tick, deadline, kill or a look at the stop flag */
		int wait_ms = 200;
		if (o->tick_ms > 0 && ms_until(next_tick) < wait_ms)
			wait_ms = ms_until(next_tick);
		if (!stopping && ms_until(deadline) < wait_ms)
			wait_ms = ms_until(deadline);
		if (stopping && !res->killed && ms_until(kill_at) < wait_ms)
			wait_ms = ms_until(kill_at);
		if (reaped)
			wait_ms = wait_ms > 100 ? 100 : wait_ms;
		fds[FD_IN].fd = pi[1];
		int n = poll(fds, 3, wait_ms);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		if (pi[1] >= 0 && (fds[FD_IN].revents & (POLLOUT | POLLERR | POLLHUP)) &&
		    !((fds[FD_IN].revents & POLLOUT) && feed_stdin(pi[1], o->stdin_data, in_len, &in_off))) {
			close(pi[1]);
			pi[1] = -1;
		}
		for (int i = FD_OUT; i <= FD_ERR; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(fds[i].fd, chunk, sizeof(chunk));
			if (r > 0 && i == FD_OUT) {
				append_bounded(&res->out, &res->out_len, &ocap, chunk, (size_t)r, o->max_stdout, &res->truncated);
			} else if (r > 0) {
				if (o->on_line)
					line_splitter_feed(&ls, chunk, (size_t)r);
				if (o->max_stderr)
					append_bounded(&res->err, &res->err_len, &ecap, chunk, (size_t)r, o->max_stderr,
						       &res->err_truncated);
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
		}
	}
	for (int i = FD_OUT; i <= FD_ERR; i++)
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	if (pi[1] >= 0)
		close(pi[1]);
	line_splitter_finish(&ls);
	res->lines = ls.count;
	line_splitter_free(&ls);
	/* The pipes are closed; the child may still run (it closed them itself): wait for it within
	 * the limits, stopping it the same way. */
	while (!reaped) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		double now = now_seconds();
		bool stop_now = o->stop && *o->stop;
		if (!stopping && (now >= deadline || stop_now)) {
			if (stop_now)
				res->interrupted = true;
			else
				res->timed_out = true;
			stop_group(o, res, pid, stop_now, grace_ms, now, &stopping, &kill_at);
		}
		if (stopping && now >= kill_at) {
			res->killed = true;
			kill_all(pid);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(5000);
	}
	gv_child_untrack(pid);
	res->seconds = now_seconds() - t0;
	if (WIFEXITED(st))
		res->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		res->signal = WTERMSIG(st);
	return 0;
}

void proc_stream_result_free(proc_stream_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
	res->out_len = res->err_len = 0;
}
