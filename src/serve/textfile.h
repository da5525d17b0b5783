/*
 * node_exporter's textfile collector: the exposition written to DIR/gpuvet.prom atomically
 * (core/atomicfile.h: a new temporary file in DIR made by mkstemp, fsync, rename), so the
 * collector never reads half a file. The temporary name does not end in .prom, so the collector
 * never picks it up either.
 */
#ifndef GPUVET_SERVE_TEXTFILE_H
#define GPUVET_SERVE_TEXTFILE_H
#include <stdbool.h>
#include <stddef.h>

#define TEXTFILE_NAME "gpuvet.prom"

/* Writes data to DIR/name atomically. Returns 0, or -1 with err. */
int textfile_write(const char *dir, const char *name, const char *data, size_t len, char *err, size_t errsize);
#endif
