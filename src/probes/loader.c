/*
 * The dynamic loader: LD_LIBRARY_PATH, /etc/ld.so.conf(.d), /etc/ld.so.cache; every copy of the
 * CUDA libraries on the loader's search paths and in the toolkits' library directories, with its
 * version; and which copy a plain dlopen("libX.so.N") picks (loader/loader.h simulates ld.so).
 * Bounded: a fixed list of directories, no recursion.
 *
 * Facts: loader.*  (core/factkeys.def, docs/facts.md)
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "loader/loader.h"
#include "probes/probes.h"

/* where the CUDA libraries are looked for: the source of what is counted over all of them */
#define LOADER_PLACES "LD_LIBRARY_PATH, /etc/ld.so.conf, the default directories, /etc/ld.so.cache, the toolkits' lib directories"
#include "toolkit/cudalibs.h"
#include "toolkit/toolkits.h"

static void add_dir(strlist *dirs, const char *d)
{
	if (d && d[0] == '/' && !sl_contains(dirs, d) && dirs->n < 512)
		sl_push(dirs, d);
}

/* "libcudart.so.12 (12.4.127), libcudnn.so.9 (9.1.0)": the CUDA libraries named in one directory */
static char *libs_in_dir(const cuda_libs *L, const char *dir, char **cudart_version)
{
	strbuf sb;
	sb_init(&sb);
	*cudart_version = NULL;
	for (size_t i = 0; i < L->n; i++) {
		const cuda_lib_copy *c = &L->v[i];
		for (size_t k = 0; k < c->names.n; k++) {
			char *d = path_dir(c->names.v[k]);
			bool here = strcmp(d, dir) == 0;
			free(d);
			if (!here)
				continue;
			char *so = cuda_lib_soname(c->lib, c->major);
			sb_addf(&sb, "%s%s (%s)", sb.len ? ", " : "", so, c->version ? c->version : "version unknown");
			free(so);
			if (strcmp(c->lib, "cudart") == 0 && c->version && !*cudart_version)
				*cudart_version = xstrdup(c->version);
			break;
		}
	}
	return sb_steal(&sb);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "libcublasLt.so, libcuda.so, libcuda.so.1": the libraries in a stubs directory, sorted */
static void stub_files(facts *f, const char *dir, const char *keyfmt, ...) GV_PRINTF(3, 4);
static void stub_files(facts *f, const char *dir, const char *keyfmt, ...)
{
	if (!loader_is_stubs_dir(dir))
		return;
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	strlist names = {0};
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen++ < 4096 && names.n < 64)
		if (str_starts(de->d_name, "lib") && strstr(de->d_name, ".so"))
			sl_push(&names, de->d_name);
	closedir(d);
	if (names.n)
		qsort(names.v, names.n, sizeof(char *), name_cmp);
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "");
	for (size_t k = 0; k < names.n; k++)
		sb_addf(&sb, "%s%s", k ? ", " : "", names.v[k]);
	char key[96];
	va_list ap;
	va_start(ap, keyfmt);
	vsnprintf(key, sizeof(key), keyfmt, ap);
	va_end(ap);
	facts_put_str(f, dir, sb.buf, "%s", key);
	sb_free(&sb);
	sl_free(&names);
}

/* A stub that a name outside any stubs directory points at (libcuda.so.1 -> .../stubs/libcuda.so,
 * a Dockerfile's link): programs load it by its soname, so the loader simulation must see it. */
static bool stub_linked_outside(const cuda_lib_copy *c)
{
	for (size_t k = 0; k < c->names.n; k++) {
		char *d = path_dir(c->names.v[k]);
		bool outside = !loader_is_stubs_dir(d);
		free(d);
		if (outside)
			return true;
	}
	return false;
}

void probe_loader(facts *f, const probe_opts *o)
{
	(void)o;
	loader_system sys;
	loader_system_load(&sys);
	if (sys.have_cache) {
		facts_put_str(f, "/etc/ld.so.cache", sys.cache.format, FK_LOADER_CACHE);
		facts_put_int(f, "/etc/ld.so.cache", (long long)sys.cache.n, FK_LOADER_CACHE_ENTRIES);
		/* the cache's entries for the CUDA libraries, for this host's ABI */
		int nc = 0;
		for (size_t i = 0; i < sys.cache.n && nc < 256; i++) {
			const ldcache_entry *ce = &sys.cache.v[i];
			if (!ldcache_entry_native(ce) || !cuda_lib_match(ce->soname))
				continue;
			facts_put_str(f, "/etc/ld.so.cache", ce->soname, FK_LOADER_CACHE_CUDA_SONAME(d), nc);
			facts_put_str(f, "/etc/ld.so.cache", ce->path, FK_LOADER_CACHE_CUDA_PATH(d), nc);
			facts_put_bool(f, ce->path, sysroot_exists(ce->path), FK_LOADER_CACHE_CUDA_EXISTS(d), nc);
			nc++;
		}
		facts_put_int(f, "/etc/ld.so.cache", nc, FK_LOADER_CACHE_CUDA_COUNT);
	} else {
		facts_put_state(f, FACT_ERROR, "/etc/ld.so.cache", sys.cache_error, FK_LOADER_CACHE);
	}
	facts_put_int(f, "/etc/ld.so.conf", (long long)sys.conf_dirs.n, FK_LOADER_CONF_COUNT);
	for (size_t i = 0; i < sys.conf_dirs.n; i++) {
		facts_put_str(f, "/etc/ld.so.conf", sys.conf_dirs.v[i], FK_LOADER_CONF_DIR(zu), i);
		stub_files(f, sys.conf_dirs.v[i], FK_LOADER_CONF_STUB_FILES(zu), i);
	}
	if (sys.conf_problems.n) {
		strbuf sb;
		sb_init(&sb);
		for (size_t i = 0; i < sys.conf_problems.n; i++)
			sb_addf(&sb, "%s%s", i ? "; " : "", sys.conf_problems.v[i]);
		facts_put_str(f, "/etc/ld.so.conf", sb.buf, FK_LOADER_CONF_PROBLEMS);
		sb_free(&sb);
	}

	/* LD_LIBRARY_PATH, its entries as paths of the examined machine */
	const char *llp = getenv("LD_LIBRARY_PATH");
	strlist ld_entries = {0};
	char *llp_machine = NULL;
	if (llp) {
		facts_put_str(f, "environment", llp, FK_LOADER_LD_LIBRARY_PATH);
		llp_machine = loader_split_path_machine(llp, &ld_entries);
	} else {
		facts_put_state(f, FACT_ABSENT, "environment", "LD_LIBRARY_PATH is not set", FK_LOADER_LD_LIBRARY_PATH);
	}

	/* where to look: the loader's directories and the toolkits' library directories */
	strlist dirs = {0};
	for (size_t i = 0; i < ld_entries.n; i++)
		add_dir(&dirs, ld_entries.v[i]);
	for (size_t i = 0; i < sys.conf_dirs.n; i++)
		add_dir(&dirs, sys.conf_dirs.v[i]);
	for (size_t i = 0; i < sys.default_dirs.n; i++)
		add_dir(&dirs, sys.default_dirs.v[i]);
	cuda_env env;
	cuda_env_scan(&env, false);
	for (size_t i = 0; i < env.n; i++)
		add_dir(&dirs, env.v[i].lib_dir);
	for (size_t i = 0; sys.have_cache && i < sys.cache.n; i++)
		if (cuda_lib_match(strrchr(sys.cache.v[i].path, '/') ? strrchr(sys.cache.v[i].path, '/') + 1 : "")) {
			char *d = path_dir(sys.cache.v[i].path);
			add_dir(&dirs, d);
			free(d);
		}
	cuda_libs L = {0};
	for (size_t i = 0; i < dirs.n; i++)
		cuda_libs_scan_dir(&L, dirs.v[i]);
	cuda_libs_versions(&L, !o->fast);
	cuda_libs_toolkit_versions(&L, &env);

	facts_put_int(f, "LD_LIBRARY_PATH", (long long)ld_entries.n, FK_LOADER_LD_LIBRARY_PATH_COUNT);
	for (size_t i = 0; i < ld_entries.n; i++) {
		const char *d = ld_entries.v[i];
		facts_put_str(f, "LD_LIBRARY_PATH", d, FK_LOADER_LD_LIBRARY_PATH_DIR(zu), i);
		facts_put_bool(f, d, d[0] == '/' && sysroot_is_dir(d), FK_LOADER_LD_LIBRARY_PATH_EXISTS(zu), i);
		stub_files(f, d, FK_LOADER_LD_LIBRARY_PATH_STUB_FILES(zu), i);
		char *cudart;
		char *libs = libs_in_dir(&L, d, &cudart);
		if (*libs)
			facts_put_str(f, d, libs, FK_LOADER_LD_LIBRARY_PATH_CUDA_LIBS(zu), i);
		if (cudart)
			facts_put_str(f, d, cudart, FK_LOADER_LD_LIBRARY_PATH_CUDART_VERSION(zu), i);
		free(libs);
		free(cudart);
	}

	facts_put_int(f, LOADER_PLACES, (long long)L.n, FK_LOADER_LIB_COUNT);
	for (size_t i = 0; i < L.n; i++) {
		const cuda_lib_copy *c = &L.v[i];
		facts_put_str(f, c->real, c->lib, FK_LOADER_LIB_NAME(zu), i);
		facts_put_str(f, c->names.n ? c->names.v[0] : NULL, c->real, FK_LOADER_LIB_PATH(zu), i);
		if (c->major >= 0)
			facts_put_int(f, c->real, c->major, FK_LOADER_LIB_MAJOR(zu), i);
		if (c->version) {
			facts_put_str(f, c->version_source, c->version, FK_LOADER_LIB_VERSION(zu), i);
			facts_put_str(f, c->real, c->version_source, FK_LOADER_LIB_VERSION_SOURCE(zu), i);
		} else {
			facts_put_state(f, FACT_ABSENT, c->real, "no version in the file name or a header beside it",
					FK_LOADER_LIB_VERSION(zu), i);
		}
		if (c->cuda_major > 0) {
			facts_put_int(f, c->cuda_major_source, c->cuda_major, FK_LOADER_LIB_CUDA_MAJOR(zu), i);
			facts_put_str(f, c->real, c->cuda_major_source, FK_LOADER_LIB_CUDA_MAJOR_SOURCE(zu), i);
		}
		strbuf sb;
		sb_init(&sb);
		for (size_t k = 0; k < c->names.n; k++)
			sb_addf(&sb, "%s%s", k ? ", " : "", c->names.v[k]);
		facts_put_str(f, c->real, sb.buf, FK_LOADER_LIB_NAMES(zu), i);
		sb_free(&sb);
		if (c->stub)
			facts_put_bool(f, c->real, true, FK_LOADER_LIB_STUB(zu), i);
	}

	/* what a plain dlopen("libX.so.N") picks, for every soname seen */
	loader_ctx ctx = {.sys = &sys, .ld_library_path = llp_machine};
	strlist sonames = {0};
	for (size_t i = 0; i < L.n; i++)
		if (L.v[i].major >= 0 && (!L.v[i].stub || stub_linked_outside(&L.v[i]))) {
			char *so = cuda_lib_soname(L.v[i].lib, L.v[i].major);
			if (!sl_contains(&sonames, so))
				sl_push(&sonames, so);
			free(so);
		}
	facts_put_int(f, "loader simulation", (long long)sonames.n, FK_LOADER_PICK_COUNT);
	for (size_t i = 0; i < sonames.n; i++) {
		loader_result r;
		facts_put_str(f, "loader simulation", sonames.v[i], FK_LOADER_PICK_SONAME(zu), i);
		const char *lib = cuda_lib_match(sonames.v[i]);
		if (lib)
			facts_put_str(f, "loader simulation", lib, FK_LOADER_PICK_NAME(zu), i);
		if (loader_resolve(sonames.v[i], &ctx, &r)) {
			facts_put_str(f, "loader simulation", r.path, FK_LOADER_PICK_PATH(zu), i);
			facts_put_str(f, "loader simulation", r.real[0] ? r.real : r.path, FK_LOADER_PICK_REAL(zu), i);
			facts_put_str(f, "loader simulation", loader_via_name(r.via), FK_LOADER_PICK_VIA(zu), i);
			const cuda_lib_copy *c = cuda_libs_find_real(&L, r.real);
			if (c) {
				facts_put_int(f, "loader simulation", (long long)(c - L.v), FK_LOADER_PICK_LIB(zu), i);
				if (c->version)
					facts_put_str(f, c->version_source, c->version, FK_LOADER_PICK_VERSION(zu), i);
			}
		} else {
			facts_put_state(f, FACT_ABSENT, "loader simulation", "not found on the loader's search path",
					FK_LOADER_PICK_PATH(zu), i);
		}
		if (r.cache_stale)
			facts_put_bool(f, "/etc/ld.so.cache", true, FK_LOADER_PICK_CACHE_STALE(zu), i);
	}
	sl_free(&sonames);
	cuda_libs_free(&L);
	cuda_env_free(&env);
	sl_free(&dirs);
	sl_free(&ld_entries);
	free(llp_machine);
	loader_system_free(&sys);
}

/* The child died in a library's version call: the same probe here, where no library is loaded
 * (cuda_libs_versions asks libraries only inside a child), so only those versions are missing. */
void probe_loader_failed(facts *f, const probe_opts *o, const gv_child_report *r)
{
	(void)r;
	probe_loader(f, o);
}
