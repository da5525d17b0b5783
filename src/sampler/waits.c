/* What a thread of a job waits on (sampler/waits.h). */
#include "sampler/waits.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "parse/nettcp.h"
#include "sampler/procfd.h"

const char *wait_kind_name(wait_kind k)
{
	static const char *const names[WAIT_NKINDS] = {"running", "file",  "disk",  "socket", "pipe",  "gpu",    "device",
						       "lock",    "poll",  "sleep", "child",  "other", "unknown"};
	return k >= 0 && k < WAIT_NKINDS ? names[k] : "unknown";
}

/* The calls a waiting thread is found in, with the argument that is a descriptor. The numbers
 * are the architecture's (x86-64; the generic table of arm64 and riscv). */
typedef struct syscall_row {
	const char *name;
	long x86_64, generic;
	int fd_arg;
} syscall_row;

static const syscall_row calls[] = {
	{"read", 0, 63, 0},         {"write", 1, 64, 0},          {"poll", 7, -1, -1},        {"ioctl", 16, 29, 0},
	{"pread64", 17, 67, 0},      {"readv", 19, 65, 0},         {"writev", 20, 66, 0},      {"select", 23, -1, -1},
	{"sched_yield", 24, 124, -1}, {"msync", 26, 227, -1},       {"pause", 34, -1, -1},      {"nanosleep", 35, 101, -1},
	{"sendfile", 40, 71, 1},     {"connect", 42, 203, 0},      {"accept", 43, 202, 0},     {"sendto", 44, 206, 0},
	{"recvfrom", 45, 207, 0},    {"sendmsg", 46, 211, 0},      {"recvmsg", 47, 212, 0},    {"wait4", 61, 260, -1},
	{"flock", 73, 32, 0},        {"fsync", 74, 82, 0},         {"fdatasync", 75, 83, 0},   {"futex", 202, 98, -1},
	{"io_getevents", 208, 4, -1}, {"getdents64", 217, 61, 0},  {"clock_nanosleep", 230, 115, -1},
	{"epoll_wait", 232, -1, 0},  {"waitid", 247, 95, -1},      {"openat", 257, 56, -1},    {"newfstatat", 262, 79, -1},
	{"pselect6", 270, 72, -1},   {"ppoll", 271, 73, -1},       {"splice", 275, 76, 0},     {"epoll_pwait", 281, 22, 0},
	{"accept4", 288, 242, 0},    {"preadv", 295, 69, 0},       {"recvmmsg", 299, 243, 0},  {"copy_file_range", 326, 285, 0},
	{"preadv2", 327, 286, 0},    {"statx", 332, 291, -1},      {"io_uring_enter", 426, 426, 0},
	{"epoll_pwait2", 441, 441, 0}, {"futex_waitv", 449, 449, -1},
};

static long row_nr(const syscall_row *r)
{
#if defined(__x86_64__)
	return r->x86_64;
#elif defined(__aarch64__) || defined(__riscv)
	return r->generic;
#else
	(void)r;
	return -1; /* another architecture: the wchan alone names the wait */
#endif
}

const char *wait_syscall_name(long nr, int *fd_arg)
{
	if (fd_arg)
		*fd_arg = -1;
	if (nr < 0)
		return NULL;
	for (size_t i = 0; i < GV_ARRAY_LEN(calls); i++)
		if (row_nr(&calls[i]) == nr) {
			if (fd_arg)
				*fd_arg = calls[i].fd_arg;
			return calls[i].name;
		}
	return NULL;
}

long wait_syscall_nr(const char *name)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(calls); i++)
		if (strcmp(calls[i].name, name) == 0)
			return row_nr(&calls[i]);
	return -1;
}

bool wait_parse_syscall(const char *line, long *nr, unsigned long long args[6])
{
	for (int i = 0; i < 6; i++)
		args[i] = 0;
	while (line && isspace((unsigned char)*line))
		line++;
	if (!line || !*line)
		return false;
	if (strncmp(line, "running", 7) == 0) {
		*nr = -1;
		return true;
	}
	char *end;
	long n = strtol(line, &end, 10);
	if (end == line)
		return false;
	*nr = n < 0 ? -1 : n;
	if (n < 0)
		return true;
	const char *p = end;
	for (int i = 0; i < 6; i++) {
		while (isspace((unsigned char)*p))
			p++;
		unsigned long long v = strtoull(p, &end, 16); /* "0x5" */
		if (end == p)
			return i > 0; /* a kernel that prints fewer arguments */
		args[i] = v;
		p = end;
	}
	return true;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The kind of what a descriptor's link names. */
static wait_kind link_kind(const char *link, mode_t type)
{
	if (!link || !*link)
		return WAIT_UNKNOWN;
	if (starts(link, "socket:"))
		return WAIT_SOCKET;
	if (starts(link, "pipe:") || type == S_IFIFO)
		return WAIT_PIPE;
	if (starts(link, "/dev/nvidia"))
		return WAIT_GPU;
	if (starts(link, "anon_inode:[eventpoll]"))
		return WAIT_POLL;
	if (starts(link, "anon_inode:"))
		return WAIT_OTHER;
	if (type == S_IFCHR || type == S_IFBLK || starts(link, "/dev/"))
		return WAIT_DEVICE;
	if (link[0] == '/')
		return WAIT_FILE;
	return WAIT_OTHER;
}

/* The kind from the kernel function a thread sleeps in (without the call). */
static wait_kind wchan_kind(const char *w)
{
	static const struct {
		const char *prefix;
		wait_kind kind;
	} rows[] = {
		{"pipe_", WAIT_PIPE},          {"futex", WAIT_LOCK},          {"do_sys_poll", WAIT_POLL},
		{"do_select", WAIT_POLL},      {"core_sys_select", WAIT_POLL}, {"poll_schedule", WAIT_POLL},
		{"ep_poll", WAIT_POLL},        {"do_epoll_wait", WAIT_POLL},  {"hrtimer_nanosleep", WAIT_SLEEP},
		{"do_nanosleep", WAIT_SLEEP},  {"sys_pause", WAIT_SLEEP},     {"do_wait", WAIT_CHILD},
		{"kernel_wait", WAIT_CHILD},   {"sk_wait", WAIT_SOCKET},      {"inet_csk_accept", WAIT_SOCKET},
		{"unix_stream", WAIT_SOCKET},  {"tcp_", WAIT_SOCKET},         {"sock_", WAIT_SOCKET},
		{"io_schedule", WAIT_FILE},    {"folio_wait", WAIT_FILE},     {"wait_on_page", WAIT_FILE},
		{"__folio_lock", WAIT_FILE},   {"__lock_page", WAIT_FILE},    {"swap_read", WAIT_FILE},
		{"filemap_", WAIT_FILE},       {"nfs", WAIT_FILE},            {"rpc_", WAIT_FILE},
		{"fuse_", WAIT_FILE},          {"ext4_", WAIT_FILE},          {"xfs_", WAIT_FILE},
		{"jbd2", WAIT_FILE},           {"blk_", WAIT_FILE},           {"os_", WAIT_GPU},
		{"nv_", WAIT_GPU},             {"nvidia", WAIT_GPU},          {"uvm_", WAIT_GPU},
	};
	if (!w || !*w || strcmp(w, "0") == 0)
		return WAIT_UNKNOWN;
	for (size_t i = 0; i < GV_ARRAY_LEN(rows); i++)
		if (starts(w, rows[i].prefix))
			return rows[i].kind;
	return WAIT_OTHER;
}

wait_kind wait_classify(char state, const char *call, const char *link, mode_t type, const char *wchan)
{
	if (state == 'R')
		return WAIT_RUNNING;
	if (call && *call) {
		static const char *const lock[] = {"futex", "futex_waitv", "flock"};
		static const char *const poll[] = {"poll", "ppoll", "select", "pselect6"};
		static const char *const sleep[] = {"nanosleep", "clock_nanosleep", "pause"};
		static const char *const file[] = {"fsync", "fdatasync", "msync", "io_getevents", "openat", "newfstatat",
						   "statx", "getdents64"};
		static const char *const sock[] = {"connect", "accept", "accept4", "recvfrom", "recvmsg", "recvmmsg",
						   "sendto", "sendmsg"};
		for (size_t i = 0; i < GV_ARRAY_LEN(lock); i++)
			if (strcmp(call, lock[i]) == 0)
				return WAIT_LOCK;
		for (size_t i = 0; i < GV_ARRAY_LEN(poll); i++)
			if (strcmp(call, poll[i]) == 0) {
				/* a poll on one descriptor (its link known): a wait on what it is */
				wait_kind one = link_kind(link, type);
				return one == WAIT_SOCKET || one == WAIT_PIPE || one == WAIT_GPU || one == WAIT_DEVICE ? one
														       : WAIT_POLL;
			}
		for (size_t i = 0; i < GV_ARRAY_LEN(sleep); i++)
			if (strcmp(call, sleep[i]) == 0)
				return WAIT_SLEEP;
		if (strcmp(call, "wait4") == 0 || strcmp(call, "waitid") == 0)
			return WAIT_CHILD;
		if (starts(call, "epoll_"))
			return WAIT_POLL;
		if (strcmp(call, "sched_yield") == 0)
			return WAIT_RUNNING;
		wait_kind lk = link_kind(link, type);
		for (size_t i = 0; i < GV_ARRAY_LEN(sock); i++)
			if (strcmp(call, sock[i]) == 0)
				return WAIT_SOCKET;
		for (size_t i = 0; i < GV_ARRAY_LEN(file); i++)
			if (strcmp(call, file[i]) == 0)
				return lk == WAIT_UNKNOWN ? WAIT_FILE : lk;
		if (lk != WAIT_UNKNOWN)
			return lk;
	}
	wait_kind wk = wchan_kind(wchan);
	if (wk != WAIT_UNKNOWN && wk != WAIT_OTHER)
		return wk;
	if (state == 'D')
		return WAIT_DISK;
	if (call && *call)
		return WAIT_OTHER;
	return wk;
}

/* poll(fds, 1, timeout) and ppoll: the one descriptor, from the thread's pollfd in the process's
 * memory (/proc/PID/mem: read as root or as its user, the process neither stopped nor attached
 * to). A Python socket with a timeout (urllib, requests, boto3, a Redis client) waits in poll() on
 * its socket, not in recv(). -1 when it cannot be read. */
static int poll_one_fd(unsigned pid, unsigned long long fds_addr)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/mem", pid);
	struct stat st;
	int fd = sysroot_open_regular(path, &st);
	if (fd < 0)
		return -1;
	int32_t pfd[2] = {-1, 0}; /* struct pollfd: int fd; short events, revents */
	ssize_t n = fds_addr < (1ULL << 62) ? pread(fd, pfd, sizeof(pfd), (off_t)fds_addr) : -1;
	close(fd);
	return n == (ssize_t)sizeof(pfd) && pfd[0] >= 0 && pfd[0] < 1 << 30 ? pfd[0] : -1;
}

bool thread_wait_read(unsigned pid, unsigned tid, thread_wait *w)
{
	memset(w, 0, sizeof(*w));
	w->nr = -2;
	w->fd = -1;
	char path[96], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/stat", pid, tid);
	if (sysroot_read(path, 4096, &buf, &len, NULL) != 0)
		return false;
	char *p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %c", &w->state) != 1) {
		free(buf);
		return false;
	}
	free(buf);
	snprintf(path, sizeof(path), "/proc/%u/task/%u/wchan", pid, tid);
	if (sysroot_read_may_deny(path, 128, &buf, &len, NULL) == 0) {
		char *t = str_trim(buf);
		str_copy(w->wchan, sizeof(w->wchan), strcmp(t, "0") ? t : "");
		free(buf);
	}
	snprintf(path, sizeof(path), "/proc/%u/task/%u/syscall", pid, tid);
	unsigned long long args[6];
	mode_t type = 0;
	/* The kernel answers "running" when the thread woke between its stat and this read (it
	 * compares the thread's switch count before and after): a job doing short reads from fast
	 * storage, each done in 100 us, was seen asleep in 3 of 8 samples and never in its call
	 * (H200, kernel 6.18, 4 KiB O_DIRECT reads). A thread that sleeps is asked again, a few times. */
	for (int tries = 0; sysroot_read_may_deny(path, 512, &buf, &len, NULL) == 0; tries++) {
		long nr;
		bool parsed = wait_parse_syscall(buf, &nr, args);
		if (parsed && nr == -1 && w->state != 'R' && tries < WAIT_SYSCALL_TRIES - 1 && starts(buf, "running")) {
			free(buf);
			buf = NULL;
			continue;
		}
		if (parsed) {
			w->nr = nr;
			w->fault = nr == -1 && w->state == 'D' && !starts(buf, "running");
			int fd_arg = -1;
			const char *name = wait_syscall_name(nr, &fd_arg);
			str_copy(w->call, sizeof(w->call), name ? name : "");
			if (name && (!strcmp(name, "poll") || !strcmp(name, "ppoll")) && args[1] == 1)
				w->fd = poll_one_fd(pid, args[0]);
			else if (name && fd_arg >= 0 && args[fd_arg] < 1u << 30)
				w->fd = (int)args[fd_arg];
			if (w->fd >= 0) {
				char fdp[96];
				snprintf(fdp, sizeof(fdp), "/proc/%u/fd/%d", pid, w->fd);
				char *l = sysroot_readlink(fdp);
				if (l) {
					str_copy(w->link, sizeof(w->link), l);
					free(l);
					struct stat st;
					if (w->link[0] == '/' && sysroot_stat(fdp, &st) == 0)
						type = st.st_mode & S_IFMT;
				}
			}
		}
		free(buf);
		break;
	}
	w->kind = wait_classify(w->state, w->call, w->link, type, w->wchan);
	/* a fault in uninterruptible sleep with no kernel function to say more reads storage (the
	 * wchan of a lock or of the GPU's memory manager keeps its own kind) */
	if (w->fault && w->kind == WAIT_DISK && !w->wchan[0])
		w->kind = WAIT_FILE;
	return true;
}

/* "[123]" of "socket:[123]" */
static unsigned long long link_inode(const char *link)
{
	const char *b = strchr(link, '[');
	return b ? strtoull(b + 1, NULL, 10) : 0;
}

bool wait_tcp_peer(const char *table, unsigned long long inode, bool v6, char *out, size_t n)
{
	net_row r;
	bool ok;
	for (const char *cur = table; inode && net_row_next(&cur, &r, &ok);) {
		if (!ok || r.inode != inode)
			continue;
		char addr[64];
		net_addr_text(r.remote, v6, addr, sizeof(addr));
		if (r.remote_port == 0)
			snprintf(out, n, "listening on port %u", r.local_port);
		else
			snprintf(out, n, "%s:%u", addr, r.remote_port);
		return true;
	}
	return false;
}

/* The socket's peer, from the process's own network namespace's tables. */
static void socket_words(unsigned pid, const char *link, char *out, size_t n)
{
	unsigned long long ino = link_inode(link);
	static const struct {
		const char *file, *proto;
		bool v6;
	} tabs[] = {{"tcp", "TCP", false}, {"tcp6", "TCP", true}, {"udp", "UDP", false}, {"udp6", "UDP", true}};
	for (size_t i = 0; i < GV_ARRAY_LEN(tabs); i++) {
		char path[64], *buf = NULL, peer[96];
		size_t len = 0;
		snprintf(path, sizeof(path), "/proc/%u/net/%s", pid, tabs[i].file);
		if (sysroot_read_may_deny(path, 4 << 20, &buf, &len, NULL) != 0)
			continue;
		bool found = wait_tcp_peer(buf, ino, tabs[i].v6, peer, sizeof(peer));
		free(buf);
		if (found) {
			if (starts(peer, "listening"))
				snprintf(out, n, "a %s socket %s", tabs[i].proto, peer);
			else
				snprintf(out, n, "a %s socket to %s", tabs[i].proto, peer);
			return;
		}
	}
	/* unix sockets: Num RefCount Protocol Flags Type St Inode Path */
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/net/unix", pid);
	if (sysroot_read_may_deny(path, 4 << 20, &buf, &len, NULL) == 0) {
		for (char *line = buf; line && *line;) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			unsigned long long lino;
			int off = 0;
			if (sscanf(line, "%*s %*s %*s %*s %*s %*s %llu%n", &lino, &off) == 1 && lino == ino) {
				const char *name = str_trim(line + off);
				if (*name)
					snprintf(out, n, "a unix socket %s", name);
				else
					snprintf(out, n, "a unix socket (unnamed: a socket pair)");
				free(buf);
				return;
			}
			line = nl ? nl + 1 : NULL;
		}
		free(buf);
	}
	snprintf(out, n, "a socket (%s)", link);
}

struct pipe_end {
	const char *link;
	bool holds;
};

static bool holds_link(const proc_fd *fd, void *arg)
{
	struct pipe_end *e = arg;
	e->holds = strcmp(fd->link, e->link) == 0;
	return !e->holds;
}

/* The job's other processes that hold the same pipe (by its link "pipe:[N]"), as words. */
static void pipe_words(const job *j, unsigned pid, const char *link, char *out, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (size_t i = 0; j && i < j->n && len + 40 < n; i++) {
		if (j->pids[i] == pid)
			continue;
		struct pipe_end e = {link, false};
		proc_fd_each(j->pids[i], PROC_FD_SCAN, holds_link, &e);
		bool holds = e.holds;
		if (!holds)
			continue;
		char cp[64];
		snprintf(cp, sizeof(cp), "/proc/%u/comm", j->pids[i]);
		char *comm = sysroot_read_line(cp);
		len += (size_t)snprintf(out + len, n - len, "%spid %u%s%s%s", len ? ", " : "a pipe to ", j->pids[i],
					comm ? " (" : "", comm ? comm : "", comm ? ")" : "");
		free(comm);
	}
	if (!out[0])
		snprintf(out, n, "a pipe (no other process of the job holds its other end)");
}

/* An epoll descriptor's watched descriptors (/proc/PID/fdinfo/N "tfd: M ..."), as their links. */
static void epoll_words(unsigned pid, int fd, char *out, size_t n)
{
	char path[64], *buf = NULL;
	size_t len = 0, used = 0;
	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%u/fdinfo/%d", pid, fd);
	if (sysroot_read_may_deny(path, 65536, &buf, &len, NULL) != 0)
		return;
	int shown = 0;
	for (const char *p = strstr(buf, "tfd:"); p && shown < 4 && used + 40 < n; p = strstr(p + 4, "tfd:")) {
		int tfd = atoi(p + 4);
		char fdp[96];
		snprintf(fdp, sizeof(fdp), "/proc/%u/fd/%d", pid, tfd);
		char *l = sysroot_readlink(fdp);
		if (l) {
			char words[128];
			if (starts(l, "socket:"))
				socket_words(pid, l, words, sizeof(words));
			else
				str_copy(words, sizeof(words), l);
			used += (size_t)snprintf(out + used, n - used, "%s%s", shown ? ", " : "epoll on ", words);
			shown++;
			free(l);
		}
	}
	free(buf);
}

/* A descriptor's open flags from /proc/PID/fdinfo/N ("flags:\t0100000", octal); -1 unknown. */
static long fd_flags(unsigned pid, const char *fd)
{
	char path[96], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/fdinfo/%s", pid, fd);
	if (sysroot_read_may_deny(path, 4096, &buf, &len, NULL) != 0)
		return -1;
	const char *p = strstr(buf, "flags:");
	long flags = p ? strtol(p + 6, NULL, 8) : -1;
	free(buf);
	return flags;
}

static bool data_file_path(const char *link)
{
	if (link[0] != '/' || starts(link, "/dev/") || starts(link, "/proc/") || starts(link, "/sys/"))
		return false;
	if (strstr(link, " (deleted)"))
		return false;
	const char *base = strrchr(link, '/') + 1;
	const char *so = strstr(base, ".so");
	return !(so && (so[3] == '\0' || so[3] == '.'));
}

enum { OPEN_FILES_TOP = 2 };
typedef struct open_file {
	char link[160];
	long long size;
} open_file;
typedef struct open_files {
	open_file top[OPEN_FILES_TOP]; /* the largest, in order */
	int ntop, files;
} open_files;

/* Keeps a file among the two largest: a free place, else the smaller kept one's when it is larger. */
static void open_files_add(open_files *o, const char *link, long long size)
{
	o->files++;
	int at = o->ntop < OPEN_FILES_TOP ? o->ntop++ : size > o->top[OPEN_FILES_TOP - 1].size ? OPEN_FILES_TOP - 1 : -1;
	if (at < 0)
		return;
	str_copy(o->top[at].link, sizeof(o->top[at].link), link);
	o->top[at].size = size;
	for (; at > 0 && o->top[at].size > o->top[at - 1].size; at--) {
		open_file t = o->top[at];
		o->top[at] = o->top[at - 1];
		o->top[at - 1] = t;
	}
}

/* "its open file /a (1.0 GiB)", "its open files /a (2.0 GiB), /b (1.0 GiB) and 3 more" */
static void open_files_words(const open_files *o, const char *one, const char *many, char *out, size_t n)
{
	size_t len = 0;
	out[0] = '\0';
	for (int i = 0; i < o->ntop && len < n; i++) {
		char size[32];
		bytes_words(size, sizeof(size), (double)o->top[i].size);
		len += (size_t)snprintf(out + len, n - len, "%s%s (%s)", i ? ", " : o->ntop > 1 ? many : one, o->top[i].link, size);
	}
	if (o->files > o->ntop && len < n)
		snprintf(out + len, n - len, " and %d more", o->files - o->ntop);
}

static bool note_open_file(const proc_fd *fd, void *arg)
{
	struct stat st;
	if (!data_file_path(fd->link) || sysroot_stat(fd->path, &st) != 0 || !S_ISREG(st.st_mode))
		return true;
	long flags = fd_flags(fd->pid, fd->name);
	if (flags < 0 || (flags & 3) == 0) /* O_RDONLY, or the flags unreadable */
		open_files_add(arg, fd->link, (long long)st.st_size);
	return true;
}

static bool open_files_of(unsigned pid, open_files *o)
{
	return proc_fd_each(pid, WAIT_OPEN_FILES_SCAN, note_open_file, o);
}

void wait_open_files(unsigned pid, char *out, size_t n)
{
	open_files o = {0};
	out[0] = '\0';
	if (open_files_of(pid, &o))
		open_files_words(&o, "its open file ", "its open files ", out, n);
}

/* The maps of one process name few files, each in a few mappings. */
#define MAPS_FILES 64

static void maps_files(const char *maps, size_t len, open_files *o)
{
	open_file seen[MAPS_FILES];
	bool code[MAPS_FILES];
	int nseen = 0;
	for (const char *line = maps, *end = maps + len; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t ll = nl ? (size_t)(nl - line) : (size_t)(end - line);
		char buf[512];
		str_copy(buf, sizeof(buf) < ll + 1 ? sizeof(buf) : ll + 1, line);
		line = nl ? nl + 1 : end;
		/* "7f00-7f80 r--s 00000000 103:02 1234    /data/x.arrow" */
		unsigned long long lo, hi;
		char perms[8];
		int off = 0;
		if (sscanf(buf, "%llx-%llx %7s %*s %*s %*s %n", &lo, &hi, perms, &off) != 3 || !off || hi <= lo ||
		    perms[0] != 'r')
			continue;
		const char *path = buf + off;
		if (!data_file_path(path) || starts(path, "/usr/") || starts(path, "/etc/") || starts(path, "/lib"))
			continue;
		int i = 0;
		while (i < nseen && strcmp(seen[i].link, path) != 0)
			i++;
		if (i == nseen) {
			if (nseen == MAPS_FILES)
				continue;
			str_copy(seen[nseen].link, sizeof(seen[nseen].link), path);
			seen[nseen].size = 0;
			code[nseen++] = false;
		}
		seen[i].size += (long long)(hi - lo);
		code[i] |= perms[2] == 'x'; /* a program or a library: its data segments are no data file */
	}
	for (int i = 0; i < nseen; i++)
		if (!code[i])
			open_files_add(o, seen[i].link, seen[i].size);
}

void wait_maps_words(const char *maps, size_t len, char *out, size_t n)
{
	open_files o = {0};
	maps_files(maps, len, &o);
	open_files_words(&o, "its memory-mapped file ", "its memory-mapped files ", out, n);
}

static bool mapped_files_of(unsigned pid, open_files *o)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	if (sysroot_read_may_deny(path, 8 << 20, &buf, &len, NULL) != 0)
		return false;
	maps_files(buf, len, o);
	free(buf);
	return true;
}

void wait_mapped_files(unsigned pid, char *out, size_t n)
{
	open_files o = {0};
	out[0] = '\0';
	if (mapped_files_of(pid, &o))
		open_files_words(&o, "its memory-mapped file ", "its memory-mapped files ", out, n);
}

bool wait_data_file(unsigned pid, const thread_wait *w, char *path, size_t n)
{
	path[0] = '\0';
	if (w->kind != WAIT_FILE && w->kind != WAIT_DISK)
		return false;
	open_files o = {0};
	if (w->link[0] && data_file_path(w->link))
		str_copy(path, n, w->link);
	else if (w->link[0])
		return false; /* a descriptor that is no data file: a device, a socket */
	else if (w->fault ? mapped_files_of(pid, &o) : open_files_of(pid, &o))
		str_copy(path, n, o.ntop ? o.top[0].link : "");
	return path[0] != '\0';
}

void wait_describe(const job *j, unsigned pid, const thread_wait *w, char *out, size_t n)
{
	out[0] = '\0';
	if (w->fault && !w->link[0] && (w->kind == WAIT_FILE || w->kind == WAIT_DISK)) {
		wait_mapped_files(pid, out, n);
		if (!out[0])
			str_copy(out, n, "memory that no data file backs (swap, or the program's own files)");
		return;
	}
	if (!w->link[0] && w->kind == WAIT_FILE)
		wait_open_files(pid, out, n);
	if (!w->link[0])
		return;
	if (starts(w->link, "socket:"))
		socket_words(pid, w->link, out, n);
	else if (starts(w->link, "pipe:"))
		pipe_words(j, pid, w->link, out, n);
	else if (starts(w->link, "anon_inode:[eventpoll]") && w->fd >= 0)
		epoll_words(pid, w->fd, out, n);
	else if (w->kind == WAIT_PIPE)
		snprintf(out, n, "the named pipe %s", w->link);
	else if (wait_terminal(w->link))
		snprintf(out, n, "its terminal %s", w->link);
	else
		str_copy(out, n, w->link);
}

enum { TCP_ESTABLISHED = 1, TCP_LISTEN = 10 }; /* the state column of /proc/net/tcp */

/* The port that matters of the TCP socket with this inode in a tcp or tcp6 table's text, when it
 * is in that state: a listening socket's own port, an established one's peer port. 0 none. */
static unsigned tcp_port_in(const char *table, unsigned long long inode, unsigned state)
{
	net_row r;
	bool ok;
	for (const char *cur = table; inode && net_row_next(&cur, &r, &ok);)
		if (ok && r.inode == inode)
			return r.state != state ? 0 : state == TCP_LISTEN ? r.local_port : r.remote_port;
	return 0;
}

unsigned wait_listen_port_in(const char *table, unsigned long long inode)
{
	return tcp_port_in(table, inode, TCP_LISTEN);
}

unsigned wait_peer_port_in(const char *table, unsigned long long inode)
{
	return tcp_port_in(table, inode, TCP_ESTABLISHED);
}

/* tcp_port_in over the process's tcp and tcp6 tables. */
static unsigned tcp_port(unsigned pid, unsigned long long inode, unsigned state)
{
	unsigned port = 0;
	for (int v6 = 0; v6 < 2 && !port && inode; v6++) {
		char path[64], *buf = NULL;
		size_t len = 0;
		snprintf(path, sizeof(path), "/proc/%u/net/%s", pid, v6 ? "tcp6" : "tcp");
		if (sysroot_read_may_deny(path, 4 << 20, &buf, &len, NULL) != 0)
			continue;
		port = tcp_port_in(buf, inode, state);
		free(buf);
	}
	return port;
}

static unsigned listen_port(unsigned pid, unsigned long long inode)
{
	return tcp_port(pid, inode, TCP_LISTEN);
}

unsigned wait_peer_port(unsigned pid, const thread_wait *w)
{
	return w->kind == WAIT_SOCKET && starts(w->link, "socket:") ? tcp_port(pid, link_inode(w->link), TCP_ESTABLISHED) : 0;
}

unsigned wait_listen_port(unsigned pid, const thread_wait *w)
{
	if (starts(w->link, "socket:") && (w->kind == WAIT_SOCKET || w->kind == WAIT_POLL))
		return listen_port(pid, link_inode(w->link)); /* accept(), or poll on one socket */
	if (!starts(w->link, "anon_inode:[eventpoll]") || w->fd < 0)
		return 0;
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/fdinfo/%d", pid, w->fd);
	if (sysroot_read_may_deny(path, 65536, &buf, &len, NULL) != 0)
		return 0;
	unsigned port = 0;
	int looked = 0;
	for (const char *p = strstr(buf, "tfd:"); p && !port && looked < 64; p = strstr(p + 4, "tfd:"), looked++) {
		char fdp[96];
		snprintf(fdp, sizeof(fdp), "/proc/%u/fd/%d", pid, atoi(p + 4));
		char *l = sysroot_readlink(fdp);
		if (l && starts(l, "socket:"))
			port = listen_port(pid, link_inode(l));
		free(l);
	}
	free(buf);
	return port;
}

bool wait_terminal(const char *link)
{
	return starts(link, "/dev/pts/") || starts(link, "/dev/tty") || strcmp(link, "/dev/console") == 0;
}

const char *wait_interactive(const char *cmdline, size_t len)
{
	if (!cmdline)
		return NULL;
	if (str_find_n(cmdline, len, "ipykernel") || str_find_n(cmdline, len, "colab_kernel_launcher"))
		return "a Jupyter kernel";
	/* the program itself, not an argument that names it: "ipython" as the first or the
	 * interpreter's script */
	const char *base = strrchr(cmdline, '/');
	base = base ? base + 1 : cmdline;
	if (!strncmp(base, "ipython", 7))
		return "an IPython shell";
	size_t first = strnlen(cmdline, len);
	if (first + 1 < len) {
		const char *arg = cmdline + first + 1;
		const char *ab = strrchr(arg, '/');
		ab = ab ? ab + 1 : arg;
		if (!strncmp(ab, "ipython", 7))
			return "an IPython shell";
	}
	return NULL;
}

/* The libraries' service threads by the names they give them (pthread_setname_np; at most 15
 * characters). A prefix matches the start of the name; "cuda" with hex digits only is the CUDA
 * driver's (cuda00001400006 on driver 580: it polls its descriptors for the whole life of the
 * process, and named the cause of a healthy job's idle start-up on the H200). */
static const struct {
	const char *prefix;
	const char *words;
} service_threads[] = {
	{"cuda-", "a CUDA driver thread"}, /* cuda-EvtHandlr */
	{"pt_autograd_", "a PyTorch autograd engine thread"},
	{"pt_nccl_watchdg", "PyTorch's NCCL watchdog"},
	{"pt_nccl_heartbt", "PyTorch's NCCL heartbeat monitor"},
	{"pt_nccl_gil_chk", "PyTorch's NCCL GIL checker"},
	{"pt_watchdog", "PyTorch's watchdog"},
	{"pt_tcpstore", "the torch.distributed rendezvous store"},
	{"pt_thread_pool", "a PyTorch thread pool thread"},
	{"pt_data_pin", "the DataLoader's pin-memory thread"},
	{"jemalloc_bg_thd", "jemalloc's background thread"},
};

const char *wait_service_thread(const char *comm)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(service_threads); i++)
		if (!strncmp(comm, service_threads[i].prefix, strlen(service_threads[i].prefix)))
			return service_threads[i].words;
	if (!strncmp(comm, "cuda", 4) && comm[4]) {
		const char *p = comm + 4;
		while (isxdigit((unsigned char)*p))
			p++;
		if (!*p)
			return "a CUDA driver thread";
	}
	return NULL;
}

bool wait_compile_process(const char *comm, const char *cmdline, size_t len)
{
	static const char *const tools[] = {"cc1plus", "cc1", "ptxas", "nvcc", "cicc", "as", "ld", "collect2",
					    "fatbinary", "nvlink", "ld.gold", "ld.lld"};
	for (size_t i = 0; comm && i < GV_ARRAY_LEN(tools); i++)
		if (strcmp(comm, tools[i]) == 0)
			return true;
	return cmdline && str_find_n(cmdline, len, "_inductor/compile_worker") != NULL;
}

bool wait_permitted(unsigned euid, long proc_uid)
{
	return euid == 0 || (proc_uid >= 0 && (unsigned long)proc_uid == euid);
}

long wait_proc_uid(unsigned pid)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (sysroot_read(path, 65536, &buf, &len, NULL) != 0)
		return -1;
	long uid = -1;
	const char *p = strstr(buf, "\nUid:");
	unsigned long real, eff;
	if (p && sscanf(p + 5, "%lu %lu", &real, &eff) == 2)
		uid = (long)eff;
	free(buf);
	return uid;
}
