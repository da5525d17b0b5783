/*
 * Unit tests of gpuvet explain's parts: every row of the error catalogue (data/errors.csv)
 * matches its own example, names causes that are rules of this gpuvet, and cites a source; the
 * matcher finds signatures through ANSI colour, wraps in and between words, traceback framing,
 * log prefixes, repeated lines and CRLF, in order of appearance, across scan windows, and survives
 * binary garbage, NULs and invalid UTF-8; the error codes in every printed form; the ranks that
 * printed an error; real error texts from public bug reports (tests/fixtures/explain/reports.csv)
 * recognised as exactly their signatures, and near misses not; work linear in the input; the
 * cause decider's three states.
 */
#include <errno.h>
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
	C = sig_catalogue_new(K, &err);
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
		/* the prefilter must not hide the example: one of the pattern's literal words is in it */
		const char *a = sig_anchor(C, i);
		if (*a) {
			char *low = xstrdup(g->example);
			for (char *p = low; *p; p++)
				*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
			strlist words = {0};
			sl_split(&words, a, "|", false);
			bool found = false;
			for (size_t k = 0; k < words.n; k++)
				found |= strstr(low, words.v[k]) != NULL;
			if (!found)
				fail_msg("%s: none of the literal words '%s' is in the example", g->id, a);
			sl_free(&words);
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
		sig_catalogue *c = sig_catalogue_from(t, NULL, NULL, &err);
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
	/* the text's end is a boundary: a paste that stops right after the word */
	expect_ids("/usr/bin/ld: cannot find -lcuda", "triton.ld-no-libcuda");
	expect_ids("/usr/bin/ld: cannot find -lcuda\n", "triton.ld-no-libcuda");
	expect_ids("/usr/bin/ld: cannot find -lcudart", "");
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

/* A gap (bytes gpuvet run's matcher fell behind on, sig_scan_gap): what came before it is found,
 * a message whose halves lie on either side of it is not taken for one, and the line numbers
 * after it count its lines. */
static void test_gap(void **s)
{
	(void)s;
	const char *a = "step 1\nRuntimeError: No CUDA GPUs are available\nstep 2\nRuntimeError: No CUDA";
	const char *b = " GPUs are available\nFailed to initialize NVML: Driver/library version mismatch\n";
	for (int with_gap = 0; with_gap < 2; with_gap++) {
		sig_scan *sc = sig_scan_new(C);
		sig_scan_feed(sc, a, strlen(a));
		if (with_gap)
			sig_scan_gap(sc, 5000, 10);
		sig_scan_feed(sc, b, strlen(b));
		size_t n;
		const sig_hit *h = sig_scan_finish(sc, &n);
		assert_int_equal(n, 2);
		assert_string_equal(sig_at(C, h[0].sig)->id, "torch.no-cuda-gpus");
		assert_int_equal(h[0].line, 2);
		assert_string_equal(sig_at(C, h[1].sig)->id, "nvml.version-mismatch");
		if (with_gap) {
			assert_int_equal(h[0].count, 1); /* the halves around the gap are no second line of it */
			assert_int_equal(h[1].line, 15); /* 3 lines, the gap's 10, the line cut by the gap */
			assert_int_equal(sig_scan_lines(sc), 15);
			assert_int_equal(sig_scan_skipped(sc), 5000);
		} else {
			assert_int_equal(h[0].count, 2);
			assert_int_equal(h[1].line, 5);
			assert_int_equal(sig_scan_skipped(sc), 0);
		}
		sig_scan_free(sc);
	}
	/* a gap of nothing changes nothing; a scan that saw only gaps has their lines */
	sig_scan *sc = sig_scan_new(C);
	sig_scan_gap(sc, 0, 0);
	sig_scan_gap(sc, 100, 3);
	size_t n;
	sig_scan_finish(sc, &n);
	assert_int_equal(n, 0);
	assert_int_equal(sig_scan_lines(sc), 4);
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


/* Patterns the catalogue refuses: the matcher's linear time depends on it. */
static void test_unbounded_patterns(void **s)
{
	(void)s;
	const char *bad[][2] = {
		{"undefined symbol: _ZN[A-Za-z0-9_]*(3c10|2at)", "unbounded repetition"}, /* the quadratic one of old */
		{"CUDA error: .+", "unbounded repetition"},
		{"Xid [0-9]{1,}", "unbounded repetition {m,}"},
		{"CUDA error: ([a-z ]{1,200}){1,20}", "longer than 2048"},
		{"(ab|cd) [0-9]{1,3}", "no literal word"},
		{"^CUDA error", "an anchor"},
		{"NCCL error[^\\n]{0,120}internal", "backslash in a bracket"},
		{"CUDA\\d error", "escape"},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *text = xasprintf("id,pattern,source,causes\na,\"%s\",https://a,\n", bad[i][0]);
		char *err = NULL;
		csv_table *t = csv_parse("errors", text, strlen(text), &err);
		assert_non_null(t);
		sig_catalogue *c = sig_catalogue_from(t, NULL, NULL, &err);
		if (c || !err || !strstr(err, bad[i][1]))
			fail_msg("pattern %s: expected an error with '%s', got %s", bad[i][0], bad[i][1], err ? err : "none");
		free(err);
		csv_free(t);
		free(text);
	}
}

/* A code in each form programs print it in; a bare number yields to a named error on its line. */
static void test_code_forms(void **s)
{
	(void)s;
	expect_ids("CUDA error at main.cu:12 code=100(cudaErrorNoDevice) \"cudaGetDeviceCount(&n)\"", "cuda.no-device");
	expect_ids("Error at driver init: Call to cuInit results in CUDA_ERROR_NO_DEVICE (100)", "cuda.no-device");
	expect_ids("cuInit returned 100", "cuda.no-device");
	expect_ids("cudaGetDeviceCount returned 100\n-> no CUDA-capable device is detected", "cuda.no-device");
	expect_ids("CUDA error: misaligned address", "cuda.misaligned-address");
	expect_ids("RuntimeError: cuda runtime error (716) : misaligned address", "cuda.misaligned-address");
	expect_ids("CUDA_ERROR_MISALIGNED_ADDRESS", "cuda.misaligned-address");
	expect_ids("cudaErrorLaunchTimeout", "cuda.launch-timeout");
	expect_ids("CUDA error 702 at kernel.cu:5", "cuda.launch-timeout");
	expect_ids("pynvml.NVMLError_GpuIsLost: GPU is lost", "nvml.gpu-is-lost");
	expect_ids("nvmlInit failed with error code 9", "nvml.driver-not-loaded");
	expect_ids("Failed to initialize NVML: Unknown Error", "nvml.unknown");
	/* numbering before CUDA 10.1 differs: "(59)" was the device-side assert; the message decides */
	expect_ids("RuntimeError: cuda runtime error (59) : device-side assert triggered", "cuda.device-side-assert");
	/* lines are joined without a separator: a form ends with its line where it can */
	expect_ids("pynvml.NVMLError_InsufficientPower\nNVMLError_IrqIssue\n", "nvml.insufficient-power,nvml.irq-issue");
	expect_ids("CUDA error 2\n30 lines above\n", "cuda.out-of-memory");
	expect_ids("cuInit returned\n100\n", "cuda.no-device");
	/* a number that is not a CUDA code, and names that are not CUDA's */
	expect_ids("cudnnConvolutionForward returned 3", "");
	expect_ids("the loop executed error 2 times", "");
	expect_ids("cudaErrorFooBar CUDA_ERROR_NOT_A_CODE", "");
	/* Xid: the kernel's line, a redacted bus id, prose; fallen off the bus without an Xid */
	expect_ids("NVRM: Xid (PCI:0000:3b:00): 48, pid=1, name=python3, An uncorrectable double bit error", "xid.48");
	expect_ids("kernel: NVRM: Xid (PCI:...): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11", "xid.145");
	expect_ids("We saw Xid 79 twice last week", "xid.79");
	expect_ids("NVRM: GPU at 0000:01:00.0 has fallen off the bus.", "xid.79");
	expect_ids("Xid 1234", "");
}

/* The same error printed by eight ranks is one hit: on how many lines, by which ranks. */
static void test_ranks(void **s)
{
	(void)s;
	strbuf b;
	sb_init(&b);
	for (int r = 0; r < 8; r++)
		sb_addf(&b, "[rank%d]: RuntimeError: CUDA error: an illegal memory access was encountered\n", r);
	for (int r = 0; r < 8; r += 2) /* torchrun's prefix, and mpirun's */
		sb_addf(&b, "[default%d]:RuntimeError: CUDA error: an illegal memory access was encountered\n", r);
	sb_addf(&b, "[1,3]<stderr>:RuntimeError: CUDA error: an illegal memory access was encountered\n");
	sig_scan *sc = sig_scan_new(C);
	sig_scan_feed(sc, b.buf, b.len);
	size_t n;
	const sig_hit *h = sig_scan_finish(sc, &n);
	assert_int_equal(n, 1);
	assert_string_equal(sig_at(C, h[0].sig)->id, "cuda.illegal-address");
	assert_int_equal(h[0].count, 13);
	assert_int_equal(h[0].nranks, 8);
	char buf[64];
	assert_string_equal(sig_hit_ranks(h, buf, sizeof(buf)), "0-7");
	assert_int_equal(h[0].line, 1);
	assert_int_equal(h[0].last_line, 13);
	/* gpu run: the same signature on stdout and on stderr is merged */
	sig_hit other = h[0];
	memset(other.ranks, 0, sizeof(other.ranks));
	other.ranks[1] = 1; /* rank 8 */
	other.nranks = 1;
	other.count = 2;
	sig_hit merged = h[0];
	sig_hit_merge(&merged, &other);
	assert_int_equal(merged.count, 15);
	assert_int_equal(merged.nranks, 9);
	assert_string_equal(sig_hit_ranks(&merged, buf, sizeof(buf)), "0-8");
	sig_scan_free(sc);
	sb_free(&b);
	/* a repeated line is kept once only for the same rank */
	expect_ids("[rank0]: CUDA error: misaligned address\n[rank0]: CUDA error: misaligned address\n", "cuda.misaligned-address");
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		fail_msg("%s: %s", path, strerror(errno));
	strbuf b;
	sb_init(&b);
	char buf[65536];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&b, buf, k);
	fclose(fp);
	*len = b.len;
	return sb_steal(&b);
}

/* Error texts from public bug reports: each is exactly its signatures, in order, and none of the
 * near misses is what it resembles. Every hand-written signature has a real text; so do at least
 * 150 signatures in all. */
static void test_reports(void **s)
{
	(void)s;
	const char *src = getenv("GPUVET_SOURCE_DIR");
	if (!src)
		skip();
	char *path = xasprintf("%s/tests/fixtures/explain/reports.csv", src);
	size_t len;
	char *text = slurp(path, &len);
	char *err = NULL;
	csv_table *t = csv_parse("reports.csv", text, len, &err);
	if (!t)
		fail_msg("%s", err);
	bool *real = xcalloc(sig_count(C), sizeof(bool));
	size_t bad = 0;
	for (size_t r = 0; r < t->nrows; r++) {
		const char *want = csv_cell(t, r, "signatures"), *not = csv_cell(t, r, "not");
		const char *source = csv_cell(t, r, "source"), *body = csv_cell(t, r, "text");
		bool is_real = strncmp(source, "https://", 8) == 0;
		if (!is_real && strncmp(source, "near miss: ", 11) != 0)
			fail_msg("reports.csv row %zu: the source is neither an https URL nor \"near miss: why\"", r + 2);
		char *got = scan_ids(body, strlen(body));
		strlist w = {0}, x = {0};
		sl_split(&w, want, " ", false);
		sl_split(&x, not, " ", false);
		strbuf wj;
		sb_init(&wj);
		for (size_t k = 0; k < w.n; k++) {
			sb_addf(&wj, "%s%s", k ? "," : "", w.v[k]);
			size_t i = idx(w.v[k]);
			if (is_real)
				real[i] = true;
		}
		if (strcmp(got, wj.buf ? wj.buf : "") != 0) {
			fprintf(stderr, "reports.csv row %zu (%s): signatures [%s], expected [%s]\n", r + 2, source, got,
				wj.buf ? wj.buf : "");
			bad++;
		}
		for (size_t k = 0; k < x.n; k++) {
			const char *id = sig_at(C, idx(x.v[k]))->id;
			char *pad = xasprintf(",%s,", got), *one = xasprintf(",%s,", id);
			if (strstr(pad, one)) {
				fprintf(stderr, "reports.csv row %zu (%s): %s found, a near miss\n", r + 2, source, id);
				bad++;
			}
			free(pad);
			free(one);
		}
		sb_free(&wj);
		sl_free(&w);
		sl_free(&x);
		free(got);
	}
	size_t covered = 0;
	for (size_t i = 0; i < sig_count(C); i++) {
		covered += real[i];
		if (!real[i] && strcmp(sig_at(C, i)->table, "errors") == 0) {
			fprintf(stderr, "%s: no text of a public report in reports.csv\n", sig_at(C, i)->id);
			bad++;
		}
	}
	if (covered < 150) {
		fprintf(stderr, "%zu signatures have a text of a public report; 150 are wanted\n", covered);
		bad++;
	}
	assert_int_equal(bad, 0);
	free(real);
	csv_free(t);
	free(text);
	free(path);
}

/* The regular expressions run over a bounded multiple of the input, whatever it is: every
 * signature's example repeated without end, cut short, and its literal words alone. */
static double work_per_byte(const char *unit, size_t n)
{
	size_t ul = strlen(unit);
	char *b = malloc(n);
	for (size_t i = 0; i < n; i++)
		b[i] = unit[i % ul];
	sig_scan *sc = sig_scan_new(C);
	sig_scan_feed(sc, b, n);
	size_t nh;
	sig_scan_finish(sc, &nh);
	double r = (double)sig_scan_work(sc) / (double)n;
	sig_scan_free(sc);
	free(b);
	return r;
}

static void test_linear_work(void **s)
{
	(void)s;
	const double most = 32; /* measured: 14 at worst (NVML's "Invalid Argument" after "NVML: ") */
	const size_t n = 64 * 1024;
	for (size_t i = 0; i < sig_count(C); i++) {
		const signature *g = sig_at(C, i);
		size_t el = strlen(g->example);
		char *units[4] = {xasprintf("%s\n", g->example), xasprintf("%.*s", (int)(el / 2), g->example),
				  xasprintf("%.*s", (int)(el > 3 ? el - 3 : el), g->example), xstrdup(sig_anchor(C, i))};
		for (char *p = units[3]; *p; p++)
			if (*p == '|')
				*p = ' ';
		for (int k = 0; k < 4; k++) {
			if (*units[k]) {
				double r = work_per_byte(units[k], n);
				if (r > most)
					fail_msg("%s: %.1f bytes of regex work per input byte on '%.40s'", g->id, r, units[k]);
			}
			free(units[k]);
		}
	}
	/* the old quadratic case: a mangled name of 'u's after "undefined symbol: _ZN" */
	strbuf b;
	sb_init(&b);
	sb_add(&b, "undefined symbol: _ZN");
	for (int k = 0; k < 4000; k++)
		sb_addc(&b, 'u');
	assert_true(work_per_byte(b.buf, 1 << 20) <= most);
	sb_free(&b);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_catalogue_rows),
		cmocka_unit_test(test_examples_are_their_own),
		cmocka_unit_test(test_catalogue_errors),
		cmocka_unit_test(test_framing),
		cmocka_unit_test(test_order_and_count),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_unbounded_patterns),
		cmocka_unit_test(test_code_forms),
		cmocka_unit_test(test_ranks),
		cmocka_unit_test(test_reports),
		cmocka_unit_test(test_linear_work),
		cmocka_unit_test(test_decide_states),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
