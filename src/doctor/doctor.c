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
	 * 0% at 14-25% utilization */
	t->busy = 0.80;
	t->idle = DOCTOR_IDLE_BUSY;
	t->tensor_bound = 0.50;
	t->tensor_idle = 0.05;
	t->dram_bound = 0.50;
	t->fp32_busy = 0.15;
	t->fp64_bound = 0.30;
	t->busy_thread = 0.85;
	t->launch = LAUNCH_LIMITS_DEFAULT; /* one rule with watch's gpu.launch-bound (health/conditions.h) */
	t->mem_full = MEMORY_FULL_RATIO; /* as check's gpu.memory-held */
	t->other_mem = 0.10;
	t->other_sm = 0.20;
	t->imbalance_low = 0.20;
	t->pcie_rx_high = 1e9;
	t->pcie_tx_sync = 0.5e9;
	t->slowdown_frac = 0.10;
	t->limit_lowered = 0.95;
	/* the H200's job with 2 DataLoader workers at about 77% each (each also waits on its queue)
	 * and 14 idle cores read "waits for something else" */
	t->workers_busy = 0.60;
	/* compilers at work: a pool of idle compile workers waits on its queue, next to 0 */
	t->compile_busy = 0.5;
	/* a Python loop holds one core (the GIL); a model on the CPU or torch ops on CPU tensors run on
	 * torch.get_num_threads() threads. Two: a thread spinning in a CUDA synchronize beside NCCL's
	 * proxy thread in a collective */
	t->cpu_threads = 3;
	t->cpu_cores = 2.5;
	/* a job keeping every step's output grew about 1 GiB/s; an allocator's steps and a new batch
	 * shape are single steps, which the steadiness test (sampler/summary.h) leaves out */
	t->mem_growth_rate = 1048576.0;
	t->mem_growth_bytes = 64 * 1048576.0;
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
 * DOCTOR_MAX_LINES: the rest is dropped); *cut when it did not fit. */
static void line(char *rows, size_t width, size_t *n, bool *cut, const char *fmt, ...) GV_PRINTF(5, 6);
static void line(char *rows, size_t width, size_t *n, bool *cut, const char *fmt, ...)
{
	if (*n >= DOCTOR_MAX_LINES) {
		*cut = true;
		return;
	}
	va_list ap;
	va_start(ap, fmt);
	if (vsnprintf(rows + *n * width, width, fmt, ap) >= (int)width)
		*cut = true;
	va_end(ap);
	(*n)++;
}

#define LINE_OF(v, rows, n, ...) line((v)->rows[0], sizeof((v)->rows[0]), &(v)->n, &(v)->cut, __VA_ARGS__)
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
	if (vsnprintf(v->title, sizeof(v->title), fmt, ap) >= (int)sizeof(v->title))
		v->cut = true;
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

/* How busy the GPU is: SM active with GPM, NVML utilization without (health/conditions.h). */
static double busy_of(const doctor_gpu *g)
{
	return gpu_busy(act(g, GV_GPM_SM_ACTIVE), g->util);
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
	if (c->workers && known(c->workers_demand))
		EVID(v, "%d other process%s of the job (DataLoader workers): %.1f cores together, each busy %.0f%% of the "
			"time on average, %d saturated",
		     c->workers, c->workers == 1 ? "" : "es", c->workers_cpu, pct(c->workers_demand), c->workers_busy);
	else if (c->workers)
		EVID(v, "%d other process%s of the job (DataLoader workers): %.1f cores together, %d saturated",
		     c->workers, c->workers == 1 ? "" : "es", c->workers_cpu, c->workers_busy);
	else
		EVID(v, "no worker processes: the data is prepared in the GPU process itself");
	if (c->compilers)
		EVID(v, "%d process%s of the job compile%s kernels (a compiler, ptxas, Inductor's compile workers): %.1f cores",
		     c->compilers, c->compilers == 1 ? "" : "es", c->compilers == 1 ? "s" : "", c->compilers_cpu);
	if (known(c->idle_cores)) {
		char lim[96] = "";
		if (c->cpus && known(c->quota_cores))
			snprintf(lim, sizeof(lim), " of the %d CPUs it may use (cgroup quota %.1f cores)", c->cpus, c->quota_cores);
		else if (c->cpus)
			snprintf(lim, sizeof(lim), " of the %d CPUs it may use", c->cpus);
		else if (known(c->quota_cores))
			snprintf(lim, sizeof(lim), " (cgroup quota %.1f cores)", c->quota_cores);
		EVID(v, "idle cores the job could use: %.1f%s", c->idle_cores, lim);
	}
}

static double gib(double bytes)
{
	return bytes / 1073741824.0;
}

/* "1.07 GiB/s", "35 MiB/s" */
static const char *rate_text(char *buf, size_t n, double bytes_per_s)
{
	if (bytes_per_s >= 1073741824.0)
		snprintf(buf, n, "%.2f GiB/s", gib(bytes_per_s));
	else
		snprintf(buf, n, "%.0f MiB/s", bytes_per_s / 1048576.0);
	return buf;
}

/* "45 s", "1.9 min", "3.2 h" */
static const char *duration_text(char *buf, size_t n, double s)
{
	if (s < 90)
		snprintf(buf, n, "%.0f s", s);
	else if (s < 5400)
		snprintf(buf, n, "%.1f min", s / 60);
	else
		snprintf(buf, n, "%.1f h", s / 3600);
	return buf;
}

/* Notes that hold beside any verdict: power cap at full load, memory. */
/* A job watched in its first minute may still be starting: torch.compile traces and compiles in
 * its main thread (no compiler process to see: the H100's max-autotune MLP read input-bound 5 s
 * after its start), cuDNN's benchmark mode, a DataLoader's first batches. */
#define DOCTOR_YOUNG_SECONDS 60.0

static void common_notes(doctor_verdict *v, const doctor_evidence *ev, const doctor_thresholds *t)
{
	/* the busy host's verdicts (an idle job's names what it waits on instead) */
	static const char *const startup_like[] = {"job.input-bound", "job.launch-bound", "job.mixed", "job.cpu-compute"};
	double age = ev->cpu.main_age;
	for (size_t i = 0; known(age) && age < DOCTOR_YOUNG_SECONDS && v->id && i < GV_ARRAY_LEN(startup_like); i++)
		if (strcmp(v->id, startup_like[i]) == 0)
			NOTE(v, "the job started %.0f s before the window ended: it may still be starting (torch.compile "
				"tracing and compiling in its main thread, cuDNN's benchmark, the first batches); judge it "
				"again after its first minute",
			     age);
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

/* The GPU whose memory grows fastest, steadily (higher in each quarter of the window) and by
 * enough; NULL when none. */
static const doctor_gpu *growing_gpu(const doctor_evidence *ev, const doctor_thresholds *t)
{
	const doctor_gpu *best = NULL;
	for (int i = 0; i < ev->ngpus; i++) {
		const doctor_gpu *g = &ev->gpus[i];
		double span = g->t_last - g->t_first;
		if (!known(g->mem_growth) || !g->mem_steady || g->mem_growth < t->mem_growth_rate ||
		    !(g->mem_growth * span >= t->mem_growth_bytes))
			continue;
		if (!best || g->mem_growth > best->mem_growth)
			best = g;
	}
	return best;
}

static void diagnose_growth(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g)
{
	char rate[32], when[32];
	rate_text(rate, sizeof(rate), g->mem_growth);
	double used = known(g->mem_last) ? g->mem_last : g->mem_used;
	double in_use = known(g->mem_used) && g->mem_used > used ? g->mem_used : used;
	double free_b = known(g->mem_total) && known(in_use) ? g->mem_total - in_use : NAN;
	const char *whose = g->mem_growth_gpu ? "the memory in use" : "the job's memory";
	if (known(free_b) && free_b > 0)
		verdict(v, "job.memory-growth", DOCTOR_WARN, g->index, "%s on GPU %d grows %s: at that rate the GPU is full in %s",
			whose, g->index, rate, duration_text(when, sizeof(when), free_b / g->mem_growth));
	else
		verdict(v, "job.memory-growth", DOCTOR_WARN, g->index, "%s on GPU %d grows %s", whose, g->index, rate);
	EVID(v, "%s on GPU %d grew from %.2f to %.2f GiB in %.0f s (%s), higher in each quarter of the window than in "
		"the one before",
	     whose, g->index, gib(g->mem_first), gib(g->mem_last),
	     g->t_last - g->t_first, rate);
	if (known(free_b) && free_b > 0)
		EVID(v, "GPU %d: %.1f GiB of %.1f GiB free: full in %s at this rate, then the next allocation fails "
			"(CUDA out of memory)",
		     g->index, gib(free_b), gib(g->mem_total), when);
	gpu_figures(v, g);
	cpu_figures(v, &ev->cpu);
	FIX(v, "keep nothing that holds its autograd graph from one step to the next: losses.append(loss.item()) (or "
	       "loss.detach()), outputs.append(out.detach().cpu()); a list, dict or cache of GPU tensors that only grows "
	       "(evict old entries, keep CPU copies)");
	FIX(v, "find the allocation: torch.cuda.memory._record_memory_history(max_entries=100000) at the start, "
	       "torch.cuda.memory._dump_snapshot(\"mem.pickle\") after some steps, then open the file at "
	       "https://pytorch.org/memory_viz: the live allocations with the stack that made them");
	FIX(v, "torch.cuda.memory_allocated() logged every N steps: growing, tensors are kept (above); steady while "
	       "memory_reserved() grows, the allocator fragments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)");
	NOTE(v, "a growth that stops (a cache filled once, the longest batch so far) levels off: watch longer "
		"(--diagnose 60) to tell it from a leak");
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

static double wait_share(const doctor_wait *w)
{
	return w && w->samples ? (double)w->count / w->samples : 0;
}

/* Waits on something outside the job's own threads and processes. */
static bool external(wait_kind k)
{
	return k == WAIT_FILE || k == WAIT_DISK || k == WAIT_SOCKET || k == WAIT_GPU || k == WAIT_DEVICE ||
	       k == WAIT_SLEEP || k == WAIT_CHILD;
}

/* The wait that explains an idle job: the main thread's; where it waits for another thread or
 * for its workers (a lock, a poll, a pipe), the wait of that thread or of the workers. */
static const doctor_wait *cause_of(const doctor_waits *ws)
{
	const doctor_wait *m = NULL, *other = NULL, *workers = NULL;
	for (int i = 0; i < ws->n; i++) {
		const doctor_wait *w = &ws->w[i];
		if (w->gpu_process && w->tid == w->pid && !m)
			m = w;
		else if (w->gpu_process && !other)
			other = w;
		else if (!w->gpu_process && !workers)
			workers = w;
	}
	if (m && wait_share(m) < 0.3)
		m = NULL;
	if (m && external(m->kind))
		return m;
	if (workers && wait_share(workers) >= 0.5 && external(workers->kind))
		return workers;
	if (other && wait_share(other) >= 0.5 && external(other->kind))
		return other;
	return m ? m : other && wait_share(other) >= 0.5 ? other : NULL;
}

static const char *kind_words(wait_kind k)
{
	switch (k) {
	case WAIT_FILE: return "reads from storage";
	case WAIT_DISK: return "storage or a driver (uninterruptible sleep)";
	case WAIT_SOCKET: return "the network";
	case WAIT_PIPE: return "a pipe";
	case WAIT_GPU: return "the GPU driver";
	case WAIT_DEVICE: return "a device";
	case WAIT_LOCK: return "a lock or a queue";
	case WAIT_POLL: return "several descriptors at once (poll)";
	case WAIT_SLEEP: return "a sleep (time.sleep, a timer)";
	case WAIT_CHILD: return "a child process";
	default: return "a system call the doctor does not name";
	}
}

#define WEB_FIX                                                                                                  \
	"the job reads over HTTP(S): a download, a streaming dataset (Hugging Face datasets with streaming=True, "     \
	"WebDataset or torchdata over HTTP, S3 or GCS through their SDKs) or a remote API. Copy the data to local "    \
	"disk before the job, or keep more requests in flight (more DataLoader workers, larger shards); `curl -o "     \
	"/dev/null -w '%{speed_download}' URL` from this node shows what the link gives"
#define DB_FIX                                                                                                   \
	"a database query in the data path: read the rows once before training (into local files), or in DataLoader " \
	"workers so that the queries overlap"

/* Services a job's data path talks to, by the peer's TCP port (doctor_wait.peer_port). */
static const struct peer_service {
	unsigned port;
	const char *words;
	const char *fix;
} peer_services[] = {
	{443, "an HTTPS server", WEB_FIX},
	{80, "an HTTP server", WEB_FIX},
	{8080, "an HTTP server", WEB_FIX},
	{9000, "an object store (MinIO's S3 port)",
	 "the job reads from an object store over the network: copy the shards to local disk first, or read large "
	 "objects with many requests in flight (more DataLoader workers, larger shards)"},
	{6379, "a Redis server",
	 "Redis in the data path (a queue, a cache, a feature store): `redis-cli -h HOST --latency` shows its round "
	 "trip; batch the reads (MGET, pipelines) or keep the data on this node"},
	{5432, "a PostgreSQL server", DB_FIX},
	{3306, "a MySQL server", DB_FIX},
	{27017, "a MongoDB server", DB_FIX},
};

static const struct peer_service *peer_service_of(const doctor_wait *w)
{
	for (size_t i = 0; w && w->kind == WAIT_SOCKET && i < GV_ARRAY_LEN(peer_services); i++)
		if (peer_services[i].port == w->peer_port)
			return &peer_services[i];
	return NULL;
}

/* What a wait is on, in words, where the kind alone is too little: storage that is no local
 * disk (NFS, a FUSE object store) is named, and so is a page fault's read. */
static const char *wait_words(const doctor_wait *w, char *buf, size_t n)
{
	const char *store = w->remote ? w->remote->words : "storage";
	if (w->fault)
		snprintf(buf, n, "page faults that read from %s", store);
	else if (w->remote && (w->kind == WAIT_FILE || w->kind == WAIT_DISK))
		snprintf(buf, n, "reads from %s", store);
	else
		return kind_words(w->kind);
	return buf;
}

/* Where the data a storage wait reads lives: the mount, and whether it is a local disk. */
static void storage_line(doctor_verdict *v, const doctor_wait *w)
{
	if (!w->mount.fstype[0])
		return;
	char what[160] = "";
	if (w->remote)
		snprintf(what, sizeof(what), ": %s, not a local disk", w->remote->words);
	EVID(v, "%.120s is on %s %.100s, mounted at %.100s%s", w->data_file, w->mount.fstype, w->mount.source,
	     w->mount.point, what);
}

static void wait_line(doctor_verdict *v, const doctor_wait *w)
{
	char who[96], call[40];
	if (w->workers)
		snprintf(who, sizeof(who), "the main thread%s of %d worker%s", w->workers == 1 ? "" : "s", w->workers,
			 w->workers == 1 ? "" : "s");
	else if (w->tid == w->pid)
		snprintf(who, sizeof(who), "the main thread (pid %u%s%s%s)", w->pid, w->comm[0] ? ", " : "", w->comm,
			 w->gpu_process ? "" : ", a worker");
	else
		snprintf(who, sizeof(who), "thread %u%s%s%s of pid %u", w->tid, w->comm[0] ? " (" : "", w->comm,
			 w->comm[0] ? ")" : "", w->pid);
	if (w->fault)
		snprintf(call, sizeof(call), "in page faults");
	else if (w->call[0])
		snprintf(call, sizeof(call), "in %s()", w->call);
	else
		snprintf(call, sizeof(call), "waiting");
	char words[160];
	EVID(v, "%s %s %s on %s in %.0f%% of the samples while the GPU idled (%d of %d)", who, w->workers > 1 ? "were" : "was", call,
	     w->what[0] ? w->what : wait_words(w, words, sizeof(words)), pct(wait_share(w)), w->count, w->samples);
}

/* Where a rank of a distributed job stands with its rendezvous (sampler/rendezvous.h). */
typedef enum {
	RDV_NONE,  /* not a rank, or nothing says it waits for the others */
	RDV_JOIN,  /* it hosts the store and fewer ranks than the job has are connected to it */
	RDV_REACH, /* a rank that has not reached the master's store: it retries, sleeping */
	RDV_STORE  /* it waits on a socket to the store (a barrier, a key another rank sets) */
} rdv_state;

static rdv_state rendezvous_of(const doctor_evidence *ev)
{
	const dist_rank *d = &ev->dist;
	const doctor_waits *ws = &ev->waits;
	if (!d->known)
		return RDV_NONE;
	const doctor_wait *m = ws->n && ws->w[0].gpu_process && ws->w[0].tid == ws->w[0].pid ? &ws->w[0] : NULL;
	/* a specific wait of the main thread (a file, a pipe, the GPU, a child) is the cause */
	wait_kind k = m ? m->kind : WAIT_UNKNOWN;
	if (k != WAIT_SLEEP && k != WAIT_LOCK && k != WAIT_POLL && k != WAIT_SOCKET && k != WAIT_UNKNOWN && k != WAIT_OTHER)
		return RDV_NONE;
	/* with WORLD_SIZE, fewer connections than ranks; without it, its own connection alone (a
	 * job of one rank, WORLD_SIZE=1 as accelerate sets it, waits for no one) */
	if (d->hosts_store && d->store_port && d->store_clients >= 0 &&
	    (d->world > 1 ? d->store_clients < d->world : d->world < 0 && d->store_clients <= 1))
		return RDV_JOIN;
	if (!d->hosts_store && d->world > 1 && d->master_port && !d->to_master && k != WAIT_SOCKET)
		return RDV_REACH;
	if (d->to_master && k == WAIT_SOCKET)
		return RDV_STORE;
	return RDV_NONE;
}

static void rank_line(doctor_verdict *v, const dist_rank *d)
{
	char buf[200];
	size_t len = (size_t)snprintf(buf, sizeof(buf), "a torch.distributed rank");
	if (d->rank >= 0)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, ": RANK %d", d->rank);
	if (d->world >= 0)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s WORLD_SIZE %d", d->rank >= 0 ? " of" : ":", d->world);
	if (d->master[0] && len < sizeof(buf))
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, ", MASTER_ADDR:MASTER_PORT %s", d->master);
	if (d->hosts_store && d->store_port && len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "; it hosts the rendezvous store on port %u, %d connection%s accepted",
			 d->store_port, d->store_clients, d->store_clients == 1 ? "" : "s");
	else if (d->hosts_store && len < sizeof(buf))
		snprintf(buf + len, sizeof(buf) - len, "; it hosts the rendezvous store (a pt_tcpstore thread)");
	EVID(v, "%s", buf);
}

static void rendezvous_fixes(doctor_verdict *v, const dist_rank *d, rdv_state r)
{
	const char *at = d->master[0] ? d->master : "MASTER_ADDR:MASTER_PORT";
	if (r == RDV_REACH)
		FIX(v, "nothing accepts at %.60s yet: rank 0 has not started, has failed, or listens on another address or port "
		       "(its log, and `nc -zv` to that address from this node)",
		    at);
	if (r != RDV_STORE)
		FIX(v, "start the missing ranks, each with the same MASTER_ADDR, MASTER_PORT and WORLD_SIZE and its own RANK "
		       "(torchrun: the same --rdzv-endpoint and --nnodes on every node)");
	FIX(v, "from the other nodes the store must be reachable: a firewall, or MASTER_ADDR 127.0.0.1 or a hostname that "
	       "resolves to 127.0.1.1, keeps them out of a multi-node job");
	if (r == RDV_STORE)
		FIX(v, "a barrier or a key another rank sets: compare the ranks' logs to find the one that is behind or gone "
		       "(TORCH_DISTRIBUTED_DEBUG=DETAIL)");
	FIX(v, "TORCH_DISTRIBUTED_DEBUG=DETAIL and TORCH_CPP_LOG_LEVEL=INFO log each rank's rendezvous; "
	       "init_process_group(timeout=...) bounds the wait");
}

/* The GPU idles and the job's CPU side is not busy: what it waits on (sampler/waits.h). */
static void diagnose_idle(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g)
{
	const doctor_cpu *c = &ev->cpu;
	const doctor_waits *ws = &ev->waits;
	const doctor_wait *w = cause_of(ws);
	const dist_rank *d = &ev->dist;
	unsigned pid = c->main_pid ? c->main_pid : ev->pid;
	rdv_state rdv = rendezvous_of(ev);
	/* what the job waits for, where it says more than the kind of its wait: a server's requests
	 * (not a rank's store, which rendezvous_of judges), input at a terminal, the next cell of a
	 * notebook whose event loop waits */
	wait_kind wk = w ? w->kind : WAIT_UNKNOWN;
	unsigned port = rdv == RDV_NONE && w && w->listen_port && w->listen_port != d->store_port && w->listen_port != d->master_port
				? w->listen_port
				: 0;
	bool tty = rdv == RDV_NONE && w && w->terminal[0];
	bool next_cell = rdv == RDV_NONE && !port && ws->interactive[0] &&
			 (wk == WAIT_POLL || wk == WAIT_LOCK || wk == WAIT_UNKNOWN || wk == WAIT_OTHER);
	if (port)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is mostly idle: the job is a server waiting for requests (it listens on TCP port %u)", g->index, port);
	else if (tty)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is idle: the job waits for input at its terminal %s (a prompt, pdb or breakpoint())", g->index,
			w->terminal);
	else if (next_cell)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index, "GPU %d is idle: the job is %s waiting for its next %s", g->index,
			ws->interactive, strstr(ws->interactive, "Jupyter") ? "cell" : "command");
	else if (rdv == RDV_JOIN && d->world > 1)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is idle: the job waits for its other ranks to join the rendezvous (%d of %d connected to "
			"the store on port %u)",
			g->index, d->store_clients, d->world, d->store_port);
	else if (rdv == RDV_JOIN)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is idle: the job waits for its other ranks to join the rendezvous (only it is connected to "
			"the store on port %u)",
			g->index, d->store_port);
	else if (rdv == RDV_REACH)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is idle: rank %d of %d waits to reach the rendezvous store at %.60s", g->index, d->rank, d->world,
			d->master);
	else if (rdv == RDV_STORE)
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is idle: the job waits on the rendezvous store at %.60s (a barrier or another rank)", g->index,
			d->master[0] ? d->master : "its master");
	else if (w) {
		/* where the cause is not the main thread's own wait, whose it is: the main thread waits
		 * for that thread or those workers (a lock, a queue, a pipe) */
		char whose[48] = "";
		if (!w->gpu_process && w->workers)
			snprintf(whose, sizeof(whose), " in its worker%s", w->workers == 1 ? "" : "s");
		else if (w->gpu_process && w->tid != w->pid)
			snprintf(whose, sizeof(whose), " in its thread %u", w->tid);
		/* the words of network storage end in their own parentheses: "(NFS): /data/x.tar" */
		char words[160], what[320];
		bool paren = !w->remote || !(w->fault || w->kind == WAIT_FILE || w->kind == WAIT_DISK);
		const struct peer_service *svc = peer_service_of(w);
		snprintf(what, sizeof(what), "%.60s%s%s", w->what, svc ? ", " : "", svc ? svc->words : "");
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is mostly idle and the job's CPU side is not saturated: it waits on %s%s%s%s%s", g->index,
			wait_words(w, words, sizeof(words)), !w->what[0] ? "" : paren ? " (" : ": ", w->what[0] ? what : "",
			w->what[0] && paren ? ")" : "", whose);
	}
	else
		verdict(v, "job.gpu-idle", DOCTOR_WARN, g->index,
			"GPU %d is mostly idle and the job's CPU side is not saturated: it waits for something else", g->index);
	gpu_figures(v, g);
	cpu_figures(v, c);
	if (d->known)
		rank_line(v, d);
	for (int i = 0; i < ws->n; i++)
		if (wait_share(&ws->w[i]) >= 0.2)
			wait_line(v, &ws->w[i]);
	if (w && rdv == RDV_NONE && !port && !tty && !next_cell)
		storage_line(v, w);
	if (ws->py.n) {
		char frames[200];
		size_t len = 0;
		for (size_t i = 0; i < ws->py.n && len < sizeof(frames) - 8; i++)
			len += (size_t)snprintf(frames + len, sizeof(frames) - len, "%s%s", i ? " <- " : "", ws->py.frames[i]);
		EVID(v, "Python frames of the main thread (py-spy): %s", frames);
	}
	if (port)
		FIX(v, "nothing is wrong with an idle server: its GPU works as requests come. If they should come, see that "
		       "clients reach port %u (`curl -v localhost:%u` here, then through the proxy or load balancer); under load, "
		       "more concurrent requests or larger batches fill the GPU (vLLM and TGI batch requests together: "
		       "--max-num-seqs, max_batch_size)",
		    port, port);
	else if (tty)
		FIX(v, "the job waits for someone to type at its terminal: a breakpoint() or pdb.set_trace() left in the code, "
		       "input(), or an interactive session. Answer it there (pdb: `c` continues), or remove the breakpoint; "
		       "PYTHONBREAKPOINT=0 makes breakpoint() do nothing, and a batch job's stdin from /dev/null never waits");
	else if (next_cell)
		FIX(v, "%s keeps its CUDA context and the tensors its variables hold between %ss: when done, shut it down "
		       "(Kernel > Shut Down Kernel, `jupyter notebook stop`, exit()) to give the GPU back to others; `del` the "
		       "tensors and torch.cuda.empty_cache() free their memory, not the context",
		    ws->interactive, strstr(ws->interactive, "Jupyter") ? "cell" : "command");
	switch (port || tty || next_cell ? WAIT_NKINDS + 1 : rdv != RDV_NONE ? WAIT_NKINDS : w ? w->kind : WAIT_UNKNOWN) {
	case WAIT_NKINDS + 1:
		break;
	case WAIT_NKINDS:
		rendezvous_fixes(v, d, rdv);
		break;
	case WAIT_FILE:
	case WAIT_DISK:
		if (w->remote)
			FIX(v, "the data is on %s (%.100s at %.100s): each read the page cache does not hold goes there. Copy the "
			       "dataset to local NVMe or RAM (/dev/shm) before the job, or stage each node's shards on its own "
			       "disk; read large sequential shards (WebDataset, tar) and keep more reads in flight (num_workers, "
			       "prefetch_factor)",
			    w->remote->words, w->mount.source, w->mount.point);
		if (w->remote && w->remote->fix[0])
			FIX(v, "%s", w->remote->fix);
		if (w->remote && !w->fault)
			break;
		if (w->fault)
			FIX(v, "the job reads memory-mapped data (np.memmap, Arrow or Hugging Face datasets, "
			       "torch.load(mmap=True), safetensors) page by page: each first touch of a page waits on a small "
			       "read from storage. Bring the file into RAM first (copy it to /dev/shm or local NVMe, `vmtouch "
			       "-t FILE` or `cat FILE > /dev/null` where it fits the page cache), read it in large sequential "
			       "blocks instead of random pages, or let more DataLoader workers overlap the faults");
		else
			FIX(v, "the data comes from storage too slowly: copy it to local NVMe or RAM (/dev/shm), read larger "
		       "sequential shards (WebDataset, tar or record files), more DataLoader workers and prefetch_factor to "
		       "overlap the reads; `iostat -x 1` shows the disk's load");
		break;
	case WAIT_SOCKET:
		if (peer_service_of(w)) {
			FIX(v, "%s", peer_service_of(w)->fix);
			break;
		}
		FIX(v, "the job waits on its peer over the network (%s): another rank in a collective or a barrier (compare "
		       "the ranks' steps; NCCL_DEBUG=INFO, TORCH_DISTRIBUTED_DEBUG=DETAIL), the rendezvous store "
		       "(MASTER_ADDR:MASTER_PORT), a data server or a download",
		    w->what[0] ? w->what : "a socket");
		break;
	case WAIT_PIPE:
		FIX(v, "the job waits for its worker processes through a pipe: if they are busy, more workers "
		       "(num_workers); if they wait too, on what their line says");
		break;
	case WAIT_GPU:
		FIX(v, "a thread waits in the GPU driver while the GPU idles: a synchronize on work another process or "
		       "stream holds up, a peer GPU that has not arrived, or cudaMalloc/cudaFree in the step "
		       "(torch.cuda.memory_stats()[\"num_alloc_retries\"])");
		break;
	case WAIT_LOCK:
		FIX(v, "a lock or a queue: another thread holds it (the GIL held by a busy thread, a queue.get() nothing "
		       "fills); the Python frames say which");
		break;
	case WAIT_SLEEP:
		FIX(v, "the job sleeps: a time.sleep in its loop (a throttle, a polling interval, a retry backoff)");
		break;
	case WAIT_CHILD:
		FIX(v, "the job waits for a child process to end (subprocess.run, os.wait): see what the child does");
		break;
	case WAIT_POLL:
		FIX(v, "the main thread waits in an event loop on several descriptors at once (its line names them): work "
		       "that has not come (a server's requests, a notebook's next cell, a queue's producer), or a library "
		       "waiting for its own threads; the Python frames say which");
		break;
	default:
		FIX(v, "reading data from slow storage: copy it to local disk or RAM, more DataLoader workers hide latency");
		break;
	}
	if (ws->py_tried && ws->py.no_tool)
		FIX(v, "for the Python frames where it waits: pip install py-spy, then py-spy dump --nonblocking --pid %u "
		       "(as root or as the job's user; it does not stop the job)",
		    pid);
	else if (!ws->py.n)
		FIX(v, "see where the process waits: py-spy dump --nonblocking --pid %u (storage and network reads, locks, "
		       "other ranks, sleep)",
		    pid);
	if (ws->py_tried && !ws->py.n && !ws->py.no_tool && ws->py.why[0])
		NOTE(v, "no Python frames: %s", ws->py.why);
	if (ws->denied)
		NOTE(v, "the job runs as uid %ld: as root or as that user gpuvet shows what its threads wait on "
			"(/proc/PID/task/TID/syscall, wchan)",
		     ws->uid);
	else if (ws->wchan_only)
		NOTE(v, "the system calls could not be read (/proc/PID/task/TID/syscall needs root, or "
			"kernel.yama.ptrace_scope 0): the kernel functions alone name the waits");
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
	if (launch_tiny_kernels(g->util, sm, &t->launch) && host_busy && !copying) {
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
	/* kernels being compiled (torch.compile's first steps, a new shape, a JIT extension build):
	 * the GPU waits for them, and a busy main thread is tracing, not loading data */
	if (known(b) && b < t->busy && c->compilers > 0 && c->compilers_demand >= t->compile_busy) {
		verdict(v, "job.compiling", DOCTOR_INFO, g->index,
			"GPU %d waits while the job compiles kernels: %d compiler process%s %.1f cores (torch.compile, "
			"Triton, a JIT extension build)",
			g->index, c->compilers, c->compilers == 1 ? " uses" : "es use", c->compilers_cpu);
		gpu_figures(v, g);
		cpu_figures(v, c);
		FIX(v, "a one-time cost for each new graph and shape: the job speeds up when it ends; judge it after "
		       "(gpuvet watch --pid %u --diagnose 10 again)",
		    c->main_pid ? c->main_pid : ev->pid);
		FIX(v, "keep the compiled kernels between runs: TORCHINDUCTOR_CACHE_DIR and TRITON_CACHE_DIR on a disk that "
		       "persists (the defaults live under /tmp); TORCH_LOGS=recompiles shows shapes that compile again "
		       "(mark_dynamic or dynamic=True keeps them to one graph)");
		return;
	}
	/* the GPU process computes on many threads while its GPU idles: the model or the step's math on
	 * the CPU (a tensor never moved to the GPU), or preprocessing with its own threads in the main
	 * process; not input-bound's "waits for data", whose fix (DataLoader workers) misses the first */
	if (known(b) && b < t->idle && !workers_sat && c->compute_threads >= t->cpu_threads &&
	    c->compute_cores >= t->cpu_cores) {
		verdict(v, "job.cpu-compute", DOCTOR_WARN, g->index,
			"GPU %d idles while the job computes on the CPU: %d threads of its GPU process use %.1f cores", g->index,
			c->compute_threads, c->compute_cores);
		gpu_figures(v, g);
		cpu_figures(v, c);
		FIX(v, "see where the model and the batches are: next(model.parameters()).device and each batch's .device "
		       "must read cuda; model.to(\"cuda\") before the optimizer is made, each batch .to(\"cuda\", "
		       "non_blocking=True); a tensor made without device= (torch.zeros, torch.arange) is on the CPU");
		FIX(v, "math in the step on CPU tensors (a loss or a metric after .cpu(), numpy, pandas, scikit-learn) runs "
		       "on torch.get_num_threads() threads: keep it on the GPU, or do it every N steps");
		FIX(v, "preprocessing with its own threads in the main process (Hugging Face tokenizers, OpenCV, "
		       "torchvision transforms on CPU tensors): move it into DataLoader workers (num_workers), or "
		       "tokenize the dataset once ahead (datasets.map(batched=True))");
		return;
	}
	/* too few workers: busy most of the time but under a core each (each also waits on its queue),
	 * while the machine leaves a core idle that another worker could use */
	bool workers_short = c->workers > 0 && !workers_sat && !host_busy && known(c->workers_demand) &&
			     c->workers_demand >= t->workers_busy && known(c->idle_cores) && c->idle_cores >= 1;
	if (known(b) && b < t->idle && workers_short) {
		int n = c->dataloader_workers ? c->dataloader_workers : c->workers;
		int ranks = c->gpu_procs > 1 ? c->gpu_procs : 1;
		verdict(v, "job.input-bound", DOCTOR_WARN, g->index,
			"input-bound: GPU %d waits for data; its %d DataLoader workers are busy %.0f%% of the time while %.0f "
			"cores idle: too few workers",
			g->index, n, pct(c->workers_demand), c->idle_cores);
		gpu_figures(v, g);
		cpu_figures(v, c);
		int more = n / ranks + (int)(c->idle_cores / ranks);
		FIX(v, "raise num_workers: %d worker%s per GPU process now, up to about %d with the idle cores "
		       "(DataLoader(num_workers=%d, persistent_workers=True)); each worker also waits on its queue, so "
		       "more of them keep the GPU fed",
		    n / ranks, n / ranks == 1 ? "" : "s", more, more);
		FIX(v, "prefetch_factor=4 (batches each worker prepares ahead), pin_memory=True and .to(device, non_blocking=True)");
		FIX(v, "cheaper transforms per sample, or decode and augment on the GPU (DALI, torchvision.transforms.v2 on "
		       "cuda tensors)");
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
		diagnose_idle(v, ev, g);
		return;
	}
	verdict(v, "job.mixed", DOCTOR_INFO, g->index,
		"GPU %d is busy part of the time (%.0f%%): no single cause dominates", g->index, pct(b));
	gpu_figures(v, g);
	cpu_figures(v, c);
	FIX(v, "profile a few steps (torch.profiler, nsys) to see the gaps between kernels");
}

/* The window holds two phases (sampler/summary.h): its means describe neither. */
static bool two_phases(const doctor_gpu *g)
{
	return known(g->phase_t) && known(g->busy_before) && known(g->busy_after) &&
	       fabs(g->busy_after - g->busy_before) >= PHASE_BUSY - PHASE_IDLE;
}

static void diagnose_phase(doctor_verdict *v, const doctor_evidence *ev, const doctor_gpu *g)
{
	bool started = g->busy_after > g->busy_before;
	unsigned pid = ev->cpu.main_pid ? ev->cpu.main_pid : ev->pid;
	if (started)
		verdict(v, "job.phase-change", DOCTOR_INFO, g->index,
			"GPU %d went from idle to busy %.0f s into the window: the job was starting, or began a new phase",
			g->index, g->phase_t);
	else
		verdict(v, "job.phase-change", DOCTOR_INFO, g->index,
			"GPU %d went from busy to idle %.0f s into the window: an evaluation, a checkpoint, the end of the "
			"data, or a stall that began then",
			g->index, g->phase_t);
	EVID(v, "busy %.0f%% of the time before, %.0f%% after (%s)", pct(g->busy_before), pct(g->busy_after),
	     g->gpm ? "SM active" : "utilization");
	gpu_figures(v, g);
	if (known(g->mem_first) && known(g->mem_last) && fabs(g->mem_last - g->mem_first) >= 64 * 1048576.0)
		EVID(v, "%s memory on GPU %d went from %.1f to %.1f GiB over the window", g->mem_growth_gpu ? "the GPU's" : "the job's",
		     g->index, g->mem_first / 1073741824.0, g->mem_last / 1073741824.0);
	cpu_figures(v, &ev->cpu);
	if (!started)
		for (int i = 0; i < ev->waits.n; i++)
			if (wait_share(&ev->waits.w[i]) >= 0.2)
				wait_line(v, &ev->waits.w[i]);
	FIX(v, "the window's figures mix the two phases: diagnose the one it is in now, gpuvet watch --pid %u --diagnose 10", pid);
	if (!started)
		FIX(v, "if it stays idle, what its threads wait on says why; gpuvet run judges every window of a whole run");
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
	/* memory that grows steadily ends in an out-of-memory whatever the GPU does meanwhile */
	const doctor_gpu *grows = v->id ? NULL : growing_gpu(ev, &t);
	if (grows)
		diagnose_growth(v, ev, grows);
	if (!v->id) {
		/* the busiest of the job's GPUs speaks for the job */
		const doctor_gpu *g = &ev->gpus[0];
		for (int i = 1; i < ev->ngpus; i++)
			if (known(busy_of(&ev->gpus[i])) && (!known(busy_of(g)) || busy_of(&ev->gpus[i]) > busy_of(g)))
				g = &ev->gpus[i];
		double b = busy_of(g);
		if (two_phases(g) && !(known(b) && b >= t.busy))
			diagnose_phase(v, ev, g);
		else if (known(b) && b >= t.busy)
			diagnose_busy(v, ev, g, &t);
		else
			diagnose_waiting(v, ev, g, &t);
		if (strcmp(v->id, "job.memory-pressure") != 0 && memory_pressure(g, &t) && known(g->job_mem))
			NOTE(v, "the job holds %.0f%% of GPU %d's memory", pct(g->job_mem / g->mem_total), g->index);
	}
	common_notes(v, ev, &t);
}
