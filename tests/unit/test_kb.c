/*
 * Knowledge-base files that do not parse are errors that name the file, line and column, never a
 * quietly different table: the strict CSV reader, --kb overrides that are empty, lack a column,
 * are too big or are not files, and the built-in tables themselves. What is derived from the
 * tables (kb_memo) is made once per knowledge base, from that knowledge base's own tables.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "kb/csv.h"
#include "kb/kb.h"
#include "kb/kb_torch.h"
#include "../tools/test_tmp.h"

static void expect_error(const char *text, size_t len, const char *want)
{
	char *err = NULL;
	csv_table *t = csv_parse("t.csv", text, len, &err);
	if (t)
		fail_msg("parsed, expected '%s'", want);
	if (!err || !strstr(err, want))
		fail_msg("error '%s', expected '%s'", err ? err : "(none)", want);
	free(err);
}

#define EXPECT(lit, want) expect_error(lit, sizeof(lit) - 1, want)

static void test_csv_errors(void **s)
{
	(void)s;
	EXPECT("a,b\n1,\"x\n", "t.csv:2:3: unterminated quoted field");
	EXPECT("a,b\n1,x\"y\n", "t.csv:2:4: a quote inside an unquoted field");
	EXPECT("a,b\n\"x\"y,1\n", "t.csv:2:4: text after a closing quote");
	EXPECT("a,b\n1,\0\n", "t.csv:2:3: a NUL byte");
	EXPECT("a,b\n1,\xff\n", "t.csv:2:3: byte 0xff is not UTF-8");
	EXPECT("a,b\n1,\xc3(\n", "t.csv:2:3: byte 0xc3");
	EXPECT("a,b\n1,2,3\n", "t.csv:2: 3 fields, the header has 2");
	EXPECT("a,b\n1,2\n3\n", "t.csv:3: 1 field, the header has 2");
	EXPECT("a,,b\n1,2,3\n", "t.csv:1: header column 2 has no name");
	EXPECT("a,b,a\n1,2,3\n", "header column 'a' appears twice");
	EXPECT("", "t.csv:1:1: no header line");
	/* a quoted field over two lines: later lines are still counted right */
	EXPECT("a,b\n\"x\ny\",1\n1,\"z\n", "t.csv:4:3: unterminated");
	EXPECT("a,b\r\n1,2\r\n3,4\"\r\n", "t.csv:3:4: a quote inside");

	char *err = NULL;
	const char ok[] = "name,value\n\"with, comma\",\"say \"\"hi\"\"\"\nµs,\xe2\x82\xac\n\n";
	csv_table *t = csv_parse("ok.csv", ok, sizeof(ok) - 1, &err);
	assert_non_null(t);
	assert_null(err);
	assert_int_equal(t->nrows, 2);
	assert_string_equal(csv_cell(t, 0, "name"), "with, comma");
	assert_string_equal(csv_cell(t, 0, "value"), "say \"hi\"");
	assert_string_equal(csv_cell(t, 1, "name"), "µs");
	csv_free(t);
}

static char dir[4096];

static void put(const char *name, const void *data, size_t len)
{
	char *p = xasprintf("%s/%s", dir, name);
	FILE *fp = fopen(p, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(data, 1, len, fp), len);
	fclose(fp);
	free(p);
}

static void clear_dir(void)
{
	char *cmd = xasprintf("rm -rf '%s'/*", dir);
	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static void expect_kb_error(const char *want)
{
	char *err = NULL;
	int code = 0;
	kb *k = kb_load_checked(dir, &err, &code);
	if (k)
		fail_msg("loaded, expected '%s'", want);
	if (!err || !strstr(err, want))
		fail_msg("error '%s', expected '%s'", err ? err : "(none)", want);
	assert_int_equal(code, 2);
	free(err);
	clear_dir();
}

static void test_kb_overrides(void **s)
{
	(void)s;
	test_tmp_path(dir, sizeof(dir), "gpuvet-kb-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char *err = NULL;
	int code = -1;

	/* the built-in tables parse, strictly */
	kb *k = kb_load_checked(NULL, &err, &code);
	assert_non_null(k);
	assert_int_equal(code, 0);
	if (!kb_verify(k, &err))
		fail_msg("%s", err);
	const csv_table *builtin = kb_table(k, "torch_cuda");
	assert_non_null(builtin);
	assert_true(builtin->nrows > 0);

	/* random bytes, an unterminated quote, a header alone: usage errors naming file, line, column */
	unsigned char junk[512];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	put("torch_cuda.csv", junk, sizeof(junk));
	char *want = xasprintf("%s/torch_cuda.csv:1:", dir);
	expect_kb_error(want);
	free(want);

	strbuf sb;
	sb_init(&sb);
	for (size_t c = 0; c < builtin->ncols; c++)
		sb_addf(&sb, "%s%s", c ? "," : "", builtin->header[c]);
	sb_add(&sb, "\n");
	size_t header_len = sb.len;
	for (size_t c = 0; c < builtin->ncols; c++)
		sb_addf(&sb, "%s%s", c ? "," : "", c == 1 ? "\"unterminated" : "x");
	sb_add(&sb, "\n");
	put("torch_cuda.csv", sb.buf, sb.len);
	want = xasprintf("%s/torch_cuda.csv:2:", dir);
	expect_kb_error(want);
	free(want);
	expect_error(sb.buf, sb.len, "unterminated quoted field");

	put("torch_cuda.csv", sb.buf, header_len);
	expect_kb_error("a header and no rows");

	/* a column of the built-in table missing */
	put("torch_cuda.csv", "torch,cuda\n2.5.1,12.4\n", 22);
	expect_kb_error("no column");

	/* a directory named like a table, and a file over the limit (sparse: nothing is read) */
	char *p = xasprintf("%s/gpu_cc.csv", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	expect_kb_error("not a regular file");
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 100LL << 20), 0);
	close(fd);
	expect_kb_error("is 100 MiB, more than the 64 MiB");
	free(p);

	/* a well-formed override replaces the table; a table of its own is accepted as it is */
	put("torch_cuda.csv", sb.buf, header_len);
	p = xasprintf("%s/torch_cuda.csv", dir);
	FILE *fp = fopen(p, "a");
	for (size_t c = 0; c < builtin->ncols; c++)
		fprintf(fp, "%s%s", c ? "," : "", "v");
	fputc('\n', fp);
	fclose(fp);
	free(p);
	put("extra.csv", "k,v\n1,2\n", 8);
	kb *k2 = kb_load_checked(dir, &err, &code);
	if (!k2)
		fail_msg("a good override was refused: %s", err);
	assert_int_equal(kb_table(k2, "torch_cuda")->nrows, 1);
	assert_int_equal(kb_table(k2, "extra")->nrows, 1);
	kb_free(k2);
	clear_dir();
	sb_free(&sb);
	kb_free(k);
	rmdir(dir);
}

/* The torch builds are derived once per knowledge base (three rules and the fix planner ask), each
 * caller gets its own copy, and a knowledge base with a torch_cuda override derives its own. */
static void test_kb_memo(void **s)
{
	(void)s;
	char *err = NULL;
	int code = -1;
	kb *k = kb_load_checked(NULL, &err, &code);
	assert_non_null(k);
	size_t n1, n2;
	const void *m1 = kb_memo(k, KB_MEMO_TORCH_BUILDS, &n1);
	const void *m2 = kb_memo(k, KB_MEMO_TORCH_BUILDS, &n2);
	assert_non_null(m1);
	assert_ptr_equal(m1, m2);
	assert_true(n1 > 10);
	assert_int_equal(n1, n2);
	torch_build *a, *b;
	assert_int_equal(kb_torch_builds(k, &a), n1);
	assert_int_equal(kb_torch_builds(k, &b), n1);
	assert_ptr_not_equal(a, b);
	assert_ptr_not_equal(a, m1);
	assert_memory_equal(a, m1, n1 * sizeof(*a));
	a[0].version[0] = 'X'; /* the caller's copy: the knowledge base's stays */
	assert_memory_equal(b, m1, n1 * sizeof(*b));
	free(a);
	free(b);

	/* one release with one variant, in a knowledge base of its own */
	test_tmp_path(dir, sizeof(dir), "gpuvet-kb-XXXXXX");
	assert_non_null(mkdtemp(dir));
	const csv_table *t = kb_table(k, "torch_cuda");
	strbuf sb;
	sb_init(&sb);
	for (size_t c = 0; c < t->ncols; c++)
		sb_addf(&sb, "%s%s", c ? "," : "", t->header[c]);
	sb_add(&sb, "\n");
	for (size_t c = 0; c < t->ncols; c++) {
		const char *h = t->header[c];
		const char *v = strcmp(h, "torch_version") == 0 ? "9.9" : strstr(h, "variant") ? "cu130" : csv_cell(t, 0, h);
		sb_addf(&sb, "%s%s", c ? "," : "", strchr(v, ',') ? "\"\"" : v);
	}
	sb_add(&sb, "\n");
	put("torch_cuda.csv", sb.buf, sb.len);
	kb *k2 = kb_load_checked(dir, &err, &code);
	if (!k2)
		fail_msg("%s", err);
	kb_warm(k2); /* made beside the probes */
	size_t n3;
	const torch_build *own = kb_memo(k2, KB_MEMO_TORCH_BUILDS, &n3);
	assert_int_equal(n3, 1);
	assert_string_equal(own[0].version, "9.9");
	assert_string_equal(own[0].variant, "cu130");
	assert_ptr_equal(kb_memo(k, KB_MEMO_TORCH_BUILDS, &n2), m1);
	kb_free(k2);
	clear_dir();
	rmdir(dir);
	sb_free(&sb);
	kb_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_csv_errors),
		cmocka_unit_test(test_kb_overrides),
		cmocka_unit_test(test_kb_memo),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
