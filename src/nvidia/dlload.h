/*
 * Opening an NVIDIA driver library (libnvidia-ml.so.1, libcuda.so.1) the way every wrapper of
 * ours does: the file named by an environment variable when set; else, with --root active, the
 * copy inside the root tree's library directories (or none); else the loader's choice.
 */
#ifndef GPUVET_NVIDIA_DLLOAD_H
#define GPUVET_NVIDIA_DLLOAD_H
#include <stdbool.h>
#include <stddef.h>

/* The library directories searched inside a --root tree, in order (NULL terminated). */
extern const char *const gv_driver_lib_dirs[];

/* Opens the library; returns the dlopen handle or NULL with err filled. path receives the file
 * tried (the env value, the root copy, or the soname), from_env whether env_var chose it. */
void *gv_dl_open_driver_lib(const char *env_var, const char *soname, char *path, size_t path_size, char *err,
			    size_t err_size, bool *from_env);
/* dlopen with fd 1 on /dev/null meanwhile: a library that prints while it loads (the CUDA
 * toolkit's stub cuBLASLt) cannot mix its text into our output (bench --json). */
void *gv_dl_open_quiet(const char *file, int flags);
/* After a successful open by soname: the file the loader really mapped (via a symbol's dladdr). */
void gv_dl_real_path(void *handle, const char *symbol, char *path, size_t size);
#endif
