/* The tune probe's output (a child's stdout and stderr: untrusted): the input is read both as
 * the JSON document and, line by line, as RESULT lines; then advised on and rendered. */
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kb/kb.h"
#include "tune/tune_advice.h"
#include "tune/tune_probe.h"
#include "tune/tune_render.h"
#include "tune/tune_report.h"

static void exercise(tune_report *r, const kb *k)
{
	tune_advice *a = tune_advise(r, k);
	tune_render_opts o = {false, true, "2026-01-01", NULL};
	FILE *devnull = fopen("/dev/null", "w");
	if (devnull) {
		tune_render_text(devnull, r, a, &o);
		fclose(devnull);
	}
	cJSON *j = tune_render_json(r, a, &o);
	char *s = cJSON_PrintUnformatted(j);
	free(s);
	cJSON_Delete(j);
	tune_advice_free(a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static kb *k;
	if (!k) {
		char *err = NULL;
		k = kb_load(NULL, &err);
		free(err);
	}
	tune_report *r = tune_report_parse((const char *)data, size, NULL);
	exercise(r, k);
	tune_report_free(r);

	/* the same bytes as the probe's stderr: protocol lines and free text */
	char *text = xstrndup((const char *)data, size);
	strlist lines = {0};
	sl_split(&lines, text, "\n", false);
	tune_stream st;
	tune_stream_init(&st);
	for (size_t i = 0; i < lines.n; i++)
		tune_stream_line(&st, lines.v[i]);
	r = tune_report_parse(NULL, 0, &st.results);
	tune_util_apply(&st.util, r);
	exercise(r, k);
	tune_report_free(r);
	char *tail = tune_stream_tail(&st, 6);
	free(tail);
	tune_stream_free(&st);
	sl_free(&lines);
	free(text);
	return 0;
}
