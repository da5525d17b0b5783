/* The CUDA session and NVML's monitor of a benchmark run (bench, diag): opened once, their state
 * and the GPUs' identity written as facts of the run's report. */
#include <stdio.h>
#include <stdlib.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "core/factkeys.h"

static const char src[] = "gpuvet bench";

void bench_open_gpus(bench_ctx *c, bool xid_events)
{
	gpu_session *s = xcalloc(1, sizeof(*s));
	if (!gpu_open(s)) {
		str_copy(c->gpu_error, sizeof(c->gpu_error), s->error);
		facts_put_state(c->r->facts, FACT_ERROR, "cuInit", s->error, FK_BENCH_GPU_STATUS);
		report_note(c->r, "GPU benchmarks: %s", s->error);
		gpu_close(s);
		free(s);
		return;
	}
	c->gpu = s;
	facts_put_str(c->r->facts, src, "ok", FK_BENCH_GPU_STATUS);
	facts_put_int(c->r->facts, src, s->count, FK_BENCH_GPU_COUNT);
	if (s->driver_version > 0)
		facts_put_int(c->r->facts, "cuDriverGetVersion", s->driver_version, FK_BENCH_CUDA_DRIVER_VERSION);
	char err[512];
	c->mon = xid_events ? monitor_start_events(100, err, sizeof(err)) : monitor_start(100, err, sizeof(err));
	if (!c->mon) {
		facts_put_state(c->r->facts, FACT_ERROR, "nvmlInit", err, FK_BENCH_MONITOR_STATUS);
		report_note(c->r, "NVML: %s: figures are judged at the boost clock, without throttling or link data", err);
	} else {
		facts_put_str(c->r->facts, src, "ok", FK_BENCH_MONITOR_STATUS);
	}
	for (int i = 0; i < s->count; i++) {
		gpu_dev *d = &s->dev[i];
		d->nvml_index = monitor_find_bus(c->mon, d->bus_id);
		facts_put_str(c->r->facts, "cuDeviceGetName", d->name, FK_BENCH_GPU_NAME(d), i);
		char cc[16];
		snprintf(cc, sizeof(cc), "%d.%d", d->cc_major, d->cc_minor);
		facts_put_str(c->r->facts, "cuDeviceGetAttribute", cc, FK_BENCH_GPU_CC(d), i);
		facts_put_int(c->r->facts, "cuDeviceGetAttribute", d->sms, FK_BENCH_GPU_SMS(d), i);
		if (d->bus_id[0])
			facts_put_str(c->r->facts, "cuDeviceGetPCIBusId", d->bus_id, FK_BENCH_GPU_PCI_BUS_ID(d), i);
		if (d->nvml_index >= 0)
			facts_put_int(c->r->facts, src, d->nvml_index, FK_BENCH_GPU_NVML_INDEX(d), i);
	}
}

void bench_close_gpus(bench_ctx *c)
{
	bench_gemm_cleanup(c);
	bench_window_close(c);
	if (c->mon) {
		monitor_facts(c->mon, c->r->facts);
	}
	if (c->gpu) {
		gpu_close(c->gpu);
		free(c->gpu);
		c->gpu = NULL;
	}
}

