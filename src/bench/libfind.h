/*
 * Opening a library that gpuvet bench uses (cuBLASLt, NCCL, OpenBLAS) the way a user's program
 * would find it: the file an environment variable names; else the dynamic loader's choice by
 * soname (LD_LIBRARY_PATH, ld.so.cache); else the copies that pip wheels install into Python's
 * site-packages (nvidia/cu13/lib, nvidia/cublas/lib, nvidia/nccl/lib: the ones PyTorch uses).
 */
#ifndef GPUVET_BENCH_LIBFIND_H
#define GPUVET_BENCH_LIBFIND_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

typedef struct lib_handle {
	void *h;          /* dlopen handle; NULL when not found */
	char path[512];   /* the file loaded (real path when the loader can say) */
	char how[32];     /* "environment", "loader", "pip wheel" */
	char error[1024]; /* why nothing loaded: every place tried */
} lib_handle;

typedef struct lib_spec {
	const char *what;                 /* "cuBLASLt" */
	const char *env_var;              /* "GPUVET_CUBLASLT_LIB" */
	const char *const *sonames;       /* tried in order, NULL-terminated */
	const char *const *wheel_subdirs; /* under site-packages ("nvidia/cu13/lib"), NULL-terminated; may be NULL */
	const char *probe_symbol;         /* a symbol that must exist ("cublasLtCreate") */
} lib_spec;

/* True when loaded. A file named by env_var that does not load is an error (no fallback): the
 * user asked for that one. */
bool lib_open(const lib_spec *spec, lib_handle *out);
/* Forgets the handle; the library stays mapped (see libfind.c). */
void lib_close(lib_handle *lh);
/* A symbol, or NULL. */
void *lib_sym(const lib_handle *lh, const char *name);

/* A function the library must export, and where to put it. */
typedef struct lib_symbol {
	const char *name;
	void **slot;
} lib_symbol;
/* Fills every slot; on the first missing symbol sets lh->error, closes the handle and returns
 * false. */
bool lib_bind(lib_handle *lh, const lib_symbol *syms, size_t n);

/* The site-packages directories where wheels may be: $VIRTUAL_ENV, $CONDA_PREFIX, the python3
 * on PATH, ~/.local, /usr/local, /usr, /opt/conda; each lib/python3.* /{site,dist}-packages that
 * exists, plus PYTHONPATH entries. In that order, without duplicates. */
void lib_site_dirs(strlist *out);
#endif
