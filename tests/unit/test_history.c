/*
 * Unit tests of the history store: every API path, files that are not ours (never written),
 * migration from schema 1, kill -9 during writes, two concurrent writers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/findings.h"
#include "core/util.h"
#include "store/history.h"
#include "store/history_export.h"
#include "store/history_internal.h"
#include "store/history_stamp.h"
#include "../tools/test_tmp.h"

static char tmpdir[4096];

static int setup(void **s)
{
	(void)s;
	history_stamp_init(); /* before this process's first SQLite call, as in gpuvet */
	test_tmp_path(tmpdir, sizeof(tmpdir), "gpuvet-hist-XXXXXX");
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **s)
{
	(void)s;
	char *cmd = xasprintf("rm -rf '%s'", tmpdir);
	int rc = system(cmd);
	free(cmd);
	return rc == 0 ? 0 : -1;
}

static char *tpath(const char *name)
{
	return xasprintf("%s/%s", tmpdir, name);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	strbuf sb;
	sb_init(&sb);
	char buf[4096];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&sb, buf, r);
	fclose(fp);
	*len = sb.len;
	return sb_steal(&sb);
}

static void write_file(const char *path, const void *data, size_t len)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	fclose(fp);
}

static long long sql_int(const char *path, const char *sql)
{
	sqlite3 *db;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	sqlite3_stmt *st;
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	long long v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return v;
}

/* A bench run with n results named r.0 .. r.(n-1), each of value base + i. */
static long long write_bench(history *h, int n, double base)
{
	char *argv[] = {"gpuvet", "bench", "--size", "8192", "it's"};
	hist_run *r = history_run_begin(HIST_BENCH, 5, argv);
	history_run_set(r, HIST_META_DRIVER, "580.95.05");
	history_run_add_gpu(r, 0, "NVIDIA H200", "GPU-1234", "00000000:18:00.0");
	for (int i = 0; i < n; i++) {
		char name[32];
		snprintf(name, sizeof(name), "r.%d", i);
		history_run_add_value(r, name, base + i, "GB/s", HIST_HIGHER_BETTER);
	}
	long long id = 0;
	char *err = NULL;
	assert_true(history_run_finish(h, r, &id, &err));
	assert_null(err);
	assert_true(id > 0);
	return id;
}

static void test_default_path(void **s)
{
	(void)s;
	char *p = history_default_path("/x/y.db");
	assert_string_equal(p, "/x/y.db");
	free(p);
	setenv("GPUVET_DB", "/env/h.db", 1);
	p = history_default_path(NULL);
	assert_string_equal(p, "/env/h.db");
	free(p);
	unsetenv("GPUVET_DB");
	setenv("XDG_DATA_HOME", "/data", 1);
	p = history_default_path(NULL);
	assert_string_equal(p, "/data/gpuvet/history.db");
	free(p);
	setenv("XDG_DATA_HOME", "relative/ignored", 1);
	setenv("HOME", "/home/u", 1);
	p = history_default_path(NULL);
	assert_string_equal(p, "/home/u/.local/share/gpuvet/history.db");
	free(p);
	unsetenv("XDG_DATA_HOME");
	unsetenv("HOME");
	assert_null(history_default_path(NULL));
	setenv("HOME", "/root", 1);
}

static void test_create_modes_and_pragmas(void **s)
{
	(void)s;
	char *path = tpath("a/b/c/history.db");
	char *err = NULL;
	assert_null(history_open(path, HISTORY_READ, &err)); /* read never creates */
	assert_non_null(strstr(err, path));
	free(err);
	err = NULL;
	struct stat st;
	assert_int_not_equal(stat(path, &st), 0);

	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	assert_int_equal(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	assert_string_equal(history_path(h), path);
	history_close(h);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	char *dir = tpath("a/b/c");
	assert_int_equal(stat(dir, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
	free(dir);
	assert_int_equal(sql_int(path, "PRAGMA application_id"), HISTORY_APPLICATION_ID);
	assert_int_equal(sql_int(path, "PRAGMA user_version"), HISTORY_SCHEMA_VERSION);
	/* the main file's header carries the application_id, not only the WAL */
	size_t len;
	char *bytes = read_all(path, &len);
	assert_true(len >= 100);
	assert_int_equal((unsigned char)bytes[68] << 24 | (unsigned char)bytes[69] << 16 |
			 (unsigned char)bytes[70] << 8 | (unsigned char)bytes[71], HISTORY_APPLICATION_ID);
	free(bytes);

	h = history_open(path, HISTORY_READ, &err); /* now it exists */
	assert_non_null(h);
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *stm;
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stm, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(stm), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(stm, 0), "wal");
	sqlite3_finalize(stm);
	sqlite3_close(db);
	history_close(h);

	/* an empty file is a new database */
	char *empty = tpath("empty.db");
	write_file(empty, "", 0);
	h = history_open(empty, HISTORY_WRITE, &err);
	assert_non_null(h);
	history_close(h);
	assert_int_equal(sql_int(empty, "PRAGMA application_id"), HISTORY_APPLICATION_ID);
	free(empty);
	free(path);
}

static void test_roundtrip(void **s)
{
	(void)s;
	char *path = tpath("rt.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);

	char *argv[] = {"gpuvet", "bench", "--note", "a b", NULL};
	hist_run *r = history_run_begin(HIST_BENCH, 4, argv);
	history_run_set(r, HIST_META_CUBLASLT, "13.0.0.19");
	history_run_set(r, HIST_META_CUBLASLT, "13.0.2.1"); /* replaces */
	history_run_set(r, HIST_META_TORCH, "2.9.0+cu130");
	history_run_set_summary(r, "bf16 756 TFLOP/s");
	history_run_add_gpu(r, 0, "NVIDIA H200", "GPU-aaaa", "00000000:18:00.0");
	history_run_gpu_conditions(r, 0, 1980, 3201, 61, 688.5, "none");
	history_run_gpu_conditions(r, 1, NAN, NAN, 55, NAN, NULL); /* adds the GPU row */
	history_run_add_result(r, &(hist_result){.name = "gemm.bf16.8192", .value = 756.25, .unit = "TFLOP/s",
						 .better = HIST_HIGHER_BETTER, .min = 750, .max = 760, .repeats = 20,
						 .gpu = 0, .params_json = "{\"size\": 8192, \"pct_peak\": 76.4}"});
	history_run_add_result(r, &(hist_result){.name = "gemm.bf16.8192", .value = 700, .unit = "TFLOP/s",
						 .better = HIST_HIGHER_BETTER, .min = NAN, .max = NAN, .gpu = 1,
						 .params_json = "not json"});
	history_run_add_value(r, "launch.latency", 4.3, "us", HIST_LOWER_BETTER);
	history_run_add_value(r, "launch.latency", 4.2, "us", HIST_LOWER_BETTER); /* replaces */
	history_run_add_result(r, &(hist_result){.name = NULL}); /* ignored */
	long long id = 0;
	assert_true(history_run_finish(h, r, &id, &err));

	hist_run_row row;
	assert_true(history_get(h, id, &row, &err));
	assert_int_equal(row.kind, HIST_BENCH);
	assert_true(row.complete);
	assert_non_null(row.finished_utc);
	assert_int_equal(strlen(row.started_utc), 24);
	assert_int_equal(row.started_utc[23], 'Z');
	assert_string_equal(row.command, "gpuvet bench --note 'a b'");
	assert_string_equal(row.summary, "bf16 756 TFLOP/s");
	assert_string_equal(row.version, GPUVET_VERSION);
	assert_non_null(row.host);
	assert_int_equal(row.nmeta, 2);
	assert_string_equal(row.meta[0].key, "cublaslt");
	assert_string_equal(row.meta[0].value, "13.0.2.1");
	assert_int_equal(row.ngpus, 2);
	assert_string_equal(row.gpus[0].uuid, "GPU-aaaa");
	assert_string_equal(row.gpus[0].throttle, "none");
	assert_true(row.gpus[0].power_w == 688.5);
	assert_null(row.gpus[1].name);
	assert_true(isnan(row.gpus[1].sm_clock_mhz));
	assert_true(row.gpus[1].temperature_c == 55);
	assert_int_equal(row.nresults, 3);
	assert_string_equal(row.results[0].name, "gemm.bf16.8192");
	assert_int_equal(row.results[0].gpu, 0);
	assert_true(row.results[0].value == 756.25);
	assert_int_equal(row.results[0].repeats, 20);
	assert_int_equal(row.results[0].better, HIST_HIGHER_BETTER);
	assert_string_equal(row.results[0].params_json, "{\"size\":8192,\"pct_peak\":76.4}");
	assert_int_equal(row.results[1].gpu, 1);
	assert_true(isnan(row.results[1].min));
	assert_string_equal(row.results[1].params_json, "{\"text\":\"not json\"}");
	assert_string_equal(row.results[2].name, "launch.latency");
	assert_true(row.results[2].value == 4.2);
	assert_int_equal(row.results[2].better, HIST_LOWER_BETTER);
	assert_null(row.results[2].params_json);
	hist_run_row_free(&row);

	/* a check run from facts and findings */
	facts *f = facts_new();
	facts_put_str(f, NULL, "580.95.05", "nvml.driver_version");
	facts_put_str(f, NULL, "13.0", "nvml.cuda_version");
	facts_put_int(f, NULL, 1, "nvml.device_count");
	facts_put_str(f, NULL, "NVIDIA H200", "nvml.gpu.0.name");
	facts_put_str(f, NULL, "GPU-bbbb", "nvml.gpu.0.uuid");
	facts_put_int(f, NULL, 1980, "nvml.gpu.0.sm_clock_mhz");
	facts_put_real(f, NULL, 120.5, "nvml.gpu.0.power_w");
	facts_put_str(f, NULL, "2.9.0+cu130", "python.torch.version");
	findings fs;
	findings_init(&fs);
	finding *x = findings_add(&fs, "driver.nouveau", "driver", SEV_FAIL, "nouveau is loaded");
	finding_evidence(x, "lsmod: \"nouveau\"");
	finding_fix(x, "sudo modprobe -r nouveau");
	findings_add(&fs, "env.x", "env", SEV_INFO, "informational");
	r = history_run_begin(HIST_CHECK, 0, NULL);
	history_run_context_from_facts(r, f);
	history_run_add_findings(r, &fs);
	long long cid;
	assert_true(history_run_finish(h, r, &cid, &err));
	findings_free(&fs);
	facts_free(f);
	assert_true(history_get(h, cid, &row, &err));
	assert_string_equal(row.command, "");
	assert_string_equal(row.summary, "1 fail, 0 warn, 1 info");
	assert_int_equal(row.nfindings, 2);
	assert_string_equal(row.findings[0].id, "driver.nouveau");
	assert_string_equal(row.findings[0].severity, "fail");
	assert_string_equal(row.findings[0].evidence_json, "[\"lsmod: \\\"nouveau\\\"\"]");
	assert_string_equal(row.findings[0].fix_json, "[\"sudo modprobe -r nouveau\"]");
	assert_int_equal(row.ngpus, 1);
	assert_true(row.gpus[0].sm_clock_mhz == 1980);
	assert_true(row.gpus[0].power_w == 120.5);
	assert_true(isnan(row.gpus[0].temperature_c));
	assert_int_equal(row.nmeta, 3); /* cuda.driver, driver, torch */
	assert_string_equal(row.meta[0].key, "cuda.driver");
	assert_string_equal(row.meta[0].value, "13.0");
	assert_string_equal(row.meta[1].value, "580.95.05");
	assert_string_equal(row.meta[2].key, "torch");
	assert_string_equal(row.meta[2].value, "2.9.0+cu130");
	assert_int_equal(row.nresults, 3);
	assert_string_equal(row.results[0].name, "findings.fail");
	assert_true(row.results[0].value == 1);
	hist_run_row_free(&row);

	/* list: newest first, kind filter, limit; latest */
	hist_run_row *v;
	size_t n;
	assert_true(history_list(h, NULL, &v, &n, &err));
	assert_int_equal(n, 2);
	assert_int_equal(v[0].id, cid);
	hist_runs_free(v, n);
	hist_query q = {.kind = HIST_BENCH};
	assert_true(history_list(h, &q, &v, &n, &err));
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, id);
	hist_runs_free(v, n);
	q = (hist_query){.any_kind = true, .limit = 1, .oldest_first = true};
	assert_true(history_list(h, &q, &v, &n, &err));
	assert_int_equal(n, 1);
	assert_int_equal(v[0].id, id);
	hist_runs_free(v, n);
	assert_true(history_latest(h, HIST_BENCH, &row, &err));
	assert_int_equal(row.id, id);
	hist_run_row_free(&row);
	assert_true(history_latest(h, -1, &row, &err));
	assert_int_equal(row.id, cid);
	hist_run_row_free(&row);
	assert_false(history_latest(h, HIST_TUNE, &row, &err));
	assert_non_null(strstr(err, "no complete tune run"));
	free(err);
	err = NULL;

	/* unknown id */
	assert_false(history_get(h, 999, &row, &err));
	assert_non_null(strstr(err, "no run 999"));
	free(err);
	err = NULL;
	history_close(h);
	free(path);
}

static bool count_sample(void *ctx, double t, int gpu, const char *metric, double value)
{
	int *c = ctx;
	assert_true(t > 1000);
	assert_true(gpu == 0 || gpu == 1);
	assert_string_equal(metric, "temperature_c");
	assert_true(value >= 40);
	(*c)++;
	return true;
}

static void test_samples_flush_incomplete(void **s)
{
	(void)s;
	char *path = tpath("watch.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	hist_run *r = history_run_begin(HIST_WATCH, 0, NULL);
	double t0 = (double)time(NULL);
	for (int i = 0; i < 10; i++)
		for (int g = 0; g < 2; g++)
			history_run_add_sample(r, t0 + i, g, "temperature_c", 40 + i);
	assert_true(history_run_flush(h, r, &err));
	/* flushed but not finished: hidden from list, shown with incomplete */
	hist_run_row *v;
	size_t n;
	assert_true(history_list(h, NULL, &v, &n, &err));
	assert_int_equal(n, 0);
	hist_runs_free(v, n);
	hist_query q = {.any_kind = true, .incomplete = true};
	assert_true(history_list(h, &q, &v, &n, &err));
	assert_int_equal(n, 1);
	assert_false(v[0].complete);
	assert_null(v[0].finished_utc);
	assert_int_equal(v[0].nsamples, 20);
	long long id = v[0].id;
	hist_runs_free(v, n);
	/* a baseline needs a complete run */
	assert_false(history_baseline_set(h, "b", id, &err));
	assert_non_null(strstr(err, "incomplete"));
	free(err);
	err = NULL;

	for (int i = 10; i < 15; i++)
		history_run_add_sample(r, t0 + i, 0, "temperature_c", 40 + i);
	history_run_add_sample(r, t0, 0, NULL, 1); /* ignored */
	long long id2;
	assert_true(history_run_finish(h, r, &id2, &err));
	assert_int_equal(id2, id);
	hist_run_row row;
	assert_true(history_get(h, id, &row, &err));
	assert_true(row.complete);
	assert_int_equal(row.nsamples, 25);
	hist_run_row_free(&row);
	int c = 0;
	assert_true(history_samples(h, id, count_sample, &c, &err));
	assert_int_equal(c, 25);

	/* discard: nothing written */
	r = history_run_begin(HIST_TUNE, 0, NULL);
	history_run_add_value(r, "x", 1, NULL, HIST_NEUTRAL);
	history_run_discard(r);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs"), 1);
	history_close(h);
	free(path);
}

static const hist_change *find_change(const hist_change *v, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i].name, name) == 0)
			return &v[i];
	fail_msg("no change named %s", name);
	return NULL;
}

static void test_compare(void **s)
{
	(void)s;
	char *path = tpath("cmp.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	hist_run *r = history_run_begin(HIST_BENCH, 0, NULL);
	history_run_add_value(r, "gemm", 100, "TFLOP/s", HIST_HIGHER_BETTER);
	history_run_add_value(r, "bw", 1000, "GB/s", HIST_HIGHER_BETTER);
	history_run_add_value(r, "lat", 10, "us", HIST_LOWER_BETTER);
	history_run_add_value(r, "fails", 0, NULL, HIST_LOWER_BETTER);
	history_run_add_value(r, "neutral", 5, NULL, HIST_NEUTRAL);
	history_run_add_value(r, "gone", 5, NULL, HIST_HIGHER_BETTER);
	long long a;
	assert_true(history_run_finish(h, r, &a, &err));
	r = history_run_begin(HIST_BENCH, 0, NULL);
	history_run_add_value(r, "gemm", 94, "TFLOP/s", HIST_HIGHER_BETTER); /* -6%: regression */
	history_run_add_value(r, "bw", 960, "GB/s", HIST_HIGHER_BETTER);     /* -4%: within 5% */
	history_run_add_value(r, "lat", 9, "us", HIST_LOWER_BETTER);          /* -10%: improvement */
	history_run_add_value(r, "fails", 1, NULL, HIST_LOWER_BETTER);        /* 0 -> 1: regression */
	history_run_add_value(r, "neutral", 50, NULL, HIST_NEUTRAL);          /* never flagged */
	history_run_add_value(r, "new", 1, NULL, HIST_HIGHER_BETTER);
	long long b;
	assert_true(history_run_finish(h, r, &b, &err));
	hist_run_row ra, rb;
	assert_true(history_get(h, a, &ra, &err));
	assert_true(history_get(h, b, &rb, &err));

	hist_change *v;
	size_t nreg;
	size_t n = history_compare(&ra, &rb, 5.0, &v, &nreg);
	assert_int_equal(n, 7);
	assert_int_equal(nreg, 2);
	const hist_change *c = find_change(v, n, "gemm");
	assert_true(c->regression);
	assert_true(fabs(c->pct + 6.0) < 1e-9);
	assert_string_equal(c->unit, "TFLOP/s");
	c = find_change(v, n, "bw");
	assert_false(c->regression);
	assert_false(c->improvement);
	c = find_change(v, n, "lat");
	assert_false(c->regression);
	assert_true(c->improvement);
	c = find_change(v, n, "fails");
	assert_true(c->regression);
	assert_true(isinf(c->pct));
	c = find_change(v, n, "neutral");
	assert_false(c->regression);
	assert_false(c->improvement);
	c = find_change(v, n, "gone");
	assert_true(c->in_a);
	assert_false(c->in_b);
	assert_false(c->regression);
	c = find_change(v, n, "new");
	assert_false(c->in_a);
	assert_true(c->in_b);
	free(v);
	/* a looser threshold lets the gemm drop pass; the reverse direction flips the roles */
	history_compare(&ra, &rb, 10.0, &v, &nreg);
	assert_int_equal(nreg, 1);
	free(v);
	history_compare(&rb, &ra, 5.0, &v, &nreg);
	assert_int_equal(nreg, 1); /* lat 9 -> 10 is +11% worse */
	free(v);
	hist_run_row_free(&ra);
	hist_run_row_free(&rb);
	history_close(h);
	free(path);
}

static void baseline_cb(void *ctx, const char *name, long long run_id, const char *set_utc)
{
	strbuf *sb = ctx;
	sb_addf(sb, "%s=%lld;", name, run_id);
	assert_non_null(set_utc);
}

static void test_baselines_and_gc(void **s)
{
	(void)s;
	char *path = tpath("gc.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	long long ids[6];
	for (int i = 0; i < 6; i++)
		ids[i] = write_bench(h, 3, i);
	assert_true(history_baseline_set(h, "golden", ids[0], &err));
	assert_true(history_baseline_set(h, "alpha", ids[1], &err));
	assert_true(history_baseline_set(h, "alpha", ids[2], &err)); /* moves */
	assert_false(history_baseline_set(h, "x", 4242, &err));
	assert_non_null(strstr(err, "no run 4242"));
	free(err);
	err = NULL;
	assert_false(history_baseline_set(h, "", ids[0], &err));
	free(err);
	err = NULL;
	long long id;
	assert_true(history_baseline_get(h, "golden", &id, &err));
	assert_int_equal(id, ids[0]);
	assert_false(history_baseline_get(h, "nope", &id, &err));
	assert_non_null(strstr(err, "no baseline named 'nope'"));
	free(err);
	err = NULL;
	strbuf sb;
	sb_init(&sb);
	assert_true(history_baseline_list(h, baseline_cb, &sb, &err));
	char *want = xasprintf("alpha=%lld;golden=%lld;", ids[2], ids[0]);
	assert_string_equal(sb.buf, want);
	free(want);
	sb_free(&sb);

	/* gc keeps the newest 2 and every baseline's run */
	long long deleted;
	assert_true(history_gc(h, 2, &deleted, &err));
	assert_int_equal(deleted, 2); /* ids[1], ids[3] */
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs"), 4);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM results"), 12); /* cascaded */
	hist_run_row row;
	assert_false(history_get(h, ids[1], &row, &err));
	free(err);
	err = NULL;
	assert_true(history_get(h, ids[0], &row, &err));
	hist_run_row_free(&row);

	assert_true(history_baseline_delete(h, "golden", &err));
	assert_false(history_baseline_delete(h, "golden", &err));
	free(err);
	err = NULL;
	assert_true(history_gc(h, 2, &deleted, &err));
	assert_int_equal(deleted, 1);

	/* an incomplete run whose last sample is two days old goes; a fresh one stays */
	hist_run *r = history_run_begin(HIST_WATCH, 0, NULL);
	history_run_add_sample(r, (double)time(NULL) - 2 * 86400, 0, "power_w", 100);
	assert_true(history_run_flush(h, r, &err));
	history_run_discard(r);
	r = history_run_begin(HIST_WATCH, 0, NULL);
	history_run_add_sample(r, (double)time(NULL), 0, "power_w", 100);
	assert_true(history_run_flush(h, r, &err));
	history_run_discard(r);
	assert_true(history_gc(h, 100, &deleted, &err));
	assert_int_equal(deleted, 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE NOT complete"), 1);
	history_close(h);
	free(path);
}

/* Opening must fail with the path in the message, in both modes, and leave the bytes alone. */
static void assert_refused(const char *path, const char *why)
{
	size_t len0, len1;
	char *before = read_all(path, &len0);
	for (int mode = 0; mode < 2; mode++) {
		char *err = NULL;
		history *h = history_open(path, mode ? HISTORY_WRITE : HISTORY_READ, &err);
		if (h)
			fail_msg("%s was opened (mode %d)", path, mode);
		assert_non_null(err);
		if (!strstr(err, path) || !strstr(err, why))
			fail_msg("error for %s lacks '%s': %s", path, why, err);
		free(err);
	}
	char *after = read_all(path, &len1);
	assert_int_equal(len0, len1);
	assert_memory_equal(before, after, len0);
	free(before);
	free(after);
	char *wal = xasprintf("%s-wal", path);
	struct stat st;
	assert_true(stat(wal, &st) != 0 || st.st_size == 0);
	free(wal);
}

static void test_foreign_files_untouched(void **s)
{
	(void)s;
	char *text = tpath("notes.txt");
	const char *t = "my notes, not a database\nline two with more than one hundred bytes of text in it so the "
			"header check reads a full header and still finds no SQLite magic\n";
	write_file(text, t, strlen(t));
	assert_refused(text, "not a SQLite database");

	char *tiny = tpath("tiny");
	write_file(tiny, "SQLite", 6);
	assert_refused(tiny, "not a SQLite database");

	/* another application's SQLite file, with no application_id */
	char *other = tpath("other.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(other, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "CREATE TABLE notes (x); INSERT INTO notes VALUES ('keep me')", NULL, NULL,
				      NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_refused(other, "another application");

	/* one with its own application_id */
	char *app = tpath("app.db");
	assert_int_equal(sqlite3_open(app, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA application_id = 1234; CREATE TABLE t (x)", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_refused(app, "application_id 0x000004d2");

	/* ours, from a newer gpuvet */
	char *newer = tpath("newer.db");
	char *err = NULL;
	history *h = history_open(newer, HISTORY_WRITE, &err);
	assert_non_null(h);
	history_close(h);
	assert_int_equal(sqlite3_open(newer, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode = DELETE; PRAGMA user_version = 99", NULL, NULL, NULL),
			 SQLITE_OK);
	sqlite3_close(db);
	assert_refused(newer, "newer than this gpuvet");

	/* ours, with a negative schema version in the header (a bit flip, a crafted file): it must
	 * never index the migration steps (small values ran other strings as SQL, large ones crashed) */
	static const char *const negative[] = {"-1", "-2", "-1000000000", "-2147483648"};
	for (size_t i = 0; i < sizeof(negative) / sizeof(negative[0]); i++) {
		char *neg = tpath(negative[i]);
		h = history_open(neg, HISTORY_WRITE, &err);
		assert_non_null(h);
		write_bench(h, 50, 0);
		history_close(h);
		assert_int_equal(sqlite3_open(neg, &db), SQLITE_OK);
		char *sql = xasprintf("PRAGMA journal_mode = DELETE; PRAGMA user_version = %s", negative[i]);
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
		free(sql);
		sqlite3_close(db);
		assert_refused(neg, "which no gpuvet writes");
		free(neg);
	}

	/* ours, corrupted: garbage over the pages after the header page */
	char *bad = tpath("corrupt.db");
	h = history_open(bad, HISTORY_WRITE, &err);
	assert_non_null(h);
	for (int i = 0; i < 20; i++)
		write_bench(h, 50, i);
	history_close(h); /* checkpoints the WAL into the file */
	assert_int_equal(sqlite3_open(bad, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	size_t len;
	char *bytes = read_all(bad, &len);
	assert_true(len > 8192);
	for (size_t i = 4096; i < len; i++)
		bytes[i] = (char)(i * 7 + 3);
	write_file(bad, bytes, len);
	free(bytes);
	/* reading may still work on a damaged file; a writer moves it aside, byte for byte, and starts anew */
	size_t l0, l1;
	char *before = read_all(bad, &l0);
	h = history_open(bad, HISTORY_WRITE, &err);
	if (!h)
		fail_msg("a corrupt history was not replaced: %s", err);
	assert_non_null(history_notice(h));
	assert_non_null(strstr(history_notice(h), "corrupt"));
	const char *aside = strstr(history_notice(h), "moved it aside to ");
	assert_non_null(aside);
	char *moved = xstrndup(aside + 18, strcspn(aside + 18, ","));
	assert_non_null(strstr(moved, "corrupt.db.corrupt-"));
	char *after = read_all(moved, &l1);
	assert_int_equal(l0, l1);
	assert_memory_equal(before, after, l0);
	assert_int_equal(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	history_close(h);
	free(before);
	free(after);
	free(moved);

	/* a directory where the file should be */
	char *dir = tpath("adir.db");
	assert_int_equal(mkdir(dir, 0700), 0);
	h = history_open(dir, HISTORY_WRITE, &err);
	assert_null(h);
	assert_non_null(strstr(err, "not a regular file"));
	free(err);

	free(text);
	free(tiny);
	free(other);
	free(app);
	free(newer);
	free(bad);
	free(dir);
}

/* Schema version 1 as it shipped: the test keeps its own copy, so the migration is really tested
 * from the old layout even if the code's steps were ever edited. */
static const char schema_v1[] =
	"CREATE TABLE runs (id INTEGER PRIMARY KEY, kind TEXT NOT NULL CHECK (kind IN ('check', 'bench', 'tune', "
	"'watch')), started_utc TEXT NOT NULL, finished_utc TEXT, complete INTEGER NOT NULL DEFAULT 0, host TEXT, "
	"command TEXT, version TEXT, summary TEXT);"
	"CREATE INDEX runs_by_start ON runs (started_utc);"
	"CREATE TABLE run_meta (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, key TEXT NOT NULL, "
	"value TEXT, PRIMARY KEY (run_id, key));"
	"CREATE TABLE gpus (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, idx INTEGER NOT NULL, "
	"name TEXT, uuid TEXT, bus_id TEXT, sm_clock_mhz REAL, mem_clock_mhz REAL, temperature_c REAL, power_w REAL, "
	"throttle TEXT, PRIMARY KEY (run_id, idx));"
	"CREATE TABLE results (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, name TEXT NOT NULL, "
	"gpu INTEGER NOT NULL DEFAULT -1, value REAL, unit TEXT, better INTEGER NOT NULL DEFAULT 0 CHECK (better IN "
	"(-1, 0, 1)), min REAL, max REAL, repeats INTEGER NOT NULL DEFAULT 0, params TEXT, PRIMARY KEY (run_id, name, "
	"gpu));"
	"CREATE TABLE findings (run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE, seq INTEGER NOT NULL, "
	"id TEXT NOT NULL, severity TEXT NOT NULL, title TEXT, evidence TEXT, fix TEXT, PRIMARY KEY (run_id, seq));";

static void test_migration_v1(void **s)
{
	(void)s;
	char *path = tpath("v1.db");
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	char *sql = xasprintf("PRAGMA application_id = %d; %s PRAGMA user_version = 1;"
			      "INSERT INTO runs VALUES (1, 'bench', '2026-01-02T03:04:05.000Z', '2026-01-02T03:05:00.000Z', 1,"
			      " 'node1', 'gpuvet bench', '0.0.9', NULL);"
			      "INSERT INTO results VALUES (1, 'gemm.bf16.8192', 0, 700.5, 'TFLOP/s', 1, NULL, NULL, 5, NULL);",
			      HISTORY_APPLICATION_ID, schema_v1);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	free(sql);
	sqlite3_close(db);
	assert_int_equal(sql_int(path, "PRAGMA user_version"), 1);

	char *err = NULL;
	history *h = history_open(path, HISTORY_READ, &err); /* read upgrades too */
	if (!h)
		fail_msg("%s", err);
	assert_int_equal(history_schema_version(h), HISTORY_SCHEMA_VERSION);
	hist_run_row row;
	assert_true(history_get(h, 1, &row, &err));
	assert_string_equal(row.host, "node1");
	assert_int_equal(row.nresults, 1);
	assert_true(row.results[0].value == 700.5);
	assert_int_equal(row.nsamples, 0);
	hist_run_row_free(&row);
	/* what version 2 added works on the upgraded file */
	assert_true(history_baseline_set(h, "old", 1, &err));
	hist_run *r = history_run_begin(HIST_WATCH, 0, NULL);
	history_run_add_sample(r, 1e9, 0, "power_w", 1);
	long long id;
	assert_true(history_run_finish(h, r, &id, &err));
	history_close(h);
	/* what version 3 added: diag runs, and the rebuilt runs table kept every row of the others
	 * (the old run's result is still there, referencing it) */
	h = history_open(path, HISTORY_WRITE, &err);
	if (!h)
		fail_msg("%s", err);
	r = history_run_begin(HIST_DIAG, 0, NULL);
	history_run_add_value(r, "diag.gemm.bf16", 800, "TFLOP/s", HIST_HIGHER_BETTER);
	assert_true(history_run_finish(h, r, &id, &err));
	history_close(h);
	assert_int_equal(sql_int(path, "PRAGMA user_version"), HISTORY_SCHEMA_VERSION);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM samples"), 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM results WHERE run_id = 1"), 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE kind = 'diag'"), 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM baselines WHERE run_id = 1"), 1);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM pragma_foreign_key_check"), 0);
	assert_int_equal(sql_int(path, "PRAGMA application_id"), HISTORY_APPLICATION_ID);
	free(path);
}

enum { KILL_RESULTS = 400 };

/* The child writes runs of KILL_RESULTS results each until it is killed. */
static void writer_loop(const char *path)
{
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	if (!h)
		_exit(2);
	for (int i = 0;; i++) {
		hist_run *r = history_run_begin(HIST_BENCH, 0, NULL);
		for (int k = 0; k < KILL_RESULTS; k++) {
			char name[32];
			snprintf(name, sizeof(name), "k.%d", k);
			history_run_add_value(r, name, i, NULL, HIST_HIGHER_BETTER);
		}
		if (!history_run_finish(h, r, NULL, &err))
			_exit(3);
	}
}

static void test_kill_during_write(void **s)
{
	(void)s;
	char *path = tpath("kill.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	history_close(h);
	static const int delays_ms[] = {60, 150, 270};
	for (size_t round = 0; round < GV_ARRAY_LEN(delays_ms); round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			writer_loop(path);
		struct timespec ts = {0, delays_ms[round] * 1000000L};
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status)); /* it was still writing, not failed */

		h = history_open(path, HISTORY_WRITE, &err); /* quick_check passes */
		if (!h)
			fail_msg("reopen after kill: %s", err);
		hist_run_row *v;
		size_t n;
		hist_query q = {.any_kind = true, .incomplete = true};
		assert_true(history_list(h, &q, &v, &n, &err));
		for (size_t i = 0; i < n; i++) {
			assert_true(v[i].complete);
			assert_int_equal(v[i].nresults, KILL_RESULTS);
		}
		hist_runs_free(v, n);
		history_close(h);
		assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE NOT complete"), 0);
		assert_int_equal(sql_int(path, "SELECT count(*) FROM results WHERE run_id NOT IN (SELECT id FROM runs)"), 0);
	}
	long long runs = sql_int(path, "SELECT count(*) FROM runs");
	assert_true(runs > 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM results"), runs * KILL_RESULTS);
	free(path);
}

/* A writer killed inside a rollback-mode transaction with its pages already in the file: the
 * journal beside it is hot, and only a read-write connection can roll it back. */
static void leave_hot_journal(const char *path)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		sqlite3 *db;
		if (sqlite3_open(path, &db) != SQLITE_OK)
			_exit(2);
		sqlite3_exec(db, "PRAGMA journal_mode = DELETE; PRAGMA cache_size = 1; BEGIN IMMEDIATE", NULL, NULL, NULL);
		for (int i = 0; i < 3000; i++)
			sqlite3_exec(db, "INSERT INTO runs (kind, started_utc, summary) VALUES ('check', 'killed', "
					 "printf('%.400c', 'y'))", NULL, NULL, NULL);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	char *j = xasprintf("%s-journal", path);
	struct stat st;
	assert_int_equal(stat(j, &st), 0);
	assert_true(st.st_size > 0);
	free(j);
}

static long long count_runs(history *h)
{
	hist_run_row *v;
	size_t n;
	char *err = NULL;
	hist_query q = {.any_kind = true};
	if (!history_list(h, &q, &v, &n, &err))
		fail_msg("list: %s", err);
	hist_runs_free(v, n);
	return (long long)n;
}

static void test_hot_journal_and_readonly(void **s)
{
	(void)s;
	char *dir = tpath("rodir");
	assert_int_equal(mkdir(dir, 0755), 0);
	char *path = xasprintf("%s/h.db", dir);
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	for (int i = 0; i < 3; i++)
		write_bench(h, 5, i);
	history_close(h);

	/* both modes recover: the killed transaction's rows are gone, the 3 runs are there */
	leave_hot_journal(path);
	h = history_open(path, HISTORY_READ, &err);
	if (!h)
		fail_msg("read after a killed writer: %s", err);
	assert_int_equal(count_runs(h), 3);
	history_close(h);
	leave_hot_journal(path);
	h = history_open(path, HISTORY_WRITE, &err);
	if (!h)
		fail_msg("write after a killed writer: %s", err);
	assert_null(history_notice(h));
	write_bench(h, 5, 9);
	history_close(h);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE started_utc = 'killed'"), 0);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs"), 4);

	/* a directory that may not be written: read as it is, writing refused with the reason */
	if (geteuid() != 0) {
		assert_int_equal(chmod(dir, 0555), 0);
		h = history_open(path, HISTORY_READ, &err);
		if (!h)
			fail_msg("read in a read-only directory: %s", err);
		assert_int_equal(count_runs(h), 4);
		history_close(h);
		assert_null(history_open(path, HISTORY_WRITE, &err));
		assert_non_null(strstr(err, "is not writable"));
		free(err);
		err = NULL;
		assert_int_equal(chmod(dir, 0755), 0);
		leave_hot_journal(path);
		assert_int_equal(chmod(dir, 0555), 0);
		assert_null(history_open(path, HISTORY_READ, &err));
		assert_non_null(strstr(err, "needs recovery"));
		assert_non_null(strstr(err, "write access"));
		free(err);
		err = NULL;
		assert_int_equal(chmod(dir, 0755), 0);
	}

	/* a FIFO is refused at once, in both modes */
	char *fifo = tpath("fifo.db");
	assert_int_equal(mkfifo(fifo, 0600), 0);
	for (int mode = 0; mode < 2; mode++) {
		assert_null(history_open(fifo, mode ? HISTORY_WRITE : HISTORY_READ, &err));
		assert_non_null(strstr(err, "not a regular file"));
		free(err);
		err = NULL;
	}
	free(fifo);
	free(path);
	free(dir);
}

enum { WRITERS = 2, RUNS_EACH = 40 };

static void test_concurrent_writers(void **s)
{
	(void)s;
	char *path = tpath("conc.db");
	pid_t pids[WRITERS];
	for (int w = 0; w < WRITERS; w++) {
		pids[w] = fork();
		assert_true(pids[w] >= 0);
		if (pids[w] == 0) {
			/* both may create the file at once; each opens per run as separate commands would */
			for (int i = 0; i < RUNS_EACH; i++) {
				char *err = NULL;
				history *h = history_open(path, HISTORY_WRITE, &err);
				if (!h) {
					fprintf(stderr, "writer %d: %s\n", w, err);
					_exit(2);
				}
				hist_run *r = history_run_begin(w ? HIST_TUNE : HIST_BENCH, 0, NULL);
				for (int k = 0; k < 20; k++) {
					char name[32];
					snprintf(name, sizeof(name), "w%d.%d", w, k);
					history_run_add_value(r, name, i, NULL, HIST_NEUTRAL);
				}
				if (!history_run_finish(h, r, NULL, &err)) {
					fprintf(stderr, "writer %d: %s\n", w, err);
					_exit(3);
				}
				history_close(h);
			}
			_exit(0);
		}
	}
	for (int w = 0; w < WRITERS; w++) {
		int status;
		assert_int_equal(waitpid(pids[w], &status, 0), pids[w]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE complete"), WRITERS * RUNS_EACH);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM runs WHERE kind = 'tune'"), RUNS_EACH);
	assert_int_equal(sql_int(path, "SELECT count(*) FROM results"), WRITERS * RUNS_EACH * 20);
	free(path);
}

static void test_time(void **s)
{
	(void)s;
	char *now = hist_now_utc();
	assert_int_equal(strlen(now), 24);
	assert_int_equal(now[10], 'T');
	free(now);
	setenv("TZ", "Europe/Paris", 1);
	tzset();
	char buf[64];
	assert_string_equal(hist_utc_to_local("2026-07-01T10:00:00.000Z", buf, sizeof(buf)), "2026-07-01 12:00:00");
	assert_string_equal(hist_utc_to_local("garbage", buf, sizeof(buf)), "garbage");
	setenv("TZ", "UTC", 1);
	tzset();
	assert_string_equal(hist_utc_to_local("2026-12-31T23:59:59Z", buf, sizeof(buf)), "2026-12-31 23:59:59");
	hist_kind k;
	assert_true(hist_kind_parse("tune", &k));
	assert_int_equal(k, HIST_TUNE);
	assert_false(hist_kind_parse("bogus", &k));
	assert_string_equal(hist_kind_name(HIST_WATCH), "watch");
}

static void test_export(void **s)
{
	(void)s;
	char *path = tpath("exp.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	char *argv[] = {"gpuvet", "bench", "--note", "say \"hi\", then\nleave"};
	hist_run *r = history_run_begin(HIST_BENCH, 4, argv);
	history_run_add_gpu(r, 0, "NVIDIA H200, 141GB", NULL, NULL);
	history_run_add_result(r, &(hist_result){.name = "gemm,\"odd\"", .value = 1.5, .unit = "TFLOP/s",
						 .better = HIST_HIGHER_BETTER, .min = 1, .max = 2, .repeats = 3, .gpu = 0});
	assert_true(history_run_finish(h, r, NULL, &err));
	hist_run_row *v;
	size_t n;
	assert_true(history_list(h, NULL, &v, &n, &err));
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);
	history_export_csv_header(mem);
	for (size_t i = 0; i < n; i++)
		history_export_csv_run(mem, &v[i]);
	fclose(mem);
	assert_non_null(strstr(buf, "run_id,started_utc,kind,host,gpu_name,command,result,gpu,value,unit,better,"
				    "min,max,repeats,params\n"));
	assert_non_null(strstr(buf, ",\"NVIDIA H200, 141GB\","));
	assert_non_null(strstr(buf, ",\"gpuvet bench --note 'say \"\"hi\"\", then\nleave'\","));
	assert_non_null(strstr(buf, ",\"gemm,\"\"odd\"\"\",0,1.5,TFLOP/s,higher,1,2,3,\n"));
	free(buf);

	char *js = NULL;
	mem = open_memstream(&js, &len);
	hist_json_writer w;
	history_json_begin(&w, mem);
	for (size_t i = 0; i < n; i++)
		history_json_run(&w, &v[i]);
	history_json_end(&w);
	fclose(mem);
	/* one run a line between the head and the tail, and a document as a whole */
	assert_non_null(strstr(js, "{\"schema\":\"gpuvet.history/1\",\"runs\":[\n{\"id\":"));
	assert_non_null(strstr(js, "\"name\":\"gemm,\\\"odd\\\"\""));
	assert_non_null(strstr(js, "}\n]}\n"));
	struct cJSON *j = cJSON_Parse(js);
	assert_non_null(j);
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "runs")), 1);
	cJSON_Delete(j);
	free(js);
	hist_runs_free(v, n);
	history_close(h);
	free(path);
}

typedef struct each_seen {
	long long ids[200];
	size_t n, stop_after;
} each_seen;

static bool each_cb(void *ctx, hist_run_row *r)
{
	each_seen *e = ctx;
	e->ids[e->n++] = r->id;
	assert_int_equal((int)r->nresults, 1); /* every run comes with its parts */
	return e->n != e->stop_after;
}

/* history_each goes through more runs than one page holds, in the query's order, with their
 * parts; a callback that says stop ends the read; history_count counts what it would give. */
static void test_each_pages(void **s)
{
	(void)s;
	char *path = tpath("each.db");
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	assert_non_null(h);
	for (int i = 0; i < 150; i++) {
		hist_run *r = history_run_begin(i % 3 ? HIST_BENCH : HIST_CHECK, 0, NULL);
		history_run_add_value(r, "x", i, "s", HIST_LOWER_BETTER);
		assert_true(history_run_finish(h, r, NULL, &err));
	}
	each_seen e = {.stop_after = 0};
	hist_query q = {.any_kind = true, .oldest_first = true};
	assert_true(history_each(h, &q, each_cb, &e, &err));
	assert_int_equal((int)e.n, 150);
	for (size_t i = 1; i < e.n; i++)
		assert_true(e.ids[i] > e.ids[i - 1]);
	e = (each_seen){.stop_after = 70};
	q = (hist_query){.any_kind = true};
	assert_true(history_each(h, &q, each_cb, &e, &err));
	assert_int_equal((int)e.n, 70);
	assert_true(e.ids[0] > e.ids[1]); /* newest first */
	long long counts[HIST_KIND_LAST + 1];
	assert_true(history_count(h, &q, counts, &err));
	assert_int_equal((int)counts[HIST_CHECK], 50);
	assert_int_equal((int)counts[HIST_BENCH], 100);
	q.limit = 10;
	assert_true(history_count(h, &q, counts, &err));
	assert_int_equal((int)(counts[HIST_CHECK] + counts[HIST_BENCH]), 10);
	history_close(h);
	free(path);
}

/* A writer checks the whole file (PRAGMA quick_check) only when it is not as a verified gpuvet
 * writer left it: a `check --fast` each minute from cron must not read its whole history twice
 * per run (0.35 s at 60 MiB against 16 ms). */
static void reopen_write(const char *path)
{
	char *err = NULL;
	history *h = history_open(path, HISTORY_WRITE, &err);
	if (!h)
		fail_msg("open %s: %s", path, err);
	write_bench(h, 3, 1);
	history_close(h);
}

static void test_verified_stamp(void **s)
{
	(void)s;
	char *path = tpath("stamp.db"), *stamp = xasprintf("%s-verified", path);
	assert_false(history_corruption_seen());
	reopen_write(path); /* a new file: nothing to check, stamped at close */
	time_t at = 0;
	assert_true(history_stamp_current(path, time(NULL), &at));
	assert_true(time(NULL) - at < 60);

	/* unchanged since: no check */
	unsigned n = history_integrity_checks();
	reopen_write(path);
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n);

	/* the times put back as they were: the ctime, which no one can set back, still tells */
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	struct timespec times[2] = {st.st_atim, st.st_mtim};
	struct timespec pause = {0, 20 * 1000000L};
	nanosleep(&pause, NULL);
	assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 1);

	/* the whole check at least once a day, and its time carried over by the skipped ones */
	history_stamp_write(path, time(NULL) - HISTORY_RECHECK_SECONDS - 5);
	assert_false(history_stamp_current(path, time(NULL), &at));
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 2);
	history_stamp_write(path, time(NULL) - 3600);
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 2);
	assert_true(history_stamp_current(path, time(NULL), &at));
	assert_true(time(NULL) - at >= 3600 - 5 && time(NULL) - at < 3600 + 60);

	/* a stamp others may change is not believed */
	assert_int_equal(chmod(stamp, 0620), 0);
	assert_false(history_stamp_current(path, time(NULL), &at));
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 3);

	/* another writer's frames in the WAL: checked */
	sqlite3 *db;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; INSERT INTO runs (kind, started_utc, complete) "
					  "VALUES ('check', '2026-12-07T00:00:00.000Z', 1)", NULL, NULL, NULL),
			 SQLITE_OK);
	assert_false(history_stamp_current(path, time(NULL), &at));
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 4);
	sqlite3_close(db); /* the last connection: it moves the WAL into the file, a change no stamp saw */
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 5);

	/* a damaged page met by any connection: no stamp is believed or left after that */
	assert_true(history_stamp_current(path, time(NULL), &at));
	size_t len;
	char *bytes = read_all(path, &len);
	char *copy = tpath("stamp-copy.db");
	for (size_t i = 4096; i < len; i++)
		bytes[i] = (char)(i * 5 + 1);
	write_file(copy, bytes, len);
	free(bytes);
	assert_int_equal(sqlite3_open(copy, &db), SQLITE_OK);
	sqlite3_exec(db, "SELECT count(*) FROM results", NULL, NULL, NULL);
	sqlite3_close(db);
	assert_true(history_corruption_seen());
	assert_false(history_stamp_current(path, time(NULL), &at));
	reopen_write(path);
	assert_int_equal(history_integrity_checks(), n + 6);
	assert_int_equal(access(stamp, F_OK), -1);
	free(copy);
	free(stamp);
	free(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first: before another test's damaged file sets the process's corruption flag, and it sets it */
		cmocka_unit_test(test_verified_stamp),
		cmocka_unit_test(test_default_path),
		cmocka_unit_test(test_create_modes_and_pragmas),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_samples_flush_incomplete),
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_baselines_and_gc),
		cmocka_unit_test(test_foreign_files_untouched),
		cmocka_unit_test(test_migration_v1),
		cmocka_unit_test(test_kill_during_write),
		cmocka_unit_test(test_concurrent_writers),
		cmocka_unit_test(test_hot_journal_and_readonly),
		cmocka_unit_test(test_time),
		cmocka_unit_test(test_export),
		cmocka_unit_test(test_each_pages),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
