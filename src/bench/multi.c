/*
 * Several GPUs: the peer-access matrix, P2P copy bandwidth per pair (one way and both ways at
 * once) and NCCL collectives over every visible GPU from this one process, with nccl-tests'
 * bus-bandwidth formulas. Every copy and collective result is checked.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/nccl.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "kb/kb_peaks.h"
#include "probes/topology.h"

static const char src[] = "gpuvet bench";

/* Samples a device buffer of floats: start, middle and end must hold `want`. */
static bool check_floats(gpu_session *s, CUdeviceptr p, uint64_t nfloats, float want, char *why, size_t n)
{
	float buf[256];
	uint64_t starts[3] = {0, nfloats / 2, nfloats > 256 ? nfloats - 256 : 0};
	for (int k = 0; k < 3; k++) {
		uint64_t len = starts[k] + 256 <= nfloats ? 256 : nfloats - starts[k];
		CUresult rc = s->cu->cuMemcpyDtoH(buf, p + starts[k] * 4, len * 4);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "cuMemcpyDtoH", rc, why, n);
			return false;
		}
		for (uint64_t i = 0; i < len; i++)
			if (buf[i] != want) {
				snprintf(why, n, "element %llu is %g, expected %g", (unsigned long long)(starts[k] + i),
					 (double)buf[i], (double)want);
				return false;
			}
	}
	return true;
}

static CUresult set_floats(gpu_session *s, gpu_dev *d, CUdeviceptr p, uint64_t nfloats, float v)
{
	uint64_t n4 = nfloats / 4;
	void *args[] = {&p, &n4, &v};
	CUresult rc = gpu_launch(s, d, K_SET, gpu_grid(d, 8), 256, NULL, args);
	return rc == CUDA_SUCCESS ? s->cu->cuStreamSynchronize(d->stream) : rc;
}

/* ---- P2P ---- */

static void p2p(bench_ctx *c)
{
	gpu_session *s = c->gpu;
	const gv_cuda_api *cu = s->cu;
	int n = s->count;
	char why[512];
	uint64_t bytes = c->o->quick ? (256ull << 20) : (1ull << 30);
	CUdeviceptr *buf = xcalloc((size_t)n * 2, sizeof(*buf)); /* [i*2]: source, [i*2+1]: destination */
	bool ok = true;
	for (int i = 0; i < n && ok; i++) {
		if (!gpu_use(s, i, why, sizeof(why))) {
			ok = false;
			break;
		}
		size_t fr = 0, tot = 0;
		gpu_mem_info(s, &fr, &tot);
		while (bytes > (16u << 20) && 2.0 * (double)bytes > 0.5 * (double)fr)
			bytes /= 2;
	}
	for (int i = 0; i < n && ok; i++) {
		CUresult rc;
		if (!gpu_use(s, i, why, sizeof(why))) {
			ok = false;
			break;
		}
		if ((rc = cu->cuMemAlloc(&buf[i * 2], bytes)) != CUDA_SUCCESS ||
		    (rc = cu->cuMemAlloc(&buf[i * 2 + 1], bytes)) != CUDA_SUCCESS ||
		    (rc = set_floats(s, &s->dev[i], buf[i * 2], bytes / 4, (float)(i + 1))) != CUDA_SUCCESS) {
			gpu_errtext(s, "allocating the P2P buffers", rc, why, sizeof(why));
			ok = false;
			break;
		}
		/* enable access to every peer that allows it */
		for (int j = 0; ok && j < n; j++) {
			if (j == i)
				continue;
			int can = 0;
			if (cu->cuDeviceCanAccessPeer && cu->cuDeviceCanAccessPeer(&can, s->dev[i].dev, s->dev[j].dev) != CUDA_SUCCESS)
				can = 0;
			facts_put_bool(c->r->facts, src, can != 0, FK_BENCH_P2P_ACCESS(d, d), i, j);
			if (can && cu->cuCtxEnablePeerAccess) {
				char e[256];
				if (!s->dev[j].ctx_retained && !gpu_use(s, j, e, sizeof(e)))
					continue;
				gpu_use(s, i, e, sizeof(e));
				CUresult prc = cu->cuCtxEnablePeerAccess(s->dev[j].ctx, 0);
				if (prc != CUDA_SUCCESS && prc != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
					facts_put_str(c->r->facts, src, gv_cuda_result_name(prc), FK_BENCH_P2P_ENABLE_ERROR(d, d),
						      i, j);
			}
		}
	}
	if (!ok || !cu->cuMemcpyPeerAsync) {
		if (ok)
			snprintf(why, sizeof(why), "libcuda lacks cuMemcpyPeerAsync");
		report_skip(c->r, "p2p", "p2p", "GB/s", "P2P copies", "%s", why);
		goto done;
	}
	int reps = c->o->quick ? 3 : 5;
	/* each pair's path (NV18, PIX, SYS...) beside its figure: a slow pair explained by its path */
	facts *topo = facts_new();
	topology_collect(topo);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			if (i == j || watchdog_expired())
				continue;
			const char *path = s->dev[i].nvml_index >= 0 && s->dev[j].nvml_index >= 0
						   ? facts_str(topo, FK_TOPOLOGY_GPU_GPU(d, d), s->dev[i].nvml_index,
							       s->dev[j].nvml_index)
						   : NULL;
			if (path)
				facts_put_str(c->r->facts, "sysfs PCI tree, NVLink", path, FK_BENCH_P2P_PATH(d, d), i, j);
			for (int both = 0; both < 2; both++) {
				if (both && j < i)
					continue; /* both ways: once per unordered pair */
				char id[48];
				snprintf(id, sizeof(id), both ? "p2p.%d_%d.both" : "p2p.%d_%d", i, j);
				double secs[8];
				int got = 0;
				for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
					CUresult rc;
					gpu_use(s, i, why, sizeof(why));
					double t0 = now_seconds();
					rc = cu->cuMemcpyPeerAsync(buf[j * 2 + 1], s->dev[j].ctx, buf[i * 2], s->dev[i].ctx, bytes,
								   s->dev[i].stream);
					if (rc == CUDA_SUCCESS && both) {
						gpu_use(s, j, why, sizeof(why));
						rc = cu->cuMemcpyPeerAsync(buf[i * 2 + 1], s->dev[i].ctx, buf[j * 2], s->dev[j].ctx,
									   bytes, s->dev[j].stream);
					}
					if (rc == CUDA_SUCCESS)
						rc = cu->cuStreamSynchronize(s->dev[i].stream);
					if (rc == CUDA_SUCCESS && both)
						rc = cu->cuStreamSynchronize(s->dev[j].stream);
					double t = now_seconds() - t0;
					if (rc != CUDA_SUCCESS) {
						gpu_errtext(s, "cuMemcpyPeerAsync", rc, why, sizeof(why));
						got = -1;
						break;
					}
					if (r >= 0)
						secs[got++] = t;
				}
				char title[64];
				snprintf(title, sizeof(title), both ? "GPU %d <-> GPU %d, both ways" : "GPU %d -> GPU %d", i, j);
				if (got <= 0) {
					report_skip(c->r, id, "p2p", "GB/s", title, "%s", got < 0 ? why : "not measured");
					continue;
				}
				bench_figure *f = report_add(c->r, id, "p2p", "GB/s", "%s%s%s (%llu MiB)", title,
							     path ? " via " : "", path ? path : "", (unsigned long long)(bytes >> 20));
				stats_rates(secs, (size_t)got, (double)bytes * (both ? 2 : 1) / 1e9, &f->st);
				f->size = (long long)bytes;
				if (!facts_true(c->r->facts, FK_BENCH_P2P_ACCESS(d, d), i, j))
					figure_set_note(f, "no peer access between these GPUs: the copy is staged through host memory");
				gpu_use(s, j, why, sizeof(why));
				bool good = check_floats(s, buf[j * 2 + 1], bytes / 4, (float)(i + 1), why, sizeof(why));
				if (good && both) {
					gpu_use(s, i, why, sizeof(why));
					good = check_floats(s, buf[i * 2 + 1], bytes / 4, (float)(j + 1), why, sizeof(why));
				}
				figure_set_verified(f, good, good ? "the destination holds the source's values" : why);
			}
		}
	facts_free(topo);
done:
	for (int i = 0; i < n; i++) {
		char e[64];
		if (!s->dev[i].ctx_retained || !gpu_use(s, i, e, sizeof(e)))
			continue;
		if (buf[i * 2])
			cu->cuMemFree(buf[i * 2]);
		if (buf[i * 2 + 1])
			cu->cuMemFree(buf[i * 2 + 1]);
	}
	free(buf);
}

/* ---- NCCL ---- */

typedef struct nccl_bufs {
	CUdeviceptr send, recv;
} nccl_bufs;

/* One collective on every GPU (a group call), `iters` times; seconds per iteration or < 0. */
static double run_coll(bench_ctx *c, nccl_api *nc, ncclComm_t *comms, nccl_bufs *b, nccl_coll coll, uint64_t bytes,
		       int iters, char *why, size_t wn)
{
	gpu_session *s = c->gpu;
	int n = s->count;
	uint64_t floats = bytes / 4;
	double t0 = now_seconds();
	for (int it = 0; it < iters; it++) {
		ncclResult_t r = nc->GroupStart();
		for (int i = 0; i < n && r == ncclSuccess; i++) {
			void *st = s->dev[i].stream;
			void *sp = (void *)(uintptr_t)b[i].send, *rp = (void *)(uintptr_t)b[i].recv;
			switch (coll) {
			case COLL_ALL_REDUCE: r = nc->AllReduce(sp, rp, floats, GV_ncclFloat32, GV_ncclSum, comms[i], st); break;
			case COLL_ALL_GATHER: r = nc->AllGather(sp, rp, floats / (uint64_t)n, GV_ncclFloat32, comms[i], st); break;
			case COLL_REDUCE_SCATTER:
				r = nc->ReduceScatter(sp, rp, floats / (uint64_t)n, GV_ncclFloat32, GV_ncclSum, comms[i], st);
				break;
			}
		}
		ncclResult_t r2 = nc->GroupEnd();
		if (r == ncclSuccess)
			r = r2;
		if (r != ncclSuccess) {
			snprintf(why, wn, "nccl %s failed: %s", nccl_coll_name(coll), nc->GetErrorString(r));
			return -1;
		}
	}
	for (int i = 0; i < n; i++) {
		char e[64];
		gpu_use(s, i, e, sizeof(e));
		CUresult rc = s->cu->cuStreamSynchronize(s->dev[i].stream);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "waiting for NCCL", rc, why, wn);
			return -1;
		}
	}
	return (now_seconds() - t0) / iters;
}

/* one repeat (bench_repeat) */
typedef struct coll_arg {
	bench_ctx *c;
	nccl_api *nc;
	ncclComm_t *comms;
	nccl_bufs *b;
	nccl_coll coll;
	uint64_t bytes;
	int iters;
} coll_arg;

static double coll_once(void *arg, char *why, size_t wn)
{
	coll_arg *a = arg;
	return run_coll(a->c, a->nc, a->comms, a->b, a->coll, a->bytes, a->iters, why, wn);
}

static bool check_coll(bench_ctx *c, nccl_bufs *b, nccl_coll coll, uint64_t bytes, char *why, size_t wn)
{
	gpu_session *s = c->gpu;
	int n = s->count;
	float sum = (float)n * (float)(n + 1) / 2;
	for (int i = 0; i < n; i++) {
		char e[64];
		gpu_use(s, i, e, sizeof(e));
		uint64_t floats = bytes / 4;
		if (coll == COLL_ALL_GATHER) {
			/* chunk k of the output came from rank k, which sent k + 1 */
			uint64_t chunk = floats / (uint64_t)n;
			for (int k = 0; k < n; k++)
				if (!check_floats(s, b[i].recv + (uint64_t)k * chunk * 4, chunk, (float)(k + 1), why, wn)) {
					char more[96];
					snprintf(more, sizeof(more), " (GPU %d, chunk %d)", i, k);
					strncat(why, more, wn - strlen(why) - 1);
					return false;
				}
		} else {
			uint64_t count = coll == COLL_ALL_REDUCE ? floats : floats / (uint64_t)n;
			if (!check_floats(s, b[i].recv, count, sum, why, wn)) {
				char more[32];
				snprintf(more, sizeof(more), " (GPU %d)", i);
				strncat(why, more, wn - strlen(why) - 1);
				return false;
			}
		}
	}
	snprintf(why, wn, "every GPU holds the expected result");
	return true;
}

static void nccl_bench(bench_ctx *c)
{
	gpu_session *s = c->gpu;
	const gv_cuda_api *cu = s->cu;
	int n = s->count;
	char why[1024];
	const char *cuda_env = getenv("GPUVET_CUDA_LIB");
	if (cuda_env && *cuda_env) {
		report_skip(c->r, "nccl", "nccl", "GB/s", "NCCL collectives",
			    "GPUVET_CUDA_LIB is set: NCCL would use the system's libcuda.so.1 instead");
		return;
	}
	nccl_api nc;
	if (!nccl_load(&nc)) {
		facts_put_state(c->r->facts, FACT_ERROR, src, nc.lib.error, FK_BENCH_LIB_NCCL_PATH);
		report_skip(c->r, "nccl", "nccl", "GB/s", "NCCL collectives", "%s", nc.lib.error);
		report_note(c->r, "NCCL: %s", nc.lib.error);
		return;
	}
	char ver[32];
	nccl_version_text(nc.version, ver, sizeof(ver));
	facts_put_str(c->r->facts, src, nc.lib.path, FK_BENCH_LIB_NCCL_PATH);
	facts_put_str(c->r->facts, src, ver, FK_BENCH_LIB_NCCL_VERSION);
	facts_put_str(c->r->facts, src, nc.lib.how, FK_BENCH_LIB_NCCL_FOUND_BY);
	const char *nvls = getenv("NCCL_NVLS_ENABLE");
	facts_put_str(c->r->facts, src, nvls ? nvls : "(unset)", FK_BENCH_NCCL_NVLS_ENABLE);

	static const uint64_t quick_sizes[] = {8ull << 20, 128ull << 20, 512ull << 20, 1ull << 30};
	static const uint64_t full_sizes[] = {1ull << 20, 8ull << 20, 32ull << 20, 128ull << 20, 512ull << 20, 1ull << 30};
	const uint64_t *sizes = c->o->quick ? quick_sizes : full_sizes;
	int nsizes = c->o->quick ? (int)GV_ARRAY_LEN(quick_sizes) : (int)GV_ARRAY_LEN(full_sizes);
	uint64_t maxb = sizes[nsizes - 1];
	/* fit in free memory on every GPU (send + recv) */
	for (int i = 0; i < n; i++) {
		char e[256];
		if (!gpu_use(s, i, e, sizeof(e))) {
			report_skip(c->r, "nccl", "nccl", "GB/s", "NCCL collectives", "%s", e);
			nccl_unload(&nc);
			return;
		}
		size_t fr = 0, tot = 0;
		gpu_mem_info(s, &fr, &tot);
		while (maxb > (1u << 20) && 2.0 * (double)maxb > 0.5 * (double)fr)
			maxb /= 2;
	}
	ncclComm_t *comms = xcalloc((size_t)n, sizeof(*comms));
	nccl_bufs *b = xcalloc((size_t)n, sizeof(*b));
	bench_progress(c, "NCCL init (%d GPUs)", n);
	watchdog_arm("ncclCommInitAll", bench_limit(c, 60));
	ncclResult_t nr = nc.CommInitAll(comms, n, NULL);
	watchdog_disarm();
	if (nr != ncclSuccess) {
		report_skip(c->r, "nccl", "nccl", "GB/s", "NCCL collectives", "ncclCommInitAll failed: %s",
			    nc.GetErrorString(nr));
		free(comms);
		free(b);
		nccl_unload(&nc);
		return;
	}
	bool ok = true;
	for (int i = 0; i < n && ok; i++) {
		CUresult rc;
		gpu_use(s, i, why, sizeof(why));
		if ((rc = cu->cuMemAlloc(&b[i].send, maxb)) != CUDA_SUCCESS ||
		    (rc = cu->cuMemAlloc(&b[i].recv, maxb)) != CUDA_SUCCESS ||
		    (rc = set_floats(s, &s->dev[i], b[i].send, maxb / 4, (float)(i + 1))) != CUDA_SUCCESS) {
			gpu_errtext(s, "allocating the NCCL buffers", rc, why, sizeof(why));
			ok = false;
		}
	}
	if (!ok)
		report_skip(c->r, "nccl", "nccl", "GB/s", "NCCL collectives", "%s", why);
	int reps = c->o->quick ? 3 : 5, iters = c->o->quick ? 10 : 20;
	static const nccl_coll colls[] = {COLL_ALL_REDUCE, COLL_ALL_GATHER, COLL_REDUCE_SCATTER};
	for (size_t ci = 0; ok && ci < GV_ARRAY_LEN(colls); ci++) {
		nccl_coll coll = colls[ci];
		for (int si = 0; si < nsizes; si++) {
			uint64_t bytes = sizes[si];
			/* quick: all-gather and reduce-scatter at the two largest sizes only */
			if (c->o->quick && coll != COLL_ALL_REDUCE && si < nsizes - 2)
				continue;
			if (bytes > maxb)
				continue;
			char id[64], title[96];
			snprintf(id, sizeof(id), "nccl.%s.%llu", nccl_coll_name(coll), (unsigned long long)bytes);
			snprintf(title, sizeof(title), "%s busbw %llu MiB (%d GPUs)", nccl_coll_name(coll),
				 (unsigned long long)(bytes >> 20), n);
			bench_progress(c, "NCCL %s %llu MiB", nccl_coll_name(coll), (unsigned long long)(bytes >> 20));
			watchdog_arm(title, bench_limit(c, 30));
			double secs[8];
			int got = 0;
			if (run_coll(c, &nc, comms, b, coll, bytes, 5, why, sizeof(why)) < 0) { /* warm-up as nccl-tests */
				got = -1;
			} else {
				coll_arg ca = {c, &nc, comms, b, coll, bytes, iters};
				got = bench_repeat(coll_once, &ca, reps, secs, why, sizeof(why));
			}
			watchdog_disarm();
			if (got <= 0) {
				report_skip(c->r, id, "nccl", "GB/s", title, "%s", got < 0 ? why : "stopped by the time limit");
				if (got < 0) {
					ok = false;
					break;
				}
				continue;
			}
			bench_figure *f = report_add(c->r, id, "nccl", "GB/s", "%s", title);
			f->size = (long long)bytes;
			stats_rates(secs, (size_t)got, (double)bytes * nccl_busbw_factor(coll, n) / 1e9, &f->st);
			facts_put_real(c->r->facts, src, f->st.median / nccl_busbw_factor(coll, n), FK_BENCH_FIGURE_ALGBW, id);
			bool good = check_coll(c, b, coll, bytes, why, sizeof(why));
			figure_set_verified(f, good, why);
		}
	}
	for (int i = 0; i < n; i++) {
		char e[64];
		gpu_use(s, i, e, sizeof(e));
		if (b[i].send)
			cu->cuMemFree(b[i].send);
		if (b[i].recv)
			cu->cuMemFree(b[i].recv);
		if (comms[i])
			nc.CommDestroy(comms[i]);
	}
	free(comms);
	free(b);
	nccl_unload(&nc);
}

void bench_multi(bench_ctx *c)
{
	if (!c->gpu) {
		report_skip(c->r, "p2p", "p2p", "GB/s", "GPU to GPU", "%s", c->gpu_skip[0] ? c->gpu_skip : "no GPU");
		return;
	}
	if (c->gpu->count < 2) {
		report_note(c->r, "GPU to GPU and NCCL: this machine shows one GPU");
		return;
	}
	/* No NVML sampling during the copies and collectives: its calls take the driver's locks
	 * (what it would say of the clocks does not enter these figures) */
	monitor_pause(c->mon, true);
	bench_progress(c, "P2P copies");
	watchdog_arm("P2P copies", bench_limit(c, 60));
	p2p(c);
	watchdog_disarm();
	nccl_bench(c);
	monitor_pause(c->mon, false);
}
