/* The job doctor's verdict: pure, from evidence (doctor.h; the classes in docs/watch.md). */
#include "doctor/doctor.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "health/conditions.h"

void doctor_thresholds_default(doctor_thresholds *t)
{
	/* from the H200 table of docs/watch.md: a bf16 GEMM loop shows SM 93-95%, tensor 90-92%;
	 * a device copy loop SM 96%, DRAM 86%; ResNet-50 in fp32 SM 89%, tensor 0.3%, FP32 27%;
	 * CPU-fed training SM 9-11% at 12-28% utilization; tiny kernels with a sync each step SM
	 * 0% at 25% utilization */
	t->busy = 0.80;
	t->idle = 0.50;
	t->tensor_bound = 0.50;
	t->tensor_idle = 0.05;
	t->dram_bound = 0.50;
	t->fp32_busy = 0.15;
	t->fp64_bound = 0.30;
	t->busy_thread = 0.85;
	t->launch_gap = 0.15;
	t->launch_sm = 0.25;
	t->mem_full = MEMORY_FULL_RATIO; /* as check's gpu.memory-held */
	t->other_mem = 0.10;
	t->other_sm = 0.20;
	t->imbalance_low = 0.20;
	t->pcie_rx_high = 1e9;
	t->pcie_tx_sync = 0.5e9;
	t->slowdown_frac = 0.10;
	t->limit_lowered = 0.95;
}

const char *doctor_level_name(doctor_level l)
{
	switch (l) {
	case DOCTOR_OK: return "ok";
	case DOCTOR_INFO: return "info";
	case DOCTOR_WARN: return "warn";
	}
	return "unknown";
}

/* One more line of a verdict's evidence, fixes or notes (rows of width bytes, *n used, at most
 * DOCTOR_MAX_LINES: the rest is dropped). */
static void line(char *rows, size_t width, size_t *n, const char *fmt, ...) GV_PRINTF(4, 5);
static void line(char *rows, size_t width, size_t *n, const char *fmt, ...)
{
	if (*n >= DOCTOR_MAX_LINES)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(rows + *n * width, width, fmt, ap);
	va_end(ap);
	(*n)++;
}

#define LINE_OF(v, rows, n, ...) line((v)->rows[0], sizeof((v)->rows[0]), &(v)->n, __VA_ARGS__)
#define EVID(v, ...) LINE_OF(v, evidence, nevidence, __VA_ARGS__)
#define FIX(v, ...) LINE_OF(v, fix, nfix, __VA_ARGS__)
#define NOTE(v, ...) LINE_OF(v, note, nnote, __VA_ARGS__)

static void verdict(doctor_verdict *v, const char *id, doctor_level level, int gpu, const char *fmt, ...) GV_PRINTF(5, 6);
static void verdict(doctor_verdict *v, const char *id, doctor_level level, int gpu, const char *fmt, ...)
{
	v->id = id;
	v->level = level;
	v->gpu = gpu;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->title, sizeof(v->title), fmt, ap);
	va_end(ap);
}

static bool known(double x)
{
	return !isnan(x);
}

static double act(const doctor_gpu *g, int k)
{
	return g->gpm ? g->act[k] : NAN;
}

/* How busy the GPU is: SM active with GPM, NVML utilization without. */
static double busy_of(const doctor_gpu *g)
{
	double sm = act(g, GV_GPM_SM_ACTIVE);
	return known(sm) ? sm : g->util;
}

static double pct(double r)
{
	return r * 100;
}

static void gpu_figures(doctor_verdict *v, const doctor_gpu *g)
{
	char buf[200];
	size_t len = 0;
	len += (size_t)snprintf(buf + len, sizeof(buf) - len, "GPU %d: utilization %s", g->index,
				known(g->util) ? "" : "n/a");
	if (known(g->util))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%.0f%%", pct(g->util));
	if (g->gpm) {
		static const int show[] = {GV_GPM_SM_ACTIVE, GV_GPM_TENSOR_ACTIVE, GV_GPM_DRAM_ACTIVE, GV_GPM_FP32_ACTIVE,
					   GV_GPM_FP64_ACTIVE, GV_GPM_TENSOR_DFMA, GV_GPM_FP16_ACTIVE};
		static const char *const label[] = {"SM active", "tensor", "DRAM", "FP32 pipe", "FP64 pipe", "FP64 tensor (DFMA)",
						    "FP16 pipe"};
		for (size_t k = 0; k < GV_ARRAY_LEN(show) && len < sizeof(buf) - 24; k++) {
			double x = g->act[show[k]];
			if (known(x) && (k < 4 || x >= 0.01))
				len += (size_t)snprintf(buf + len, sizeof(buf) - len, ", %s %.1f%%", label[k], pct(x));
		}
	} else if (len < sizeof(buf) - 40) {
		snprintf(buf + len, sizeof(buf) - len, " (no GPM counters on this GPU)");
	}
	EVID(v, "%s", buf);
}

static void cpu_figures(doctor_verdict *v, const doctor_cpu *c)
{
	if (c->main_pid)
		EVID(v, "busiest thread of the GPU process: %.0f%% of a core (pid %u, tid %u); the process uses %.1f cores",
		     pct(c->main_thread), c->main_pid, c->main_tid, c->main_cpu);
	if (c->workers)
		EVID(v, "%d other process%s of the job (DataLoader workers): %.1f cores together, %d saturated",
		     c->workers, c->workers == 1 ? "" : "es", c->workers_cpu, c->workers_busy);
	else
		EVID(v, "no worker processes: the data is prepared in the GPU process itself");
}

/* Notes that hold beside any verdict: power cap at full load, memory. */
static void common_notes(doctor_verdict *v, const doctor_evidence *ev, const doctor_thresholds *t)
{
	for (int i = 0; i < ev->ngpus; i++) {
		const doctor_gpu *g = &ev->gpus[i];
		if (g->by_fd)
			NOTE(v, "GPU %d: NVML's process list does not name the job (another PID namespace?): the GPU was "
				"found from the device file the job holds open; its memory share is unknown",
			     g->index);
		if (g->power_cap_frac >= 0.5 && busy_of(g) >= t->busy)
			NOTE(v, "GPU %d runs at its power limit (%.0f of %.0f W) under full load: expected, not degraded",
			     g->index, g->power, g->power_limit);
		if (known(g->other_sm) && g->other_sm >= t->other_sm)
			NOTE(v, "GPU %d: other processes take %.0f%% of its SM time, the job %.0f%%: they compete with the job",
			     g->index, pct(g->other_sm), pct(known(g->job_sm) ? g->job_sm : 0));
		if (known(g->other_mem) && known(g->mem_total) && g->mem_total > 0 &&
		    g->other_mem >= t->other_mem * g->mem_total)
			NOTE(v, "GPU %d: other processes hold %.1f GiB (%.0f%%) of its memory", g->index,
			     g->other_mem / 1073741824.0, pct(g->other_mem / g->mem_total));
	}
}

static bool memory_pressure(const doctor_gpu *g, const doctor_thresholds *t)
{
	if (!known(g->mem_total) || g->mem_total <= 0)
		return false;
	return (known(g->job_mem) && g->job_mem >= t->mem_full * g->mem_total) ||
	       (known(g->mem_used) && g->mem_used >= t->mem_full * g->mem_total) ||
	       (known(g->other_mem) && g->other_mem >= t->other_mem * g->mem_total);
}

static void diagnose_degraded(doctor_verdict *v, const doctor_evidence *ev, const doctor_thresholds *t)
{
	for (int i = 0; i < ev->ngpus && !v->id; i++) {
		const doctor_gpu *g = &ev->gpus[i];
		bool thermal = g->thermal_frac >= t->slowdown_frac, hw = g->hw_slowdown_frac >= t->slowdown_frac;
		bool lowered = known(g->power_limit) && known(g->power_default_limit) && g->power_default_limit > 0 &&
			       g->power_limit < t->limit_lowered * g->power_default_limit;
		if (!thermal && !hw && !lowered)
			continue;
		if (thermal || hw) {
			verdict(v, "job.gpu-slowdown", DOCTOR_WARN, g->index, "GPU %d slows itself down (%s)", g->index,
				hw ? "hardware slowdown" : "thermal slowdown");
			EVID(v, "GPU %d: thermal slowdown in %.0f%% of the samples, hardware slowdown in %.0f%%, up to %.0f C",
			     g->index, pct(g->thermal_frac), pct(g->hw_slowdown_frac), g->temp_max);
			FIX(v, "thermal: check airflow, fans and the inlet temperature; nvidia-smi -q -d TEMPERATURE,PERFORMANCE");
			if (hw)
				FIX(v, "hardware slowdown: check power cables and supplies; drain the node if it persists");
		} else {
			verdict(v, "job.power-limit-lowered", DOCTOR_WARN, g->index,
				"GPU %d's power limit is set below its default", g->index);
			EVID(v, "GPU %d: enforced power limit %.0f W, the board's default %.0f W", g->index, g->power_limit,
			     g->power_default_limit);
			FIX(v, "restore the default limit (admin): nvidia-smi -i %d -pl %.0f", g->index, g->power_default_limit);
		}
		gpu_figures(v, g);
	}
}

static void diagnose_imbalance(doctor_verdict *v, const doctor_evidence *ev, const doctor_thresholds *t)
{
	if (ev->ngpus < 2)
		return;
	int hi = -1, lo = -1;
	for (int i = 0; i < ev->ngpus; i++) {
		double b = busy_of(&ev->gpus[i]);
		if (!known(b))
			continue;
		if (hi < 0 || b > busy_of(&ev->gpus[hi]))
			hi = i;
		if (lo < 0 || b < busy_of(&ev->gpus[lo]))
			lo = i;
	}
	if (hi >= 0 && lo >= 0 && busy_of(&ev->gpus[hi]) >= t->idle && busy_of(&ev->gpus[lo]) < t->imbalance_low) {
		verdict(v, "job.multi-gpu-imbalance", DOCTOR_WARN, ev->gpus[lo].index,
			"GPU %d of the job idles while GPU %d works", ev->gpus[lo].index, ev->gpus[hi].index);
		gpu_figures(v, &ev->gpus[hi]);
		gpu_figures(v, &ev->gpus[lo]);
		FIX(v, "check that every rank uses its own GPU (torch.cuda.set_device(local_rank) before any CUDA call) "
		       "and that the data is sharded evenly (DistributedSampler)");
		FIX(v, "a rank that waits in a collective for a slower one: compare the ranks' step times");
		return;
	}
	/* every rank also opened a context on the first GPU: torch.cuda calls before set_device */
	const doctor_gpu *first = &ev->gpus[0];
	if (first->job_procs >= 2 && ev->cpu.gpu_procs >= 2 && first->job_procs >= ev->cpu.gpu_procs) {
		verdict(v, "job.multi-gpu-imbalance", DOCTOR_WARN, first->index,
			"every process of the job holds GPU %d, not only its own GPU", first->index);
		EVID(v, "GPU %d holds %d of the job's processes (%d processes hold GPUs)", first->index, first->job_procs,
		     ev->cpu.gpu_procs);
		if (known(first->job_mem))
			EVID(v, "the job's memory on GPU %d: %.1f GiB", first->index, first->job_mem / 1073741824.0);
		FIX(v, "call torch.cuda.set_device(local_rank) (or set CUDA_VISIBLE_DEVICES per rank) before the first "
		       "CUDA call; map_location in torch.load");
	}
}

/* fp32 math on a tensor-core GPU: the FP32 pipe carries the work while the tensor cores idle.
 * Whether the SMs are busy or only half so, AMP or TF32 is the change that pays (the issue's
 * ResNet-50 in fp32 read SM 77-89%, FP32 pipe 23-27%, tensor 0.3%). */
static bool fp32_math(const doctor_gpu *g, const doctor_thresholds *t)
{
	double tensor = act(g, GV_GPM_TENSOR_ACTIVE), fp32 = act(g, GV_GPM_FP32_ACTIVE);
	return g->gpm && known(fp32) && fp32 >= t->fp32_busy && known(tensor) && tensor < t->tensor_idle && g->cc >= 8.0;
}

static void fp32_math_verdict(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g)
{
	verdict(v, "job.fp32-math", DOCTOR_WARN, g->index, "fp32 math on a tensor-core GPU: the tensor cores of GPU %d are idle",
		g->index);
	gpu_figures(v, g);
	if (known(ev->tune_tf32_gain))
		FIX(v, "enable AMP (torch.autocast(\"cuda\", dtype=torch.bfloat16)) or TF32 "
		       "(torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True): "
		       "%.1fx measured on this GPU class (%s)",
		    ev->tune_tf32_gain, ev->tune_source[0] ? ev->tune_source : "gpuvet tune");
	else
		FIX(v, "enable AMP (torch.autocast(\"cuda\", dtype=torch.bfloat16)) or TF32 "
		       "(torch.set_float32_matmul_precision(\"high\")); `gpuvet tune` measures the gain on this GPU");
}

static void diagnose_busy(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g,
			  const doctor_thresholds *t)
{
	(void)ev;
	double tensor = act(g, GV_GPM_TENSOR_ACTIVE), dram = act(g, GV_GPM_DRAM_ACTIVE);
	double fp32 = act(g, GV_GPM_FP32_ACTIVE), fp64 = act(g, GV_GPM_FP64_ACTIVE), dfma = act(g, GV_GPM_TENSOR_DFMA);
	if (!g->gpm) {
		verdict(v, "job.gpu-bound", DOCTOR_OK, g->index, "GPU-bound: GPU %d is busy %.0f%% of the time",
			g->index, pct(g->util));
		gpu_figures(v, g);
		NOTE(v, "without GPM counters (this GPU or driver has none) gpuvet cannot tell which pipe is the limit");
		FIX(v, "to go faster, make the GPU do less: mixed precision (torch.autocast), larger batches, fused kernels; "
		       "`gpuvet tune` measures what each gives");
		return;
	}
	/* FP64 first: on Hopper a float64 matmul runs on the tensor cores (DMMA), so its "any tensor"
	 * activity is as high as a bf16 GEMM's, and tensor-bound's advice (lower precision) would
	 * hide the real question, whether double precision is meant */
	if ((known(fp64) && fp64 >= t->fp64_bound) || (known(dfma) && dfma >= t->fp64_bound)) {
		verdict(v, "job.fp64-bound", DOCTOR_OK, g->index, "GPU-bound on FP64 math (GPU %d)", g->index);
		gpu_figures(v, g);
		FIX(v, "double precision: check that it is meant (torch.get_default_dtype(), numpy float64 inputs)");
	} else if (known(tensor) && tensor >= t->tensor_bound) {
		verdict(v, "job.tensor-bound", DOCTOR_OK, g->index, "GPU-bound on the tensor cores (GPU %d)", g->index);
		gpu_figures(v, g);
		FIX(v, "the GPU runs at its matrix peak: a faster step needs less math (smaller model, lower precision "
		       "such as fp8) or more GPUs");
	} else if (known(dram) && dram >= t->dram_bound) {
		verdict(v, "job.dram-bound", DOCTOR_OK, g->index, "GPU-bound on memory bandwidth (GPU %d)", g->index);
		gpu_figures(v, g);
		FIX(v, "fewer passes over memory: fused kernels (torch.compile), lower precision tensors (bf16), "
		       "channels_last for convolutions");
	} else if (fp32_math(g, t)) {
		fp32_math_verdict(v, ev, g);
	} else if (known(fp32) && fp32 >= t->fp32_busy) {
		verdict(v, "job.fp32-bound", DOCTOR_OK, g->index, "GPU-bound on FP32 math (GPU %d)", g->index);
		gpu_figures(v, g);
		FIX(v, "this GPU has no tensor cores for fp32; mixed precision (fp16) halves the work where it has them");
	} else {
		verdict(v, "job.gpu-bound", DOCTOR_OK, g->index,
			"GPU-bound: the SMs of GPU %d are busy, no pipe dominates (latency-bound kernels)", g->index);
		gpu_figures(v, g);
		FIX(v, "larger batches or fused kernels (torch.compile) raise the work per kernel; a profiler "
		       "(nsys, torch.profiler) names the hot kernels");
	}
}

static void diagnose_waiting(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g,
			     const doctor_thresholds *t)
{
	const doctor_cpu *c = &ev->cpu;
	double sm = act(g, GV_GPM_SM_ACTIVE), b = busy_of(g);
	bool host_busy = c->main_pid && c->main_thread >= t->busy_thread;
	int half = (c->workers + 1) / 2;
	bool workers_sat = c->workers > 0 && c->workers_busy >= (half > 0 ? half : 1);
	double rx = act(g, GV_GPM_PCIE_RX);
	/* kernels run (utilization counts any kernel) but occupy almost no SM: many tiny kernels,
	 * each waited for by the host. Not when the host is busy copying to the GPU: a pageable
	 * copy keeps the host thread at 100% and the kernels waiting for it look the same (H200,
	 * 256 MiB pageable copies a step: utilization 16%, SM active 0.0%, 8.0 GB/s to the GPU) */
	bool copying = known(rx) && rx >= t->pcie_rx_high;
	/* the other direction: a large result copied off each step (.cpu(), .numpy()) is a sync that
	 * waits for the GPU, then a copy through pageable memory; the SMs idle, the host thread at
	 * 100% (H200, 256 MiB .cpu() a step: utilization 5%, SM active 0.1%, 1.25 GB/s from the GPU;
	 * it read input-bound, and its fixes were for loading data) */
	double tx = act(g, GV_GPM_PCIE_TX);
	if (host_busy && known(b) && b < t->idle && known(tx) && tx >= t->pcie_tx_sync && !copying &&
	    (!known(rx) || tx > rx)) {
		verdict(v, "job.launch-bound", DOCTOR_WARN, g->index,
			"sync-bound: the host copies results off GPU %d each step and waits for them", g->index);
		gpu_figures(v, g);
		EVID(v, "device-to-host PCIe traffic %.2f GB/s, to the GPU %.2f GB/s", tx / 1e9, known(rx) ? rx / 1e9 : 0);
		cpu_figures(v, c);
		FIX(v, "keep results on the GPU: fewer .cpu(), .numpy(), .tolist() of large tensors in the step (reduce "
		       "on the GPU, log every N steps)");
		FIX(v, "where a copy must happen, into a pinned buffer with non_blocking=True (torch.empty(..., "
		       "pin_memory=True); buf.copy_(t, non_blocking=True)) so it overlaps the next step");
		return;
	}
	if (known(sm) && known(g->util) && g->util - sm >= t->launch_gap && sm < t->launch_sm * g->util && host_busy &&
	    !copying) {
		verdict(v, "job.launch-bound", DOCTOR_WARN, g->index,
			"launch/sync-bound: GPU %d runs tiny kernels and waits for the host between them", g->index);
		gpu_figures(v, g);
		EVID(v, "utilization %.0f%% against SM active %.1f%%: kernels are launched, but they fill almost no SM",
		     pct(g->util), pct(sm));
		cpu_figures(v, c);
		FIX(v, "fewer host syncs: drop .item(), .cpu(), print(tensor) and torch.cuda.synchronize() from the step "
		       "(log every N steps)");
		FIX(v, "fewer, larger kernels: CUDA graphs (torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")), "
		       "larger batches");
		return;
	}
	if (known(b) && b < t->idle && (host_busy || workers_sat)) {
		verdict(v, "job.input-bound", DOCTOR_WARN, g->index,
			"input-bound: GPU %d waits for data while the job's CPU side is saturated", g->index);
		gpu_figures(v, g);
		cpu_figures(v, c);
		if (known(rx))
			EVID(v, "host-to-device PCIe traffic %.2f GB/s", rx / 1e9);
		if (c->workers == 0)
			FIX(v, "load the data in worker processes: DataLoader(num_workers=N) with N up to the free cores, "
			       "persistent_workers=True");
		else if (workers_sat)
			FIX(v, "the %d workers are saturated: more workers (num_workers), cheaper transforms, or decode "
			       "on the GPU (DALI, torchvision.io.decode_jpeg on cuda)", c->workers);
		else
			FIX(v, "the GPU process itself is saturated: move preprocessing into the DataLoader workers");
		FIX(v, "pin_memory=True and .to(device, non_blocking=True) for the batches; prefetch_factor 2-4");
		if (known(rx) && rx >= t->pcie_rx_high)
			NOTE(v, "heavy host-to-device copies (%.1f GB/s): pageable memory halves their speed, pin it", rx / 1e9);
		if (!g->gpm)
			NOTE(v, "without GPM counters a launch/sync-bound job (tiny kernels, .item() each step) looks the same: "
				"if the data is already on the GPU, see the CUDA graphs fix");
		return;
	}
	/* half-busy SMs doing fp32 on idle tensor cores: AMP/TF32 first (a busy main thread there is
	 * the host keeping up with the GPU, not the GPU waiting for it) */
	if (known(b) && b >= t->idle && fp32_math(g, t)) {
		fp32_math_verdict(v, ev, g);
		cpu_figures(v, c);
		return;
	}
	if (memory_pressure(g, t)) {
		verdict(v, "job.memory-pressure", DOCTOR_WARN, g->index, "memory pressure on GPU %d", g->index);
		gpu_figures(v, g);
		if (known(g->job_mem))
			EVID(v, "the job holds %.1f GiB of %.1f GiB (%.0f%%)", g->job_mem / 1073741824.0,
			     g->mem_total / 1073741824.0, pct(g->job_mem / g->mem_total));
		if (known(g->mem_used))
			EVID(v, "in use on the GPU: %.1f GiB (%.0f%%)", g->mem_used / 1073741824.0, pct(g->mem_used / g->mem_total));
		if (known(g->other_mem) && g->other_mem > 0)
			EVID(v, "other processes on GPU %d hold %.1f GiB (%d process%s)", g->index, g->other_mem / 1073741824.0,
			     g->other_procs, g->other_procs == 1 ? "" : "es");
		FIX(v, "near the limit the allocator frees and retries (slow steps) and the next peak is an out-of-memory: "
		       "smaller batches with gradient accumulation, activation checkpointing, "
		       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
		if (known(g->other_mem) && g->other_mem >= t->other_mem * g->mem_total)
			FIX(v, "other processes share the GPU: stop them or move the job (gpuvet watch lists them)");
		return;
	}
	if (known(b) && b < t->idle) {
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is mostly idle and the job's CPU side is not saturated: it waits for something else", g->index);
		gpu_figures(v, g);
		cpu_figures(v, c);
		FIX(v, "see where the process waits: py-spy dump --pid %u (storage and network reads, locks, other ranks, "
		       "sleep)", c->main_pid ? c->main_pid : ev->pid);
		FIX(v, "reading data from slow storage: copy it to local disk or RAM, more DataLoader workers hide latency");
		return;
	}
	verdict(v, "job.mixed", DOCTOR_INFO, g->index,
		"GPU %d is busy part of the time (%.0f%%): no single cause dominates", g->index, pct(b));
	gpu_figures(v, g);
	cpu_figures(v, c);
	FIX(v, "profile a few steps (torch.profiler, nsys) to see the gaps between kernels");
}

void doctor_diagnose(const doctor_evidence *ev, const doctor_thresholds *tin, doctor_verdict *v)
{
	doctor_thresholds t;
	if (tin)
		t = *tin;
	else
		doctor_thresholds_default(&t);
	memset(v, 0, sizeof(*v));
	v->gpu = -1;
	if (!ev->alive && ev->ngpus == 0) {
		verdict(v, "job.not-running", DOCTOR_WARN, -1, "process %u is not running", ev->pid);
		FIX(v, "give the pid of a running training process (pgrep -f train.py)");
		return;
	}
	if (ev->ngpus == 0) {
		verdict(v, "job.no-gpu", DOCTOR_WARN, -1, "process %u and its descendants hold no GPU", ev->pid);
		if (ev->cpu.main_pid || ev->cpu.workers)
			cpu_figures(v, &ev->cpu);
		FIX(v, "the job runs on the CPU: check torch.cuda.is_available(), CUDA_VISIBLE_DEVICES and that the model "
		       "and batches are moved with .to(\"cuda\"); `gpuvet check` says why CUDA is unavailable");
		return;
	}
	diagnose_degraded(v, ev, &t);
	if (!v->id)
		diagnose_imbalance(v, ev, &t);
	if (!v->id) {
		/* the busiest of the job's GPUs speaks for the job */
		const doctor_gpu *g = &ev->gpus[0];
		for (int i = 1; i < ev->ngpus; i++)
			if (known(busy_of(&ev->gpus[i])) && (!known(busy_of(g)) || busy_of(&ev->gpus[i]) > busy_of(g)))
				g = &ev->gpus[i];
		double b = busy_of(g);
		if (known(b) && b >= t.busy)
			diagnose_busy(v, ev, g, &t);
		else
			diagnose_waiting(v, ev, g, &t);
		if (strcmp(v->id, "job.memory-pressure") != 0 && memory_pressure(g, &t) && known(g->job_mem))
			NOTE(v, "the job holds %.0f%% of GPU %d's memory", pct(g->job_mem / g->mem_total), g->index);
	}
	common_notes(v, ev, &t);
}
