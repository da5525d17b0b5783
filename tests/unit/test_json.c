/* Unit tests of core/json: a value not known is null, and a struct's members in their table's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

static void assert_json(cJSON *o, const char *want)
{
	char *got = cJSON_PrintUnformatted(o);
	assert_string_equal(got, want);
	free(got);
	cJSON_Delete(o);
}

static void test_unknown_is_null(void **s)
{
	(void)s;
	cJSON *o = cJSON_CreateObject();
	json_add_num(o, "n", 1.5);
	json_add_num(o, "nan", NAN);
	json_add_num(o, "inf", -INFINITY);
	json_add_str(o, "s", "x");
	json_add_str(o, "s_null", NULL);
	json_add_str(o, "s_empty", "");
	json_add_text(o, "t", "y");
	json_add_text(o, "t_null", NULL);
	json_add_text(o, "t_empty", "");
	json_add_count(o, "c", 0);
	json_add_count(o, "c_unknown", -1);
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(o, "inf")));
	assert_json(o, "{\"n\":1.5,\"nan\":null,\"inf\":null,\"s\":\"x\",\"s_null\":null,\"s_empty\":\"\","
		       "\"t\":\"y\",\"t_null\":null,\"t_empty\":null,\"c\":0,\"c_unknown\":null}");
}

typedef struct rec {
	char name[16];
	const char *note;
	double ms;
	int batch, count;
	bool ok;
} rec;

static const json_field rec_fields[] = {
	JF(rec, JF_BOOL, "ok", ok),     JF(rec, JF_TEXT, "name", name),   JF(rec, JF_PTR, "note", note),
	JF(rec, JF_NUM, "ms", ms),      JF(rec, JF_INT, "batch", batch), JF(rec, JF_NUMBER, "count", count),
};

static void test_fields_in_table_order(void **s)
{
	(void)s;
	rec r = {"resnet50", "a note", 12.5, 64, -1, true};
	assert_json(json_fields_object(&r, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0])),
		    "{\"ok\":true,\"name\":\"resnet50\",\"note\":\"a note\",\"ms\":12.5,\"batch\":64,\"count\":-1}");
	rec unknown = {"", NULL, NAN, -1, 0, false};
	assert_json(json_fields_object(&unknown, rec_fields, sizeof(rec_fields) / sizeof(rec_fields[0])),
		    "{\"ok\":false,\"name\":null,\"note\":null,\"ms\":null,\"batch\":null,\"count\":0}");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unknown_is_null),
		cmocka_unit_test(test_fields_in_table_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
