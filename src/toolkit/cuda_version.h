/*
 * Parsers of the places a CUDA version is written: version.json (CUDA 11.1+), version.txt (up to
 * 11.0), `nvcc --version` output, C headers (#define CUDNN_MAJOR 9), library file names
 * (libcudnn.so.9.14.0) and pip dist-info directory names. Pure functions over bytes: no I/O, so the
 * fuzzer runs them on anything. Each returns false (and leaves out empty) on garbage.
 */
#ifndef GPUVET_CUDA_VERSION_H
#define GPUVET_CUDA_VERSION_H
#include <stdbool.h>
#include <stddef.h>

/* version.json: {"cuda": {"version": "12.4.1"}} -> "12.4.1" (cJSON). */
bool cuda_version_from_json(const char *text, size_t len, char *out, size_t n);
/* version.txt: "CUDA Version 11.8.89" -> "11.8.89". */
bool cuda_version_from_txt(const char *text, size_t len, char *out, size_t n);
/* nvcc --version: "Cuda compilation tools, release 13.0, V13.0.88" -> "13.0.88" ("13.0" without V). */
bool cuda_version_from_nvcc(const char *text, size_t len, char *out, size_t n);
/* The integer value of "#define NAME <int>" in a header; false when absent or not a number. */
bool header_define_int(const char *text, size_t len, const char *name, long *value);
/* A header's version: "cudnn" (cudnn_version.h / cudnn.h), "nccl" (nccl.h), "cublas"
 * (cublas_api.h), "cudart" (cuda_runtime_api.h: CUDART_VERSION 13000 -> "13.0"), "cuda"
 * (cuda.h: CUDA_VERSION), "cusparse" (cusparse.h). */
bool header_version(const char *what, const char *text, size_t len, char *out, size_t n);
/* The version in a real library file name after its ".so.": "libcudnn.so.9.14.0" -> "9.14.0";
 * only when it has at least two numeric parts (libcudnn.so.9 says only the soname major). */
bool libname_version(const char *file_name, char *out, size_t n);
/* The soname major after ".so.": "libcudnn.so.9.14.0" -> 9; -1 when none. */
int libname_major(const char *file_name);
/* "13.0.88" -> "13.0" (first two numeric parts); false when not at least "X.Y". */
bool version_major_minor(const char *v, char *out, size_t n);
#endif
