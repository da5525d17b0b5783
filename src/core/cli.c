#include "core/cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/text.h"
#include "core/util.h"

global_opts gopts = {NULL, NULL, -1};

/* One line on stderr, through the text sanitizer: messages name paths and values of the machine. */
static void message(const char *prefix, const char *fmt, va_list ap) GV_PRINTF(2, 0);
static void message(const char *prefix, const char *fmt, va_list ap)
{
	char *m = xvasprintf(fmt, ap); /* %m: errno is still the caller's here */
	char *t = text_safe_dup(m);
	fprintf(stderr, "gpuvet: %s%s\n", prefix, t);
	free(t);
	free(m);
}

void gv_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("", fmt, ap);
	va_end(ap);
}

void gv_warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	message("warning: ", fmt, ap);
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

int usage_getopt_rest(int c, const char *usage, char *const argv[])
{
	if (c == 'h') {
		fputs(usage, stdout);
		return EXIT_OK;
	}
	if (c == ':')
		return usage_error(usage, "option %s needs a value", argv[optind - 1]);
	return usage_error(usage, "unknown option %s", argv[optind - 1]);
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

