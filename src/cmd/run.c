/*
 * gpuvet run -- CMD [ARGS]: runs the user's command with its output passed through unchanged (a
 * terminal stays a terminal: the command writes to a pseudo-terminal that gpuvet copies to its
 * own), with a quick pre-flight beside it (check --fast's fail findings, in a child of its own:
 * cmd/run_preflight.h), follows the job the way watch --pid does, and when the command fails or
 * prints a known error, explains it (gpuvet explain on its output). Everything gpuvet says goes
 * to standard error. The exit status is the command's own (128 + N when a signal N ended it).
 *
 * The copy never waits for anything else: the matcher reads a tap of the output on a thread of
 * its own (explain/tapscan.h), the follower samples on another, and what gpuvet does once the
 * command has ended is held to one deadline (--explain-timeout, gv_deadline_set).
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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/child.h"
#include "diagnose/diagnose.h"
#include "cmd/run_preflight.h"
#include "doctor/doctor.h"
#include "explain/explain.h"
#include "explain/tapscan.h"
#include "render/render.h"
#include "sampler/sampler.h"

enum { OPT_NO_PREFLIGHT = 256, OPT_NO_WATCH, OPT_INTERVAL, OPT_MIN, OPT_EXPLAIN_TIMEOUT };

static const gv_option run_options[] = {
	GV_OPT_FLAG("no-preflight", OPT_NO_PREFLIGHT, "skip the quick check beside the command"),
	GV_OPT_FLAG("no-watch", OPT_NO_WATCH, "do not follow the job's GPUs (no NVML while it runs)"),
	GV_OPT_ARG("interval", OPT_INTERVAL, "S", GV_VAL_NUMBER, "seconds between samples of the job's GPUs (default 1)"),
	GV_OPT_ARG("min-seconds", OPT_MIN, "S", GV_VAL_NUMBER, "the job must hold a GPU this long for a verdict (default 30)"),
	GV_OPT_ARG("explain-timeout", OPT_EXPLAIN_TIMEOUT, "S", GV_VAL_NUMBER,
		   "at most S seconds of gpuvet's own work once the command has ended (default 65: cuInit's 60 and 5)"),
	GV_OPT_GROUP("probing for the explanation, as for check"),
	PROBE_OPTIONS,
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli run_cli = {
	.name = "run",
	.summary = "run a command; on failure, explain its error (gpuvet run -- CMD ARGS)",
	.head = "usage: gpuvet run [options] -- CMD [ARGS...]\n"
		"\n"
		"Runs CMD with its output passed through unchanged. Beside it, prints the fail findings of a\n"
		"quick check (check --fast, in a process of its own: CMD starts at once). While it runs,\n"
		"follows the job (its processes, their GPUs, utilization) like watch --pid. When CMD exits\n"
		"non-zero or prints a known error, explains it as gpuvet explain would, with the cause that\n"
		"holds on this machine; when the job ran long enough, prints the job doctor's verdict (as\n"
		"watch --pid --diagnose: tensor-, DRAM-, FP32-, input- or launch-bound, memory that grows,\n"
		"memory pressure, imbalance, slowdown, what an idle job waits on; judged over 10 s windows,\n"
		"the verdict most windows gave) with its fix. gpuvet's own lines go to stderr. Killed, gpuvet\n"
		"takes CMD along (SIGTERM); what it does after CMD has ended takes at most --explain-timeout.\n"
		"\n"
		"Nothing CMD starts outlives gpuvet run: a process it started whose parent ended (setsid,\n"
		"nohup ... &) is adopted by gpuvet run and killed when gpuvet run ends (docs/explain.md).\n"
		"\n",
	.opts = run_options,
	.tail = "\n"
		"exit status: the command's own; 127 when it cannot be started; 2 usage\n",
	.operands = GV_VAL_COMMAND,
	.getopt_prefix = "+",
};

/* seconds each of the job doctor's verdicts covers */
#define RUN_WINDOW 10
/* each output stream's tap: how far the matcher may lag behind the copy before bytes go unscanned */
#define RUN_TAP_BYTES (4u << 20)
/* the pipes from the command, and the most the copy moves at once */
#define RUN_PIPE_BYTES (1 << 20)
/* the pre-flight's lines wait for the command's line to end, at most this long */
#define PREFLIGHT_LINE_WAIT 2.0
/* what the follower may take to stop (a sample in progress) before it is left behind */
#define FOLLOWER_STOP_WAIT 1.0

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

static struct timespec realtime_in(double s)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	double x = (double)t.tv_sec + t.tv_nsec / 1e9 + s;
	t.tv_sec = (time_t)x;
	t.tv_nsec = (long)((x - (double)t.tv_sec) * 1e9);
	return t;
}

/* The job follower: a thread of its own, so that a slow or hung driver never stalls the copying
 * of the command's output (a command blocked on a full pipe would be gpuvet's fault). */
struct follower {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop, finished;
	pid_t pid;
	double interval;
	doctor_live *doctor;
	run_preflight *pf; /* NULL without a pre-flight */
};

static void *follow(void *arg)
{
	struct follower *fw = arg;
	sampler_lazy lazy = {0};
	lazy.o.no_events = true;
	job jb;
	pthread_mutex_lock(&fw->mu);
	while (!fw->stop) {
		struct timespec until = realtime_in(fw->interval);
		while (!fw->stop && pthread_cond_timedwait(&fw->cv, &fw->mu, &until) == 0)
			;
		if (fw->stop)
			break;
		pthread_mutex_unlock(&fw->mu);
		/* NVML once the pre-flight has seen it answer: a driver that hung there is not called again */
		bool nvml = !fw->pf || run_preflight_nvml_usable(fw->pf);
		job_scan(&jb, (unsigned)fw->pid);
		char err[256];
		snapshot *snap = nvml && jb.alive ? sampler_lazy_take(&lazy, err, sizeof(err)) : NULL;
		pthread_mutex_lock(&fw->mu);
		if (snap) {
			doctor_live_feed(fw->doctor, snap, &jb);
			snapshot_free(snap);
		}
	}
	pthread_mutex_unlock(&fw->mu);
	sampler_lazy_close(&lazy);
	pthread_mutex_lock(&fw->mu);
	fw->finished = true;
	pthread_cond_broadcast(&fw->cv);
	pthread_mutex_unlock(&fw->mu);
	return NULL;
}

/* Stops the follower: true when it did within FOLLOWER_STOP_WAIT (and the deadline). Otherwise
 * it is stuck in a driver call and left behind, detached, with what it uses (fw and its doctor). */
static bool follower_stop(struct follower *fw, pthread_t tid)
{
	double until = now_seconds() + FOLLOWER_STOP_WAIT;
	pthread_mutex_lock(&fw->mu);
	fw->stop = true;
	pthread_cond_broadcast(&fw->cv);
	while (!fw->finished) {
		double left = until - now_seconds(), dl = gv_deadline_left();
		if (dl < left)
			left = dl;
		if (left <= 0)
			break;
		struct timespec t = realtime_in(left < 0.1 ? left : 0.1);
		pthread_cond_timedwait(&fw->cv, &fw->mu, &t);
	}
	bool finished = fw->finished;
	pthread_mutex_unlock(&fw->mu);
	if (finished)
		pthread_join(tid, NULL);
	else
		pthread_detach(tid);
	return finished;
}

struct stream {
	int from;      /* our end: the pty master or a pipe */
	int to;        /* our stdout or stderr */
	tapscan *scan; /* the matcher, beside the copy */
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

/* Opens a pseudo-terminal with the window size and the modes of fd (output processing aside); the
 * master, and *slave. */
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
	if (tcgetattr(like, &t) == 0 || tcgetattr(s, &t) == 0) {
		/* no output processing on this side: gpuvet writes what it reads to the terminal, which
		 * does its own (ONLCR: \n to \r\n); done twice, a newline came out as \r\r\n. The
		 * command's stdin is that terminal, so the modes it sets there (raw, no echo) hold. */
		t.c_oflag &= ~(tcflag_t)OPOST;
		tcsetattr(s, TCSANOW, &t);
	}
	*slave = s;
	return m;
}

static void print_text(char *text)
{
	if (text && *text) {
		fputs(text, stderr);
		fflush(stderr);
	}
	free(text);
}

int cmd_run(int argc, char **argv)
{
	const char *run_usage = gv_usage(&run_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&run_cli, longopts, shortopts);
	explain_opts eo = {.po = {.python_timeout_ms = 20000}, .out = stderr, .command = "run"};
	bool do_preflight = true, do_watch = true;
	double interval = 1, min_seconds = 30, explain_timeout = -1;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
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
		case OPT_EXPLAIN_TIMEOUT:
			if (!parse_double_opt("--explain-timeout", optarg, 0.5, 86400, &explain_timeout))
				return EXIT_USAGE;
			break;
		case 'h': fputs(run_usage, stdout); return EXIT_OK;
		case ':': return usage_error(run_usage, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(run_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error(run_usage, "no command to run: gpuvet run -- CMD [ARGS]");
	if (explain_timeout < 0) /* the longest driver bound of the check (cuInit's) reports first */
		explain_timeout = gv_driver_timeout(60) + 5;
	char **cmd = argv + optind;
	sig_catalogue *cat = explain_catalogue();
	if (!cat)
		return gopts.kb_dir ? EXIT_USAGE : EXIT_INTERNAL;
	fflush(stdout);
	fflush(stderr);
	/* its child first, while this process has no thread; it never holds the command back */
	run_preflight *pf = do_preflight ? run_preflight_start() : NULL;

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
		st[nst++] = (struct stream){.from = pty_master, .to = tty[1] ? STDERR_FILENO : STDOUT_FILENO, .open = true};
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
		/* a larger pipe: fewer, larger reads and writes for a command that writes fast (best effort) */
		fcntl(p[0], F_SETPIPE_SZ, RUN_PIPE_BYTES);
		child_fd[k] = p[1];
		st[nst++] = (struct stream){.from = p[0], .to = k ? STDERR_FILENO : STDOUT_FILENO, .open = true};
	}
	int errp[2]; /* exec failure report */
	if (pipe2(errp, O_CLOEXEC) != 0) {
		gv_error("cannot create a pipe: %s", strerror(errno));
		return EXIT_INTERNAL;
	}
	double t_start = now_seconds();
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		gv_error("cannot start %s: %s", cmd[0], strerror(errno));
		return EXIT_INTERNAL;
	}
	if (pid == 0) {
		/* gpuvet killed outright (SIGKILL, the OOM killer: no handler of its runs) must not leave
		 * the command running with PPID 1: it gets the SIGTERM gpuvet passes on otherwise */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent) /* gpuvet died before the line above */
			_exit(128 + SIGTERM);
		dup2(child_fd[0], STDOUT_FILENO);
		dup2(child_fd[1], STDERR_FILENO);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGXFSZ, SIG_DFL); /* gpuvet ignores it (main.c): the command gets the default */
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
	/* the threads now that the command is forked */
	for (size_t i = 0; i < nst; i++)
		st[i].scan = tapscan_start(cat, RUN_TAP_BYTES);
	if (pf)
		run_preflight_follow(pf);
	int exec_errno = 0;
	if (read(errp[0], &exec_errno, sizeof(exec_errno)) != (ssize_t)sizeof(exec_errno))
		exec_errno = 0;
	close(errp[0]);
	/* a Ctrl-C at the terminal reaches the command (same process group); gpuvet stays to explain.
	 * A SIGTERM or SIGHUP sent to gpuvet is passed on. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, fwd = {.sa_handler = forward}, old_int, old_quit, old_term, old_hup;
	sigaction(SIGINT, &ign, &old_int);
	sigaction(SIGQUIT, &ign, &old_quit);
	sigaction(SIGTERM, &fwd, &old_term);
	sigaction(SIGHUP, &fwd, &old_hup);
	struct sigaction wsa = {.sa_handler = on_winch}, old_winch;
	sigaction(SIGWINCH, &wsa, &old_winch);
	signal(SIGPIPE, SIG_IGN);

	/* the job doctor over windows of RUN_WINDOW seconds (the CPU time of the job's threads is read
	 * at each window's ends, while they still exist); the verdict shown is the one most windows
	 * gave, so a job's start-up or tear-down does not decide it */
	doctor_live_opts dopts = {.window = RUN_WINDOW, .stacks = true};
	/* on the heap: a follower stuck in a driver call is left behind with it (follower_stop) */
	struct follower *fw = xcalloc(1, sizeof(*fw));
	*fw = (struct follower){.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .pid = pid,
				.interval = interval, .doctor = doctor_live_new(&dopts), .pf = pf};
	pthread_t follower_tid;
	bool following = do_watch && !exec_errno && pthread_create(&follower_tid, NULL, follow, fw) == 0;
	int status = 0;
	bool exited = exec_errno != 0;
	double drain_until = 0;
	if (exec_errno) {
		waitpid(pid, &status, 0);
		gv_deadline_set(now_seconds() + explain_timeout);
		gv_error("cannot run %s: %s", cmd[0], strerror(exec_errno));
	}
	int pre_fd = pf ? run_preflight_fd(pf) : -1;
	char *pre_text = NULL; /* the pre-flight's lines, waiting for a line of the command to end */
	double pre_since = 0;
	bool at_line_start = true; /* the last byte copied ended a line */
	char *buf = xmalloc(RUN_PIPE_BYTES);
	double next_collect = now_seconds() + 5;
	for (;;) {
		/* what the command left running when its parent ended was adopted by gpuvet (core/reaper.h):
		 * reaped when it ends, killed when gpuvet run ends */
		if (now_seconds() >= next_collect) {
			gv_child_collect_orphans(pid);
			next_collect = now_seconds() + 5;
		}
		struct pollfd pfd[4];
		size_t np = 0, map[4];
		for (size_t i = 0; i < nst; i++)
			if (st[i].open) {
				pfd[np] = (struct pollfd){.fd = st[i].from, .events = POLLIN};
				map[np++] = i;
			}
		size_t nstreams = np;
		if (!nstreams && exited)
			break;
		double now = now_seconds();
		if (exited && now >= drain_until)
			break; /* a grandchild keeps the output open: stop reading after a second */
		if (pre_fd >= 0)
			pfd[np++] = (struct pollfd){.fd = pre_fd, .events = POLLIN};
		int timeout = exited ? (int)((drain_until - now) * 1000) + 1 : 200; /* notice the command's exit soon */
		if (timeout < 0)
			timeout = 0;
		int r = np ? poll(pfd, np, timeout) : (usleep((useconds_t)timeout * 1000), 0);
		if (winch && pty_master >= 0) { /* the terminal was resized: so is the command's */
			struct winsize ws;
			winch = 0;
			if (ioctl(tty[0] ? STDOUT_FILENO : STDERR_FILENO, TIOCGWINSZ, &ws) == 0)
				ioctl(pty_master, TIOCSWINSZ, &ws);
		}
		if (r > 0 && np > nstreams && pfd[nstreams].revents) { /* the pre-flight has ended */
			pre_fd = -1;
			pre_text = run_preflight_take_text(pf);
			pre_since = now_seconds();
		}
		for (size_t i = 0; r > 0 && i < nstreams; i++) {
			struct stream *s = &st[map[i]];
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t n = read(s->from, buf, RUN_PIPE_BYTES);
			if (n > 0) {
				write_all(s->to, buf, (size_t)n);
				tapscan_feed(s->scan, buf, (size_t)n); /* a copy into its tap, never a wait */
				at_line_start = buf[n - 1] == '\n';
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				s->open = false; /* EIO on the pty master: every writer closed it */
			}
		}
		if (pre_text && (at_line_start || now_seconds() - pre_since >= PREFLIGHT_LINE_WAIT)) {
			print_text(pre_text);
			pre_text = NULL;
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid) {
				exited = true;
				drain_until = now_seconds() + 1;
				/* from here on, one bound for all that gpuvet still does */
				gv_deadline_set(now_seconds() + explain_timeout);
			}
		}
	}
	free(buf);
	child_pid = 0;
	bool followed = following && follower_stop(fw, follower_tid);
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

	/* the matcher's last bytes (at most a tap of each stream), then the hits of every stream,
	 * stderr's first, each signature once */
	sig_hit *hits = xcalloc(sig_count(cat) + 1, sizeof(*hits));
	size_t nh = 0;
	unsigned long lines = 0;
	unsigned long long fed = 0, unscanned = 0;
	for (size_t i = nst; i-- > 0;) {
		size_t n;
		sig_scan *scan = tapscan_finish(st[i].scan, gv_deadline_left());
		const sig_hit *h = sig_scan_finish(scan, &n);
		lines += sig_scan_lines(scan);
		fed += tapscan_fed(st[i].scan);
		unscanned += tapscan_unscanned(st[i].scan);
		for (size_t k = 0; k < n; k++) {
			size_t j = 0;
			while (j < nh && hits[j].sig != h[k].sig)
				j++;
			if (j < nh)
				sig_hit_merge(&hits[j], &h[k]); /* printed on both streams: one error, counted whole */
			else
				hits[nh++] = h[k];
		}
	}
	fflush(stdout);
	if (pf) { /* still running when the command ended: its end (bounded by the deadline) */
		run_preflight_wait(pf);
		if (!pre_text)
			pre_text = run_preflight_take_text(pf);
	}
	print_text(pre_text);
	if (unscanned)
		fprintf(stderr,
			"\ngpuvet run: %.1f MiB of the %.1f MiB of output (%.1f%%) were not scanned for known errors: %s wrote "
			"faster than the matcher reads (the output itself passed whole)\n",
			unscanned / 1048576.0, fed / 1048576.0, 100.0 * (double)unscanned / (double)fed, cmd[0]);
	if (rc != 0 || nh) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "\ngpuvet run: %s was ended by signal %d after %.1f s\n", cmd[0], WTERMSIG(status), ran);
		else
			fprintf(stderr, "\ngpuvet run: %s exited with status %d after %.1f s\n", cmd[0], rc, ran);
		eo.no_fallback = rc == 0; /* a success that printed a known error: no check without a cause */
		eo.po.driver_hung = pf ? run_preflight_hung_facts(pf) : NULL; /* not waited for twice */
		if (gv_deadline_left() < PROBES_ISOLATED_MIN_SECONDS)
			fprintf(stderr, "gpuvet run: --explain-timeout (%g s) is spent: the explanation's check does not load the "
					"driver's libraries (NVML, CUDA), what follows lacks them\n", explain_timeout);
		explain_report(cat, hits, nh, lines, &eo);
	}
	if (followed) {
		char *verdict = doctor_live_report(fw->doctor, min_seconds);
		if (verdict) {
			fprintf(stderr, "\ngpuvet run: how the job used the GPUs\n");
			fputs(verdict, stderr);
			free(verdict);
		}
	} else if (following) {
		fprintf(stderr, "\ngpuvet run: no verdict on how the job used the GPUs: the job follower is stuck in a "
				"driver call\n");
	}
	if (followed || !following) {
		doctor_live_free(fw->doctor);
		free(fw);
	}
	run_preflight_free(pf);
	free(hits);
	for (size_t i = 0; i < nst; i++)
		tapscan_free(st[i].scan);
	sig_catalogue_free(cat);
	gv_deadline_set(0);
	fflush(stderr);
	return rc;
}
