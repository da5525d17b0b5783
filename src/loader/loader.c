/* The search of ld.so (glibc elf/dl-load.c _dl_map_object), simulated; see loader.h. */
#include "loader/loader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/sysroot.h"
#include "elf/elf.h"

#define MAX_PATH_ENTRIES 256

static const char *host_triplet(void)
{
#if defined(__x86_64__)
	return "x86_64-linux-gnu";
#elif defined(__aarch64__)
	return "aarch64-linux-gnu";
#elif defined(__powerpc64__)
	return "powerpc64le-linux-gnu";
#else
	return "";
#endif
}

static const char *host_platform(void)
{
#if defined(__x86_64__)
	return "x86_64";
#elif defined(__aarch64__)
	return "aarch64";
#elif defined(__powerpc64__)
	return "power9";
#else
	return "";
#endif
}

void loader_system_load(loader_system *s)
{
	memset(s, 0, sizeof(*s));
	str_copy(s->triplet, sizeof(s->triplet), host_triplet());
	const char *err = NULL;
	if (ldcache_load("/etc/ld.so.cache", &s->cache, &err) == 0)
		s->have_cache = true;
	else
		s->cache_error = err;
	ldconf_load("/etc/ld.so.conf", &s->conf_dirs, &s->conf_problems);
	/* ld.so's trusted directories: Debian/Ubuntu build glibc with the multiarch ones first;
	 * Fedora/RHEL with /lib64 and /usr/lib64. Directories that do not exist cost nothing. */
	if (s->triplet[0]) {
		sl_pushf(&s->default_dirs, "/lib/%s", s->triplet);
		sl_pushf(&s->default_dirs, "/usr/lib/%s", s->triplet);
	}
	sl_push(&s->default_dirs, "/lib64");
	sl_push(&s->default_dirs, "/usr/lib64");
	sl_push(&s->default_dirs, "/lib");
	sl_push(&s->default_dirs, "/usr/lib");
}

void loader_system_free(loader_system *s)
{
	if (!s)
		return;
	ldcache_free(&s->cache);
	sl_free(&s->conf_dirs);
	sl_free(&s->conf_problems);
	sl_free(&s->default_dirs);
	memset(s, 0, sizeof(*s));
}

const char *loader_via_name(loader_via v)
{
	switch (v) {
	case LOADER_VIA_SLASH:
		return "path";
	case LOADER_VIA_RPATH:
		return "rpath";
	case LOADER_VIA_LD_LIBRARY_PATH:
		return "LD_LIBRARY_PATH";
	case LOADER_VIA_RUNPATH:
		return "runpath";
	case LOADER_VIA_CACHE:
		return "ld.so.cache";
	case LOADER_VIA_DEFAULT:
		return "default directory";
	default:
		return "not found";
	}
}

void loader_split_path(const char *path, strlist *out)
{
	if (!path)
		return;
	const char *p = path;
	for (;;) {
		size_t n = strcspn(p, ":;");
		if (out->n >= MAX_PATH_ENTRIES)
			return;
		if (n == 0)
			sl_push(out, ".");
		else
			sl_push_owned(out, xstrndup(p, n));
		if (!p[n])
			return;
		p += n + 1;
	}
}

char *loader_split_path_machine(const char *path, strlist *out)
{
	if (!path)
		return NULL;
	strlist raw = {0};
	loader_split_path(path, &raw);
	strbuf sb;
	sb_init(&sb);
	for (size_t i = 0; i < raw.n; i++) {
		const char *e = strcmp(raw.v[i], ".") == 0 ? "." : sysroot_strip(raw.v[i]);
		sl_push(out, e);
		sb_addf(&sb, "%s%s", i ? ":" : "", e);
	}
	sl_free(&raw);
	return sb_steal(&sb);
}

/* Matches "$NAME" or "${NAME}" at s; returns the length consumed, 0 when not it. */
static size_t match_var(const char *s, const char *name)
{
	size_t n = strlen(name);
	if (s[0] != '$')
		return 0;
	if (strncmp(s + 1, name, n) == 0) {
		char c = s[1 + n];
		/* "$ORIGINAL" is not $ORIGIN */
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')
			return 0;
		return 1 + n;
	}
	if (s[1] == '{' && strncmp(s + 2, name, n) == 0 && s[2 + n] == '}')
		return 3 + n;
	return 0;
}

char *loader_expand(const char *entry, const char *origin, const loader_system *sys)
{
	if (!entry)
		return NULL;
	strbuf sb;
	sb_init(&sb);
	const char *p = entry;
	while (*p) {
		size_t k;
		if ((k = match_var(p, "ORIGIN"))) {
			if (!origin) {
				sb_free(&sb);
				return NULL;
			}
			sb_add(&sb, origin);
			p += k;
		} else if ((k = match_var(p, "LIB"))) {
			/* Debian-style glibc: lib/<triplet>; lib64 elsewhere */
			const char *t = sys && sys->triplet[0] ? sys->triplet : host_triplet();
			if (t[0])
				sb_addf(&sb, "lib/%s", t);
			else
				sb_add(&sb, "lib64");
			p += k;
		} else if ((k = match_var(p, "PLATFORM"))) {
			sb_add(&sb, host_platform());
			p += k;
		} else {
			sb_addc(&sb, *p++);
		}
		if (sb.len > PATH_MAX) {
			sb_free(&sb);
			return NULL;
		}
	}
	return sb_steal(&sb);
}

/* Is dir/name a file ld.so would take? 1 yes, 0 no such file, -1 foreign ELF (skipped). */
static int try_candidate(const char *path, loader_result *out)
{
	struct stat st;
	if (sysroot_stat(path, &st) != 0 || S_ISDIR(st.st_mode))
		return 0;
	int k = elf_check_native(path);
	if (k == 0) {
		out->skipped_foreign++;
		return -1;
	}
	out->native = k == 1;
	return 1;
}

static void fill_found(loader_result *out, loader_via via, const char *dir, const char *path)
{
	out->via = via;
	str_copy(out->dir, sizeof(out->dir), dir);
	str_copy(out->path, sizeof(out->path), path);
	char *real = sysroot_realpath(path);
	str_copy(out->real, sizeof(out->real), real ? real : "");
	free(real);
}

/* Searches each entry of a search path for soname. */
static bool search_list(const char *soname, const char *list, loader_via via, const loader_ctx *ctx,
			loader_result *out)
{
	if (!list || !*list)
		return false;
	strlist entries = {0};
	loader_split_path(list, &entries);
	bool found = false;
	for (size_t i = 0; i < entries.n && !found; i++) {
		const char *e = entries.v[i];
		/* the current directory has no meaning for the machine under --root */
		if (strcmp(e, ".") == 0)
			continue;
		char *dir = loader_expand(e, ctx->origin, ctx->sys);
		if (!dir)
			continue;
		if (dir[0] == '/') {
			char path[PATH_MAX];
			/* one too long for a path names no file (the loader gets ENAMETOOLONG): never a cut one */
			if (str_fmt_whole(path, sizeof(path), "%s%s%s", dir, str_ends(dir, "/") ? "" : "/", soname) &&
			    try_candidate(path, out) == 1) {
				fill_found(out, via, dir, path);
				found = true;
			}
		}
		free(dir);
	}
	sl_free(&entries);
	return found;
}

bool loader_resolve(const char *soname, const loader_ctx *ctx, loader_result *out)
{
	static const loader_ctx empty;
	memset(out, 0, sizeof(*out));
	if (!soname || !*soname)
		return false;
	ctx = ctx ? ctx : &empty;
	if (strchr(soname, '/')) {
		char *p = loader_expand(soname, ctx->origin, ctx->sys);
		bool ok = p && p[0] == '/' && try_candidate(p, out) == 1;
		if (ok) {
			char dir[PATH_MAX];
			str_copy(dir, sizeof(dir), p);
			char *slash = strrchr(dir, '/');
			slash[slash == dir ? 1 : 0] = '\0';
			fill_found(out, LOADER_VIA_SLASH, dir, p);
		}
		free(p);
		return ok;
	}
	bool has_runpath = ctx->runpath && *ctx->runpath;
	if (!has_runpath && search_list(soname, ctx->rpath, LOADER_VIA_RPATH, ctx, out))
		return true;
	if (search_list(soname, ctx->ld_library_path, LOADER_VIA_LD_LIBRARY_PATH, ctx, out))
		return true;
	if (has_runpath && search_list(soname, ctx->runpath, LOADER_VIA_RUNPATH, ctx, out))
		return true;
	if (ctx->sys && ctx->sys->have_cache) {
		/* ld.so takes the first cache entry; when its file is gone, it falls through */
		const ldcache_entry *e = ldcache_lookup(&ctx->sys->cache, soname);
		if (e) {
			if (e->path[0] == '/' && try_candidate(e->path, out) == 1) {
				char dir[PATH_MAX];
				str_copy(dir, sizeof(dir), e->path);
				char *slash = strrchr(dir, '/');
				slash[slash == dir ? 1 : 0] = '\0';
				fill_found(out, LOADER_VIA_CACHE, dir, e->path);
				return true;
			}
			out->cache_stale = true;
		}
	}
	loader_system fallback;
	const loader_system *sys = ctx->sys;
	if (!sys) {
		/* no system given: the built-in directories only */
		memset(&fallback, 0, sizeof(fallback));
		str_copy(fallback.triplet, sizeof(fallback.triplet), host_triplet());
		if (fallback.triplet[0]) {
			sl_pushf(&fallback.default_dirs, "/lib/%s", fallback.triplet);
			sl_pushf(&fallback.default_dirs, "/usr/lib/%s", fallback.triplet);
		}
		sl_push(&fallback.default_dirs, "/lib64");
		sl_push(&fallback.default_dirs, "/usr/lib64");
		sl_push(&fallback.default_dirs, "/lib");
		sl_push(&fallback.default_dirs, "/usr/lib");
		sys = &fallback;
	}
	bool found = false;
	for (size_t i = 0; i < sys->default_dirs.n && !found; i++) {
		char path[PATH_MAX];
		if (str_fmt_whole(path, sizeof(path), "%s/%s", sys->default_dirs.v[i], soname) &&
		    try_candidate(path, out) == 1) {
			fill_found(out, LOADER_VIA_DEFAULT, sys->default_dirs.v[i], path);
			found = true;
		}
	}
	if (!ctx->sys)
		sl_free(&fallback.default_dirs);
	return found;
}

bool loader_is_stubs_dir(const char *dir)
{
	if (!dir)
		return false;
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		n--;
	return n >= 6 && strncmp(dir + n - 6, "/stubs", 6) == 0;
}

char *loader_path_without_stubs(const char *path)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "");
	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");
		char *e = xstrndup(p, n);
		if (!loader_is_stubs_dir(e))
			sb_addf(&sb, "%s%s", sb.len ? ":" : "", e);
		free(e);
		p += n;
		if (*p == ':')
			p++;
	}
	return sb_steal(&sb);
}
