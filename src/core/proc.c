#include "core/child.h"
#include "core/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/proc_stream.h"
#include "core/util.h"

extern char **environ;

static void append_bounded(char **buf, size_t *len, size_t *cap, const char *data, size_t n, size_t max,
			   bool *truncated)
{
	if (*len + n > max) {
		*truncated = true;
		n = *len < max ? max - *len : 0;
	}
	if (*len + n + 1 > *cap) {
		*cap = (*len + n + 1) * 2;
		*buf = xrealloc(*buf, *cap);
	}
	memcpy(*buf + *len, data, n);
	*len += n;
	(*buf)[*len] = '\0';
}

int proc_run(char *const argv[], char *const env[], const char *stdin_data, int timeout_ms, size_t max_output,
	     proc_result *res)
{
	memset(res, 0, sizeof(*res));
	res->status = -1;
	size_t ocap = 1, ecap = 1;
	res->out = xcalloc(1, 1);
	res->err = xcalloc(1, 1);
	int po[2], pe[2], pi[2];
	if (pipe2(po, O_CLOEXEC) < 0)
		goto fail_early;
	if (pipe2(pe, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		goto fail_early;
	}
	if (pipe2(pi, O_CLOEXEC) < 0) {
		close(po[0]);
		close(po[1]);
		close(pe[0]);
		close(pe[1]);
		goto fail_early;
	}
	/* own process group, so a timeout kills the child's children too; dies with us */
	pid_t pid = -1;
	double t0 = now_seconds();
	int rc = proc_spawn(argv, env, pi[0], po[1], pe[1], &pid);
	close(pi[0]);
	close(po[1]);
	close(pe[1]);
	if (rc != 0) {
		close(pi[1]);
		close(po[0]);
		close(pe[0]);
		res->spawn_failed = true;
		res->spawn_errno = rc;
		return -1;
	}
	gv_child_track(pid); /* ^C and SIGTERM of gpuvet kill it too (core/child.h) */
	/* stdin: write what fits without blocking, then close */
	if (stdin_data) {
		fcntl(pi[1], F_SETFL, O_NONBLOCK);
		ssize_t w = write(pi[1], stdin_data, strlen(stdin_data));
		(void)w;
	}
	close(pi[1]);
	fcntl(po[0], F_SETFL, O_NONBLOCK);
	fcntl(pe[0], F_SETFL, O_NONBLOCK);
	struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
	int open_fds = 2;
	char chunk[8192];
	while (open_fds > 0) {
		int left = timeout_ms - (int)((now_seconds() - t0) * 1000);
		if (left <= 0) {
			res->timed_out = true;
			break;
		}
		if (gv_child_stop_pending()) { /* serve blocks these for sigwait: give up so it gets to them */
			res->timed_out = true;
			break;
		}
		int n = poll(fds, 2, left < 100 ? left : 100);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			continue;
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t r = read(fds[i].fd, chunk, sizeof(chunk));
			if (r > 0) {
				if (i == 0)
					append_bounded(&res->out, &res->out_len, &ocap, chunk, (size_t)r, max_output,
						       &res->truncated);
				else
					append_bounded(&res->err, &res->err_len, &ecap, chunk, (size_t)r, max_output,
						       &res->truncated);
			} else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(fds[i].fd);
				fds[i].fd = -1;
				open_fds--;
			}
		}
	}
	if (res->timed_out) {
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
	}
	for (int i = 0; i < 2; i++)
		if (fds[i].fd >= 0)
			close(fds[i].fd);
	/* The pipes closed, but the child may still run (it closed its stdout): wait within the limit. */
	int st = 0;
	for (;;) {
		pid_t w = waitpid(pid, &st, WNOHANG);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			break;
		if ((now_seconds() - t0) * 1000 > timeout_ms) {
			res->timed_out = true;
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		usleep(2000);
	}
	gv_child_untrack(pid);
	res->seconds = now_seconds() - t0;
	if (WIFEXITED(st))
		res->status = WEXITSTATUS(st);
	else if (WIFSIGNALED(st))
		res->signal = WTERMSIG(st);
	return 0;
fail_early:
	res->spawn_failed = true;
	res->spawn_errno = errno;
	return -1;
}

void proc_result_free(proc_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}
