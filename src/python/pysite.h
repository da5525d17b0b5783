/*
 * What is installed in a site-packages directory, read statically: torch/version.py, dist-info
 * directories (names, versions, RECORD file ownership), conda-meta of an environment, CUDA
 * extension modules (shared objects carrying a .nv_fatbin section) and their architectures.
 */
#ifndef GPUVET_PYSITE_H
#define GPUVET_PYSITE_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"
#include "cuda/fatbin.h"

typedef struct torch_version_info {
	char version[64];     /* __version__ */
	char cuda[16];        /* "13.0"; "" with cuda_none when None */
	bool cuda_none;
	char hip[32];         /* "" when None or absent */
	char git_version[64];
	bool have_cuda_field; /* the file assigns `cuda` at all */
} torch_version_info;

/* Reads DIR/torch/version.py; 0 ok, -errno when unreadable, -EINVAL when it has no __version__. */
int torch_read_version(const char *torch_dir, torch_version_info *out);

/* The distributions (dist-info/egg-info) of a site directory. */
typedef struct pip_dist {
	char name[96];     /* normalised: "nvidia-cudnn-cu13" */
	char version[48];
	char *meta_dir;    /* absolute path of the .dist-info directory */
} pip_dist;
typedef struct pip_dists {
	pip_dist *v;
	size_t n;
} pip_dists;
void pip_list(const char *site, pip_dists *out);
void pip_dists_free(pip_dists *d);
const pip_dist *pip_find(const pip_dists *d, const char *name);
/* Name and Version from the distribution's METADATA (PKG-INFO for egg-info), which outrank its
 * directory name; false when the file has neither (out then holds the directory's values). */
bool pip_metadata(const pip_dist *d, char *name, size_t nn, char *version, size_t vn);

/* Which wheel installed a file: built from the RECORD of the distributions whose name starts with
 * one of the prefixes ("nvidia-", "torch"). Paths are absolute, on the examined machine. */
typedef struct pip_owners {
	strlist paths, dists, versions;
} pip_owners;
void pip_owners_add(pip_owners *o, const char *site, const pip_dists *d, const char *const *prefixes);
void pip_owners_free(pip_owners *o);
/* The distribution that owns abs (compared after resolving symlinks); NULL when none. */
const char *pip_owner(const pip_owners *o, const char *abs, const char **version);

/* Packages of interest in PREFIX/conda-meta (cudatoolkit, cudnn, pytorch, pytorch-cuda, nccl...). */
typedef struct conda_pkgs {
	strlist names, versions, builds;
} conda_pkgs;
bool conda_list(const char *prefix, conda_pkgs *out); /* false when there is no conda-meta */
void conda_pkgs_free(conda_pkgs *c);

/* A shared object's .nv_fatbin summary. Returns 1 when it has one, 0 when it has none (or is not an
 * ELF object), -1 on a read error or malformed ELF (err set). deadline: now_seconds() value. */
int lib_fatbin(const char *abs, double deadline, fatbin_summary *out, char *err, size_t errn);

/* CUDA extension modules under a site directory: shared objects (at most depth 3, bounded) that carry
 * device code, excluding torch/ and nvidia/ themselves. fn gets each one. */
typedef void (*ext_fn)(const char *abs, const char *package, const fatbin_summary *s, void *ctx);
size_t ext_scan(const char *site, double deadline, ext_fn fn, void *ctx);

/* The version a library file's name carries after resolving links ("libcudnn.so.9" ->
 * libcudnn.so.9.14.0 -> "9.14.0"); "" when none. real (may be NULL) gets the resolved path. */
void lib_file_version(const char *abs, char *out, size_t n, char **real);
#endif
