/*
 * Evidence that says what it saw: fact states keep "not there" (absent), "there but cannot be
 * read" (unreadable, with the errno) and "read but not understood" (unparsable, with the first
 * bytes) apart, through JSON and back; sysroot notes every path it finds but cannot read, with
 * failures injected through its override table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/sysroot.h"
#include "core/util.h"
#include "../tools/test_tmp.h"

static void test_states_apart(void **s)
{
	(void)s;
	facts *f = facts_new();
	facts_put_read_error(f, "/proc/x", -ENOENT, "no module loaded", "t.absent");
	facts_put_read_error(f, "/proc/x", -EACCES, NULL, "t.denied");
	facts_put_read_error(f, "/proc/x", -EIO, NULL, "t.eio");
	facts_put_unparsable(f, "/proc/x", "garb\001age\n\"q\"", 12, "no version", "t.garbage");
	facts_put_unparsable(f, "/proc/x", "", 0, "no version", "t.empty");

	const fact *a = facts_get(f, "t.absent"), *d = facts_get(f, "t.denied"), *e = facts_get(f, "t.eio");
	const fact *g = facts_get(f, "t.garbage"), *z = facts_get(f, "t.empty");
	assert_int_equal(a->state, FACT_ABSENT);
	assert_string_equal(a->error, "no module loaded");
	assert_int_equal(a->sys_errno, 0);
	assert_false(fact_seen_but_unknown(a));
	assert_int_equal(d->state, FACT_UNREADABLE);
	assert_int_equal(d->sys_errno, EACCES);
	assert_non_null(strstr(d->error, "EACCES"));
	assert_true(fact_seen_but_unknown(d));
	assert_int_equal(e->sys_errno, EIO);
	assert_int_equal(g->state, FACT_UNPARSABLE);
	assert_string_equal(g->excerpt, "garb\\x01age\\n\\\"q\\\"");
	assert_true(fact_seen_but_unknown(g));
	assert_string_equal(z->error, "empty file");

	char buf[256];
	assert_non_null(strstr(fact_problem_text(d, buf, sizeof(buf)), "cannot be read: Permission denied"));
	assert_non_null(strstr(fact_problem_text(g, buf, sizeof(buf)), "it starts with \"garb\\x01age"));
	assert_non_null(strstr(fact_problem_text(a, buf, sizeof(buf)), "does not exist"));

	/* through JSON (check --json, then check --facts) and back, nothing is lost */
	cJSON *j = facts_to_json(f);
	char *text = cJSON_PrintUnformatted(j);
	assert_non_null(strstr(text, "\"state\":\"unreadable\""));
	assert_non_null(strstr(text, "\"errno\":\"EACCES\""));
	assert_non_null(strstr(text, "\"state\":\"unparsable\""));
	assert_non_null(strstr(text, "\"first_bytes\":"));
	char *err = NULL;
	facts *back = facts_from_json(j, &err);
	assert_non_null(back);
	assert_int_equal(facts_get(back, "t.denied")->state, FACT_UNREADABLE);
	assert_int_equal(facts_get(back, "t.denied")->sys_errno, EACCES);
	assert_int_equal(facts_get(back, "t.absent")->state, FACT_ABSENT);
	assert_string_equal(facts_get(back, "t.garbage")->excerpt, g->excerpt);
	facts *merged = facts_new();
	facts_merge(merged, back);
	assert_int_equal(facts_get(merged, "t.eio")->sys_errno, EIO);
	facts_free(merged);
	facts_free(back);
	free(text);
	cJSON_Delete(j);
	facts_free(f);
}

static char tmp[4096];

static ssize_t read_eio(int fd, void *buf, size_t n)
{
	(void)fd;
	(void)buf;
	(void)n;
	errno = EIO;
	return -1;
}

static DIR *opendir_eacces(const char *path)
{
	(void)path;
	errno = EACCES;
	return NULL;
}

static int fstat_eoverflow(int fd, struct stat *st)
{
	(void)fd;
	memset(st, 0xa5, sizeof(*st)); /* what a failed call may leave: nothing to go by */
	errno = EOVERFLOW;
	return -1;
}

static ssize_t readlink_fills(const char *path, char *buf, size_t n)
{
	(void)path;
	memset(buf, 'x', n); /* a target at least as long as the buffer: the kernel cut it */
	return (ssize_t)n;
}

static void write_text(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void test_sysroot_notes_problems(void **s)
{
	(void)s;
	test_tmp_path(tmp, sizeof(tmp), "gpuvet-evidence-XXXXXX");
	assert_non_null(mkdtemp(tmp));
	char *p = xasprintf("%s/file", tmp);
	write_text(p, "text\n");
	char *d = xasprintf("%s/dir", tmp);
	assert_int_equal(mkdir(d, 0755), 0);
	char *fifo = xasprintf("%s/fifo", tmp);
	assert_int_equal(mkfifo(fifo, 0644), 0);
	sysroot_set(tmp);
	sysroot_problems_clear();

	char *out = NULL;
	size_t len;
	/* missing paths are not problems: only what is there and cannot be read */
	assert_int_equal(sysroot_read("/missing", 100, &out, &len, NULL), -ENOENT);
	assert_null(sysroot_opendir("/missing"));
	sysroot_problem v[SYSROOT_PROBLEMS_MAX];
	assert_int_equal(sysroot_problems(v, SYSROOT_PROBLEMS_MAX), 0);

	assert_int_equal(sysroot_read("/dir", 100, &out, &len, NULL), -EISDIR);
	assert_int_equal(sysroot_read("/fifo", 100, &out, &len, NULL), -EINVAL); /* and did not block */
	gv_sys.read = read_eio;
	assert_int_equal(sysroot_read("/file", 100, &out, &len, NULL), -EIO);
	sysroot_reset_ops();
	gv_sys.opendir = opendir_eacces;
	assert_null(sysroot_opendir("/dir"));
	sysroot_reset_ops();
	/* a link target is whole or refused, never cut */
	char *longlink = xasprintf("%s/long", tmp);
	char target[4001];
	memset(target, 'a', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	assert_int_equal(symlink(target, longlink), 0);
	char *got = sysroot_readlink("/long");
	assert_non_null(got);
	assert_int_equal(strlen(got), sizeof(target) - 1);
	free(got);
	gv_sys.readlink = readlink_fills;
	errno = 0;
	assert_null(sysroot_readlink("/long"));
	assert_int_equal(errno, ENAMETOOLONG);
	sysroot_reset_ops();
	unlink(longlink);
	free(longlink);
	/* a file whose fstat fails is not read as if it were one (st would be garbage) */
	gv_sys.fstat = fstat_eoverflow;
	assert_int_equal(sysroot_read("/file", 100, &out, &len, NULL), -EOVERFLOW);
	assert_null(out);
	sysroot_reset_ops();
	/* the same path twice is one problem */
	assert_int_equal(sysroot_read("/fifo", 100, &out, &len, NULL), -EINVAL);

	assert_int_equal(sysroot_problems(v, SYSROOT_PROBLEMS_MAX), 3); /* /file once: EIO, then EOVERFLOW */
	assert_string_equal(v[0].path, "/dir");
	assert_int_equal(v[0].err, EISDIR);
	assert_string_equal(v[0].what, "is a directory, not a file");
	assert_string_equal(v[1].path, "/fifo");
	assert_string_equal(v[1].what, "is a FIFO, not a file");
	assert_string_equal(v[2].path, "/file");
	assert_int_equal(v[2].err, EIO);
	assert_non_null(strstr(v[2].what, "EIO"));

	/* a file an ordinary user is not expected to read is not noted */
	gv_sys.read = read_eio;
	assert_int_equal(sysroot_read_may_deny("/file", 100, &out, &len, NULL), -EIO);
	sysroot_reset_ops();
	/* and the working read still works */
	assert_int_equal(sysroot_read("/file", 100, &out, &len, NULL), 0);
	assert_string_equal(out, "text\n");
	free(out);

	/* a FIFO read as a fact: unreadable, what it is, no errno of its own */
	facts *f = facts_new();
	int rc = sysroot_read("/fifo", 100, &out, &len, NULL);
	facts_put_read_error(f, "/fifo", rc, NULL, "t.fifo");
	assert_int_equal(facts_get(f, "t.fifo")->state, FACT_UNREADABLE);
	assert_string_equal(facts_get(f, "t.fifo")->error, "is a FIFO, not a file");
	assert_int_equal(facts_get(f, "t.fifo")->sys_errno, 0);
	facts_free(f);

	sysroot_problems_clear();
	assert_int_equal(sysroot_problems(v, SYSROOT_PROBLEMS_MAX), 0);
	sysroot_set(NULL);
	unlink(p);
	unlink(fifo);
	rmdir(d);
	rmdir(tmp);
	free(p);
	free(d);
	free(fifo);
}

static void test_errno_names(void **s)
{
	(void)s;
	assert_string_equal(sysroot_errno_name(EACCES), "EACCES");
	assert_int_equal(sysroot_errno_parse("EIO"), EIO);
	assert_int_equal(sysroot_errno_parse("ENOSUCH"), 0);
	assert_string_equal(sysroot_errno_name(99999), "EOTHER");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_states_apart),
		cmocka_unit_test(test_sysroot_notes_problems),
		cmocka_unit_test(test_errno_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
