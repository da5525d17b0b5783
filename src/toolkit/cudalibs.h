/*
 * Copies of the CUDA libraries (libcudart, libcublas, libcublasLt, libcudnn and its sub-libraries,
 * libnccl, libnvrtc, libnvJitLink, libcusparse, libnvidia-ml, libcuda) in a set of directories,
 * each with its version and, for cuDNN and NCCL, the CUDA major it was built for. One copy is one
 * real file: the names that lead to it (libcudnn.so, libcudnn.so.9) are kept with it.
 */
#ifndef GPUVET_CUDALIBS_H
#define GPUVET_CUDALIBS_H
#include <stdbool.h>

#include "core/util.h"

typedef struct cuda_lib_copy {
	const char *lib;            /* the table name: "cudnn", "cudnn_ops", "cudart", "nvidia-ml" ... */
	char *real;                 /* the file, symlinks resolved */
	int major;                  /* soname major (libcudnn.so.9 -> 9); -1 when the names carry none */
	char *version;              /* "9.14.0"; NULL when unknown */
	const char *version_source; /* "file name", "header", "cudaRuntimeGetVersion", ... */
	int cuda_major;             /* the CUDA major the build is for; -1 unknown */
	char *cuda_major_source;    /* how it was told ("nvidia_cudnn_cu12 dist-info", "RUNPATH .../cu13/lib") */
	strlist names;              /* the paths that lead to it, as found in the scanned directories */
	bool stub;                  /* a link-time stub (a "stubs" directory): never a real driver */
} cuda_lib_copy;

typedef struct cuda_libs {
	cuda_lib_copy *v;
	size_t n;
	int dirs_scanned;
} cuda_libs;

/* The libraries looked for, NULL-terminated ("cudart", "cublas", ..., "cuda"). */
extern const char *const cuda_lib_names[];
/* Which library a file name is a copy of ("libcudnn_ops.so.9" -> "cudnn_ops"); NULL when none. */
const char *cuda_lib_match(const char *file_name);
/* The soname a program asks for: "lib<name>.so.<major>" ("libcudnn.so.9"). */
char *cuda_lib_soname(const char *lib, int major);

/* Adds the copies found in one directory of the examined machine (no recursion, 4096 names). */
void cuda_libs_scan_dir(cuda_libs *L, const char *dir);
/* Fills version and cuda_major of every copy: file names, headers next to the library, pip
 * dist-info, dpkg file lists, ELF RUNPATH/NEEDED; with allow_dlopen (never under --root) the
 * library's own version call for libcudart (cudaRuntimeGetVersion), within a few ms. */
void cuda_libs_versions(cuda_libs *L, bool allow_dlopen);
struct cuda_env;
/* Runtime libraries (cudart, nvrtc, nvJitLink) of unknown version inside a toolkit of the same
 * major take the toolkit's major.minor (version_source "toolkit version"). */
void cuda_libs_toolkit_versions(cuda_libs *L, const struct cuda_env *e);
/* The copy whose real file is real_path; NULL when none. */
const cuda_lib_copy *cuda_libs_find_real(const cuda_libs *L, const char *real_path);
void cuda_libs_free(cuda_libs *L);
#endif
