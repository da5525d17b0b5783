/*
 * The supervised child (child.h). Protocol on the report pipe, child to parent, one record each:
 *   type (1 byte) | length (4 bytes, host order) | payload
 *   'S' stage begins: "lib\0file\0call"      'E' stage ends
 *   'P' first output on fd 1 came in this stage: "lib\0file\0call"
 *   'F' the facts, as core/facts_wire.h packs them; the last record
 * Stage records are short (one write below PIPE_BUF, atomic between the child's threads).
 * fd 1 and fd 2 of the child are memfds the parent reads after the end, whatever the end was.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/child.h"
#include "core/factkeys.h"
#include "core/facts_wire.h"
#include "core/reaper.h"
#include "core/sysroot.h"
#include "core/trace.h"

#define CHILD_OUTPUT_MAX (1 << 20) /* RLIMIT_FSIZE of the child: a library printing forever fills no memory */
#define MAX_LIVE 32

struct gv_child {
	char name[64];
	pid_t pid;
	int msg_fd, out_fd, err_fd;
	double t0;
	char error[160];
	char limit_call[96]; /* gv_child_set_call_limit */
	double call_limit;
};

/* ---- the live children, for the signal handler ---- */

static volatile sig_atomic_t live[MAX_LIVE];
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static void live_add(pid_t pid);
static void live_remove(pid_t pid);

void gv_child_track(pid_t pid)
{
	live_add(pid);
}

void gv_child_untrack(pid_t pid)
{
	live_remove(pid);
}

static void live_add(pid_t pid)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live[i]) {
			live[i] = pid;
			break;
		}
	pthread_mutex_unlock(&live_lock);
}

static void live_remove(pid_t pid)
{
	pthread_mutex_lock(&live_lock);
	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i] == pid)
			live[i] = 0;
	pthread_mutex_unlock(&live_lock);
}

bool gv_child_tracked(pid_t pid)
{
	for (int i = 0; i < MAX_LIVE; i++)
		if (live[i] == pid)
			return true;
	return false;
}

typedef struct keep_ctx {
	pid_t also;
} keep_ctx;

static bool keep_waited(pid_t pid, void *ctx)
{
	return pid == ((keep_ctx *)ctx)->also || gv_child_tracked(pid);
}

void gv_child_collect_orphans(pid_t also_keep)
{
	keep_ctx k = {.also = also_keep};
	reaper_collect(keep_waited, &k);
}

static volatile sig_atomic_t stopping; /* gv_child_kill_all ran: the kills are ours */

void gv_child_kill_all(void)
{
	stopping = 1;
	for (int i = 0; i < MAX_LIVE; i++) {
		pid_t p = live[i];
		if (p > 0) {
			kill(-p, SIGKILL); /* its process group: helpers a library started too */
			kill(p, SIGKILL);
		}
	}
}

static void on_fatal_signal(int sig)
{
	gv_child_kill_all();
	reaper_end(); /* and what they left below gpuvet (core/reaper.h) */
	signal(sig, SIG_DFL);
	raise(sig);
}

static volatile sig_atomic_t watchdog_sig;
static const char *watchdog_reset;
static size_t watchdog_reset_len;

static void on_watchdog(int s)
{
	(void)s;
	if (watchdog_reset_len) {
		ssize_t w = write(STDOUT_FILENO, watchdog_reset, watchdog_reset_len);
		(void)w;
	}
	gv_child_kill_all();
	reaper_end();
	_exit(128 + watchdog_sig);
}

void gv_stop_watchdog(int sig, const char *reset)
{
	if (watchdog_sig)
		return; /* armed already: a second ^C changes nothing */
	watchdog_sig = sig;
	watchdog_reset = reset;
	size_t n = 0;
	while (reset && reset[n])
		n++;
	watchdog_reset_len = n;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_watchdog;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	alarm(1);
}

void gv_child_signals_install(void)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		/* one ignored when we started stays ignored (nohup, a background job of a script) */
		if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(sigs[i], &sa, NULL);
}

/* ---- inside the child ---- */

static int child_msg = -1;        /* the report pipe; -1 outside a child */
static bool child_out_seen;       /* the 'P' record was sent */
static char cur_stage[PIPE_BUF - 8]; /* the open stage, as its payload */
static size_t cur_stage_len;
static pthread_mutex_t stage_lock = PTHREAD_MUTEX_INITIALIZER;

bool gv_child_inside(void)
{
	return child_msg >= 0;
}

static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static void send_record(char type, const void *payload, size_t len)
{
	char head[5];
	uint32_t l = (uint32_t)len;
	head[0] = type;
	memcpy(head + 1, &l, 4);
	if (len + 5 <= PIPE_BUF) { /* one write: records of several threads never interleave */
		char buf[PIPE_BUF];
		memcpy(buf, head, 5);
		memcpy(buf + 5, payload, len);
		write_all(child_msg, buf, len + 5);
		return;
	}
	if (write_all(child_msg, head, 5))
		write_all(child_msg, payload, len);
}

/* Output on fd 1 since the last look: attributed to the stage open now (or just ended). */
static void check_output_locked(void)
{
	if (child_out_seen)
		return;
	fflush(stdout);
	struct stat st;
	if (fstat(STDOUT_FILENO, &st) == 0 && st.st_size > 0) {
		child_out_seen = true;
		send_record('P', cur_stage, cur_stage_len);
	}
}

void gv_child_stage(const char *lib, const char *file, const char *call)
{
	if (child_msg < 0)
		return;
	pthread_mutex_lock(&stage_lock);
	check_output_locked();
	size_t a = strnlen(lib ? lib : "", 63), b = strnlen(file ? file : "", PATH_MAX - 1), c = strnlen(call ? call : "", 95);
	if (a + b + c + 3 > sizeof(cur_stage))
		b = sizeof(cur_stage) - a - c - 3;
	char *p = cur_stage;
	memcpy(p, lib ? lib : "", a), p += a, *p++ = '\0';
	memcpy(p, file ? file : "", b), p += b, *p++ = '\0';
	memcpy(p, call ? call : "", c), p += c, *p++ = '\0';
	cur_stage_len = (size_t)(p - cur_stage);
	send_record('S', cur_stage, cur_stage_len);
	pthread_mutex_unlock(&stage_lock);
}

void gv_child_stage_end(void)
{
	if (child_msg < 0)
		return;
	pthread_mutex_lock(&stage_lock);
	check_output_locked();
	send_record('E', "", 0);
	pthread_mutex_unlock(&stage_lock);
}

/* dlopen in this process takes it shared, fork exclusive: a fork beside another thread's dlopen
 * would give the child the loader's lock held for good (glibc before 2.38) */
/* LeakSanitizer (the sanitizer builds) asks this at exit. A supervised child is a fork of a
 * process with threads: what those threads' stacks point to is unreachable in the child, so every
 * such block would read as a leak, and a library that calls exit() in it would change its status
 * (the child's exit status is what gpuvet reports). The parent's check is the one that counts. */
static volatile sig_atomic_t in_supervised_child;
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void)
{
	return in_supervised_child;
}

static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;

static void child_main(int msg, int out, int err, pid_t parent, const char *name, gv_child_body body, void *arg)
{
	/* the parent held the fork lock for writing when it forked: a fresh one here */
	pthread_rwlock_init(&fork_lock, NULL);
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent) /* the parent died before the line above */
		_exit(127);
	/* the parent's handlers (and a watch's flag setters) are not ours: die like a plain process */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* a crash is a crash: no inherited handler (a sanitizer's, a test framework's) turns it into an exit */
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* over the output bound: writes fail, the child goes on */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	struct rlimit rl = {CHILD_OUTPUT_MAX, CHILD_OUTPUT_MAX};
	setrlimit(RLIMIT_FSIZE, &rl);
	int devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0) {
		dup2(devnull, STDIN_FILENO);
		close(devnull);
	}
	dup2(out, STDOUT_FILENO);
	dup2(err, STDERR_FILENO);
	close(out);
	close(err);
	setvbuf(stdout, NULL, _IONBF, 0);
	setvbuf(stderr, NULL, _IONBF, 0);
	child_msg = msg;
	facts *f = facts_new();
	body(f, arg);
	gv_trace("child %s done", name);
	pthread_mutex_lock(&stage_lock);
	check_output_locked();
	pthread_mutex_unlock(&stage_lock);
	size_t len;
	char *s = facts_wire_pack(f, &len);
	send_record('F', s, len);
	gv_trace("child %s sent %zu bytes", name, len);
	/* no exit(): neither our atexit handlers nor a library's destructors run here */
	_exit(0);
}

void gv_child_dlopen_begin(void)
{
	if (child_msg < 0)
		pthread_rwlock_rdlock(&fork_lock);
}

void gv_child_dlopen_end(void)
{
	if (child_msg < 0)
		pthread_rwlock_unlock(&fork_lock);
}

gv_child *gv_child_start(const char *name, gv_child_body body, void *arg)
{
	gv_child *c = xcalloc(1, sizeof(*c));
	str_copy(c->name, sizeof(c->name), name);
	c->pid = -1;
	c->msg_fd = c->out_fd = c->err_fd = -1;
	c->t0 = now_seconds();
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		snprintf(c->error, sizeof(c->error), "cannot create a pipe: %s", strerror(errno));
		return c;
	}
	c->out_fd = memfd_create("gpuvet-child-stdout", MFD_CLOEXEC);
	c->err_fd = memfd_create("gpuvet-child-stderr", MFD_CLOEXEC);
	if (c->out_fd < 0 || c->err_fd < 0) { /* no memfd (old kernel): output goes nowhere, still never to our fd 1 */
		if (c->out_fd < 0)
			c->out_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
		if (c->err_fd < 0)
			c->err_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	}
	if (c->out_fd < 0 || c->err_fd < 0) {
		snprintf(c->error, sizeof(c->error), "cannot capture the child's output: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return c;
	}
	fflush(stdout); /* nothing of ours may be written twice by a child's exit() */
	fflush(stderr);
	pid_t parent = getpid();
	pthread_rwlock_wrlock(&fork_lock);
	pid_t pid = fork();
	if (pid != 0)
		pthread_rwlock_unlock(&fork_lock); /* the child starts a fresh one (child_main) */
	if (pid < 0) {
		snprintf(c->error, sizeof(c->error), "cannot fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return c;
	}
	if (pid == 0) {
		in_supervised_child = 1;
		close(p[0]);
		child_main(p[1], c->out_fd, c->err_fd, parent, c->name, body, arg);
	}
	setpgid(pid, pid); /* also here: no window where a signal to the group misses it */
	close(p[1]);
	c->pid = pid;
	c->msg_fd = p[0];
	live_add(pid);
	return c;
}

/* ---- the parent's side ---- */

static _Atomic double deadline_at; /* gv_deadline_set; 0: none */

void gv_deadline_set(double until)
{
	atomic_store(&deadline_at, until > 0 ? until : 0);
}

double gv_deadline_left(void)
{
	double d = atomic_load(&deadline_at);
	return d > 0 ? d - now_seconds() : 1e18;
}

void gv_child_set_call_limit(gv_child *c, const char *call, double seconds)
{
	str_copy(c->limit_call, sizeof(c->limit_call), call);
	c->call_limit = seconds;
}

static void reap_ending(pid_t pid)
{
	/* ended but not reaped yet (WNOWAIT): the pid cannot be reused before the note is gone */
	siginfo_t si;
	while (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	reaper_ending_reaped(pid);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static void *reaper(void *arg)
{
	reap_ending((pid_t)(intptr_t)arg);
	return NULL;
}

/* A child that reported and is still exiting: reaped by a detached thread, so that a
 * long-running serve leaves no zombies behind. Its signal mask is ours: it takes no signal. */
static void reap_later(pid_t pid)
{
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_t t;
	reaper_note_ending(pid);
	if (pthread_create(&t, &a, reaper, (void *)(intptr_t)pid) != 0)
		reap_ending(pid);
	pthread_attr_destroy(&a);
}

/* SIGINT or SIGTERM waiting while blocked (serve takes them with sigwait): the wait gives up so
 * that the caller gets to them within a fraction of a second. */
bool gv_child_stop_pending(void)
{
	sigset_t p;
	if (sigpending(&p) != 0)
		return false;
	return sigismember(&p, SIGINT) == 1 || sigismember(&p, SIGTERM) == 1;
}

static void stage_from(const char *payload, size_t len, char *lib, char *file, char *call)
{
	const char *end = payload + len, *p = payload;
	char *dst[3] = {lib, file, call};
	size_t cap[3] = {64, PATH_MAX, 96};
	for (int k = 0; k < 3; k++) {
		size_t n = strnlen(p, (size_t)(end - p));
		if (n >= cap[k])
			n = cap[k] - 1;
		memcpy(dst[k], p, n);
		dst[k][n] = '\0';
		p += strnlen(p, (size_t)(end - p));
		if (p < end)
			p++;
	}
}

static void read_output(int fd, size_t *bytes, char *text, size_t size)
{
	struct stat st;
	*bytes = 0;
	text[0] = '\0';
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return;
	*bytes = (size_t)st.st_size;
	ssize_t n = pread(fd, text, size - 1, 0);
	text[n > 0 ? n : 0] = '\0';
}

gv_child_outcome gv_child_wait(gv_child *c, double limit, facts *f, gv_child_report *r)
{
	memset(r, 0, sizeof(*r));
	r->limit = limit;
	if (c->pid < 0) {
		r->outcome = GV_CHILD_NO_START;
		str_copy(r->error, sizeof(r->error), c->error);
		goto out;
	}
	strbuf in;
	sb_init(&in);
	size_t used = 0; /* bytes of `in` already parsed */
	bool eof = false, got_facts = false, killed = false;
	char *facts_bytes = NULL;
	size_t facts_len = 0;
	double until = c->t0 + limit, call_start = 0;
	while (!eof && !got_facts) {
		double dl = atomic_load(&deadline_at);
		if (dl > 0 && dl < until) { /* gv_deadline_set, maybe while this waited */
			until = dl;
			r->limit = dl > c->t0 ? dl - c->t0 : 0;
		}
		double left = until - now_seconds();
		if (c->call_limit > 0 && r->in_call && strcmp(r->call, c->limit_call) == 0 &&
		    call_start + c->call_limit < until) {
			left = call_start + c->call_limit - now_seconds();
			if (left <= 0) {
				until = now_seconds(); /* killed below, hung in that call */
				r->limit = c->call_limit;
				break;
			}
		}
		if (left <= 0)
			break;
		if (gv_child_stop_pending()) {
			until = now_seconds(); /* killed below */
			stopping = 1;
			break;
		}
		struct pollfd pfd = {c->msg_fd, POLLIN, 0};
		int pr = poll(&pfd, 1, left > 0.1 ? 100 : (int)(left * 1000) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		char buf[65536]; /* the facts record in one read where the pipe holds it */
		ssize_t n = read(c->msg_fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			eof = true;
			break;
		}
		sb_addn(&in, buf, (size_t)n);
		while (in.len - used >= 5) {
			uint32_t l;
			memcpy(&l, in.buf + used + 1, 4);
			if (in.len - used - 5 < l)
				break;
			char type = in.buf[used];
			const char *pl = in.buf + used + 5;
			if (type == 'S') {
				stage_from(pl, l, r->lib, r->file, r->call);
				r->in_call = true;
				call_start = now_seconds();
			} else if (type == 'E') {
				r->in_call = false;
			} else if (type == 'P') {
				stage_from(pl, l, r->out_lib, r->out_file, r->out_call);
			} else if (type == 'F') {
				free(facts_bytes);
				facts_bytes = xmalloc(l ? l : 1);
				memcpy(facts_bytes, pl, l);
				facts_len = l;
				got_facts = true;
			}
			used += 5 + l;
		}
	}
	int st = 0;
	pid_t w = 0;
	if (got_facts) {
		gv_trace("child %s reported", c->name);
		/* the facts are the last record: the child only calls _exit now, and the kernel's
		 * teardown of what the driver mapped (a CUDA context: milliseconds) is not ours to wait for */
		w = waitpid(c->pid, &st, WNOHANG);
		if (w == 0)
			reap_later(c->pid);
		if (w == 0 || (w == c->pid && WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			live_remove(c->pid);
			r->seconds = now_seconds() - c->t0;
			r->outcome = GV_CHILD_OK;
			goto parse;
		}
	}
	/* after the pipe closed the child is ending; a child that closed it and goes on is hung too */
	while ((w = waitpid(c->pid, &st, WNOHANG)) == 0 && now_seconds() < until)
		sleep_seconds(0.002);
	if (w == 0) {
		reaper_kill_tree(c->pid); /* with what it started, also outside its group (setsid) */
		kill(-c->pid, SIGKILL);
		kill(c->pid, SIGKILL);
		while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
			;
		killed = true;
	}
	live_remove(c->pid);
	r->seconds = now_seconds() - c->t0;
	if ((killed || (WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) && stopping) {
		r->outcome = GV_CHILD_STOPPED;
	} else if (killed) {
		r->outcome = GV_CHILD_HUNG;
	} else if (WIFSIGNALED(st)) {
		r->outcome = GV_CHILD_CRASHED;
		r->signal = WTERMSIG(st);
	} else if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && got_facts) {
		r->outcome = GV_CHILD_OK;
	} else {
		r->outcome = GV_CHILD_EXITED;
		r->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	}
parse:
	/* cannot fail with our own writer; if it does, say so rather than lose it silently */
	if (r->outcome == GV_CHILD_OK && f && facts_bytes && !facts_wire_unpack(f, facts_bytes, facts_len)) {
		r->outcome = GV_CHILD_EXITED;
		r->exit_status = 0;
	}
	free(facts_bytes);
	sb_free(&in);
	close(c->msg_fd);
out:
	read_output(c->out_fd, &r->out_bytes, r->out_text, sizeof(r->out_text));
	read_output(c->err_fd, &r->err_bytes, r->err_text, sizeof(r->err_text));
	if (r->out_bytes && !r->out_lib[0] && !r->out_call[0]) { /* died before it could say: the stage it was in */
		str_copy(r->out_lib, sizeof(r->out_lib), r->lib);
		str_copy(r->out_file, sizeof(r->out_file), r->file);
		str_copy(r->out_call, sizeof(r->out_call), r->call);
	}
	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->err_fd >= 0)
		close(c->err_fd);
	free(c);
	return r->outcome;
}

const char *gv_child_outcome_name(gv_child_outcome o)
{
	switch (o) {
	case GV_CHILD_OK: return "ok";
	case GV_CHILD_HUNG: return "hung";
	case GV_CHILD_CRASHED: return "crashed";
	case GV_CHILD_EXITED: return "exited";
	case GV_CHILD_NO_START: return "not started";
	case GV_CHILD_STOPPED: return "stopped";
	}
	return "unknown";
}

/* A library's output as a fact value, as it printed it but for the blanks around it: the text
 * renderer escapes what a terminal must not get (render/text.h), JSON escapes as JSON. */
static void put_output(facts *f, const char *name, const char *stream, size_t bytes, const char *text)
{
	if (!bytes)
		return;
	char buf[256];
	str_copy(buf, sizeof(buf), text);
	char *t = str_trim(buf);
	bool err = strcmp(stream, "stderr") == 0; /* else stdout */
	facts_put_int(f, "fd", (long long)bytes, err ? FK_ISOLATION_STDERR_BYTES : FK_ISOLATION_STDOUT_BYTES, name);
	facts_put_str(f, "fd", t, err ? FK_ISOLATION_STDERR : FK_ISOLATION_STDOUT, name);
}

/* The size an ELF file says it has (its section headers, its segments), 0 when not ELF64 or unreadable. */
static long long elf_claimed_size(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	unsigned char h[64];
	long long claim = 0;
	if (pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) && memcmp(h, "\177ELF", 4) == 0 && h[4] == 2 && h[5] == 1) {
		uint64_t phoff, shoff;
		uint16_t phentsize, phnum, shentsize, shnum;
		memcpy(&phoff, h + 32, 8);
		memcpy(&shoff, h + 40, 8);
		memcpy(&phentsize, h + 54, 2);
		memcpy(&phnum, h + 56, 2);
		memcpy(&shentsize, h + 58, 2);
		memcpy(&shnum, h + 60, 2);
		if (shoff && shnum)
			claim = (long long)(shoff + (uint64_t)shentsize * shnum);
		for (unsigned i = 0; i < phnum && i < 64 && phentsize >= 56; i++) {
			unsigned char ph[56];
			if (pread(fd, ph, sizeof(ph), (off_t)(phoff + (uint64_t)i * phentsize)) != (ssize_t)sizeof(ph))
				break;
			uint64_t off, filesz;
			memcpy(&off, ph + 8, 8);
			memcpy(&filesz, ph + 32, 8);
			if ((long long)(off + filesz) > claim)
				claim = (long long)(off + filesz);
		}
	}
	close(fd);
	return claim;
}

void gv_child_put_facts(facts *f, const char *name, const gv_child_report *r)
{
	const char *src = "supervised child";
	facts_put_str(f, src, gv_child_outcome_name(r->outcome), FK_ISOLATION_OUTCOME, name);
	facts_put_real(f, src, r->seconds, FK_ISOLATION_SECONDS, name);
	put_output(f, name, "stdout", r->out_bytes, r->out_text);
	put_output(f, name, "stderr", r->err_bytes, r->err_text);
	if (r->out_bytes) {
		if (r->out_lib[0])
			facts_put_str(f, src, r->out_lib, FK_ISOLATION_STDOUT_LIBRARY, name);
		if (r->out_file[0])
			facts_put_str(f, src, sysroot_strip(r->out_file), FK_ISOLATION_STDOUT_FILE, name);
		if (r->out_call[0])
			facts_put_str(f, src, r->out_call, FK_ISOLATION_STDOUT_CALL, name);
	}
	if (r->outcome == GV_CHILD_OK)
		return;
	if (r->outcome == GV_CHILD_NO_START) {
		facts_put_state(f, FACT_ERROR, src, r->error, FK_ISOLATION_ERROR, name);
		return;
	}
	if (r->lib[0])
		facts_put_str(f, src, r->lib, FK_ISOLATION_LIBRARY, name);
	if (r->file[0])
		facts_put_str(f, src, sysroot_strip(r->file), FK_ISOLATION_FILE, name);
	if (r->call[0])
		facts_put_str(f, src, r->call, FK_ISOLATION_CALL, name);
	facts_put_bool(f, src, r->in_call, FK_ISOLATION_IN_CALL, name);
	if (r->outcome == GV_CHILD_HUNG)
		facts_put_real(f, src, r->limit, FK_ISOLATION_LIMIT_SECONDS, name);
	if (r->outcome == GV_CHILD_CRASHED) {
		char sig[32];
		snprintf(sig, sizeof(sig), "SIG%s", sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?");
		facts_put_str(f, src, sig, FK_ISOLATION_SIGNAL, name);
		facts_put_str(f, src, strsignal(r->signal), FK_ISOLATION_SIGNAL_TEXT, name);
	}
	if (r->outcome == GV_CHILD_EXITED)
		facts_put_int(f, src, r->exit_status, FK_ISOLATION_EXIT_STATUS, name);
	if (r->file[0]) {
		struct stat st;
		long long claim = elf_claimed_size(r->file);
		if (stat(r->file, &st) == 0 && claim > st.st_size) {
			facts_put_int(f, sysroot_strip(r->file), (long long)st.st_size, FK_ISOLATION_FILE_BYTES, name);
			facts_put_int(f, sysroot_strip(r->file), claim, FK_ISOLATION_FILE_ELF_BYTES, name);
		}
	}
}

const char *gv_child_describe(const gv_child_report *r, char *buf, size_t size)
{
	char where[PATH_MAX + 200] = "";
	if (r->call[0] || r->file[0])
		snprintf(where, sizeof(where), " %s %s%s%s%s", r->in_call ? "in" : "after", r->call[0] ? r->call : "a call",
			 r->file[0] ? " (" : "", r->file, r->file[0] ? ")" : "");
	switch (r->outcome) {
	case GV_CHILD_OK: snprintf(buf, size, "answered in %.3f s", r->seconds); break;
	case GV_CHILD_HUNG: snprintf(buf, size, "did not answer within %.0f s%s: killed", r->limit, where); break;
	case GV_CHILD_CRASHED:
		snprintf(buf, size, "crashed with SIG%s (%s)%s", sigabbrev_np(r->signal) ? sigabbrev_np(r->signal) : "?",
			 strsignal(r->signal), where);
		break;
	case GV_CHILD_EXITED: snprintf(buf, size, "ended the process with exit status %d%s", r->exit_status, where); break;
	case GV_CHILD_NO_START: snprintf(buf, size, "could not be started: %s", r->error); break;
	case GV_CHILD_STOPPED: snprintf(buf, size, "was stopped%s: gpuvet was interrupted", where); break;
	}
	return buf;
}

double gv_driver_timeout(double dflt)
{
	const char *e = getenv("GPUVET_DRIVER_TIMEOUT");
	if (e && *e) {
		char *end;
		double v = strtod(e, &end);
		if (end != e && v >= 0.1 && v <= 3600)
			dflt = v;
	}
	double left = gv_deadline_left() - 1;
	if (left < dflt)
		dflt = left > 0.1 ? left : 0.1;
	return dflt;
}
