#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/facts.h"
#include "core/text.h"

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
