/*
 * PyTorch builds in the knowledge base (data/torch_cuda.csv, torch_cudnn.csv, torch_vision.csv):
 * which CUDA variants each release ships, their architecture lists, the cuDNN and NCCL they pin,
 * the torchvision that pairs with them; and whether a driver runs a given CUDA runtime
 * (data/cuda_driver.csv). Cells the KB leaves empty stay unknown ("" / false), never guessed.
 */
#ifndef GPUVET_KB_TORCH_H
#define GPUVET_KB_TORCH_H
#include <stdbool.h>
#include <stddef.h>

#include "kb/kb.h"

typedef struct torch_build {
	char version[16]; /* release as the KB names it: "2.11", "1.8.1" */
	char variant[16]; /* "cu130" */
	char cuda[8];     /* "13.0" */
	char arch[256];   /* "sm_75 sm_80 ... compute_120"; "" when the KB has no list */
	char cudnn[24];   /* pinned cuDNN, "" when unknown */
	char nccl[24];
	bool is_default;  /* the variant plain `pip install torch` gets from PyPI */
	bool arch_verified;
} torch_build;

/* Every (release, variant) pair the KB lists, oldest release first. Caller frees *out (a copy of
 * what the knowledge base derived once: kb_memo). */
size_t kb_torch_builds(const kb *k, torch_build **out);
/* Derives them from the tables (torch_cuda, torch_cudnn): kb_memo's maker. */
size_t kb_torch_builds_make(const kb *k, void **out);
/* The build for a torch version ("2.11.0+cu130", "2.11.0", "1.8.1") and variant ("cu130"; NULL:
 * the release's default variant). Exact release rows ("1.8.1") win over major.minor rows. */
bool kb_torch_build(const kb *k, const char *torch_version, const char *variant, torch_build *out);
/* The torchvision release that pairs with a torch release ("2.11" -> "0.26"); verified says
 * whether the KB row is more than a pattern. */
bool kb_torchvision(const kb *k, const char *torch_version, char *out, size_t n, bool *verified);

/* The Python versions a release's wheels are built for ("2.11" -> "3.10", "3.14"), from the
 * python_versions column of torch_cuda.csv; false when the KB has no range for it. */
bool kb_torch_python(const kb *k, const char *release, char *lo, size_t nlo, char *hi, size_t nhi);

/* "cu130" -> "13.0", "cu92" -> "9.2"; "13.0" -> "cu130". */
bool torch_variant_cuda(const char *variant, char *cuda, size_t n);
bool torch_cuda_variant(const char *cuda, char *variant, size_t n);
/* The local version label of a torch version: "2.11.0+cu130" -> "cu130", "+cpu" -> "cpu",
 * "+rocm6.2" -> "rocm6.2"; "" when there is none. */
void torch_version_label(const char *version, char *out, size_t n);
/* "2.11.0+cu130" -> "2.11". */
void torch_version_release(const char *version, char *out, size_t n);

typedef enum {
	DRV_FIT_UNKNOWN, /* the KB does not know this CUDA version, or nothing known of the driver */
	DRV_FIT_NATIVE,  /* the driver is at least the toolkit's own driver */
	DRV_FIT_MVC,     /* runs through minor-version compatibility (same major, driver above the floor) */
	DRV_FIT_TOO_OLD,
} drv_fit;
/* Can a driver (version "580.95.05", may be NULL; and/or its maximum CUDA as cuDriverGetVersion
 * gives it, 13000, 0 when unknown) run a CUDA runtime "12.8"? need receives the minimum driver
 * ("525.60.13") when the KB knows it. */
drv_fit kb_driver_fit(const kb *k, const char *driver_version, long long driver_cuda, const char *cuda, char *need,
		      size_t n);
const char *drv_fit_name(drv_fit f);
#endif
