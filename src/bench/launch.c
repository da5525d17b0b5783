/*
 * Launch cost of an empty PTX kernel: back to back, launch plus synchronize, and CUDA graph
 * replay per kernel. Host-clock timing; NVML sampling is paused meanwhile (its calls take the
 * driver's locks).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"

typedef enum { L_BACK_TO_BACK, L_SYNC, L_GRAPH } launch_kind;
static const char *const ids[] = {"launch.back_to_back", "launch.launch_sync", "launch.graph"};
static const char *const titles[] = {"empty kernel, back to back", "empty kernel, launch + synchronize",
				     "CUDA graph replay, per kernel"};

/* seconds per kernel over n kernels, or < 0 with why */
static double run_plain(bench_ctx *c, gpu_dev *d, bool sync_each, int n, char *why, size_t wn)
{
	const gv_cuda_api *cu = c->gpu->cu;
	CUresult rc = CUDA_SUCCESS;
	double t0 = now_seconds();
	for (int i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		rc = cu->cuLaunchKernel(d->k[K_EMPTY], 1, 1, 1, 1, 1, 1, 0, d->stream, NULL, NULL);
		if (sync_each && rc == CUDA_SUCCESS)
			rc = cu->cuStreamSynchronize(d->stream);
	}
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(d->stream);
	double t = now_seconds() - t0;
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "the empty kernel", rc, why, wn);
		return -1;
	}
	return t / n;
}

static double run_graph(bench_ctx *c, gpu_dev *d, CUgraphExec exec, int nodes, char *why, size_t wn)
{
	const gv_cuda_api *cu = c->gpu->cu;
	double t0 = now_seconds();
	CUresult rc = cu->cuGraphLaunch(exec, d->stream);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(d->stream);
	double t = now_seconds() - t0;
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "cuGraphLaunch", rc, why, wn);
		return -1;
	}
	return t / nodes;
}

static void add_figure(bench_ctx *c, launch_kind k, const double *secs, int got, int n, int ordinal)
{
	bench_figure *f = report_add(c->r, ids[k], "launch", "us", "%s", titles[k]);
	double us[32];
	for (int i = 0; i < got; i++)
		us[i] = secs[i] * 1e6;
	stats_summarise(us, (size_t)got, &f->st);
	f->gpu = ordinal;
	f->size = n;
}

/* the repeats' arguments (bench_repeat) */
typedef struct plain_arg {
	bench_ctx *c;
	gpu_dev *d;
	bool sync_each;
	int n;
} plain_arg;

static double plain_once(void *arg, char *why, size_t wn)
{
	plain_arg *a = arg;
	return run_plain(a->c, a->d, a->sync_each, a->n, why, wn);
}

typedef struct graph_arg {
	bench_ctx *c;
	gpu_dev *d;
	CUgraphExec exec;
	int nodes;
} graph_arg;

static double graph_once(void *arg, char *why, size_t wn)
{
	graph_arg *a = arg;
	return run_graph(a->c, a->d, a->exec, a->nodes, why, wn);
}

void bench_launch(bench_ctx *c)
{
	char why[512];
	if (!c->gpu) {
		for (int k = 0; k < 3; k++)
			report_skip(c->r, ids[k], "launch", "us", titles[k], "%s", c->gpu_skip[0] ? c->gpu_skip : "no GPU");
		return;
	}
	gpu_session *s = c->gpu;
	int ordinal = c->o->device;
	if (!gpu_use(s, ordinal, why, sizeof(why))) {
		for (int k = 0; k < 3; k++)
			report_skip(c->r, ids[k], "launch", "us", titles[k], "%s", why);
		return;
	}
	gpu_dev *d = &s->dev[ordinal];
	const gv_cuda_api *cu = s->cu;
	bench_progress(c, "kernel launch latency");
	watchdog_arm("kernel launch latency", bench_limit(c, 30));
	monitor_pause(c->mon, true);
	int reps = c->o->quick ? 5 : 10;
	int n_b2b = c->o->quick ? 5000 : 20000, n_sync = c->o->quick ? 1000 : 5000;
	double secs[32];
	for (int k = 0; k < 2; k++) {
		int n = k == L_BACK_TO_BACK ? n_b2b : n_sync;
		/* Warm-up of at least 1 s (0.25 s for launch + synchronize): launch is the first
		 * benchmark of the run, and its first repeats came out 10-25% slower than the rest on
		 * the H200 machine for the first 0.5-0.75 s (2026-11-29), the process, the CPU and the
		 * driver's queues still settling. */
		double warm_until = now_seconds() + (k == L_SYNC ? 0.25 : 1.0), wt = 0;
		do
			wt = run_plain(c, d, k == L_SYNC, n / 5 + 1, why, sizeof(why));
		while (wt >= 0 && now_seconds() < warm_until && !watchdog_expired());
		if (wt < 0) {
			report_skip(c->r, ids[k], "launch", "us", titles[k], "%s", why);
			continue;
		}
		plain_arg pa = {c, d, k == L_SYNC, n};
		int got = bench_repeat(plain_once, &pa, reps, secs, why, sizeof(why));
		if (got > 0)
			add_figure(c, (launch_kind)k, secs, got, n, ordinal);
		else
			report_skip(c->r, ids[k], "launch", "us", titles[k], "%s", got < 0 ? why : "stopped by the time limit");
	}
	/* graph: capture n launches of the empty kernel, replay the whole graph */
	if (!cu->cuStreamBeginCapture || !cu->cuStreamEndCapture || !cu->cuGraphInstantiateWithFlags ||
	    !cu->cuGraphLaunch || !cu->cuGraphExecDestroy || !cu->cuGraphDestroy) {
		report_skip(c->r, ids[L_GRAPH], "launch", "us", titles[L_GRAPH], "this driver has no CUDA graph functions");
	} else {
		int nodes = c->o->quick ? 500 : 2000;
		CUgraph g = NULL;
		CUgraphExec exec = NULL;
		CUresult rc = cu->cuStreamBeginCapture(d->stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
		for (int i = 0; i < nodes && rc == CUDA_SUCCESS; i++)
			rc = cu->cuLaunchKernel(d->k[K_EMPTY], 1, 1, 1, 1, 1, 1, 0, d->stream, NULL, NULL);
		CUresult rc2 = cu->cuStreamEndCapture(d->stream, &g);
		if (rc == CUDA_SUCCESS)
			rc = rc2;
		if (rc == CUDA_SUCCESS)
			rc = cu->cuGraphInstantiateWithFlags(&exec, g, 0);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "capturing a CUDA graph", rc, why, sizeof(why));
			report_skip(c->r, ids[L_GRAPH], "launch", "us", titles[L_GRAPH], "%s", why);
		} else if (run_graph(c, d, exec, nodes, why, sizeof(why)) < 0) {
			report_skip(c->r, ids[L_GRAPH], "launch", "us", titles[L_GRAPH], "%s", why);
		} else {
			graph_arg ga = {c, d, exec, nodes};
			int got = bench_repeat(graph_once, &ga, reps, secs, why, sizeof(why));
			if (got > 0)
				add_figure(c, L_GRAPH, secs, got, nodes, ordinal);
			else
				report_skip(c->r, ids[L_GRAPH], "launch", "us", titles[L_GRAPH], "%s",
					    got < 0 ? why : "stopped by the time limit");
		}
		if (exec)
			cu->cuGraphExecDestroy(exec);
		if (g)
			cu->cuGraphDestroy(g);
	}
	monitor_pause(c->mon, false);
	watchdog_disarm();
}
