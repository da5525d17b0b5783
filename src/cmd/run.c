/*
 * gpuvet run -- CMD [ARGS]: runs the user's command with its output passed through unchanged (a
 * terminal stays a terminal: the command writes to a pseudo-terminal that gpuvet copies to its
 * own), after a quick pre-flight (check --fast's fail findings, printed, never blocking), follows
 * the job the way watch --pid does, and when the command fails or prints a known error, explains
 * it (gpuvet explain on its output). Everything gpuvet says goes to standard error. The exit
 * status is the command's own (128 + N when a signal N ended it).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "diagnose/diagnose.h"
#include "explain/explain.h"
#include "explain/verdict.h"
#include "render/render.h"
#include "sampler/sampler.h"

static const char run_usage[] =
	"usage: gpuvet run [options] -- CMD [ARGS...]\n"
	"\n"
	"Runs CMD with its output passed through unchanged. Before it starts, prints the fail findings\n"
	"of a quick check (check --fast; never blocks the command). While it runs, follows the job (its\n"
	"processes, their GPUs, utilization) like watch --pid. When CMD exits non-zero or prints a known\n"
	"error, explains it as gpuvet explain would, with the cause that holds on this machine; when the\n"
	"job ran long enough, prints the job doctor's verdict (as watch --pid --diagnose: tensor-, DRAM-,\n"
	"FP32-, input- or launch-bound, memory pressure, imbalance, slowdown; judged over 10 s windows,\n"
	"the verdict most windows gave) with its fix. gpuvet's own lines go to stderr.\n"
	"\n"
	"  --no-preflight       skip the quick check before the command\n"
	"  --no-watch           do not follow the job's GPUs (no NVML while it runs)\n"
	"  --interval S         seconds between samples of the job's GPUs (default 1)\n"
	"  --min-seconds S      the job must hold a GPU this long for a verdict (default 30)\n"
	"probing for the explanation, as for check\n"
	"  --fast               NVML and files only: no cuInit, no Python\n"
	"  --no-python          skip the live Python/PyTorch probe\n"
	"  --python PATH        the interpreter to examine\n"
	"  --python-timeout S   seconds the Python probe may take (default 20)\n"
	"\n"
	"exit status: the command's own; 127 when it cannot be started; 2 usage\n";

static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t winch;

static void on_winch(int sig)
{
	(void)sig;
	winch = 1;
}

static void forward(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

/* The job follower: a thread of its own, so that a slow or hung driver never stalls the copying
 * of the command's output (a command blocked on a full pipe would be gpuvet's fault). */
struct follower {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;
	pid_t pid;
	double interval;
	job_judge *judge;
};

static void *follow(void *arg)
{
	struct follower *fw = arg;
	sampler_lazy lazy = {0};
	lazy.o.no_events = true;
	job jb;
	pthread_mutex_lock(&fw->mu);
	while (!fw->stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		double t = (double)until.tv_sec + until.tv_nsec / 1e9 + fw->interval;
		until.tv_sec = (time_t)t;
		until.tv_nsec = (long)((t - (double)until.tv_sec) * 1e9);
		while (!fw->stop && pthread_cond_timedwait(&fw->cv, &fw->mu, &until) == 0)
			;
		if (fw->stop)
			break;
		pthread_mutex_unlock(&fw->mu);
		job_scan(&jb, (unsigned)fw->pid);
		char err[256];
		snapshot *snap = jb.alive ? sampler_lazy_take(&lazy, err, sizeof(err)) : NULL;
		pthread_mutex_lock(&fw->mu);
		if (snap) {
			fw->judge->sample(fw->judge->state, snap, &jb);
			snapshot_free(snap);
		}
	}
	pthread_mutex_unlock(&fw->mu);
	sampler_lazy_close(&lazy);
	return NULL;
}

struct stream {
	int from;      /* our end: the pty master or a pipe */
	int to;        /* our stdout or stderr */
	sig_scan *scan;
	bool open;
};

static bool write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		p += w;
		n -= (size_t)w;
	}
	return true;
}

/* Opens a pseudo-terminal whose window size is the one of fd; the master, and *slave. */
static int open_pty(int like, int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0)
		return -1;
	char *name = NULL;
	if (grantpt(m) != 0 || unlockpt(m) != 0 || !(name = ptsname(m))) {
		close(m);
		return -1;
	}
	int s = open(name, O_RDWR | O_NOCTTY);
	if (s < 0) {
		close(m);
		return -1;
	}
	struct winsize ws;
	if (ioctl(like, TIOCGWINSZ, &ws) == 0)
		ioctl(s, TIOCSWINSZ, &ws);
	struct termios t;
	if (tcgetattr(like, &t) == 0)
		tcsetattr(s, TCSANOW, &t);
	*slave = s;
	return m;
}

static void preflight(void)
{
	facts *f = facts_new();
	findings fs;
	findings_init(&fs);
	probe_opts po = {true, true, NULL, 20000};
	diagnose_opts o = {.probes = &po};
	diagnose(f, &o, &fs);
	bool on = color_wanted(stderr, gopts.color);
	for (size_t i = 0; i < fs.n; i++) {
		const finding *x = &fs.v[i];
		if (x->sev != SEV_FAIL)
			continue;
		fprintf(stderr, "gpuvet run: pre-flight: %sFAIL%s %s [%s]\n", col_fail(on), col_reset(on), x->title, x->id);
		if (x->fix.n)
			fprintf(stderr, "gpuvet run:   fix: %s\n", x->fix.v[0]);
	}
	findings_free(&fs);
	facts_free(f);
}

int cmd_run(int argc, char **argv)
{
	enum { OPT_NO_PREFLIGHT = 256, OPT_NO_WATCH, OPT_INTERVAL, OPT_MIN };
	static const struct option longopts[] = {
		{"no-preflight", no_argument, NULL, OPT_NO_PREFLIGHT},
		{"no-watch", no_argument, NULL, OPT_NO_WATCH},
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"min-seconds", required_argument, NULL, OPT_MIN},
		PROBE_LONGOPTS,
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	explain_opts eo = {{false, false, NULL, 20000}, NULL, false, false, false, stderr, "run"};
	bool do_preflight = true, do_watch = true;
	double interval = 1, min_seconds = 30;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		int taken = probe_option(c, optarg, &eo.po, NULL);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		switch (c) {
		case OPT_NO_PREFLIGHT: do_preflight = false; break;
		case OPT_NO_WATCH: do_watch = false; break;
		case OPT_INTERVAL:
			if (!parse_double_opt("--interval", optarg, 0.05, 3600, &interval))
				return EXIT_USAGE;
			break;
		case OPT_MIN:
			if (!parse_double_opt("--min-seconds", optarg, 0, 86400 * 365, &min_seconds))
				return EXIT_USAGE;
			break;
		case 'h': fputs(run_usage, stdout); return EXIT_OK;
		case ':': return usage_error(run_usage, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(run_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error(run_usage, "no command to run: gpuvet run -- CMD [ARGS]");
	char **cmd = argv + optind;
	sig_catalogue *cat = explain_catalogue();
	if (!cat)
		return gopts.kb_dir ? EXIT_USAGE : EXIT_INTERNAL;
	if (do_preflight)
		preflight();
	fflush(stdout);
	fflush(stderr);

	/* stdout and stderr: the same pseudo-terminal when they are terminals, a pipe each otherwise */
	bool tty[2] = {isatty(STDOUT_FILENO) == 1, isatty(STDERR_FILENO) == 1};
	int child_fd[2] = {-1, -1};
	struct stream st[3];
	size_t nst = 0;
	int pty_slave = -1, pty_master = -1;
	if (tty[0] || tty[1]) {
		pty_master = open_pty(tty[0] ? STDOUT_FILENO : STDERR_FILENO, &pty_slave);
		if (pty_master < 0)
			tty[0] = tty[1] = false; /* no pty here: pipes, the command sees no terminal */
	}
	if (pty_master >= 0)
		st[nst++] = (struct stream){pty_master, tty[1] ? STDERR_FILENO : STDOUT_FILENO, sig_scan_new(cat), true};
	for (int k = 0; k < 2; k++) {
		if (tty[k]) {
			child_fd[k] = pty_slave;
			continue;
		}
		int p[2];
		if (pipe2(p, O_CLOEXEC) != 0) {
			gv_error("cannot create a pipe: %s", strerror(errno));
			return EXIT_INTERNAL;
		}
		child_fd[k] = p[1];
		st[nst++] = (struct stream){p[0], k ? STDERR_FILENO : STDOUT_FILENO, sig_scan_new(cat), true};
	}
	int errp[2]; /* exec failure report */
	if (pipe2(errp, O_CLOEXEC) != 0) {
		gv_error("cannot create a pipe: %s", strerror(errno));
		return EXIT_INTERNAL;
	}
	double t_start = now_seconds();
	pid_t pid = fork();
	if (pid < 0) {
		gv_error("cannot start %s: %s", cmd[0], strerror(errno));
		return EXIT_INTERNAL;
	}
	if (pid == 0) {
		dup2(child_fd[0], STDOUT_FILENO);
		dup2(child_fd[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		execvp(cmd[0], cmd);
		int e = errno;
		if (write(errp[1], &e, sizeof(e)) < 0) {
		}
		_exit(127);
	}
	child_pid = pid;
	close(errp[1]);
	if (pty_slave >= 0)
		close(pty_slave);
	for (int k = 0; k < 2; k++)
		if (!tty[k])
			close(child_fd[k]);
	int exec_errno = 0;
	if (read(errp[0], &exec_errno, sizeof(exec_errno)) != (ssize_t)sizeof(exec_errno))
		exec_errno = 0;
	close(errp[0]);
	/* a Ctrl-C at the terminal reaches the command (same process group); gpuvet stays to explain.
	 * A SIGTERM or SIGHUP sent to gpuvet is passed on. */
	struct sigaction ign = {0}, fwd = {0}, old_int, old_quit, old_term, old_hup;
	ign.sa_handler = SIG_IGN;
	fwd.sa_handler = forward;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);
	struct sigaction wsa = {0}, old_winch;
	wsa.sa_handler = on_winch;
	sigaction(SIGWINCH, &wsa, &old_winch);
	signal(SIGPIPE, SIG_IGN);

	job_judge judge = job_judge_doctor();
	struct follower fw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, pid, interval, &judge};
	pthread_t follower_tid;
	bool following = do_watch && !exec_errno && pthread_create(&follower_tid, NULL, follow, &fw) == 0;
	int status = 0;
	bool exited = exec_errno != 0;
	double drain_until = 0;
	if (exec_errno) {
		waitpid(pid, &status, 0);
		gv_error("cannot run %s: %s", cmd[0], strerror(exec_errno));
	}
	char buf[65536];
	for (;;) {
		struct pollfd pf[3];
		size_t np = 0, map[3];
		for (size_t i = 0; i < nst; i++)
			if (st[i].open) {
				pf[np] = (struct pollfd){st[i].from, POLLIN, 0};
				map[np++] = i;
			}
		if (!np && exited)
			break;
		double now = now_seconds();
		if (exited && now >= drain_until)
			break; /* a grandchild keeps the output open: stop reading after a second */
		int timeout = exited ? (int)((drain_until - now) * 1000) + 1 : 200; /* notice the command's exit soon */
		if (timeout < 0)
			timeout = 0;
		int r = np ? poll(pf, np, timeout) : (usleep((useconds_t)timeout * 1000), 0);
		if (winch && pty_master >= 0) { /* the terminal was resized: so is the command's */
			struct winsize ws;
			winch = 0;
			if (ioctl(tty[0] ? STDOUT_FILENO : STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
				ioctl(pty_master, TIOCSWINSZ, &ws);
		}
		for (int i = 0; r > 0 && i < (int)np; i++) {
			struct stream *s = &st[map[i]];
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(s->from, buf, sizeof(buf));
			if (n > 0) {
				write_all(s->to, buf, (size_t)n);
				sig_scan_feed(s->scan, buf, (size_t)n);
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				s->open = false; /* EIO on the pty master: every writer closed it */
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid) {
				exited = true;
				drain_until = now_seconds() + 1;
			}
		}
	}
	child_pid = 0;
	if (following) {
		pthread_mutex_lock(&fw.mu);
		fw.stop = true;
		pthread_cond_signal(&fw.cv);
		pthread_mutex_unlock(&fw.mu);
		pthread_join(follower_tid, NULL); /* waits for a sample in progress */
	}
	for (size_t i = 0; i < nst; i++)
		close(st[i].from);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGQUIT, &old_quit, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigaction(SIGWINCH, &old_winch, NULL);

	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
	if (exec_errno)
		rc = 127;
	double ran = now_seconds() - t_start;

	/* the hits of every stream, stderr's first, each signature once */
	sig_hit *hits = xcalloc(sig_count(cat) + 1, sizeof(*hits));
	size_t nh = 0;
	unsigned long lines = 0;
	for (size_t i = nst; i-- > 0;) {
		size_t n;
		const sig_hit *h = sig_scan_finish(st[i].scan, &n);
		lines += sig_scan_lines(st[i].scan);
		for (size_t k = 0; k < n; k++) {
			bool dup = false;
			for (size_t j = 0; j < nh; j++)
				dup |= hits[j].sig == h[k].sig;
			if (!dup)
				hits[nh++] = h[k];
		}
	}
	fflush(stdout);
	if (rc != 0 || nh) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "\ngpuvet run: %s was ended by signal %d after %.1f s\n", cmd[0], WTERMSIG(status), ran);
		else
			fprintf(stderr, "\ngpuvet run: %s exited with status %d after %.1f s\n", cmd[0], rc, ran);
		eo.no_fallback = rc == 0; /* a success that printed a known error: no check without a cause */
		explain_report(cat, hits, nh, lines, &eo);
	}
	char *verdict = judge.verdict(judge.state, min_seconds);
	if (verdict) {
		fprintf(stderr, "\ngpuvet run: how the job used the GPUs\n");
		fputs(verdict, stderr);
		free(verdict);
	}
	judge.free(judge.state);
	free(hits);
	for (size_t i = 0; i < nst; i++)
		sig_scan_free(st[i].scan);
	sig_catalogue_free(cat);
	fflush(stderr);
	return rc;
}
