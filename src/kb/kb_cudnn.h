/* Knowledge-base lookups for cuDNN (data/cudnn_cuda.csv: which CUDA majors a cuDNN release is built for). */
#ifndef GPUVET_KB_CUDNN_H
#define GPUVET_KB_CUDNN_H
#include <stdbool.h>
#include <stddef.h>

#include "kb/kb.h"

/* The CUDA majors cuDNN `cudnn_version` ("9.14.0") has builds for, as a bit set (bit 12 set:
 * CUDA 12). 0 when the table has no row for that release. */
unsigned long kb_cudnn_cuda_majors(const kb *k, const char *cudnn_version);
#endif
