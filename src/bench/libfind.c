#include "bench/libfind.h"

#include <dlfcn.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nvidia/dlload.h"

static bool is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void push_unique_real(strlist *out, const char *dir)
{
	char real[PATH_MAX];
	if (!is_dir(dir) || !realpath(dir, real))
		return;
	if (!sl_contains(out, real))
		sl_push(out, real);
}

static void add_prefix(strlist *out, const char *prefix)
{
	if (!prefix || !*prefix)
		return;
	static const char *const pats[] = {"/lib/python3*/site-packages", "/lib/python3*/dist-packages",
					   "/lib/python3/dist-packages", "/lib64/python3*/site-packages"};
	for (size_t i = 0; i < GV_ARRAY_LEN(pats); i++) {
		char *pat = xasprintf("%s%s", prefix, pats[i]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++)
				push_unique_real(out, g.gl_pathv[k]);
			globfree(&g);
		}
		free(pat);
	}
}

void lib_site_dirs(strlist *out)
{
	add_prefix(out, getenv("VIRTUAL_ENV"));
	add_prefix(out, getenv("CONDA_PREFIX"));
	const char *pp = getenv("PYTHONPATH");
	if (pp) {
		strlist parts = {0};
		sl_split(&parts, pp, ":", false);
		for (size_t i = 0; i < parts.n; i++)
			push_unique_real(out, parts.v[i]);
		sl_free(&parts);
	}
	const char *path = getenv("PATH");
	if (path) {
		strlist parts = {0};
		sl_split(&parts, path, ":", false);
		for (size_t i = 0; i < parts.n; i++) {
			char *py = xasprintf("%s/python3", parts.v[i]);
			if (access(py, X_OK) == 0) {
				char *prefix = xasprintf("%s/..", parts.v[i]);
				add_prefix(out, prefix);
				free(prefix);
			}
			free(py);
		}
		sl_free(&parts);
	}
	const char *home = getenv("HOME");
	if (home) {
		char *local = xasprintf("%s/.local", home);
		add_prefix(out, local);
		free(local);
	}
	add_prefix(out, "/usr/local");
	add_prefix(out, "/usr");
	add_prefix(out, "/opt/conda");
}

static void real_path_of(void *h, char *path, size_t size)
{
	struct link_map *lm = NULL;
	if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0] == '/') {
		char real[PATH_MAX];
		str_copy(path, size, realpath(lm->l_name, real) ? real : lm->l_name);
	}
}

static bool try_open(const lib_spec *spec, const char *file, lib_handle *out, strbuf *why)
{
	dlerror();
	void *h = gv_dl_open_quiet(file, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		if (why->len)
			sb_add(why, "; ");
		sb_addf(why, "%s", e ? e : file);
		dlerror(); /* frees the message's block (gv_dl_sym) */
		return false;
	}
	if (spec->probe_symbol && !gv_dl_sym(h, spec->probe_symbol)) {
		if (why->len)
			sb_add(why, "; ");
		sb_addf(why, "%s has no symbol %s", file, spec->probe_symbol);
		dlclose(h);
		return false;
	}
	out->h = h;
	str_copy(out->path, sizeof(out->path), file);
	real_path_of(h, out->path, sizeof(out->path));
	return true;
}

bool lib_open(const lib_spec *spec, lib_handle *out)
{
	memset(out, 0, sizeof(*out));
	strbuf why;
	sb_init(&why);
	const char *env = spec->env_var ? getenv(spec->env_var) : NULL;
	if (env && *env) {
		bool ok = try_open(spec, env, out, &why);
		if (ok)
			str_copy(out->how, sizeof(out->how), "environment");
		else
			snprintf(out->error, sizeof(out->error), "%s=%s does not load: %s", spec->env_var, env, why.buf);
		sb_free(&why);
		return ok;
	}
	for (const char *const *so = spec->sonames; *so; so++)
		if (try_open(spec, *so, out, &why)) {
			str_copy(out->how, sizeof(out->how), "loader");
			sb_free(&why);
			return true;
		}
	strlist sites = {0};
	if (spec->wheel_subdirs)
		lib_site_dirs(&sites);
	for (size_t s = 0; s < sites.n; s++)
		for (const char *const *sub = spec->wheel_subdirs; *sub; sub++)
			for (const char *const *so = spec->sonames; *so; so++) {
				char *file = xasprintf("%s/%s/%s", sites.v[s], *sub, *so);
				bool ok = access(file, R_OK) == 0 && try_open(spec, file, out, &why);
				free(file);
				if (ok) {
					str_copy(out->how, sizeof(out->how), "pip wheel");
					sl_free(&sites);
					sb_free(&why);
					return true;
				}
			}
	snprintf(out->error, sizeof(out->error), "%s not found: the loader has no %s%s%s (%s)", spec->what,
		 spec->sonames[0], sites.n ? " and no Python site-packages here has one" : "",
		 spec->wheel_subdirs && !sites.n ? " and no Python site-packages was found" : "", why.buf);
	sl_free(&sites);
	sb_free(&why);
	return false;
}

void lib_close(lib_handle *lh)
{
	/* Never dlclose: cuBLASLt and NCCL keep driver state and C++ runtime pools, OpenBLAS keeps
	 * worker threads; unmapping them under their feet crashes or leaks. The handle is dropped;
	 * a later lib_open gets the same mapping back. */
	lh->h = NULL;
}

void *lib_sym(const lib_handle *lh, const char *name)
{
	return lh->h ? gv_dl_sym(lh->h, name) : NULL;
}

bool lib_bind(lib_handle *lh, const lib_symbol *syms, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		*syms[i].slot = lib_sym(lh, syms[i].name);
		if (!*syms[i].slot) {
			snprintf(lh->error, sizeof(lh->error), "%s lacks the symbol %s", lh->path, syms[i].name);
			lib_close(lh);
			return false;
		}
	}
	return true;
}
