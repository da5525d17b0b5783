#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmd/cmd.h"

global_opts gopts = {NULL, NULL, -1};

void gv_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuvet: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

void gv_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuvet: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int usage_error(const char *usage, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("gpuvet: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	if (usage)
		fprintf(stderr, "\n%s", usage);
	return EXIT_USAGE;
}

bool parse_int_opt(const char *opt, const char *s, long min, long max, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s ? s : "", &end, 10);
	if (!s || !*s || *end || errno || v < min || v > max) {
		gv_error("%s: expected a whole number from %ld to %ld, got '%s'", opt, min, max, s ? s : "");
		return false;
	}
	*out = v;
	return true;
}

bool parse_double_opt(const char *opt, const char *s, double min, double max, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s ? s : "", &end);
	if (!s || !*s || *end || errno || !isfinite(v) || v < min || v > max) {
		gv_error("%s: expected a number from %g to %g, got '%s'", opt, min, max, s ? s : "");
		return false;
	}
	*out = v;
	return true;
}
