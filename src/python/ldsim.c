#include "python/ldsim.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "python/binsrc.h"

#define CACHE_MAGIC "glibc-ld.so.cache1.1"
#define CACHE_MAX (64u << 20)

int ldcache_parse(const unsigned char *buf, size_t len, void (*fn)(const char *soname, const char *path, void *ctx),
		  void *ctx)
{
	size_t ml = strlen(CACHE_MAGIC);
	/* the new format starts the file, or follows an old-format ("ld.so-1.7.0") table */
	const unsigned char *start = NULL;
	if (len >= ml && memcmp(buf, CACHE_MAGIC, ml) == 0) {
		start = buf;
	} else {
		const unsigned char *hit = memmem(buf, len, CACHE_MAGIC, ml);
		if (hit)
			start = hit;
	}
	if (!start)
		return -1;
	size_t avail = len - (size_t)(start - buf);
	if (avail < 48)
		return -1;
	uint32_t nlibs = le32(start + 20);
	if (nlibs > (avail - 48) / 24)
		nlibs = (uint32_t)((avail - 48) / 24);
	int count = 0;
	for (uint32_t i = 0; i < nlibs; i++) {
		const unsigned char *e = start + 48 + (size_t)i * 24;
		int32_t flags = (int32_t)le32(e);
		uint32_t key = le32(e + 4), value = le32(e + 8);
		if (key >= avail || value >= avail)
			continue;
		/* 64-bit libraries carry an architecture flag in the high byte (0x0300 x86-64,
		 * 0x0a00 aarch64); plain 0x0003 entries are 32-bit ones of a multilib system */
		if ((flags & 0xff00) == 0)
			continue;
		const char *k = (const char *)start + key, *v = (const char *)start + value;
		if (!memchr(k, '\0', avail - key) || !memchr(v, '\0', avail - value))
			continue;
		if (fn)
			fn(k, v, ctx);
		count++;
	}
	return count;
}

struct cache_ctx {
	ldsim *s;
};

static void add_cache_entry(const char *soname, const char *path, void *ctx)
{
	ldsim *s = ((struct cache_ctx *)ctx)->s;
	if (s->cache_sonames.n >= 200000)
		return;
	sl_push(&s->cache_sonames, soname);
	sl_push(&s->cache_paths, path);
}

/* Reads an ld.so.conf file: directories, and "include GLOB" lines (bounded depth). */
static void read_conf(ldsim *s, const char *path, int depth)
{
	if (depth > 4)
		return;
	char *text = NULL;
	if (sysroot_read(path, 1 << 20, &text, NULL, NULL) < 0)
		return;
	strlist lines = {0};
	sl_split(&lines, text, "\n", false);
	free(text);
	for (size_t i = 0; i < lines.n; i++) {
		char *l = str_trim(lines.v[i]);
		char *hash = strchr(l, '#');
		if (hash)
			*hash = '\0';
		l = str_trim(l);
		size_t len = strlen(l);
		while (len && (l[len - 1] == ' ' || l[len - 1] == '\t' || l[len - 1] == '\r'))
			l[--len] = '\0';
		if (!*l)
			continue;
		if (str_starts(l, "include") && (l[7] == ' ' || l[7] == '\t')) {
			char *pat = str_trim(l + 8);
			char *full = pat[0] == '/' ? xstrdup(pat) : NULL;
			if (!full) { /* relative to the including file's directory */
				const char *slash = strrchr(path, '/');
				full = xasprintf("%.*s/%s", (int)(slash ? slash - path : 0), path, pat);
			}
			char *slash = strrchr(full, '/');
			*slash = '\0';
			const char *dir = *full ? full : "/";
			const char *glob = slash + 1;
			DIR *d = sysroot_opendir(dir);
			if (d) {
				strlist names = {0};
				struct dirent *de;
				while ((de = readdir(d)) && names.n < 1024)
					if (de->d_name[0] != '.' && fnmatch(glob, de->d_name, 0) == 0)
						sl_push(&names, de->d_name);
				closedir(d);
				/* glibc sorts the glob results */
				for (size_t a = 1; a < names.n; a++)
					for (size_t b = a; b > 0 && strcmp(names.v[b - 1], names.v[b]) > 0; b--) {
						char *t = names.v[b];
						names.v[b] = names.v[b - 1];
						names.v[b - 1] = t;
					}
				for (size_t a = 0; a < names.n; a++) {
					char *sub = xasprintf("%s/%s", dir, names.v[a]);
					read_conf(s, sub, depth + 1);
					free(sub);
				}
				sl_free(&names);
			}
			free(full);
		} else if (l[0] == '/' && !sl_contains(&s->conf_dirs, l) && s->conf_dirs.n < 256) {
			sl_push(&s->conf_dirs, l);
		}
	}
	sl_free(&lines);
}

void ldsim_init(ldsim *s, const char *ld_library_path)
{
	memset(s, 0, sizeof(*s));
	if (ld_library_path) {
		strlist parts = {0};
		sl_split(&parts, ld_library_path, ":;", false);
		for (size_t i = 0; i < parts.n && s->ld_library_path.n < 64; i++) {
			const char *d = sysroot_strip(parts.v[i]); /* tests may give paths inside the root tree */
			if (d[0] == '/' && !sl_contains(&s->ld_library_path, d))
				sl_push(&s->ld_library_path, d);
		}
		sl_free(&parts);
	}
	char *cache = NULL;
	size_t len = 0;
	if (sysroot_read("/etc/ld.so.cache", CACHE_MAX, &cache, &len, NULL) == 0) {
		struct cache_ctx c = {s};
		s->have_cache = ldcache_parse((const unsigned char *)cache, len, add_cache_entry, &c) >= 0;
		free(cache);
	}
	read_conf(s, "/etc/ld.so.conf", 0);
	static const char *const defaults[] = {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
					       "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					       "/lib64", "/usr/lib64", "/lib", "/usr/lib"};
	for (size_t i = 0; i < GV_ARRAY_LEN(defaults); i++)
		sl_push(&s->default_dirs, defaults[i]);
}

void ldsim_free(ldsim *s)
{
	sl_free(&s->ld_library_path);
	sl_free(&s->cache_sonames);
	sl_free(&s->cache_paths);
	sl_free(&s->conf_dirs);
	sl_free(&s->default_dirs);
}

void ldsim_expand_path(const char *value, const char *origin, strlist *dirs)
{
	strlist parts = {0};
	sl_split(&parts, value ? value : "", ":", false);
	for (size_t i = 0; i < parts.n && dirs->n < 64; i++) {
		strbuf sb;
		sb_init(&sb);
		for (const char *p = parts.v[i]; *p;) {
			if (str_starts(p, "$ORIGIN")) {
				sb_add(&sb, origin);
				p += 7;
			} else if (str_starts(p, "${ORIGIN}")) {
				sb_add(&sb, origin);
				p += 9;
			} else if (str_starts(p, "$LIB") || str_starts(p, "${LIB}")) {
				sb_add(&sb, "lib64");
				p += p[1] == '{' ? 6 : 4;
			} else {
				sb_addc(&sb, *p++);
			}
		}
		char *d = sb_steal(&sb);
		/* normalise "a/b/../../c" lexically, as the loader resolves them through the file system */
		strlist comps = {0}, out = {0};
		sl_split(&comps, d, "/", false);
		for (size_t c = 0; c < comps.n; c++) {
			if (strcmp(comps.v[c], ".") == 0)
				continue;
			if (strcmp(comps.v[c], "..") == 0) {
				if (out.n)
					free(out.v[--out.n]);
				continue;
			}
			sl_push(&out, comps.v[c]);
		}
		strbuf nb;
		sb_init(&nb);
		for (size_t c = 0; c < out.n; c++) {
			sb_addc(&nb, '/');
			sb_add(&nb, out.v[c]);
		}
		if (!nb.len)
			sb_addc(&nb, '/');
		if (d[0] == '/' && !sl_contains(dirs, nb.buf))
			sl_push(dirs, nb.buf);
		sb_free(&nb);
		sl_free(&comps);
		sl_free(&out);
		free(d);
	}
	sl_free(&parts);
}

static void push_hit(ld_hit **v, size_t *n, const char *path, const char *via)
{
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].path, path) == 0)
			return;
	*v = xrealloc(*v, (*n + 1) * sizeof(**v));
	(*v)[*n].path = xstrdup(path);
	(*v)[*n].via = via;
	(*n)++;
}

static void search_dirs(const strlist *dirs, const char *soname, const char *via, ld_hit **v, size_t *n)
{
	for (size_t i = 0; dirs && i < dirs->n; i++) {
		char *p = xasprintf("%s/%s", strcmp(dirs->v[i], "/") == 0 ? "" : dirs->v[i], soname);
		struct stat st;
		if (sysroot_stat(p, &st) == 0 && S_ISREG(st.st_mode))
			push_hit(v, n, p, via);
		free(p);
	}
}

size_t ldsim_search(const ldsim *s, const char *soname, const strlist *rpath, const strlist *runpath, ld_hit **hits)
{
	ld_hit *v = NULL;
	size_t n = 0;
	bool has_runpath = runpath && runpath->n;
	if (!has_runpath)
		search_dirs(rpath, soname, "RPATH", &v, &n);
	search_dirs(&s->ld_library_path, soname, "LD_LIBRARY_PATH", &v, &n);
	if (has_runpath)
		search_dirs(runpath, soname, "RUNPATH", &v, &n);
	if (s->have_cache) {
		for (size_t i = 0; i < s->cache_sonames.n; i++)
			if (strcmp(s->cache_sonames.v[i], soname) == 0 && sysroot_exists(s->cache_paths.v[i]))
				push_hit(&v, &n, s->cache_paths.v[i], "ld.so.cache");
	} else {
		search_dirs(&s->conf_dirs, soname, "ld.so.conf", &v, &n);
	}
	search_dirs(&s->default_dirs, soname, "default", &v, &n);
	*hits = v;
	return n;
}

void ldsim_hits_free(ld_hit *hits, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hits[i].path);
	free(hits);
}
