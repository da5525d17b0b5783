/* Helpers shared by the driver and GPU rules (rules_driver.c, rules_gpu.c). Pure: facts only. */
#ifndef GPUVET_RULES_NVIDIA_H
#define GPUVET_RULES_NVIDIA_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"

/* Whether this machine is meant to run the NVIDIA driver: the kernel module is loaded, a GPU is
 * bound to it, or this is WSL 2 with /dev/dxg. When not, the hardware rules (gpu.none,
 * driver.not-loaded, driver.nouveau) already say the one thing that matters, and the driver
 * library rules stay silent instead of adding a second fail. */
bool nv_driver_expected(const facts *f);
/* The GPUs NVML reported (0 when NVML did not answer). */
int nv_gpu_count(const facts *f);
/* "GPU 0 (NVIDIA H200, 00000000:18:00.0)" */
const char *nv_gpu_label(const facts *f, int i, char *buf, size_t size);
/* "580" of "580.159.04" (into buf); "" when unknown. */
const char *nv_driver_branch(const char *version, char *buf, size_t size);
/* What follows for nvidia-smi and the other NVML programs from what NVML answered gpuvet, as a
 * line of evidence: gpuvet never runs nvidia-smi, so this names the library they share
 * ("nvidia-smi, DCGM and gpuvet serve read the GPUs through the same library (PATH)"), never an
 * outcome it did not see. When gpuvet loaded GPUVET_NVML_LIB, it says that nvidia-smi loads
 * the system's libnvidia-ml.so.1 instead, which may answer otherwise. */
const char *nv_nvml_readers(const facts *f, char *buf, size_t size);
/* MiB of a byte count, for evidence. */
long long nv_mib(long long bytes);
/* The path between CUDA devices i and j as nvidia-smi topo -m names it (topology.gpu.*, matched
 * through the PCI bus ids), or NULL when the facts do not say (rules_nvlink.c). */
const char *nv_cuda_pair_path(const facts *f, long long i, long long j);
#endif
