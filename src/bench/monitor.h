/*
 * NVML watched during the run: a thread takes a snapshot of every GPU through the one sampler
 * (sampler/sampler.h, its readings declared in sampler/fields.h: SM clock, temperature, power,
 * clock event reasons, PCIe link, processes) and files each under the benchmark phase running
 * at that moment, summed per GPU and phase by the per-GPU window summary (sampler/summary.h), so
 * each figure can be judged against the clock it really ran at and a low
 * figure can name its cause (throttling, a narrow link, another process). The GPM activity of
 * each measurement is not the monitor's: it comes from its own window (sampler/window.h).
 */
#ifndef GPUVET_BENCH_MONITOR_H
#define GPUVET_BENCH_MONITOR_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"

typedef struct monitor monitor;

typedef struct monitor_gpu_info {
	int index;           /* NVML index */
	char name[96];
	char bus_id[32];
	char uuid[96];
	char serial[32];     /* "" unknown */
	unsigned max_sm_clock_mhz, max_mem_clock_mhz; /* 0 unknown */
	unsigned pcie_gen_max, pcie_width_max;
	double power_limit_w;
	unsigned temp_slowdown_c;
	unsigned nprocs_other; /* compute/graphics processes other than us, at start */
	char procs_other[256]; /* "python3 (pid 1234, 20480 MiB), ..." */
} monitor_gpu_info;

typedef struct monitor_summary {
	size_t samples;
	double sm_clock_median, sm_clock_min, sm_clock_max; /* MHz, NAN unknown */
	double mem_clock_median;
	unsigned long long reasons; /* OR of the clock event reasons seen */
	double temp_max_c, power_max_w, power_mean_w; /* NAN unknown */
	int pcie_gen_min, pcie_gen_max, pcie_width_min, pcie_width_max; /* seen; 0 unknown */
	unsigned other_procs; /* most processes other than us seen at once */
} monitor_summary;

/* Initialises NVML and starts sampling every interval_ms. NULL with err filled when NVML is not
 * usable (the benchmarks still run; their figures lack clocks). */
monitor *monitor_start(int interval_ms, char *err, size_t n);
/* The same, following Xid events too (NVML's events and the kernel log): diag's monitor, whose
 * health test counts what appeared during the run. */
monitor *monitor_start_events(int interval_ms, char *err, size_t n);
/* A snapshot taken now with the health counters (ECC, retired pages, remapped rows, PCIe replays)
 * and the Xid events seen so far; the caller frees it. NULL with err when NVML gave nothing. */
struct snapshot;
struct snapshot *monitor_health_snapshot(monitor *m, char *err, size_t n);
void monitor_stop(monitor *m);
int monitor_gpu_count(const monitor *m);
const monitor_gpu_info *monitor_gpu(const monitor *m, int nvml_index);
/* The NVML index of the GPU on this PCI bus ("0000:18:00.0"), or -1. */
int monitor_find_bus(const monitor *m, const char *bus_id);
/* Starts a phase ("gemm.bf16"); samples from now on belong to it. NULL: between phases. */
void monitor_phase(monitor *m, const char *phase);
/* Stops sampling while latencies are measured (NVML calls take the driver's locks). */
void monitor_pause(monitor *m, bool paused);
/* Takes a sample now when the current phase has none (a phase shorter than the sampling
 * interval, or one measured with the sampling paused, would otherwise have none). */
void monitor_sample_now(monitor *m);
/* Summary of one GPU over a phase (NULL: the whole run). False when no sample. */
bool monitor_summary_get(monitor *m, const char *phase, int nvml_index, monitor_summary *out);
/* bench.monitor.gpu.N.* facts for the whole run and the GPUs' identity (docs/facts/bench.md). */
void monitor_facts(monitor *m, facts *f);
#endif
