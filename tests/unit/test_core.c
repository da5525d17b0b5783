/* Unit tests of the core: facts store, versions, CSV, policies, process runner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <pthread.h>
#include <signal.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "cmd/cmd.h"
#include "core/facts.h"
#include "core/facts_print.h"
#include "core/facts_wire.h"
#include "core/findings.h"
#include "core/proc.h"
#include "core/util.h"
#include "diagnose/diagnose.h"
#include "kb/csv.h"
#include "kb/kb.h"
#include "rules/policy.h"
#include "rules/rules.h"

/* Numbers from documents as integers and times: never a cast of NaN, an infinity or 1e300
 * (undefined behaviour, which the fatal UBSan of the sanitizer and fuzz builds turns into a crash) */
static void test_double_to_int(void **s)
{
	(void)s;
	long long v = 7;
	assert_false(double_to_int(NAN, 0, 100, &v));
	assert_false(double_to_int(INFINITY, 0, 100, &v));
	assert_false(double_to_int(-INFINITY, -100, 100, &v));
	assert_false(double_to_int(1e300, 0, 9223372036854775807LL, &v));
	assert_false(double_to_int(9223372036854775807.0, -9223372036854775807LL - 1, 9223372036854775807LL, &v));
	assert_false(double_to_int(101, 0, 100, &v));
	assert_false(double_to_int(-1, 0, 100, &v));
	assert_int_equal(v, 7); /* untouched on refusal */
	assert_true(double_to_int(3.9, 0, 100, &v) && v == 3);
	assert_false(double_to_int(-0.5, 0, 100, &v)); /* below lo, whatever it truncates to */
	assert_true(double_to_int(100.5, 0, 100, &v) && v == 100);
	assert_true(double_to_int(-9223372036854775808.0, -9223372036854775807LL - 1, 0, &v));
	assert_true(seconds_to_time(1796114887, &v) && v == 1796114887);
	assert_false(seconds_to_time(-1, &v));
	assert_false(seconds_to_time(GV_TIME_MAX + 1, &v));
	char minute[32] = "x";
	assert_true(utc_minute_text(1796114887, minute, sizeof(minute)));
	assert_string_equal(minute, "2026-12-01 08:48 UTC");
	assert_false(utc_minute_text(0, minute, sizeof(minute))); /* a kernel log line without a time */
	assert_string_equal(minute, "");
	assert_false(utc_minute_text(-5, minute, sizeof(minute)));
	assert_false(utc_minute_text((long long)GV_TIME_MAX + 1, minute, sizeof(minute)));
	assert_false(utc_minute_text(1796114887, minute, 8)); /* too small for it: nothing, not a cut date */
	assert_false(seconds_to_time(NAN, &v));
}

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

/* The child's facts cross its pipe as facts_wire bytes: every field as it was (a real that is
 * integral stays a real, as the JSON did not keep it), and a cut or damaged buffer puts nothing. */
static void test_facts_wire(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_str(f, "/proc/x", "580.1", "driver.version");
	facts_put_int(f, NULL, -2, "nvml.device_count");
	facts_put_real(f, NULL, 300.0, "nvml.gpu.0.power_limit_w");
	facts_put_bool(f, NULL, true, "hardware.secure_boot");
	facts_put_state(f, FACT_ERROR, "nvmlInit", "code 999", "nvml.init");
	facts_put_read_error(f, "/dev/nvidia0", -13, NULL, "devices.node.0");
	facts_put_unparsable(f, "/proc/driver/nvidia/version", "NVRM\001garbage", 12, "a version", "driver.proc_version");
	size_t len;
	char *b = facts_wire_pack(f, &len);
	facts *g = facts_new();
	facts_put_str(g, NULL, "kept", "env.path");
	facts_put_int(g, NULL, 7, "nvml.device_count"); /* replaced by the child's */
	assert_true(facts_wire_unpack(g, b, len));
	assert_int_equal(facts_count(g), facts_count(f) + 1);
	for (size_t i = 0; i < facts_count(f); i++) {
		const fact *a = facts_at(f, i), *c = facts_get(g, "%s", a->key);
		assert_non_null(c);
		assert_int_equal(c->state, a->state);
		assert_int_equal(c->type, a->type);
		assert_true(c->i == a->i && c->d == a->d && c->sys_errno == a->sys_errno);
		const char *as[] = {a->str, a->error, a->source, a->excerpt}, *cs[] = {c->str, c->error, c->source, c->excerpt};
		for (size_t k = 0; k < 4; k++) {
			assert_true((as[k] == NULL) == (cs[k] == NULL));
			if (as[k])
				assert_string_equal(cs[k], as[k]);
		}
	}
	assert_int_equal(facts_get(g, "nvml.gpu.0.power_limit_w")->type, FV_REAL);
	const char *volatile no_key = NULL; /* looked up as vsnprintf prints it, never dereferenced */
	assert_null(facts_get(g, "%s", no_key));
	assert_int_equal(facts_int_or(g, 0, "nvml.device_count"), -2);
	assert_string_equal(facts_str(g, "env.path"), "kept");
	/* every cut: false, nothing put */
	for (size_t cut = 0; cut < len; cut++) {
		facts *h = facts_new();
		assert_false(facts_wire_unpack(h, b, cut));
		assert_int_equal(facts_count(h), 0);
		facts_free(h);
	}
	/* a byte more, a state out of range, a NUL inside a key */
	char *more = xmalloc(len + 1);
	memcpy(more, b, len);
	more[len] = 'x';
	facts *h = facts_new();
	assert_false(facts_wire_unpack(h, more, len + 1));
	more[8] = 9; /* the first record's state */
	assert_false(facts_wire_unpack(h, more, len));
	more[8] = b[8];
	assert_true(facts_wire_unpack(h, more, len));
	size_t key_at = 8 + 1 + 1 + 4 + 8 + 8 + 4; /* the first key's first byte */
	more[key_at + 1] = '\0';
	facts *e = facts_new();
	assert_false(facts_wire_unpack(e, more, len));
	assert_int_equal(facts_count(e), 0);
	facts_free(e);
	/* an empty set */
	facts *none = facts_new();
	char *nb = facts_wire_pack(none, &len);
	assert_true(facts_wire_unpack(h, nb, len));
	assert_false(facts_wire_unpack(h, nb, len - 1));
	free(nb);
	facts_free(none);
	facts_free(h);
	free(more);
	free(b);
	facts_free(f);
	facts_free(g);
}

/* check --json prints its facts without their cJSON tree (core/facts_print.h): the same bytes
 * cJSON prints for the tree, alone and inside a document, for every kind of value. */
static void test_facts_json_print(void **s)
{
	(void)s;
	facts *f = facts_new();
	char *empty = facts_json_print(f, 1);
	cJSON *ej = facts_to_json(f);
	char *ec = cJSON_Print(ej);
	assert_string_equal(empty, ec);
	free(empty);
	free(ec);
	cJSON_Delete(ej);
	facts_put_str(f, "/proc/x", "580.1", "driver.version");
	facts_put_str(f, "a \"quoted\"\\ source\n", "tab\there\x01\x1f\x7f \xc3\xa9 \xff", "driver.odd");
	facts_put_str(f, NULL, "", "env.empty");
	facts_put_int(f, NULL, 0, "nvml.device_count");
	facts_put_int(f, NULL, -7, "nvml.gpu.0.x");
	facts_put_int(f, NULL, 2147483647LL, "nvml.gpu.0.int_max");
	facts_put_int(f, NULL, 2147483648LL, "nvml.gpu.0.over_int");
	facts_put_int(f, NULL, -2147483649LL, "nvml.gpu.0.under_int");
	facts_put_int(f, NULL, 81559289856LL, "nvml.gpu.0.memory_total");
	facts_put_int(f, NULL, 9007199254740993LL, "nvml.gpu.0.past_2_53");
	const double reals[] = {0.0, -0.0, 0.5, 1.0 / 3, 0.1, 1e300, -1e-300, 5e9, 700.0, 123456789.123456789, 2.5e-7, NAN, INFINITY, -INFINITY};
	for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++)
		facts_put_real(f, "clock", reals[i], "meta.real.%zu", i);
	facts_put_bool(f, NULL, true, "hardware.secure_boot");
	facts_put_bool(f, NULL, false, "container.inside");
	facts_put_state(f, FACT_ERROR, "nvmlInit", "code 999", "nvml.init");
	facts_put_state(f, FACT_ABSENT, NULL, NULL, "python.torch");
	facts_put_read_error(f, "/dev/nvidia0", -13, NULL, "devices.node.0");
	facts_put_unparsable(f, "/proc/driver/nvidia/version", "NVRM\001garbage", 12, "a version", "driver.proc_version");
	facts_put_int(f, NULL, 1, "nolayer");
	facts_put_int(f, NULL, 2, "nolayer.nolayer");
	facts_put_str(f, NULL, "later", "driver.later"); /* a layer seen before, after others */
	facts_put_int(f, NULL, 3, "driver.version"); /* replaced: keeps its place */
	for (int depth = 1; depth <= 3; depth++) {
		cJSON *tree = facts_to_json(f);
		cJSON *a = cJSON_CreateObject(), *b = cJSON_CreateObject();
		cJSON *inner_a = a, *inner_b = b;
		for (int d = 1; d < depth; d++) {
			inner_a = cJSON_AddObjectToObject(inner_a, "down");
			inner_b = cJSON_AddObjectToObject(inner_b, "down");
		}
		cJSON_AddStringToObject(inner_a, "before", "x");
		cJSON_AddStringToObject(inner_b, "before", "x");
		cJSON_AddItemToObject(inner_a, "facts", tree);
		char *text = facts_json_print(f, depth + 1);
		cJSON_AddRawToObject(inner_b, "facts", text);
		cJSON_AddStringToObject(inner_a, "after", "y");
		cJSON_AddStringToObject(inner_b, "after", "y");
		char *pa = cJSON_Print(a), *pb = cJSON_Print(b);
		if (strcmp(pa, pb) != 0) { /* the first difference, readable (cmocka cuts long strings) */
			size_t at = 0;
			while (pa[at] == pb[at])
				at++;
			size_t from = at > 80 ? at - 80 : 0;
			print_error("depth %d, byte %zu:\ncJSON: %.160s\nours:  %.160s\n", depth, at, pa + from, pb + from);
		}
		assert_string_equal(pb, pa);
		free(pa);
		free(pb);
		free(text);
		cJSON_Delete(a);
		cJSON_Delete(b);
	}
	facts_free(f);
}

/* gv_vformat_key formats fact keys without vsnprintf: the same text as vsnprintf for every
 * conversion it takes, vsnprintf's own for the others, and vsnprintf's length when cut. */
static int key_format(char *buf, size_t size, const char *fmt, ...) GV_PRINTF(3, 4);
static int key_format(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = gv_vformat_key(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

static void test_format_key(void **s)
{
	(void)s;
	char a[64], b[64];
#define SAME(size, ...)                                                                                                \
	do {                                                                                                           \
		memset(a, 'x', sizeof(a));                                                                             \
		memset(b, 'x', sizeof(b));                                                                             \
		int na = key_format(a, size, __VA_ARGS__), nb = snprintf(b, size, __VA_ARGS__);                         \
		assert_int_equal(na, nb);                                                                              \
		assert_memory_equal(a, b, sizeof(a));                                                                  \
	} while (0)
	SAME(sizeof(a), "nvml.gpu.%d.name", 0);
	SAME(sizeof(a), "%d %d %d", INT_MIN, INT_MAX, -1);
	SAME(sizeof(a), "%u.%zu", UINT_MAX, (size_t)SIZE_MAX);
	SAME(sizeof(a), "%lld|%llu", LLONG_MIN, ULLONG_MAX);
	SAME(sizeof(a), "%ld|%lu", LONG_MIN, ULONG_MAX);
	SAME(sizeof(a), "loader.lib.%lld.path%%", 12LL);
	SAME(sizeof(a), "isolation.%s.outcome", "nvml");
	const char *volatile none = NULL; /* glibc prints "(null)"; a literal NULL draws a warning */
	SAME(sizeof(a), "%s", none);
	SAME(sizeof(a), "%x.%5d.%.2f", 255u, 7, 1.5); /* not taken: vsnprintf's */
	SAME(sizeof(a), "%s.%d", "a", 3);
	SAME(sizeof(a), "no conversion");
	SAME(4, "nvml.gpu.%d", 12); /* cut: vsnprintf's length and bytes */
	SAME(1, "%d", 5);
	SAME(8, "abc%s", "defgh");
#undef SAME
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

/* facts.h's contract: a fact, once put, never changes; a replaced one stays valid until facts_free. */
/* facts_move hands src's facts to dst without copies: dst has them (a key of both: src's), src
 * is empty, and a pointer got from src outlives src's free (ASan in test-asan sees a double free). */
static void test_facts_move(void **s)
{
	(void)s;
	facts *src = facts_new(), *dst = facts_new();
	facts_put_str(src, NULL, "old", "nvml.driver_version");
	facts_put_str(src, NULL, "580.1", "nvml.driver_version"); /* the first retired, freed with src */
	facts_put_int(src, NULL, 2, "nvml.device_count");
	facts_put_int(dst, NULL, 9, "nvml.device_count");
	facts_put_str(dst, NULL, "kept", "env.path");
	const fact *held = facts_get(src, "nvml.driver_version");
	facts_move(dst, src);
	assert_int_equal(facts_count(src), 0);
	assert_null(facts_get(src, "nvml.device_count"));
	facts_free(src);
	assert_int_equal(facts_count(dst), 3);
	assert_int_equal(facts_int_or(dst, 0, "nvml.device_count"), 2);
	assert_string_equal(facts_str(dst, "env.path"), "kept");
	assert_ptr_equal(facts_get(dst, "nvml.driver_version"), held);
	assert_string_equal(held->str, "580.1");
	facts_free(dst);
}

static void test_facts_replaced_stays_valid(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_str(f, "src", "one", "layer.key");
	const fact *first = facts_get(f, "layer.key");
	const char *first_str = facts_str(f, "layer.key");
	facts_put_str(f, "src", "two", "layer.key");
	assert_string_equal(first->str, "one");
	assert_string_equal(first_str, "one");
	assert_string_equal(facts_str(f, "layer.key"), "two");
	assert_int_equal(facts_count(f), 1);
	facts_free(f);
}

/* Keys are never cut: two keys that differ only far along stay two, and a long layer is a layer. */
static void test_facts_long_keys(void **s)
{
	(void)s;
	char stem[1200];
	memset(stem, 'k', sizeof(stem) - 1);
	stem[sizeof(stem) - 1] = '\0';
	char layer[100];
	memset(layer, 'L', sizeof(layer) - 1);
	layer[sizeof(layer) - 1] = '\0';
	facts *f = facts_new();
	facts_put_int(f, NULL, 1, "x.%s.a", stem);
	facts_put_int(f, NULL, 2, "x.%s.b", stem);
	facts_put_str(f, NULL, "v", "%s.rest", layer);
	assert_int_equal(facts_count(f), 3);
	assert_int_equal(facts_int_or(f, 0, "x.%s.a", stem), 1);
	assert_int_equal(facts_int_or(f, 0, "x.%s.b", stem), 2);
	cJSON *j = facts_to_json(f);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(j, layer));
	char *err = NULL;
	facts *back = facts_from_json(j, &err);
	assert_non_null(back);
	assert_int_equal(facts_int_or(back, 0, "x.%s.b", stem), 2);
	assert_string_equal(facts_str(back, "%s.rest", layer), "v");
	facts_free(back);
	cJSON_Delete(j);
	facts_free(f);
}

/* Puts and gets at once from several threads (probe threads do: python_live reads back what it
 * put while the others put). Meant for the ThreadSanitizer and AddressSanitizer builds, which see
 * a getter that reads a fact after another thread replaced or moved it. */
#define TW 4
#define TROUNDS 2000
struct facts_thread_job {
	facts *f;
	int id;
	long seen;
};

static void *facts_writer(void *arg)
{
	struct facts_thread_job *j = arg;
	for (int i = 0; i < TROUNDS; i++) {
		facts_put_int(j->f, "w", i, "w.%d.%d", j->id, i);
		facts_put_str(j->f, "w", j->id % 2 ? "value-odd" : "value-even", "shared.key");
		facts_put_state(j->f, FACT_ERROR, "w", "why", "shared.state.%d", i % 8);
	}
	return NULL;
}

static void *facts_reader(void *arg)
{
	struct facts_thread_job *j = arg;
	for (int i = 0; i < TROUNDS; i++) {
		const char *v = facts_str(j->f, "shared.key");
		if (v) {
			assert_true(strncmp(v, "value-", 6) == 0);
			j->seen++;
		}
		const fact *ft = facts_get(j->f, "shared.state.%d", i % 8);
		if (ft)
			assert_string_equal(ft->error, "why");
		size_t n = facts_count(j->f);
		const fact *last = n ? facts_at(j->f, n - 1) : NULL;
		if (last)
			assert_non_null(last->key);
		if (i % 500 == 0) {
			cJSON *js = facts_to_json(j->f);
			cJSON_Delete(js);
			facts *copy = facts_new();
			facts_merge(copy, j->f);
			facts_free(copy);
		}
	}
	return NULL;
}

static void test_facts_threads(void **s)
{
	(void)s;
	facts *f = facts_new();
	struct facts_thread_job jobs[TW + 2];
	pthread_t tid[TW + 2];
	for (int i = 0; i < TW + 2; i++) {
		jobs[i] = (struct facts_thread_job){f, i, 0};
		assert_int_equal(pthread_create(&tid[i], NULL, i < TW ? facts_writer : facts_reader, &jobs[i]), 0);
	}
	for (int i = 0; i < TW + 2; i++)
		pthread_join(tid[i], NULL);
	for (int w = 0; w < TW; w++)
		assert_int_equal(facts_int_or(f, -1, "w.%d.%d", w, TROUNDS - 1), TROUNDS - 1);
	assert_int_equal(facts_count(f), (size_t)(TW * TROUNDS + 1 + 8));
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

/* Fixes as data: each helper adds the line check prints and the item fix composes; what is
 * not one safe word stays advice. */
static void test_fix_items(void **s)
{
	(void)s;
	findings fs;
	findings_init(&fs);
	finding *x = findings_add(&fs, "env.x", "env", SEV_WARN, "x");
	finding_fix(x, "read the manual");
	finding_fix_export(x, "LD_LIBRARY_PATH", "'/opt/a b':/usr/lib", "keeps the driver's");
	finding_fix_unset(x, "CUDA_LAUNCH_BLOCKING", NULL);
	finding_fix_export(x, "PATH", "/x; rm -rf ~", NULL); /* no word: advice */
	finding_fix_export(x, "1BAD", "v", NULL);          /* no name: advice */
	finding_fix_command(x, FIX_SCOPE_SYSTEM, "sudo modprobe nvidia_uvm", "loads the UVM module");
	assert_int_equal(x->fix.n, 6);
	assert_int_equal(x->nfixes, 6);
	assert_string_equal(x->fix.v[1], "export LD_LIBRARY_PATH='/opt/a b':/usr/lib   (keeps the driver's)");
	assert_string_equal(x->fix.v[2], "unset CUDA_LAUNCH_BLOCKING");
	assert_string_equal(x->fix.v[5], "sudo modprobe nvidia_uvm   (loads the UVM module)");
	assert_int_equal(finding_fix_item(x, 0)->kind, FIX_ADVICE);
	const fix_item *e = finding_fix_item(x, 1);
	assert_int_equal(e->kind, FIX_ENV_SET);
	assert_int_equal(e->scope, FIX_SCOPE_SHELL);
	assert_string_equal(e->var, "LD_LIBRARY_PATH");
	assert_string_equal(e->value, "'/opt/a b':/usr/lib");
	assert_string_equal(e->command, "export LD_LIBRARY_PATH='/opt/a b':/usr/lib");
	assert_string_equal(e->purpose, "keeps the driver's");
	assert_int_equal(finding_fix_item(x, 2)->kind, FIX_ENV_UNSET);
	assert_int_equal(finding_fix_item(x, 3)->kind, FIX_ADVICE);
	assert_null(finding_fix_item(x, 3)->command);
	assert_int_equal(finding_fix_item(x, 4)->kind, FIX_ADVICE);
	assert_int_equal(finding_fix_item(x, 5)->kind, FIX_COMMAND);
	assert_string_equal(fix_scope_name(finding_fix_item(x, 5)->scope), "system");
	assert_null(finding_fix_item(x, 6));
	/* a copy keeps the structure (torch.cuda-unavailable takes its root cause's fixes) */
	finding *y = findings_add(&fs, "torch.y", "python", SEV_FAIL, "y");
	x = &fs.v[0];
	finding_fix_copy(y, x, 1);
	assert_int_equal(finding_fix_item(y, 0)->kind, FIX_ENV_SET);
	assert_string_equal(y->fix.v[0], x->fix.v[1]);
	findings_free(&fs);
}

/* The one pipeline: the rules of one layer only, the --require policies, the setting recorded
 * with the facts, sorted fail first. */
static void test_diagnose(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_int(f, NULL, 2, "nvml.device_count");
	strlist req = {0};
	sl_push(&req, "nvml.device_count>=8");
	diagnose_opts o = {.layer = "bench", .requires = &req, .memory_headroom_set = true,
			   .memory_headroom_bytes = 1 << 20};
	findings fs;
	findings_init(&fs);
	diagnose(f, &o, &fs);
	assert_true(fs.n >= 1);
	assert_string_equal(fs.v[0].id, "policy.require");
	assert_int_equal(fs.v[0].sev, SEV_FAIL);
	for (size_t i = 0; i < fs.nskipped; i++) /* only bench rules ran (or were skipped) */
		assert_string_equal(rules_find(fs.skipped[i].id)->layer, "bench");
	assert_true(fs.nskipped > 0);
	long long v = 0;
	assert_true(facts_int(f, &v, "config.memory_headroom_bytes"));
	assert_int_equal(v, 1 << 20);
	findings_free(&fs);
	sl_free(&req);
	facts_free(f);
}

/* torch.cuda-unavailable's root cause: a property of the rules (root_cause), the most
 * fundamental fail finding wins; a warning is no root cause */
static void test_root_cause(void **s)
{
	(void)s;
	assert_true(rules_find("gpu.none")->root_cause > 0);
	assert_true(rules_find("gpu.none")->root_cause < rules_find("torch.cpu-build")->root_cause);
	assert_int_equal(rules_find("gpu.hot")->root_cause, 0);
	findings fs;
	findings_init(&fs);
	findings_add(&fs, "gpu.hot", "gpu", SEV_FAIL, "hot");
	assert_int_equal(rules_root_cause(&fs), -1);
	findings_add(&fs, "torch.cpu-build", "python", SEV_FAIL, "cpu build");
	findings_add(&fs, "driver.nouveau", "hardware", SEV_WARN, "nouveau, only a warning here");
	findings_add(&fs, "lib.shadowed", "loader", SEV_FAIL, "shadowed");
	assert_int_equal(rules_root_cause(&fs), 1);
	findings_add(&fs, "driver.not-loaded", "hardware", SEV_FAIL, "not loaded");
	assert_int_equal(rules_root_cause(&fs), 4);
	findings_free(&fs);
	/* docs/findings/python.md lists them in the rules' order: the table is the one declaration */
	const char *src = getenv("GPUVET_SOURCE_DIR");
	if (!src)
		return;
	char path[4096];
	snprintf(path, sizeof(path), "%s/docs/findings/python.md", src);
	size_t len;
	char *doc = read_input_file("findings doc", path, 1 << 20, &len);
	assert_non_null(doc);
	const char *list = strstr(doc, "in this order: ");
	assert_non_null(list);
	list += strlen("in this order: ");
	const char *end = strchr(list, '.');
	while (end && end[1] != '\n' && end[1] != ' ') /* ids have dots: the list ends at ". " or ".\n" */
		end = strchr(end + 1, '.');
	assert_non_null(end);
	char *text = xstrndup(list, (size_t)(end - list));
	for (char *q = text; *q; q++)
		if (*q == '\n')
			*q = ' ';
	strlist ids = {0};
	sl_split(&ids, text, ", ", false);
	int n = 0;
	for (const rule *r = rules_first(); r; r = rules_next(r))
		if (r->root_cause > 0)
			n++;
	assert_int_equal((int)ids.n, n);
	for (size_t i = 0; i < ids.n; i++) {
		const rule *r = rules_find(ids.v[i]);
		assert_non_null(r);
		assert_int_equal(r->root_cause, (int)i + 1);
	}
	sl_free(&ids);
	free(text);
	free(doc);
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

/* The one runner (core/proc_stream.c) behind proc_run: stdin fed whole as the child reads, stderr
 * kept, a child that closes its stdin costs us no SIGPIPE, and the child's signals are at their
 * defaults whatever we ignore (serve ignores SIGPIPE). */
static void test_proc_stdin_stderr_signals(void **s)
{
	(void)s;
	proc_result r;
	size_t big = 1 << 20; /* well over a pipe's buffer */
	char *text = xmalloc(big + 1);
	memset(text, 'x', big);
	text[big] = '\0';
	char *count[] = {"sh", "-c", "wc -c; echo to-stderr >&2", NULL};
	proc_run(count, NULL, text, 20000, 1024, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(atol(r.out), (long)big);
	assert_string_equal(r.err, "to-stderr\n");
	proc_result_free(&r);

	void (*old)(int) = signal(SIGPIPE, SIG_IGN);
	char *closes[] = {"sh", "-c", "exec 0<&-; sleep 0.1", NULL};
	proc_run(closes, NULL, text, 20000, 1024, &r);
	assert_int_equal(r.status, 0);
	assert_false(r.timed_out);
	proc_result_free(&r);
	/* `yes` dies of SIGPIPE quietly when it has the default; ignored, it complains on stderr */
	char *pipe_default[] = {"sh", "-c", "yes | head -c 10 >/dev/null", NULL};
	proc_run(pipe_default, NULL, NULL, 20000, 1024, &r);
	assert_int_equal(r.status, 0);
	assert_int_equal(r.err_len, 0);
	proc_result_free(&r);
	signal(SIGPIPE, old);
	free(text);
}

static void test_str_fmt_whole(void **s)
{
	(void)s;
	char buf[8];
	assert_true(str_fmt_whole(buf, sizeof(buf), "%s/%d", "ab", 12));
	assert_string_equal(buf, "ab/12");
	assert_false(str_fmt_whole(buf, sizeof(buf), "%s/%s", "/usr/lib", "libcuda.so.1"));
	assert_string_equal(buf, ""); /* never "/usr/li", another path */
	assert_false(str_fmt_whole(buf, sizeof(buf), "12345678"));
}

static void test_path_fold(void **s)
{
	(void)s;
	const char *cases[][2] = {{"/a/./b/../c", "/a/c"}, {"/../..", "/"}, {"//usr//lib/", "/usr/lib"}, {"/", "/"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *f = path_fold(cases[i][0]);
		assert_string_equal(f, cases[i][1]);
		free(f);
	}
}

/* path_dir keeps "/" for a file at the top and a bare name whole (the loader and toolkit
 * callers pass absolute paths; a relative one must not become "" or "."). */
static void test_path_dir(void **s)
{
	(void)s;
	const char *cases[][2] = {{"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib/x86_64-linux-gnu"},
				  {"/libcuda.so", "/"}, {"libcuda.so", "libcuda.so"}, {"/a/b/", "/a/b"}};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *d = path_dir(cases[i][0]);
		assert_string_equal(d, cases[i][1]);
		free(d);
	}
}

/* str_find_n reads only len bytes: a kernel-log line is a slice of a larger buffer, no NUL. */
static void test_str_find_n(void **s)
{
	(void)s;
	const char buf[] = "xx NVRM: Xid (PCI:0000:01:00): 79";
	assert_ptr_equal(str_find_n(buf, strlen(buf), "NVRM:"), buf + 3);
	assert_null(str_find_n(buf, 7, "NVRM:"));
	assert_ptr_equal(str_find_n(buf, 8, "NVRM:"), buf + 3);
	assert_null(str_find_n(buf, strlen(buf), "Xid (PCI:0001"));
}

/* What is printed between stdout_mute and stdout_unmute, through stdio or write(2), never
 * reaches fd 1; what comes before and after does, in order. */
static void test_stdout_mute(void **s)
{
	(void)s;
	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(stdout);
	int keep = dup(STDOUT_FILENO);
	dup2(p[1], STDOUT_FILENO);
	printf("before ");
	stdout_muted m;
	stdout_mute(&m);
	printf("library banner ");
	assert_int_equal(write(STDOUT_FILENO, "raw ", 4), 4);
	stdout_unmute(&m);
	printf("after");
	fflush(stdout);
	dup2(keep, STDOUT_FILENO);
	close(keep);
	close(p[1]);
	char buf[64] = {0};
	size_t got = 0;
	ssize_t r;
	while (got < sizeof(buf) - 1 && (r = read(p[0], buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)r;
	close(p[0]);
	assert_string_equal(buf, "before after");
}

/* The child dies with us (PR_SET_PDEATHSIG): a process running proc_run killed by SIGKILL takes
 * its child along, so a killed gpuvet leaves no probe behind. */
static bool process_gone(pid_t pid)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return true;
	bool gone = false;
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, "State:", 6) == 0)
			gone = strchr(line, 'Z') != NULL; /* a zombie whose new parent does not reap it */
	fclose(fp);
	return gone;
}

static void test_proc_child_dies_with_us(void **s)
{
	(void)s;
	const char *tmp = getenv("TMPDIR");
	char *pidfile = xasprintf("%s/gpuvet-proc-pid-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	int fd = mkstemp(pidfile);
	assert_true(fd >= 0);
	close(fd);
	pid_t runner = fork();
	assert_true(runner >= 0);
	if (runner == 0) {
		char *cmd = xasprintf("echo $$ > %s; exec sleep 30", pidfile);
		char *argv[] = {"sh", "-c", cmd, NULL};
		proc_result r;
		proc_run(argv, NULL, NULL, 60000, 1024, &r);
		_exit(0);
	}
	long child = 0;
	for (int i = 0; i < 500 && child <= 0; i++) { /* up to 5 s for the child to start */
		FILE *fp = fopen(pidfile, "r");
		if (fp) {
			if (fscanf(fp, "%ld", &child) != 1)
				child = 0;
			fclose(fp);
		}
		if (child <= 0)
			usleep(10000);
	}
	assert_true(child > 0);
	kill(runner, SIGKILL);
	waitpid(runner, NULL, 0);
	bool gone = false;
	for (int i = 0; i < 500 && !gone; i++) {
		gone = process_gone((pid_t)child);
		if (!gone)
			usleep(10000);
	}
	if (!gone)
		kill((pid_t)child, SIGKILL);
	unlink(pidfile);
	free(pidfile);
	assert_true(gone);
}

/* sleep_seconds: nothing for 0, below 0 or NAN; at least the time asked for otherwise (a lower
 * bound only: how much longer depends on the machine); sl_vpushf through sl_pushf */
static void test_sleep_and_vpushf(void **st)
{
	(void)st;
	double t0 = now_seconds();
	sleep_seconds(0);
	sleep_seconds(-1);
	sleep_seconds(NAN);
	double t1 = now_seconds();
	assert_true(t1 - t0 < 1); /* 1 s: "did not sleep" on any machine */
	sleep_seconds(0.05);
	assert_true(now_seconds() - t1 >= 0.049);
	strlist l = {0};
	sl_pushf(&l, "gpu %d: %s", 3, "ok");
	assert_int_equal(l.n, 1);
	assert_string_equal(l.v[0], "gpu 3: ok");
	sl_free(&l);
}

/* sb_addf formats into the buffer: texts that fit its free room, texts longer than it (the
 * buffer grows and formats again), many appends, an empty format. */
static void test_strbuf_addf(void **s)
{
	(void)s;
	strbuf sb;
	sb_init(&sb);
	sb_addf(&sb, "%s", "");
	assert_string_equal(sb.buf, "");
	assert_int_equal(sb.len, 0);
	sb_addf(&sb, "gpu %d", 7);
	assert_string_equal(sb.buf, "gpu 7");
	char big[1500];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	sb_addf(&sb, ":%s:", big);
	assert_int_equal(sb.len, 5 + 2 + sizeof(big) - 1);
	assert_int_equal(strlen(sb.buf), sb.len);
	assert_true(sb.buf[5] == ':' && sb.buf[6] == 'x' && sb.buf[sb.len - 1] == ':');
	for (int i = 0; i < 1000; i++)
		sb_addf(&sb, "%d,", i % 10);
	assert_int_equal(sb.len, 5 + 2 + sizeof(big) - 1 + 2000);
	assert_int_equal(strlen(sb.buf), sb.len);
	assert_memory_equal(sb.buf + sb.len - 4, "8,9,", 4);
	sb_free(&sb);
}

/* Every command's short options, whatever the buffer held before: gv_getopt_arrays looked for
 * duplicates in an unterminated buffer, and a stale 'o' beyond what it had written dropped
 * report's -o (seen under ASan). */
static void test_getopt_arrays_stale_buffer(void **state)
{
	(void)state;
	for (size_t i = 0; i < gv_ncommands; i++) {
		const gv_command_cli *c = gv_commands[i].cli;
		struct option clean_long[GV_OPTIONS_MAX + 1], stale_long[GV_OPTIONS_MAX + 1];
		char clean[3 * GV_OPTIONS_MAX + 4], stale[3 * GV_OPTIONS_MAX + 4];
		memset(clean, 0, sizeof(clean));
		gv_getopt_arrays(c, clean_long, clean);
		for (size_t k = 0; k < sizeof(stale); k++)
			stale[k] = (char)(32 + k % 95); /* every printable character, 'o' and 'h' included */
		gv_getopt_arrays(c, stale_long, stale);
		if (strcmp(clean, stale) != 0)
			fail_msg("%s: short options \"%s\" from a stale buffer, \"%s\" from a clean one", c->name, stale, clean);
		for (const gv_option *o = c->opts; o->name; o++)
			if (o->id > 0 && o->id < 128 && o->id != ':' && strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", o->id))
				if (!strchr(clean, o->id))
					fail_msg("%s: -%c missing from \"%s\"", c->name, o->id, clean);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_double_to_int), cmocka_unit_test(test_version_cmp), cmocka_unit_test(test_strbuf_addf),  cmocka_unit_test(test_facts_roundtrip),
		cmocka_unit_test(test_facts_many), cmocka_unit_test(test_facts_wire), cmocka_unit_test(test_format_key), cmocka_unit_test(test_facts_json_print),   cmocka_unit_test(test_csv),
		cmocka_unit_test(test_kb_lookups),   cmocka_unit_test(test_policy),
		cmocka_unit_test(test_fix_items),    cmocka_unit_test(test_diagnose),
		cmocka_unit_test(test_root_cause),
		cmocka_unit_test(test_getopt_arrays_stale_buffer),
		cmocka_unit_test(test_sleep_and_vpushf),
		cmocka_unit_test(test_proc_timeout_and_bound),
		cmocka_unit_test(test_str_fmt_whole),
		cmocka_unit_test(test_path_fold),
		cmocka_unit_test(test_path_dir),
		cmocka_unit_test(test_str_find_n),
		cmocka_unit_test(test_stdout_mute),
		cmocka_unit_test(test_proc_stdin_stderr_signals),
		cmocka_unit_test(test_proc_child_dies_with_us),
		cmocka_unit_test(test_facts_replaced_stays_valid), cmocka_unit_test(test_facts_move),
		cmocka_unit_test(test_facts_long_keys),
		cmocka_unit_test(test_facts_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
