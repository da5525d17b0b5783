/* --root is a jail: links resolve below the root as if it were "/", ".." stops at the root, a loop
 * or more than 40 links is ELOOP. Each test builds a small tree in a temporary folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"

static char base[PATH_MAX], root[PATH_MAX];

static void put(const char *rel, const char *text)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s%s", base, rel);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void dir(const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s%s", base, rel);
	assert_int_equal(mkdir(p, 0755), 0);
}

static void lnk(const char *target, const char *rel)
{
	char p[PATH_MAX * 2];
	snprintf(p, sizeof(p), "%s%s", base, rel);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **s)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof(base), "%s/gpuvet-sysroot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(base));
	snprintf(root, sizeof(root), "%s/root", base);
	dir("/root");
	dir("/root/etc");
	dir("/root/etc/alternatives");
	dir("/root/usr");
	dir("/root/usr/local");
	dir("/root/usr/local/cuda-12.6");
	dir("/root/usr/local/cuda-12.6/bin");
	put("/root/usr/local/cuda-12.6/bin/nvcc", "in the tree\n");
	lnk("/etc/alternatives/cuda", "/root/usr/local/cuda");
	lnk("/usr/local/cuda-12.6", "/root/etc/alternatives/cuda");
	/* the host's own file, outside the root, and the tree's file of the same name */
	put("/secret", "host\n");
	dir("/root/proc");
	put("/root/secret", "tree\n");
	sysroot_set(root);
	return 0;
}

static int teardown(void **s)
{
	sysroot_set(NULL);
	sysroot_reset_ops();
	char *cmd = xasprintf("rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	return 0;
}

/* NVIDIA's packages: /usr/local/cuda -> /etc/alternatives/cuda -> /usr/local/cuda-12.6, absolute. */
static void test_alternatives_chain(void **s)
{
	char *real = sysroot_realpath("/usr/local/cuda/bin/nvcc");
	assert_non_null(real);
	assert_string_equal(real, "/usr/local/cuda-12.6/bin/nvcc");
	free(real);
	char *text;
	assert_int_equal(sysroot_read("/usr/local/cuda/bin/nvcc", 100, &text, NULL, NULL), 0);
	assert_string_equal(text, "in the tree\n");
	free(text);
	assert_true(sysroot_is_dir("/usr/local/cuda"));
	struct stat st;
	assert_int_equal(sysroot_lstat("/usr/local/cuda", &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	char *t = sysroot_readlink("/usr/local/cuda");
	assert_string_equal(t, "/etc/alternatives/cuda");
	free(t);
	DIR *d = sysroot_opendir("/usr/local/cuda/bin");
	assert_non_null(d);
	closedir(d);
}

/* An absolute link to a host file reads the tree's file of that name, or nothing. */
static void test_absolute_link_stays_inside(void **s)
{
	char target[PATH_MAX * 2];
	snprintf(target, sizeof(target), "%s/secret", base);
	lnk(target, "/root/proc/version");
	char *text;
	assert_int_equal(sysroot_read("/proc/version", 100, &text, NULL, NULL), -ENOENT);
	assert_false(sysroot_exists("/proc/version"));
	lnk("/secret", "/root/proc/version2");
	assert_int_equal(sysroot_read("/proc/version2", 100, &text, NULL, NULL), 0);
	assert_string_equal(text, "tree\n");
	free(text);
	/* a directory link: what is below it is below the root too */
	lnk(base, "/root/proc/hostdir");
	assert_int_equal(sysroot_read("/proc/hostdir/secret", 100, &text, NULL, NULL), -ENOENT);
	char host[PATH_MAX];
	sysroot_path(host, sizeof(host), "/proc/hostdir/secret");
	assert_true(str_starts(host, root));
}

/* ".." never climbs out: in the path asked for, and in a relative link's target. */
static void test_dotdot_stops_at_root(void **s)
{
	char *text;
	assert_int_equal(sysroot_read("/../../../secret", 100, &text, NULL, NULL), 0);
	assert_string_equal(text, "tree\n");
	free(text);
	lnk("../../../../../../../../secret", "/root/proc/rel");
	assert_int_equal(sysroot_read("/proc/rel", 100, &text, NULL, NULL), 0);
	assert_string_equal(text, "tree\n");
	free(text);
	char *real = sysroot_realpath("/usr/local/cuda/../../../etc");
	/* .. of the resolved directory (/usr/local/cuda-12.6), then up to the root, never above */
	assert_string_equal(real, "/etc");
	free(real);
	real = sysroot_realpath("/usr/local/cuda/..");
	assert_string_equal(real, "/usr/local");
	free(real);
}

static void test_loops_and_depth(void **s)
{
	lnk("b", "/root/proc/a");
	lnk("a", "/root/proc/b");
	char *text;
	assert_int_equal(sysroot_read("/proc/a", 100, &text, NULL, NULL), -ELOOP);
	struct stat st;
	errno = 0;
	assert_int_equal(sysroot_stat("/proc/a/x", &st), -1);
	assert_int_equal(errno, ELOOP);
	errno = 0;
	assert_null(sysroot_realpath("/proc/a"));
	assert_int_equal(errno, ELOOP);
	/* the link itself is there */
	assert_int_equal(sysroot_lstat("/proc/a", &st), 0);
	/* 40 links are followed (the kernel's limit), 41 are not */
	char rel[64], tgt[64];
	for (int i = 0; i < 41; i++) {
		snprintf(rel, sizeof(rel), "/root/proc/l%d", i);
		snprintf(tgt, sizeof(tgt), "/proc/l%d", i + 1);
		lnk(tgt, rel);
	}
	put("/root/proc/l41", "end\n");
	assert_int_equal(sysroot_read("/proc/l1", 100, &text, NULL, NULL), 0);
	free(text);
	assert_int_equal(sysroot_read("/proc/l0", 100, &text, NULL, NULL), -ELOOP);
	/* a loop never yields a host path the kernel would resolve */
	char host[PATH_MAX];
	assert_string_equal(sysroot_path(host, sizeof(host), "/proc/a"), "");
}

static void test_dangling(void **s)
{
	lnk("/usr/local/cuda-11.0", "/root/usr/local/old");
	errno = 0;
	assert_null(sysroot_realpath("/usr/local/old"));
	assert_int_equal(errno, ENOENT);
	assert_false(sysroot_exists("/usr/local/old/bin"));
}

static ssize_t fail_readlink(const char *path, char *buf, size_t n)
{
	errno = EIO;
	return -1;
}

/* The override table is used for every lookup: an unreadable link is an error, not the host's. */
static void test_override_table(void **s)
{
	gv_sys.readlink = fail_readlink;
	char *text;
	assert_int_equal(sysroot_read("/usr/local/cuda/bin/nvcc", 100, &text, NULL, NULL), -EIO);
	sysroot_reset_ops();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_alternatives_chain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_absolute_link_stays_inside, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dotdot_stops_at_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_loops_and_depth, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dangling, setup, teardown),
		cmocka_unit_test_setup_teardown(test_override_table, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
