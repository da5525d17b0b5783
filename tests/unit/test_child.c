/* Unit tests of the supervised child (core/child.c): every way a body can end, and what the
 * parent learns of it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/child.h"
#include "core/util.h"

static void body_ok(facts *f, void *arg)
{
	gv_child_stage("libx.so.1", "/opt/x/libx.so.1", "dlopen");
	gv_child_stage_end();
	facts_put_str(f, "test", (const char *)arg, "test.value");
	facts_put_int(f, "test", 42, "test.n");
}

static void body_hang(facts *f, void *arg)
{
	(void)f;
	(void)arg;
	gv_child_stage("libhang.so.1", "/opt/libhang.so.1", "hangInit");
	pause();
}

static void body_bus(facts *f, void *arg)
{
	(void)f;
	(void)arg;
	gv_child_stage("libtrunc.so.1", "/opt/libtrunc.so.1", "dlopen");
	raise(SIGBUS);
}

static void body_exit(facts *f, void *arg)
{
	(void)f;
	(void)arg;
	gv_child_stage("libexit.so.1", "/opt/libexit.so.1", "dlopen");
	gv_child_stage_end();
	gv_child_stage("libexit.so.1", "/opt/libexit.so.1", "exitInit");
	exit(0);
}

static void body_print(facts *f, void *arg)
{
	(void)arg;
	gv_child_stage("libloud.so.1", "/opt/libloud.so.1", "dlopen");
	printf("You are running using the stub version of cublasLt\n");
	gv_child_stage_end();
	fprintf(stderr, "a warning\n");
	facts_put_bool(f, "test", true, "test.done");
}

static void test_ok_merges_facts(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_ok, "hello");
	assert_int_equal(gv_child_wait(c, 10, f, &r), GV_CHILD_OK);
	assert_string_equal(facts_str(f, "test.value"), "hello");
	assert_int_equal(facts_int_or(f, 0, "test.n"), 42);
	assert_false(r.in_call);
	assert_int_equal(r.out_bytes, 0);
	gv_child_put_facts(f, "t", &r);
	assert_string_equal(facts_str(f, "isolation.t.outcome"), "ok");
	assert_null(facts_get(f, "isolation.t.call"));
	facts_free(f);
}

static void test_hang_is_killed(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_hang, NULL);
	assert_int_equal(gv_child_wait(c, 0.3, f, &r), GV_CHILD_HUNG);
	assert_true(r.in_call);
	assert_string_equal(r.call, "hangInit");
	assert_string_equal(r.lib, "libhang.so.1");
	gv_child_put_facts(f, "t", &r);
	assert_string_equal(facts_str(f, "isolation.t.outcome"), "hung");
	assert_string_equal(facts_str(f, "isolation.t.file"), "/opt/libhang.so.1");
	facts_free(f);
}

static void body_load_hang(facts *f, void *arg)
{
	(void)f;
	(void)arg;
	gv_child_stage("libslow.so.1", "/opt/libslow.so.1", "dlopen");
	pause();
}

static void test_call_limit_bounds_loading(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_load_hang, NULL);
	gv_child_set_call_limit(c, "dlopen", 0.2);
	/* the whole child may take an hour; inside dlopen only 0.2 s */
	assert_int_equal(gv_child_wait(c, 3600, f, &r), GV_CHILD_HUNG);
	assert_true(r.limit > 0.19 && r.limit < 0.21);
	assert_string_equal(r.call, "dlopen");
	facts_free(f);
}

static void test_sigbus_is_a_crash(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_bus, NULL);
	assert_int_equal(gv_child_wait(c, 10, f, &r), GV_CHILD_CRASHED);
	assert_int_equal(r.signal, SIGBUS);
	assert_string_equal(r.call, "dlopen");
	char buf[512];
	gv_child_describe(&r, buf, sizeof(buf));
	assert_non_null(strstr(buf, "SIGBUS"));
	assert_non_null(strstr(buf, "/opt/libtrunc.so.1"));
	gv_child_put_facts(f, "t", &r);
	assert_string_equal(facts_str(f, "isolation.t.signal"), "SIGBUS");
	facts_free(f);
}

static void test_exit_is_not_success(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_exit, NULL);
	assert_int_equal(gv_child_wait(c, 10, f, &r), GV_CHILD_EXITED);
	assert_int_equal(r.exit_status, 0);
	assert_true(r.in_call);
	assert_string_equal(r.call, "exitInit");
	facts_free(f);
}

static void test_output_is_captured(void **s)
{
	(void)s;
	facts *f = facts_new();
	gv_child_report r;
	gv_child *c = gv_child_start("t", body_print, NULL);
	assert_int_equal(gv_child_wait(c, 10, f, &r), GV_CHILD_OK);
	assert_true(facts_true(f, "test.done"));
	assert_int_equal(r.out_bytes, strlen("You are running using the stub version of cublasLt\n"));
	assert_string_equal(r.out_lib, "libloud.so.1");
	assert_string_equal(r.out_call, "dlopen");
	assert_int_equal(r.err_bytes, strlen("a warning\n"));
	gv_child_put_facts(f, "t", &r);
	assert_string_equal(facts_str(f, "isolation.t.stdout"), "You are running using the stub version of cublasLt");
	assert_string_equal(facts_str(f, "isolation.t.stderr"), "a warning");
	facts_free(f);
}

static void test_outside_a_child_stages_do_nothing(void **s)
{
	(void)s;
	assert_false(gv_child_inside());
	gv_child_stage("x", "y", "z"); /* must not write anywhere */
	gv_child_stage_end();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok_merges_facts),     cmocka_unit_test(test_hang_is_killed),
		cmocka_unit_test(test_sigbus_is_a_crash),   cmocka_unit_test(test_exit_is_not_success),
		cmocka_unit_test(test_output_is_captured), cmocka_unit_test(test_outside_a_child_stages_do_nothing),
		cmocka_unit_test(test_call_limit_bounds_loading),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
