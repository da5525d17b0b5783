/*
 * The sample side of the job doctor: the per-GPU window summary (sampler/summary.h) on synthetic
 * streams, the job's CPU figures (sampler/jobcpu.h) and waits (sampler/waits.h) from lines and
 * from a machine built as a tree (/proc/PID/task/TID/{stat,wchan,syscall}, /proc/PID/fd/N links,
 * /proc/PID/net/tcp), py-spy's output, and the live pipeline (doctor_live) end to end: windows,
 * run's verdict of most windows and its utilisation fallback, a growing job, a waiting one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "doctor/doctor.h"
#include "sampler/jobcpu.h"
#include "sampler/pystack.h"
#include "sampler/rendezvous.h"
#include "sampler/summary.h"
#include "sampler/mounts.h"
#include "sampler/waits.h"
#include "../tools/test_tmp.h"

#define GIB (1024.0 * 1024 * 1024)

/* One GPU sample: utilization, SM active (NAN: no GPM), memory, the processes "pid:bytes". */
static void sample(gpu_sample *g, double util, double sm, double used, size_t nproc, const unsigned *pids,
		   const double *bytes)
{
	memset(g, 0, sizeof(*g));
	g->index = 0;
	g->minor = 0;
	strcpy(g->name, "NVIDIA H200");
	g->util_gpu = sv_ok(util * 100);
	if (!isnan(sm)) {
		g->gpm_support = GV_GPM_ON;
		g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(sm);
	}
	g->mem_total = sv_ok(141 * GIB);
	g->mem_used = sv_ok(used);
	g->cc = sv_ok(9.0);
	g->nprocs = sv_ok((double)nproc);
	g->nproc = nproc;
	for (size_t i = 0; i < nproc; i++) {
		g->procs[i].pid = pids[i];
		g->procs[i].used_bytes = sv_ok(bytes[i]);
	}
}

static job one_job(unsigned root, unsigned worker)
{
	job j;
	memset(&j, 0, sizeof(j));
	j.root = root;
	j.alive = true;
	j.pids[j.n++] = root;
	if (worker)
		j.pids[j.n++] = worker;
	return j;
}

static void test_window_summary(void **st)
{
	(void)st;
	job j = one_job(4242, 0);
	gpu_window w;
	gpu_window_init(&w, 0, "NVIDIA H200");
	gpu_sample g;
	unsigned pids[] = {4242, 999};
	for (int t = 0; t < 8; t++) {
		double mine = (10 + t) * GIB, other = 2 * GIB;
		double bytes[] = {mine, other};
		sample(&g, 0.5, 0.2 + 0.1 * (t % 2), mine + other, 2, pids, bytes);
		g.power = sv_ok(300 + 10 * t);
		g.temp = sv_ok(40 + t);
		g.sm_clock = sv_ok(t < 6 ? 1980 : 1410);
		g.pcie_gen = sv_ok(t == 3 ? 4 : 5);
		g.pcie_width = sv_ok(16);
		g.clock_reasons = sv_ok(t < 2 ? CLK_SW_POWER_CAP : CLK_GPU_IDLE);
		if (t == 5)
			g.nprocs = sv_ok(4); /* NVML counts two it does not list */
		gpu_window_add(&w, &g, 100 + t, &j, JOB_GPU_NVML, mine);
	}
	g.lost = true;
	gpu_window_add(&w, &g, 200, &j, JOB_GPU_NVML, 1); /* a lost GPU's sample is no sample */
	gpu_summary s;
	gpu_window_summary(&w, &s);
	assert_int_equal(s.samples, 8);
	assert_true(fabs(s.util - 0.5) < 1e-9 && s.gpm && fabs(s.act[GV_GPM_SM_ACTIVE] - 0.25) < 1e-9);
	assert_true(fabs(s.power - 335) < 1e-9 && s.power_max == 370 && s.temp_max == 47);
	assert_true(s.sm_clock_median == 1980 && s.sm_clock_min == 1410 && s.sm_clock_max == 1980 && s.sm_clock_last == 1410);
	assert_int_equal(s.pcie_gen_min, 4);
	assert_int_equal(s.pcie_gen_max, 5);
	assert_true(s.reasons == (CLK_SW_POWER_CAP | CLK_GPU_IDLE) && fabs(s.power_cap_frac - 0.25) < 1e-9);
	assert_true(s.job_mem == 17 * GIB && s.other_mem == 2 * GIB);
	assert_int_equal(s.job_procs, 1);
	assert_int_equal(s.other_procs, 3);
	/* the job's memory rose 1 GiB a second, in every quarter */
	assert_true(fabs(s.mem_growth - GIB) < 1 && s.mem_steady && !s.mem_growth_gpu);
	assert_true(s.mem_first == 10 * GIB && s.mem_last == 17 * GIB);
	gpu_window_free(&w);

	/* one allocation (a step) and a ramp that levels off are not steady; a fall is no growth */
	static const double shapes[3][8] = {{10, 10, 10, 20, 20, 20, 20, 20}, {10, 14, 18, 20, 20, 20, 20, 20},
					    {20, 19, 18, 17, 16, 15, 14, 13}};
	for (int k = 0; k < 3; k++) {
		gpu_window_init(&w, 0, NULL);
		for (int t = 0; t < 8; t++) {
			double b = shapes[k][t] * GIB;
			sample(&g, 0.5, NAN, b, 1, pids, &b);
			gpu_window_add(&w, &g, t, &j, JOB_GPU_NVML, b);
		}
		gpu_window_summary(&w, &s);
		assert_false(s.mem_steady);
		assert_false(s.gpm);
		gpu_window_free(&w);
	}
	/* through the device file (another PID namespace): the job's and the others' memory unknown,
	 * the growth is the GPU's */
	gpu_window_init(&w, 0, NULL);
	for (int t = 0; t < 6; t++) {
		double b = (1 + t) * GIB;
		sample(&g, 0.5, NAN, b, 1, (unsigned[]){777777}, &b);
		gpu_window_add(&w, &g, t, &j, JOB_GPU_DEVICE, NAN);
	}
	gpu_window_summary(&w, &s);
	assert_true(s.by_fd && isnan(s.job_mem) && isnan(s.other_mem) && s.other_procs == 0);
	assert_true(s.mem_growth_gpu && s.mem_steady && fabs(s.mem_growth - GIB) < 1);
	gpu_window_free(&w);
	/* sums only (a recording, a whole run): no series, no growth, the means stay */
	gpu_windows set = {.sums_only = true};
	for (int t = 0; t < 6; t++) {
		double b = (1 + t) * GIB;
		sample(&g, 0.25, NAN, b, 1, pids, &b);
		gpu_window_add(gpu_windows_of(&set, &g, 0), &g, t, NULL, JOB_GPU_NONE, NAN);
	}
	assert_non_null(gpu_windows_find(&set, 0));
	assert_null(gpu_windows_find(&set, 1));
	gpu_window_summary(&set.w[0], &s);
	assert_true(isnan(s.mem_growth) && s.util == 0.25 && s.samples == 6 && s.other_procs == 1 && isnan(s.job_mem));
	assert_null(set.w[0].mem);
	gpu_windows_free(&set);
}

static void test_cpu_figures(void **st)
{
	(void)st;
	unsigned char mask[JOBCPU_MAX_CPUS / 8];
	assert_int_equal(cpu_list_parse("0-3,8,10-11\n", mask, sizeof(mask)), 7);
	assert_true((mask[0] & 0x0f) == 0x0f && (mask[1] & 0x0d) == 0x0d && !(mask[0] & 0x10));
	assert_int_equal(cpu_list_parse("", mask, sizeof(mask)), -1);
	assert_int_equal(cpu_list_parse("3-1", mask, sizeof(mask)), -1);
	assert_true(fabs(cpu_max_parse("200000 100000") - 2) < 1e-9);
	assert_true(isnan(cpu_max_parse("max 100000")) && isnan(cpu_max_parse(NULL)) && isnan(cpu_max_parse("x")));
	/* the fuzzer's find: a quotient that underflows to 0 or overflows is no quota */
	assert_true(isnan(cpu_max_parse("1e-200 1e200")) && isnan(cpu_max_parse("1e300 1e-300")));

	/* two marks 10 s apart: a thread at a full core, one at 40% waiting 40% more, one born since */
	thread_cpu a_t[2] = {{.pid = 1, .tid = 1, .ticks = 100}, {.pid = 1, .tid = 2, .ticks = 0, .have_sched = true}};
	thread_cpu b_t[3] = {{.pid = 1, .tid = 1, .ticks = 1100},
			     {.pid = 1, .tid = 2, .ticks = 400, .have_sched = true, .run_ns = 4000000000ULL, .wait_ns = 4000000000ULL},
			     {.pid = 2, .tid = 2, .ticks = 200}};
	unsigned long long ia[4] = {0, 0, 0, ~0ULL}, ib[4] = {1000, 500, 0, ~0ULL};
	job_cpu_mark a = {.t = 0, .nthreads = 2, .threads = a_t, .ncpus = 4, .cpu_idle = ia};
	job_cpu_mark b = {.t = 10, .nthreads = 3, .threads = b_t, .ncpus = 4, .cpu_idle = ib};
	thread_use u[3];
	assert_int_equal(job_cpu_between(&a, &b, 100, u), 3);
	assert_true(fabs(u[0].cores - 1) < 1e-9 && fabs(u[0].demand - 1) < 1e-9);
	assert_true(fabs(u[1].cores - 0.4) < 1e-9 && fabs(u[1].demand - 0.8) < 1e-9);
	assert_true(fabs(u[2].cores - 0.2) < 1e-9);
	/* idle: CPU 0 all of the window, CPU 1 half, CPU 2 none, CPU 3 absent */
	assert_true(fabs(job_cpu_idle(&a, &b, 100, NULL, 0) - 1.5) < 1e-9);
	cpu_limits lim = {.quota_cores = NAN};
	lim.nallowed = cpu_list_parse("1-2", lim.allowed, sizeof(lim.allowed));
	assert_true(fabs(job_cpu_idle(&a, &b, 100, &lim, 0) - 0.5) < 1e-9);
	lim.nallowed = 0;
	lim.quota_cores = 2;
	assert_true(fabs(job_cpu_idle(&a, &b, 100, &lim, 1.6) - 0.4) < 1e-9); /* 2 cores of quota, 1.6 used */
	/* no schedstats (a kernel that answers zeros): a busy thread that never gave its CPU up was kept
	 * from it (demand 1); one that blocked 50 times in the window keeps its CPU time */
	thread_cpu c_a[2] = {{.pid = 3, .tid = 3, .ticks = 0, .have_sched = true, .have_vol = true, .vol_switches = 7},
			     {.pid = 3, .tid = 4, .ticks = 0, .have_vol = true, .vol_switches = 0}};
	thread_cpu c_b[2] = {{.pid = 3, .tid = 3, .ticks = 830, .have_sched = true, .have_vol = true, .vol_switches = 8},
			     {.pid = 3, .tid = 4, .ticks = 830, .have_vol = true, .vol_switches = 50}};
	job_cpu_mark ca = {.t = 0, .nthreads = 2, .threads = c_a}, cb = {.t = 10, .nthreads = 2, .threads = c_b};
	assert_int_equal(job_cpu_between(&ca, &cb, 100, u), 2);
	assert_true(fabs(u[0].cores - 0.83) < 1e-9 && fabs(u[0].demand - 1) < 1e-9);
	assert_true(fabs(u[1].cores - 0.83) < 1e-9 && fabs(u[1].demand - 0.83) < 1e-9);
	/* the CI kernel's: the time on a CPU counted, the run delay not (0): the same as no schedstats */
	thread_cpu e_a[1] = {{.pid = 5, .tid = 5, .ticks = 0, .have_sched = true, .run_ns = 1000000000ULL, .have_vol = true,
			      .vol_switches = 3}};
	thread_cpu e_b[1] = {{.pid = 5, .tid = 5, .ticks = 810, .have_sched = true, .run_ns = 9100000000ULL, .have_vol = true,
			      .vol_switches = 4}};
	job_cpu_mark ea = {.t = 0, .nthreads = 1, .threads = e_a}, eb = {.t = 10, .nthreads = 1, .threads = e_b};
	assert_int_equal(job_cpu_between(&ea, &eb, 100, u), 1);
	assert_true(fabs(u[0].cores - 0.81) < 1e-9 && fabs(u[0].demand - 1) < 1e-9);
	/* with the delay counted: 0.81 on a CPU and 0.1 waiting is 0.91 for a thread that blocked 50
	 * times; one that never blocked wanted the core all the time even so (CI: a spinning thread
	 * read 85% over 1.5 s, its last wait not yet in the delay) */
	e_a[0].wait_ns = 1;
	e_b[0].wait_ns = 1000000001ULL;
	e_b[0].vol_switches = 53;
	assert_int_equal(job_cpu_between(&ea, &eb, 100, u), 1);
	assert_true(fabs(u[0].demand - 0.91) < 1e-9);
	e_b[0].vol_switches = 4;
	assert_int_equal(job_cpu_between(&ea, &eb, 100, u), 1);
	assert_true(fabs(u[0].demand - 1) < 1e-9);
	unsigned long long vs = 0;
	assert_true(proc_status_vol_switches("Name:\tpython\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t99\n", &vs) &&
		    vs == 12);
	assert_true(proc_status_vol_switches("nonvoluntary_ctxt_switches:\t99\nvoluntary_ctxt_switches:\t5\n", &vs) && vs == 5);
	assert_false(proc_status_vol_switches("nonvoluntary_ctxt_switches:\t99\n", &vs));
	/* a mark read over a while: the thread's own readings 9 s apart in a 10 s window of marks */
	thread_cpu d_a[1] = {{.pid = 4, .tid = 4, .ticks = 0, .t = 1.0}};
	thread_cpu d_b[1] = {{.pid = 4, .tid = 4, .ticks = 900, .t = 10.0}};
	job_cpu_mark da = {.t = 0, .nthreads = 1, .threads = d_a}, db = {.t = 10, .nthreads = 1, .threads = d_b};
	assert_int_equal(job_cpu_between(&da, &db, 100, u), 1);
	assert_true(fabs(u[0].cores - 1) < 1e-9);
	/* a worker forked after the first mark (CI's test_doctor: the job's workers start while gpuvet
	 * does), on a kernel without the run delay: 1.2 s of CPU in the 2.5 s since its birth, 0
	 * switches: it wanted the core all its life; counted over the whole window (0.4 cores) and
	 * from a mark that never saw it, it read unsaturated */
	thread_cpu f_b[1] = {{.pid = 6, .tid = 6, .ticks = 120, .t = 3.0, .born = 0.5, .have_sched = true,
			      .run_ns = 1200000000ULL, .have_vol = true, .vol_switches = 0}};
	job_cpu_mark fa = {.t = 0}, fb = {.t = 3, .nthreads = 1, .threads = f_b};
	assert_int_equal(job_cpu_between(&fa, &fb, 100, u), 1);
	assert_true(fabs(u[0].cores - 0.48) < 1e-9 && fabs(u[0].demand - 1) < 1e-9);
	/* the same worker blocking on its queue (40 switches in 2.5 s) is busy 48%, not saturated */
	f_b[0].vol_switches = 40;
	assert_int_equal(job_cpu_between(&fa, &fb, 100, u), 1);
	assert_true(fabs(u[0].demand - 0.48) < 1e-9);
	/* its birth unknown: the whole window */
	f_b[0].born = 0;
	assert_int_equal(job_cpu_between(&fa, &fb, 100, u), 1);
	assert_true(fabs(u[0].cores - 0.4) < 1e-9);
	unsigned long long start = 0;
	assert_true(proc_stat_starttime("4242 (py (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 -5 1 0 987654 "
					"123 456",
					&start) &&
		    start == 987654);
	assert_false(proc_stat_starttime("4242 (python) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50", &start));
	assert_false(proc_stat_starttime(NULL, &start));
	job_cpu_mark none = {.t = 10};
	assert_true(isnan(job_cpu_idle(&a, &none, 100, NULL, 0)));
}

static void test_wait_lines(void **st)
{
	(void)st;
	long nr;
	unsigned long long args[6];
	assert_true(wait_parse_syscall("running\n", &nr, args) && nr == -1);
	assert_true(wait_parse_syscall("-1 0x7ffd 0x7f00\n", &nr, args) && nr == -1);
	assert_true(wait_parse_syscall("0 0x5 0x7f3c2a000000 0x10000 0x0 0x0 0x0 0x7ffd 0x7f3c\n", &nr, args));
	assert_true(nr == 0 && args[0] == 5 && args[2] == 0x10000);
	assert_false(wait_parse_syscall("", &nr, args));
	assert_false(wait_parse_syscall("garbage", &nr, args));
	/* the names and descriptor arguments of this architecture's calls */
	long rd = wait_syscall_nr("read");
	if (rd >= 0) {
		int fd_arg;
		assert_string_equal(wait_syscall_name(rd, &fd_arg), "read");
		assert_int_equal(fd_arg, 0);
		assert_string_equal(wait_syscall_name(wait_syscall_nr("futex"), &fd_arg), "futex");
		assert_int_equal(fd_arg, -1);
	}
	assert_null(wait_syscall_name(-1, NULL));
	assert_int_equal(wait_syscall_nr("no_such_call"), -1);

	assert_int_equal(wait_classify('R', "", "", 0, ""), WAIT_RUNNING);
	assert_int_equal(wait_classify('S', "read", "/data/train/shard-00042.tar", S_IFREG, "0"), WAIT_FILE);
	assert_int_equal(wait_classify('S', "read", "socket:[123]", 0, ""), WAIT_SOCKET);
	assert_int_equal(wait_classify('S', "read", "pipe:[45]", 0, ""), WAIT_PIPE);
	assert_int_equal(wait_classify('S', "read", "/tmp/feed", S_IFIFO, ""), WAIT_PIPE);
	assert_int_equal(wait_classify('S', "ioctl", "/dev/nvidia0", S_IFCHR, ""), WAIT_GPU);
	assert_int_equal(wait_classify('S', "read", "/dev/ttyS0", S_IFCHR, ""), WAIT_DEVICE);
	assert_int_equal(wait_classify('S', "futex", "", 0, "futex_wait_queue"), WAIT_LOCK);
	assert_int_equal(wait_classify('S', "poll", "", 0, "do_sys_poll"), WAIT_POLL);
	assert_int_equal(wait_classify('S', "epoll_wait", "anon_inode:[eventpoll]", 0, ""), WAIT_POLL);
	assert_int_equal(wait_classify('S', "clock_nanosleep", "", 0, ""), WAIT_SLEEP);
	assert_int_equal(wait_classify('S', "wait4", "", 0, ""), WAIT_CHILD);
	assert_int_equal(wait_classify('S', "recvfrom", "", 0, ""), WAIT_SOCKET);
	assert_int_equal(wait_classify('D', "fsync", "/ckpt/model.pt", S_IFREG, ""), WAIT_FILE);
	/* without the call (another user, Yama): the kernel function names it */
	assert_int_equal(wait_classify('S', "", "", 0, "pipe_read"), WAIT_PIPE);
	assert_int_equal(wait_classify('S', "", "", 0, "hrtimer_nanosleep"), WAIT_SLEEP);
	assert_int_equal(wait_classify('S', "", "", 0, "sk_wait_data"), WAIT_SOCKET);
	assert_int_equal(wait_classify('D', "", "", 0, "folio_wait_bit_common"), WAIT_FILE);
	assert_int_equal(wait_classify('D', "", "", 0, ""), WAIT_DISK);
	assert_int_equal(wait_classify('S', "", "", 0, ""), WAIT_UNKNOWN);
	assert_string_equal(wait_kind_name(WAIT_SOCKET), "socket");

	/* /proc/net/tcp and tcp6: the socket's peer */
	const char *tcp = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
			  "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0\n"
			  "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n";
	char peer[96];
	assert_true(wait_tcp_peer(tcp, 222, false, peer, sizeof(peer)));
	assert_string_equal(peer, "10.0.0.5:29556");
	assert_true(wait_tcp_peer(tcp, 111, false, peer, sizeof(peer)));
	assert_string_equal(peer, "listening on port 8080");
	assert_false(wait_tcp_peer(tcp, 333, false, peer, sizeof(peer)));
	const char *tcp6 = "  sl  local_address                         remote_address                        st\n"
			   "   0: 0000000000000000FFFF00000100007F:D2F0 0000000000000000FFFF00000500000A:7374 01 00000000:00000000 "
			   "00:00000000 00000000  1000        0 444 1\n";
	assert_true(wait_tcp_peer(tcp6, 444, true, peer, sizeof(peer)));
	assert_string_equal(peer, "10.0.0.5:29556");

	assert_true(wait_permitted(0, 1000));
	assert_true(wait_permitted(1000, 1000));
	assert_false(wait_permitted(1000, 1001));
	assert_false(wait_permitted(1000, -1));
}

static void test_pystack_parse(void **st)
{
	(void)st;
	const char *dump = "Process 4242: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
			   "Thread 0x7F3C2A1FF640 (idle): \"pt_data_pin\"\n    wait (threading.py:327)\n\n"
			   "Thread 4242 (idle): \"MainThread\"\n    read (tarfile.py:530)\n        Arguments:\n            self: <x>\n"
			   "    __getitem__ (data.py:41)\n    <module> (train.py:88)\n";
	pystack p;
	assert_true(pystack_parse(dump, &p));
	assert_int_equal(p.n, 3);
	assert_string_equal(p.frames[0], "read (tarfile.py:530)");
	assert_string_equal(p.frames[2], "<module> (train.py:88)");
	/* no thread named MainThread: the first; control characters never come through */
	assert_true(pystack_parse("Thread 1 (active): \"x\"\n    f\033[31m (a.py:1)\n", &p));
	assert_null(strchr(p.frames[0], '\033'));
	assert_false(pystack_parse("Error: Permission Denied\n", &p));
}

/* ---- a machine as a tree ---- */

static char root[4096];

static void parents(char *path)
{
	for (char *p = path + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			mkdir(path, 0755);
			*p = '/';
		}
}

static void put(const char *rel, const char *text)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	parents(path);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_to(const char *rel, const char *target)
{
	char path[8192];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	parents(path);
	unlink(path);
	assert_int_equal(symlink(target, path), 0);
}

/* A thread of pid in the syscall nr of `call` on fd (fd < 0: no descriptor), in state S. */
static void thread_in(unsigned pid, unsigned tid, const char *call, int fd, const char *wchan)
{
	char rel[128], text[256];
	snprintf(rel, sizeof(rel), "/proc/%u/task/%u/stat", pid, tid);
	snprintf(text, sizeof(text), "%u (python) S 1 %u %u 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n", tid,
		 pid, pid);
	put(rel, text);
	snprintf(rel, sizeof(rel), "/proc/%u/task/%u/comm", pid, tid);
	put(rel, "python\n");
	snprintf(rel, sizeof(rel), "/proc/%u/task/%u/wchan", pid, tid);
	put(rel, wchan);
	snprintf(rel, sizeof(rel), "/proc/%u/task/%u/syscall", pid, tid);
	snprintf(text, sizeof(text), "%ld 0x%x 0x7f3c2a000000 0x10000 0x0 0x0 0x0 0x7ffd1000 0x7f3c2b000000\n",
		 wait_syscall_nr(call), fd < 0 ? 0 : fd);
	put(rel, text);
}

static void make_tree(void)
{
	test_tmp_path(root, sizeof(root), "gpuvet-live-XXXXXX");
	assert_non_null(mkdtemp(root));
	/* pid 777 holds the GPU and reads a shard; 778 is its worker; they share a pipe */
	put("/proc/777/stat", "777 (python) S 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/777/comm", "python\n");
	/* the job is the tester's own (the doctor reads a job's threads only as root or its user):
	 * as root that is uid 0, as the fresh image's user its uid */
	char status[256];
	unsigned uid = (unsigned)getuid();
	snprintf(status, sizeof(status), "Name:\tpython\nUid:\t%u\t%u\t%u\t%u\nCpus_allowed_list:\t0-3\n", uid, uid, uid, uid);
	put("/proc/777/status", status);
	put("/proc/778/stat", "778 (python) S 777 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/778/comm", "pt_data_worker\n");
	put("/proc/stat", "cpu  1 0 1 400 0 0 0 0 0 0\ncpu0 1 0 1 100 0 0 0 0 0 0\ncpu1 0 0 0 100 0 0 0 0 0 0\n");
	thread_in(777, 777, "read", 5, "0\n");
	thread_in(777, 780, "futex", -1, "futex_wait_queue\n");
	thread_in(778, 778, "read", 4, "pipe_read\n");
	put("/proc/778/task/778/comm", "pt_data_worker\n"); /* PyTorch names its DataLoader workers so */
	put("/data/train/shard-00042.tar", "x");
	link_to("/proc/777/fd/5", "/data/train/shard-00042.tar");
	link_to("/proc/777/fd/6", "socket:[222]");
	link_to("/proc/777/fd/7", "pipe:[9001]");
	link_to("/proc/777/fd/8", "/dev/nvidia0");
	link_to("/proc/778/fd/4", "pipe:[9001]");
	put("/proc/777/net/tcp",
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n");
	sysroot_set(root);
}

static void remove_tree(void)
{
	sysroot_set(NULL);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
}

static void test_waits_tree(void **st)
{
	(void)st;
	if (wait_syscall_nr("read") < 0)
		skip(); /* an architecture without the call table: the wchan alone (tested above) */
	make_tree();
	job j = one_job(777, 778);
	thread_wait w;
	char what[200];
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_FILE);
	assert_string_equal(w.call, "read");
	assert_string_equal(w.link, "/data/train/shard-00042.tar");
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "/data/train/shard-00042.tar");
	assert_true(thread_wait_read(777, 780, &w));
	assert_int_equal(w.kind, WAIT_LOCK);
	/* the worker reads its pipe, whose other end is the main process */
	assert_true(thread_wait_read(778, 778, &w));
	assert_int_equal(w.kind, WAIT_PIPE);
	wait_describe(&j, 778, &w, what, sizeof(what));
	assert_string_equal(what, "a pipe to pid 777 (python)");
	/* a socket: its peer from the process's /proc/PID/net/tcp */
	thread_in(777, 777, "recvfrom", 6, "sk_wait_data\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_SOCKET);
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "a TCP socket to 10.0.0.5:29556");
	/* the GPU driver */
	thread_in(777, 777, "ioctl", 8, "0\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_GPU);
	/* the syscall file unreadable (another user, Yama): the wchan */
	put("/proc/777/task/777/syscall", "");
	put("/proc/777/task/777/wchan", "pipe_read\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_PIPE);
	assert_int_equal(w.nr, -2);
	assert_false(thread_wait_read(779, 779, &w)); /* gone */
	/* the job's CPUs: its affinity */
	cpu_limits lim;
	job_cpu_limits(777, &lim);
	assert_int_equal(lim.nallowed, 4);
	assert_true(isnan(lim.quota_cores));
	assert_int_equal(wait_proc_uid(777), (long)getuid());
	remove_tree();
}

/* The kernel's syscall file answers "running" when the thread woke while it was read: the first
 * `racing` opens of a thread's syscall file answer so. */
static int racing, syscall_fd = -1;
static int (*real_open)(const char *, int, ...);
static ssize_t (*real_read)(int, void *, size_t);

static int open_racing(const char *path, int flags, ...)
{
	int fd = real_open(path, flags);
	size_t n = strlen(path);
	if (fd >= 0 && n > 8 && strcmp(path + n - 8, "/syscall") == 0 && racing > 0) {
		racing--;
		syscall_fd = fd;
	}
	return fd;
}

static ssize_t read_racing(int fd, void *buf, size_t n)
{
	if (fd == syscall_fd) {
		syscall_fd = -1;
		static const char running[] = "running\n";
		size_t k = sizeof(running) - 1 < n ? sizeof(running) - 1 : n;
		memcpy(buf, running, k);
		return (ssize_t)k;
	}
	return real_read(fd, buf, n);
}

/* A failed assertion leaves the test's hooks in the table: the next tests read the real calls. */
static int restore_ops(void **st)
{
	(void)st;
	sysroot_reset_ops();
	racing = 0;
	syscall_fd = -1;
	return 0;
}

/* Short reads from fast storage: the thread sleeps in the block layer at its stat, but each
 * read ends before its syscall file is read (H200, kernel 6.18: 3 of 8 samples asleep, none in
 * the call). The file is asked again; where it never names the call, the process's open data
 * files name what it reads. */
static void test_waits_short_reads(void **st)
{
	(void)st;
	if (wait_syscall_nr("preadv") < 0)
		skip();
	make_tree();
	job j = one_job(777, 778);
	thread_in(777, 777, "preadv", 5, "blk_io_schedule\n");
	put("/proc/777/task/777/stat", "777 (python) D 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	real_open = gv_sys.open;
	real_read = gv_sys.read;
	gv_sys.open = open_racing;
	gv_sys.read = read_racing;
	thread_wait w;
	char what[200];
	/* woke during the first reads, asleep in the call at the next */
	racing = WAIT_SYSCALL_TRIES - 1;
	assert_true(thread_wait_read(777, 777, &w));
	assert_string_equal(w.call, "preadv");
	assert_string_equal(w.link, "/data/train/shard-00042.tar");
	/* never caught in the call: the storage wait from the wchan, and the open data files */
	racing = WAIT_SYSCALL_TRIES;
	assert_true(thread_wait_read(777, 777, &w));
	gv_sys.open = real_open;
	gv_sys.read = real_read;
	assert_int_equal(w.nr, -1);
	assert_string_equal(w.call, "");
	assert_int_equal(w.kind, WAIT_FILE);
	put("/proc/777/fdinfo/5", "pos:\t0\nflags:\t0140000\nmnt_id:\t25\n"); /* O_RDONLY|O_DIRECT|O_LARGEFILE */
	put("/data/train/train.log", "written");
	link_to("/proc/777/fd/9", "/data/train/train.log");
	put("/proc/777/fdinfo/9", "pos:\t7\nflags:\t0102001\n"); /* O_WRONLY|O_APPEND: a log, not data */
	put("/usr/lib/libfoo.so.1", "elf");
	link_to("/proc/777/fd/10", "/usr/lib/libfoo.so.1");
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "its open file /data/train/shard-00042.tar (1 B)");
	/* several: the largest first, the rest counted */
	put("/data/train/shard-00043.tar", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
					  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	link_to("/proc/777/fd/11", "/data/train/shard-00043.tar");
	put("/data/train/index.idx", "xx");
	link_to("/proc/777/fd/12", "/data/train/index.idx");
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "its open files /data/train/shard-00043.tar (128 B), /data/train/index.idx (2 B) and 1 more");
	/* a wait that is not storage's names no open file */
	w.kind = WAIT_DISK;
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "");
	remove_tree();
}

/* A thread asleep in a page fault: the syscall file's "-1 SP PC" (no call), uninterruptible
 * sleep; what it reads is the process's memory-mapped data (np.memmap, an Arrow dataset). */
static void test_waits_page_faults(void **st)
{
	(void)st;
	make_tree();
	job j = one_job(777, 778);
	put("/proc/777/task/777/stat", "777 (python) D 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/777/task/777/syscall", "-1 0x7ffd2c1e8a50 0x7f3c2a41b2e4\n");
	put("/proc/777/task/777/wchan", "0\n"); /* a kernel that hides its functions */
	put("/proc/777/maps",
	    "55d0c0000000-55d0c0001000 r--p 00000000 103:02 11 /usr/bin/python3.12\n"
	    "7f0000000000-7f0040000000 r--s 00000000 103:02 12 /data/train/tokens.npy\n"
	    "7f0040000000-7f0080000000 r--s 40000000 103:02 12 /data/train/tokens.npy\n"
	    "7f0080000000-7f0080c00000 r--p 00000000 103:02 13 /data/train/labels.arrow\n"
	    "7f0090000000-7f0090100000 r--p 00000000 103:02 14 /usr/lib/locale/locale-archive\n"
	    "7f00a0000000-7f00a0800000 r-xp 00000000 103:02 15 /venv/lib/python3.12/site-packages/torch/lib/libtorch_cpu.so\n"
	    "7f00b0000000-7f00b0100000 r--p 00000000 103:02 16 /data/cache/old.bin (deleted)\n"
	    "7f00c0000000-7f00c0021000 rw-p 00000000 00:00 0 \n"
	    "7ffd2c1c9000-7ffd2c1ea000 rw-p 00000000 00:00 0                          [stack]\n"
	    "7f00d0000000-7f00d0001000 rw-s 00000000 00:05 17 /data/train/index.idx\n"
	    /* a program outside /usr: its data segments are mapped without x, its code with it */
	    "7f00e0000000-7f00e0004000 r--p 00000000 103:02 18 /venv/bin/python3.11\n"
	    "7f00e0004000-7f00e0005000 r-xp 00004000 103:02 18 /venv/bin/python3.11\n");
	thread_wait w;
	char what[200];
	assert_true(thread_wait_read(777, 777, &w));
	assert_true(w.fault);
	assert_int_equal(w.nr, -1);
	assert_string_equal(w.call, "");
	assert_int_equal(w.kind, WAIT_FILE);
	wait_describe(&j, 777, &w, what, sizeof(what));
	/* the two mappings of tokens.npy summed; the system's files, a library, a deleted file and
	 * anonymous memory left out */
	assert_string_equal(what, "its memory-mapped files /data/train/tokens.npy (2.0 GiB), /data/train/labels.arrow (12 MiB) "
				  "and 1 more");
	/* the kernel function of a page-cache wait keeps the storage kind */
	put("/proc/777/task/777/wchan", "folio_wait_bit_common\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_true(w.fault);
	assert_int_equal(w.kind, WAIT_FILE);
	/* a fault on the GPU's managed memory is the GPU's */
	put("/proc/777/task/777/wchan", "uvm_va_block_make_resident\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_GPU);
	/* no data file mapped: swap or the program's own pages */
	put("/proc/777/task/777/wchan", "0\n");
	put("/proc/777/maps", "7f00c0000000-7f00c0021000 rw-p 00000000 00:00 0 \n");
	assert_true(thread_wait_read(777, 777, &w));
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "memory that no data file backs (swap, or the program's own files)");
	/* "running" is a thread that woke, not a fault; asleep in S outside a call is no fault either */
	put("/proc/777/task/777/syscall", "running\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_false(w.fault);
	put("/proc/777/task/777/syscall", "-1 0x7ffd2c1e8a50 0x7f3c2a41b2e4\n");
	put("/proc/777/task/777/stat", "777 (python) S 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_false(w.fault);
	remove_tree();
}

/* snapshots of GPU 0 at times t0.., the job's process 777 on it with bytes(t), utilization util */
static void feed(doctor_live *d, job *j, double t0, int n, double util, double gib0, double gib_per_s)
{
	for (int t = 0; t < n; t++) {
		snapshot *s = snapshot_new(1);
		s->time = t0 + t;
		double b = (gib0 + gib_per_s * t) * GIB;
		sample(&s->gpus[0], util, util * 0.5, b, 1, &j->pids[0], &b);
		doctor_live_feed(d, s, j);
		snapshot_free(s);
	}
}

/* What a waiting thread waits for: a server's listening socket in its event loop or accept(), its
 * terminal, an interactive session's command line. */
static void test_waits_for_work(void **st)
{
	(void)st;
	if (wait_syscall_nr("epoll_wait") < 0)
		skip();
	make_tree();
	job j = one_job(777, 778);
	/* uvicorn's event loop: an epoll descriptor watching the listening socket and a connection */
	link_to("/proc/777/fd/9", "anon_inode:[eventpoll]");
	link_to("/proc/777/fd/10", "socket:[333]");
	link_to("/proc/777/fd/11", "anon_inode:[eventfd]");
	put("/proc/777/fdinfo/9", "pos:\t0\nflags:\t02000002\nmnt_id:\t15\nino:\t1057\n"
				  "tfd:       11 events:       19 data:                b  pos:0 ino:421 sdev:f\n"
				  "tfd:       10 events:       19 data:                a  pos:0 ino:14d sdev:8\n");
	put("/proc/777/net/tcp",
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   0: 00000000:1F40 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0\n"
	    "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n");
	thread_in(777, 777, "epoll_wait", 9, "do_epoll_wait\n");
	thread_wait w;
	char what[200];
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_POLL);
	assert_int_equal(wait_listen_port(777, &w), 8000);
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "epoll on anon_inode:[eventfd], a TCP socket listening on port 8000");
	/* accept() on it */
	thread_in(777, 777, "accept4", 10, "inet_csk_accept\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(w.kind, WAIT_SOCKET);
	assert_int_equal(wait_listen_port(777, &w), 8000);
	/* a connected socket is no server's wait */
	thread_in(777, 777, "recvfrom", 6, "sk_wait_data\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_int_equal(wait_listen_port(777, &w), 0);
	/* pdb at a prompt: read() on the terminal */
	link_to("/proc/777/fd/0", "/dev/pts/3");
	thread_in(777, 777, "read", 0, "n_tty_read\n");
	assert_true(thread_wait_read(777, 777, &w));
	assert_true(wait_terminal(w.link));
	wait_describe(&j, 777, &w, what, sizeof(what));
	assert_string_equal(what, "its terminal /dev/pts/3");
	assert_false(wait_terminal("/dev/nvidia0"));
	assert_false(wait_terminal("/data/tty.txt"));
	remove_tree();
	/* the listening port from a table's text alone; an established socket has none */
	const char *tab = "  sl  local_address rem_address   st\n"
			  "   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 0:0 0:0 0 1000 0 444 1\n"
			  "   1: 0100007F:D2F0 0500000A:7374 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n";
	assert_int_equal(wait_listen_port_in(tab, 444), 8080);
	assert_int_equal(wait_listen_port_in(tab, 222), 0);
	assert_int_equal(wait_listen_port_in(tab, 999), 0);
	/* the peer of an established socket (0x7374: 29556), none of a listening one */
	assert_int_equal(wait_peer_port_in(tab, 222), 29556);
	assert_int_equal(wait_peer_port_in(tab, 444), 0);
	assert_int_equal(wait_peer_port_in(tab, 999), 0);
	/* interactive sessions by their command lines */
	static const char jup[] = "/venv/bin/python\0-m\0ipykernel_launcher\0-f\0/run/user/1000/jupyter/kernel-1.json";
	static const char vsc[] = "/usr/bin/python3\0-m\0ipykernel_launcher\0--f=/tmp/kernel-v2.json";
	static const char ipy[] = "/venv/bin/python3\0/venv/bin/ipython\0";
	static const char ipy2[] = "/usr/local/bin/ipython3";
	static const char train[] = "python3\0train.py\0--log=ipython.txt";
	assert_string_equal(wait_interactive(jup, sizeof(jup)), "a Jupyter kernel");
	assert_string_equal(wait_interactive(vsc, sizeof(vsc)), "a Jupyter kernel");
	assert_string_equal(wait_interactive(ipy, sizeof(ipy)), "an IPython shell");
	assert_string_equal(wait_interactive(ipy2, sizeof(ipy2)), "an IPython shell");
	assert_null(wait_interactive(train, sizeof(train)));
	assert_null(wait_interactive(NULL, 0));
}

/* The doctor on a job whose main thread waits in page faults of a memory-mapped dataset. */
/* pid 777's main thread in a page fault (D outside any call) on its mapped /data/train/tokens.npy,
 * asleep in the kernel function wchan */
static void in_page_fault(const char *wchan)
{
	put("/proc/777/task/777/stat", "777 (python) D 1 777 777 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/777/task/777/syscall", "-1 0x7ffd2c1e8a50 0x7f3c2a41b2e4\n");
	put("/proc/777/task/777/wchan", wchan);
	put("/proc/777/maps", "7f0000000000-7f0080000000 r--s 00000000 103:02 12 /data/train/tokens.npy\n");
}

static void test_live_page_faults(void **st)
{
	(void)st;
	make_tree();
	job j = one_job(777, 778);
	in_page_fault("filemap_fault\n");
	doctor_live_opts o = {.window = 0};
	doctor_live *d = doctor_live_new(&o);
	feed(d, &j, 100, 9, 0.02, 10, 0);
	const doctor_result *r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "it waits on page faults that read from storage (its memory-mapped file "
					    "/data/train/tokens.npy"));
	bool seen = false, fix = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		seen |= strstr(r->v.evidence[i], "the main thread (pid 777, python) was in page faults on its memory-mapped file "
						 "/data/train/tokens.npy (2.0 GiB) in 100% of the samples while the GPU idled "
						 "(32 of 32)") != NULL; /* 8 idle samples, 4 readings each */
	for (size_t i = 0; i < r->v.nfix; i++)
		fix |= strstr(r->v.fix[i], "memory-mapped data") != NULL && strstr(r->v.fix[i], "vmtouch") != NULL;
	assert_true(seen);
	assert_true(fix);
	assert_false(r->v.cut);
	doctor_live_free(d);

	/* on a fast disk the same faults read three ways: in a page fault, woken at each read of the
	 * syscall file (a page-cache wait, or no kernel function at all): one wait of the thread */
	d = doctor_live_new(&o);
	for (int t = 0; t < 9; t++) {
		put("/proc/777/task/777/syscall", t % 3 == 0 ? "-1 0x7ffd2c1e8a50 0x7f3c2a41b2e4\n" : "running\n");
		put("/proc/777/task/777/wchan", t % 3 == 1 ? "folio_wait_bit_common\n" : "0\n");
		feed(d, &j, 200 + t, 1, 0.02, 10, 0);
	}
	r = doctor_live_finish(d, &j);
	assert_non_null(r);
	seen = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		seen |= strstr(r->v.evidence[i], "was in page faults on its memory-mapped file /data/train/tokens.npy (2.0 GiB) in "
						 "100% of the samples") != NULL;
	assert_true(seen);
	doctor_live_free(d);
	remove_tree();
}

/* Which mount holds a file: the longest mount point that is a whole leading part of its path, the
 * later of two at one point, octal escapes undone. */
static void test_mount_find(void **st)
{
	(void)st;
	static const char mi[] =
		"22 1 253:1 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
		"30 22 0:40 / /data rw,relatime shared:9 - nfs4 10.0.0.5:/export rw,vers=4.2\n"
		"31 30 0:41 / /data/cache rw,relatime - tmpfs tmpfs rw\n"
		"32 22 0:42 / /mnt/my\\040bucket rw,nosuid - fuse.gcsfuse my-bucket rw,user_id=0\n"
		"33 22 0:43 / /scratch rw - xfs /dev/sdb1 rw\n"
		"34 22 0:44 / /scratch rw shared:5 master:2 - lustre 10.1.0.2@o2ib:/fs rw\n"
		"35 22 0:45 / /broken rw no-dash-here ext4 /dev/x rw\n";
	mount_info m;
	assert_true(mount_find(mi, strlen(mi), "/data/train/shard-00042.tar", &m));
	assert_string_equal(m.point, "/data");
	assert_string_equal(m.fstype, "nfs4");
	assert_string_equal(m.source, "10.0.0.5:/export");
	assert_string_equal(mount_remote_of(m.fstype)->words, "network storage (NFS)");
	assert_true(mount_find(mi, strlen(mi), "/data/cache/x", &m));
	assert_string_equal(m.fstype, "tmpfs");
	assert_null(mount_remote_of(m.fstype));
	assert_true(mount_find(mi, strlen(mi), "/database/x", &m)); /* not under /data */
	assert_string_equal(m.point, "/");
	assert_string_equal(m.fstype, "ext4");
	assert_true(mount_find(mi, strlen(mi), "/mnt/my bucket/part-0.parquet", &m));
	assert_string_equal(m.point, "/mnt/my bucket");
	assert_string_equal(mount_remote_of(m.fstype)->words, "Cloud Storage through gcsfuse");
	assert_true(mount_find(mi, strlen(mi), "/scratch/run/ckpt.pt", &m)); /* mounted over the xfs */
	assert_string_equal(m.fstype, "lustre");
	assert_true(mount_find(mi, strlen(mi), "/broken/x", &m)); /* a line without "-" is skipped */
	assert_string_equal(m.point, "/");
	assert_false(mount_find(mi, strlen(mi), "relative/x", &m));
	assert_false(mount_find("", 0, "/x", &m));
	assert_string_equal(mount_remote_of("fuse.somethingnew")->words, "a user-space filesystem (FUSE)");
	assert_null(mount_remote_of("fuseblk")); /* ntfs-3g on a local disk */
	assert_null(mount_remote_of("overlay"));
}

/* A job whose memory-mapped data is on NFS: the title says network storage, the evidence the
 * mount, the fixes copying it to local storage and NFS's own. The same file on a local disk is
 * storage, with its mount in the evidence and no network fix. */
static void test_live_network_storage(void **st)
{
	(void)st;
	make_tree();
	job j = one_job(777, 778);
	in_page_fault("rpc_wait_bit_killable\n");
	put("/proc/777/mountinfo", "22 1 253:1 / / rw - ext4 /dev/nvme0n1p2 rw\n"
				   "30 22 0:40 / /data rw,relatime - nfs4 10.0.0.5:/export rw,vers=4.2\n");
	doctor_live_opts o = {.window = 0};
	doctor_live *d = doctor_live_new(&o);
	feed(d, &j, 100, 9, 0.02, 10, 0);
	const doctor_result *r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "it waits on page faults that read from network storage (NFS): its memory-mapped "
					    "file /data/train/tokens.npy"));
	bool mount = false, copy = false, nfs = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		mount |= strstr(r->v.evidence[i], "/data/train/tokens.npy is on nfs4 10.0.0.5:/export, mounted at /data: network "
						  "storage (NFS), not a local disk") != NULL;
	for (size_t i = 0; i < r->v.nfix; i++) {
		copy |= strstr(r->v.fix[i], "the data is on network storage (NFS) (10.0.0.5:/export at /data)") != NULL;
		nfs |= strstr(r->v.fix[i], "nconnect=8") != NULL;
	}
	assert_true(mount);
	assert_true(copy);
	assert_true(nfs);
	assert_false(r->v.cut);
	doctor_live_free(d);

	put("/proc/777/mountinfo", "22 1 253:1 / / rw - ext4 /dev/nvme0n1p2 rw\n");
	d = doctor_live_new(&o);
	feed(d, &j, 100, 9, 0.02, 10, 0);
	r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_non_null(strstr(r->v.title, "it waits on page faults that read from storage (its memory-mapped file"));
	mount = copy = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		mount |= strstr(r->v.evidence[i], "/data/train/tokens.npy is on ext4 /dev/nvme0n1p2, mounted at /") != NULL &&
			 strstr(r->v.evidence[i], "not a local disk") == NULL;
	for (size_t i = 0; i < r->v.nfix; i++)
		copy |= strstr(r->v.fix[i], "network storage") != NULL;
	assert_true(mount);
	assert_false(copy);
	doctor_live_free(d);
	remove_tree();
}

/* A Python socket with a timeout (urllib, requests, boto3) waits in poll() on that one socket:
 * the descriptor comes from the pollfd in the process's memory, and the wait is the socket's. */
static void test_waits_poll_one(void **st)
{
	(void)st;
	assert_int_equal(wait_classify('S', "poll", "socket:[5]", 0, ""), WAIT_SOCKET);
	assert_int_equal(wait_classify('S', "ppoll", "pipe:[7]", 0, ""), WAIT_PIPE);
	assert_int_equal(wait_classify('S', "poll", "", 0, ""), WAIT_POLL);
	assert_int_equal(wait_classify('S', "poll", "anon_inode:[eventfd]", 0, ""), WAIT_POLL);
	if (wait_syscall_nr("poll") < 0)
		skip();
	make_tree();
	job j = one_job(777, 778);
	char text[256];
	snprintf(text, sizeof(text), "%ld 0x2000 0x1 0x7530 0x0 0x0 0x0 0x7ffd1000 0x7f3c2b000000\n", wait_syscall_nr("poll"));
	put("/proc/777/task/777/syscall", text);
	put("/proc/777/task/777/wchan", "do_sys_poll\n");
	/* its pollfd at 0x2000: descriptor 6 (socket:[222]), POLLIN */
	char path[8192];
	snprintf(path, sizeof(path), "%s/proc/777/mem", root);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	int32_t pfd[2] = {6, 1};
	assert_int_equal(fseek(f, 0x2000, SEEK_SET), 0);
	assert_int_equal(fwrite(pfd, sizeof(pfd), 1, f), 1);
	fclose(f);
	put("/proc/777/net/tcp",
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   1: 0100007F:D2F0 0208D834:01BB 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0\n");
	doctor_live_opts o = {.window = 0};
	doctor_live *d = doctor_live_new(&o);
	feed(d, &j, 100, 9, 0.02, 10, 0);
	const doctor_result *r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "it waits on the network (a TCP socket to 52.216.8.2:443, an HTTPS server)"));
	bool fix = false;
	for (size_t i = 0; i < r->v.nfix; i++)
		fix |= strstr(r->v.fix[i], "streaming=True") != NULL;
	assert_true(fix);
	doctor_live_free(d);

	/* a connection a request (urllib's): a new socket in each sample, each closed by the window's
	 * end. One wait on that peer, named as each was seen */
	d = doctor_live_new(&o);
	static const char tcp_head[] =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n";
	for (int t = 0; t < 9; t++) {
		char ino[32], row[512];
		snprintf(ino, sizeof(ino), "socket:[%d]", 300 + t);
		link_to("/proc/777/fd/6", ino);
		snprintf(row, sizeof(row),
			 "%s   1: 0100007F:D2F0 0208D834:01BB 01 00000000:00000000 00:00000000 00000000  1000        0 %d 1 0\n",
			 tcp_head, 300 + t);
		put("/proc/777/net/tcp", row);
		feed(d, &j, 200 + t, 1, 0.02, 10, 0);
	}
	put("/proc/777/net/tcp", tcp_head);
	r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_non_null(strstr(r->v.title, "it waits on the network (a TCP socket to 52.216.8.2:443, an HTTPS server)"));
	bool all = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		all |= strstr(r->v.evidence[i], "a TCP socket to 52.216.8.2:443 in 100% of the samples") != NULL;
	assert_true(all);
	doctor_live_free(d);
	remove_tree();
}

static void test_live_pipeline(void **st)
{
	(void)st;
	if (wait_syscall_nr("read") < 0)
		skip();
	make_tree();
	job j = one_job(777, 778);
	/* one window (watch --diagnose): the GPU idles, the main thread reads a shard */
	doctor_live_opts o = {.window = 0};
	doctor_live *d = doctor_live_new(&o);
	assert_null(doctor_live_last(d));
	feed(d, &j, 100, 9, 0.02, 10, 0);
	const doctor_result *r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "reads from storage (/data/train/shard-00042.tar)"));
	bool seen = false;
	for (size_t i = 0; i < r->v.nevidence; i++)
		seen |= strstr(r->v.evidence[i], "the main thread (pid 777, python) was in read() on /data/train/shard-00042.tar in "
						 "100% of the samples") != NULL;
	assert_true(seen);
	assert_int_equal(r->ev.cpu.workers, 1);
	assert_int_equal(r->ev.cpu.dataloader_workers, 1);
	cJSON *doc = doctor_json(&r->ev, &r->v);
	char *text = cJSON_PrintUnformatted(doc);
	assert_non_null(strstr(text, "\"kind\":\"file\",\"call\":\"read\",\"on\":\"/data/train/shard-00042.tar\",\"page_faults\":false"));
	assert_non_null(strstr(text, "\"memory_growth_steady\":false"));
	free(text);
	cJSON_Delete(doc);
	doctor_live_free(d);

	/* a growing job, 1 GiB/s: its own verdict, whatever else */
	d = doctor_live_new(&o);
	feed(d, &j, 100, 9, 0.3, 10, 1);
	r = doctor_live_finish(d, &j);
	assert_string_equal(r->v.id, "job.memory-growth");
	assert_non_null(strstr(r->v.title, "grows 1.00 GiB/s"));
	doctor_live_free(d);

	/* run: 10 s windows; the verdict most windows gave, with their count */
	o.window = 10;
	d = doctor_live_new(&o);
	feed(d, &j, 0, 41, 0.02, 10, 0);
	assert_non_null(doctor_live_last(d));
	assert_string_equal(doctor_live_last(d)->v.id, "job.gpu-idle");
	char *rep = doctor_live_report(d, 30);
	assert_non_null(rep);
	assert_non_null(strstr(rep, "the job doctor, 4 of 4 windows of 10 s: job 777:"));
	free(rep);
	doctor_live_free(d);
	remove_tree();
}

/* A window that holds two phases: idle then busy (a job starting), busy then idle (a stall
 * beginning); an alternation or a steady load is none. */
static void phase_window(const double *util, size_t n, gpu_summary *o)
{
	gpu_window w;
	gpu_window_init(&w, 0, "NVIDIA H200");
	unsigned pid = 4242;
	for (size_t i = 0; i < n; i++) {
		gpu_sample g;
		double b = 2 * GIB;
		sample(&g, util[i], NAN, b, 1, &pid, &b);
		gpu_window_add(&w, &g, 100 + (double)i, NULL, JOB_GPU_NONE, NAN);
	}
	gpu_window_summary(&w, o);
	gpu_window_free(&w);
}

static void test_phases(void **st)
{
	(void)st;
	gpu_summary o;
	/* the H200's healthy AMP job watched from 5 s after its start: 4 samples idle, 4 busy */
	static const double start[] = {0, 0.02, 0, 0.05, 0.93, 0.97, 0.99, 0.98};
	phase_window(start, 8, &o);
	assert_true(fabs(o.phase_t - 4) < 1e-9);
	assert_true(o.busy_before < 0.05 && o.busy_after > 0.95);
	static const double stall[] = {0.97, 0.99, 0.98, 0.95, 0.99, 0.97, 0, 0, 0.01, 0};
	phase_window(stall, 10, &o);
	assert_true(fabs(o.phase_t - 6) < 1e-9);
	assert_true(o.busy_before > 0.9 && o.busy_after < 0.05);
	/* none: an alternation (a loader that stalls each second), a steady half load, a lone busy
	 * sample at the end, too few samples */
	static const double alt[] = {0, 1, 0, 1, 0, 1, 0, 1};
	phase_window(alt, 8, &o);
	assert_true(isnan(o.phase_t) && isnan(o.busy_before) && isnan(o.busy_after));
	static const double half[] = {0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
	phase_window(half, 6, &o);
	assert_true(isnan(o.phase_t));
	static const double lone[] = {0, 0, 0, 0, 0, 0, 0, 1};
	phase_window(lone, 8, &o);
	assert_true(isnan(o.phase_t));
	static const double three[] = {0, 0, 1};
	phase_window(three, 3, &o);
	assert_true(isnan(o.phase_t));
	/* a busy part with one sample under PHASE_IDLE is not one phase */
	static const double dip[] = {0, 0, 0, 0, 0.9, 0.1, 0.9, 0.9};
	phase_window(dip, 8, &o);
	assert_true(isnan(o.phase_t) || o.phase_t > 5);

	/* the doctor: the phases, not the means (51% read "mostly idle ... waits on a poll") */
	if (wait_syscall_nr("read") < 0)
		return;
	make_tree();
	job j = one_job(777, 0);
	doctor_live_opts opt = {.window = 0};
	doctor_live *d = doctor_live_new(&opt);
	for (int t = 0; t < 9; t++) {
		snapshot *sn = snapshot_new(1);
		sn->time = 100 + t;
		double b = 10 * GIB, busy = t < 4 ? 0.02 : 0.95;
		sample(&sn->gpus[0], busy, busy, b, 1, &j.pids[0], &b);
		doctor_live_feed(d, sn, &j);
		snapshot_free(sn);
	}
	const doctor_result *r = doctor_live_finish(d, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.phase-change");
	assert_non_null(strstr(r->v.title, "went from idle to busy"));
	cJSON *doc = doctor_json(&r->ev, &r->v);
	char *text = cJSON_PrintUnformatted(doc);
	assert_non_null(strstr(text, "\"phase_change_seconds\":"));
	free(text);
	cJSON_Delete(doc);
	doctor_live_free(d);
	remove_tree();
}

/* The launcher's variables and the store's sockets, from text. */
static void test_rendezvous_parse(void **st)
{
	(void)st;
	dist_rank d;
	static const char env[] = "PATH=/usr/bin\0RANK=1\0WORLD_SIZE=16\0MASTER_ADDR=node-07\0MASTER_PORT=29500\0"
				  "LOCAL_RANK=1\0RANKING=9\0";
	dist_rank_init(&d);
	dist_env_parse(env, sizeof(env) - 1, &d);
	assert_true(d.known);
	assert_int_equal(d.rank, 1);
	assert_int_equal(d.world, 16);
	assert_int_equal(d.master_port, 29500);
	assert_string_equal(d.master, "node-07:29500");
	/* nothing of a launcher, and values that are no numbers: unknown */
	static const char junk[] = "RANK=x\0WORLD_SIZE=-3\0MASTER_PORT=99999\0MASTER_ADDR=a\tb\0";
	dist_rank_init(&d);
	dist_env_parse(junk, sizeof(junk) - 1, &d);
	assert_int_equal(d.rank, -1);
	assert_int_equal(d.world, -1);
	assert_int_equal(d.master_port, 0);
	assert_string_equal(d.master, "a?b:?"); /* no control character reaches a verdict */
	assert_false(d.known);
	dist_rank_init(&d);
	dist_env_parse("HOME=/root", 10, &d); /* unterminated */
	assert_false(d.known);
	assert_true(dist_store_thread("pt_tcpstore_uv") && dist_store_thread("pt_tcpstore"));
	assert_false(dist_store_thread("python3"));
	/* the library's own threads, not the job's */
	assert_non_null(wait_service_thread("cuda00001400006"));
	assert_non_null(wait_service_thread("cuda-EvtHandlr"));
	assert_non_null(wait_service_thread("pt_autograd_0"));
	assert_non_null(wait_service_thread("pt_nccl_watchdg"));
	assert_null(wait_service_thread("cuda"));
	assert_null(wait_service_thread("cudaloader"));
	assert_null(wait_service_thread("python3"));
	assert_null(wait_service_thread("pt_data_worker")); /* a DataLoader worker's waits are the job's */
	/* the store's sockets: listening on 29500 in tcp and tcp6, two ranks accepted, another
	 * process's socket on the same port left out (not its inode) */
	static const char table[] =
		"  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		"   0: 00000000:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 301 1 0\n"
		"   1: 0100007F:733C 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 302 1 0\n"
		"   2: 0100007F:9C40 0100007F:733C 01 00000000:00000000 00:00000000 00000000     0        0 303 1 0\n"
		"   3: 0500000A:733C 0600000A:B000 01 00000000:00000000 00:00000000 00000000     0        0 304 1 0\n"
		"   4: 0500000A:733C 0700000A:B001 01 00000000:00000000 00:00000000 00000000     0        0 999 1 0\n";
	unsigned long long ino[] = {301, 302, 303, 304, 305};
	dist_sock socks[8];
	size_t n = dist_sockets_parse(table, ino, 5, socks, 8);
	assert_int_equal(n, 4);
	dist_rank_init(&d);
	d.hosts_store = true; /* no variables: its only listening port */
	dist_from_sockets(socks, n, &d);
	assert_int_equal(d.store_port, 29500);
	assert_int_equal(d.store_clients, 2);
	assert_true(d.to_master);
	assert_true(d.known);
	/* a rank that only connects: no store of its own */
	dist_rank_init(&d);
	d.master_port = 29500;
	dist_sock client[] = {{40000, 29500, 1}};
	dist_from_sockets(client, 1, &d);
	assert_int_equal(d.store_port, 0);
	assert_int_equal(d.store_clients, -1);
	assert_true(d.to_master);
}

/* n snapshots of GPU 0 idle (utilization and SM active 0), the job's first process holding 2 GiB */
static void feed_idle(doctor_live *d, job *j, int n)
{
	for (int t = 0; t < n; t++) {
		snapshot *s = snapshot_new(1);
		s->time = 100 + t;
		double b = 2 * GIB;
		sample(&s->gpus[0], 0, 0, b, 1, &j->pids[0], &b);
		doctor_live_feed(d, s, j);
		snapshot_free(s);
	}
}

/* Rank 0 of a job of two whose other rank never comes: its main thread sleeps between its looks
 * at the store, CUDA's own thread polls. The doctor names the rendezvous, not the sleep or the
 * poll. */
static void test_rendezvous_tree(void **st)
{
	(void)st;
	if (wait_syscall_nr("clock_nanosleep") < 0 || wait_syscall_nr("poll") < 0)
		skip();
	make_tree();
	static const char env[] = "RANK=0\0WORLD_SIZE=2\0MASTER_ADDR=127.0.0.1\0MASTER_PORT=29500\0";
	char path[8192];
	snprintf(path, sizeof(path), "%s/proc/900/environ", root);
	parents(path);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fwrite(env, 1, sizeof(env) - 1, f);
	fclose(f);
	put("/proc/900/stat", "900 (python) S 1 900 900 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/900/comm", "python\n");
	char status[256];
	unsigned uid = (unsigned)getuid();
	snprintf(status, sizeof(status), "Name:\tpython\nUid:\t%u\t%u\t%u\t%u\n", uid, uid, uid, uid);
	put("/proc/900/status", status);
	thread_in(900, 900, "clock_nanosleep", -1, "hrtimer_nanosleep\n");
	thread_in(900, 901, "epoll_wait", 3, "do_epoll_wait\n");
	put("/proc/900/task/901/comm", "pt_tcpstore_uv\n");
	thread_in(900, 902, "poll", -1, "do_sys_poll\n");
	put("/proc/900/task/902/comm", "cuda00001400006\n");
	link_to("/proc/900/fd/3", "anon_inode:[eventpoll]");
	link_to("/proc/900/fd/4", "socket:[301]");
	link_to("/proc/900/fd/5", "socket:[302]");
	link_to("/proc/900/fd/6", "socket:[303]");
	link_to("/proc/900/fd/7", "/dev/nvidia0");
	put("/proc/900/net/tcp",
	    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	    "   0: 00000000:733C 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 301 1 0\n"
	    "   1: 0100007F:733C 0100007F:9C40 01 00000000:00000000 00:00000000 00000000     0        0 302 1 0\n"
	    "   2: 0100007F:9C40 0100007F:733C 01 00000000:00000000 00:00000000 00000000     0        0 303 1 0\n");
	dist_rank d;
	dist_rank_read(900, &d);
	assert_true(d.known && d.hosts_store);
	assert_int_equal(d.rank, 0);
	assert_int_equal(d.world, 2);
	assert_int_equal(d.store_port, 29500);
	assert_int_equal(d.store_clients, 1);

	job j = one_job(900, 0);
	doctor_live_opts o = {.window = 0};
	doctor_live *dl = doctor_live_new(&o);
	feed_idle(dl, &j, 9);
	const doctor_result *r = doctor_live_finish(dl, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "waits for its other ranks to join the rendezvous (1 of 2 connected to the store on "
					   "port 29500)"));
	for (int i = 0; i < r->ev.waits.n; i++)
		assert_null(strstr(r->ev.waits.w[i].comm, "cuda")); /* CUDA's poll is not the job's wait */
	cJSON *doc = doctor_json(&r->ev, &r->v);
	char *text = cJSON_PrintUnformatted(doc);
	assert_non_null(strstr(text, "\"distributed\":{\"rank\":0,\"world_size\":2,\"master\":\"127.0.0.1:29500\","
				     "\"hosts_store\":true,\"store_port\":29500,\"store_connections\":1"));
	free(text);
	cJSON_Delete(doc);
	doctor_live_free(dl);

	/* a job starting up (the H200's healthy AMP job in its first seconds): the main thread runs
	 * (loading, planning its kernels), CUDA's thread polls. The poll is CUDA's own, not what the
	 * job waits on (it read "it waits on several descriptors at once (poll)"). */
	put("/proc/910/stat", "910 (python) R 1 910 910 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/910/comm", "python\n");
	put("/proc/910/status", status);
	thread_in(910, 910, "futex", -1, "0\n");
	put("/proc/910/task/910/stat", "910 (python) R 1 910 910 0 -1 4194560 100 0 0 0 50 10 0 0 20 0 1 0 100 1000000 100\n");
	put("/proc/910/task/910/syscall", "running\n");
	thread_in(910, 911, "poll", -1, "do_sys_poll\n");
	put("/proc/910/task/911/comm", "cuda00001400006\n");
	link_to("/proc/910/fd/7", "/dev/nvidia0");
	j = one_job(910, 0);
	dl = doctor_live_new(&o);
	feed_idle(dl, &j, 9);
	r = doctor_live_finish(dl, &j);
	assert_non_null(r);
	assert_string_equal(r->v.id, "job.gpu-idle");
	assert_non_null(strstr(r->v.title, "it waits for something else"));
	assert_null(strstr(r->v.title, "poll"));
	for (int i = 0; i < r->ev.waits.n; i++)
		assert_null(strstr(r->ev.waits.w[i].comm, "cuda"));
	assert_false(r->ev.dist.known);
	doctor_live_free(dl);
	remove_tree();
}

/* run's utilisation verdict, where the job held a GPU for no whole window: the mean utilization
 * of each GPU it held against watch's 70% */
static char *judge_run(double util, int seconds, unsigned pid_on_gpu, double min_seconds)
{
	doctor_live_opts o = {.window = 1000};
	doctor_live *d = doctor_live_new(&o);
	job j = one_job(4242, 4243);
	for (int t = 0; t <= seconds; t++) {
		snapshot *sn = snapshot_new(2);
		sn->time = 1000.0 + t;
		for (int g = 0; g < 2; g++) {
			sn->gpus[g].index = g;
			sn->gpus[g].minor = -1;
			snprintf(sn->gpus[g].name, sizeof(sn->gpus[g].name), "NVIDIA H200");
			sn->gpus[g].util_gpu = sv_ok(g == 0 ? util : 99);
			sn->gpus[g].nproc = 1;
			sn->gpus[g].procs[0].pid = g == 0 ? pid_on_gpu : 999; /* GPU 1 runs another job */
			sn->gpus[g].procs[0].used_bytes = sv_ok(1e9);
		}
		doctor_live_feed(d, sn, &j);
		snapshot_free(sn);
	}
	char *v = doctor_live_report(d, min_seconds);
	doctor_live_free(d);
	return v;
}

static void test_utilisation_fallback(void **s)
{
	(void)s;
	char *v = judge_run(35, 60, 4243, 30);
	assert_non_null(v);
	assert_non_null(strstr(v, "GPU 0 (NVIDIA H200): mean utilization 35% over 60 s, under 70%: the GPU waited"));
	assert_null(strstr(v, "GPU 1")); /* not the job's */
	free(v);
	v = judge_run(96, 60, 4242, 30);
	assert_non_null(strstr(v, "mean utilization 96% over 60 s: the GPU was kept busy"));
	free(v);
	assert_null(judge_run(96, 10, 4242, 30)); /* too short to judge */
	assert_null(judge_run(96, 60, 777, 30));  /* the job never held a GPU */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_summary), cmocka_unit_test(test_cpu_figures),
		cmocka_unit_test(test_wait_lines),     cmocka_unit_test(test_pystack_parse),
		cmocka_unit_test(test_waits_tree), cmocka_unit_test_teardown(test_waits_short_reads, restore_ops),
	    cmocka_unit_test(test_waits_page_faults), cmocka_unit_test(test_waits_for_work),     cmocka_unit_test(test_live_pipeline), cmocka_unit_test(test_live_page_faults), cmocka_unit_test(test_mount_find), cmocka_unit_test(test_waits_poll_one), cmocka_unit_test(test_live_network_storage),
		cmocka_unit_test(test_utilisation_fallback),
		cmocka_unit_test(test_phases),
		cmocka_unit_test(test_rendezvous_parse),
		cmocka_unit_test(test_rendezvous_tree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
