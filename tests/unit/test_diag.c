/*
 * Unit tests of gpuvet diag's judging, with synthetic figures and samples: the tables, a figure
 * against its class, peers, the health counters before and after, the power test, the multi-GPU
 * tests from bench's figures, the GPU's own history, and the fleet merge. Each finding these
 * judges make is triggered here and shown absent on healthy input (the scenarios 8xx-diag-* run
 * the tests themselves on the fakes).
 *
 * catalogue: diag.peer-outlier (test_peers), diag.history-drop (test_history), diag.ecc-errors
 * catalogue: diag.row-remap diag.xid (test_health), diag.power-low diag.throttled
 * catalogue: diag.throughput-sag (test_power), diag.p2p diag.nccl (test_multi): each triggered and
 * shown absent on healthy input.
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
#include <unistd.h>

#include "bench/report.h"
#include "core/text.h"
#include "diag/diag.h"
#include "kb/kb.h"
#include "sampler/snapshot.h"
#include "store/history.h"
#include "../tools/test_tmp.h"

static diag_opts opts;

static diag_run *new_run(int ngpus, const char *const *names)
{
	diag_run *r = xcalloc(1, sizeof(*r));
	opts.level = &diag_levels[1];
	r->o = &opts;
	findings_init(&r->fs);
	str_copy(r->host, sizeof(r->host), "node1");
	r->gpus = xcalloc((size_t)ngpus, sizeof(*r->gpus));
	r->ngpus = ngpus;
	for (int i = 0; i < ngpus; i++) {
		r->gpus[i].ordinal = i;
		r->gpus[i].nvml = i;
		r->gpus[i].tested = true;
		str_copy(r->gpus[i].name, sizeof(r->gpus[i].name), names[i]);
		snprintf(r->gpus[i].uuid, sizeof(r->gpus[i].uuid), "GPU-test-%d", i);
	}
	return r;
}

static diag_result *figure(diag_run *r, int gpu, int test, const char *metric, double v, const char *unit)
{
	diag_result *x = diag_result_add(r, test, gpu);
	str_copy(x->metric, sizeof(x->metric), metric);
	str_copy(x->unit, sizeof(x->unit), unit);
	x->value = v;
	return x;
}

static int count_finding(const diag_run *r, int f, int gpu)
{
	int n = 0;
	for (size_t i = 0; i < r->nres; i++)
		n += r->res[i].finding == f && (gpu < 0 || r->res[i].gpu == gpu);
	return n;
}

static void test_tables(void **s)
{
	(void)s;
	for (int t = 0; t < DIAG_NTESTS; t++) {
		assert_true(diag_tests[t].level >= 1 && diag_tests[t].level <= 4);
		assert_int_equal(diag_test_find(diag_tests[t].name), t);
	}
	for (int f = 0; f < DIAG_NFINDINGS; f++) {
		assert_true(strncmp(diag_findings[f].id, "diag.", 5) == 0);
		assert_true(diag_findings[f].test >= -1 && diag_findings[f].test < DIAG_NTESTS);
		assert_non_null(diag_findings[f].action);
	}
	assert_int_equal(diag_level_parse("3")->level, 3);
	assert_int_equal(diag_level_parse("xlong")->level, 4);
	assert_null(diag_level_parse("5"));
	assert_null(diag_level_parse(""));
	assert_int_equal(diag_test_find("nope"), -1);
}

static void test_figure_and_expected(void **s)
{
	(void)s;
	diag_expect e = {100, 0.85, 0.70, "x"};
	double m;
	assert_int_equal(diag_judge_figure(90, &e, true, &m), DIAG_PASS);
	assert_true(fabs(m + 10) < 1e-9);
	assert_int_equal(diag_judge_figure(80, &e, true, &m), DIAG_WARN);
	assert_int_equal(diag_judge_figure(60, &e, true, &m), DIAG_FAIL);
	assert_int_equal(diag_judge_figure(NAN, &e, true, &m), DIAG_PASS);
	/* the H200's measured figures, by the longest name pattern */
	assert_true(diag_expected("NVIDIA H200", "gemm.bf16", &e));
	assert_true(e.value > 600 && e.warn_below == 0.85);
	assert_non_null(strstr(e.source, "measured"));
	assert_true(diag_expected("NVIDIA H200", "memory.triad", &e));
	assert_false(diag_expected("NVIDIA H200", "no.such.metric", &e));
	assert_false(diag_expected("NVIDIA GeForce GTX 1080", "gemm.bf16", &e));
}

static void test_peers(void **s)
{
	(void)s;
	const char *names[] = {"NVIDIA H200", "NVIDIA H200", "NVIDIA H200", "NVIDIA H200", "NVIDIA A100"};
	diag_run *r = new_run(5, names);
	figure(r, 0, DIAG_T_BANDWIDTH, "memory.triad", 4300, "GB/s");
	figure(r, 1, DIAG_T_BANDWIDTH, "memory.triad", 4350, "GB/s");
	figure(r, 2, DIAG_T_BANDWIDTH, "memory.triad", 3700, "GB/s"); /* 85%: warn */
	figure(r, 3, DIAG_T_BANDWIDTH, "memory.triad", 3000, "GB/s"); /* 70%: fail */
	figure(r, 4, DIAG_T_BANDWIDTH, "memory.triad", 1500, "GB/s"); /* another class: no peers */
	diag_judge_peers(r);
	assert_int_equal(count_finding(r, DIAG_F_PEER, 0), 0);
	assert_int_equal(count_finding(r, DIAG_F_PEER, 1), 0);
	assert_int_equal(count_finding(r, DIAG_F_PEER, 2), 1);
	assert_int_equal(count_finding(r, DIAG_F_PEER, 3), 1);
	assert_int_equal(count_finding(r, DIAG_F_PEER, 4), 0);
	for (size_t i = 0; i < r->nres; i++)
		if (r->res[i].finding == DIAG_F_PEER)
			assert_int_equal(r->res[i].sev, r->res[i].gpu == 3 ? SEV_FAIL : SEV_WARN);
	diag_collect_findings(r);
	const finding *f = findings_find(&r->fs, "diag.peer-outlier");
	assert_non_null(f);
	diag_run_free(r);
}

static void sample(gpu_sample *g)
{
	memset(g, 0, sizeof(*g));
	g->ecc_uncorr_volatile = sv_ok(0);
	g->ecc_corr_volatile = sv_ok(2);
	g->retired_dbe = sv_ok(0);
	g->remap_pending = sv_ok(0);
	g->remap_failure = sv_ok(0);
	g->remap_uncorr = sv_ok(0);
}

static void test_health(void **s)
{
	(void)s;
	const char *names[] = {"NVIDIA H200"};
	gpu_sample a, b;
	sample(&a);
	sample(&b);
	diag_run *r = new_run(1, names);
	diag_result *x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->st, DIAG_PASS);
	assert_int_equal(x->finding, -1);
	/* corrected errors during the run warn, uncorrected fail */
	b.ecc_corr_volatile = sv_ok(5);
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->finding, DIAG_F_ECC);
	assert_int_equal(x->st, DIAG_WARN);
	b.ecc_uncorr_volatile = sv_ok(1);
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->st, DIAG_FAIL);
	/* a remap that became pending */
	sample(&b);
	b.remap_pending = sv_ok(1);
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->finding, DIAG_F_REMAP);
	/* pending before and after: not new, not this run's */
	a.remap_pending = sv_ok(1);
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->finding, -1);
	/* an Xid 79 (fallen off the bus) during the run fails, one seen before does not */
	sample(&a);
	sample(&b);
	b.nxid = 1;
	b.xids[0] = (xid_count){79, 1, 0};
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->finding, DIAG_F_XID);
	assert_int_equal(x->st, DIAG_FAIL);
	a.nxid = 1;
	a.xids[0] = (xid_count){79, 1, 0};
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->finding, -1);
	/* a GPU that NVML lost */
	b.lost = true;
	x = diag_result_add(r, DIAG_T_HEALTH, 0);
	diag_judge_health(&a, &b, x);
	assert_int_equal(x->st, DIAG_FAIL);
	diag_run_free(r);
}

static void test_power(void **s)
{
	(void)s;
	const char *names[] = {"NVIDIA H200"};
	diag_run *r = new_run(1, names);
	/* the H200 as measured: 692 W of 700 with the power cap, steady throughput */
	diag_result *x = diag_result_add(r, DIAG_T_POWER, 0);
	diag_judge_power(692, 696, 700, CLK_SW_POWER_CAP, 58, 681, 680, x);
	assert_int_equal(x->st, DIAG_PASS);
	assert_true(x->value == 692 && x->expected == 700);
	/* far below the limit with no cap: held back */
	x = diag_result_add(r, DIAG_T_POWER, 0);
	diag_judge_power(450, 480, 700, 0, 60, 500, 500, x);
	assert_int_equal(x->finding, DIAG_F_POWER_LOW);
	/* hardware slowdown fails, thermal warns */
	x = diag_result_add(r, DIAG_T_POWER, 0);
	diag_judge_power(690, 700, 700, CLK_SW_POWER_CAP | CLK_HW_SLOWDOWN, 70, 600, 600, x);
	assert_int_equal(x->finding, DIAG_F_THROTTLED);
	assert_int_equal(x->st, DIAG_FAIL);
	x = diag_result_add(r, DIAG_T_POWER, 0);
	diag_judge_power(690, 700, 700, CLK_SW_POWER_CAP | CLK_SW_THERMAL, 88, 600, 600, x);
	assert_int_equal(x->st, DIAG_WARN);
	/* throughput that falls by 10% over the run */
	x = diag_result_add(r, DIAG_T_POWER, 0);
	diag_judge_power(690, 700, 700, CLK_SW_POWER_CAP, 80, 680, 610, x);
	assert_int_equal(x->finding, DIAG_F_UNSTABLE);
	diag_run_free(r);
}

static bench_figure *add_fig(bench_report *rep, const char *id, const char *group, double v)
{
	bench_figure *f = report_add(rep, id, group, "GB/s", "%s", id);
	f->st.n = 1;
	f->st.median = v;
	return f;
}

static void test_multi(void **s)
{
	(void)s;
	const char *names[] = {"NVIDIA H200", "NVIDIA H200"};
	diag_run *r = new_run(2, names);
	bench_report rep;
	report_init(&rep);
	add_fig(&rep, "p2p.0_1", "p2p", 380);
	add_fig(&rep, "p2p.1_0", "p2p", 385);
	add_fig(&rep, "p2p.0_2", "p2p", 382);
	diag_result *x = diag_result_add(r, DIAG_T_P2P, -1);
	diag_judge_p2p(&rep, false, x);
	assert_int_equal(x->st, DIAG_PASS);
	add_fig(&rep, "p2p.2_0", "p2p", 120); /* a slow pair */
	x = diag_result_add(r, DIAG_T_P2P, -1);
	diag_judge_p2p(&rep, false, x);
	assert_int_equal(x->finding, DIAG_F_P2P_FAIL);
	assert_int_equal(x->st, DIAG_FAIL);
	report_free(&rep);
	/* nccl: missing is a skip, an init that failed a fail, a measured all-reduce a pass */
	report_init(&rep);
	report_skip(&rep, "nccl", "nccl", "GB/s", "NCCL collectives", "libnccl.so.2 not found");
	x = diag_result_add(r, DIAG_T_NCCL, -1);
	diag_judge_nccl(&rep, x);
	assert_int_equal(x->st, DIAG_SKIP);
	report_free(&rep);
	report_init(&rep);
	report_skip(&rep, "nccl", "nccl", "GB/s", "NCCL collectives", "ncclCommInitAll failed: unhandled cuda error");
	x = diag_result_add(r, DIAG_T_NCCL, -1);
	diag_judge_nccl(&rep, x);
	assert_int_equal(x->finding, DIAG_F_NCCL_FAIL);
	report_free(&rep);
	report_init(&rep);
	bench_figure *f = add_fig(&rep, "nccl.all_reduce.268435456", "nccl", 350);
	f->size = 268435456;
	x = diag_result_add(r, DIAG_T_NCCL, -1);
	diag_judge_nccl(&rep, x);
	assert_int_equal(x->st, DIAG_PASS);
	assert_true(x->value == 350);
	report_free(&rep);
	diag_run_free(r);
}

static void test_history(void **s)
{
	(void)s;
	char db[512];
	test_tmp_path(db, sizeof(db), "diag-history.db");
	unlink(db);
	const char *names[] = {"NVIDIA H200", "NVIDIA H200"};
	/* the first run: nothing to compare with */
	diag_run *r = new_run(2, names);
	figure(r, 0, DIAG_T_BANDWIDTH, "memory.triad", 4300, "GB/s");
	diag_judge_history(r, db);
	assert_int_equal(count_finding(r, DIAG_F_HISTORY, -1), 0);
	diag_run_free(r);
	/* a stored run: GPU-test-0 at NVML index 1 then (indexes change between boots) */
	char *err = NULL;
	history *h = history_open(db, HISTORY_WRITE, &err);
	assert_non_null(h);
	hist_run *hr = history_run_begin(HIST_DIAG, 0, NULL);
	history_run_add_gpu(hr, 1, "NVIDIA H200", "GPU-test-0", NULL);
	history_run_add_gpu(hr, 0, "NVIDIA H200", "GPU-test-1", NULL);
	hist_result a = {"diag.memory.triad", 4350, "GB/s", HIST_HIGHER_BETTER, NAN, NAN, 0, 1, NULL};
	hist_result b = {"diag.memory.triad", 4350, "GB/s", HIST_HIGHER_BETTER, NAN, NAN, 0, 0, NULL};
	history_run_add_result(hr, &a);
	history_run_add_result(hr, &b);
	long long id;
	assert_true(history_run_finish(h, hr, &id, &err));
	history_close(h);
	r = new_run(2, names);
	figure(r, 0, DIAG_T_BANDWIDTH, "memory.triad", 3500, "GB/s"); /* 80% of its own 4350 */
	figure(r, 1, DIAG_T_BANDWIDTH, "memory.triad", 4340, "GB/s");
	diag_judge_history(r, db);
	assert_int_equal(count_finding(r, DIAG_F_HISTORY, 0), 1);
	assert_int_equal(count_finding(r, DIAG_F_HISTORY, 1), 0);
	diag_run_free(r);
	unlink(db);
	char side[600];
	snprintf(side, sizeof(side), "%s-wal", db);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", db);
	unlink(side);
	snprintf(side, sizeof(side), "%s-verified", db);
	unlink(side);
}

/* Three nodes' documents: the third's GPU 1 is slower than the class's median everywhere. */
static void test_merge(void **s)
{
	(void)s;
	char paths[3][512];
	const char *names[] = {"NVIDIA H200", "NVIDIA H200"};
	for (int n = 0; n < 3; n++) {
		diag_run *r = new_run(2, names);
		snprintf(r->host, sizeof(r->host), "node%d", n);
		figure(r, 0, DIAG_T_BANDWIDTH, "memory.triad", 4340 + n, "GB/s");
		figure(r, 1, DIAG_T_BANDWIDTH, "memory.triad", n == 2 ? 3000 : 4350, "GB/s");
		char name[64];
		snprintf(name, sizeof(name), "diag-merge-%d.json", n);
		test_tmp_path(paths[n], sizeof(paths[n]), name);
		FILE *fp = fopen(paths[n], "w");
		assert_non_null(fp);
		json_print_doc(fp, diag_render_json(r));
		fclose(fp);
		diag_run_free(r);
	}
	char *argv[3] = {paths[0], paths[1], paths[2]};
	char *texts[3];
	for (int n = 0; n < 3; n++) {
		FILE *fp = fopen(paths[n], "r");
		assert_non_null(fp);
		texts[n] = xcalloc(1, 1 << 20);
		fread(texts[n], 1, (1 << 20) - 1, fp);
		fclose(fp);
	}
	char outp[512];
	test_tmp_path(outp, sizeof(outp), "diag-merge.out");
	FILE *out = fopen(outp, "w+");
	assert_int_equal(diag_merge(3, argv, texts, true, out), 1);
	rewind(out);
	char buf[65536];
	size_t len = fread(buf, 1, sizeof(buf) - 1, out);
	buf[len] = 0;
	fclose(out);
	cJSON *doc = cJSON_Parse(buf);
	assert_non_null(doc);
	cJSON *outliers = cJSON_GetObjectItem(doc, "outliers");
	assert_int_equal(cJSON_GetArraySize(outliers), 1);
	cJSON *o = cJSON_GetArrayItem(outliers, 0);
	assert_string_equal(cJSON_GetObjectItem(o, "host")->valuestring, "node2");
	assert_int_equal((int)cJSON_GetObjectItem(o, "index")->valuedouble, 1);
	assert_string_equal(cJSON_GetObjectItem(o, "status")->valuestring, "fail");
	cJSON_Delete(doc);
	/* a text that is not a diag document is refused, naming its file */
	strcpy(texts[0], "{\"schema\":\"gpuvet.check/1\"}");
	out = fopen(outp, "w");
	assert_int_equal(diag_merge(1, argv, texts, false, out), 2);
	fclose(out);
	for (int n = 0; n < 3; n++)
		free(texts[n]);
	for (int n = 0; n < 3; n++)
		unlink(paths[n]);
	unlink(outp);
}

int main(void)
{
	char *err = NULL;
	kb *k = kb_load(NULL, &err);
	if (!k)
		return 1;
	kb_set_global(k);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),  cmocka_unit_test(test_figure_and_expected), cmocka_unit_test(test_peers),
		cmocka_unit_test(test_health),  cmocka_unit_test(test_power),               cmocka_unit_test(test_multi),
		cmocka_unit_test(test_history), cmocka_unit_test(test_merge),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	kb_free(k);
	return rc;
}
