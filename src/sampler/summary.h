/*
 * One GPU over a window of samples: the one place that sums what a GPU did over time, for the
 * job doctor's evidence (doctor/doctor.h), watch --record's conditions, the utilisation verdict
 * of gpuvet run and bench's and diag's monitor (bench/monitor.h). Add each sample of the GPU
 * (gpu_window_add), read the figures (gpu_window_summary) at any time. Pure: samples in,
 * figures out, so tests feed it synthetic streams.
 *
 * A job (sampler/job.h) splits the GPU's processes into the job's and the others'; without one
 * every process is another's. Where the job holds the GPU only through its device file
 * (JOB_GPU_DEVICE: another PID namespace) NVML's pids may be the job's seen from the host, so
 * the job's and the others' memory and SM shares are unknown.
 */
#ifndef GPUVET_SAMPLER_SUMMARY_H
#define GPUVET_SAMPLER_SUMMARY_H
#include <stdbool.h>
#include <stddef.h>

#include "nvidia/gpm_fields.h"
#include "sampler/busy.h"
#include "sampler/job.h"
#include "sampler/snapshot.h"

/* What one GPU did over the window: means, extremes, shares of the samples; NAN (or 0 for the
 * counts and the PCIe link) where unknown. */
typedef struct gpu_summary {
	int index;
	char name[96];
	int samples;
	double t_first, t_last;   /* the samples' times (snapshot time) */
	double util;              /* NVML utilization.gpu, ratio 0-1, mean */
	bool gpm;                 /* GPM counters were read (act[] holds means) */
	double act[GV_GPM_N];     /* GPM means in base units (ratio, bytes per second) */
	double cc;                /* compute capability (9.0), 0 when unknown */
	double mem_total, mem_used; /* bytes, the GPU's (used: max over samples) */
	double job_mem;           /* bytes the job's processes hold on it (max over samples) */
	double other_mem;         /* bytes other processes hold on it (max over samples) */
	/* memory over time: the job's (the GPU's where the job's is unknown): a least-squares line
	 * through the samples (bytes per second, NAN under 4 samples), its first and last value, and
	 * whether it rose from each quarter of the window to the next (a steady growth, not one
	 * allocation) */
	double mem_growth;
	double mem_first, mem_last;
	bool mem_steady;
	bool mem_growth_gpu;      /* the series is the GPU's used memory, not the job's */
	double job_sm, other_sm;  /* share of SM time of the job's / the others' processes
				   * (nvmlDeviceGetProcessUtilization, means; NAN unknown) */
	int job_procs;            /* processes of the job holding this GPU (most at once) */
	bool by_fd;               /* the job held it through the device file only (JOB_GPU_DEVICE) */
	int other_procs;          /* most other processes at once (those NVML counts but does not list too) */
	double power, power_max, power_limit, power_default_limit; /* W: mean, max; limits as last read */
	double temp_max;          /* C */
	unsigned long long reasons; /* OR of the clock event reasons seen */
	/* fractions of the samples with reasons in which one was set */
	double power_cap_frac, thermal_frac, hw_slowdown_frac;
	double sm_clock_median, sm_clock_min, sm_clock_max, sm_clock_last, sm_clock_mean; /* MHz */
	double mem_clock_median, mem_clock_last, mem_clock_mean;
	int pcie_gen_min, pcie_gen_max, pcie_width_min, pcie_width_max;
	/* a change of phase within the window (gpu_busy of each sample): idle for its first part and
	 * busy for the rest, or the other way (a job starting, an evaluation or a stall beginning).
	 * Each part at least two samples and a quarter of them; the idle part's mean under
	 * PHASE_IDLE and none of its samples at PHASE_BUSY, the busy part's mean at least PHASE_BUSY
	 * and none of its samples under PHASE_IDLE. phase_t: seconds from the first sample to the
	 * second part's first; NAN (and the means NAN) when none */
	double phase_t, busy_before, busy_after;
} gpu_summary;
#define PHASE_IDLE 0.25
#define PHASE_BUSY 0.60


/* The accumulator of one GPU. Zero-initialise or gpu_window_init; gpu_window_free at the end.
 * A window keeps every sample's clocks, memory and busy share (for the medians, the growth and
 * the phases) unless
 * sums_only: then its size stays fixed however long it runs (watch --record, a whole run), and
 * the medians and the growth are unknown. */
typedef struct gpu_window {
	bool sums_only;
	int index;
	char name[96];
	int n;
	double t_first, t_last;
	int nutil, ngpm[GV_GPM_N], npower, nreasons, nsm;
	double util, gpm[GV_GPM_N], power, power_max, power_limit, power_default, mem_total, mem_used;
	double job_mem, other_mem, temp_max, cc, job_sm, other_sm, sm_last, mclk_last, sm_sum, mclk_sum;
	int nsm_clk, nmem_clk;
	int job_procs, other_procs, power_cap, thermal, hw, pcie[4];
	unsigned long long reasons;
	bool any_gpm, by_fd, job_mem_gaps;
	size_t nclk, nmclk, nmem, cap_clk, cap_mclk, cap_mem;
	double *clk, *mclk;
	double (*mem)[3]; /* time, the job's bytes (NAN unknown), the GPU's used bytes (NAN unknown) */
	double *busy;     /* each sample's gpu_busy (NAN unknown), beside mem */
} gpu_window;

void gpu_window_init(gpu_window *w, int index, const char *name);
/* One sample of the GPU at time t (a lost GPU's sample is skipped). j: the job (NULL: none);
 * hold and job_mem: how it holds the GPU and its bytes there (job_gpu). */
void gpu_window_add(gpu_window *w, const gpu_sample *g, double t, const job *j, job_gpu_hold hold, double job_mem);
void gpu_window_summary(const gpu_window *w, gpu_summary *out);
void gpu_window_free(gpu_window *w);

/* The windows of several GPUs, one per NVML index, in the order first seen. */
typedef struct gpu_windows {
	bool sums_only; /* for the windows it adds */
	size_t n, cap;
	gpu_window *w;
} gpu_windows;
/* The window of g's GPU, added on first sight; NULL past max windows (0: no bound). */
gpu_window *gpu_windows_of(gpu_windows *s, const gpu_sample *g, size_t max);
/* The window of NVML index `index`; NULL when none. */
gpu_window *gpu_windows_find(const gpu_windows *s, int index);
void gpu_windows_free(gpu_windows *s);
#endif
