/*
 * Host <-> device copies: pinned and pageable host memory, each direction alone and both at
 * once, judged against the PCIe link's rate for the generation and width NVML saw meanwhile.
 */
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "core/factkeys.h"
#include "kb/kb_peaks.h"

static const char src[] = "gpuvet bench";

typedef struct bufs {
	uint64_t bytes;
	CUdeviceptr d1, d2;
	void *pin1, *pin2; /* cuMemHostAlloc */
	void *pg1, *pg2;   /* malloc */
} bufs;

typedef enum { T_H2D, T_D2H, T_BOTH } direction;

static const char *const dir_name[] = {"h2d", "d2h", "both"};
static const char *const dir_title[] = {"host to device", "device to host", "both ways at once"};

/* A second host thread doing one synchronous copy (pageable both-ways). */
typedef struct side_job {
	const gv_cuda_api *cu;
	CUcontext ctx;
	CUdeviceptr d;
	void *h;
	uint64_t bytes;
	CUresult rc;
} side_job;

static void *side_d2h(void *arg)
{
	side_job *j = arg;
	j->rc = j->cu->cuCtxSetCurrent(j->ctx);
	if (j->rc == CUDA_SUCCESS)
		j->rc = j->cu->cuMemcpyDtoH(j->h, j->d, j->bytes);
	return NULL;
}

/* One timed transfer; seconds, or < 0 with why. */
static double one_transfer(bench_ctx *c, gpu_dev *d, bufs *b, direction dir, bool pinned, char *why, size_t n)
{
	const gv_cuda_api *cu = c->gpu->cu;
	CUresult rc = CUDA_SUCCESS;
	double secs = -1;
	if (pinned && dir != T_BOTH) {
		rc = cu->cuEventRecord(d->ev_start, d->stream);
		if (rc == CUDA_SUCCESS)
			rc = dir == T_H2D ? cu->cuMemcpyHtoDAsync(b->d1, b->pin1, b->bytes, d->stream)
					  : cu->cuMemcpyDtoHAsync(b->pin1, b->d1, b->bytes, d->stream);
		float ms = 0;
		if (rc == CUDA_SUCCESS)
			rc = gpu_event_elapsed(c->gpu, d, &ms);
		secs = ms / 1000.0;
	} else if (pinned) {
		double t0 = now_seconds();
		rc = cu->cuMemcpyHtoDAsync(b->d1, b->pin1, b->bytes, d->stream);
		if (rc == CUDA_SUCCESS)
			rc = cu->cuMemcpyDtoHAsync(b->pin2, b->d2, b->bytes, d->stream2);
		if (rc == CUDA_SUCCESS)
			rc = cu->cuStreamSynchronize(d->stream);
		if (rc == CUDA_SUCCESS)
			rc = cu->cuStreamSynchronize(d->stream2);
		secs = now_seconds() - t0;
	} else if (dir != T_BOTH) {
		double t0 = now_seconds();
		rc = dir == T_H2D ? cu->cuMemcpyHtoD(b->d1, b->pg1, b->bytes) : cu->cuMemcpyDtoH(b->pg1, b->d1, b->bytes);
		secs = now_seconds() - t0;
	} else {
		side_job j = {cu, d->ctx, b->d2, b->pg2, b->bytes, CUDA_SUCCESS};
		pthread_t t;
		double t0 = now_seconds();
		bool threaded = pthread_create(&t, NULL, side_d2h, &j) == 0;
		rc = cu->cuMemcpyHtoD(b->d1, b->pg1, b->bytes);
		if (threaded)
			pthread_join(t, NULL);
		else
			side_d2h(&j);
		secs = now_seconds() - t0;
		if (rc == CUDA_SUCCESS)
			rc = j.rc;
	}
	if (rc != CUDA_SUCCESS) {
		char what[64];
		snprintf(what, sizeof(what), "the %s %s copy", pinned ? "pinned" : "pageable", dir_name[dir]);
		gpu_errtext(c->gpu, what, rc, why, n);
		return -1;
	}
	return secs;
}

/* The NUMA node of the GPU (from sysfs) and of the CPU this thread runs on; -1 unknown. */
static void numa_nodes(const gpu_dev *d, int *gpu_node, int *cpu_node)
{
	*gpu_node = *cpu_node = -1;
	char path[128], bus[32];
	/* sysfs writes the domain with 4 digits and lower-case hex */
	unsigned dom, b, dev, fn;
	if (sscanf(d->bus_id, "%x:%x:%x.%x", &dom, &b, &dev, &fn) == 4) {
		snprintf(bus, sizeof(bus), "%04x:%02x:%02x.%x", dom, b, dev, fn);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", bus);
		FILE *fp = fopen(path, "r");
		if (fp) {
			if (fscanf(fp, "%d", gpu_node) != 1)
				*gpu_node = -1;
			fclose(fp);
		}
	}
	int cpu = sched_getcpu();
	for (int node = 0; cpu >= 0 && node < 64; node++) {
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/node%d", cpu, node);
		if (access(path, F_OK) == 0) {
			*cpu_node = node;
			break;
		}
	}
}

static bool verify_roundtrip(bench_ctx *c, bufs *b, char *why, size_t n)
{
	/* pin1 went up to d1 and came back (h2d then d2h); compare with the pattern written */
	const gv_cuda_api *cu = c->gpu->cu;
	uint32_t *p = b->pin1;
	uint64_t words = b->bytes / 4;
	for (uint64_t i = 0; i < words; i += 1021)
		p[i] = (uint32_t)(i * 2654435761u) ^ 0x5A5A5A5Au;
	CUresult rc = cu->cuMemcpyHtoD(b->d1, b->pin1, b->bytes);
	uint32_t *q = b->pin2;
	for (uint64_t i = 0; i < words; i += 1021)
		q[i] = ~p[i];
	if (rc == CUDA_SUCCESS)
		rc = cu->cuMemcpyDtoH(b->pin2, b->d1, b->bytes);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(c->gpu, "the verification copy", rc, why, n);
		return false;
	}
	for (uint64_t i = 0; i < words; i += 1021)
		if (q[i] != p[i]) {
			snprintf(why, n, "byte %llu came back as 0x%08x, sent 0x%08x", (unsigned long long)(i * 4), q[i], p[i]);
			return false;
		}
	snprintf(why, n, "a %llu MiB round trip came back intact (every 1021st word compared)",
		 (unsigned long long)(b->bytes >> 20));
	return true;
}

/* one repeat (bench_repeat) */
typedef struct transfer_arg {
	bench_ctx *c;
	gpu_dev *d;
	bufs *b;
	direction dir;
	bool pinned;
} transfer_arg;

static double transfer_once(void *arg, char *why, size_t n)
{
	transfer_arg *a = arg;
	return one_transfer(a->c, a->d, a->b, a->dir, a->pinned, why, n);
}

void bench_transfer(bench_ctx *c)
{
	char why[512];
	const char *modes[] = {"pinned", "pageable"};
	if (!c->gpu) {
		for (int m = 0; m < 2; m++)
			for (int dir = 0; dir < 3; dir++) {
				char id[48];
				snprintf(id, sizeof(id), "transfer.%s_%s", dir_name[dir], modes[m]);
				report_skip(c->r, id, "transfer", "GB/s", id + 9, "%s", c->gpu_skip[0] ? c->gpu_skip : "no GPU");
			}
		return;
	}
	gpu_session *s = c->gpu;
	int ordinal = c->o->device;
	const gv_cuda_api *cu = s->cu;
	bufs b = {0};
	bool ok = gpu_use(s, ordinal, why, sizeof(why));
	gpu_dev *d = ok ? &s->dev[ordinal] : NULL;
	if (ok && (!cu->cuMemHostAlloc || !cu->cuMemFreeHost || !cu->cuMemcpyHtoDAsync || !cu->cuMemcpyDtoHAsync ||
		   !cu->cuMemcpyHtoD)) {
		snprintf(why, sizeof(why), "libcuda lacks the pinned-memory copy functions");
		ok = false;
	}
	if (ok) {
		size_t free_b = 0, total_b = 0;
		gpu_mem_info(s, &free_b, &total_b);
		b.bytes = (uint64_t)c->o->transfer_bytes;
		unsigned long long avail = bench_mem_available();
		while (b.bytes > (1u << 20) && ((double)b.bytes * 2 > 0.5 * (double)free_b ||
						(avail && (double)b.bytes * 4 > 0.5 * (double)avail)))
			b.bytes /= 2;
		CUresult rc;
		if ((rc = cu->cuMemAlloc(&b.d1, b.bytes)) != CUDA_SUCCESS ||
		    (rc = cu->cuMemAlloc(&b.d2, b.bytes)) != CUDA_SUCCESS ||
		    (rc = cu->cuMemHostAlloc(&b.pin1, b.bytes, 0)) != CUDA_SUCCESS ||
		    (rc = cu->cuMemHostAlloc(&b.pin2, b.bytes, 0)) != CUDA_SUCCESS) {
			gpu_errtext(s, "allocating the transfer buffers", rc, why, sizeof(why));
			ok = false;
		} else {
			b.pg1 = malloc(b.bytes);
			b.pg2 = malloc(b.bytes);
			if (!b.pg1 || !b.pg2) {
				snprintf(why, sizeof(why), "not enough host memory for two %llu MiB buffers",
					 (unsigned long long)(b.bytes >> 20));
				ok = false;
			} else {
				/* a source never written maps the shared zero page and reads unrealistically
				 * fast: write it. Destinations fault their pages in during the warm-up. */
				memset(b.pg1, 1, b.bytes);
			}
		}
	}
	if (!ok) {
		for (int m = 0; m < 2; m++)
			for (int dir = 0; dir < 3; dir++) {
				char id[48];
				snprintf(id, sizeof(id), "transfer.%s_%s", dir_name[dir], modes[m]);
				report_skip(c->r, id, "transfer", "GB/s", id + 9, "%s", why);
			}
		goto done;
	}
	int gnode, cnode;
	numa_nodes(d, &gnode, &cnode);
	if (gnode >= 0)
		facts_put_int(c->r->facts, src, gnode, FK_BENCH_TRANSFER_GPU_NUMA_NODE);
	if (cnode >= 0)
		facts_put_int(c->r->facts, src, cnode, FK_BENCH_TRANSFER_CPU_NUMA_NODE);
	bench_progress(c, "host-device transfers");
	watchdog_arm("host-device transfers", bench_limit(c, 60));
	char verify_text[256];
	bool verified = verify_roundtrip(c, &b, verify_text, sizeof(verify_text));
	for (int m = 0; m < (c->o->transfer_basic ? 1 : 2); m++) {
		bool pinned = m == 0;
		for (int dir = 0; dir < (c->o->transfer_basic ? (int)T_BOTH : 3); dir++) {
			char id[48];
			snprintf(id, sizeof(id), "transfer.%s_%s", dir_name[dir], modes[m]);
			double secs[16];
			int got = 0, reps = pinned ? (c->o->quick ? 5 : 10) : (c->o->quick ? 3 : 5);
			if (one_transfer(c, d, &b, (direction)dir, pinned, why, sizeof(why)) < 0) { /* warm-up */
				report_skip(c->r, id, "transfer", "GB/s", id + 9, "%s", why);
				continue;
			}
			monitor_phase(c->mon, id);
			transfer_arg ta = {c, d, &b, (direction)dir, pinned};
			got = bench_repeat(transfer_once, &ta, reps, secs, why, sizeof(why));
			monitor_sample_now(c->mon);
			if (got > 0) /* busy: the copies' own time (host clock around each) */
				bench_evidence(c, ordinal, transfer_once, &ta, 1.0);
			monitor_phase(c->mon, NULL);
			if (got <= 0) {
				report_skip(c->r, id, "transfer", "GB/s", id + 9, "%s", got < 0 ? why : "stopped by the time limit");
				continue;
			}
			bench_figure *f = report_add(c->r, id, "transfer", "GB/s", "%s %s (%llu MiB)", dir_title[dir],
						     modes[m], (unsigned long long)(b.bytes >> 20));
			f->gpu = ordinal;
			f->size = (long long)b.bytes;
			stats_rates(secs, (size_t)got, (double)b.bytes * (dir == T_BOTH ? 2 : 1) / 1e9, &f->st);
			bench_window_evidence(c, f);
			monitor_summary ms;
			if (monitor_summary_get(c->mon, id, d->nvml_index, &ms) && ms.pcie_gen_max > 0 && ms.pcie_width_max > 0) {
				double rate = kb_pcie_rate_gbps(ms.pcie_gen_max, ms.pcie_width_max);
				char how[96];
				snprintf(how, sizeof(how), "PCIe Gen%d x%d: %.2f GB/s per direction%s", ms.pcie_gen_max,
					 ms.pcie_width_max, rate, dir == T_BOTH ? ", x2 for both ways" : "");
				if (rate > 0)
					figure_set_peak(f, rate * (dir == T_BOTH ? 2 : 1), how);
				facts_put_int(c->r->facts, src, ms.pcie_gen_max, FK_BENCH_FIGURE_PCIE_GEN, id);
				facts_put_int(c->r->facts, src, ms.pcie_width_max, FK_BENCH_FIGURE_PCIE_WIDTH, id);
			}
			if (!pinned)
				figure_set_note(f, "pageable memory is copied through the driver's pinned staging buffer");
			if (dir != T_BOTH && pinned)
				figure_set_verified(f, verified, verify_text);
			if (watchdog_expired())
				break;
		}
	}
	watchdog_disarm();
done:
	if (b.d1)
		cu->cuMemFree(b.d1);
	if (b.d2)
		cu->cuMemFree(b.d2);
	if (b.pin1)
		cu->cuMemFreeHost(b.pin1);
	if (b.pin2)
		cu->cuMemFreeHost(b.pin2);
	free(b.pg1);
	free(b.pg2);
}
