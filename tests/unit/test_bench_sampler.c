/*
 * gpuvet bench and tune on the one NVML sampler, with the fake NVML (tests/fake/): the GPM
 * evidence window of each benchmark (sampler/window.h: a sample right before the timed repeats
 * and one right after, scaled to the GPU time of the repeats), bench's monitor (phases, pauses,
 * summaries, the GPUs' identity and other processes) and tune's sampler (the GPU by UUID,
 * utilization, conditions). The paths of the fakes come from CMake (FAKE_NVML).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "nvidia/nvml.h"
#include "sampler/sampler.h"
#include "sampler/window.h"
#include "tune/tune_sampler.h"
#include "../tools/test_tmp.h"

#ifndef FAKE_NVML
#define FAKE_NVML ""
#endif

static char conf_path[4096];

static void use_fake(const char *config)
{
	FILE *f = fopen(conf_path, "w");
	assert_non_null(f);
	fputs(config, f);
	fclose(f);
	setenv("GPUVET_FAKE_CONFIG", conf_path, 1);
	setenv("GPUVET_NVML_LIB", FAKE_NVML, 1);
	gv_nvml_unload();
	/* loaded here, so that the sampler's first contact (a child, nvidia/contact.c) is skipped:
	 * a child forked after this process initialised NVML in an earlier test inherits that lock
	 * order and TSan takes the child's own order for an inversion; the contact has its tests */
	assert_true(gv_nvml_load());
}

/* the scaling alone: the window's average over the busy share of it, ratios at most 1 */
static void test_evidence_scale(void **s)
{
	(void)s;
	gpm_evidence e;
	for (int i = 0; i < GV_GPM_N; i++)
		e.window[i] = NAN;
	e.window_s = 0.2;
	e.busy_s = 0.05;
	e.window[GV_GPM_TENSOR_ACTIVE] = 0.2; /* 20% of 200 ms: 40 ms of tensor work in 50 ms busy */
	e.window[GV_GPM_SM_ACTIVE] = 0.5;     /* more than the busy time could hold: 1 */
	e.window[GV_GPM_PCIE_RX] = 1e9;       /* a rate: bytes per busy second, not capped */
	gpm_evidence_scale(&e);
	assert_true(fabs(e.busy[GV_GPM_TENSOR_ACTIVE] - 0.8) < 1e-12);
	assert_true(e.busy[GV_GPM_SM_ACTIVE] == 1.0);
	assert_true(fabs(e.busy[GV_GPM_PCIE_RX] - 4e9) < 1);
	assert_true(isnan(e.busy[GV_GPM_DRAM_ACTIVE]));
	/* no busy time measured: nothing to say */
	e.busy_s = 0;
	gpm_evidence_scale(&e);
	assert_true(isnan(e.busy[GV_GPM_TENSOR_ACTIVE]));
}

static void test_window(void **s)
{
	(void)s;
	/* the fake answers the later sample's value: 5 at begin, 40 at end */
	use_fake("device_count = 2\ngpu.0.gpm = 1\ngpu.0.gpm.tensor_active = 5,40\ngpu.0.gpm.sm_active = 100\n"
		 "gpu.1.gpm = 0\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	char why[256] = "";
	assert_null(gpm_window_open(1, why, sizeof(why)));
	assert_non_null(strstr(why, "not supported"));
	gpm_window *w = gpm_window_open(0, why, sizeof(why));
	assert_non_null(w);
	gpm_evidence e;
	assert_false(gpm_window_end(w, 0.01, &e)); /* no begin */
	assert_true(isnan(e.busy[GV_GPM_TENSOR_ACTIVE]));
	assert_true(gpm_window_begin(w));
	assert_true(gpm_window_end(w, 0.09, &e));
	/* a window shorter than NVML's 100 ms is padded to it before its end sample */
	assert_true(e.window_s >= GV_GPM_MIN_INTERVAL);
	assert_true(e.busy_s == 0.09);
	assert_true(fabs(e.window[GV_GPM_TENSOR_ACTIVE] - 0.40) < 1e-9);
	assert_true(fabs(e.busy[GV_GPM_TENSOR_ACTIVE] - fmin(1, 0.40 * e.window_s / 0.09)) < 1e-9);
	assert_true(e.busy[GV_GPM_SM_ACTIVE] == 1.0);
	/* one window, one end: a second end without a begin says nothing */
	assert_false(gpm_window_end(w, 0.09, &e));
	gpm_window_close(w);
	gv_nvml_unload();
}

/* bench's monitor on the sampler: the GPUs' identity and limits at start, other processes, a
 * phase's clocks, reasons, link and power, and the facts of the whole run */
static void test_monitor(void **s)
{
	(void)s;
	use_fake("device_count = 2\n"
		 "gpu.0.sm_clock = 1410\ngpu.0.mem_clock = 2619\ngpu.0.clock_reasons = 0x40\ngpu.0.temperature = 88\n"
		 "gpu.0.power_mw = 650000\ngpu.0.pcie_gen = 4\ngpu.0.pcie_width = 8\n"
		 "gpu.0.processes = 4194301:python3:20GiB\n"
		 "gpu.1.pci_bus_id = 00000000:3B:00.0\n");
	char err[512] = "";
	monitor *m = monitor_start(5000, err, sizeof(err));
	if (!m)
		print_error("monitor_start: %s\n", err);
	assert_non_null(m);
	assert_int_equal(monitor_gpu_count(m), 2);
	const monitor_gpu_info *g = monitor_gpu(m, 0);
	assert_non_null(g);
	assert_string_equal(g->name, "NVIDIA H200");
	assert_int_equal(g->max_sm_clock_mhz, 1980);
	assert_int_equal(g->pcie_gen_max, 5);
	assert_int_equal(g->pcie_width_max, 16);
	assert_true(fabs(g->power_limit_w - 700) < 1e-9);
	assert_int_equal(g->temp_slowdown_c, 89);
	assert_int_equal(g->nprocs_other, 1);
	assert_non_null(strstr(g->procs_other, "python3 (pid 4194301, 20480 MiB)"));
	assert_int_equal(monitor_gpu(m, 1)->nprocs_other, 0);
	assert_null(monitor_gpu(m, 2));
	/* CUDA's bus ids have a 4-digit domain, NVML's 8 */
	assert_int_equal(monitor_find_bus(m, "0000:3b:00.0"), 1);
	assert_int_equal(monitor_find_bus(m, "0000:99:00.0"), -1);

	/* a phase measured with sampling paused gets its one sample at the end */
	monitor_phase(m, "gemm.bf16");
	monitor_pause(m, true);
	monitor_sample_now(m);
	monitor_pause(m, false);
	monitor_phase(m, NULL);
	monitor_summary ms;
	assert_true(monitor_summary_get(m, "gemm.bf16", 0, &ms));
	assert_true(ms.samples >= 1);
	assert_true(ms.sm_clock_median == 1410 && ms.mem_clock_median == 2619);
	assert_true(ms.reasons & 0x40);
	assert_true(ms.temp_max_c == 88 && ms.power_max_w == 650);
	assert_int_equal(ms.pcie_gen_min, 4);
	assert_int_equal(ms.pcie_width_max, 8);
	assert_int_equal(ms.other_procs, 1);
	assert_false(monitor_summary_get(m, "never.ran", 0, &ms));
	assert_true(isnan(ms.sm_clock_median));
	/* the whole run */
	facts *f = facts_new();
	monitor_facts(m, f);
	assert_true(facts_int_or(f, -1, "bench.monitor.gpu.0.other_processes") == 1);
	assert_true(facts_int_or(f, -1, "bench.monitor.gpu.0.max_sm_clock_mhz") == 1980);
	assert_non_null(facts_str(f, "bench.monitor.gpu.0.clock_event_reasons_text"));
	assert_non_null(facts_str(f, "bench.monitor.gpu.1.pci_bus_id"));
	facts_free(f);
	monitor_stop(m);
	gv_nvml_unload();

	/* NVML that does not initialise: no monitor, and why */
	use_fake("error.nvmlInit_v2 = 999\nerror.nvmlInit = 999\n");
	err[0] = 0;
	assert_null(monitor_start(100, err, sizeof(err)));
	assert_true(err[0] != 0);
	gv_nvml_unload();
}

/* tune's sampler on the sampler: the GPU the probe names by UUID, its utilization, and the
 * conditions of the samples taken (only the reasons that slow a GPU against the user's will) */
static void test_tune_sampler(void **s)
{
	(void)s;
	use_fake("device_count = 2\n"
		 "gpu.1.uuid = GPU-probe-1\ngpu.1.name = NVIDIA H100\ngpu.1.util_gpu = 40,60\n"
		 "gpu.1.sm_clock = 1600\ngpu.1.temperature = 70,80\ngpu.1.power_mw = 300000,500000\n"
		 "gpu.1.clock_reasons = 0x1,0x8\n"
		 "gpu.0.util_gpu = 99\n");
	const char *why = NULL;
	tune_sampler *t = tune_sampler_open(&why);
	assert_non_null(t);
	tune_conditions c;
	tune_sampler_conditions(t, &c);
	assert_int_equal(c.index, -1); /* nothing read yet */
	tune_sampler_select(t, "GPU-probe-1");
	double pct = -1, sum = 0;
	for (int i = 0; i < 2; i++) {
		assert_true(tune_sampler_read(t, &pct));
		sum += pct;
	}
	tune_sampler_conditions(t, &c);
	assert_int_equal(c.index, 1);
	assert_int_equal(c.samples, 2);
	assert_string_equal(c.uuid, "GPU-probe-1");
	assert_string_equal(c.name, "NVIDIA H100");
	/* the fake's lists advance once per take: select took one, so the reads saw 60 then 40 */
	assert_true(sum == 100);
	assert_true(c.sm_clock_mhz == 1600 && c.temperature_max_c == 80 && fabs(c.power_w - 400) < 1e-9);
	assert_true(c.slowed);
	assert_non_null(c.reasons[0] ? c.reasons : NULL);
	tune_sampler_close(t);

	/* an unknown UUID: NVML's device 0 */
	use_fake("device_count = 2\ngpu.0.util_gpu = 99\n");
	t = tune_sampler_open(&why);
	if (!t)
		print_error("tune_sampler_open: %s\n", why ? why : "?");
	assert_non_null(t);
	tune_sampler_select(t, "GPU-elsewhere");
	assert_true(tune_sampler_read(t, &pct));
	assert_true(pct == 99);
	tune_sampler_conditions(t, &c);
	assert_int_equal(c.index, 0);
	assert_false(c.slowed);
	tune_sampler_close(t);
	gv_nvml_unload();
}

/* the sampler's processes_every: bench's monitor reads the processes once a second, not every
 * take; between, the last list stays. The fake's per-process SM utilization advances once per
 * read of the processes, so the takes show which of them read. */
static void test_processes_every(void **s)
{
	(void)s;
	use_fake("gpu.0.processes = 4194301:python3:1GiB\n"
		 "gpu.0.process_sm_util = 4194301:10,4194301:20,4194301:30,4194301:40\n");
	for (int every = 1; every <= 3; every += 2) {
		sampler_opts o = {.no_events = true, .no_kmsg = true, .no_gpm = true, .processes_every = every};
		char err[256] = "";
		sampler *smp = sampler_open(&o, err, sizeof(err));
		assert_non_null(smp);
		double got[4];
		for (int t = 0; t < 4; t++) {
			snapshot *snap = sampler_take(smp, err, sizeof(err));
			assert_non_null(snap);
			assert_int_equal(snap->gpus[0].nproc, 1);
			assert_true(sv_has(snap->gpus[0].procs[0].sm_util));
			got[t] = snap->gpus[0].procs[0].sm_util.v;
			snapshot_free(snap);
		}
		sampler_close(smp);
		if (every == 1)
			assert_true(got[0] == 10 && got[1] == 20 && got[2] == 30 && got[3] == 40);
		else
			assert_true(got[0] == 10 && got[1] == 10 && got[2] == 10 && got[3] == 20);
		use_fake("gpu.0.processes = 4194301:python3:1GiB\n"
			 "gpu.0.process_sm_util = 4194301:10,4194301:20,4194301:30,4194301:40\n");
	}
	gv_nvml_unload();
}

static int setup(void **s)
{
	(void)s;
	if (!*FAKE_NVML)
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/gpuvet-test-bench-sampler-%d.conf", test_tmpdir(), (int)getpid());
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	gv_nvml_unload();
	unlink(conf_path);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evidence_scale),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_monitor),
		cmocka_unit_test(test_tune_sampler),
		cmocka_unit_test(test_processes_every),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
