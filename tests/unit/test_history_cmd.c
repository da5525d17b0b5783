/*
 * `gpuvet history` and check's recording, run in a child process with stdout and stderr captured:
 * exit codes (1 on a regression past --threshold, 2 on usage errors and unknown ids, 3 on a file
 * that is not ours), outputs, and that check stores a run unless told not to.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "kb/kb.h"
#include "store/history.h"
#include "../tools/test_tmp.h"

static char tmpdir[4096];
static char *db;
static long long run_a, run_b, run_c;

typedef struct result {
	int rc;
	char *out, *err;
} result;

static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return xstrdup("");
	strbuf sb;
	sb_init(&sb);
	char buf[4096];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&sb, buf, r);
	fclose(fp);
	return sb_steal(&sb);
}

/* Runs fn(argv) in a child, like main would, and collects its exit code and output. */
static result run(int (*fn)(int, char **), ...)
{
	char *argv[32];
	int argc = 0;
	va_list ap;
	va_start(ap, fn);
	const char *a;
	while ((a = va_arg(ap, const char *)) && argc < 31)
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	char *out = xasprintf("%s/stdout", tmpdir), *err = xasprintf("%s/stderr", tmpdir);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (!freopen(out, "w", stdout) || !freopen(err, "w", stderr))
			_exit(99);
		int rc = fn(argc, argv);
		fflush(stdout);
		fflush(stderr);
		_exit(rc);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	result r = {WEXITSTATUS(status), slurp(out), slurp(err)};
	free(out);
	free(err);
	return r;
}

static void result_free(result *r)
{
	free(r->out);
	free(r->err);
}

static void expect(result r, int rc, const char *in_out, const char *in_err)
{
	if (r.rc != rc || (in_out && !strstr(r.out, in_out)) || (in_err && !strstr(r.err, in_err)))
		fail_msg("exit %d (want %d)\n--- stdout\n%s\n--- stderr\n%s\nwanted stdout '%s', stderr '%s'", r.rc, rc,
			 r.out, r.err, in_out ? in_out : "", in_err ? in_err : "");
	result_free(&r);
}

static long long bench_run(history *h, double gemm, double lat, const char *driver)
{
	hist_run *r = history_run_begin(HIST_BENCH, 0, NULL);
	history_run_set(r, HIST_META_DRIVER, driver);
	history_run_add_gpu(r, 0, "NVIDIA H200", "GPU-1", "00000000:18:00.0");
	history_run_add_gpu(r, 1, "NVIDIA H200", "GPU-2", "00000000:2a:00.0");
	history_run_add_result(r, &(hist_result){.name = "gemm.bf16.8192", .value = gemm, .unit = "TFLOP/s",
						 .better = HIST_HIGHER_BETTER, .min = gemm - 1, .max = gemm + 1,
						 .repeats = 10, .gpu = 0});
	history_run_add_value(r, "launch.latency", lat, "us", HIST_LOWER_BETTER);
	long long id;
	char *err = NULL;
	assert_true(history_run_finish(h, r, &id, &err));
	return id;
}

static int setup(void **s)
{
	(void)s;
	test_tmp_path(tmpdir, sizeof(tmpdir), "gpuvet-hcmd-XXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	db = xasprintf("%s/h.db", tmpdir);
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	if (!k)
		return -1;
	kb_set_global(k);
	gopts.color = 0;
	unsetenv("GPUVET_NO_HISTORY");
	unsetenv("GPUVET_DB");
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	int rc = system(cmd);
	free(cmd);
	free(db);
	return rc == 0 ? 0 : -1;
}

static void test_empty_and_usage(void **s)
{
	(void)s;
	expect(run(cmd_history, "history", "--db", db, NULL), 0, "no runs recorded yet", NULL);
	expect(run(cmd_history, "history", "list", "--db", db, "--json", NULL), 0, "\"runs\"", NULL);
	expect(run(cmd_history, "history", "show", "1", "--db", db, NULL), 2, NULL, "no history database");
	expect(run(cmd_history, "history", "--help", NULL), 0, "compare --baseline NAME", NULL);
	expect(run(cmd_history, "history", "frobnicate", "--db", db, NULL), 2, NULL, "unknown history subcommand");
	expect(run(cmd_history, "history", "--bogus", NULL), 2, NULL, "unknown option --bogus");
	expect(run(cmd_history, "history", "list", "--kind", "nope", NULL), 2, NULL, "--kind");
	expect(run(cmd_history, "history", "compare", "--threshold", "x", NULL), 2, NULL, "--threshold");
	expect(run(cmd_history, "history", "list", "--keep", "3", NULL), 2, NULL, "--keep goes with history gc");
	expect(run(cmd_history, "history", "path", "--db", db, NULL), 0, db, NULL);
}

static void test_populate(void **s)
{
	(void)s;
	char *err = NULL;
	history *h = history_open(db, HISTORY_WRITE, &err);
	assert_non_null(h);
	run_a = bench_run(h, 100, 10, "570.86.15");
	run_b = bench_run(h, 94, 9, "580.95.05"); /* gemm -6%, latency better */
	run_c = bench_run(h, 99, 10, "580.95.05"); /* gemm -1% against a */
	history_close(h);
	expect(run(cmd_history, "history", "--db", db, NULL), 0, "2x NVIDIA H200", NULL);
	expect(run(cmd_history, "history", "list", "--db", db, "--limit", "1", NULL), 0, "gemm.bf16.8192 99", NULL);
}

static void test_compare_exit_codes(void **s)
{
	(void)s;
	char a[32], b[32], c[32];
	snprintf(a, sizeof(a), "%lld", run_a);
	snprintf(b, sizeof(b), "%lld", run_b);
	snprintf(c, sizeof(c), "%lld", run_c);
	result r = run(cmd_history, "history", "compare", a, b, "--db", db, NULL);
	assert_non_null(strstr(r.out, "REGRESSION"));
	assert_non_null(strstr(r.out, "-6.0%"));
	assert_non_null(strstr(r.out, "driver changed: 570.86.15 -> 580.95.05"));
	expect(r, 1, "1 regression beyond 5%", NULL);
	expect(run(cmd_history, "history", "compare", a, b, "--threshold", "10", "--db", db, NULL), 0,
	       "no regression beyond 10%", NULL);
	expect(run(cmd_history, "history", "compare", a, c, "--db", db, NULL), 0, "-1.0%", NULL);
	/* the other way round: latency 9 -> 10 us is 11% worse (lower is better) */
	r = run(cmd_history, "history", "compare", b, a, "--db", db, NULL);
	assert_non_null(strstr(r.out, "launch.latency"));
	expect(r, 1, "+11.1%", NULL);
	/* no ids: the latest bench run (c) against the one before it (b): gemm +5.3% better, latency
	 * 9 -> 10 us a regression */
	r = run(cmd_history, "history", "compare", "--db", db, NULL);
	assert_non_null(strstr(r.out, "+5.3%"));
	assert_non_null(strstr(r.out, "2.2%  better")); /* the spread: 95/93 - 1 of run b's repeats */
	expect(r, 1, "+11.1%         -  REGRESSION", NULL); /* latency kept no min and max: no spread */

	r = run(cmd_history, "history", "compare", a, b, "--json", "--db", db, NULL);
	assert_int_equal(r.rc, 1);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_int_equal(cJSON_GetObjectItem(j, "regressions")->valueint, 1);
	const cJSON *ch = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "changes"), 0);
	assert_string_equal(cJSON_GetObjectItem(ch, "name")->valuestring, "gemm.bf16.8192");
	assert_true(fabs(cJSON_GetObjectItem(ch, "change_pct")->valuedouble + 6.0) < 1e-9);
	assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ch, "regression")));
	assert_string_equal(cJSON_GetObjectItem(ch, "better")->valuestring, "higher");
	cJSON_Delete(j);
	result_free(&r);

	expect(run(cmd_history, "history", "compare", a, "999", "--db", db, NULL), 2, NULL, "no run 999");
	expect(run(cmd_history, "history", "compare", a, "abc", "--db", db, NULL), 2, NULL, "'abc' is not a run id");
	expect(run(cmd_history, "history", "compare", a, "--db", db, NULL), 2, NULL, "two run ids");
}

/* A change within the figure's own measured spread is not a regression however far past the
 * threshold it is (the issue's +34.5% on a figure whose repeats spread 2726%); the spread is said
 * beside each change, in text and JSON. */
static void test_compare_spread(void **s)
{
	(void)s;
	char *path = xasprintf("%s/spread.db", tmpdir);
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	long long ids[2];
	/* graph launch: medians 10 -> 13.45 us (+34.5%, lower is better), repeats from 1 to 28.26 us
	 * in the first run (a spread of 2726%); gemm: 100 -> 90 with repeats within 1% */
	const double lat[2] = {10, 13.45}, lat_min[2] = {1, 13}, lat_max[2] = {28.26, 14}, gemm[2] = {100, 90};
	for (int i = 0; i < 2; i++) {
		hist_run *r = history_run_begin(HIST_BENCH, 0, NULL);
		history_run_add_result(r, &(hist_result){.name = "launch.graph", .value = lat[i], .unit = "us",
							 .better = HIST_LOWER_BETTER, .min = lat_min[i], .max = lat_max[i],
							 .repeats = 20, .gpu = 0});
		history_run_add_result(r, &(hist_result){.name = "gemm.bf16", .value = gemm[i], .unit = "TFLOP/s",
							 .better = HIST_HIGHER_BETTER, .min = gemm[i] * 0.995,
							 .max = gemm[i] * 1.005, .repeats = 10, .gpu = 0});
		assert_true(history_run_finish(h, r, &ids[i], &err));
	}
	history_close(h);
	char a[32], b[32];
	snprintf(a, sizeof(a), "%lld", ids[0]);
	snprintf(b, sizeof(b), "%lld", ids[1]);
	result r = run(cmd_history, "history", "compare", a, b, "--db", path, NULL);
	assert_non_null(strstr(r.out, "SPREAD"));
	assert_non_null(strstr(r.out, "+34.5%"));
	assert_non_null(strstr(r.out, "2726.0%  within spread"));
	assert_non_null(strstr(r.out, "-10.0%      1.0%  REGRESSION"));
	assert_non_null(strstr(r.out, "1 change past 5% within the figure's own spread"));
	expect(r, 1, "1 regression beyond 5%", NULL);

	r = run(cmd_history, "history", "compare", a, b, "--json", "--db", path, NULL);
	assert_int_equal(r.rc, 1);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_int_equal(cJSON_GetObjectItem(j, "regressions")->valueint, 1);
	const cJSON *ch;
	int seen = 0;
	cJSON_ArrayForEach(ch, cJSON_GetObjectItem(j, "changes"))
	{
		const char *name = cJSON_GetObjectItem(ch, "name")->valuestring;
		double spread = cJSON_GetObjectItem(ch, "spread_pct")->valuedouble;
		if (strcmp(name, "launch.graph") == 0) {
			assert_true(fabs(spread - 2726.0) < 1e-6);
			assert_true(cJSON_IsFalse(cJSON_GetObjectItem(ch, "regression")));
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ch, "within_spread")));
			seen++;
		} else {
			assert_true(fabs(spread - (1.005 / 0.995 - 1) * 100) < 1e-6);
			assert_true(cJSON_IsTrue(cJSON_GetObjectItem(ch, "regression")));
			assert_true(cJSON_IsFalse(cJSON_GetObjectItem(ch, "within_spread")));
			seen++;
		}
	}
	assert_int_equal(seen, 2);
	cJSON_Delete(j);
	result_free(&r);
	/* a CI gate over the noisy figure alone passes */
	expect(run(cmd_history, "history", "compare", a, b, "--threshold", "11", "--db", path, NULL), 0,
	       "no regression beyond 11%", NULL);
	free(path);
}

static void test_baselines(void **s)
{
	(void)s;
	char a[32], b[32];
	snprintf(a, sizeof(a), "%lld", run_a);
	snprintf(b, sizeof(b), "%lld", run_b);
	expect(run(cmd_history, "history", "baseline", "set", "golden", a, "--db", db, NULL), 0, "baseline golden", NULL);
	expect(run(cmd_history, "history", "baseline", "list", "--db", db, NULL), 0, "golden", NULL);
	/* latest (c, -1%) against golden (a) */
	expect(run(cmd_history, "history", "compare", "--baseline", "golden", "--db", db, NULL), 0, "baseline golden",
	       NULL);
	expect(run(cmd_history, "history", "compare", "--baseline", "golden", b, "--db", db, NULL), 1, "REGRESSION",
	       NULL);
	expect(run(cmd_history, "history", "compare", "--baseline", "nope", "--db", db, NULL), 2, NULL,
	       "no baseline named 'nope'");
	expect(run(cmd_history, "history", "baseline", "set", "x", "424242", "--db", db, NULL), 2, NULL, "no run 424242");
	result r = run(cmd_history, "history", "baseline", "list", "--json", "--db", db, NULL);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	const cJSON *bl = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "baselines"), 0);
	assert_string_equal(cJSON_GetObjectItem(bl, "name")->valuestring, "golden");
	assert_int_equal((long long)cJSON_GetObjectItem(bl, "run_id")->valuedouble, run_a);
	cJSON_Delete(j);
	result_free(&r);
}

static void test_show_export(void **s)
{
	(void)s;
	char a[32];
	snprintf(a, sizeof(a), "%lld", run_a);
	result r = run(cmd_history, "history", "show", a, "--db", db, NULL);
	assert_non_null(strstr(r.out, "gemm.bf16.8192 [gpu 0]"));
	assert_non_null(strstr(r.out, "higher is better"));
	expect(r, 0, "570.86.15", NULL);
	r = run(cmd_history, "history", "show", "latest", "--json", "--db", db, NULL);
	cJSON *j = cJSON_Parse(r.out);
	assert_non_null(j);
	assert_int_equal((long long)cJSON_GetObjectItem(j, "id")->valuedouble, run_c);
	cJSON_Delete(j);
	result_free(&r);
	expect(run(cmd_history, "history", "show", "--db", db, NULL), 2, NULL, "one run id");

	r = run(cmd_history, "history", "export", "--format", "csv", "--kind", "bench", "--db", db, NULL);
	assert_true(str_starts(r.out, "run_id,started_utc,kind,"));
	size_t lines = 0;
	for (const char *p = r.out; *p; p++)
		lines += *p == '\n';
	expect(r, 0, ",gemm.bf16.8192,0,100,TFLOP/s,higher,99,101,10,", NULL);
	assert_int_equal(lines, 1 + 3 * 2);
	char *file = xasprintf("%s/out.json", tmpdir);
	expect(run(cmd_history, "history", "export", "--format", "json", "--output", file, "--db", db, NULL), 0, NULL,
	       NULL);
	char *text = slurp(file);
	j = cJSON_Parse(text);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 3);
	cJSON_Delete(j);
	free(text);
	free(file);
	expect(run(cmd_history, "history", "export", "--format", "xml", "--db", db, NULL), 2, NULL, "csv or json");
}

static void test_gc(void **s)
{
	(void)s;
	/* golden (a) is kept whatever --keep says */
	expect(run(cmd_history, "history", "gc", "--keep", "1", "--db", db, NULL), 0, "deleted 1 run", NULL);
	result r = run(cmd_history, "history", "list", "--json", "--db", db, NULL);
	cJSON *j = cJSON_Parse(r.out);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 2);
	cJSON_Delete(j);
	result_free(&r);
	expect(run(cmd_history, "history", "gc", "--db", db, NULL), 2, NULL, "--keep N");
}

static void test_foreign_file(void **s)
{
	(void)s;
	char *path = xasprintf("%s/notes.txt", tmpdir);
	const char *text = "these are my notes and not a database; gpuvet must leave every byte of them alone, "
			   "even the ones past the first hundred.\n";
	FILE *fp = fopen(path, "w");
	fputs(text, fp);
	fclose(fp);
	expect(run(cmd_history, "history", "list", "--db", path, NULL), 3, NULL, "not a SQLite database");
	expect(run(cmd_history, "history", "gc", "--keep", "0", "--db", path, NULL), 3, NULL, path);
	char *after = slurp(path);
	assert_string_equal(after, text);
	free(after);
	/* check still runs and keeps its exit code; storing fails with a warning */
	result plain = run(cmd_check, "check", "--fast", "--no-python", "--no-history", NULL);
	result r = run(cmd_check, "check", "--fast", "--no-python", "--db", path, NULL);
	assert_int_equal(r.rc, plain.rc);
	assert_non_null(strstr(r.err, "warning: run not stored in the history"));
	assert_non_null(strstr(r.err, path));
	result_free(&r);
	result_free(&plain);
	after = slurp(path);
	assert_string_equal(after, text);
	free(after);
	free(path);
}

static long long count_checks(const char *path)
{
	char *err = NULL;
	history *h = history_open(path, HISTORY_READ, &err);
	if (!h) {
		free(err);
		return 0;
	}
	hist_query q = {.kind = HIST_CHECK};
	hist_run_row *v;
	size_t n;
	assert_true(history_list(h, &q, &v, &n, &err));
	hist_runs_free(v, n);
	history_close(h);
	return (long long)n;
}

static void test_check_records(void **s)
{
	(void)s;
	char *path = xasprintf("%s/checks/h.db", tmpdir);
	result r = run(cmd_check, "check", "--fast", "--no-python", "--json", "--db", path, NULL);
	int rc = r.rc;
	assert_true(rc == 0 || rc == 1);
	cJSON *j = cJSON_Parse(r.out); /* nothing but the document on stdout */
	assert_non_null(j);
	int fails = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "summary"), "fail")->valueint;
	cJSON_Delete(j);
	result_free(&r);
	assert_int_equal(count_checks(path), 1);

	char *err = NULL;
	history *h = history_open(path, HISTORY_READ, &err);
	hist_run_row row;
	assert_true(history_latest(h, HIST_CHECK, &row, &err));
	char *want = xasprintf("gpuvet check --fast --no-python --json --db %s", path);
	assert_string_equal(row.command, want);
	free(want);
	history_close(h);
	hist_run_row_free(&row);
	(void)fails;

	expect(run(cmd_check, "check", "--fast", "--no-python", "--no-history", "--db", path, NULL), rc, NULL, NULL);
	assert_int_equal(count_checks(path), 1);
	setenv("GPUVET_NO_HISTORY", "1", 1);
	expect(run(cmd_check, "check", "--fast", "--no-python", "--db", path, NULL), rc, NULL, NULL);
	unsetenv("GPUVET_NO_HISTORY");
	assert_int_equal(count_checks(path), 1);
	/* a replay of recorded facts is not a new observation of this machine */
	char *facts_path = xasprintf("%s/facts.json", tmpdir);
	FILE *fp = fopen(facts_path, "w");
	fputs("{\"facts\": {}}", fp);
	fclose(fp);
	result replay = run(cmd_check, "check", "--facts", facts_path, "--db", path, NULL);
	result_free(&replay);
	assert_int_equal(count_checks(path), 1);
	setenv("GPUVET_DB", path, 1);
	expect(run(cmd_check, "check", "--fast", "--no-python", NULL), rc, NULL, NULL);
	unsetenv("GPUVET_DB");
	assert_int_equal(count_checks(path), 2);
	free(facts_path);
	free(path);
}

static void test_samples(void **s)
{
	(void)s;
	char *path = xasprintf("%s/watch.db", tmpdir);
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	hist_run *r = history_run_begin(HIST_WATCH, 0, NULL);
	history_run_add_sample(r, 1764410000.25, 0, "temperature_c", 61);
	history_run_add_sample(r, 1764410001.25, 1, "power_w", 688.5);
	long long id;
	assert_true(history_run_finish(h, r, &id, &err));
	history_close(h);
	result out = run(cmd_history, "history", "samples", "latest", "--db", path, NULL);
	assert_non_null(strstr(out.out, "t,gpu,metric,value\n1764410000.250,0,temperature_c,61\n"));
	expect(out, 0, "1764410001.250,1,power_w,688.5\n", NULL);
	out = run(cmd_history, "history", "samples", "latest", "--json", "--db", path, NULL);
	cJSON *j = cJSON_Parse(out.out);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "samples")), 2);
	cJSON_Delete(j);
	result_free(&out);
	expect(run(cmd_history, "history", "show", "latest", "--db", path, NULL), 0, "2 samples recorded", NULL);
	expect(run(cmd_history, "history", "samples", "--db", path, NULL), 2, NULL, "one run id");
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_and_usage),
		cmocka_unit_test(test_populate),
		cmocka_unit_test(test_compare_exit_codes),
		cmocka_unit_test(test_compare_spread),
		cmocka_unit_test(test_baselines),
		cmocka_unit_test(test_show_export),
		cmocka_unit_test(test_gc),
		cmocka_unit_test(test_foreign_file),
		cmocka_unit_test(test_check_records),
		cmocka_unit_test(test_samples),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
