/* Nothing gpuvet starts outlives it (reaper.h): /proc walked with async-signal-safe calls only. */
#include "core/reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The processes of one tree held at once; a tree larger than this is killed in several rounds
 * (what was left out is found by the next round's walk). */
#define TREE_MAX 2048
#define ROUNDS_MAX 64

/* getdents64's records (the kernel's struct linux_dirent64). */
struct dirent64_rec {
	uint64_t ino;
	int64_t off;
	unsigned short reclen;
	unsigned char type;
	char name[];
};

/* head, the decimal n, then tail, into buf (no snprintf: it is not async-signal-safe). */
static void proc_path(char *buf, const char *head, long n, const char *tail)
{
	char digits[24];
	int k = 0;
	unsigned long v = (unsigned long)n;
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k < (int)sizeof(digits));
	size_t at = 0;
	while (*head)
		buf[at++] = *head++;
	while (k)
		buf[at++] = digits[--k];
	while (*tail)
		buf[at++] = *tail++;
	buf[at] = '\0';
}

/* The parent and state ('Z' for a zombie) of pid, from /proc/PID/stat: "PID (COMM) S PPID ...",
 * COMM may hold blanks and parentheses, so the fields are read after the last ')'. */
static bool read_stat(pid_t pid, pid_t *ppid, char *state)
{
	char path[48], buf[512];
	proc_path(path, "/proc/", pid, "/stat");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	char *close_paren = NULL;
	for (char *p = buf; *p; p++)
		if (*p == ')')
			close_paren = p;
	if (!close_paren || close_paren[1] != ' ' || !close_paren[2] || close_paren[3] != ' ')
		return false;
	*state = close_paren[2];
	long v = 0;
	const char *p = close_paren + 4;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	*ppid = (pid_t)v;
	return true;
}

/* Calls fn(ctx, n) for every entry of the directory dir whose name is a number. */
static void each_number(const char *dir, void (*fn)(void *ctx, long n), void *ctx)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return;
	char buf[8192] __attribute__((aligned(8)));
	for (;;) {
		long n = syscall(SYS_getdents64, dfd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			const struct dirent64_rec *d = (const struct dirent64_rec *)(buf + off);
			off += d->reclen;
			long v = 0;
			const char *s = d->name;
			if (*s < '1' || *s > '9')
				continue;
			while (*s >= '0' && *s <= '9' && v < 1L << 30)
				v = v * 10 + (*s++ - '0');
			if (*s == '\0')
				fn(ctx, v);
		}
	}
	close(dfd);
}

typedef struct process_walk {
	void (*fn)(void *ctx, pid_t pid, pid_t ppid, char state);
	void *ctx;
} process_walk;

static void process_entry(void *ctx, long pid)
{
	process_walk *w = ctx;
	pid_t ppid;
	char state;
	if (read_stat((pid_t)pid, &ppid, &state))
		w->fn(w->ctx, (pid_t)pid, ppid, state);
}

/* Calls fn for every process of /proc. */
static void each_process(void (*fn)(void *ctx, pid_t pid, pid_t ppid, char state), void *ctx)
{
	process_walk w = {.fn = fn, .ctx = ctx};
	each_number("/proc", process_entry, &w);
}

/* The children noted ending (reaper_note_ending); 0 is a free slot. Lock-free atomics: read from
 * signal handlers too. */
#define ENDING_MAX 64
static _Atomic int ending[ENDING_MAX];

void reaper_note_ending(pid_t pid)
{
	for (size_t i = 0; i < ENDING_MAX; i++) {
		int free_slot = 0;
		if (atomic_compare_exchange_strong(&ending[i], &free_slot, (int)pid))
			return;
	}
	/* all taken: this one is waited for at the end, as any child */
}

void reaper_ending_reaped(pid_t pid)
{
	for (size_t i = 0; i < ENDING_MAX; i++) {
		int was = (int)pid;
		if (atomic_compare_exchange_strong(&ending[i], &was, 0))
			return;
	}
}

static bool is_ending(pid_t pid)
{
	for (size_t i = 0; i < ENDING_MAX; i++)
		if (atomic_load(&ending[i]) == (int)pid)
			return true;
	return false;
}

typedef struct children_look {
	const char *task_dir; /* "/proc/self/task/" or "/proc/PID/task/" */
	bool any, unknown;
	bool skip_ending; /* a child noted ending counts only by what it started */
} children_look;

static bool has_children(pid_t pid);

static void thread_children(void *ctx, long tid)
{
	children_look *c = ctx;
	char path[96], b[4096];
	proc_path(path, c->task_dir, tid, "/children");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		c->unknown = true; /* a kernel without CONFIG_PROC_CHILDREN: the walk decides */
		return;
	}
	ssize_t n = read(fd, b, sizeof(b));
	close(fd);
	if (n <= 0)
		return;
	if (!c->skip_ending || n == (ssize_t)sizeof(b)) { /* a list this long: not read through */
		c->any = true;
		return;
	}
	/* "PID PID ... " */
	for (ssize_t i = 0; i < n && !c->any;) {
		long v = 0;
		while (i < n && b[i] >= '0' && b[i] <= '9')
			v = v * 10 + (b[i++] - '0');
		while (i < n && (b[i] < '0' || b[i] > '9'))
			i++;
		if (v > 0 && (!is_ending((pid_t)v) || has_children((pid_t)v)))
			c->any = true;
	}
}

/* Whether pid has a child (any of its threads'); unknown counts as yes. */
static bool has_children(pid_t pid)
{
	char dir[48];
	proc_path(dir, "/proc/", pid, "/task/");
	children_look c = {.task_dir = dir};
	each_number(dir, thread_children, &c);
	return c.any || c.unknown;
}

/* Whether gpuvet may have a child: every process below it has an ancestor that is its child (it
 * adopts what is orphaned), so none means nothing to walk /proc for, the usual case at exit. A
 * child that only has its exit left, and started nothing, does not count. */
static bool may_have_children(void)
{
	children_look c = {.task_dir = "/proc/self/task/", .skip_ending = true};
	each_number("/proc/self/task", thread_children, &c);
	return c.any || c.unknown;
}

typedef struct tree {
	pid_t root, self;
	pid_t v[TREE_MAX]; /* v[0] is the root */
	size_t n;
	bool grew, full;
} tree;

static bool in_tree(const tree *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i] == pid)
			return true;
	return false;
}

/* A process whose parent is in the tree joins it, stopped (a stopped process forks no more). */
static void add_if_below(void *ctx, pid_t pid, pid_t ppid, char state)
{
	tree *t = ctx;
	(void)state;
	if (pid == t->self || !in_tree(t, ppid) || in_tree(t, pid))
		return;
	if (t->n == TREE_MAX) {
		t->full = true;
		return;
	}
	kill(pid, SIGSTOP);
	t->v[t->n++] = pid;
	t->grew = true;
}

/* The tree below t->root, walked until a walk finds nothing new (or it is full). */
static void find_tree(tree *t)
{
	for (int round = 0; round < ROUNDS_MAX; round++) {
		t->grew = false;
		each_process(add_if_below, t);
		if (!t->grew || t->full)
			return;
	}
}

static double now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct reap_ctx {
	const tree *t;
	size_t left; /* members (but the root) still in /proc */
} reap_ctx;

/* A member that is gpuvet's child now (its parent was killed, gpuvet adopted it) is reaped. */
static void reap_member(void *ctx, pid_t pid, pid_t ppid, char state)
{
	reap_ctx *r = ctx;
	const tree *t = r->t;
	if (pid == t->root || !in_tree(t, pid))
		return;
	/* its exit under way: neither waited for nor reaped here (the thread that waits for it drops
	 * the note first, as in collect_one) */
	if (ppid == t->self && is_ending(pid))
		return;
	if (ppid == t->self && state == 'Z' && waitpid(pid, NULL, WNOHANG) == pid)
		return;
	r->left++;
}

/* SIGKILL to every member (the root too, unless it is gpuvet), then reaping until none is left
 * or a second has passed. A member gpuvet may not signal (another user's: a setuid program) is
 * not waited for. */
static void kill_and_reap(tree *t)
{
	for (size_t i = 1; i < t->n;) {
		if (kill(t->v[i], SIGKILL) != 0 && errno == EPERM)
			t->v[i] = t->v[--t->n];
		else
			i++;
	}
	if (t->root != t->self)
		kill(t->root, SIGKILL);
	double until = now_mono() + 1.0;
	for (;;) {
		reap_ctx r = {.t = t};
		each_process(reap_member, &r);
		if (!r.left || now_mono() > until)
			return;
		struct timespec pause = {0, 2000000};
		nanosleep(&pause, NULL);
	}
}

static void kill_below(pid_t root, bool with_root)
{
	int saved = errno;
	for (int pass = 0; pass < 8; pass++) {
		tree t = {.root = root, .self = getpid(), .n = 1};
		t.v[0] = root;
		if (with_root && root != t.self)
			kill(root, SIGSTOP);
		find_tree(&t);
		if (t.n == 1 && !with_root)
			break;
		kill_and_reap(&t);
		if (!t.full)
			break;
	}
	errno = saved;
}

void reaper_kill_tree(pid_t pid)
{
	if (pid > 0)
		kill_below(pid, true);
}

void reaper_end(void)
{
	if (may_have_children())
		kill_below(getpid(), false);
}

void reaper_init(void)
{
	/* an older kernel says EINVAL: orphans then go to init, as before, and reaper_end still ends
	 * the processes that are still below gpuvet when it ends */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	atexit(reaper_end);
}

typedef struct collect_ctx {
	pid_t self;
	bool (*keep)(pid_t pid, void *ctx);
	void *ctx;
} collect_ctx;

static void collect_one(void *ctx, pid_t pid, pid_t ppid, char state)
{
	collect_ctx *c = ctx;
	/* one noted ending is reaped by the thread that waits for it, which drops the note first */
	if (ppid == c->self && state == 'Z' && !is_ending(pid) && !(c->keep && c->keep(pid, c->ctx)))
		waitpid(pid, NULL, WNOHANG);
}

void reaper_collect(bool (*keep)(pid_t pid, void *ctx), void *ctx)
{
	if (!may_have_children())
		return;
	collect_ctx c = {.self = getpid(), .keep = keep, .ctx = ctx};
	each_process(collect_one, &c);
}
