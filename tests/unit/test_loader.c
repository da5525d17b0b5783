/* Unit tests of the ELF reader, the ld.so.cache and ld.so.conf parsers and the loader search. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#define _XOPEN_SOURCE_EXTENDED 1
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "elf/elf.h"
#include "loader/loader.h"
#include "toolkit/libscan.h"
#include "toolkit/toolkits.h"
#include "../tools/test_tmp.h"

/* The seed inputs in tests/fuzz/corpus (written by tests/fuzz/gen_loader_seeds.py). */
static unsigned char *seed(const char *name, size_t *len)
{
	const char *src = getenv("GPUVET_SOURCE_DIR");
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/%s", src ? src : ".", name);
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	unsigned char *buf = malloc(1 << 16);
	*len = fread(buf, 1, 1 << 16, f);
	fclose(f);
	return buf;
}

static void test_ldcache_new(void **s)
{
	(void)s;
	size_t len;
	unsigned char *d = seed("ldcache/new.cache", &len);
	ldcache c;
	const char *err = NULL;
	assert_int_equal(ldcache_parse(d, len, &c, &err), 0);
	assert_string_equal(c.format, "new");
	assert_int_equal(c.n, 4);
	const ldcache_entry *e = ldcache_lookup(&c, "libcudart.so.13");
	assert_non_null(e);
	assert_string_equal(e->path, "/usr/local/cuda-13.0/lib/libcudart.so.13");
#if defined(__x86_64__)
	assert_null(ldcache_lookup(&c, "libcudart.so.12")); /* a 32-bit entry: not for us */
#endif
	assert_null(ldcache_lookup(&c, "libnope.so.1"));
	ldcache_free(&c);
	/* every truncation: an error or fewer entries, never a crash */
	for (size_t n = 0; n < len; n++) {
		if (ldcache_parse(d, n, &c, &err) == 0)
			assert_true(c.n <= 4);
		ldcache_free(&c);
	}
	free(d);
}

static void test_ldcache_old_and_hostile(void **s)
{
	(void)s;
	size_t len;
	ldcache c;
	const char *err = NULL;
	unsigned char *d = seed("ldcache/old-new.cache", &len);
	assert_int_equal(ldcache_parse(d, len, &c, &err), 0);
	assert_string_equal(c.format, "old+new");
	assert_int_equal(c.n, 4);
	assert_non_null(ldcache_lookup(&c, "libcudnn.so.9"));
	ldcache_free(&c);
	free(d);
	d = seed("ldcache/huge-nlibs.cache", &len);
	assert_int_equal(ldcache_parse(d, len, &c, &err), -1);
	assert_non_null(strstr(err, "truncated"));
	ldcache_free(&c);
	free(d);
	d = seed("ldcache/bad-offset.cache", &len);
	assert_int_equal(ldcache_parse(d, len, &c, &err), 0);
	assert_int_equal(c.n, 3); /* the entry whose name lies outside the file is dropped */
	ldcache_free(&c);
	free(d);
	assert_int_equal(ldcache_parse("garbage garbage garbage garbage garbage garbage", 48, &c, &err), -1);
	assert_int_equal(ldcache_parse(NULL, 0, &c, &err), -1);
}

static void test_ldconf_text(void **s)
{
	(void)s;
	size_t len;
	unsigned char *d = seed("ldconf/dirs.conf", &len);
	strlist dirs = {0}, inc = {0};
	ldconf_parse_text((const char *)d, len, &dirs, &inc);
	assert_int_equal(dirs.n, 2);
	assert_string_equal(dirs.v[0], "/usr/local/cuda-12.4/lib64");
	assert_string_equal(dirs.v[1], "/opt/x");
	assert_int_equal(inc.n, 2);
	assert_string_equal(inc.v[0], "a.conf");
	assert_string_equal(inc.v[1], "b/*.conf");
	sl_free(&dirs);
	sl_free(&inc);
	free(d);
}

/* ---- a temporary root ---- */

static char tmproot[PATH_MAX];

static void put(const char *abs, const void *data, size_t n)
{
	char p[PATH_MAX], dir[PATH_MAX];
	snprintf(p, sizeof(p), "%s%s", tmproot, abs);
	str_copy(dir, sizeof(dir), p);
	for (char *q = dir + strlen(tmproot) + 1; (q = strchr(q, '/')); q++) {
		*q = '\0';
		mkdir(dir, 0755);
		*q = '/';
	}
	FILE *f = fopen(p, "wb");
	assert_non_null(f);
	fwrite(data, 1, n, f);
	fclose(f);
}

static void put_text(const char *abs, const char *text)
{
	put(abs, text, strlen(text));
}

static void link_at(const char *target, const char *abs)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s%s", tmproot, abs);
	assert_int_equal(symlink(target, p), 0);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static int root_setup(void **s)
{
	(void)s;
	test_tmp_path(tmproot, sizeof(tmproot), "gpuvet-loader-XXXXXX");
	if (!mkdtemp(tmproot))
		return -1;
	sysroot_set(tmproot);
	return 0;
}

static int root_teardown(void **s)
{
	(void)s;
	sysroot_set(NULL);
	nftw(tmproot, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

static void test_ldconf_includes(void **s)
{
	(void)s;
	put_text("/etc/ld.so.conf", "include /etc/ld.so.conf.d/*.conf\n/usr/local/lib\n");
	put_text("/etc/ld.so.conf.d/a.conf", "/usr/local/cuda-12.4/lib64\ninclude sub/*.conf\n");
	put_text("/etc/ld.so.conf.d/sub/x.conf", "/opt/x/lib\ninclude /etc/ld.so.conf\n"); /* a loop */
	put_text("/etc/ld.so.conf.d/b.conf", "/usr/local/cuda-12.4/lib64/\n");
	strlist dirs = {0}, problems = {0};
	assert_int_equal(ldconf_load(NULL, &dirs, &problems), 3);
	assert_string_equal(dirs.v[0], "/usr/local/cuda-12.4/lib64");
	assert_string_equal(dirs.v[1], "/opt/x/lib");
	assert_string_equal(dirs.v[2], "/usr/local/lib");
	assert_true(problems.n >= 1);
	assert_non_null(strstr(problems.v[0], "loop"));
	sl_free(&dirs);
	sl_free(&problems);
	assert_int_equal(ldconf_load("/etc/missing.conf", &dirs, NULL), -1);
	sl_free(&dirs);
}

static void test_elf_minimal(void **s)
{
	(void)s;
	size_t len;
	unsigned char *d = seed("elf/minimal.so", &len);
	const char *err = NULL;
	elf_image *img = elf_open_mem(d, len, &err);
	assert_non_null(img);
	assert_int_equal(elf_machine(img), 62);
	assert_int_equal(elf_type(img), 3);
	elf_dyn dyn;
	assert_int_equal(elf_read_dynamic(img, &dyn, &err), 0);
	assert_string_equal(dyn.soname, "libfoo.so.1");
	assert_int_equal(dyn.needed.n, 2);
	assert_string_equal(dyn.needed.v[0], "libcudart.so.13");
	assert_string_equal(dyn.needed.v[1], "libc.so.6");
	assert_string_equal(dyn.runpath, "$ORIGIN/../nvidia/cudnn/lib:$ORIGIN");
	assert_null(dyn.rpath);
	elf_dyn_free(&dyn);
	uint64_t off, sz;
	assert_true(elf_find_section(img, ".nv_fatbin", &off, &sz));
	assert_int_equal(sz, 16);
	unsigned char magic[4];
	assert_int_equal(elf_read_at(img, off, magic, 4), 4);
	assert_int_equal(magic[0], 0x50);
	assert_int_equal(magic[3], 0xba);
	assert_false(elf_find_section(img, ".nv_fat", &off, &sz)); /* a prefix is not a match */
	assert_false(elf_find_section(img, ".text", &off, &sz));
	elf_close(img);
	/* every truncation and every single-byte corruption: no crash */
	for (size_t n = 0; n < len; n++) {
		img = elf_open_mem(d, n, &err);
		if (img && elf_read_dynamic(img, &dyn, &err) == 0)
			elf_dyn_free(&dyn);
		if (img)
			(void)elf_find_section(img, ".nv_fatbin", &off, &sz);
		elf_close(img);
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char saved = d[i];
		d[i] ^= 0xff;
		img = elf_open_mem(d, len, &err);
		if (img && elf_read_dynamic(img, &dyn, &err) == 0)
			elf_dyn_free(&dyn);
		if (img)
			(void)elf_find_section(img, ".nv_fatbin", &off, &sz);
		elf_close(img);
		d[i] = saved;
	}
	free(d);
	assert_null(elf_open_mem("not an elf file at all, just some text padding it out......", 60, &err));
	assert_string_equal(err, "not an ELF file");
}

static void test_elf_file_and_rpath(void **s)
{
	(void)s;
	size_t len;
	unsigned char *d = seed("elf/rpath.so", &len);
	put("/opt/lib/librp.so", d, len);
	const char *err = NULL;
	elf_image *img = elf_open_file("/opt/lib/librp.so", &err);
	assert_non_null(img);
	elf_dyn dyn;
	assert_int_equal(elf_read_dynamic(img, &dyn, &err), 0);
	assert_null(dyn.soname);
	assert_null(dyn.runpath);
	assert_string_equal(dyn.rpath, "/opt/rp:$ORIGIN/lib");
	assert_string_equal(dyn.needed.v[0], "libnccl.so.2");
	elf_dyn_free(&dyn);
	elf_close(img);
	free(d);
	assert_null(elf_open_file("/opt/lib/missing.so", &err));
	assert_null(elf_open_file("/opt/lib", &err));
}

static void test_expand(void **s)
{
	(void)s;
	char *e = loader_expand("$ORIGIN/../lib:${ORIGIN}/x", "/o", NULL);
	assert_string_equal(e, "/o/../lib:/o/x");
	free(e);
	e = loader_expand("$ORIGINAL/x", "/o", NULL);
	assert_string_equal(e, "$ORIGINAL/x");
	free(e);
	assert_null(loader_expand("$ORIGIN/x", NULL, NULL));
	strlist l = {0};
	loader_split_path("/a::/b;/c:", &l);
	assert_int_equal(l.n, 5);
	assert_string_equal(l.v[1], ".");
	assert_string_equal(l.v[3], "/c");
	sl_free(&l);
}

/* LD_LIBRARY_PATH names host paths; with --root, an entry below the root is the examined
 * machine's directory (the prefix goes), one outside it stays as written, an empty one is ".". */
static void test_split_path_machine(void **s)
{
	(void)s;
	assert_null(loader_split_path_machine(NULL, NULL));
	char *llp = xasprintf("%s/usr/lib64::/opt/x;%s", tmproot, tmproot);
	strlist l = {0};
	sl_push(&l, "kept");
	char *joined = loader_split_path_machine(llp, &l);
	assert_string_equal(joined, "/usr/lib64:.:/opt/x:/");
	assert_int_equal(l.n, 5);
	assert_string_equal(l.v[0], "kept");
	assert_string_equal(l.v[1], "/usr/lib64");
	assert_string_equal(l.v[2], ".");
	assert_string_equal(l.v[3], "/opt/x");
	free(joined);
	free(llp);
	sl_free(&l);
}

static void test_resolve(void **s)
{
	(void)s;
	size_t len;
	unsigned char *elf = seed("elf/minimal.so", &len);
	unsigned char *cache = seed("ldcache/new.cache", &len);
	put("/etc/ld.so.cache", cache, len);
	free(cache);
	put_text("/etc/ld.so.conf", "/usr/local/cuda-13.0/lib\n");
	put("/usr/local/cuda-13.0/lib/libcudnn.so.9.19.0", elf, len);
	link_at("libcudnn.so.9.19.0", "/usr/local/cuda-13.0/lib/libcudnn.so.9");
	put("/home/u/venv/nvidia/cudnn/lib/libcudnn.so.9", elf, len);
	put("/home/u/venv/torch/lib/libtorch_cuda.so", elf, len);
	put("/usr/lib/x86_64-linux-gnu/libcudart.so.13", elf, len);
	put_text("/opt/old/lib64/libcudnn.so.9", "not an elf");
	/* a 32-bit ELF in the first LD_LIBRARY_PATH entry: ld.so skips it */
	unsigned char elf32[64] = {0x7f, 'E', 'L', 'F', 1, 1, 1};
	put("/opt/lib32/libcudnn.so.9", elf32, sizeof(elf32));

	loader_system sys;
	loader_system_load(&sys);
	assert_true(sys.have_cache);
	assert_int_equal(sys.conf_dirs.n, 1);
	loader_result r;
	loader_ctx ctx = {.sys = &sys};
	/* the cache */
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_CACHE);
	assert_string_equal(r.path, "/usr/local/cuda-13.0/lib/libcudnn.so.9");
	assert_string_equal(r.real, "/usr/local/cuda-13.0/lib/libcudnn.so.9.19.0");
	assert_true(r.native);
	/* a stale cache entry (libcudart listed under cuda-13.0, file gone): the default directory */
	assert_true(loader_resolve("libcudart.so.13", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_DEFAULT);
	assert_true(r.cache_stale);
	assert_string_equal(r.path, "/usr/lib/x86_64-linux-gnu/libcudart.so.13");
	/* LD_LIBRARY_PATH wins over the cache, foreign ELF skipped, non-ELF taken */
	ctx.ld_library_path = "/opt/lib32:/nonexistent:/opt/old/lib64";
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_LD_LIBRARY_PATH);
	assert_string_equal(r.path, "/opt/old/lib64/libcudnn.so.9");
	assert_int_equal(r.skipped_foreign, 1);
	assert_false(r.native);
	/* torch's RUNPATH comes after LD_LIBRARY_PATH; its RPATH would come before */
	ctx.origin = "/home/u/venv/torch/lib";
	ctx.runpath = "$ORIGIN/../../nvidia/cudnn/lib";
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_LD_LIBRARY_PATH);
	ctx.ld_library_path = NULL;
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_RUNPATH);
	assert_string_equal(r.real, "/home/u/venv/nvidia/cudnn/lib/libcudnn.so.9");
	ctx.ld_library_path = "/opt/old/lib64";
	ctx.rpath = ctx.runpath;
	ctx.runpath = NULL;
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_RPATH);
	/* RPATH is ignored when RUNPATH exists */
	ctx.runpath = "/nonexistent";
	assert_true(loader_resolve("libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_LD_LIBRARY_PATH);
	/* not found; a name with a slash */
	assert_false(loader_resolve("libnope.so.1", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_NONE);
	assert_true(loader_resolve("/opt/old/lib64/libcudnn.so.9", &ctx, &r));
	assert_int_equal(r.via, LOADER_VIA_SLASH);
	/* no system: built-in directories only */
	assert_true(loader_resolve("libcudart.so.13", NULL, &r));
	assert_int_equal(r.via, LOADER_VIA_DEFAULT);
	loader_system_free(&sys);
	free(elf);
}

static void test_resolve_hostile_root(void **s)
{
	(void)s;
	/* a looping symlink, a dangling one and garbage in place of the cache */
	put_text("/etc/ld.so.cache", "glibc-ld.so.cache1.1 but then nothing sensible follows here at all....");
	put_text("/usr/lib/placeholder", "");
	link_at("libloop.so.1", "/usr/lib/libloop.so.1");
	link_at("/nowhere/libdangle.so.1", "/usr/lib/libdangle.so.1");
	loader_system sys;
	loader_system_load(&sys);
	assert_false(sys.have_cache);
	assert_non_null(sys.cache_error);
	loader_ctx ctx = {.sys = &sys};
	loader_result r;
	assert_false(loader_resolve("libloop.so.1", &ctx, &r));
	assert_false(loader_resolve("libdangle.so.1", &ctx, &r));
	loader_system_free(&sys);
}


static void test_libscan_limits(void **s)
{
	(void)s;
	put_text("/opt/a/b/c/d/libcudart.so.12.4.127", "x");
	put_text("/opt/a/libcudnn.so.9.1.0", "x");
	for (int i = 0; i < 50; i++) {
		char p[64];
		snprintf(p, sizeof(p), "/many/f%d", i);
		put_text(p, "x");
	}
	link_at("/opt/a", "/opt/a/b/up"); /* a directory link loop: not followed */
	/* outside the default places (a data disk) and in container storage: walked only when asked */
	put_text("/data/old/libcudart.so.11.0.221", "x");
	put_text("/var/lib/docker/overlay2/x/libcudart.so.11.8.89", "x");
	libscan_opts o;
	libscan_defaults(&o);
	libscan_result r;
	libscan_run(NULL, &o, &r);
	assert_false(r.truncated);
	assert_int_equal(r.libs.n, 2);
	libscan_free(&r);
	o.max_depth = 1; /* /opt/a is depth 1: /opt/a/b/c/d is not entered */
	libscan_run(NULL, &o, &r);
	assert_int_equal(r.libs.n, 1);
	assert_string_equal(r.limit_hit, "depth");
	libscan_free(&r);
	libscan_defaults(&o);
	strlist all = {0};
	sl_push(&all, "/");
	libscan_run(&all, &o, &r); /* the whole disk: /data too, never the container storage */
	assert_int_equal(r.libs.n, 3);
	libscan_free(&r);
	sl_free(&all);
	sl_push(&all, "/var/lib/docker"); /* given: walked */
	libscan_run(&all, &o, &r);
	assert_int_equal(r.libs.n, 1);
	libscan_free(&r);
	sl_free(&all);
	o.max_entries = 10;
	strlist starts = {0};
	sl_push(&starts, "/many");
	libscan_run(&starts, &o, &r);
	assert_true(r.truncated);
	assert_string_equal(r.limit_hit, "entries");
	assert_true(r.entries <= 10);
	libscan_free(&r);
	sl_free(&starts);
}

static void test_cuda_env(void **s)
{
	(void)s;
	put_text("/usr/local/cuda-12.4/version.json", "{\"cuda\": {\"version\": \"12.4.1\"}}");
	put_text("/usr/local/cuda-11.8/version.txt", "CUDA Version 11.8.89\n");
	put_text("/usr/local/cuda-11.8/bin/nvcc", "#!/bin/sh\n");
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/usr/local/cuda-11.8/bin/nvcc", tmproot);
	chmod(p, 0755);
	put_text("/usr/local/cuda-empty/README", "nothing CUDA here\n");
	link_at("cuda-12.4", "/usr/local/cuda");
	/* the test's own environment must not leak in */
	setenv("PATH", "/usr/bin:/bin", 1);
	unsetenv("CUDA_HOME");
	unsetenv("CUDA_PATH");
	unsetenv("CONDA_PREFIX");
	cuda_env e;
	cuda_env_scan(&e, false);
	assert_int_equal(e.n, 2);
	assert_string_equal(e.v[0].root, "/usr/local/cuda-11.8");
	assert_string_equal(e.v[0].version, "11.8.89");
	assert_non_null(e.v[0].nvcc);
	assert_string_equal(e.v[1].version, "12.4.1");
	assert_null(e.v[1].nvcc);
	assert_int_equal(e.usr_local_cuda, LINK_OK);
	assert_int_equal(e.usr_local_cuda_install, 1);
	assert_int_equal(cuda_env_find_version(&e, "12.4"), 1);
	assert_int_equal(cuda_env_find_version(&e, "12"), 1);
	assert_int_equal(cuda_env_find_version(&e, "12.40"), -1);
	assert_int_equal(cuda_env_active(&e), 1);
	cuda_env_free(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ldcache_new),
		cmocka_unit_test(test_ldcache_old_and_hostile),
		cmocka_unit_test(test_ldconf_text),
		cmocka_unit_test(test_elf_minimal),
		cmocka_unit_test(test_expand),
		cmocka_unit_test_setup_teardown(test_ldconf_includes, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_elf_file_and_rpath, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_resolve, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_split_path_machine, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_resolve_hostile_root, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_libscan_limits, root_setup, root_teardown),
		cmocka_unit_test_setup_teardown(test_cuda_env, root_setup, root_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
