/* Helpers shared by the toolkit and loader rules: reading toolkit.* / loader.* facts and the
 * driver's CUDA limit. Pure: facts and the knowledge base only. */
#ifndef GPUVET_RULES_CUDA_FACTS_H
#define GPUVET_RULES_CUDA_FACTS_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"
#include "kb/kb.h"

/* The driver's version string (NVML, else the kernel module); NULL when no driver is seen. */
const char *cf_driver_version(const facts *f);
/* The highest CUDA version the driver runs ("13.0"), and where that came from (for evidence).
 * From nvml.cuda_version, cuda.driver_version, or the KB given the driver version. */
bool cf_driver_max_cuda(const facts *f, const kb *k, char *out, size_t n, char *why, size_t wn);
/* "/usr/local/cuda-12.4 (CUDA 12.4.1)" for toolkit N. */
const char *cf_install_label(const facts *f, int n, char *buf, size_t size);
/* toolkit.N.version as "X.Y" (false when unknown). */
bool cf_install_mm(const facts *f, int n, char *out, size_t size);
int cf_install_count(const facts *f);
/* -1 when the fact is missing */
int cf_int(const facts *f, const char *key);
/* "13.0.88" -> "13.0" */
bool version_major_minor_text(const char *v, char *out, size_t n);
/* major of "12.4" */
int cf_major(const char *v);
#endif
