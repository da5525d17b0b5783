/* The fact-key registry (core/factkeys.h): matching concrete keys against its patterns, the keys
 * other tables give (the rules' needs, the NVML sampler's fact names), and GPUVET_FACT_KEYS_LOG. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../tools/test_tmp.h"
#include "core/factkeys.h"
#include "core/facts.h"
#include "rules/rules.h"
#include "sampler/fields.h"

static void test_match(void **s)
{
	(void)s;
	assert_true(factkey_match("nvml.gpu.%d.name", "nvml.gpu.3.name"));
	assert_true(factkey_match("nvml.gpu.%d.name", "nvml.gpu.12.name"));
	assert_true(factkey_match("topology.gpu.%d.numa_node", "topology.gpu.-1.numa_node"));
	assert_false(factkey_match("nvml.gpu.%d.name", "nvml.gpu..name"));
	assert_false(factkey_match("nvml.gpu.%d.name", "nvml.gpu.x.name"));
	assert_false(factkey_match("nvml.gpu.%d.name", "nvml.gpu.3.name.x"));
	assert_false(factkey_match("nvml.gpu.%d.name", "nvml.gpu.3.nam"));
	assert_true(factkey_match("nvml.gpu.%d.nvlink.%d.state", "nvml.gpu.0.nvlink.17.state"));
	/* text parts: at least one character, dots allowed (figure ids, device node names) */
	assert_true(factkey_match("bench.%s.value", "bench.gemm.fp16.value"));
	assert_false(factkey_match("bench.%s.value", "bench..value"));
	assert_false(factkey_match("bench.%s.value", "bench.gemm.fp16.valu"));
	assert_true(factkey_match("devices.%s.mode", "devices.gpu.0.mode"));
	/* the printf conversions of code match as integers too */
	assert_true(factkey_match("loader.lib.%zu.name", "loader.lib.4.name"));
	assert_true(factkey_match("cuda.peer.%lld.%lld", "cuda.peer.0.1"));
}

static void test_lookup(void **s)
{
	(void)s;
	const factkey *k = factkey_lookup("nvml.gpu.3.name");
	assert_non_null(k);
	assert_string_equal(k->pattern, FK_NVML_GPU_NAME(d));
	assert_string_equal(k->name, "FK_NVML_GPU_NAME(d)");
	assert_int_equal(k->type, FK_T_STR);
	assert_null(factkey_lookup("nvml.gpu.3.nmae"));
	assert_null(factkey_lookup("nvml.gpu"));
	assert_null(factkey_lookup(""));
	/* a key with a registered pattern of its own is not taken by a looser one */
	k = factkey_lookup("devices.nvidiactl");
	assert_non_null(k);
	assert_string_equal(k->pattern, "devices.nvidiactl");
	k = factkey_lookup("devices.nvidiactl.mode");
	assert_non_null(k);
	assert_string_equal(k->pattern, FK_DEVICES_NODE_MODE);
	assert_string_equal(factkey_type_name(FK_T_BOOL), "boolean");
}

/* every entry: a pattern once, a meaning, a writer */
static void test_entries(void **s)
{
	(void)s;
	assert_true(n_factkeys > 100);
	for (size_t i = 0; i < n_factkeys; i++) {
		const factkey *k = &factkeys[i];
		assert_true(k->meaning[0] != '\0');
		assert_true(strncmp(k->name, "FK_", 3) == 0);
		for (size_t j = i + 1; j < n_factkeys; j++)
			if (strcmp(k->pattern, factkeys[j].pattern) == 0)
				fail_msg("%s and %s declare %s", k->name, factkeys[j].name, k->pattern);
	}
}

/* The keys a rule needs are keys the registry knows (a typo there would skip the rule forever). */
static void test_rule_needs(void **s)
{
	(void)s;
	size_t n = 0;
	for (const rule *r = rules_first(); r; r = rules_next(r)) {
		char *needs = xstrdup(r->needs ? r->needs : "");
		for (char *save = NULL, *key = strtok_r(needs, " ", &save); key; key = strtok_r(NULL, " ", &save)) {
			if (!factkey_lookup(key))
				fail_msg("rule %s needs %s, which the registry lacks", r->id, key);
			n++;
		}
		free(needs);
	}
	assert_true(n > 50);
}

/* The NVML readings of sampler/fields.h that the check's probe puts as facts: each is registered
 * with the type its kind gives. */
static void test_sampler_fields(void **s)
{
	(void)s;
	size_t n = 0;
	for (size_t i = 0; i < n_snap_fields; i++) {
		const snap_field *sf = &snap_fields[i];
		if (!sf->fact || sf->nvml_off == SNAP_NO_NVML)
			continue;
		char key[128];
		snprintf(key, sizeof(key), "nvml.gpu.0.%s", sf->fact);
		const factkey *k = factkey_lookup(key);
		if (!k)
			fail_msg("sampler field %s: fact %s is not in the registry", sf->json ? sf->json : "?", key);
		factkey_type want = sf->fact_kind == 'b' ? FK_T_BOOL : sf->fact_kind == 'w' ? FK_T_REAL : FK_T_INT;
		if (k->type != want && k->type != FK_T_ANY)
			fail_msg("%s is %s in the registry but the sampler puts a %s", key, factkey_type_name(k->type),
				 factkey_type_name(want));
		n++;
	}
	assert_true(n > 10);
}

/* GPUVET_FACT_KEYS_LOG: a put or a read of a key the registry lacks is noted, a registered one is
 * not; a value of another type than the registered one is noted too. */
static void test_log(void **s)
{
	(void)s;
	char path[512];
	test_tmp_path(path, sizeof(path), "factkeys-log");
	unlink(path);
	setenv("GPUVET_FACT_KEYS_LOG", path, 1);
	facts *f = facts_new();
	facts_put_str(f, NULL, "H200", FK_NVML_GPU_NAME(d), 0);
	facts_put_int(f, NULL, 1, FK_NVML_DEVICE_COUNT);
	facts_put_str(f, NULL, "x", "nvml.gpu.%d.nmae", 0);
	facts_put_state(f, FACT_ABSENT, NULL, "why", "no.such.key");
	facts_put_str(f, NULL, "8", FK_NVML_DEVICE_COUNT); /* an integer key given a string */
	assert_non_null(facts_get(f, FK_NVML_GPU_NAME(d), 0));
	assert_null(facts_str(f, "nvml.gpu.%d.nmae", 1)); /* a read of a key no probe writes */
	facts_free(f);
	FILE *lf = fopen(path, "r");
	assert_non_null(lf);
	char buf[512] = "";
	size_t len = fread(buf, 1, sizeof(buf) - 1, lf);
	buf[len] = '\0';
	fclose(lf);
	unlink(path);
	unsetenv("GPUVET_FACT_KEYS_LOG");
	assert_string_equal(buf, "nvml.gpu.0.nmae\nno.such.key\n"
				 "nvml.device_count: a string, but the registry's FK_NVML_DEVICE_COUNT says integer\n"
				 "nvml.gpu.1.nmae: read\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),	    cmocka_unit_test(test_lookup),	   cmocka_unit_test(test_entries),
		cmocka_unit_test(test_rule_needs), cmocka_unit_test(test_sampler_fields), cmocka_unit_test(test_log),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
