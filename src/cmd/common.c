#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/facts.h"
#include "render/text.h"

global_opts gopts = {NULL, NULL, -1};

/* One line on stderr, through the text sanitizer: messages name paths and values of the machine. */
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

char *read_input_file(const char *what, const char *path, size_t max, size_t *len)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!fp) {
		gv_error("cannot open %s %s: %m", what, path);
		return NULL;
	}
	strbuf sb;
	sb_init(&sb);
	char buf[65536];
	size_t r;
	bool too_big = false;
	while (!too_big && (r = fread(buf, 1, sizeof(buf), fp)) > 0) {
		sb_addn(&sb, buf, r);
		too_big = sb.len > max;
	}
	bool failed = ferror(fp);
	if (fp != stdin)
		fclose(fp);
	if (too_big || failed) {
		if (too_big)
			gv_error("%s %s is larger than %zu MiB", what, path, max >> 20);
		else
			gv_error("cannot read %s %s", what, path);
		sb_free(&sb);
		return NULL;
	}
	*len = sb.len;
	return sb_steal(&sb);
}

/* Facts recorded earlier (check --json, or its facts object alone) for --facts FILE; "-" is
 * standard input. Errors are printed; NULL then. */
facts *facts_load_file(const char *path)
{
	size_t len;
	char *text = read_input_file("facts file", path, 256u << 20, &len);
	if (!text)
		return NULL;
	cJSON *doc = cJSON_ParseWithLength(text, len);
	free(text);
	if (!doc) {
		gv_error("facts file %s is not valid JSON", path);
		return NULL;
	}
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(doc, "facts");
	char *err = NULL;
	facts *f = facts_from_json(obj ? obj : doc, &err);
	if (!f) {
		gv_error("facts file %s: %s", path, err);
		free(err);
	}
	cJSON_Delete(doc);
	return f;
}
