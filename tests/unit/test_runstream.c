/*
 * report/runstream.h: a history export read run by run. What it must get right is what a scanner
 * that does not build the document can get wrong: a brace or a quote inside a string, escapes,
 * members before and after "runs", any layout; and what it must refuse: a run that is not an
 * object, a document cut short, more after its end. Anything that is not a history document is
 * read whole, byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/runstream.h"

/* The runs of text, their "id"s in ids (at most 8), or -1 with *err on an error. */
static int read_runs(const char *text, int *ids, char **err)
{
	FILE *fp = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(fp);
	runstream *rs = runstream_open(fp, "doc.json");
	assert_true(runstream_is_history(rs));
	int n = 0;
	cJSON *run;
	*err = NULL;
	while ((run = runstream_next(rs, err))) {
		assert_true(n < 8);
		ids[n++] = cJSON_GetObjectItem(run, "id")->valueint;
		cJSON_Delete(run);
	}
	runstream_close(rs);
	fclose(fp);
	return *err ? -1 : n;
}

static void test_runs_any_layout(void **s)
{
	(void)s;
	int ids[8];
	char *err;
	/* as gpuvet writes it now: one run a line */
	assert_int_equal(read_runs("{\"schema\":\"gpuvet.history/1\",\"runs\":[\n{\"id\":1},\n{\"id\":2}\n]}\n", ids, &err), 2);
	assert_int_equal(ids[1], 2);
	/* indented, as earlier gpuvets wrote it, with text that looks like structure */
	assert_int_equal(read_runs("{\n\t\"schema\":\t\"gpuvet.history/1\",\n\t\"runs\":\t[{\n\t\t\t\"id\":\t7,\n"
				   "\t\t\t\"summary\":\t\"a \\\"quoted\\\" {brace}] [\\\\\"\n\t\t}, {\n\t\t\t\"id\":\t8,"
				   "\"x\":[[{}],\"]\"]}]\n}",
				   ids, &err),
			 2);
	assert_int_equal(ids[0], 7);
	assert_int_equal(ids[1], 8);
	/* members after the runs, none at all, an empty document */
	assert_int_equal(read_runs("{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":3}],\"note\":{\"a\":[1,\"}\"]},\"n\":-1.5e3}",
				   ids, &err),
			 1);
	assert_int_equal(read_runs("{\"schema\":\"gpuvet.history/1\",\"runs\":[\n]}", ids, &err), 0);
	assert_int_equal(read_runs("{\"schema\":\"gpuvet.history/1\"}", ids, &err), 0);
}

static void test_refused(void **s)
{
	(void)s;
	int ids[8];
	char *err;
	static const char *const bad[] = {
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":1},\n{\"id\":2",  /* cut inside a run */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":1}",             /* cut after one */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[1,2]}",                  /* runs that are not objects */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":1,}]}",          /* a run that is not JSON */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":1}]}{}",         /* more after the end */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"id\":1} {\"id\":2}]}", /* no comma */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":{}}",                     /* runs not an array */
		"{\"schema\":\"gpuvet.history/1\",\"schema\":\"gpuvet.check/1\"}",   /* a second schema */
		"{\"schema\":\"gpuvet.history/1\",\"runs\":[{\"s\":\"open",         /* cut inside a string */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(read_runs(bad[i], ids, &err), -1);
		assert_non_null(strstr(err, "doc.json"));
		free(err);
	}
}

static void test_other_documents_whole(void **s)
{
	(void)s;
	static const char *const docs[] = {
		"{\"schema\":\"gpuvet.bench/1\",\"figures\":[]}",
		"{\"runs\":[],\"schema\":\"gpuvet.history/1\"}", /* a history whose schema comes last */
		"not json at all",
		"",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		FILE *fp = fmemopen((void *)docs[i], strlen(docs[i]) + (docs[i][0] ? 0 : 1), "r");
		assert_non_null(fp);
		runstream *rs = runstream_open(fp, "doc.json");
		assert_false(runstream_is_history(rs));
		size_t len;
		char *err = NULL;
		char *text = runstream_slurp(rs, 1 << 20, &len, &err);
		assert_non_null(text);
		assert_string_equal(text, docs[i]);
		free(text);
		runstream_close(rs);
		fclose(fp);
	}
	/* over the bound: refused, naming the file */
	char big[5000];
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	FILE *fp = fmemopen(big, strlen(big), "r");
	runstream *rs = runstream_open(fp, "big.json");
	size_t len;
	char *err = NULL;
	assert_null(runstream_slurp(rs, 4096, &len, &err));
	assert_non_null(strstr(err, "big.json"));
	free(err);
	runstream_close(rs);
	fclose(fp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_any_layout),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_other_documents_whole),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
