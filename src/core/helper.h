/* Where gpuvet finds the programs it runs for a command of its own (gpuvet-serve: cmd/serve_exec.c).
 * In the order tried: beside the running gpuvet (the build tree), then where `make install` and the
 * package put it relative to gpuvet's own directory (../libexec/gpuvet under the same prefix: a
 * tree installed or moved anywhere), then the directory configured at build time. */
#ifndef GPUVET_CORE_HELPER_H
#define GPUVET_CORE_HELPER_H
#include <stdbool.h>
#include <stddef.h>

/* The first executable regular file NAME of those places into out; false when none is, with the
 * paths looked at in `tried` (joined by ", "). */
bool gv_helper_find(const char *name, char *out, size_t size, char *tried, size_t tried_size);
#endif
