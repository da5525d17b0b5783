/*
 * The CUDA installs of the examined machine (through --root) and what points at them: PATH's
 * nvcc, CUDA_HOME / CUDA_PATH and the /usr/local/cuda link. Shared by the toolkit probe and the
 * `gpuvet env` command. Bounded: a fixed set of places, no disk walk; nvcc is run (2 s limit,
 * 64 KiB of output) only when no version file, dist-info, header, nvcc's own ELF or libcudart's
 * file name says the version, and never under --root (a tree is read, never run).
 */
#ifndef GPUVET_TOOLKITS_H
#define GPUVET_TOOLKITS_H
#include <stdbool.h>

#include "core/util.h"

typedef struct cuda_install {
	char *root;                 /* real path of the install ("/usr/local/cuda-13.0") */
	char *version;              /* "13.0.88"; NULL when unknown */
	const char *version_source; /* "version.json", "version.txt", "dist-info", "cuda.h", "nvcc (ELF)",
					"libcudart file name", "nvcc --version" */
	char *version_error;        /* why unknown ("nvcc timed out after 2 s", ...) */
	char *nvcc;                 /* root/bin/nvcc when present */
	char *lib_dir;              /* lib64, targets/<arch>-linux/lib or lib; NULL when none */
	char *cudnn_version;        /* cuDNN headers inside the install (include/cudnn_version.h) */
	bool compat;                /* compat/libcuda.so.* (the cuda-compat forward-compatibility package) */
	char *found_as;             /* the name it was found under ("/usr/local/cuda-13.0", "$CONDA_PREFIX") */
	const char *origin;         /* "usr-local", "opt", "hpc-sdk", "conda", "PATH", "CUDA_HOME" */
} cuda_install;

enum { LINK_ABSENT = 0, LINK_OK, LINK_DANGLING, LINK_LOOP, LINK_DIRECTORY };
/* A LINK_* state as the facts, env --json and env's text name it: "symlink", "dangling", "loop",
 * "directory" or "absent". */
const char *cuda_link_state_name(int state);

typedef struct cuda_env {
	cuda_install *v;
	size_t n;
	char *path_nvcc;          /* the first nvcc on PATH, as PATH names it; NULL when none */
	int path_nvcc_install;    /* index into v, -1 */
	int path_nvcc_count;      /* nvcc found in this many PATH entries */
	char *cuda_home;          /* CUDA_HOME, else CUDA_PATH; NULL when neither is set */
	const char *cuda_home_var; /* "CUDA_HOME" or "CUDA_PATH" */
	bool cuda_home_exists;
	int cuda_home_install;
	char *cuda_path;          /* CUDA_PATH when CUDA_HOME is also set (may disagree) */
	int cuda_path_install;
	int usr_local_cuda;       /* LINK_* for /usr/local/cuda */
	char *usr_local_cuda_target; /* readlink text */
	int usr_local_cuda_install;
} cuda_env;

/* Finds the installs. run_nvcc false: never start nvcc (versions may stay unknown). */
void cuda_env_scan(cuda_env *e, bool run_nvcc);
void cuda_env_free(cuda_env *e);
/* The install whose version starts with want ("12.4" matches "12.4.1"); -1 when none. */
int cuda_env_find_version(const cuda_env *e, const char *want);
/* The install in use: PATH's nvcc, else CUDA_HOME, else /usr/local/cuda, else the only one; -1. */
int cuda_env_active(const cuda_env *e);
/* Reads the version of one install directory (used for each found install). */
void cuda_install_probe(cuda_install *ci, bool run_nvcc);
#endif
