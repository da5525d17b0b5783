/*
 * Unit tests of gpuvet tune's C side: reading the probe's output (recorded fixtures of
 * tests/fixtures/tune, hand-written and marked as such, and hostile input), the gains and their
 * ranking, the verdict against the knowledge base, the stderr protocol, GPU-utilization marks,
 * the streaming child runner, the renderers and the history run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc_stream.h"
#include "core/util.h"
#include "kb/kb.h"
#include "kb/kb_tune.h"
#include "store/history.h"
#include "tune/tune_advice.h"
#include "tune/tune_history.h"
#include "tune/tune_probe.h"
#include "tune/tune_render.h"
#include "tune/tune_report.h"
#include "../tools/test_tmp.h"

static kb *K;

static char *fixture(const char *name, size_t *len)
{
	const char *src = getenv("GPUVET_SOURCE_DIR");
	char *path = xasprintf("%s/tests/fixtures/tune/%s", src ? src : "../..", name);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		fail_msg("cannot open fixture %s", path);
	strbuf sb;
	sb_init(&sb);
	char buf[8192];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&sb, buf, n);
	fclose(fp);
	free(path);
	*len = sb.len;
	return sb_steal(&sb);
}

static tune_report *load(const char *name)
{
	size_t len;
	char *text = fixture(name, &len);
	tune_report *r = tune_report_parse(text, len, NULL);
	free(text);
	return r;
}

/* A report from a small document: runs given as JSON text. */
static tune_report *doc(const char *runs_json)
{
	char *text = xasprintf("{\"schema\":\"gpuvet.tune-probe/1\",\"status\":\"ok\",\"env\":{\"gpu_name\":\"Test GPU\","
			       "\"torch\":\"2.4.0\"},\"models\":[{\"model\":\"m\",\"impl\":\"builtin\",\"batch\":8}],"
			       "\"runs\":%s}",
			       runs_json);
	tune_report *r = tune_report_parse(text, strlen(text), NULL);
	free(text);
	return r;
}

static const tune_rec *rec_of(const tune_advice *a, const char *key)
{
	for (size_t i = 0; i < a->nrecs; i++)
		if (strcmp(a->recs[i].info->key, key) == 0)
			return &a->recs[i];
	return NULL;
}

/* ---- fixtures ---- */

static void test_parse_full(void **s)
{
	(void)s;
	tune_report *r = load("h200-full.json");
	assert_string_equal(r->status, "ok");
	assert_false(r->from_lines);
	assert_string_equal(r->env.gpu_name, "NVIDIA H200");
	assert_int_equal(r->env.gpu_count, 2);
	assert_int_equal(r->env.cudnn, 91900);
	assert_true(r->env.bf16_supported);
	assert_int_equal(r->nmodels, 3);
	assert_int_equal(r->nruns, 23);
	assert_int_equal(r->npipes, 8);
	assert_true(r->ddp.present);
	assert_int_equal(r->ddp.nranks, 2);
	assert_int_equal(r->image_size, 224);
	const tune_run *x = tune_find_run(r, "resnet50", "cuda", "channels_last");
	assert_non_null(x);
	assert_string_equal(x->base, "amp_bf16");
	assert_true(x->cfg.channels_last);
	assert_string_equal(x->cfg.precision, "bf16");
	assert_true(fabs(x->ms - 16.9) < 1e-9);
	assert_true(isnan(x->gpu_util));
	assert_true(tune_find_run(r, "bert", "cuda", "ref_fp32")->reference);
	assert_null(tune_find_run(r, "bert", "cuda", "channels_last"));
	assert_true(tune_report_has_gpu(r));
	assert_string_equal(r->started, "2026-11-30T09:12:44Z");
	tune_report_free(r);
}

static void test_advice_full(void **s)
{
	(void)s;
	tune_report *r = load("h200-full.json");
	tune_advice *a = tune_advise(r, K);
	assert_int_equal(a->nsums, 3);
	const tune_summary *rn = &a->sums[0];
	assert_string_equal(rn->model, "resnet50");
	assert_true(fabs(rn->speedup - 2980.4 / 38.6) < 1e-9);
	assert_string_equal(rn->best->setting, "cudnn_benchmark");
	assert_string_equal(rn->best_desc, "AMP bf16 + channels_last + cudnn.benchmark");
	assert_true(fabs(rn->tuned_gain - 38.6 / 16.2) < 1e-9);
	/* AMP bf16 on resnet50: 1.75x, 47% less memory, against fp32 */
	const tune_gain *g = NULL;
	for (size_t i = 0; i < rn->ngains; i++)
		if (strcmp(rn->gains[i].run->setting, "amp_bf16") == 0)
			g = &rn->gains[i];
	assert_non_null(g);
	assert_string_equal(g->base->setting, "fp32");
	char text[96];
	tune_format_gain(text, sizeof(text), g->speedup, g->mem_saving);
	assert_string_equal(text, "1.75x faster, 47% less memory");

	/* ranked: the pipeline (6x), AMP bf16 (the chosen precision), channels_last; cudnn.benchmark
	 * (1.04x) is under the threshold; TF32 and AMP fp16 are alternatives after them */
	assert_true(a->nrecs >= 5);
	assert_string_equal(a->recs[0].info->key, "pipeline");
	assert_string_equal(a->recs[1].info->key, "amp_bf16");
	assert_string_equal(a->recs[2].info->key, "channels_last");
	assert_null(rec_of(a, "cudnn_benchmark"));
	assert_true(rec_of(a, "tf32")->alternative);
	assert_true(rec_of(a, "amp_fp16")->alternative);
	assert_false(rec_of(a, "amp_bf16")->alternative);
	assert_int_equal(rec_of(a, "amp_bf16")->nper, 3);
	for (size_t i = 1; i < a->nrecs; i++)
		if (a->recs[i].alternative == a->recs[i - 1].alternative && !a->recs[i].for_memory &&
		    !a->recs[i - 1].for_memory)
			assert_true(a->recs[i].score <= a->recs[i - 1].score);
	assert_non_null(strstr(rec_of(a, "pipeline")->code, "num_workers=8, pin_memory=True"));
	assert_non_null(strstr(rec_of(a, "amp_bf16")->code, "torch.bfloat16"));

	/* the input pipeline starves the GPU with the defaults, not with 8 workers and pinning */
	assert_true(a->pipe.present);
	assert_true(a->pipe.starves_default);
	assert_false(a->pipe.starves_best);
	assert_int_equal(a->pipe.best->workers, 8);
	assert_true(a->pipe.best->pin_memory);

	/* verdict against the H200 anchors: all as expected */
	assert_int_equal(a->nverdicts, 6);
	assert_false(a->any_bad_verdict);
	for (size_t i = 0; i < a->nverdicts; i++)
		assert_string_equal(a->verdicts[i].word, "as expected");
	assert_string_equal(a->ddp_word, "scales well");
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_advice_slow(void **s)
{
	(void)s;
	tune_report *r = load("h200-slow.json");
	tune_advice *a = tune_advise(r, K);
	assert_true(a->any_bad_verdict);
	int slow = 0;
	for (size_t i = 0; i < a->nverdicts; i++)
		if (a->verdicts[i].bad) {
			slow++;
			assert_string_equal(a->verdicts[i].metric, "step_ms");
			assert_true(a->verdicts[i].ratio < 0.8);
		}
	assert_int_equal(slow, 4);
	tune_advice_free(a);
	tune_report_free(r);
}

/* The tolerance of each knowledge-base row: BERT's AMP step (launch-bound, 30%) 25% slower than
 * the H200 figure is still as expected; its fp32 step (GPU-bound, 10%) 12% slower is not. */
static void test_advice_tolerance(void **s)
{
	(void)s;
	const char *text =
		"{\"schema\":\"gpuvet.tune-probe/1\",\"status\":\"ok\",\"env\":{\"gpu_name\":\"NVIDIA H200\","
		"\"torch\":\"2.11.0\"},\"models\":[{\"model\":\"bert\",\"impl\":\"transformers\",\"batch\":32,"
		"\"seq_len\":128}],\"runs\":["
		"{\"id\":1,\"model\":\"bert\",\"device\":\"cuda\",\"setting\":\"ref_fp32\",\"batch\":32,"
		"\"status\":\"ok\",\"ms\":67.7,\"reference\":true},"
		"{\"id\":2,\"model\":\"bert\",\"device\":\"cuda\",\"setting\":\"ref_amp_fp16\",\"batch\":32,"
		"\"status\":\"ok\",\"ms\":43.2,\"reference\":true}]}";
	tune_report *r = tune_report_parse(text, strlen(text), NULL);
	assert_non_null(r);
	tune_advice *a = tune_advise(r, K);
	assert_int_equal(a->nverdicts, 2);
	for (size_t i = 0; i < a->nverdicts; i++) {
		const tune_verdict *v = &a->verdicts[i];
		if (strcmp(v->setting, "ref_fp32") == 0) {
			assert_true(fabs(v->tolerance - 0.10) < 1e-9);
			assert_string_equal(v->word, "slower than expected");
			assert_true(v->bad);
		} else {
			assert_true(fabs(v->tolerance - 0.30) < 1e-9);
			assert_string_equal(v->word, "as expected");
			assert_false(v->bad);
		}
	}
	assert_true(a->any_bad_verdict);
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_advice_t4(void **s)
{
	(void)s;
	tune_report *r = load("t4-one-gpu.json");
	tune_advice *a = tune_advise(r, K);
	assert_string_equal(tune_find_run(r, "resnet50", "cuda", "amp_bf16")->status, "skipped");
	/* no bf16 here: AMP fp16 is the precision to use */
	assert_string_equal(a->recs[0].info->key, "amp_fp16");
	assert_false(a->recs[0].alternative);
	assert_null(rec_of(a, "amp_bf16"));
	assert_null(rec_of(a, "tf32")); /* 1.006x and 0.98x: no gain on a T4 */
	assert_int_equal(a->nverdicts, 0); /* the knowledge base has no T4 figures */
	assert_null(a->ddp_word);
	assert_int_equal(r->notes.n, 1);
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_killed_lines(void **s)
{
	(void)s;
	size_t len;
	char *text = fixture("h200-killed.stderr", &len);
	strlist lines = {0}, results = {0};
	sl_split(&lines, text, "\n", false);
	tune_stream st;
	tune_stream_init(&st);
	for (size_t i = 0; i < lines.n; i++)
		tune_stream_line(&st, lines.v[i]);
	assert_string_equal(st.gpu_uuid, "GPU-3f1c9a2e-5b7d-4e11-9c0a-7d2b8e6f4a10");
	assert_int_equal(st.step, 8);
	assert_int_equal(st.steps, 35);
	assert_string_equal(st.label, "resnet50 ref_amp_fp16");
	/* no document at all: the lines are what there is */
	tune_report *r = tune_report_parse("", 0, &st.results);
	assert_true(r->from_lines);
	assert_string_equal(r->status, "partial");
	assert_int_equal(r->nruns, 8);
	assert_int_equal(r->nmodels, 3);
	assert_int_equal(r->npipes, 1); /* the cut last line is dropped */
	assert_string_equal(r->env.gpu_name, "NVIDIA H200");
	/* the warning line went to the free-text tail, the protocol lines did not */
	char *tail = tune_stream_tail(&st, 5);
	assert_non_null(strstr(tail, "UserWarning"));
	assert_null(strstr(tail, "RESULT"));
	free(tail);
	tune_report_free(r);
	tune_stream_free(&st);
	sl_free(&lines);
	sl_free(&results);
	free(text);
}

static void test_budget_fixture(void **s)
{
	(void)s;
	tune_report *r = load("h200-budget.json");
	assert_string_equal(r->status, "budget");
	assert_false(r->ddp.present);
	assert_int_equal(r->npipes, 3);
	assert_string_equal(r->pipes[2].status, "budget");
	assert_true(isnan(r->pipes[2].samples_s));
	assert_int_equal(r->skipped.n, 2);
	assert_non_null(strstr(r->skipped.v[1], "ddp"));
	tune_advice *a = tune_advise(r, K);
	assert_true(a->pipe.present);
	assert_int_equal(a->pipe.best->workers, 0); /* the 2-worker step ran out of time */
	assert_true(a->pipe.best->pin_memory);
	tune_advice_free(a);
	tune_report_free(r);
}

/* ---- gains and ranking on small documents ---- */

#define RUN(id, set, base, ms, peak, prec)                                                                             \
	"{\"id\":" #id ",\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"" set "\",\"base\":" base                   \
	",\"status\":\"ok\",\"ms\":" #ms ",\"peak_mib\":" #peak ",\"config\":{\"precision\":\"" prec "\"}}"

static void test_gain_arithmetic(void **s)
{
	(void)s;
	tune_report *r = doc("[" RUN(1, "fp32", "null", 100, 1000, "fp32") "," RUN(2, "amp_bf16", "\"fp32\"", 50, 500,
										      "bf16") "," RUN(3, "tf32", "\"fp32\"", 125, 1100, "tf32") "]");
	tune_advice *a = tune_advise(r, K);
	const tune_summary *m = &a->sums[0];
	assert_int_equal(m->ngains, 2);
	assert_true(fabs(m->gains[0].speedup - 2.0) < 1e-12);
	assert_true(fabs(m->gains[0].mem_saving - 0.5) < 1e-12);
	assert_true(fabs(m->gains[1].speedup - 0.8) < 1e-12);
	char t[96];
	tune_format_gain(t, sizeof(t), m->gains[1].speedup, m->gains[1].mem_saving);
	assert_string_equal(t, "1.25x slower, 10% more memory");
	tune_format_gain(t, sizeof(t), 1.5, NAN);
	assert_string_equal(t, "1.50x faster");
	tune_format_gain(t, sizeof(t), 1.5, 0.01);
	assert_string_equal(t, "1.50x faster");
	tune_format_gain(t, sizeof(t), NAN, 0.3);
	assert_string_equal(t, "unknown");
	assert_non_null(rec_of(a, "amp_bf16"));
	assert_null(rec_of(a, "tf32")); /* a loss is never recommended */
	assert_int_equal(a->nverdicts, 0);
	assert_true(isnan(m->speedup)); /* no CPU run */
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_bf16_preferred_when_close(void **s)
{
	(void)s;
	/* fp16 2.0x, bf16 1.96x: within 3%, bf16 (no GradScaler) is the one */
	tune_report *r = doc("[" RUN(1, "fp32", "null", 100, 1000, "fp32") "," RUN(2, "amp_fp16", "\"fp32\"", 50, 500,
										      "fp16") "," RUN(3, "amp_bf16", "\"fp32\"", 51, 500, "bf16") "]");
	tune_advice *a = tune_advise(r, K);
	assert_string_equal(a->recs[0].info->key, "amp_bf16");
	assert_true(rec_of(a, "amp_fp16")->alternative);
	tune_advice_free(a);
	tune_report_free(r);
	/* fp16 2.0x, bf16 1.8x: fp16 wins */
	r = doc("[" RUN(1, "fp32", "null", 100, 1000, "fp32") "," RUN(2, "amp_fp16", "\"fp32\"", 50, 500,
								   "fp16") "," RUN(3, "amp_bf16", "\"fp32\"", 55.5, 500, "bf16") "]");
	a = tune_advise(r, K);
	assert_string_equal(a->recs[0].info->key, "amp_fp16");
	assert_true(rec_of(a, "amp_bf16")->alternative);
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_memory_only_recommendation(void **s)
{
	(void)s;
	tune_report *r = doc("[" RUN(1, "fp32", "null", 100, 1000, "fp32") "," RUN(2, "amp_bf16", "\"fp32\"", 101, 600,
										      "bf16") "]");
	tune_advice *a = tune_advise(r, K);
	const tune_rec *x = rec_of(a, "amp_bf16");
	assert_non_null(x);
	assert_true(x->for_memory);
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_missing_base(void **s)
{
	(void)s;
	/* the base run failed: no gain, no recommendation, no crash */
	tune_report *r = doc("[{\"id\":1,\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"fp32\",\"status\":\"error\","
			     "\"reason\":\"out of memory\"}," RUN(2, "amp_bf16", "\"fp32\"", 50, 500, "bf16") "]");
	tune_advice *a = tune_advise(r, K);
	assert_int_equal(a->sums[0].ngains, 0);
	assert_int_equal(a->nrecs, 0);
	assert_null(a->sums[0].gpu_fp32);
	assert_string_equal(a->sums[0].best->setting, "amp_bf16");
	tune_advice_free(a);
	tune_report_free(r);
}

/* ---- hostile input ---- */

static void exercise(tune_report *r)
{
	tune_advice *a = tune_advise(r, K);
	FILE *devnull = fopen("/dev/null", "w");
	tune_render_opts o = {false, true, "2026-01-01", NULL};
	tune_render_text(devnull, r, a, &o);
	fclose(devnull);
	cJSON *j = tune_render_json(r, a, &o);
	char *txt = cJSON_PrintUnformatted(j);
	cJSON *back = cJSON_Parse(txt);
	assert_non_null(back); /* always valid JSON: no NaN, no Infinity */
	cJSON_Delete(back);
	free(txt);
	cJSON_Delete(j);
	tune_advice_free(a);
}

static void test_hostile(void **s)
{
	(void)s;
	static const char *const inputs[] = {
		"",
		"garbage",
		"{",
		"[1,2,3]",
		"null",
		"{\"schema\":\"gpuvet.tune-probe/1\"",
		"{\"schema\":\"something-else/1\",\"runs\":[]}",
		"{\"schema\":\"gpuvet.tune-probe/1\",\"runs\":{\"a\":1},\"models\":\"x\",\"pipeline\":7,\"ddp\":[],"
		"\"env\":[1],\"notes\":[1,null,{}],\"skipped\":[\"x\",{\"what\":3}]}",
		"{\"schema\":\"gpuvet.tune-probe/1\",\"runs\":[{\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"fp32\","
		"\"status\":\"ok\",\"ms\":NaN}]}",
		"{\"schema\":\"gpuvet.tune-probe/1\",\"runs\":[{\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"fp32\","
		"\"status\":\"ok\",\"ms\":Infinity}]}",
		"{\"schema\":\"gpuvet.tune-probe/1\",\"runs\":[{\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"fp32\","
		"\"status\":\"ok\",\"ms\":1e400,\"peak_mib\":-5,\"batch\":1e30,\"iters\":\"ten\"},"
		"{\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"tf32\",\"base\":\"fp32\",\"status\":\"ok\",\"ms\":-1},"
		"{\"model\":\"m\",\"device\":\"gpu\",\"setting\":\"x\",\"ms\":1},{\"model\":7,\"device\":\"cuda\"},"
		"{\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"amp_bf16\",\"base\":\"amp_bf16\",\"status\":\"ok\",\"ms\":3}]}",
		"{\"schema\":\"gpuvet.tune-probe/1\",\"ddp\":{\"status\":\"ok\",\"ddp_ms\":0,\"efficiency\":1e300,"
		"\"ranks\":[1,{\"rank\":-4,\"ms\":\"x\"},{\"error\":\"\\u0001\\u0002bad\"}]},\"pipeline\":[{\"workers\":-1},"
		"{\"workers\":0,\"status\":\"ok\",\"samples_s\":0},{\"workers\":3,\"status\":\"ok\",\"samples_s\":5,"
		"\"gpu_samples_s\":0}]}",
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(inputs); i++) {
		tune_report *r = tune_report_parse(inputs[i], strlen(inputs[i]), NULL);
		assert_non_null(r);
		exercise(r);
		tune_report_free(r);
	}
	/* the bad figures read as unknown */
	tune_report *r = tune_report_parse(inputs[10], strlen(inputs[10]), NULL);
	assert_int_equal(r->nruns, 3); /* device "gpu" and model 7 are not runs */
	assert_true(isnan(r->runs[0].ms));
	assert_string_equal(r->runs[0].status, "invalid");
	assert_true(isnan(r->runs[0].peak_mib));
	assert_int_equal(r->runs[0].batch, -1);
	assert_int_equal(r->runs[0].iters, -1);
	assert_true(isnan(r->runs[1].ms));
	tune_advice *a = tune_advise(r, K);
	assert_int_equal(a->sums[0].ngains, 0); /* a run is never its own base */
	tune_advice_free(a);
	tune_report_free(r);
	/* control characters in text are made printable */
	r = tune_report_parse(inputs[11], strlen(inputs[11]), NULL);
	assert_int_equal(r->ddp.nranks, 2);
	assert_non_null(r->ddp.ranks[1].error);
	assert_null(strchr(r->ddp.ranks[1].error, '\001'));
	assert_string_equal(r->ddp.status, "invalid");
	assert_int_equal(r->npipes, 2);
	tune_report_free(r);
}

static void test_huge(void **s)
{
	(void)s;
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "{\"schema\":\"gpuvet.tune-probe/1\",\"status\":\"ok\",\"message\":\"");
	for (int i = 0; i < 100000; i++)
		sb_add(&sb, "x");
	sb_add(&sb, "\",\"runs\":[");
	for (int i = 0; i < 2000; i++)
		sb_addf(&sb, "%s{\"model\":\"m%d\",\"device\":\"cuda\",\"setting\":\"fp32\",\"status\":\"ok\",\"ms\":%d}",
			i ? "," : "", i % 40, i + 1);
	sb_add(&sb, "],\"notes\":[");
	for (int i = 0; i < 500; i++)
		sb_addf(&sb, "%s\"note %d\"", i ? "," : "", i);
	sb_add(&sb, "]}");
	tune_report *r = tune_report_parse(sb.buf, sb.len, NULL);
	assert_int_equal(r->nruns, TUNE_MAX_RUNS);
	assert_int_equal(r->notes.n, TUNE_MAX_NOTES);
	assert_true(strlen(r->message) <= 600);
	exercise(r);
	tune_report_free(r);
	sb_free(&sb);
}

/* ---- knowledge base ---- */

static void test_kb_expect(void **s)
{
	(void)s;
	double v, tol;
	const char *src = NULL;
	tune_expect_key k = {"NVIDIA H200", "resnet50", "torchvision", 64, 224, -1, "ref_fp32", "step_ms"};
	assert_true(kb_tune_expect(K, &k, &v, &tol, &src));
	assert_true(fabs(v - 24.52) < 1e-9);
	assert_true(fabs(tol - 0.15) < 1e-9);
	assert_non_null(strstr(src, "2026-11-29"));
	k.gpu = "nvidia h200"; /* case */
	assert_true(kb_tune_expect(K, &k, &v, NULL, NULL));
	k.gpu = "H200"; /* an old driver's name without the prefix */
	assert_true(kb_tune_expect(K, &k, &v, NULL, NULL));
	k.gpu = "NVIDIA H200 NVL"; /* another class */
	assert_false(kb_tune_expect(K, &k, &v, NULL, NULL));
	k.gpu = "NVIDIA H200";
	k.batch = 32;
	assert_false(kb_tune_expect(K, &k, &v, NULL, NULL));
	k.batch = 64;
	k.impl = "builtin";
	assert_false(kb_tune_expect(K, &k, &v, NULL, NULL));
	k.impl = "torchvision";
	k.image_size = 160;
	assert_false(kb_tune_expect(K, &k, &v, NULL, NULL));
	tune_expect_key b = {"NVIDIA H200", "bert", "transformers", 32, -1, 128, "ref_amp_fp16", "step_ms"};
	assert_true(kb_tune_expect(K, &b, &v, &tol, NULL));
	assert_true(fabs(v - 34.54) < 1e-9);
	assert_true(fabs(tol - 0.30) < 1e-9); /* AMP steps: launch-bound, they move between processes */
	b.seq_len = 512;
	assert_false(kb_tune_expect(K, &b, &v, &tol, NULL));
	/* the CPU figures of that run are not GPU-class figures: not in the table */
	tune_expect_key c = {"NVIDIA H200", "resnet50", "torchvision", 64, 224, -1, "fp32", "cpu_ms"};
	assert_false(kb_tune_expect(K, &c, &v, NULL, NULL));
}

/* A user's knowledge-base directory with tolerances that are not fractions: each is ignored (the
 * caller's default applies), never read as a bound. */
static void test_kb_expect_bad_tolerance(void **s)
{
	(void)s;
	char dir[4096];
	test_tmp_path(dir, sizeof(dir), "gpuvet-kbtol-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char *path = xasprintf("%s/tune_expect.csv", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("gpu,model,impl,batch,image_size,seq_len,setting,metric,value,tolerance,unit,verification,source\n"
	      "Test GPU,bert,,8,,,ref_fp32,step_ms,10,garbage,ms,measured,t\n"
	      "Test GPU,bert,,8,,,ref_amp_fp16,step_ms,10,1e308,ms,measured,t\n"
	      "Test GPU,bert,,8,,,ref_fp32,peak_mib,100,-0.2,MiB,measured,t\n"
	      "Test GPU,bert,,8,,,ref_amp_fp16,peak_mib,100,0.25,MiB,measured,t\n",
	      f);
	fclose(f);
	char *err = NULL;
	kb *k = kb_load(dir, &err);
	assert_non_null(k);
	double v, tol;
	tune_expect_key key = {"Test GPU", "bert", NULL, 8, -1, -1, "ref_fp32", "step_ms"};
	assert_true(kb_tune_expect(k, &key, &v, &tol, NULL));
	assert_true(v == 10 && isnan(tol));
	key.setting = "ref_amp_fp16";
	assert_true(kb_tune_expect(k, &key, &v, &tol, NULL));
	assert_true(isnan(tol));
	key.setting = "ref_fp32";
	key.metric = "peak_mib";
	assert_true(kb_tune_expect(k, &key, &v, &tol, NULL));
	assert_true(isnan(tol));
	key.setting = "ref_amp_fp16";
	assert_true(kb_tune_expect(k, &key, &v, &tol, NULL));
	assert_true(fabs(tol - 0.25) < 1e-12);
	kb_free(k);
	unlink(path);
	rmdir(dir);
	free(path);
}

/* ---- protocol, utilization, line splitting ---- */

static void test_stream_protocol(void **s)
{
	(void)s;
	tune_stream st;
	tune_stream_init(&st);
	assert_int_equal(tune_stream_line(&st, "PROGRESS 3/17 resnet50 amp_bf16"), 1);
	assert_int_equal(st.step, 3);
	assert_int_equal(st.steps, 17);
	assert_string_equal(st.label, "resnet50 amp_bf16");
	assert_int_equal(tune_stream_line(&st, "PROGRESS x/17 bad"), 0); /* free text then */
	assert_int_equal(tune_stream_line(&st, "RESULT {\"type\": \"env\", \"gpu_uuid\": \"GPU-abc\"}"), 2);
	assert_string_equal(st.gpu_uuid, "GPU-abc");
	tune_stream_line(&st, "MARK begin 5");
	tune_util_sample(&st.util, 50);
	tune_util_sample(&st.util, 100);
	tune_stream_line(&st, "MARK end 5");
	tune_util_sample(&st.util, 0); /* no mark open: ignored */
	tune_stream_line(&st, "MARK begin 6");
	tune_stream_line(&st, "MARK begin 7"); /* a begin without its end closes the other */
	tune_util_sample(&st.util, 10);
	tune_stream_line(&st, "MARK end 6");   /* not the open one: ignored */
	tune_util_sample(&st.util, 30);
	double m;
	assert_true(tune_util_mean(&st.util, 5, &m));
	assert_true(fabs(m - 75) < 1e-12);
	assert_false(tune_util_mean(&st.util, 6, &m));
	assert_true(tune_util_mean(&st.util, 7, &m));
	assert_true(fabs(m - 20) < 1e-12);
	assert_false(tune_util_mean(&st.util, 99, &m));
	for (int i = 0; i < 100; i++)
		tune_stream_line(&st, "Traceback line");
	assert_int_equal(st.tail.n, 40);
	assert_int_equal(st.free_lines, 101); /* with "PROGRESS x/17 bad" */
	assert_int_equal(st.results.n, 1);
	/* utilization lands in the runs by id */
	tune_report *r = doc("[{\"id\":5,\"model\":\"m\",\"device\":\"cuda\",\"setting\":\"fp32\",\"status\":\"ok\",\"ms\":2}]");
	tune_util_apply(&st.util, r);
	assert_true(fabs(r->runs[0].gpu_util - 75) < 1e-12);
	tune_report_free(r);
	tune_stream_free(&st);
}

static strlist got_lines;
static void collect_line(void *ctx, const char *line)
{
	(void)ctx;
	sl_push(&got_lines, line);
}

static void test_line_splitter(void **s)
{
	(void)s;
	line_splitter ls;
	line_splitter_init(&ls, 8, collect_line, NULL);
	const char *in = "ab\ncd\r\nlonger than eight\nx";
	for (const char *p = in; *p; p++) /* one byte at a time: lines across chunks */
		line_splitter_feed(&ls, p, 1);
	line_splitter_finish(&ls);
	assert_int_equal(got_lines.n, 4);
	assert_string_equal(got_lines.v[0], "ab");
	assert_string_equal(got_lines.v[1], "cd");
	assert_string_equal(got_lines.v[2], "longer t");
	assert_string_equal(got_lines.v[3], "x");
	line_splitter_free(&ls);
	sl_free(&got_lines);
	line_splitter_init(&ls, 0, collect_line, NULL);
	line_splitter_feed(&ls, "one\ntwo\n\nthree", 14);
	line_splitter_finish(&ls);
	assert_int_equal(got_lines.n, 4);
	assert_string_equal(got_lines.v[2], "");
	line_splitter_free(&ls);
	sl_free(&got_lines);
}

/* ---- the streaming runner ---- */

static int ticks;
static void count_tick(void *ctx)
{
	(void)ctx;
	ticks++;
}

/* Ctrl-C pressed a moment after the start (the child has set up its handler by then). */
static void press_ctrl_c(void *ctx)
{
	volatile sig_atomic_t *stop = ctx;
	if (++ticks == 3)
		*stop = 1;
}

static void test_proc_stream(void **s)
{
	(void)s;
	char *argv[] = {"/bin/sh", "-c", "echo out1; echo 'PROGRESS 1/2 a' >&2; sleep 0.3; echo 'RESULT {}' >&2; echo out2", NULL};
	proc_stream_opts o = {.argv = argv, .timeout_ms = 5000, .max_stdout = 1 << 20, .tick_ms = 50,
			      .on_line = collect_line, .on_tick = count_tick};
	proc_stream_result r;
	ticks = 0;
	assert_int_equal(proc_stream_run(&o, &r), 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "out1\nout2\n");
	assert_int_equal(got_lines.n, 2);
	assert_string_equal(got_lines.v[0], "PROGRESS 1/2 a");
	assert_true(ticks >= 3);
	assert_false(r.timed_out || r.interrupted || r.killed);
	proc_stream_result_free(&r);
	sl_free(&got_lines);

	/* output over the bound is cut */
	char *big[] = {"/bin/sh", "-c", "i=0; while [ $i -lt 200 ]; do echo 0123456789; i=$((i+1)); done", NULL};
	proc_stream_opts ob = {.argv = big, .timeout_ms = 5000, .max_stdout = 100};
	assert_int_equal(proc_stream_run(&ob, &r), 0);
	assert_true(r.truncated);
	assert_int_equal(r.out_len, 100);
	proc_stream_result_free(&r);

	/* not startable */
	char *none[] = {"/nonexistent/python3", NULL};
	proc_stream_opts on = {.argv = none, .timeout_ms = 1000, .max_stdout = 100};
	assert_int_equal(proc_stream_run(&on, &r), -1);
	assert_true(r.spawn_failed);
	proc_stream_result_free(&r);
}

static void test_proc_stream_stop(void **s)
{
	(void)s;
	proc_stream_result r;
	/* the time limit: SIGTERM, which a child may catch to report, then it exits */
	char *term[] = {"/bin/sh", "-c", "trap 'echo partial; exit 0' TERM; sleep 5 & wait", NULL};
	proc_stream_opts ot = {.argv = term, .timeout_ms = 300, .grace_ms = 2000, .max_stdout = 1000};
	double t0 = now_seconds();
	assert_int_equal(proc_stream_run(&ot, &r), 0);
	assert_true(r.timed_out);
	assert_string_equal(r.out, "partial\n");
	assert_true(now_seconds() - t0 < 3.5);
	proc_stream_result_free(&r);

	/* one that ignores SIGTERM is killed after the grace period */
	char *stubborn[] = {"/bin/sh", "-c", "trap '' TERM INT; sleep 0.2; sleep 0.2; sleep 0.2; sleep 0.2; sleep 0.2; sleep 5", NULL};
	proc_stream_opts os = {.argv = stubborn, .timeout_ms = 200, .grace_ms = 300, .max_stdout = 1000};
	t0 = now_seconds();
	assert_int_equal(proc_stream_run(&os, &r), 0);
	assert_true(r.timed_out);
	assert_true(r.killed);
	assert_int_equal(r.signal, SIGKILL);
	assert_true(now_seconds() - t0 < 3);
	proc_stream_result_free(&r);

	/* Ctrl-C: the stop flag sends SIGINT to the group */
	volatile sig_atomic_t stop = 0;
	ticks = 0;
	char *intr[] = {"/bin/sh", "-c", "trap 'echo stopped; exit 130' INT; while :; do sleep 0.1; done", NULL};
	proc_stream_opts oi = {.argv = intr, .timeout_ms = 10000, .grace_ms = 2000, .max_stdout = 1000, .stop = &stop,
			       .tick_ms = 100, .on_tick = press_ctrl_c, .ctx = (void *)&stop};
	t0 = now_seconds();
	assert_int_equal(proc_stream_run(&oi, &r), 0);
	assert_true(r.interrupted);
	assert_string_equal(r.out, "stopped\n");
	assert_int_equal(r.status, 130);
	assert_true(now_seconds() - t0 < 3);
	proc_stream_result_free(&r);

	/* the child exits but something it started holds the pipes: the rest of the group goes */
	char *orphan[] = {"/bin/sh", "-c", "sleep 30 & echo done", NULL};
	proc_stream_opts oo = {.argv = orphan, .timeout_ms = 20000, .max_stdout = 1000};
	t0 = now_seconds();
	assert_int_equal(proc_stream_run(&oo, &r), 0);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out, "done\n");
	assert_true(now_seconds() - t0 < 5);
	proc_stream_result_free(&r);
}

/* ---- renderers and history ---- */

static void test_render(void **s)
{
	(void)s;
	tune_report *r = load("h200-full.json");
	tune_advice *a = tune_advise(r, K);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	tune_render_opts o = {false, false, "2026-11-30", NULL};
	tune_render_text(f, r, a, &o);
	fclose(f);
	assert_non_null(strstr(buf, "date        model"));
	assert_non_null(strstr(buf, "2026-11-30  resnet50      64     38.60     2980.4      77x     16.20     184x"));
	assert_non_null(strstr(buf, "AMP bf16                 22.10 ms   3002 MiB   1.75x faster, 47% less memory than fp32"));
	assert_non_null(strstr(buf, "1. DataLoader workers and pinned memory"));
	assert_non_null(strstr(buf, "2. AMP bf16: 1.65x faster"));
	assert_null(strstr(buf, "torch.backends.cuda.matmul")); /* TF32 is an alternative: no code */
	assert_non_null(strstr(buf, "95.3% scaling efficiency"));
	assert_non_null(strstr(buf, "as expected (98% of the expected speed, tolerance"));
	assert_null(strstr(buf, "\033[")); /* no colour when asked for none */
	free(buf);

	cJSON *j = tune_render_json(r, a, &o);
	assert_string_equal(cJSON_GetObjectItem(j, "schema")->valuestring, "gpuvet.tune/1");
	cJSON *m0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "models"), 0);
	assert_true(fabs(cJSON_GetObjectItem(m0, "speedup")->valuedouble - 2980.4 / 38.6) < 1e-9);
	assert_string_equal(cJSON_GetObjectItem(m0, "tuned_setting")->valuestring, "cudnn_benchmark");
	cJSON *rec0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "recommendations"), 0);
	assert_int_equal(cJSON_GetObjectItem(rec0, "rank")->valueint, 1);
	assert_true(cJSON_IsArray(cJSON_GetObjectItem(rec0, "code")));
	assert_true(cJSON_IsNull(cJSON_GetObjectItem(j, "gpu_conditions")));
	assert_int_equal(cJSON_GetArraySize(cJSON_GetObjectItem(j, "verdicts")), 6);
	cJSON_Delete(j);
	tune_advice_free(a);
	tune_report_free(r);
}

static void test_tf32_code_by_version(void **s)
{
	(void)s;
	const tune_setting_info *t = tune_setting("tf32");
	assert_non_null(strstr(tune_setting_code(t, "2.11.0+cu130"), "fp32_precision = \"tf32\""));
	assert_non_null(strstr(tune_setting_code(t, "2.4.1"), "allow_tf32 = True"));
	assert_non_null(strstr(tune_setting_code(t, NULL), "allow_tf32 = True"));
	assert_null(tune_setting("no-such-setting"));
}

static void test_history_run(void **s)
{
	(void)s;
	char dir[4096];
	test_tmp_path(dir, sizeof(dir), "gpuvet-tune-test-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char *db = xasprintf("%s/h.db", dir);
	tune_report *r = load("h200-full.json");
	tune_advice *a = tune_advise(r, K);
	tune_conditions c;
	tune_sampler_conditions(NULL, &c);
	c.index = 1;
	c.samples = 4;
	c.sm_clock_mhz = 1980;
	str_copy(c.name, sizeof(c.name), "NVIDIA H200");
	char *argv[] = {"tune", "--models", "resnet50", NULL};
	hist_run *hr = tune_history_run(r, a, &c, 3, argv);
	char *err = NULL;
	history *h = history_open(db, HISTORY_WRITE, &err);
	assert_non_null(h);
	long long id = 0;
	assert_true(history_run_finish(h, hr, &id, &err));
	hist_run_row row;
	assert_true(history_get(h, id, &row, &err));
	assert_int_equal(row.kind, HIST_TUNE);
	bool found = false, ddp = false, pipe = false;
	for (size_t i = 0; i < row.nresults; i++) {
		if (getenv("TUNE_TEST_VERBOSE"))
			printf("%s\n", row.results[i].name);
		if (strcmp(row.results[i].name, "tune.resnet50.bs64.img224.gpu.amp_bf16.ms") == 0) {
			found = true;
			assert_true(fabs(row.results[i].value - 22.1) < 1e-9);
			assert_int_equal(row.results[i].better, HIST_LOWER_BETTER);
			assert_int_equal(row.results[i].repeats, 10);
		}
		ddp |= strcmp(row.results[i].name, "tune.ddp.2gpu.resnet50.bs64.efficiency") == 0;
		pipe |= strcmp(row.results[i].name, "tune.pipeline.bs64.img224.w8.pin1.samples_s") == 0;
	}
	assert_true(found);
	assert_true(ddp);
	assert_true(pipe);
	assert_non_null(strstr(row.summary, "resnet50 38.6 ms fp32, 16.2 ms tuned"));
	assert_int_equal(row.ngpus, 1);
	assert_int_equal(row.gpus[0].index, 1);
	hist_run_row_free(&row);
	history_close(h);
	/* the table over stored runs */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_int_equal(tune_history_table(db, 0, false, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "NVIDIA H200          resnet50      64     38.60     2980.4      77x     16.20     184x"));
	assert_non_null(strstr(buf, "bert          32     61.20     3340.8      55x     34.90      96x"));
	free(buf);
	f = open_memstream(&buf, &len);
	assert_int_equal(tune_history_table(db, 0, true, f), 0);
	fclose(f);
	cJSON *arr = cJSON_Parse(buf);
	assert_int_equal(cJSON_GetArraySize(arr), 3);
	bool seen = false;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr)
	{
		if (strcmp(cJSON_GetObjectItem(it, "model")->valuestring, "resnet50") != 0)
			continue;
		seen = true;
		assert_true(fabs(cJSON_GetObjectItem(it, "tuned_ms")->valuedouble - 16.2) < 1e-9);
		assert_int_equal(cJSON_GetObjectItem(it, "batch")->valueint, 64);
	}
	assert_true(seen);
	cJSON_Delete(arr);
	free(buf);
	tune_advice_free(a);
	tune_report_free(r);
	unlink(db);
	char *wal = xasprintf("%s-wal", db), *shm = xasprintf("%s-shm", db), *stamp = xasprintf("%s-verified", db);
	unlink(wal);
	unlink(shm);
	unlink(stamp);
	free(wal);
	free(shm);
	free(stamp);
	rmdir(dir);
	free(db);
	free(err);
}

int main(void)
{
	char *err = NULL;
	K = kb_load(NULL, &err);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_full),
		cmocka_unit_test(test_advice_full),
		cmocka_unit_test(test_advice_slow),
		cmocka_unit_test(test_advice_tolerance),
		cmocka_unit_test(test_kb_expect_bad_tolerance),
		cmocka_unit_test(test_advice_t4),
		cmocka_unit_test(test_killed_lines),
		cmocka_unit_test(test_budget_fixture),
		cmocka_unit_test(test_gain_arithmetic),
		cmocka_unit_test(test_bf16_preferred_when_close),
		cmocka_unit_test(test_memory_only_recommendation),
		cmocka_unit_test(test_missing_base),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_huge),
		cmocka_unit_test(test_kb_expect),
		cmocka_unit_test(test_stream_protocol),
		cmocka_unit_test(test_line_splitter),
		cmocka_unit_test(test_proc_stream),
		cmocka_unit_test(test_proc_stream_stop),
		cmocka_unit_test(test_render),
		cmocka_unit_test(test_tf32_code_by_version),
		cmocka_unit_test(test_history_run),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	kb_free(K);
	return rc;
}
