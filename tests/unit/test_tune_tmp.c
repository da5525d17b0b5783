/* Unit tests of tune's temporary directories (tune_remove_stale_dirs): a directory of a dead
 * run is removed, anything else is left alone. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "core/util.h"
#include "tune/tune_probe.h"
#include "../tools/test_tmp.h"

static char root[4096];

static void put(const char *rel, const char *text)
{
	char *p = xasprintf("%s/%s", root, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	free(p);
}

static void dir(const char *rel)
{
	char *p = xasprintf("%s/%s", root, rel);
	assert_int_equal(mkdir(p, 0700), 0);
	free(p);
}

static bool exists(const char *rel)
{
	char *p = xasprintf("%s/%s", root, rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;
	free(p);
	return r;
}

static void age(const char *rel, long seconds)
{
	char *p = xasprintf("%s/%s", root, rel);
	struct timeval tv[2];
	gettimeofday(&tv[0], NULL);
	tv[0].tv_sec -= seconds;
	tv[1] = tv[0];
	assert_int_equal(utimes(p, tv), 0);
	free(p);
}

static void test_stale_dirs(void **state)
{
	(void)state;
	test_tmp_path(root, sizeof(root), "gpuvet-tunetmp-XXXXXX");
	assert_non_null(mkdtemp(root));
	/* a dead run: its lock held by nobody, a stray bytecode cache */
	dir("gpuvet-tune-dead01");
	put("gpuvet-tune-dead01/tune_torch.py", "print()\n");
	put("gpuvet-tune-dead01/lock", "");
	dir("gpuvet-tune-dead01/__pycache__");
	put("gpuvet-tune-dead01/__pycache__/x.pyc", "");
	/* a live run: its lock held (by us, through another open file) */
	dir("gpuvet-tune-live01");
	put("gpuvet-tune-live01/tune_torch.py", "print()\n");
	put("gpuvet-tune-live01/lock", "");
	char *lp = xasprintf("%s/gpuvet-tune-live01/lock", root);
	int held = open(lp, O_RDWR);
	free(lp);
	assert_true(held >= 0);
	assert_int_equal(flock(held, LOCK_EX), 0);
	/* without a lock: a run between mkdtemp and its lock (fresh), or an old gpuvet's (a day old) */
	dir("gpuvet-tune-fresh1");
	dir("gpuvet-tune-old001");
	put("gpuvet-tune-old001/tune_torch.py", "print()\n");
	age("gpuvet-tune-old001", 2 * 86400);
	/* a dead run's directory holding something a run does not write: not ours to delete */
	dir("gpuvet-tune-other1");
	put("gpuvet-tune-other1/lock", "");
	put("gpuvet-tune-other1/notes.txt", "mine\n");
	/* a link with the name, and other names */
	char *target = xasprintf("%s/elsewhere", root);
	assert_int_equal(mkdir(target, 0700), 0);
	char *link = xasprintf("%s/gpuvet-tune-link01", root);
	assert_int_equal(symlink(target, link), 0);
	dir("gpuvet-other-dir");

	assert_int_equal(tune_remove_stale_dirs(root), 2);
	assert_false(exists("gpuvet-tune-dead01"));
	assert_false(exists("gpuvet-tune-old001"));
	assert_true(exists("gpuvet-tune-live01/tune_torch.py"));
	assert_true(exists("gpuvet-tune-fresh1"));
	assert_true(exists("gpuvet-tune-other1/notes.txt") && exists("gpuvet-tune-other1/lock"));
	assert_true(exists("gpuvet-tune-link01") && exists("elsewhere"));
	assert_true(exists("gpuvet-other-dir"));
	/* the live run ends: its directory is stale now */
	close(held);
	assert_int_equal(tune_remove_stale_dirs(root), 1);
	assert_false(exists("gpuvet-tune-live01"));
	assert_int_equal(tune_remove_stale_dirs(root), 0);

	char *cmd = xasprintf("rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	free(target);
	free(link);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stale_dirs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
