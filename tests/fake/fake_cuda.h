/*
 * Inside the fake libcuda: its device memory (one arena of host memory that cuMemAlloc_v2 hands
 * out, first fit, 256-byte aligned) as the kernel models (fake_kernels.c) see it, bad cells
 * (cuda.mem_stuck_bit) included.
 */
#ifndef GPUVET_FAKE_CUDA_H
#define GPUVET_FAKE_CUDA_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvidia/cuda.h"

/* [p, p + n) lies inside one live allocation. */
bool fake_dev_range(uintptr_t p, size_t n);
/* Reads n bytes of device memory at src as a kernel or a copy engine does: the stuck bits of
 * cuda.mem_stuck_bit read as stuck, whatever was written. */
void fake_dev_read(void *dst, uintptr_t src, size_t n);
uint64_t fake_dev_read64(uintptr_t src);
uint32_t fake_dev_read32(uintptr_t src);
/* Reads cuda.mem_stuck_bit again (each launch and copy does, as the config may change). */
void fake_dev_faults_load(void);

/* The model of a kernel by its entry name (fake_kernels.c): NULL for a kernel that does nothing
 * here. It runs at launch, on the calling thread, and answers what the launch would. */
typedef CUresult (*fake_kernel_fn)(void **params);
fake_kernel_fn fake_kernel_model(const char *name);
#endif
