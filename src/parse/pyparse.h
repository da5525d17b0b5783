/*
 * Parsers for the small text files of a Python installation, all pure functions over a buffer
 * (fuzzed in tests/fuzz/fuzz_pyparse.c): torch/version.py, pyvenv.cfg, dist-info METADATA and
 * RECORD, conda-meta file names and pytorch build strings.
 */
#ifndef GPUVET_PYPARSE_H
#define GPUVET_PYPARSE_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

/* A module-level assignment `name = 'value'` (also `name: Optional[str] = "value"`). Returns true
 * when the name is assigned; *is_none when the value is None (out is then ""). Values that are
 * not a plain string literal or None give false. */
bool pyparse_assign(const char *text, const char *name, char *out, size_t n, bool *is_none);
/* `key = value` of pyvenv.cfg (keys compared case-insensitively, blanks around '=' allowed). */
bool pyparse_cfg(const char *text, const char *key, char *out, size_t n);
/* A header field of METADATA (RFC 822 style, stops at the first blank line): "Name", "Version". */
bool pyparse_metadata_field(const char *text, const char *field, char *out, size_t n);
/* Requires-Dist lines pinning an exact version ("nvidia-cudnn-cu13==9.19.0.56; ..."): the
 * normalised names and versions, in order. Extras ("cuda-toolkit[cudart]==13.0.2") drop. */
void pyparse_requires_pins(const char *text, strlist *names, strlist *versions);
/* PEP 503 normalisation: lower case, runs of '-', '_', '.' become '-'. */
void pyparse_normalize_name(const char *in, char *out, size_t n);
/* "nvidia_cudnn_cu13-9.19.0.56.dist-info" -> name "nvidia-cudnn-cu13", version "9.19.0.56". */
bool pyparse_dist_info_dir(const char *dirname, char *name, size_t nn, char *version, size_t vn);
/* Calls fn for the path field of every RECORD line (CSV, quoted fields allowed). */
void pyparse_record(const char *text, void (*fn)(const char *path, void *ctx), void *ctx);
/* "cudnn-8.9.2.26-cuda11_0.json" -> name "cudnn", version "8.9.2.26", build "cuda11_0". */
bool pyparse_conda_meta(const char *filename, char *name, size_t nn, char *version, size_t vn, char *build,
			size_t bn);
/* A pytorch conda build string: "py3.10_cuda11.8_cudnn8.7.0_0" -> cuda "11.8", cudnn "8.7.0";
 * "cpu_py310h..." / "py3.9_cpu_0" -> cpu; conda-forge "cuda120_py311h..." -> cuda "12.0". */
bool pyparse_conda_torch_build(const char *build, char *cuda, size_t cn, char *cudnn, size_t dn, bool *cpu);
/* The version in a shared library file name after its soname stem: "libcudnn.so.9.14.0" -> "9.14.0",
 * "libcudart.so.12" -> "12"; "" when there is none. */
void pyparse_so_version(const char *filename, char *out, size_t n);
/* Do two library versions name different releases? Compares the components both have, at most
 * `depth` of them ("9.19.0.56" vs "9.19.0" with depth 3: same). Unknown ("") never differs. */
bool lib_versions_differ(const char *a, const char *b, int depth);
#endif
