/* The job doctor's evidence over one window (doctor/evidence.h). */
#include "doctor/evidence.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/text.h"
#include "core/util.h"
#include "health/conditions.h"
#include "sampler/jobcpu.h"
#include "sampler/rendezvous.h"

/* Threads sampled for their waits: every thread of a GPU process up to this many (a PyTorch
 * process has a few dozen: its OpenMP pool, CUDA's, the pin-memory thread), the main thread of
 * every other process of the job. */
#define WAIT_THREADS_PER_GPU_PROCESS 64
#define WAIT_THREADS 1024
#define WAIT_KEYS 1024
/* Readings of the threads per idle sample, WAIT_READING_GAP apart. A thread that reads 4 KiB with
 * O_DIRECT between bits of Python waits a millisecond at a time: at one reading a second its
 * share is a coin tossed 8 times in an 8 s window (the H100's wait_file job: 5 of 8 at 02:34Z,
 * 2 of 8 at 08:22Z, under the 30% that names a cause). Readings 5 ms apart are as good as
 * independent for such a thread and agree for a long wait (a sleep, a socket), whose share they
 * leave as it was. */
#define WAIT_READINGS 4
#define WAIT_READING_GAP 0.005

typedef struct wait_thread {
	unsigned pid, tid;
	int samples;
	char comm[16];
} wait_thread;

/* One wait of one thread, counted over the samples. Files are counted by their directory (a
 * loader reads shard after shard): the last path is kept, and how many paths were seen. */
typedef struct wait_key {
	unsigned pid, tid;
	wait_kind kind;
	char call[24];
	char group[160]; /* the directory of a file, else the link */
	thread_wait last;
	int paths;
	int count;
	/* a socket wait: its peer in words and port, read when the wait was seen (a connection a
	 * request, urllib's, is gone by the window's end) */
	char sock_what[200];
	unsigned sock_peer;
} wait_key;

/* The sockets described so far (a job that opens a connection a request sees a new one each
 * time): each read of /proc/PID/net/tcp once per socket. */
#define SOCKETS_SEEN 64
typedef struct socket_seen {
	unsigned pid;
	char link[40];
	char what[200];
	unsigned peer;
} socket_seen;

struct doctor_acc {
	socket_seen sockets[SOCKETS_SEEN];
	size_t nsockets; /* written so far; the oldest is replaced when full */
	job_cpu_mark start;
	gpu_windows gpus;
	unsigned gpu_pids[JOB_MAX_PIDS];
	size_t ngpu_pids;
	/* the waits */
	bool waits_checked, waits_ok, wchan_only, syscall_seen;
	long uid;
	bool sampled;
	size_t nthr, nkey;
	wait_thread thr[WAIT_THREADS];
	wait_key keys[WAIT_KEYS];
};

doctor_acc *doctor_acc_new(const job *j)
{
	doctor_acc *a = xcalloc(1, sizeof(*a));
	job_cpu_mark_take(&a->start, j);
	a->uid = -1;
	return a;
}

static bool is_gpu_pid(const doctor_acc *a, unsigned pid)
{
	for (size_t i = 0; i < a->ngpu_pids; i++)
		if (a->gpu_pids[i] == pid)
			return true;
	return false;
}

/* The file's directory for grouping ("/data/train" of "/data/train/shard-00042.tar"). */
static void group_of(const thread_wait *w, char *out, size_t n)
{
	str_copy(out, n, w->link);
	if (w->kind == WAIT_FILE && out[0] == '/') {
		char *slash = strrchr(out, '/');
		if (slash && slash != out)
			*slash = '\0';
	}
}

/* A wait on storage that names no call and no descriptor: a page fault, or a thread the syscall
 * file caught waking each time. One wait of the thread however the samples read (on a fast disk
 * the same faults read as page faults, as "storage or a driver" and as a page-cache wait). */
static bool callless_storage(const thread_wait *w)
{
	return !w->call[0] && !w->link[0] && (w->kind == WAIT_FILE || w->kind == WAIT_DISK);
}

/* A socket wait's words and peer port, from the cache or read now. */
static const socket_seen *socket_of(doctor_acc *a, unsigned pid, const thread_wait *w)
{
	for (size_t i = 0; i < a->nsockets && i < SOCKETS_SEEN; i++)
		if (a->sockets[i].pid == pid && strcmp(a->sockets[i].link, w->link) == 0)
			return &a->sockets[i];
	socket_seen *s = &a->sockets[a->nsockets++ % SOCKETS_SEEN];
	s->pid = pid;
	str_copy(s->link, sizeof(s->link), w->link);
	wait_describe(NULL, pid, w, s->what, sizeof(s->what)); /* a socket's words need no job */
	s->peer = wait_peer_port(pid, w);
	return s;
}

static void tally(doctor_acc *a, unsigned pid, unsigned tid, const char *comm, const thread_wait *w)
{
	wait_thread *t = NULL;
	for (size_t i = 0; i < a->nthr && !t; i++)
		if (a->thr[i].pid == pid && a->thr[i].tid == tid)
			t = &a->thr[i];
	if (!t) {
		if (a->nthr >= WAIT_THREADS)
			return;
		t = &a->thr[a->nthr++];
		*t = (wait_thread){pid, tid, 0, ""};
		str_copy(t->comm, sizeof(t->comm), comm);
	}
	t->samples++;
	if (w->nr >= 0 || w->nr == -1)
		a->syscall_seen = true;
	else if (w->state != 'R')
		a->wchan_only = true;
	char group[160];
	group_of(w, group, sizeof(group));
	/* the sockets of one peer are one wait, however many connections the job opens */
	const socket_seen *sock = NULL;
	if (w->kind == WAIT_SOCKET && str_starts(w->link, "socket:")) {
		sock = socket_of(a, pid, w);
		if (sock->what[0] && !str_starts(sock->what, "a socket ("))
			str_copy(group, sizeof(group), sock->what);
	}
	for (size_t i = 0; i < a->nkey; i++) {
		wait_key *k = &a->keys[i];
		if (k->pid != pid || k->tid != tid)
			continue;
		if (callless_storage(&k->last) && callless_storage(w)) {
			k->count++;
			/* storage when any sample says so; the page fault's description when any was one */
			wait_kind kind = w->kind == WAIT_FILE ? WAIT_FILE : k->kind;
			if (w->fault || !k->last.fault)
				k->last = *w;
			k->kind = k->last.kind = kind;
			return;
		}
		if (k->kind == w->kind && k->last.fault == w->fault && strcmp(k->call, w->call) == 0 &&
		    strcmp(k->group, group) == 0) {
			k->count++;
			if (strcmp(k->last.link, w->link) != 0 && !sock)
				k->paths++;
			k->last = *w;
			return;
		}
	}
	if (a->nkey >= WAIT_KEYS)
		return;
	wait_key *k = &a->keys[a->nkey++];
	memset(k, 0, sizeof(*k));
	k->pid = pid;
	k->tid = tid;
	k->kind = w->kind;
	str_copy(k->call, sizeof(k->call), w->call);
	str_copy(k->group, sizeof(k->group), group);
	k->last = *w;
	k->paths = 1;
	k->count = 1;
	if (sock) {
		str_copy(k->sock_what, sizeof(k->sock_what), sock->what);
		k->sock_peer = sock->peer;
	}
}

static void sample_thread(doctor_acc *a, unsigned pid, unsigned tid)
{
	thread_wait w;
	if (!thread_wait_read(pid, tid, &w))
		return;
	char path[96], *comm;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	comm = sysroot_read_line(path);
	tally(a, pid, tid, comm ? comm : "", &w);
	free(comm);
}

/* One reading of the job's threads: each process's main thread, every thread (up to
 * WAIT_THREADS_PER_GPU_PROCESS) of those holding a GPU. */
static void sample_threads_once(doctor_acc *a, const job *j)
{
	for (size_t i = 0; i < j->n; i++) {
		unsigned pid = j->pids[i];
		if (!is_gpu_pid(a, pid)) {
			sample_thread(a, pid, pid);
			continue;
		}
		char path[64];
		snprintf(path, sizeof(path), "/proc/%u/task", pid);
		DIR *d = sysroot_opendir(path);
		if (!d)
			continue;
		struct dirent *de;
		int n = 0;
		while ((de = readdir(d)) && n < WAIT_THREADS_PER_GPU_PROCESS) {
			if (!isdigit((unsigned char)de->d_name[0]))
				continue;
			sample_thread(a, pid, (unsigned)strtoul(de->d_name, NULL, 10));
			n++;
		}
		closedir(d);
	}
}

/* What the job's threads do now: only as root or as the job's user. */
static void sample_waits(doctor_acc *a, const job *j)
{
	if (!a->waits_checked) {
		a->waits_checked = true;
		a->uid = wait_proc_uid(j->root);
		a->waits_ok = wait_permitted((unsigned)geteuid(), a->uid);
	}
	if (!a->waits_ok)
		return;
	a->sampled = true;
	for (int r = 0; r < WAIT_READINGS; r++) {
		if (r)
			sleep_seconds(WAIT_READING_GAP);
		sample_threads_once(a, j);
	}
}

void doctor_acc_add(doctor_acc *a, const snapshot *s, job *j)
{
	bool held = false, idle = true;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->lost)
			continue;
		double job_mem = NAN;
		job_gpu_hold hold = job_gpu(j, g, &job_mem, a->gpu_pids, &a->ngpu_pids, JOB_MAX_PIDS);
		if (hold == JOB_GPU_NONE)
			continue;
		gpu_window *w = gpu_windows_of(&a->gpus, g, DOCTOR_MAX_GPUS);
		if (!w)
			continue;
		gpu_window_add(w, g, s->time, j, hold, job_mem);
		held = true;
		double busy = gpu_busy(sv_has(g->gpm[GV_GPM_SM_ACTIVE]) ? g->gpm[GV_GPM_SM_ACTIVE].v : NAN,
				       sv_has(g->util_gpu) ? g->util_gpu.v / 100 : NAN);
		if (!(busy < DOCTOR_IDLE_BUSY))
			idle = false;
	}
	/* a job whose GPUs idle waits on something: see what its threads do */
	if (held && idle)
		sample_waits(a, j);
}

/* Whether a process of the job compiles kernels, by its command line (its threads' names are
 * judged as they come: wait_compile_process). */
static bool compile_process(unsigned pid)
{
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/cmdline", pid);
	if (sysroot_read_may_deny(path, 8192, &buf, &len, NULL) != 0)
		return false;
	bool yes = wait_compile_process(NULL, buf, len);
	free(buf);
	return yes;
}

/* The CPU side over the window: the GPU processes (the main ones, the ranks), the workers
 * (DataLoader), the compilers and the cores left idle. */
static void cpu_evidence(const doctor_acc *a, const job_cpu_mark *end, const job *j, doctor_cpu *c)
{
	double hz = (double)sysconf(_SC_CLK_TCK);
	thread_use *use = xcalloc(end->nthreads + 1, sizeof(*use));
	size_t nuse = job_cpu_between(&a->start, end, hz, use);
	typedef struct {
		unsigned pid;
		double cpu;    /* cores used, all threads */
		double demand; /* its busiest thread's demand */
		bool dataloader;
		bool compiles; /* a compiler or a compile worker (wait_compile_process) */
		int busy_threads;  /* threads of at least JOBCPU_BUSY_MIN_CORES, not a library's service thread */
		double busy_cores; /* what they used */
	} proc_cpu;
	proc_cpu *procs = xcalloc(JOB_MAX_PIDS, sizeof(*procs));
	size_t nprocs = 0;
	for (size_t i = 0; i < nuse; i++) {
		const thread_use *u = &use[i];
		size_t p = 0;
		while (p < nprocs && procs[p].pid != u->pid)
			p++;
		if (p == nprocs && nprocs < JOB_MAX_PIDS) {
			procs[nprocs++] = (proc_cpu){u->pid, 0, 0, false, false, 0, 0};
			procs[p].compiles = compile_process(u->pid);
		}
		if (p < nprocs) {
			procs[p].cpu += u->cores;
			if (u->demand > procs[p].demand)
				procs[p].demand = u->demand;
			procs[p].dataloader |= strcmp(u->comm, "pt_data_worker") == 0;
			procs[p].compiles |= wait_compile_process(u->comm, NULL, 0);
			/* a thread pool's threads at work are the job's own computing */
			bool service = wait_service_thread(u->comm) && strncmp(u->comm, "pt_thread_pool", 14) != 0;
			if (u->cores >= JOBCPU_BUSY_MIN_CORES && !service) {
				procs[p].busy_threads++;
				procs[p].busy_cores += u->cores;
			}
		}
		c->job_cores += u->cores;
		/* a GPU process's busiest thread; with no GPU process known, the root's */
		bool main = a->ngpu_pids ? is_gpu_pid(a, u->pid) : u->pid == j->root;
		if (main && (u->demand > c->main_thread || !c->main_pid)) {
			c->main_thread = u->demand;
			c->main_pid = u->pid;
			c->main_tid = u->tid;
		}
	}
	c->nprocs = (int)j->n;
	double demand_all = 0, demand_dl = 0;
	for (size_t p = 0; p < nprocs; p++) {
		bool main = a->ngpu_pids ? is_gpu_pid(a, procs[p].pid) : procs[p].pid == j->root;
		if (main) {
			c->gpu_procs++;
			if (procs[p].cpu > c->main_cpu)
				c->main_cpu = procs[p].cpu;
			if (procs[p].busy_cores > c->compute_cores) {
				c->compute_cores = procs[p].busy_cores;
				c->compute_threads = procs[p].busy_threads;
			}
		} else if (procs[p].compiles) {
			/* torch.compile's and Triton's compilers: not data workers */
			c->compilers++;
			c->compilers_cpu += procs[p].cpu;
			if (procs[p].demand > c->compilers_demand)
				c->compilers_demand = procs[p].demand;
		} else if (procs[p].pid != j->root) {
			/* the others but a launcher (a root that holds no GPU: torchrun, a shell) */
			c->workers++;
			c->workers_cpu += procs[p].cpu;
			if (procs[p].demand >= 0.85)
				c->workers_busy++;
			demand_all += procs[p].demand;
			if (procs[p].dataloader) {
				c->dataloader_workers++;
				demand_dl += procs[p].demand;
			}
		}
	}
	/* where PyTorch named its DataLoader workers, they alone (not a compile pool beside them) */
	c->workers_demand = c->dataloader_workers ? demand_dl / c->dataloader_workers
			    : c->workers		  ? demand_all / c->workers
							  : NAN;
	if (c->main_pid == 0 && a->ngpu_pids)
		c->main_pid = a->gpu_pids[0];
	cpu_limits lim;
	job_cpu_limits(c->main_pid ? c->main_pid : j->root, &lim);
	c->cpus = lim.nallowed;
	c->quota_cores = lim.quota_cores;
	c->idle_cores = job_cpu_idle(&a->start, end, hz, &lim, c->job_cores);
	c->main_age = NAN;
	for (size_t i = 0; i < end->nthreads; i++)
		if (end->threads[i].pid == c->main_pid && end->threads[i].tid == c->main_pid && end->threads[i].born > 0)
			c->main_age = end->t - end->threads[i].born;
	free(procs);
	free(use);
}

/* The thread's top wait that is not running (and not of the excluded kind); NULL when none. */
static const wait_key *top_wait(const doctor_acc *a, unsigned pid, unsigned tid, wait_kind not)
{
	const wait_key *best = NULL;
	for (size_t i = 0; i < a->nkey; i++) {
		const wait_key *k = &a->keys[i];
		if (k->pid != pid || k->tid != tid || k->kind == WAIT_RUNNING || k->kind == not)
			continue;
		if (!best || k->count > best->count)
			best = k;
	}
	return best;
}

static const wait_thread *thread_of(const doctor_acc *a, unsigned pid, unsigned tid)
{
	for (size_t i = 0; i < a->nthr; i++)
		if (a->thr[i].pid == pid && a->thr[i].tid == tid)
			return &a->thr[i];
	return NULL;
}

static void add_wait(doctor_waits *ws, const job *j, const wait_key *k, const wait_thread *t, bool of_gpu,
		     int workers, int count, int samples)
{
	if (ws->n >= DOCTOR_MAX_WAITS)
		return;
	doctor_wait *w = &ws->w[ws->n++];
	memset(w, 0, sizeof(*w));
	w->pid = k->pid;
	w->tid = k->tid;
	str_copy(w->comm, sizeof(w->comm), t ? t->comm : "");
	w->gpu_process = of_gpu;
	w->workers = workers;
	w->count = count;
	w->samples = samples;
	w->kind = k->kind;
	str_copy(w->call, sizeof(w->call), k->call);
	w->fault = k->last.fault;
	w->listen_port = wait_listen_port(k->pid, &k->last);
	w->peer_port = k->sock_what[0] ? k->sock_peer : wait_peer_port(k->pid, &k->last);
	if (wait_terminal(k->last.link)) /* from the job, like what below */
		text_safe(w->terminal, sizeof(w->terminal), k->last.link);
	char what[200];
	if (k->sock_what[0])
		str_copy(what, sizeof(what), k->sock_what);
	else
		wait_describe(j, k->pid, &k->last, what, sizeof(what));
	if (k->kind == WAIT_FILE && k->paths > 1) {
		const char *base = strrchr(k->last.link, '/');
		snprintf(what, sizeof(what), "%d files under %s (the last %s)", k->paths, k->group, base ? base + 1 : k->last.link);
	}
	/* paths and names come from the job: no control characters reach a terminal */
	text_safe(w->what, sizeof(w->what), what);
	char file[sizeof(w->data_file)];
	mount_info m;
	if (wait_data_file(k->pid, &k->last, file, sizeof(file)) && mount_of(k->pid, file, &m)) {
		text_safe(w->data_file, sizeof(w->data_file), file);
		text_safe(w->mount.point, sizeof(w->mount.point), m.point);
		text_safe(w->mount.fstype, sizeof(w->mount.fstype), m.fstype);
		text_safe(w->mount.source, sizeof(w->mount.source), m.source);
		w->remote = mount_remote_of(m.fstype);
	}
}

/* The waits worth naming: the main thread of the main GPU process; when it waits on a lock or a
 * poll (for another thread, for its workers), the busiest other wait of its threads; and the
 * workers' main threads' commonest wait, summed over the workers. */
static void waits_evidence(const doctor_acc *a, const job *j, const doctor_cpu *c, doctor_waits *ws)
{
	ws->sampled = a->sampled;
	ws->denied = a->waits_checked && !a->waits_ok;
	ws->uid = a->uid;
	ws->wchan_only = a->wchan_only && !a->syscall_seen;
	if (!a->sampled)
		return;
	unsigned mp = c->main_pid;
	char path[64], *cmd = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/cmdline", mp);
	if (mp && sysroot_read_may_deny(path, 8192, &cmd, &len, NULL) == 0) {
		const char *kind = wait_interactive(cmd, len);
		str_copy(ws->interactive, sizeof(ws->interactive), kind ? kind : "");
		free(cmd);
	}
	const wait_thread *mt = mp ? thread_of(a, mp, mp) : NULL;
	const wait_key *mk = mt ? top_wait(a, mp, mp, WAIT_NKINDS) : NULL;
	if (mk)
		add_wait(ws, j, mk, mt, true, 0, mk->count, mt->samples);
	if (mp && (!mk || mk->kind == WAIT_LOCK || mk->kind == WAIT_POLL || mk->kind == WAIT_UNKNOWN)) {
		const wait_key *best = NULL;
		const wait_thread *bt = NULL;
		for (size_t i = 0; i < a->nthr; i++) {
			const wait_thread *t = &a->thr[i];
			if (t->pid != mp || t->tid == mp || wait_service_thread(t->comm))
				continue;
			const wait_key *k = top_wait(a, t->pid, t->tid, WAIT_LOCK);
			if (k && k->kind != WAIT_UNKNOWN && k->kind != WAIT_OTHER &&
			    (!best || (double)k->count / t->samples > (double)best->count / bt->samples)) {
				best = k;
				bt = t;
			}
		}
		if (best && (double)best->count / bt->samples >= 0.5)
			add_wait(ws, j, best, bt, true, 0, best->count, bt->samples);
	}
	/* the workers: their main threads' waits by kind, call and group */
	int best_count = 0, best_samples = 0, best_workers = 0;
	const wait_key *bk = NULL;
	for (size_t i = 0; i < a->nkey; i++) {
		const wait_key *k = &a->keys[i];
		if (k->kind == WAIT_RUNNING || k->pid != k->tid || is_gpu_pid(a, k->pid) || k->pid == j->root)
			continue;
		int count = 0, samples = 0, workers = 0;
		for (size_t q = 0; q < a->nkey; q++) {
			const wait_key *o = &a->keys[q];
			if (o->kind == k->kind && o->pid == o->tid && !is_gpu_pid(a, o->pid) && o->pid != j->root &&
			    strcmp(o->call, k->call) == 0 && strcmp(o->group, k->group) == 0) {
				count += o->count;
				const wait_thread *t = thread_of(a, o->pid, o->tid);
				samples += t ? t->samples : 0;
				workers++;
			}
		}
		if (count > best_count) {
			best_count = count;
			best_samples = samples;
			best_workers = workers;
			bk = k;
		}
	}
	if (bk)
		add_wait(ws, j, bk, thread_of(a, bk->pid, bk->tid), false, best_workers, best_count, best_samples);
}

void doctor_acc_finish(doctor_acc *a, const job *j, doctor_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	job_cpu_mark end;
	job_cpu_mark_take(&end, j);
	ev->pid = j->root;
	ev->alive = j->alive;
	ev->seconds = end.t - a->start.t;
	ev->tune_tf32_gain = NAN;
	ev->ngpus = (int)a->gpus.n;
	for (size_t i = 0; i < a->gpus.n; i++)
		gpu_window_summary(&a->gpus.w[i], &ev->gpus[i]);
	doctor_cpu *c = &ev->cpu;
	c->seconds = ev->seconds;
	cpu_evidence(a, &end, j, c);
	waits_evidence(a, j, c, &ev->waits);
	/* a rank of a distributed job whose GPU idles may wait for the others: only where the
	 * waits were read (root or the job's user: its environment and sockets are as private) */
	dist_rank_init(&ev->dist);
	if (a->sampled && c->main_pid)
		dist_rank_read(c->main_pid, &ev->dist);
	job_cpu_mark_free(&end);
}

void doctor_acc_free(doctor_acc *a)
{
	if (!a)
		return;
	job_cpu_mark_free(&a->start);
	gpu_windows_free(&a->gpus);
	free(a);
}
