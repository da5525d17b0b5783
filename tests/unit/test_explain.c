/*
 * Unit tests of gpuvet explain's parts: every row of the error catalogue (data/errors.csv)
 * matches its own example, names causes that are rules of this gpuvet, and cites a source; the
 * matcher finds signatures through ANSI colour, wraps in and between words, traceback framing,
 * log prefixes, repeated lines and CRLF, in order of appearance, across scan windows, and survives
 * binary garbage, NULs and invalid UTF-8; the cause decider's three states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/facts.h"
#include "core/findings.h"
#include "explain/decide.h"
#include "explain/verdict.h"
#include "explain/match.h"
#include "kb/kb.h"
#include "rules/rules.h"

static kb *K;
static sig_catalogue *C;

static int setup(void **s)
{
	(void)s;
	char *err = NULL;
	K = kb_load(NULL, &err);
	if (!K)
		return -1;
	C = sig_catalogue_new(kb_table(K, "errors"), &err);
	if (!C) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	sig_catalogue_free(C);
	kb_free(K);
	return 0;
}

static size_t idx(const char *id)
{
	for (size_t i = 0; i < sig_count(C); i++)
		if (strcmp(sig_at(C, i)->id, id) == 0)
			return i;
	fail_msg("no signature %s", id);
	return 0;
}

/* The hits of a text, as "id,id,..." in order. */
static char *scan_ids(const char *text, size_t len)
{
	sig_scan *s = sig_scan_new(C);
	sig_scan_feed(s, text, len);
	size_t n;
	const sig_hit *h = sig_scan_finish(s, &n);
	strbuf b;
	sb_init(&b);
	for (size_t i = 0; i < n; i++)
		sb_addf(&b, "%s%s", i ? "," : "", sig_at(C, h[i].sig)->id);
	sig_scan_free(s);
	return sb_steal(&b);
}

static void expect_ids(const char *text, const char *want)
{
	char *got = scan_ids(text, strlen(text));
	if (strcmp(got, want) != 0)
		fail_msg("text %.80s...: signatures [%s], expected [%s]", text, got, want);
	free(got);
}

/* ---- the catalogue ---- */

static void test_catalogue_rows(void **s)
{
	(void)s;
	assert_true(sig_count(C) >= 40);
	for (size_t i = 0; i < sig_count(C); i++) {
		const signature *g = sig_at(C, i);
		if (!sig_matches(C, i, g->example, strlen(g->example)))
			fail_msg("%s: the pattern does not match its own example", g->id);
		if (strncmp(g->source, "https://", 8) != 0)
			fail_msg("%s: the source is not an https URL: %s", g->id, g->source);
		if (!*g->title || !*g->library || !*g->versions || !*g->advice)
			fail_msg("%s: title, library, versions and advice are required", g->id);
		for (size_t k = 0; k < g->ncauses; k++)
			if (!rules_find(g->causes[k]))
				fail_msg("%s: cause %s is not a finding id of this gpuvet", g->id, g->causes[k]);
		/* the anchor prefilter must not hide the example */
		const char *a = sig_anchor(C, i);
		if (*a) {
			char *low = xstrdup(g->example);
			for (char *p = low; *p; p++)
				*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
			if (!strstr(low, a))
				fail_msg("%s: anchor '%s' not in the example", g->id, a);
			free(low);
		}
	}
}

/* Each example is recognised as its own signature first (no row shadows another). */
static void test_examples_are_their_own(void **s)
{
	(void)s;
	for (size_t i = 0; i < sig_count(C); i++) {
		const signature *g = sig_at(C, i);
		sig_scan *sc = sig_scan_new(C);
		sig_scan_feed(sc, g->example, strlen(g->example));
		size_t n;
		const sig_hit *h = sig_scan_finish(sc, &n);
		bool own = false;
		for (size_t k = 0; k < n; k++)
			own |= h[k].sig == i;
		if (!own)
			fail_msg("%s: its example is not recognised as it", g->id);
		sig_scan_free(sc);
	}
}

static void test_catalogue_errors(void **s)
{
	(void)s;
	char *err = NULL;
	const char *bad[] = {
		"id,pattern,source,causes\n,x,https://a,\n",                  /* empty id */
		"id,pattern,source,causes\na,(unclosed,https://a,\n",         /* does not compile */
		"id,pattern,source,causes\na,x,,\n",                          /* no source */
		"id,pattern,source,causes\na,x,https://a,\na,y,https://b,\n", /* duplicate */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		csv_table *t = csv_parse("errors", bad[i], strlen(bad[i]), &err);
		assert_non_null(t);
		sig_catalogue *c = sig_catalogue_new(t, &err);
		assert_null(c);
		assert_non_null(err);
		assert_non_null(strstr(err, "errors.csv row"));
		free(err);
		err = NULL;
		csv_free(t);
	}
}

/* ---- the matcher ---- */

static void test_framing(void **s)
{
	(void)s;
	/* ANSI colour inside the message */
	expect_ids("\x1b[31mRuntimeError\x1b[0m: CUDA error: no kernel \x1b[1mimage\x1b[0m is available for execution on the device\n",
		   "cuda.no-kernel-image");
	/* a terminal wrap in the middle of a word, and one between words */
	expect_ids("RuntimeError: The NVIDIA driver on your system is too o\nld (found version 11040). Please update\n",
		   "torch.driver-too-old");
	expect_ids("RuntimeError: CUDA error: no kernel image is available\n for execution on the device\n",
		   "cuda.no-kernel-image");
	/* log prefixes on every line, CRLF, repeated lines */
	expect_ids("[rank0]: RuntimeError: CUDA error: device-side\r\n[rank0]: assert triggered\r\n"
		   "[rank0]: assert triggered\r\n[rank1]: assert triggered\r\n",
		   "cuda.device-side-assert");
	/* a Python traceback, the error at the end */
	expect_ids("Traceback (most recent call last):\n  File \"train.py\", line 5, in <module>\n    x = x.cuda()\n"
		   "    ^^^^^^^^\n  File \"/usr/lib/python3/site-packages/torch/cuda/__init__.py\", line 298, in _lazy_init\n"
		   "    torch._C._cuda_init()\nRuntimeError: Found no NVIDIA driver on your system. Please check that you\n"
		   "have an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n",
		   "torch.no-nvidia-driver");
	/* quoted in an issue, with "> " */
	expect_ids("> Failed to initialize NVML: Driver/library version mismatch\n> NVML library version: 580.159\n",
		   "nvml.version-mismatch");
	/* nothing known */
	expect_ids("Traceback (most recent call last):\nValueError: too many values to unpack\n", "");
	expect_ids("", "");
}

static void test_order_and_count(void **s)
{
	(void)s;
	const char *log = "step 1\nUserWarning: CUDA initialization: CUDA unknown error - this may be due to an incorrectly set up environment\n"
			  "step 2\nRuntimeError: No CUDA GPUs are available\nRuntimeError: No CUDA GPUs are available\nother\n"
			  "RuntimeError: No CUDA GPUs are available\n";
	expect_ids(log, "torch.cuda-unknown-error,torch.no-cuda-gpus");
	sig_scan *sc = sig_scan_new(C);
	sig_scan_feed(sc, log, strlen(log));
	size_t n;
	const sig_hit *h = sig_scan_finish(sc, &n);
	assert_int_equal(n, 2);
	assert_int_equal(h[0].line, 2);
	assert_int_equal(h[1].line, 4);
	assert_int_equal(h[1].count, 2); /* the repeated line in a row counts once */
	sig_scan_free(sc);
}

/* A message split across two feeds and across a window boundary; a signature deep in a large log. */
static void test_windows(void **s)
{
	(void)s;
	size_t big = 3 * 256 * 1024 + 12345;
	char *buf = malloc(big + 200);
	for (size_t i = 0; i < big; i++)
		buf[i] = (i % 61 == 60) ? '\n' : (char)('a' + i % 26);
	const char *msg = "\nCUDNN_STATUS_NOT_INITIALIZED\n";
	memcpy(buf + big, msg, strlen(msg));
	size_t len = big + strlen(msg);
	/* every split point near the window edges */
	for (size_t cut = 256 * 1024 - 40; cut < 256 * 1024 + 40; cut += 7) {
		sig_scan *sc = sig_scan_new(C);
		sig_scan_feed(sc, buf, cut);
		sig_scan_feed(sc, buf + cut, len - cut);
		size_t n;
		const sig_hit *h = sig_scan_finish(sc, &n);
		assert_int_equal(n, 1);
		assert_string_equal(sig_at(C, h[0].sig)->id, "cudnn.not-initialized");
		assert_int_equal(h[0].count, 1);
		sig_scan_free(sc);
	}
	/* the message straddling the first window's end */
	char *text = xasprintf("%.*s CUDA out of memory. Tried", (int)(256 * 1024 - 10), buf);
	for (char *p = text; *p; p++)
		if (*p == '\n')
			*p = ' ';
	expect_ids(text, "cuda.out-of-memory");
	free(text);
	free(buf);
}

static void test_garbage(void **s)
{
	(void)s;
	unsigned char junk[70000];
	unsigned x = 12345;
	for (size_t i = 0; i < sizeof(junk); i++) {
		x = x * 1103515245u + 12345u;
		junk[i] = (unsigned char)(x >> 16);
	}
	char *ids = scan_ids((const char *)junk, sizeof(junk));
	free(ids);
	/* NULs, invalid UTF-8 and an unterminated escape around a message */
	const char t[] = "\xff\xfe\x00\x1b[38;5;CUDA out\x00of memory\n\xc3\x28 CUDA out of memory\n\x1b]0;title";
	char *got = scan_ids(t, sizeof(t) - 1);
	assert_string_equal(got, "cuda.out-of-memory");
	free(got);
	/* what a match prints is ASCII, whatever the input's bytes */
	const char u[] = "CUDA\xc3\x28 out of memory";
	sig_scan *sc = sig_scan_new(C);
	sig_scan_feed(sc, u, sizeof(u) - 1);
	size_t n;
	const sig_hit *h = sig_scan_finish(sc, &n);
	assert_int_equal(n, 0); /* "CUDA?( out" is no longer the message */
	sig_scan_free(sc);
	/* a typographic apostrophe, as pasted from a blog (qixuema/envs#4 quotes it so) */
	const char w[] = "NVIDIA-SMI has failed because it couldn\xe2\x80\x98t communicate with the NVIDIA driver.";
	sc = sig_scan_new(C);
	sig_scan_feed(sc, w, sizeof(w) - 1);
	h = sig_scan_finish(sc, &n);
	assert_int_equal(n, 1);
	assert_string_equal(sig_at(C, h[0].sig)->id, "nvsmi.cannot-communicate");
	assert_non_null(strstr(h[0].excerpt, "couldn???t communicate"));
	for (const char *p = h[0].excerpt; *p; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	sig_scan_free(sc);
}

/* ---- the decider ---- */

static void test_decide_states(void **s)
{
	(void)s;
	const signature *g = sig_at(C, idx("nvml.version-mismatch"));
	assert_int_equal(g->ncauses, 1);
	facts *f = facts_new();
	findings fs;
	findings_init(&fs);
	cause_verdict v[1];
	/* rule skipped: undecided */
	findings_skip(&fs, "driver.version-mismatch", "fact nvml.library was not collected");
	sig_decide(g, f, &fs, v);
	assert_int_equal(v[0].state, CAUSE_UNDECIDED);
	assert_non_null(strstr(v[0].why, "not collected"));
	cause_verdicts_free(v, 1);
	findings_free(&fs);
	/* rule ran, no finding: ruled out, with the facts it read */
	findings_init(&fs);
	facts_put_str(f, NULL, "libnvidia-ml.so.580.95.05", "nvml.library");
	sig_decide(g, f, &fs, v);
	assert_int_equal(v[0].state, CAUSE_RULED_OUT);
	assert_non_null(strstr(v[0].why, "nvml.library = libnvidia-ml.so.580.95.05"));
	cause_verdicts_free(v, 1);
	/* a finding: holds */
	findings_add(&fs, "driver.version-mismatch", "driver", SEV_FAIL, "mismatch");
	sig_decide(g, f, &fs, v);
	assert_int_equal(v[0].state, CAUSE_HOLDS);
	assert_string_equal(v[0].finding->title, "mismatch");
	cause_verdicts_free(v, 1);
	findings_free(&fs);
	facts_free(f);
	assert_true(sig_needs_python(sig_at(C, idx("torch.not-compiled-cuda"))));
	assert_false(sig_needs_python(sig_at(C, idx("nvml.version-mismatch"))));
}

/* ---- the job verdict of gpuvet run ---- */

static char *judge_run(double util, int seconds, unsigned pid_on_gpu, double min_seconds)
{
	job_judge jj = job_judge_utilisation();
	job j = {0};
	j.root = 4242;
	j.alive = true;
	j.n = 2;
	j.pids[0] = 4242;
	j.pids[1] = 4243; /* a worker */
	for (int t = 0; t <= seconds; t++) {
		snapshot *sn = snapshot_new(2);
		sn->time = 1000.0 + t;
		for (int g = 0; g < 2; g++) {
			sn->gpus[g].index = g;
			snprintf(sn->gpus[g].name, sizeof(sn->gpus[g].name), "NVIDIA H200");
			sn->gpus[g].util_gpu = sv_ok(g == 0 ? util : 99);
			sn->gpus[g].nproc = 1;
			sn->gpus[g].procs[0].pid = g == 0 ? pid_on_gpu : 999; /* GPU 1 runs another job */
			sn->gpus[g].procs[0].used_bytes = sv_ok(1e9);
		}
		jj.sample(jj.state, sn, &j);
		snapshot_free(sn);
	}
	char *v = jj.verdict(jj.state, min_seconds);
	jj.free(jj.state);
	return v;
}

static void test_verdict(void **s)
{
	(void)s;
	char *v = judge_run(35, 60, 4243, 30);
	assert_non_null(v);
	assert_non_null(strstr(v, "GPU 0 (NVIDIA H200): mean utilization 35% over 60 s, under 70%: the GPU waited"));
	assert_null(strstr(v, "GPU 1")); /* not the job's */
	free(v);
	v = judge_run(96, 60, 4242, 30);
	assert_non_null(strstr(v, "mean utilization 96% over 60 s: the GPU was kept busy"));
	free(v);
	assert_null(judge_run(96, 10, 4242, 30)); /* too short to judge */
	assert_null(judge_run(96, 60, 777, 30));  /* the job never held a GPU */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_catalogue_rows),
		cmocka_unit_test(test_examples_are_their_own),
		cmocka_unit_test(test_catalogue_errors),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_order_and_count),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_decide_states),
		cmocka_unit_test(test_verdict),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
