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
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
