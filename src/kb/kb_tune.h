/* What a training step should take on a GPU class (data/tune_expect.csv), for `gpuvet tune`. */
#ifndef GPUVET_KB_TUNE_H
#define GPUVET_KB_TUNE_H
#include <stdbool.h>

#include "kb/kb.h"

typedef struct tune_expect_key {
	const char *gpu;     /* the GPU's name as CUDA/NVML report it: "NVIDIA H200" */
	const char *model;   /* resnet50, bert */
	const char *impl;    /* torchvision, transformers, builtin */
	int batch;
	int image_size;      /* -1 when not applicable */
	int seq_len;         /* -1 when not applicable */
	const char *setting; /* ref_fp32 ... */
	const char *metric;  /* step_ms, peak_mib */
} tune_expect_key;

/* The expected figure, the fraction by which a measurement may differ from it and still be
 * "as expected" (NAN when the row leaves it empty: the caller's default), and its source
 * (pointers into the knowledge base); tolerance and source may be NULL. False when the table
 * has no row for exactly this GPU, model, library, shape and setting. */
bool kb_tune_expect(const kb *k, const tune_expect_key *key, double *value, double *tolerance, const char **source);
#endif
