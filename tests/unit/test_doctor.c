/* The job doctor's verdict (doctor_diagnose) for every class, with and without GPM counters:
 * evidence written as the H200 measurements of docs/watch.md show it, the verdict expected. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "doctor/doctor.h"
#include "health/conditions.h"
#include "health/health.h"
#include "sampler/snapshot.h"
#include "store/history.h"
#include <unistd.h>

/* One H200 at rest, the job holding it with 10 GiB, one GPU process and no workers. */
static void base(doctor_evidence *ev)
{
	memset(ev, 0, sizeof(*ev));
	ev->pid = 4242;
	ev->alive = true;
	ev->seconds = 10;
	ev->tune_tf32_gain = NAN;
	ev->cpu.main_age = NAN;
	ev->ngpus = 1;
	doctor_gpu *g = &ev->gpus[0];
	g->index = 0;
	strcpy(g->name, "NVIDIA H200");
	g->samples = 10;
	g->util = 0;
	g->gpm = true;
	for (int k = 0; k < GV_GPM_N; k++)
		g->act[k] = 0;
	g->cc = 9.0;
	g->mem_total = 141.0 * (1 << 30);
	g->mem_used = 10.0 * (1 << 30);
	g->job_mem = 10.0 * (1 << 30);
	g->other_mem = 0;
	g->job_sm = g->other_sm = NAN;
	g->job_procs = 1;
	g->power = 120;
	g->power_limit = g->power_default_limit = 700;
	g->temp_max = 40;
	g->phase_t = g->busy_before = g->busy_after = NAN;
	ev->cpu.seconds = 10;
	ev->cpu.nprocs = 1;
	ev->cpu.gpu_procs = 1;
	ev->cpu.main_pid = 4242;
	ev->cpu.main_tid = 4242;
	ev->cpu.main_thread = 0.2;
	ev->cpu.main_cpu = 0.3;
	dist_rank_init(&ev->dist);
}

static void no_gpm(doctor_evidence *ev)
{
	for (int i = 0; i < ev->ngpus; i++) {
		ev->gpus[i].gpm = false;
		for (int k = 0; k < GV_GPM_N; k++)
			ev->gpus[i].act[k] = NAN;
	}
}

static const char *diag(const doctor_evidence *ev, doctor_verdict *v)
{
	doctor_diagnose(ev, NULL, v);
	assert_non_null(v->id);
	assert_true(v->title[0] != '\0');
	assert_true(v->nfix > 0);
	assert_false(v->cut); /* every title, evidence, fix and note line fits whole */
	return v->id;
}

static bool has_line(const char (*arr)[DOCTOR_LINE_MAX], size_t n, const char *text)
{
	for (size_t i = 0; i < n; i++)
		if (strstr(arr[i], text))
			return true;
	return false;
}

static bool has_evidence(const doctor_verdict *v, const char *text)
{
	for (size_t i = 0; i < v->nevidence; i++)
		if (strstr(v->evidence[i], text))
			return true;
	return false;
}

static void test_gpu_bound_classes(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* bf16 GEMM loop: util 96-99%, SM 93-95%, tensor 90-92%, DRAM 17%, at its power cap */
	base(&ev);
	ev.gpus[0].util = 0.98;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.94;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.91;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.17;
	ev.gpus[0].power = 690;
	ev.gpus[0].power_cap_frac = 1;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	assert_int_equal(v.level, DOCTOR_OK);
	assert_true(has_evidence(&v, "tensor 91.0%"));
	/* the power cap at full load is a note, not a degradation */
	assert_true(has_line(v.note, v.nnote, "expected, not degraded"));

	/* ResNet-50 in fp32 as measured on the H200 (scripts/device/gpm.sh, 2026-12-01): utilization
	 * 89%, SM active 77% (under the 80% of "busy"), tensor 0.3%, FP32 pipe 23%: still fp32 math
	 * (it read job.mixed before) */
	base(&ev);
	ev.gpus[0].util = 0.891;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.767;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.0029;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.159;
	ev.gpus[0].act[GV_GPM_FP32_ACTIVE] = 0.232;
	ev.cpu.main_thread = 0.56;
	ev.cpu.main_cpu = 0.96;
	assert_string_equal(diag(&ev, &v), "job.fp32-math");

	/* 1 GiB device copy loop: SM 96%, tensor 0, DRAM 86% */
	base(&ev);
	ev.gpus[0].util = 0.97;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.96;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.86;
	assert_string_equal(diag(&ev, &v), "job.dram-bound");

	/* ResNet-50 in fp32: SM 89%, tensor 0.3%, DRAM 18%, FP32 27%: AMP/TF32 */
	base(&ev);
	ev.gpus[0].util = 0.98;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.89;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.003;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.18;
	ev.gpus[0].act[GV_GPM_FP32_ACTIVE] = 0.27;
	assert_string_equal(diag(&ev, &v), "job.fp32-math");
	assert_int_equal(v.level, DOCTOR_WARN);
	assert_true(has_line(v.fix, v.nfix, "TF32"));
	/* with a gain measured by gpuvet tune, the fix says it */
	ev.tune_tf32_gain = 2.6;
	strcpy(ev.tune_source, "gpuvet tune on NVIDIA H200");
	diag(&ev, &v);
	assert_true(has_line(v.fix, v.nfix, "2.6x measured"));
	/* the same counters on a GPU without tensor cores for fp32 (cc 7.0): FP32-bound, fine */
	ev.gpus[0].cc = 7.0;
	assert_string_equal(diag(&ev, &v), "job.fp32-bound");

	/* fp64 */
	base(&ev);
	ev.gpus[0].util = 0.99;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.95;
	ev.gpus[0].act[GV_GPM_FP64_ACTIVE] = 0.6;
	assert_string_equal(diag(&ev, &v), "job.fp64-bound");

	/* a float64 matmul on Hopper runs on the tensor cores (DMMA): "any tensor" as high as a bf16
	 * GEMM's, so FP64 is judged first (bench's fp64 GEMM on the H200, 2026-12-01T14:15Z: SM 98%,
	 * tensor 96%, DRAM 22%) */
	base(&ev);
	ev.gpus[0].util = 1.0;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.98;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.96;
	ev.gpus[0].act[GV_GPM_TENSOR_DFMA] = 0.96;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.22;
	assert_string_equal(diag(&ev, &v), "job.fp64-bound");
	assert_true(has_evidence(&v, "FP64 tensor (DFMA) 96.0%"));
	/* and a bf16 GEMM, whose tensor activity is HMMA, stays tensor-bound */
	ev.gpus[0].act[GV_GPM_TENSOR_DFMA] = 0;
	ev.gpus[0].act[GV_GPM_TENSOR_HMMA] = 0.96;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");

	/* busy SMs, no pipe dominant */
	base(&ev);
	ev.gpus[0].util = 0.99;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.9;
	assert_string_equal(diag(&ev, &v), "job.gpu-bound");

	/* without GPM: busy by utilization, and it says it cannot tell the pipe */
	base(&ev);
	no_gpm(&ev);
	ev.gpus[0].util = 0.97;
	assert_string_equal(diag(&ev, &v), "job.gpu-bound");
	assert_true(has_line(v.note, v.nnote, "without GPM"));
	assert_true(has_evidence(&v, "no GPM counters"));
}

static void test_host_side_classes(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* training fed from the CPU in the main process: util 12-28%, SM 9-11%, main thread saturated */
	base(&ev);
	ev.gpus[0].util = 0.20;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.10;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.015;
	ev.gpus[0].act[GV_GPM_DRAM_ACTIVE] = 0.04;
	ev.cpu.main_thread = 1.0;
	ev.cpu.main_cpu = 1.1;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.fix, v.nfix, "num_workers"));
	assert_true(has_line(v.fix, v.nfix, "pin_memory"));
	/* heavy host-to-device copies add the pinned memory note */
	ev.gpus[0].act[GV_GPM_PCIE_RX] = 6e9;
	diag(&ev, &v);
	assert_true(has_line(v.note, v.nnote, "pin it"));

	/* the model left on the CPU: torch's 8 intra-op threads busy, the GPU idle. Not "waits for
	 * data": its fix (DataLoader workers) misses a tensor never moved to the GPU */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.cpu.main_thread = 1.0;
	ev.cpu.main_cpu = 7.6;
	ev.cpu.compute_threads = 8;
	ev.cpu.compute_cores = 7.5;
	ev.cpu.idle_cores = 8.0;
	assert_string_equal(diag(&ev, &v), "job.cpu-compute");
	assert_non_null(strstr(v.title, "8 threads of its GPU process use 7.5 cores"));
	assert_true(has_line(v.fix, v.nfix, "next(model.parameters()).device"));
	assert_true(has_line(v.fix, v.nfix, "tokenizers"));
	assert_false(has_line(v.fix, v.nfix, "pin_memory"));
	int idle_lines = 0; /* cpu_figures says it once */
	for (size_t i = 0; i < v.nevidence; i++)
		idle_lines += strstr(v.evidence[i], "idle cores the job could use") != NULL;
	assert_int_equal(idle_lines, 1);
	/* spread too thin to saturate one thread (a tokenizer's pool at 60% each): still the CPU */
	ev.cpu.main_thread = 0.6;
	assert_string_equal(diag(&ev, &v), "job.cpu-compute");
	/* young: it may be tokenizing its dataset before the first step */
	ev.cpu.main_age = 20;
	diag(&ev, &v);
	assert_true(has_line(v.note, v.nnote, "it may still be starting"));
	ev.cpu.main_age = NAN;
	/* two busy threads (a synchronize spinning beside NCCL's proxy thread) are no CPU compute */
	ev.cpu.main_thread = 1.0;
	ev.cpu.compute_threads = 2;
	ev.cpu.compute_cores = 2.0;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	/* saturated workers speak first: the data is the bottleneck */
	ev.cpu.compute_threads = 4;
	ev.cpu.compute_cores = 3.5;
	ev.cpu.workers = 2;
	ev.cpu.workers_busy = 2;
	ev.cpu.workers_cpu = 2;
	assert_string_equal(diag(&ev, &v), "job.input-bound");

	/* saturated DataLoader workers, the main process idle */
	base(&ev);
	ev.gpus[0].util = 0.3;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.2;
	ev.cpu.workers = 4;
	ev.cpu.workers_busy = 4;
	ev.cpu.workers_cpu = 4;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.fix, v.nfix, "4 workers are saturated"));

	/* tiny kernels with a host sync each step: util 25%, SM 0.0%, a host thread at 100% */
	base(&ev);
	ev.gpus[0].util = 0.25;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.0;
	ev.cpu.main_thread = 1.0;
	assert_string_equal(diag(&ev, &v), "job.launch-bound");
	assert_true(has_line(v.fix, v.nfix, "CUDA graphs"));
	/* the same job on a slower round (scripts/device/gpm.sh on the H200, 2026-12-03: utilization
	 * 14.2%, SM active 0.01%, the main thread at 100%; it read input-bound under the 15-point gap) */
	ev.gpus[0].util = 0.142;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.0001;
	assert_string_equal(diag(&ev, &v), "job.launch-bound");
	ev.gpus[0].util = 0.25;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.0;
	/* the same counters with heavy host-to-device copies: the host thread is busy copying
	 * (scripts/device/doctor2.sh on the H200, 2026-12-01: 256 MiB pageable tensors to the GPU
	 * each step, utilization 16%, SM active 0.0%, 8.0 GB/s, the main thread at 100%; it read
	 * launch-bound before) */
	ev.gpus[0].util = 0.156;
	ev.gpus[0].act[GV_GPM_PCIE_RX] = 8.0e9;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.note, v.nnote, "pageable memory"));
	assert_true(has_evidence(&v, "host-to-device PCIe traffic 8.00 GB/s"));
	/* and the other way: a 256 MiB result to pageable host memory each step (doctor2.sh on the
	 * H200: utilization 5%, SM active 0.1%, 1.25 GB/s from the GPU, 0.0005 to it, the main
	 * thread at 100%; it read input-bound before): a sync each step */
	ev.gpus[0].util = 0.046;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.0005;
	ev.gpus[0].act[GV_GPM_PCIE_RX] = 5e5;
	ev.gpus[0].act[GV_GPM_PCIE_TX] = 1.25e9;
	assert_string_equal(diag(&ev, &v), "job.launch-bound");
	assert_true(has_evidence(&v, "device-to-host PCIe traffic 1.25 GB/s"));
	assert_true(has_line(v.fix, v.nfix, "pin_memory=True"));
	/* a training step's usual traffic (the batches in, a little out) stays input-bound */
	ev.gpus[0].act[GV_GPM_PCIE_RX] = 2e9;
	ev.gpus[0].act[GV_GPM_PCIE_TX] = 0.6e9;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.0;
	ev.gpus[0].act[GV_GPM_PCIE_TX] = 0.0;
	ev.gpus[0].util = 0.25;
	ev.gpus[0].act[GV_GPM_PCIE_RX] = 0.0;
	/* the same without a busy host thread is not launch-bound */
	ev.cpu.main_thread = 0.1;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	/* without GPM the tiny kernels cannot be told from input: input-bound with the caveat */
	ev.cpu.main_thread = 1.0;
	no_gpm(&ev);
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.note, v.nnote, "launch/sync-bound"));

	/* a job that waits with nothing busy */
	base(&ev);
	ev.gpus[0].util = 0.05;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	/* in between busy and idle, nothing saturated */
	ev.gpus[0].util = 0.7;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.65;
	assert_string_equal(diag(&ev, &v), "job.mixed");
	assert_int_equal(v.level, DOCTOR_INFO);
}

static void test_memory_and_gpus(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* a process holding 95% of the memory and doing little */
	base(&ev);
	ev.gpus[0].job_mem = ev.gpus[0].mem_used = 0.96 * ev.gpus[0].mem_total;
	ev.gpus[0].util = 0.02;
	assert_string_equal(diag(&ev, &v), "job.memory-pressure");
	/* as measured on the H200 (scripts/device/gpm.sh, 2026-12-01): torch held 142.6 GB of 150.75 GB
	 * (94.6%) and slept; the doctor said job.gpu-idle while the class is memory pressure */
	base(&ev);
	ev.gpus[0].mem_total = 150754820096.0;
	ev.gpus[0].job_mem = 142595850240.0;
	ev.gpus[0].mem_used = 142605090816.0;
	ev.gpus[0].util = 0;
	ev.cpu.main_thread = 0.0008;
	assert_string_equal(diag(&ev, &v), "job.memory-pressure");
	/* other processes' memory on the job's GPU */
	base(&ev);
	ev.gpus[0].other_mem = 0.3 * ev.gpus[0].mem_total;
	ev.gpus[0].other_procs = 1;
	assert_string_equal(diag(&ev, &v), "job.memory-pressure");
	assert_true(has_line(v.fix, v.nfix, "other processes"));
	/* GPM off: the same */
	no_gpm(&ev);
	assert_string_equal(diag(&ev, &v), "job.memory-pressure");
	/* another process keeps the SMs busy (NVML's per-process utilization, without GPM) */
	base(&ev);
	no_gpm(&ev);
	ev.gpus[0].util = 0.9;
	ev.gpus[0].job_sm = 0.3;
	ev.gpus[0].other_sm = 0.6;
	diag(&ev, &v);
	assert_true(has_line(v.note, v.nnote, "other processes take 60% of its SM time, the job 30%"));

	/* two GPUs, one idle while the other works */
	base(&ev);
	ev.ngpus = 2;
	ev.gpus[1] = ev.gpus[0];
	ev.gpus[1].index = 1;
	ev.gpus[0].util = 0.95;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.9;
	ev.gpus[1].util = 0.02;
	ev.gpus[1].act[GV_GPM_SM_ACTIVE] = 0.01;
	assert_string_equal(diag(&ev, &v), "job.multi-gpu-imbalance");
	assert_int_equal(v.gpu, 1);
	no_gpm(&ev);
	assert_string_equal(diag(&ev, &v), "job.multi-gpu-imbalance");
	/* both busy: not imbalanced */
	ev.gpus[1].util = 0.95;
	assert_string_equal(diag(&ev, &v), "job.gpu-bound");
	/* every rank's context also on GPU 0 */
	ev.cpu.gpu_procs = 2;
	ev.gpus[0].job_procs = 2;
	assert_string_equal(diag(&ev, &v), "job.multi-gpu-imbalance");
	assert_true(has_line(v.fix, v.nfix, "set_device"));

	/* no GPU at all, and a process that ended */
	base(&ev);
	ev.ngpus = 0;
	assert_string_equal(diag(&ev, &v), "job.no-gpu");
	ev.alive = false;
	assert_string_equal(diag(&ev, &v), "job.not-running");
}

static void test_power_thermal(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* thermal slowdown under load is a degradation, whatever the pipes say */
	base(&ev);
	ev.gpus[0].util = 0.98;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.94;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.91;
	ev.gpus[0].thermal_frac = 0.5;
	ev.gpus[0].temp_max = 88;
	assert_string_equal(diag(&ev, &v), "job.gpu-slowdown");
	assert_int_equal(v.level, DOCTOR_WARN);
	ev.gpus[0].thermal_frac = 0;
	ev.gpus[0].hw_slowdown_frac = 0.3;
	assert_string_equal(diag(&ev, &v), "job.gpu-slowdown");
	/* a power limit set below the default */
	ev.gpus[0].hw_slowdown_frac = 0;
	ev.gpus[0].power_limit = 400;
	assert_string_equal(diag(&ev, &v), "job.power-limit-lowered");
	assert_true(has_line(v.fix, v.nfix, "-pl 700"));
	/* at the default limit and capped: fine (tensor-bound) */
	ev.gpus[0].power_limit = 700;
	ev.gpus[0].power_cap_frac = 0.9;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	/* an unknown default limit never reads as lowered */
	ev.gpus[0].power_default_limit = NAN;
	ev.gpus[0].power_limit = 300;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
}

static void test_thresholds_move_the_verdict(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	ev.gpus[0].util = 0.85;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.82;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.55;
	doctor_thresholds t;
	doctor_thresholds_default(&t);
	doctor_diagnose(&ev, &t, &v);
	assert_string_equal(v.id, "job.tensor-bound");
	t.busy = 0.9;
	doctor_diagnose(&ev, &t, &v);
	assert_string_equal(v.id, "job.mixed");
}

/* One rule for clocks held back (check, watch and serve): the H200 at 690/700 W under a
 * bf16 GEMM is not degraded; a lowered limit, thermal or hardware slowdown, or a cap while idle is. */
static void test_clocks_rule(void **st)
{
	(void)st;
	clocks_verdict v = clocks_judge(CLK_SW_POWER_CAP, 0.98, 700, 700);
	assert_int_equal(v.level, CLOCKS_INFO);
	assert_true(v.power_capped_busy);
	assert_int_equal(clocks_judge(CLK_SW_POWER_CAP, NAN, NAN, NAN).level, CLOCKS_INFO);
	assert_int_equal(clocks_judge(CLK_SW_POWER_CAP, 0.98, 450, 700).level, CLOCKS_DEGRADED);
	assert_true(clocks_judge(CLK_SW_POWER_CAP, 0.98, 450, 700).limit_lowered);
	assert_int_equal(clocks_judge(CLK_SW_POWER_CAP, 0.98, 690, 700).level, CLOCKS_INFO); /* within 5% */
	assert_int_equal(clocks_judge(CLK_SW_POWER_CAP, 0.05, 700, 700).level, CLOCKS_DEGRADED);
	assert_int_equal(clocks_judge(CLK_SW_POWER_CAP | CLK_SW_THERMAL, 0.98, 700, 700).level, CLOCKS_DEGRADED);
	assert_int_equal(clocks_judge(CLK_HW_SLOWDOWN, 0.98, 700, 700).level, CLOCKS_UNHEALTHY);
	assert_int_equal(clocks_judge(CLK_HW_POWER_BRAKE, 0.1, 700, 700).level, CLOCKS_UNHEALTHY);
	assert_int_equal(clocks_judge(CLK_GPU_IDLE | CLK_APP_CLOCKS | CLK_SYNC_BOOST, 0, 700, 700).level, CLOCKS_NONE);

	/* gpu.hot and gpu.pcie-degraded, one definition for check and watch */
	assert_int_equal(hot_judge(79, 89), CLOCKS_NONE);
	assert_int_equal(hot_judge(80, 89), CLOCKS_DEGRADED);
	assert_int_equal(hot_judge(76, 80), CLOCKS_DEGRADED); /* within 5 C of slowdown */
	assert_int_equal(hot_judge(89, 89), CLOCKS_UNHEALTHY);
	assert_int_equal(hot_judge(85, NAN), CLOCKS_DEGRADED);
	assert_int_equal(hot_judge(NAN, 89), CLOCKS_NONE);
	bool narrow, slow;
	assert_int_equal(link_judge(8, 16, 5, 5, 0, &narrow, &slow), CLOCKS_DEGRADED);
	assert_true(narrow && !slow);
	assert_int_equal(link_judge(16, 16, 1, 5, 0.1, &narrow, &slow), CLOCKS_NONE); /* idle: power saving */
	assert_int_equal(link_judge(16, 16, 1, 5, 0.9, &narrow, &slow), CLOCKS_DEGRADED);
	assert_true(slow && !narrow);
	assert_int_equal(link_judge(16, 16, 1, 5, NAN, &narrow, &slow), CLOCKS_NONE);

	/* the same through watch's health tracker: GPM's SM active decides busy when present */
	snapshot *s = snapshot_new(1);
	gpu_sample *g = &s->gpus[0];
	g->index = 0;
	strcpy(g->uuid, "GPU-x");
	g->clock_reasons = sv_ok(CLK_SW_POWER_CAP);
	g->util_gpu = sv_ok(98);
	g->power = sv_ok(690);
	g->power_limit = sv_ok(700);
	g->power_default_limit = sv_ok(700);
	health_tracker *h = calloc(1, sizeof(*h));
	health_init(h, NULL);
	health_update(h, s, 1);
	assert_int_equal(health_gpu(h, 0), HEALTH_HEALTHY);
	/* NVML says busy, GPM says the SMs idle: capped while not busy */
	g->gpm_support = 1;
	g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(0.02);
	health_update(h, s, 2);
	assert_int_equal(health_gpu(h, 0), HEALTH_DEGRADED);
	g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(0.95);
	g->power_limit = sv_ok(400);
	health_update(h, s, 3);
	assert_int_equal(health_gpu(h, 0), HEALTH_DEGRADED);
	assert_non_null(strstr(h->msgs[0].text, "default 700 W"));
	/* low utilization for a minute: input-bound, or launch-bound where GPM shows empty SMs */
	g->clock_reasons = sv_ok(0);
	g->power_limit = sv_ok(700);
	g->util_gpu = sv_ok(25);
	g->nprocs = sv_ok(1);
	g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(0.0);
	health_init(h, NULL);
	health_update(h, s, 0);
	health_update(h, s, 61);
	assert_int_equal(h->nmsg, 1);
	assert_string_equal(h->msgs[0].id, "gpu.launch-bound");
	/* under the 15-point gap, SMs still empty (the H200's 14.2% against 0.01%) */
	g->util_gpu = sv_ok(14);
	g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(0.0001);
	health_update(h, s, 61.5);
	assert_string_equal(h->msgs[0].id, "gpu.launch-bound");
	g->util_gpu = sv_ok(25);
	g->gpm[GV_GPM_SM_ACTIVE] = sv_ok(0.12);
	health_update(h, s, 62);
	assert_int_equal(h->nmsg, 1);
	assert_string_equal(h->msgs[0].id, "gpu.input-bound");
	g->gpm[GV_GPM_SM_ACTIVE] = (sval){0, SV_NA};
	health_update(h, s, 63);
	assert_string_equal(h->msgs[0].id, "gpu.input-bound");
	free(h);
	snapshot_free(s);
}

/* The gain quoted by the fp32-math fix: the newest tune run on the same GPU class, its fp32
 * baseline against the fastest of TF32 and AMP. */
static void test_tune_gain(void **st)
{
	(void)st;
	const char *tmp = getenv("TMPDIR");
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/gpuvet-doctor-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(dir));
	char path[320];
	snprintf(path, sizeof(path), "%s/history.db", dir);
	double gain;
	char src[128];
	assert_false(doctor_tune_gain(path, "NVIDIA H200", &gain, src, sizeof(src))); /* no database */
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	char *argv[] = {"gpuvet", "tune", NULL};
	hist_run *r = history_run_begin(HIST_TUNE, 2, argv);
	history_run_add_gpu(r, 0, "NVIDIA H200", "GPU-1", "00000000:18:00.0");
	history_run_add_value(r, "tune.resnet50.bs64.img224.gpu.fp32.ms", 100, "ms", HIST_LOWER_BETTER);
	history_run_add_value(r, "tune.resnet50.bs64.img224.gpu.tf32.ms", 45, "ms", HIST_LOWER_BETTER);
	history_run_add_value(r, "tune.resnet50.bs64.img224.gpu.amp_bf16.ms", 40, "ms", HIST_LOWER_BETTER);
	history_run_add_value(r, "tune.resnet50.bs64.img224.gpu.channels_last.ms", 20, "ms", HIST_LOWER_BETTER);
	history_run_add_value(r, "tune.resnet50.bs64.img224.cpu.fp32.ms", 9000, "ms", HIST_LOWER_BETTER);
	long long id = 0;
	assert_true(history_run_finish(h, r, &id, &err));
	history_close(h);
	assert_true(doctor_tune_gain(path, "NVIDIA H200", &gain, src, sizeof(src)));
	assert_true(fabs(gain - 2.5) < 1e-9); /* 100 / 40: AMP bf16, not channels_last */
	assert_non_null(strstr(src, "resnet50 AMP bf16 against fp32"));
	assert_false(doctor_tune_gain(path, "NVIDIA A100-SXM4-80GB", &gain, src, sizeof(src)));
	assert_true(isnan(gain));
	unlink(path);
	char side[340];
	snprintf(side, sizeof(side), "%s-wal", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", path);
	unlink(side);
	snprintf(side, sizeof(side), "%s-verified", path);
	unlink(side);
	assert_int_equal(rmdir(dir), 0);
}

/* Memory that grows steadily: the rate, the time to full, the causes and how to find the
 * allocation (the H200's job keeping every step's output grew about 1 GiB/s and read
 * "mostly idle" before). */
static void test_memory_growth(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	doctor_gpu *g = &ev.gpus[0];
	g->util = 0.3;
	g->act[GV_GPM_SM_ACTIVE] = 0.1;
	g->samples = 9;
	g->t_first = 100;
	g->t_last = 108;
	g->mem_first = 10.0 * (1 << 30);
	g->mem_last = 18.6 * (1 << 30);
	g->mem_used = g->job_mem = g->mem_last;
	g->mem_growth = 1.07 * (1 << 30);
	g->mem_steady = true;
	assert_string_equal(diag(&ev, &v), "job.memory-growth");
	assert_int_equal(v.level, DOCTOR_WARN);
	assert_non_null(strstr(v.title, "grows 1.07 GiB/s"));
	assert_non_null(strstr(v.title, "full in 1.9 min")); /* 122.4 GiB free at 1.07 GiB/s */
	assert_true(has_evidence(&v, "grew from 10.00 to 18.60 GiB in 8 s"));
	assert_true(has_line(v.fix, v.nfix, "loss.item()"));
	assert_true(has_line(v.fix, v.nfix, "_record_memory_history"));
	assert_true(has_line(v.fix, v.nfix, "memory_viz"));
	/* the same with the GPU busy: still the growth (an out-of-memory ends any job) */
	g->util = 0.98;
	g->act[GV_GPM_SM_ACTIVE] = 0.94;
	g->act[GV_GPM_TENSOR_ACTIVE] = 0.9;
	assert_string_equal(diag(&ev, &v), "job.memory-growth");
	/* one allocation (a step, not steady), a slow creep, or too little in all: not a growth */
	g->mem_steady = false;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	g->mem_steady = true;
	g->mem_growth = 0.5 * 1048576;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	g->mem_growth = 4 * 1048576; /* 32 MiB over 8 s */
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	/* the GPU's memory in use where the job's is unknown (another PID namespace) */
	g->mem_growth = 200 * 1048576.0;
	g->mem_growth_gpu = true;
	assert_string_equal(diag(&ev, &v), "job.memory-growth");
	assert_true(has_evidence(&v, "the memory in use on GPU 0 grew"));
	assert_non_null(strstr(v.title, "grows 200 MiB/s"));
}

/* Too few DataLoader workers: each busy most of the time but under a core (they also wait on
 * their queue), the GPU idle, cores idle (the H200: 2 workers at about 77% each, 14 idle cores,
 * read "waits for something else" before). */
static void test_few_workers(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	ev.gpus[0].util = 0.04;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.02;
	ev.cpu.main_thread = 0.12;
	ev.cpu.nprocs = 3;
	ev.cpu.workers = 2;
	ev.cpu.dataloader_workers = 2;
	ev.cpu.workers_busy = 0;
	ev.cpu.workers_cpu = 1.5;
	ev.cpu.workers_demand = 0.77;
	ev.cpu.idle_cores = 14.2;
	ev.cpu.cpus = 16;
	ev.cpu.quota_cores = NAN;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_non_null(strstr(v.title, "2 DataLoader workers are busy 77% of the time while 14 cores idle"));
	assert_true(has_evidence(&v, "each busy 77% of the time on average"));
	assert_true(has_evidence(&v, "idle cores the job could use: 14.2 of the 16 CPUs it may use"));
	assert_true(has_line(v.fix, v.nfix, "raise num_workers: 2 workers per GPU process now, up to about 16"));
	/* no idle core to give them: waiting for something else, not too few workers */
	ev.cpu.idle_cores = 0.4;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	/* workers mostly idle themselves: they wait too (storage), not too few */
	ev.cpu.idle_cores = 14.2;
	ev.cpu.workers_demand = 0.3;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	/* a quota: its rest is what counts */
	ev.cpu.workers_demand = 0.77;
	ev.cpu.idle_cores = 2;
	ev.cpu.quota_cores = 4;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_evidence(&v, "cgroup quota 4.0 cores"));
	/* saturated workers keep their own verdict */
	ev.cpu.workers_busy = 2;
	ev.cpu.workers_demand = 0.97;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.fix, v.nfix, "2 workers are saturated"));
}

static doctor_wait *add_wait(doctor_evidence *ev, bool of_gpu, unsigned pid, unsigned tid, wait_kind kind,
			     const char *call, const char *what, int count, int samples)
{
	doctor_wait *w = &ev->waits.w[ev->waits.n++];
	memset(w, 0, sizeof(*w));
	w->gpu_process = of_gpu;
	w->pid = pid;
	w->tid = tid;
	strcpy(w->comm, "python");
	w->kind = kind;
	strcpy(w->call, call);
	strcpy(w->what, what);
	w->count = count;
	w->samples = samples;
	return w;
}

/* An idle job names what it waits on (sampler/waits.h): a file, a socket, the workers' reads. */
static void test_idle_waits(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	ev.gpus[0].util = 0.02;
	ev.waits.sampled = true;
	add_wait(&ev, true, 4242, 4242, WAIT_FILE, "read", "/data/train/shard-00042.tar", 42, 50);
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_non_null(strstr(v.title, "it waits on reads from storage (/data/train/shard-00042.tar)"));
	assert_true(has_evidence(&v, "the main thread (pid 4242, python) was in read() on /data/train/shard-00042.tar in 84% "
				     "of the samples while the GPU idled (42 of 50)"));
	assert_true(has_line(v.fix, v.nfix, "local NVMe"));
	assert_true(has_line(v.fix, v.nfix, "py-spy dump --nonblocking --pid 4242"));

	/* a socket to another rank */
	base(&ev);
	ev.gpus[0].util = 0.02;
	add_wait(&ev, true, 4242, 4242, WAIT_SOCKET, "recvfrom", "a TCP socket to 10.0.0.5:29500", 48, 50);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "the network (a TCP socket to 10.0.0.5:29500)"));
	assert_true(has_line(v.fix, v.nfix, "its peer over the network (a TCP socket to 10.0.0.5:29500)"));
	/* a streaming dataset: the peer is an HTTPS server */
	base(&ev);
	ev.gpus[0].util = 0.02;
	doctor_wait *web = add_wait(&ev, true, 4242, 4242, WAIT_SOCKET, "recvfrom", "a TCP socket to 52.216.8.2:443", 48, 50);
	web->peer_port = 443;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "the network (a TCP socket to 52.216.8.2:443, an HTTPS server)"));
	assert_true(has_line(v.fix, v.nfix, "streaming=True"));
	assert_false(has_line(v.fix, v.nfix, "another rank in a collective"));

	/* the main thread polls its workers' pipes, the workers read files: the workers' reads are the cause */
	base(&ev);
	ev.gpus[0].util = 0.02;
	ev.cpu.workers = 4;
	add_wait(&ev, true, 4242, 4242, WAIT_POLL, "poll", "", 45, 50);
	doctor_wait *w = add_wait(&ev, false, 4250, 4250, WAIT_FILE, "read", "120 files under /data/train (the last shard-00042.tar)",
				  180, 200);
	w->workers = 4;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "reads from storage (120 files under /data/train"));
	assert_non_null(strstr(v.title, ") in its workers"));
	assert_true(has_evidence(&v, "the main threads of 4 workers were in read() on 120 files under /data/train"));
	assert_true(has_evidence(&v, "the main thread (pid 4242, python) was in poll() on several descriptors"));

	/* batches from a queue another thread fills, slowly (doctor4.sh's wait_queue on the H200): the
	 * main thread in a futex, the producer asleep; the title says whose the sleep is */
	{
		doctor_evidence q;
		doctor_verdict qv;
		base(&q);
		q.gpus[0].util = 0;
		q.waits.sampled = true;
		add_wait(&q, true, 4242, 4242, WAIT_LOCK, "futex", "", 8, 8);
		add_wait(&q, true, 4242, 4297, WAIT_SLEEP, "clock_nanosleep", "", 8, 8);
		diag(&q, &qv);
		assert_non_null(strstr(qv.title, "it waits on a sleep (time.sleep, a timer) in its thread 4297"));
	}
	/* py-spy: its frames, or how to get it; another user's job: why nothing is seen */
	ev.waits.py_tried = true;
	ev.waits.py.n = 2;
	strcpy(ev.waits.py.frames[0], "read (tarfile.py:530)");
	strcpy(ev.waits.py.frames[1], "__getitem__ (data.py:41)");
	diag(&ev, &v);
	assert_true(has_evidence(&v, "Python frames of the main thread (py-spy): read (tarfile.py:530) <- __getitem__ (data.py:41)"));
	ev.waits.py.n = 0;
	ev.waits.py.no_tool = true;
	diag(&ev, &v);
	assert_true(has_line(v.fix, v.nfix, "pip install py-spy"));
	base(&ev);
	ev.gpus[0].util = 0.02;
	ev.waits.denied = true;
	ev.waits.uid = 1234;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_non_null(strstr(v.title, "waits for something else"));
	assert_true(has_line(v.note, v.nnote, "runs as uid 1234"));
	/* a wait in a small share of the samples names nothing */
	base(&ev);
	ev.gpus[0].util = 0.02;
	add_wait(&ev, true, 4242, 4242, WAIT_SLEEP, "clock_nanosleep", "", 5, 50);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "waits for something else"));
	ev.waits.w[0].count = 47;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "a sleep"));
	assert_true(has_line(v.fix, v.nfix, "time.sleep"));
}

/* What an idle job waits for, where that says more than its wait's kind: a server's requests, a
 * prompt at its terminal, a notebook's next cell. */
static void test_idle_waits_for_work(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* a model server's event loop watches its listening socket */
	base(&ev);
	ev.gpus[0].util = 0.01;
	ev.waits.sampled = true;
	doctor_wait *w = add_wait(&ev, true, 4242, 4242, WAIT_POLL, "epoll_wait", "epoll on a TCP socket listening on port 8000", 50, 50);
	w->listen_port = 8000;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_non_null(strstr(v.title, "a server waiting for requests (it listens on TCP port 8000)"));
	assert_true(has_line(v.fix, v.nfix, "curl -v localhost:8000"));
	assert_false(has_line(v.fix, v.nfix, "slow storage"));
	/* the same port as a rank's rendezvous store is not a server's */
	ev.dist.known = true;
	ev.dist.hosts_store = true;
	ev.dist.store_port = 8000;
	ev.dist.store_clients = 2;
	ev.dist.world = 2;
	diag(&ev, &v);
	assert_null(strstr(v.title, "a server waiting"));
	/* a breakpoint() waiting at its terminal */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.waits.sampled = true;
	w = add_wait(&ev, true, 4242, 4242, WAIT_DEVICE, "read", "its terminal /dev/pts/3", 50, 50);
	strcpy(w->terminal, "/dev/pts/3");
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "waits for input at its terminal /dev/pts/3 (a prompt, pdb or breakpoint())"));
	assert_true(has_line(v.fix, v.nfix, "PYTHONBREAKPOINT=0"));
	/* a Jupyter kernel between cells: its event loop polls */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.waits.sampled = true;
	strcpy(ev.waits.interactive, "a Jupyter kernel");
	add_wait(&ev, true, 4242, 4242, WAIT_POLL, "epoll_wait", "epoll on anon_inode:[eventfd]", 50, 50);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "the job is a Jupyter kernel waiting for its next cell"));
	assert_true(has_line(v.fix, v.nfix, "Shut Down Kernel"));
	/* a cell that reads files is running: its wait is the cause, not the next cell */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.waits.sampled = true;
	strcpy(ev.waits.interactive, "a Jupyter kernel");
	add_wait(&ev, true, 4242, 4242, WAIT_FILE, "read", "/data/train/shard-00042.tar", 50, 50);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "reads from storage (/data/train/shard-00042.tar)"));
	/* a job in its first minute: its verdict may be its start-up */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.waits.sampled = true;
	ev.cpu.main_pid = 4242;
	ev.cpu.main_thread = 0.99;
	ev.cpu.main_cpu = 0.99;
	ev.cpu.main_age = 13;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_line(v.note, v.nnote, "the job started 13 s before the window ended: it may still be starting"));
	ev.cpu.main_age = 600;
	diag(&ev, &v);
	assert_false(has_line(v.note, v.nnote, "may still be starting"));
	ev.cpu.main_age = NAN;
	diag(&ev, &v);
	assert_false(has_line(v.note, v.nnote, "may still be starting"));
	/* an idle job names what it waits on: no such note */
	ev.cpu.main_thread = ev.cpu.main_cpu = 0.01;
	ev.cpu.main_age = 13;
	add_wait(&ev, true, 4242, 4242, WAIT_SLEEP, "clock_nanosleep", "", 50, 50);
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_false(has_line(v.note, v.nnote, "may still be starting"));
	/* an event loop with nothing known about it: its own fix, not storage's */
	base(&ev);
	ev.gpus[0].util = 0.0;
	ev.waits.sampled = true;
	add_wait(&ev, true, 4242, 4242, WAIT_POLL, "epoll_wait", "epoll on anon_inode:[eventfd]", 50, 50);
	diag(&ev, &v);
	assert_true(has_line(v.fix, v.nfix, "event loop"));
	assert_false(has_line(v.fix, v.nfix, "slow storage"));
}

/* A rank of a distributed job waiting for the others: the rendezvous, not "a sleep" (rank 0 of
 * init_process_group sleeps between its looks at the store: scripts/device/doctor4.sh on the H200,
 * 2026-12-04, read "it waits on a sleep (time.sleep, a timer)"). */
static void test_rendezvous(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	/* rank 0 hosts the store, launched by torchrun (the environment says the world size) */
	base(&ev);
	ev.gpus[0].util = 0;
	ev.waits.sampled = true;
	add_wait(&ev, true, 4242, 4242, WAIT_SLEEP, "clock_nanosleep", "", 8, 8);
	ev.dist.known = ev.dist.hosts_store = true;
	ev.dist.rank = 0;
	ev.dist.world = 4;
	ev.dist.master_port = ev.dist.store_port = 29500;
	strcpy(ev.dist.master, "10.0.0.5:29500");
	ev.dist.store_clients = 2;
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_non_null(strstr(v.title, "waits for its other ranks to join the rendezvous (2 of 4 connected to the store on port 29500)"));
	assert_true(has_evidence(&v, "a torch.distributed rank: RANK 0 of WORLD_SIZE 4, MASTER_ADDR:MASTER_PORT 10.0.0.5:29500; "
				     "it hosts the rendezvous store on port 29500, 2 connections accepted"));
	assert_true(has_line(v.fix, v.nfix, "start the missing ranks"));
	assert_false(has_line(v.fix, v.nfix, "time.sleep"));
	/* every rank joined: the sleep is the job's own again */
	ev.dist.store_clients = 4;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "it waits on a sleep"));
	assert_true(has_evidence(&v, "a torch.distributed rank"));
	/* init_process_group(init_method="tcp://...", world_size=2) in the script: no variables, only
	 * the store's thread and its one connection, its own */
	dist_rank_init(&ev.dist);
	ev.dist.known = ev.dist.hosts_store = true;
	ev.dist.store_port = 29611;
	ev.dist.store_clients = 1;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "(only it is connected to the store on port 29611)"));
	/* a job of one rank (WORLD_SIZE=1, as accelerate launches a single GPU) waits for no one:
	 * its sleep is its own */
	ev.dist.world = 1;
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "it waits on a sleep"));
	ev.dist.world = -1;
	/* a specific wait of the main thread stays the cause: a read from storage */
	ev.waits.w[0].kind = WAIT_FILE;
	strcpy(ev.waits.w[0].call, "read");
	strcpy(ev.waits.w[0].what, "/data/shard-1.tar");
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "reads from storage (/data/shard-1.tar)"));

	/* rank 1 that cannot reach the master: it retries its connection, sleeping between */
	base(&ev);
	ev.gpus[0].util = 0;
	ev.waits.sampled = true;
	add_wait(&ev, true, 4242, 4242, WAIT_SLEEP, "clock_nanosleep", "", 8, 8);
	ev.dist.known = true;
	ev.dist.rank = 1;
	ev.dist.world = 2;
	ev.dist.master_port = 29612;
	strcpy(ev.dist.master, "127.0.0.1:29612");
	assert_string_equal(diag(&ev, &v), "job.gpu-idle");
	assert_non_null(strstr(v.title, "rank 1 of 2 waits to reach the rendezvous store at 127.0.0.1:29612"));
	assert_true(has_line(v.fix, v.nfix, "nothing accepts at 127.0.0.1:29612 yet"));
	/* connected, and waiting on the store's socket: a barrier or another rank */
	ev.dist.to_master = true;
	ev.waits.w[0].kind = WAIT_SOCKET;
	strcpy(ev.waits.w[0].call, "recvfrom");
	strcpy(ev.waits.w[0].what, "a TCP socket to 127.0.0.1:29612");
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "waits on the rendezvous store at 127.0.0.1:29612 (a barrier or another rank)"));
	/* not a rank: a socket is the network */
	dist_rank_init(&ev.dist);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "the network (a TCP socket to 127.0.0.1:29612)"));
}

/* A window of two phases is judged as such, not by its means (the H200's healthy AMP job watched
 * in its first seconds: 51% busy read "mostly idle"). */
static void test_phase_change(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	ev.gpus[0].util = 0.51;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.48;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.24;
	ev.gpus[0].phase_t = 4;
	ev.gpus[0].busy_before = 0.01;
	ev.gpus[0].busy_after = 0.95;
	ev.gpus[0].mem_first = 0.6 * (1 << 30);
	ev.gpus[0].mem_last = 6.8 * (1 << 30);
	assert_string_equal(diag(&ev, &v), "job.phase-change");
	assert_int_equal(v.level, DOCTOR_INFO);
	assert_non_null(strstr(v.title, "GPU 0 went from idle to busy 4 s into the window: the job was starting"));
	assert_true(has_evidence(&v, "busy 1% of the time before, 95% after (SM active)"));
	assert_true(has_evidence(&v, "the job's memory on GPU 0 went from 0.6 to 6.8 GiB"));
	assert_true(has_line(v.fix, v.nfix, "gpuvet watch --pid 4242 --diagnose 10"));
	/* the other way, with what the threads wait on in the idle part */
	ev.gpus[0].busy_before = 0.97;
	ev.gpus[0].busy_after = 0.0;
	ev.waits.sampled = true;
	add_wait(&ev, true, 4242, 4242, WAIT_FILE, "write", "/ckpt/step-1000.pt", 4, 4);
	diag(&ev, &v);
	assert_non_null(strstr(v.title, "went from busy to idle 4 s into the window: an evaluation, a checkpoint"));
	assert_true(has_evidence(&v, "in write() on /ckpt/step-1000.pt"));
	/* the means busy enough: the busy verdict stands */
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.85;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.7;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	/* growth comes first */
	base(&ev);
	ev.gpus[0].phase_t = 4;
	ev.gpus[0].busy_before = 0.01;
	ev.gpus[0].busy_after = 0.95;
	ev.gpus[0].mem_growth = 1.0 * (1 << 30);
	ev.gpus[0].mem_steady = true;
	ev.gpus[0].t_first = 100;
	ev.gpus[0].t_last = 108;
	ev.gpus[0].mem_first = 10.0 * (1 << 30);
	ev.gpus[0].mem_last = 18.0 * (1 << 30);
	assert_string_equal(diag(&ev, &v), "job.memory-growth");
}

/* torch.compile's first steps: the GPU idles, the main thread traces, the compile workers and
 * their compilers are busy. Not input-bound: no data is loaded. */
static void test_compiling(void **st)
{
	(void)st;
	doctor_evidence ev;
	doctor_verdict v;
	base(&ev);
	ev.gpus[0].util = 0.02;
	ev.cpu.main_thread = 0.97;
	ev.cpu.main_cpu = 1.0;
	ev.cpu.compilers = 5;
	ev.cpu.compilers_cpu = 4.2;
	ev.cpu.compilers_demand = 0.98;
	assert_string_equal(diag(&ev, &v), "job.compiling");
	assert_int_equal(v.level, DOCTOR_INFO);
	assert_non_null(strstr(v.title, "GPU 0 waits while the job compiles kernels: 5 compiler processes use 4.2 cores"));
	assert_true(has_evidence(&v, "5 processes of the job compile kernels"));
	assert_true(has_line(v.fix, v.nfix, "TORCHINDUCTOR_CACHE_DIR"));
	/* one compiler (the H200's max-autotune warm-up: one compile worker at 1.7 cores) */
	ev.cpu.compilers = 1;
	ev.cpu.compilers_cpu = 1.7;
	assert_string_equal(diag(&ev, &v), "job.compiling");
	assert_non_null(strstr(v.title, "kernels: 1 compiler process uses 1.7 cores"));
	assert_true(has_evidence(&v, "1 process of the job compiles kernels"));
	ev.cpu.compilers = 5;
	ev.cpu.compilers_cpu = 4.2;
	/* the pool idle (0.1 cores, its busiest 4%) while the main thread makes batches: input-bound */
	ev.cpu.compilers_cpu = 0.1;
	ev.cpu.compilers_demand = 0.04;
	assert_string_equal(diag(&ev, &v), "job.input-bound");
	assert_true(has_evidence(&v, "5 processes of the job compile kernels"));
	/* a busy GPU is judged busy whatever compiles beside it */
	ev.cpu.compilers_cpu = 4.2;
	ev.cpu.compilers_demand = 0.98;
	ev.gpus[0].util = 0.98;
	ev.gpus[0].act[GV_GPM_SM_ACTIVE] = 0.95;
	ev.gpus[0].act[GV_GPM_TENSOR_ACTIVE] = 0.9;
	assert_string_equal(diag(&ev, &v), "job.tensor-bound");
	assert_true(wait_compile_process("cc1plus", NULL, 0) && wait_compile_process("ptxas", NULL, 0));
	static const char worker[] = "/usr/bin/python3\0/opt/venv/lib/python3.12/site-packages/torch/_inductor/compile_worker/"
				     "__main__.py\0--pickler=torch._inductor.compile_worker.subproc_pool.SubprocPickler\0";
	assert_true(wait_compile_process("python3", worker, sizeof(worker) - 1));
	assert_false(wait_compile_process("python3", "python3\0train.py\0", 17));
	assert_false(wait_compile_process("pt_data_worker", NULL, 0));
}

/* The launch-bound judgement is one for health and the doctor (health/conditions.h). */
static void test_launch_rule_shared(void **st)
{
	(void)st;
	const launch_limits *l = &LAUNCH_LIMITS_DEFAULT;
	assert_true(launch_tiny_kernels(0.25, 0.0, l));
	assert_false(launch_tiny_kernels(0.25, 0.12, l)); /* SM 48% of utilization */
	/* the H200's tiny_sync on a slower round: 14.2% against 0.01%, under the 15-point gap */
	assert_true(launch_tiny_kernels(0.142, 0.0001, l));
	assert_true(launch_tiny_kernels(0.10, 0.0, l));
	assert_false(launch_tiny_kernels(0.10, 0.02, l)); /* SM 20% of utilization, 8 points apart */
	/* CPU-fed training: few kernels, but real ones (the H200: 4.2% against 3.1%; 12% against 9%) */
	assert_false(launch_tiny_kernels(0.042, 0.031, l));
	assert_false(launch_tiny_kernels(0.12, 0.09, l));
	assert_false(launch_tiny_kernels(0.03, 0.0, l)); /* a stray kernel now and then */
	assert_false(launch_tiny_kernels(NAN, 0.0, l));
	assert_false(launch_tiny_kernels(0.25, NAN, l));
	doctor_thresholds t;
	doctor_thresholds_default(&t);
	assert_true(t.launch.gap == LAUNCH_GAP && t.launch.sm_share == LAUNCH_SM_SHARE &&
		    t.launch.util_min == LAUNCH_UTIL_MIN && t.launch.sm_trace == LAUNCH_SM_TRACE);
	assert_true(gpu_busy(0.2, 0.9) == 0.2 && gpu_busy(NAN, 0.9) == 0.9 && isnan(gpu_busy(NAN, NAN)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpu_bound_classes),
		cmocka_unit_test(test_host_side_classes),
		cmocka_unit_test(test_memory_and_gpus),
		cmocka_unit_test(test_power_thermal),
		cmocka_unit_test(test_thresholds_move_the_verdict),
		cmocka_unit_test(test_clocks_rule),
		cmocka_unit_test(test_tune_gain),
		cmocka_unit_test(test_memory_growth),
		cmocka_unit_test(test_few_workers),
		cmocka_unit_test(test_idle_waits),
		cmocka_unit_test(test_idle_waits_for_work),
		cmocka_unit_test(test_rendezvous),
		cmocka_unit_test(test_phase_change),
		cmocka_unit_test(test_compiling),
		cmocka_unit_test(test_launch_rule_shared),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
