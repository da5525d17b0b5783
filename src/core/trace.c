#include "core/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int trace_fd = -1;
static double t0;

static double monotonic_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void trace_open(void)
{
	const char *path = getenv("GPUVET_TRACE");
	if (!path || !*path)
		return;
	/* not inherited by the programs gpuvet runs: the trace is gpuvet's own */
	trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (trace_fd < 0) {
		/* said once (the first mark is main's, before any child); the command runs untraced */
		gv_warning("GPUVET_TRACE: cannot open %s: %s", path, strerror(errno));
		return;
	}
	const char *start = getenv("GPUVET_TRACE_T0");
	char *end = NULL;
	t0 = start ? strtod(start, &end) : 0;
	if (!start || end == start || *end)
		t0 = monotonic_seconds();
}

bool gv_tracing(void)
{
	pthread_once(&once, trace_open);
	return trace_fd >= 0;
}

void gv_trace(const char *fmt, ...)
{
	pthread_once(&once, trace_open);
	if (trace_fd < 0)
		return;
	double ms = (monotonic_seconds() - t0) * 1e3;
	char line[256];
	int n = snprintf(line, sizeof(line), "gvt %ld ", (long)getpid());
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 24)
		n = (int)sizeof(line) - 24;
	n += snprintf(line + n, sizeof(line) - (size_t)n, " %.3f\n", ms);
	/* one write: the lines of the parent, its threads and its children never interleave */
	ssize_t w = write(trace_fd, line, (size_t)n);
	(void)w;
}
