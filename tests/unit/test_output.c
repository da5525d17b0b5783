/* Output that cannot carry code: the shell-quoting helper round-trips hostile words through real
 * shells (sh, bash where present) and refuses what no quoting makes safe; the text sanitizer
 * escapes control characters, bytes that are not UTF-8 and bidi controls; JSON stays JSON. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/util.h"
#include "core/shell.h"
#include "core/text.h"

/* Words that a directory can be named, each of which must come back from the shell unchanged. */
static const char *const hostile[] = {
	"/usr/local/cuda-12.4",
	"/opt/my cuda",
	"/opt/it's",
	"/opt/'''",
	"/opt/$(touch PWNED)",
	"/opt/`touch PWNED`",
	"/opt/${HOME}$HOME",
	"/opt/a;b&c|d>e<f",
	"/opt/*?[a]{b,c}",
	"~/x",
	"/opt/!!",
	"/opt/\"quoted\" \\back\\slash",
	"-n",
	"",
	"/opt/donn\xc3\xa9" "es/\xe6\xbc\xa2",
	"/opt/#comment",
	"a=b",
	NULL,
};

static void round_trip(const char *shell)
{
	if (access(shell, X_OK) != 0)
		return;
	for (size_t i = 0; hostile[i]; i++) {
		char q[4096];
		assert_non_null(shell_word(q, sizeof(q), hostile[i]));
		char *cmd = xasprintf("cd \"$T\" && printf '%%s' %s", q);
		char *tmp = xasprintf("T=%s", getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		char *argv[] = {(char *)shell, "-c", cmd, NULL};
		char *env[] = {"PATH=/usr/bin:/bin", "HOME=/nonexistent-home", tmp, NULL};
		proc_result r;
		proc_run(argv, env, NULL, 10000, 1 << 16, &r);
		assert_int_equal(r.status, 0);
		assert_int_equal(r.out_len, strlen(hostile[i]));
		assert_memory_equal(r.out, hostile[i], r.out_len);
		proc_result_free(&r);
		free(cmd);
		free(tmp);
	}
}

static void test_shell_round_trip(void **s)
{
	round_trip("/bin/sh");
	round_trip("/bin/bash");
	round_trip("/bin/dash");
	round_trip("/usr/bin/zsh");
}

static void test_shell_plain_words(void **s)
{
	char q[256];
	assert_string_equal(shell_word(q, sizeof(q), "/usr/local/cuda-12.4/bin:/usr/bin"), "/usr/local/cuda-12.4/bin:/usr/bin");
	assert_string_equal(shell_word(q, sizeof(q), "it's"), "'it'\\''s'");
	assert_string_equal(shell_word(q, sizeof(q), ""), "''");
	assert_string_equal(shell_word(q, sizeof(q), "~"), "'~'");
	/* too long for the buffer: no word, never a cut one */
	assert_null(shell_word(q, 4, "/usr/local"));
}

static void test_shell_refuses(void **s)
{
	static const char *const bad[] = {
		"/usr/local/cuda-12.6\ntouch PWNED\n#",
		"a\rb",
		"\033]0;title\007",
		"a\001b",
		"a\177b",
		"/opt/\xff\xfe",
		"/opt/\xc0\xaf",	 /* overlong "/" */
		"/opt/\xed\xa0\x80",	 /* a surrogate */
		"/opt/\xc2\x9b" "2J",	 /* C1 CSI */
		"/opt/\xe2\x80\xae" "gpj.exe", /* right-to-left override */
		"/opt/a\xe2\x80\xa8" "b", /* line separator */
		"/opt/\xe2\x81\xa6" "x", /* left-to-right isolate */
		NULL,
	};
	for (size_t i = 0; bad[i]; i++) {
		char q[256];
		assert_non_null(shell_unquotable(bad[i]));
		assert_null(shell_word(q, sizeof(q), bad[i]));
		strbuf sb;
		sb_init(&sb);
		sb_add(&sb, "x");
		assert_false(sb_add_shell_word(&sb, bad[i]));
		assert_string_equal(sb.buf, "x");
		sb_free(&sb);
		char *r = shell_refusal("the install", bad[i]);
		assert_true(text_is_safe(r));
		free(r);
	}
	char *r = shell_refusal("the install", "/opt/a\nb");
	assert_string_equal(r, "the install /opt/a\\nb cannot be given to a shell safely: it holds a line break; rename it "
			       "(gpuvet prints no command it cannot quote)");
	free(r);
}

static void test_text_escapes(void **s)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"plain /usr/local/cuda-12.4", "plain /usr/local/cuda-12.4"},
		{"cuda-12.6\ntouch PWNED\n#", "cuda-12.6\\ntouch PWNED\\n#"},
		{"\033]0;pwned\007\033[2J", "\\e]0;pwned\\x07\\e[2J"},
		{"tab\there\rcr", "tab\\there\\rcr"},
		{"del\177", "del\\x7f"},
		{"bad\xff\xfe", "bad\\xff\\xfe"},
		{"over\xc0\xaflong", "over\\xc0\\xaflong"},
		{"cut\xe2\x80", "cut\\xe2\\x80"},
		{"c1 \xc2\x9b" "2J", "c1 \\u009b2J"},
		{"rlo \xe2\x80\xae" "txt", "rlo \\u202etxt"},
		{"donn\xc3\xa9" "es \xe6\xbc\xa2 \xf0\x9f\x98\x80", "donn\xc3\xa9" "es \xe6\xbc\xa2 \xf0\x9f\x98\x80"},
		{"", ""},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(cases); i++) {
		char *t = text_safe_dup(cases[i].in);
		assert_string_equal(t, cases[i].out);
		assert_true(text_is_safe(t));
		free(t);
		assert_int_equal(text_is_safe(cases[i].in), strcmp(cases[i].in, cases[i].out) == 0);
	}
	assert_string_equal(TEXT(NULL), "");
}

static void test_text_truncates_whole_escapes(void **s)
{
	char buf[16];
	/* "abcdefghij\e..." : the cut never leaves half an escape or half a character */
	text_safe(buf, sizeof(buf), "abcdefghij\033\033\033\033");
	assert_true(text_is_safe(buf));
	assert_true(str_ends(buf, "..."));
	assert_null(strstr(buf, "\\..."));
	text_safe(buf, sizeof(buf), "abcdefghij\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
	assert_true(text_is_safe(buf));
	for (size_t n = 0; n < 64; n++) {
		char small[64];
		char src[80];
		memset(src, '\n', sizeof(src) - 1);
		src[sizeof(src) - 1] = '\0';
		text_safe(small, n + 1, src);
		assert_true(strlen(small) <= n);
		assert_true(text_is_safe(small));
	}
}

/* Found by fuzz_text: the refusal comment cut at its buffer split a UTF-8 character. */
static void test_refusal_comment_cut(void **s)
{
	char src[600];
	strcpy(src, "\033");
	for (int i = 0; i < 200; i++)
		strcat(src, "\xce\xb5");
	for (size_t n = 4; n < 300; n++) {
		char *buf = xmalloc(n);
		shell_word_or_comment(buf, n, "the path", src);
		assert_true(text_is_safe(buf));
		assert_true(strlen(buf) < n);
		free(buf);
	}
	char q[64];
	assert_string_equal(shell_word_or_comment(q, sizeof(q), "the path", "/ok"), "/ok");
}

static void test_json_stays_json(void **s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "path", "/home/\033]0;x\007/new\nline\xff\xc2\x9b\xe2\x80\xae" "end\177");
	char *printed = cJSON_PrintUnformatted(o);
	char *safe = json_text_safe(printed);
	/* only ASCII, and it parses back */
	for (const char *p = safe; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f);
	cJSON *back = cJSON_Parse(safe);
	assert_non_null(back);
	const char *v = cJSON_GetObjectItem(back, "path")->valuestring;
	assert_non_null(strstr(v, "\033]0;x\007/new\nline"));
	assert_non_null(strstr(v, "\xef\xbf\xbd")); /* U+FFFD for the byte that is not UTF-8 */
	assert_non_null(strstr(safe, "\\u009b"));
	assert_non_null(strstr(safe, "\\u202e"));
	assert_non_null(strstr(safe, "\\u007f"));
	cJSON_Delete(back);
	free(safe);
	free(printed);
	cJSON_Delete(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shell_round_trip),   cmocka_unit_test(test_shell_plain_words),
		cmocka_unit_test(test_shell_refuses),	   cmocka_unit_test(test_text_escapes),
		cmocka_unit_test(test_text_truncates_whole_escapes), cmocka_unit_test(test_json_stays_json),
		cmocka_unit_test(test_refusal_comment_cut),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
