/* A facts file (check --facts FILE, a recorded check --json document): parsed, judged by every
 * rule, rendered as text, JSON and JUnit. Rules see whatever a hostile or damaged file holds:
 * wrong types, huge numbers, control characters, keys that no probe writes. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/findings.h"
#include "kb/kb.h"
#include "render/render.h"
#include "core/text.h"
#include "diagnose/diagnose.h"

static kb *k;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!k) {
		char *err = NULL;
		k = kb_load(NULL, &err);
		if (!k)
			abort();
	}
	cJSON *doc = cJSON_ParseWithLength((const char *)data, size);
	if (!doc)
		return 0;
	const cJSON *obj = cJSON_GetObjectItemCaseSensitive(doc, "facts");
	char *err = NULL;
	facts *f = facts_from_json(obj ? obj : doc, &err);
	free(err);
	cJSON_Delete(doc);
	if (!f)
		return 0;
	findings fs;
	findings_init(&fs);
	diagnose_opts o = {.kb = k};
	diagnose(f, &o, &fs);
	render_opts ro = {.color = size & 1, .verbose = true};
	char *text = NULL;
	size_t tlen = 0;
	FILE *out = open_memstream(&text, &tlen);
	render_check_text(out, f, &fs, &ro);
	render_check_junit(out, &fs, NULL, &ro);
	fclose(out);
	/* the text report carries no control character but its own newlines and colours */
	for (size_t i = 0; i < tlen; i++) {
		unsigned char c = (unsigned char)text[i];
		if (c == 0x1b && (size & 1))
			continue;
		if ((c < 0x20 && c != '\n') || c == 0x7f)
			abort();
	}
	free(text);
	cJSON *j = render_check_json(f, &fs, &ro);
	char *s = cJSON_Print(j);
	char *safe = json_text_safe(s);
	cJSON *back = cJSON_Parse(safe);
	if (!back)
		abort(); /* what check --json prints always parses */
	cJSON_Delete(back);
	free(safe);
	free(s);
	cJSON_Delete(j);
	findings_free(&fs);
	facts_free(f);
	return 0;
}
