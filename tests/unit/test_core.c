/* Unit tests of the core: facts store, versions, CSV, policies, process runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/findings.h"
#include "core/proc.h"
#include "core/util.h"
#include "kb/csv.h"
#include "kb/kb.h"
#include "rules/policy.h"

static void test_version_cmp(void **s)
{
	(void)s;
	assert_true(version_cmp("12.10", "12.9") > 0);
	assert_true(version_cmp("12.4", "12.4.1") < 0);
	assert_int_equal(version_cmp("580.159.04", "580.159.4"), 0);
	assert_true(version_cmp("525.60.13", "580.95.05") < 0);
	int a, b, c;
	assert_int_equal(version_parse("13.0.88", &a, &b, &c), 3);
	assert_int_equal(a * 10000 + b * 100 + c, 130088);
	assert_int_equal(version_parse("garbage", &a, &b, &c), 0);
}

static void test_facts_roundtrip(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_str(f, "/proc/x", "580.1", "driver.version");
	facts_put_int(f, NULL, 2, "nvml.device_count");
	facts_put_real(f, NULL, 0.5, "meta.t");
	facts_put_bool(f, NULL, true, "hardware.secure_boot");
	facts_put_state(f, FACT_ERROR, "nvmlInit", "code 999", "nvml.init");
	facts_put_int(f, NULL, 3, "nvml.device_count"); /* replaces */
	assert_int_equal(facts_count(f), 5);
	assert_int_equal(facts_int_or(f, 0, "nvml.device_count"), 3);
	assert_string_equal(facts_str(f, "driver.%s", "version"), "580.1");
	assert_null(facts_str(f, "nvml.init"));
	cJSON *j = facts_to_json(f);
	char *err = NULL;
	facts *g = facts_from_json(j, &err);
	assert_non_null(g);
	assert_int_equal(facts_count(g), 5);
	assert_true(facts_true(g, "hardware.secure_boot"));
	assert_int_equal(facts_get(g, "nvml.init")->state, FACT_ERROR);
	assert_string_equal(facts_get(g, "nvml.init")->error, "code 999");
	double d;
	assert_true(facts_real(g, &d, "meta.t"));
	assert_true(d == 0.5);
	cJSON_Delete(j);
	facts_free(f);
	facts_free(g);
	/* malformed */
	cJSON *bad = cJSON_Parse("{\"a\": 3}");
	assert_null(facts_from_json(bad, &err));
	free(err);
	cJSON_Delete(bad);
}

static void test_facts_many(void **s)
{
	(void)s;
	facts *f = facts_new();
	for (int i = 0; i < 5000; i++)
		facts_put_int(f, NULL, i, "x.k%d", i);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(facts_int_or(f, -1, "x.k%d", i), i);
	facts_free(f);
}

static void test_csv(void **s)
{
	(void)s;
	const char *text = "a,b,c\r\n1,\"x, \"\"y\"\"\",3\n\n4,5,\n";
	char *err = NULL;
	csv_table *t = csv_parse("t", text, strlen(text), &err);
	assert_non_null(t);
	assert_int_equal(t->nrows, 2);
	assert_string_equal(csv_cell(t, 0, "b"), "x, \"y\"");
	assert_string_equal(csv_cell(t, 1, "c"), "");
	assert_string_equal(csv_cell(t, 1, "nope"), "");
	csv_free(t);
	assert_null(csv_parse("e", "", 0, &err));
	free(err);
}

static void test_kb_lookups(void **s)
{
	(void)s;
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	assert_non_null(k);
	char a[32], b[32];
	assert_true(kb_cuda_min_driver(k, "12.4", a, sizeof(a), b, sizeof(b)));
	assert_true(version_cmp(a, "550") >= 0);
	assert_true(kb_gpu_cc(k, "NVIDIA H200", a, sizeof(a)));
	assert_string_equal(a, "9.0");
	assert_true(kb_driver_max_cuda(k, "580.159.04", a, sizeof(a)));
	assert_string_equal(a, "13.0");
	assert_false(kb_gpu_cc(k, "Matrox G200", a, sizeof(a)));
	kb_free(k);
}

static void test_policy(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_int(f, NULL, 2, "nvml.device_count");
	facts_put_str(f, NULL, "580.159.04", "nvml.driver_version");
	findings fs;
	findings_init(&fs);
	policy_apply("nvml.device_count>=2", f, &fs);
	policy_apply("nvml.driver_version >= 550", f, &fs);
	assert_int_equal(fs.n, 0);
	policy_apply("nvml.device_count==8", f, &fs);
	policy_apply("torch.cuda_available", f, &fs);
	assert_int_equal(fs.n, 2);
	findings_add(&fs, "gpu.hot", "gpu", SEV_WARN, "hot");
	policy_apply("!gpu.", f, &fs);
	assert_int_equal(fs.n, 4);
	char *err = NULL;
	assert_false(policy_check_syntax("a b>=1", &err));
	free(err);
	findings_free(&fs);
	facts_free(f);
}

static void test_proc_timeout_and_bound(void **s)
{
	(void)s;
	proc_result r;
	char *sleeper[] = {"sh", "-c", "sleep 10", NULL};
	proc_run(sleeper, NULL, NULL, 200, 1024, &r);
	assert_true(r.timed_out);
	assert_true(r.seconds < 2.0);
	proc_result_free(&r);
	char *flood[] = {"sh", "-c", "yes flood | head -c 1000000", NULL};
	proc_run(flood, NULL, NULL, 10000, 4096, &r);
	assert_true(r.truncated);
	assert_int_equal(r.out_len, 4096);
	proc_result_free(&r);
	char *missing[] = {"/nonexistent/program", NULL};
	proc_run(missing, NULL, NULL, 1000, 1024, &r);
	assert_true(r.spawn_failed);
	proc_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_version_cmp),  cmocka_unit_test(test_facts_roundtrip),
		cmocka_unit_test(test_facts_many),   cmocka_unit_test(test_csv),
		cmocka_unit_test(test_kb_lookups),   cmocka_unit_test(test_policy),
		cmocka_unit_test(test_proc_timeout_and_bound),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
