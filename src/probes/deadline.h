/*
 * Running a probe body with a deadline. Driver calls can hang for minutes (nvmlInit or cuInit
 * on a GPU that fell off the bus, a wedged driver): the body runs in its own thread on a private
 * fact store, merged when it finishes in time. On timeout the thread is abandoned (it frees its
 * store if it ever returns) and the caller reports the timeout, so `gpuvet check` always ends.
 */
#ifndef GPUVET_PROBES_DEADLINE_H
#define GPUVET_PROBES_DEADLINE_H
#include <stdbool.h>
#include <stddef.h>

#include "core/child.h"
#include "probes/probes.h"

/* Runs body(private facts, o); true when it finished within seconds (its facts merged into f). */
bool probe_run_with_deadline(facts *f, void (*body)(facts *, const probe_opts *), const probe_opts *o,
			     double seconds);

/* A driver library's body (NVML's, cuInit's) under the driver deadline (seconds): when it does
 * not answer, init_key becomes an error fact from source ("nvmlInit_v2"), "NVML did not answer
 * within 30 s" and detail after it, and timeout_key true. */
void probe_run_driver_body(facts *f, void (*body)(facts *, const probe_opts *), const probe_opts *o, double seconds,
			   const char *source, const char *who, const char *detail, const char *init_key,
			   const char *timeout_key);

/* What the parent puts when the child that loaded a driver library hung, crashed or exited:
 * library_key an error fact when it died loading the library (or before any call), else the file
 * it loaded (its source GPUVET_NVML_LIB or GPUVET_CUDA_LIB when env is set, else dlopen), and
 * version_key the version in the installed file's name (prefix "libcuda.so."). The child's story
 * is in what; returns true when it died loading. */
bool probe_put_library_failed(facts *f, const gv_child_report *r, const char *env, const char *prefix,
			      const char *library_key, const char *version_key, char *what, size_t size);
#endif
