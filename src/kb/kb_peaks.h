/*
 * Hardware peaks for benchmark verdicts: dense compute per dtype at a given SM clock, memory
 * bandwidth, and the PCIe link rate. Sources: data/arch_rates.csv (per-SM FMA rates per
 * architecture), data/gpu_peaks.csv (datasheet figures per GPU), data/SOURCES.md.
 *
 * Compute peak = SMs x FMA/clk/SM x 2 x SM clock, from arch_rates when the architecture has a
 * rate for the dtype; otherwise the datasheet figure of gpu_peaks scaled by clock/boost clock.
 */
#ifndef GPUVET_KB_PEAKS_H
#define GPUVET_KB_PEAKS_H
#include <stdbool.h>
#include <stddef.h>

#include "kb/kb.h"

typedef struct kb_peak {
	double value;     /* TFLOP/s (TOP/s for int8); memory: GB/s */
	double clock_mhz; /* the SM clock it assumes (0 for memory) */
	char how[200];    /* "132 SMs x 2048 FMA/clk/SM x 2 x 1980 MHz (arch_rates Hopper)" */
} kb_peak;

/*
 * Dense peak of dtype ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int8") for the GPU.
 * gpu_name as NVML/CUDA reports it (may be NULL), cc "9.0" (may be NULL when the name is in
 * gpu_peaks), sms the multiprocessor count (0: from gpu_peaks), clock_mhz the SM clock seen
 * during the run (0: the boost clock of gpu_peaks). False when nothing in the knowledge base
 * gives this dtype for this GPU.
 */
bool kb_compute_peak(const kb *k, const char *gpu_name, const char *cc, int sms, double clock_mhz,
		     const char *dtype, kb_peak *out);

/* Memory bandwidth peak in GB/s: gpu_peaks.mem_gbps when the GPU is listed, else from the
 * maximum memory clock and bus width NVML reports (clock x 2 (double data rate) x width / 8),
 * when both are > 0. */
bool kb_memory_peak(const kb *k, const char *gpu_name, double max_mem_clock_mhz, int bus_width_bits, kb_peak *out);

/* PCIe payload rate per direction in GB/s for a link generation and width (Gen3 x16 15.75,
 * Gen4 x16 31.5, Gen5 x16 63.0); 0 when gen or width is unknown (<= 0 or gen > 6). */
double kb_pcie_rate_gbps(int gen, int width);
#endif
