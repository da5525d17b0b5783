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
/* dlsym that leaves no error behind: glibc keeps a failed lookup's message in a per-thread block
 * that only the thread's next dl call or two dlerror() calls free; a worker thread that probed an
 * optional symbol the driver lacks and then ended would leave it behind (LeakSanitizer sees it). */
void *gv_dl_sym(void *handle, const char *name);
/* The first of names (NULL terminated) that the library exports, or NULL: a versioned symbol
 * ("nvmlInit_v2") before the older one. */
void *gv_dl_sym_first(void *handle, const char *const names[]);

/* What NVML's and libcuda's wrappers load the same way. */
typedef struct gv_driver_lib {
	const char *env_var;          /* GPUVET_NVML_LIB */
	const char *soname;           /* libnvidia-ml.so.1 */
	const char *anchor;           /* a required symbol: its dladdr names the file the loader mapped */
	void (*resolve)(void);        /* fills the wrapper's function table from the handle stored */
	const char *(*missing)(void); /* the first required symbol the table lacks, or NULL */
} gv_driver_lib;

/* Opens the library (gv_dl_open_driver_lib), stores the handle in *handle (NULL when it did not
 * open), resolves the table and checks the required symbols. True when they are all there; else
 * err says why ("PATH: symbol cuInit not found"). On success path is the file the loader really
 * mapped unless the environment variable chose it. */
bool gv_dl_load_driver_lib(const gv_driver_lib *lib, void **handle, char *path, size_t path_size, char *err,
			   size_t err_size, bool *from_env);
/* dlopen with fd 1 on /dev/null meanwhile: a library that prints while it loads (the CUDA
 * toolkit's stub cuBLASLt) cannot mix its text into our output (bench --json). */
void *gv_dl_open_quiet(const char *file, int flags);
/* After a successful open by soname: the file the loader really mapped (via a symbol's dladdr). */
void gv_dl_real_path(void *handle, const char *symbol, char *path, size_t size);
#endif
