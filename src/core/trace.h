/*
 * Where a command's time goes: with GPUVET_TRACE naming a file, each gv_trace() appends one
 * line "gvt PID EVENT MS" to it, MS the milliseconds since GPUVET_TRACE_T0 (CLOCK_MONOTONIC
 * seconds, set by whatever started gpuvet, so that exec and the dynamic loader are counted) or,
 * without it, since the first event. The children of the isolated probes append to the same file
 * (one write per line, O_APPEND). Unset, a call costs a load and a branch. docs/architecture.md,
 * "Timing a command"; scripts/device/fastcheck.sh reads it.
 */
#ifndef GPUVET_CORE_TRACE_H
#define GPUVET_CORE_TRACE_H

#include <stdbool.h>

/* Whether GPUVET_TRACE is on: for what is measured only to be traced. */
bool gv_tracing(void);
/* One event; the printf-style name is formatted only when tracing is on. */
void gv_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#endif
