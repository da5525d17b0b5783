#include "python/ldsim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/sysroot.h"

void ldsim_init(ldsim *s, const char *ld_library_path)
{
	memset(s, 0, sizeof(*s));
	loader_system_load(&s->sys);
	if (ld_library_path) {
		/* tests may give paths inside the --root tree: map them to the examined machine */
		strlist parts = {0};
		loader_split_path(ld_library_path, &parts);
		strbuf sb;
		sb_init(&sb);
		for (size_t i = 0; i < parts.n; i++) {
			if (i)
				sb_addc(&sb, ':');
			sb_add(&sb, sysroot_strip(parts.v[i]));
		}
		s->ld_library_path = sb_steal(&sb);
		sl_free(&parts);
	}
}

void ldsim_free(ldsim *s)
{
	loader_system_free(&s->sys);
	free(s->ld_library_path);
	memset(s, 0, sizeof(*s));
}

void ldsim_expand_path(const ldsim *s, const char *value, const char *origin, strlist *dirs)
{
	strlist parts = {0};
	loader_split_path(value ? value : "", &parts);
	for (size_t i = 0; i < parts.n && dirs->n < 64; i++) {
		char *e = loader_expand(parts.v[i], origin, s ? &s->sys : NULL);
		if (e && e[0] == '/') {
			char *d = path_fold(e);
			if (!sl_contains(dirs, d))
				sl_push(dirs, d);
			free(d);
		}
		free(e);
	}
	sl_free(&parts);
}

/* Adds a copy unless the same file is already listed (under any name: "a/../b", /lib -> /usr/lib). */
static void push_hit(ld_hit **v, size_t *n, const char *path, const char *via)
{
	char *p = path_fold(path);
	char *real = sysroot_realpath(p);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].path, p) == 0 || (real && (*v)[i].real && strcmp((*v)[i].real, real) == 0)) {
			free(p);
			free(real);
			return;
		}
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].path = p;
	(*v)[*n].real = real;
	(*v)[*n].via = via;
	(*n)++;
}

static void search_dirs(const strlist *dirs, const char *soname, const char *via, ld_hit **v, size_t *n)
{
	for (size_t i = 0; i < dirs->n; i++) {
		char *p = xasprintf("%s/%s", strcmp(dirs->v[i], "/") == 0 ? "" : dirs->v[i], soname);
		struct stat st;
		if (sysroot_stat(p, &st) == 0 && S_ISREG(st.st_mode))
			push_hit(v, n, p, via);
		free(p);
	}
}

static const char *via_label(loader_via v)
{
	switch (v) {
	case LOADER_VIA_RPATH: return "RPATH";
	case LOADER_VIA_LD_LIBRARY_PATH: return "LD_LIBRARY_PATH";
	case LOADER_VIA_RUNPATH: return "RUNPATH";
	case LOADER_VIA_CACHE: return "ld.so.cache";
	case LOADER_VIA_DEFAULT: return "default directory";
	default: return "path";
	}
}

size_t ldsim_search(const ldsim *s, const char *soname, const char *origin, const char *rpath, const char *runpath,
		    ld_hit **hits)
{
	ld_hit *v = NULL;
	size_t n = 0;
	bool has_runpath = runpath && *runpath;
	/* the pick: the toolkit layer's model of ld.so (it skips foreign ELF classes, stale cache entries) */
	loader_ctx ctx = {&s->sys, s->ld_library_path, origin, rpath, runpath};
	loader_result r;
	if (loader_resolve(soname, &ctx, &r))
		push_hit(&v, &n, r.path, via_label(r.via));
	/* then every other copy on the same search path */
	strlist dirs = {0};
	if (!has_runpath && rpath) {
		ldsim_expand_path(s, rpath, origin, &dirs);
		search_dirs(&dirs, soname, "RPATH", &v, &n);
		sl_free(&dirs);
	}
	if (s->ld_library_path) {
		ldsim_expand_path(s, s->ld_library_path, origin, &dirs);
		search_dirs(&dirs, soname, "LD_LIBRARY_PATH", &v, &n);
		sl_free(&dirs);
	}
	if (has_runpath) {
		ldsim_expand_path(s, runpath, origin, &dirs);
		search_dirs(&dirs, soname, "RUNPATH", &v, &n);
		sl_free(&dirs);
	}
	if (s->sys.have_cache)
		for (size_t i = 0; i < s->sys.cache.n; i++) {
			const ldcache_entry *e = &s->sys.cache.v[i];
			if (strcmp(e->soname, soname) == 0 && ldcache_entry_native(e) && sysroot_exists(e->path))
				push_hit(&v, &n, e->path, "ld.so.cache");
		}
	search_dirs(&s->sys.default_dirs, soname, "default directory", &v, &n);
	*hits = v;
	return n;
}

void ldsim_hits_free(ld_hit *hits, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(hits[i].path);
		free(hits[i].real);
	}
	free(hits);
}
