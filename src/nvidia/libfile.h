/*
 * The version in a driver library's file name: the driver installs libnvidia-ml.so.580.159.04
 * and libcuda.so.580.159.04, with .so.1 links to them. When NVML cannot even initialise (a
 * version mismatch after an upgrade), the file name still tells the user-space version.
 */
#ifndef GPUVET_NVIDIA_LIBFILE_H
#define GPUVET_NVIDIA_LIBFILE_H
#include <stdbool.h>
#include <stddef.h>

/* "580.159.04" when name is PREFIX + a dotted version ("libcuda.so." + "580.159.04"). */
bool gv_driver_lib_name_version(const char *name, const char *prefix, char *out, size_t size);
/* The version of the file a host path resolves to (links followed; inside the root tree when
 * --root is active). */
bool gv_driver_lib_file_version(const char *host_path, const char *prefix, char *out, size_t size);
/* The first PREFIX<version> file in the driver library directories (gv_driver_lib_dirs), through
 * sysroot: its absolute path (as seen inside the root) and version. */
bool gv_driver_lib_find(const char *prefix, char *path, size_t path_size, char *ver, size_t ver_size);
#endif
