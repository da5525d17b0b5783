/*
 * The GPM activity counters gpuvet reads, declared once. Everything that handles them expands
 * this table: the NVML layer (which metric ids to ask nvmlGpmMetricsGet for, and the unit to
 * convert from), the snapshot (one reading per row), serve (the native family and the DCGM
 * field), watch (the JSON key and the column) and the fake NVML of the tests (the config key).
 * Adding a counter is adding a row.
 *
 * X(ID, key, nvml_metric_id, unit, prometheus_name, dcgm_name, watch_column, help)
 *   ID              GV_GPM_<ID>: the index into the arrays that hold readings
 *   key             snake_case: the JSON key in watch (key + "_ratio" or "_bytes_per_second"),
 *                   the fake's `gpu.N.gpm.KEY`
 *   nvml_metric_id  nvmlGpmMetricId_t (nvml.h of CUDA 12.0 to 13.0: the ids have not changed)
 *   unit            GV_GPM_PERCENT: NVML answers 0-100, kept as a ratio 0-1;
 *                   GV_GPM_MIB_PER_S: NVML answers MiB/s, kept as bytes per second
 *   prometheus_name gpuvet's family (ratios end in _ratio, rates in _bytes_per_second)
 *   dcgm_name       the DCGM field of the same meaning and unit (dcgm-exporter with --dcgm-compat);
 *                   DCGM's PROF ratios are 0-1 and its PCIe/NVLink fields bytes per second
 *   watch_column    the column header in watch's text view ("" for none)
 */
#ifndef GPUVET_NVIDIA_GPM_FIELDS_H
#define GPUVET_NVIDIA_GPM_FIELDS_H

#include <stddef.h>
#include <stdio.h>

#define GV_GPM_PERCENT 0
#define GV_GPM_MIB_PER_S 1

#define GV_GPM_FIELDS(X)                                                                                              \
	X(GRAPHICS, "graphics_active", 1, GV_GPM_PERCENT, "gpuvet_gpu_graphics_active_ratio",                     \
	  "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "GR",                                                                  \
	  "Fraction of time the graphics or compute engine was active (NVML GPM).")                               \
	X(SM_ACTIVE, "sm_active", 2, GV_GPM_PERCENT, "gpuvet_gpu_sm_active_ratio", "DCGM_FI_PROF_SM_ACTIVE", "SM",  \
	  "Fraction of time at least one warp was resident on an SM, averaged over the SMs (NVML GPM).")          \
	X(SM_OCCUPANCY, "sm_occupancy", 3, GV_GPM_PERCENT, "gpuvet_gpu_sm_occupancy_ratio",                      \
	  "DCGM_FI_PROF_SM_OCCUPANCY", "OCC",                                                                     \
	  "Resident warps as a fraction of the SMs' maximum, averaged over time and SMs (NVML GPM).")             \
	X(INT_ACTIVE, "int_active", 4, GV_GPM_PERCENT, "gpuvet_gpu_int_pipe_active_ratio",                       \
	  "DCGM_FI_PROF_PIPE_INT_ACTIVE", "",                                                                     \
	  "Fraction of time the integer pipe was active (NVML GPM).")                                            \
	X(TENSOR_ACTIVE, "tensor_active", 5, GV_GPM_PERCENT, "gpuvet_gpu_tensor_active_ratio",                   \
	  "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "TENS",                                                              \
	  "Fraction of time any tensor pipe was active (NVML GPM).")                                             \
	X(TENSOR_DFMA, "tensor_dfma_active", 6, GV_GPM_PERCENT, "gpuvet_gpu_tensor_dfma_active_ratio",           \
	  "DCGM_FI_PROF_PIPE_TENSOR_DFMA_ACTIVE", "",                                                             \
	  "Fraction of time the FP64 (DFMA) tensor pipe was active (NVML GPM).")                                 \
	X(TENSOR_HMMA, "tensor_hmma_active", 7, GV_GPM_PERCENT, "gpuvet_gpu_tensor_hmma_active_ratio",           \
	  "DCGM_FI_PROF_PIPE_TENSOR_HMMA_ACTIVE", "",                                                             \
	  "Fraction of time the half-precision (HMMA: fp16, bf16, tf32) tensor pipe was active (NVML GPM).")     \
	X(TENSOR_IMMA, "tensor_imma_active", 9, GV_GPM_PERCENT, "gpuvet_gpu_tensor_imma_active_ratio",           \
	  "DCGM_FI_PROF_PIPE_TENSOR_IMMA_ACTIVE", "",                                                             \
	  "Fraction of time the integer (IMMA) tensor pipe was active (NVML GPM).")                              \
	X(DRAM_ACTIVE, "dram_active", 10, GV_GPM_PERCENT, "gpuvet_gpu_dram_active_ratio",                        \
	  "DCGM_FI_PROF_DRAM_ACTIVE", "DRAM",                                                                     \
	  "Fraction of the device memory bandwidth in use (NVML GPM DRAM bandwidth utilization).")               \
	X(FP64_ACTIVE, "fp64_active", 11, GV_GPM_PERCENT, "gpuvet_gpu_fp64_pipe_active_ratio",                    \
	  "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "",                                                                    \
	  "Fraction of time the non-tensor FP64 pipe was active (NVML GPM).")                                    \
	X(FP32_ACTIVE, "fp32_active", 12, GV_GPM_PERCENT, "gpuvet_gpu_fp32_pipe_active_ratio",                    \
	  "DCGM_FI_PROF_PIPE_FP32_ACTIVE", "FP32",                                                                \
	  "Fraction of time the non-tensor FP32 pipe was active (NVML GPM).")                                    \
	X(FP16_ACTIVE, "fp16_active", 13, GV_GPM_PERCENT, "gpuvet_gpu_fp16_pipe_active_ratio",                    \
	  "DCGM_FI_PROF_PIPE_FP16_ACTIVE", "",                                                                    \
	  "Fraction of time the non-tensor FP16 pipe was active (NVML GPM).")                                    \
	X(PCIE_TX, "pcie_tx", 20, GV_GPM_MIB_PER_S, "gpuvet_gpu_pcie_tx_bytes_per_second",                       \
	  "DCGM_FI_PROF_PCIE_TX_BYTES", "",                                                                       \
	  "PCIe traffic from the GPU to the host, over the last sample period (NVML GPM).")                      \
	X(PCIE_RX, "pcie_rx", 21, GV_GPM_MIB_PER_S, "gpuvet_gpu_pcie_rx_bytes_per_second",                       \
	  "DCGM_FI_PROF_PCIE_RX_BYTES", "",                                                                       \
	  "PCIe traffic from the host to the GPU, over the last sample period (NVML GPM).")                      \
	X(NVLINK_RX, "nvlink_rx", 60, GV_GPM_MIB_PER_S, "gpuvet_gpu_nvlink_rx_bytes_per_second",                 \
	  "DCGM_FI_PROF_NVLINK_RX_BYTES", "",                                                                     \
	  "NVLink traffic received by the GPU over all links (NVML GPM; absent without NVLink).")                \
	X(NVLINK_TX, "nvlink_tx", 61, GV_GPM_MIB_PER_S, "gpuvet_gpu_nvlink_tx_bytes_per_second",                 \
	  "DCGM_FI_PROF_NVLINK_TX_BYTES", "",                                                                     \
	  "NVLink traffic sent by the GPU over all links (NVML GPM; absent without NVLink).")

#define GV_GPM_ENUM_(ID, ...) GV_GPM_##ID,
enum { GV_GPM_FIELDS(GV_GPM_ENUM_) GV_GPM_N };
#undef GV_GPM_ENUM_

typedef struct gv_gpm_field {
	const char *key;
	unsigned nvml_id;
	int unit;
	const char *prom_name;
	const char *dcgm_name;
	const char *column;
	const char *help;
} gv_gpm_field;

/* The table as data: gv_gpm_fields[GV_GPM_SM_ACTIVE].dcgm_name. */
#define GV_GPM_ROW_(ID, key, id, unit, prom, dcgm, col, help) {key, id, unit, prom, dcgm, col, help},
__attribute__((unused)) static const gv_gpm_field gv_gpm_fields[GV_GPM_N] = {GV_GPM_FIELDS(GV_GPM_ROW_)};
#undef GV_GPM_ROW_

/* Counter k's JSON key in watch and the job doctor: its key and its unit ("sm_active_ratio",
 * "pcie_tx_bytes_per_second"). */
static inline const char *gv_gpm_json_key(int k, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s", gv_gpm_fields[k].key,
		 gv_gpm_fields[k].unit == GV_GPM_PERCENT ? "_ratio" : "_bytes_per_second");
	return buf;
}

/* From NVML's unit to gpuvet's base unit (ratio, bytes per second). */
static inline double gv_gpm_to_base(int unit, double nvml_value)
{
	return unit == GV_GPM_PERCENT ? nvml_value / 100.0 : nvml_value * 1048576.0;
}
#endif
