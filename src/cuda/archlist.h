/*
 * Architecture lists in the form torch.cuda.get_arch_list() prints and the fatbin reader writes:
 * space- or comma-separated tokens "sm_75", "sm_90a", "sm_100f", "compute_90".
 *
 * Rules (CUDA compatibility guide): SASS for sm_XY runs on GPUs of the same major with minor >= Y;
 * "a" (arch-specific) SASS only on exactly X.Y; "f" (family) SASS on the same major with minor >= Y.
 * PTX for compute_XY is JIT-compiled by the driver for any GPU >= X.Y ("a" PTX: exactly X.Y).
 */
#ifndef GPUVET_ARCHLIST_H
#define GPUVET_ARCHLIST_H
#include <stdbool.h>
#include <stddef.h>

/* "9.0" -> 9, 0. */
bool cc_parse(const char *cc, int *major, int *minor);
/* Does the list carry code for compute capability major.minor? how (may be NULL) names the token
 * that covers it and whether it needs a JIT ("sm_90", "compute_90 (PTX, JIT-compiled)"). */
bool arch_tokens_cover(const char *tokens, int major, int minor, char *how, size_t n);
/* "7.5;8.0;9.0;12.0+PTX" (TORCH_CUDA_ARCH_LIST style, also "7.5 8.0") -> "sm_75 sm_80 sm_90 sm_120
 * compute_120". Returns false when no entry parsed. */
bool arch_tokens_from_dotted(const char *dotted, char *out, size_t n);
/* The highest SASS architecture in the list as "12.0" (for messages); false when none. */
bool arch_tokens_max(const char *tokens, char *out, size_t n);
#endif
