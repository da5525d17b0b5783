/* Unit tests of probes/nvml_limits.h, the per-boot cache of each GPU's fixed limits that
 * `check --fast` reads: kept per boot, driver and UUID; a failed call never kept; a damaged,
 * foreign or linked file never believed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "probes/nvml_limits.h"
#include "../tools/test_tmp.h"

static char root[4096];
static char *cache_file;

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = xcalloc(1, 65536);
	size_t n = fread(buf, 1, 65535, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/* A machine tree with a boot id, and a home for the cache. */
static int setup(void **state)
{
	(void)state;
	test_tmp_path(root, sizeof(root), "gpuvet-limits-XXXXXX");
	assert_non_null(mkdtemp(root));
	char *p = xasprintf("mkdir -p %s/sys/proc/sys/kernel/random %s/home", root, root);
	assert_int_equal(system(p), 0);
	free(p);
	p = xasprintf("%s/sys/proc/sys/kernel/random/boot_id", root);
	write_text(p, "0c7e3a1e-1111-4222-8333-444455556666\n");
	free(p);
	p = xasprintf("%s/sys", root);
	sysroot_set(p);
	free(p);
	p = xasprintf("%s/home", root);
	setenv("HOME", p, 1);
	free(p);
	unsetenv("XDG_CACHE_HOME");
	cache_file = xasprintf("%s/home/.cache/gpuvet/nvml-limits", root);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	sysroot_set(NULL);
	char *p = xasprintf("rm -rf %s", root);
	assert_int_equal(system(p), 0);
	free(p);
	free(cache_file);
	return 0;
}

static void limits_of(gv_nvml_device *d, unsigned long long base)
{
	memset(d, 0, sizeof(*d));
	for (size_t k = 0; k < gv_nvml_n_limit_fields; k++) {
		gv_nv_u64 *v = (gv_nv_u64 *)(void *)((char *)d + gv_nvml_limit_fields[k].offset);
		*v = (gv_nv_u64){.st = GV_V_OK, .rc = NVML_SUCCESS, .v = base + k};
	}
}

static unsigned long long field(const gv_nvml_device *d, size_t k, gv_vstate *st)
{
	const gv_nv_u64 *v = (const gv_nv_u64 *)(const void *)((const char *)d + gv_nvml_limit_fields[k].offset);
	if (st)
		*st = v->st;
	return v->v;
}

static void put_one(const char *driver, const char *uuid, unsigned long long base)
{
	nvml_limits *c = nvml_limits_open(driver);
	assert_non_null(c);
	gv_nvml_device d;
	limits_of(&d, base);
	nvml_limits_put(c, uuid, &d);
	nvml_limits_close(c);
}

static void test_kept_for_the_same_boot_driver_and_gpu(void **state)
{
	(void)state;
	unlink(cache_file);
	put_one("580.159.04", "GPU-aaaa", 100);
	struct stat st;
	assert_int_equal(stat(cache_file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	nvml_limits *c = nvml_limits_open("580.159.04");
	gv_nvml_device d;
	memset(&d, 0, sizeof(d));
	assert_true(nvml_limits_get(c, "GPU-aaaa", &d));
	for (size_t k = 0; k < gv_nvml_n_limit_fields; k++) {
		gv_vstate s;
		assert_int_equal(field(&d, k, &s), 100 + k);
		assert_int_equal(s, GV_V_OK);
	}
	/* another GPU (a new UUID: a replaced board) is asked */
	assert_false(nvml_limits_get(c, "GPU-bbbb", &d));
	assert_string_equal(nvml_limits_path(c), cache_file);
	nvml_limits_close(c);
}

static void test_another_driver_or_boot_is_not_believed(void **state)
{
	(void)state;
	unlink(cache_file);
	put_one("580.159.04", "GPU-aaaa", 100);
	gv_nvml_device d;
	nvml_limits *c = nvml_limits_open("580.126.09");
	assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
	nvml_limits_close(c);
	/* a reboot: the kernel's boot id changes */
	char *p = xasprintf("%s/sys/proc/sys/kernel/random/boot_id", root);
	write_text(p, "99999999-1111-4222-8333-444455556666\n");
	c = nvml_limits_open("580.159.04");
	assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
	nvml_limits_close(c);
	write_text(p, "0c7e3a1e-1111-4222-8333-444455556666\n");
	free(p);
}

static void test_no_boot_id_or_home_caches_nothing(void **state)
{
	(void)state;
	char *p = xasprintf("%s/sys/proc/sys/kernel/random/boot_id", root);
	unlink(p);
	assert_null(nvml_limits_open("580.159.04"));
	write_text(p, "0c7e3a1e-1111-4222-8333-444455556666\n");
	free(p);
	char *home = xstrdup(getenv("HOME"));
	unsetenv("HOME");
	assert_null(nvml_limits_open("580.159.04"));
	setenv("HOME", "relative/home", 1);
	assert_null(nvml_limits_open("580.159.04"));
	/* a home that is not ours (sudo keeping the user's HOME): nothing cached there */
	if (geteuid() == 0) {
		assert_int_equal(chown(home, 65534, 65534), 0);
		setenv("HOME", home, 1);
		assert_null(nvml_limits_open("580.159.04"));
		assert_int_equal(chown(home, 0, 0), 0);
	}
	setenv("HOME", home, 1);
	free(home);
	/* and a NULL cache is a cache that never answers */
	gv_nvml_device d;
	assert_false(nvml_limits_get(NULL, "GPU-aaaa", &d));
	nvml_limits_put(NULL, "GPU-aaaa", &d);
	nvml_limits_close(NULL);
}

static void test_a_failed_call_is_never_kept(void **state)
{
	(void)state;
	unlink(cache_file);
	nvml_limits *c = nvml_limits_open("580.159.04");
	gv_nvml_device d;
	limits_of(&d, 100);
	d.max_sm_clock_mhz = (gv_nv_u64){.st = GV_V_ERROR, .rc = NVML_ERROR_UNKNOWN};
	nvml_limits_put(c, "GPU-aaaa", &d);
	/* unsupported is an answer, kept as one */
	limits_of(&d, 200);
	d.temp_gpu_max_c = (gv_nv_u64){.st = GV_V_UNSUPPORTED, .rc = NVML_ERROR_NOT_SUPPORTED};
	nvml_limits_put(c, "GPU-bbbb", &d);
	nvml_limits_close(c);
	c = nvml_limits_open("580.159.04");
	assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
	memset(&d, 0, sizeof(d));
	assert_true(nvml_limits_get(c, "GPU-bbbb", &d));
	assert_int_equal(d.temp_gpu_max_c.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.temp_gpu_max_c.rc, NVML_ERROR_NOT_SUPPORTED);
	nvml_limits_close(c);
}

static void test_damaged_or_linked_file_is_ignored_and_rewritten(void **state)
{
	(void)state;
	unlink(cache_file);
	put_one("580.159.04", "GPU-aaaa", 100);
	char *text = read_text(cache_file);
	assert_non_null(text);
	/* every cut of the file's last line: never believed, the next put rewrites it whole */
	size_t len = strlen(text);
	for (size_t cut = len - 2; cut > len - 40; cut--) {
		char *part = xstrdup(text);
		part[cut] = '\0';
		write_text(cache_file, part);
		free(part);
		gv_nvml_device d;
		nvml_limits *c = nvml_limits_open("580.159.04");
		assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
		nvml_limits_close(c);
	}
	/* a value that is not a number, a state out of range */
	write_text(cache_file, "gpuvet nvml-limits 1\nboot 0c7e3a1e-1111-4222-8333-444455556666\ndriver 580.159.04\n"
			       "gpu GPU-aaaa pcie_gen_max=7,0,5\nend\n");
	gv_nvml_device d;
	nvml_limits *c = nvml_limits_open("580.159.04");
	assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
	limits_of(&d, 300);
	nvml_limits_put(c, "GPU-aaaa", &d);
	nvml_limits_close(c);
	char *now = read_text(cache_file);
	assert_non_null(strstr(now, "max_sm_clock_mhz=1,0,305"));
	free(now);
	/* a link planted at the name is not followed */
	unlink(cache_file);
	char *real = xasprintf("%s/elsewhere", root);
	write_text(real, text);
	assert_int_equal(symlink(real, cache_file), 0);
	c = nvml_limits_open("580.159.04");
	assert_false(nvml_limits_get(c, "GPU-aaaa", &d));
	nvml_limits_close(c);
	unlink(cache_file);
	free(real);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kept_for_the_same_boot_driver_and_gpu),
		cmocka_unit_test(test_another_driver_or_boot_is_not_believed),
		cmocka_unit_test(test_no_boot_id_or_home_caches_nothing),
		cmocka_unit_test(test_a_failed_call_is_never_kept),
		cmocka_unit_test(test_damaged_or_linked_file_is_ignored_and_rewritten),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
