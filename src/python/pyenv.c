#include "python/pyenv.h"

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "parse/pyparse.h"

#define MAX_INTERPS 64
#define MAX_DIR_ENTRIES 256

void py_env_from_process(py_env *e, const char *explicit_python)
{
	e->path = getenv("PATH");
	e->virtual_env = getenv("VIRTUAL_ENV");
	e->conda_prefix = getenv("CONDA_PREFIX");
	e->home = getenv("HOME");
	e->pythonpath = getenv("PYTHONPATH");
	e->pyenv_root = getenv("PYENV_ROOT");
	e->pyenv_version = getenv("PYENV_VERSION");
	e->explicit_python = explicit_python;
}

const char *py_home(const py_env *e, char *buf, size_t n)
{
	str_copy(buf, n, e->home && *e->home ? sysroot_strip(e->home) : "");
	size_t len = strlen(buf);
	while (len > 1 && buf[len - 1] == '/')
		buf[--len] = '\0';
	return buf;
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return xstrdup(".");
	if (slash == path)
		return xstrdup("/");
	return xstrndup(path, (size_t)(slash - path));
}

static bool is_executable_file(const char *abs)
{
	char *real = sysroot_realpath(abs);
	if (!real)
		return false;
	struct stat st;
	bool ok = sysroot_stat(real, &st) == 0 && S_ISREG(st.st_mode);
	if (ok) {
		char host[PATH_MAX];
		ok = gv_sys.access(sysroot_path(host, sizeof(host), real), X_OK) == 0;
	}
	free(real);
	return ok;
}

/* "python3.11" -> "3.11" */
static bool version_from_name(const char *base, char *out, size_t n)
{
	if (!str_starts(base, "python"))
		return false;
	const char *v = base + 6;
	int a, b;
	if (!isdigit((unsigned char)*v) || version_parse(v, &a, &b, NULL) < 2)
		return false;
	snprintf(out, n, "%d.%d", a, b);
	return true;
}

/* The highest lib/pythonX.Y of a prefix that holds packages or the standard library. */
static bool version_from_layout(const char *prefix, char *out, size_t n)
{
	char *lib = xasprintf("%s/lib", strcmp(prefix, "/") == 0 ? "" : prefix);
	DIR *d = sysroot_opendir(lib);
	bool found = false;
	int best_a = -1, best_b = -1;
	if (d) {
		struct dirent *de;
		int seen = 0;
		while ((de = readdir(d)) && seen++ < 4096) {
			int a, b;
			if (!str_starts(de->d_name, "python") || version_parse(de->d_name + 6, &a, &b, NULL) < 2 ||
			    !isdigit((unsigned char)de->d_name[6]))
				continue;
			char *sp = xasprintf("%s/%s/site-packages", lib, de->d_name);
			char *dp = xasprintf("%s/%s/dist-packages", lib, de->d_name);
			char *os = xasprintf("%s/%s/os.py", lib, de->d_name);
			bool real = sysroot_is_dir(sp) || sysroot_is_dir(dp) || sysroot_exists(os);
			free(sp);
			free(dp);
			free(os);
			if (real && (a > best_a || (a == best_a && b > best_b))) {
				best_a = a;
				best_b = b;
				found = true;
			}
		}
		closedir(d);
	}
	free(lib);
	if (found)
		snprintf(out, n, "%d.%d", best_a, best_b);
	return found;
}

static char *join(const char *dir, const char *name)
{
	return xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
}

static bool already_listed(const py_list *l, const char *prefix)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].prefix, prefix) == 0)
			return true;
	return false;
}

/* A pyenv shim ("~/.pyenv/shims/python3") stands for the version pyenv selects. */
static char *resolve_pyenv_shim(const py_env *e, const char *path)
{
	const char *shims = strstr(path, "/shims/");
	if (!shims || !strstr(path, "pyenv"))
		return NULL;
	char *root = xstrndup(path, (size_t)(shims - path));
	char version[128] = "";
	if (e->pyenv_version && *e->pyenv_version) {
		str_copy(version, sizeof(version), e->pyenv_version);
	} else {
		char *vf = join(root, "version");
		char *line = sysroot_read_line(vf);
		if (line)
			str_copy(version, sizeof(version), line);
		free(line);
		free(vf);
	}
	version[strcspn(version, " :\t")] = '\0';
	char *res = NULL;
	if (*version && strcmp(version, "system") != 0 && !strchr(version, '/'))
		res = xasprintf("%s/versions/%s/bin/%s", root, version, strrchr(path, '/') + 1);
	free(root);
	return res;
}

static void describe(py_interp *py, const char *path, const py_env *e)
{
	char *bin = dir_of(path);
	char *envdir = dir_of(bin);
	char *cfg = join(envdir, "pyvenv.cfg");
	char *meta = join(envdir, "conda-meta");
	char *real = sysroot_realpath(path);
	const char *base = strrchr(real ? real : path, '/');
	base = base ? base + 1 : path;
	char *cfgtext = NULL;
	if (sysroot_read(cfg, 64 * 1024, &cfgtext, NULL, NULL) == 0) {
		py->kind = "venv";
		py->prefix = xstrdup(envdir);
		char v[64], home[PATH_MAX];
		int a, b;
		if ((pyparse_cfg(cfgtext, "version_info", v, sizeof(v)) || pyparse_cfg(cfgtext, "version", v, sizeof(v))) &&
		    version_parse(v, &a, &b, NULL) >= 2)
			snprintf(py->version, sizeof(py->version), "%d.%d", a, b);
		char flag[16];
		py->system_site = pyparse_cfg(cfgtext, "include-system-site-packages", flag, sizeof(flag)) &&
				  strcasecmp(flag, "true") == 0;
		if (pyparse_cfg(cfgtext, "home", home, sizeof(home)) && home[0] == '/') {
			char *h = xstrdup(home);
			size_t hl = strlen(h);
			while (hl > 1 && h[hl - 1] == '/')
				h[--hl] = '\0';
			py->base_prefix = str_ends(h, "/bin") ? dir_of(h) : xstrdup(h);
			free(h);
		}
		free(cfgtext);
	} else if (sysroot_is_dir(meta)) {
		py->kind = "conda";
		py->prefix = xstrdup(envdir);
	} else {
		char *rbin = dir_of(real ? real : path);
		char *rprefix = dir_of(rbin);
		char *rmeta = join(rprefix, "conda-meta");
		py->kind = sysroot_is_dir(rmeta) ? "conda" : strstr(rprefix, "/.pyenv/versions/") ? "pyenv" : "system";
		py->prefix = rprefix;
		free(rmeta);
		free(rbin);
	}
	if (!py->base_prefix)
		py->base_prefix = xstrdup(py->prefix);
	if (!py->version[0] && !version_from_name(base, py->version, sizeof(py->version)))
		version_from_layout(py->prefix, py->version, sizeof(py->version));
	if (!py->version[0] && strcmp(py->kind, "venv") == 0)
		version_from_layout(py->base_prefix, py->version, sizeof(py->version));
	py->user_site = strcmp(py->kind, "venv") != 0 || py->system_site;
	(void)e;
	free(real);
	free(bin);
	free(envdir);
	free(cfg);
	free(meta);
}

/* Adds an interpreter; returns its index, or -1 when it duplicates one already listed or does
 * not exist (unless keep_missing). */
static int add_interp(py_list *l, const py_env *e, const char *path, const char *origin, bool keep_missing)
{
	if (l->n >= MAX_INTERPS)
		return -1;
	char *shim = resolve_pyenv_shim(e, path);
	const char *p = shim ? shim : path;
	bool exists = is_executable_file(p);
	if (!exists && !keep_missing) {
		free(shim);
		return -1;
	}
	py_interp py = {0};
	py.path = xstrdup(p);
	py.origin = origin;
	py.exists = exists;
	describe(&py, p, e);
	free(shim);
	if (already_listed(l, py.prefix)) {
		for (size_t i = 0; i < l->n; i++)
			if (strcmp(l->v[i].prefix, py.prefix) == 0) {
				free(py.path);
				free(py.prefix);
				free(py.base_prefix);
				return (int)i;
			}
	}
	l->v = xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n] = py;
	return (int)l->n++;
}

/* bin/python3, else bin/python, of an environment prefix. */
static int add_prefix(py_list *l, const py_env *e, const char *prefix, const char *origin, bool keep_missing)
{
	char *p3 = join(prefix, "bin/python3");
	char *p = join(prefix, "bin/python");
	int i = -1;
	if (is_executable_file(p3))
		i = add_interp(l, e, p3, origin, false);
	else if (is_executable_file(p))
		i = add_interp(l, e, p, origin, false);
	else if (keep_missing)
		i = add_interp(l, e, p3, origin, true);
	free(p3);
	free(p);
	return i;
}

/* Every subdirectory of dir that is an environment. */
static void add_envs_in(py_list *l, const py_env *e, const char *dir, const char *origin)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	strlist names = {0};
	struct dirent *de;
	while ((de = readdir(d)) && names.n < MAX_DIR_ENTRIES)
		if (de->d_name[0] != '.' || strcmp(de->d_name, ".venv") == 0)
			if (strcmp(de->d_name, "..") != 0)
				sl_push(&names, de->d_name);
	closedir(d);
	for (size_t a = 1; a < names.n; a++) /* stable, sorted output */
		for (size_t b = a; b > 0 && strcmp(names.v[b - 1], names.v[b]) > 0; b--) {
			char *t = names.v[b];
			names.v[b] = names.v[b - 1];
			names.v[b - 1] = t;
		}
	for (size_t i = 0; i < names.n; i++) {
		char *p = join(dir, names.v[i]);
		add_prefix(l, e, p, origin, false);
		free(p);
	}
	sl_free(&names);
}

static void add_from_path(py_list *l, const py_env *e, int *first)
{
	strlist dirs = {0};
	sl_split(&dirs, e->path ? e->path : "", ":", false);
	static const char *const names[] = {"python3", "python"};
	for (size_t n = 0; n < GV_ARRAY_LEN(names); n++) {
		bool found = false;
		for (size_t i = 0; i < dirs.n && i < 128; i++) {
			const char *d = sysroot_strip(dirs.v[i]);
			if (d[0] != '/')
				continue;
			char *p = join(d, names[n]);
			if (is_executable_file(p)) {
				char *shim = resolve_pyenv_shim(e, p);
				if (shim && !is_executable_file(shim)) { /* "system" or a missing version: pyenv passes on */
					free(shim);
					free(p);
					continue;
				}
				free(shim);
				/* the first of each name is what a shell runs; later ones are listed too */
				bool first_of_name = !found;
				found = true;
				if (!l->path_python)
					l->path_python = xstrdup(p);
				int idx = add_interp(l, e, p, first_of_name ? "PATH" : "PATH (shadowed)", false);
				if (*first < 0 && first_of_name)
					*first = idx;
				free(p);
				continue;
			}
			free(p);
		}
	}
	sl_free(&dirs);
}

void py_discover(const py_env *e, py_list *out)
{
	memset(out, 0, sizeof(*out));
	out->selected = -1;
	char home[PATH_MAX];
	py_home(e, home, sizeof(home));
	int sel = -1;
	if (e->explicit_python && *e->explicit_python) {
		const char *p = sysroot_strip(e->explicit_python);
		/* a directory given to --python is an environment prefix */
		sel = sysroot_is_dir(p) ? add_prefix(out, e, p, "--python", true) : add_interp(out, e, p, "--python", true);
	}
	if (e->virtual_env && *e->virtual_env) {
		int i = add_prefix(out, e, sysroot_strip(e->virtual_env), "VIRTUAL_ENV", false);
		if (sel < 0)
			sel = i;
	}
	if (e->conda_prefix && *e->conda_prefix) {
		int i = add_prefix(out, e, sysroot_strip(e->conda_prefix), "CONDA_PREFIX", false);
		if (sel < 0)
			sel = i;
	}
	int first_path = -1;
	add_from_path(out, e, &first_path);
	if (sel < 0)
		sel = first_path;

	/* conda installations and their environments */
	strlist bases = {0};
	static const char *const sys_bases[] = {"/opt/conda", "/opt/miniconda3", "/opt/anaconda3", "/opt/miniforge3",
						"/opt/mambaforge", "/usr/local/miniconda3", "/usr/local/anaconda3"};
	static const char *const home_bases[] = {"miniconda3", "anaconda3", "miniforge3", "mambaforge", "micromamba",
						 ".conda"};
	for (size_t i = 0; i < GV_ARRAY_LEN(sys_bases); i++)
		sl_push(&bases, sys_bases[i]);
	if (*home)
		for (size_t i = 0; i < GV_ARRAY_LEN(home_bases); i++)
			sl_pushf(&bases, "%s/%s", home, home_bases[i]);
	for (size_t i = 0; i < bases.n; i++) {
		if (!sysroot_is_dir(bases.v[i]))
			continue;
		add_prefix(out, e, bases.v[i], "conda", false);
		char *envs = join(bases.v[i], "envs");
		add_envs_in(out, e, envs, "conda");
		free(envs);
	}
	sl_free(&bases);
	if (*home) {
		char *et = xasprintf("%s/.conda/environments.txt", home);
		char *text = NULL;
		if (sysroot_read(et, 256 * 1024, &text, NULL, NULL) == 0) {
			strlist lines = {0};
			sl_split(&lines, text, "\n", false);
			for (size_t i = 0; i < lines.n && i < MAX_DIR_ENTRIES; i++) {
				char *l = str_trim(lines.v[i]);
				l[strcspn(l, "\r")] = '\0';
				if (l[0] == '/')
					add_prefix(out, e, sysroot_strip(l), "conda", false);
			}
			sl_free(&lines);
			free(text);
		}
		free(et);
		/* virtualenvs in the usual places */
		static const char *const venv_parents[] = {".virtualenvs", ".local/share/virtualenvs", "envs", ".venvs",
							   ".cache/pypoetry/virtualenvs"};
		static const char *const venv_dirs[] = {".venv", "venv", ".env", "env"};
		for (size_t i = 0; i < GV_ARRAY_LEN(venv_dirs); i++) {
			char *p = xasprintf("%s/%s", home, venv_dirs[i]);
			char *cfg = xasprintf("%s/pyvenv.cfg", p);
			if (sysroot_exists(cfg))
				add_prefix(out, e, p, "virtualenv", false);
			free(cfg);
			free(p);
		}
		for (size_t i = 0; i < GV_ARRAY_LEN(venv_parents); i++) {
			char *p = xasprintf("%s/%s", home, venv_parents[i]);
			add_envs_in(out, e, p, "virtualenv");
			free(p);
		}
		char *pyenv = e->pyenv_root && *e->pyenv_root ? xasprintf("%s/versions", sysroot_strip(e->pyenv_root))
							       : xasprintf("%s/.pyenv/versions", home);
		add_envs_in(out, e, pyenv, "pyenv");
		free(pyenv);
	}
	/* nothing active and nothing on PATH: examine the first environment found */
	if (sel < 0 && out->n)
		sel = 0;
	out->selected = sel;
}

void py_list_free(py_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].path);
		free(l->v[i].prefix);
		free(l->v[i].base_prefix);
	}
	free(l->v);
	free(l->path_python);
	memset(l, 0, sizeof(*l));
	l->selected = -1;
}

/* The same directory twice (a venv's lib64 is a symlink to lib) must count once, or every
 * package in it looks installed twice: compare real paths. */
static bool same_dir_listed(const strlist *dirs, const char *dir)
{
	if (sl_contains(dirs, dir))
		return true;
	char *real = sysroot_realpath(dir);
	bool found = false;
	for (size_t i = 0; real && i < dirs->n && !found; i++) {
		char *other = sysroot_realpath(dirs->v[i]);
		found = other && strcmp(other, real) == 0;
		free(other);
	}
	free(real);
	return found;
}

static void push_dir(strlist *dirs, strlist *kinds, const char *dir, const char *kind)
{
	if (!sysroot_is_dir(dir) || same_dir_listed(dirs, dir))
		return;
	sl_push(dirs, dir);
	if (kinds)
		sl_push(kinds, kind);
}

static void prefix_site_dirs(const char *prefix, const char *ver, strlist *dirs, strlist *kinds)
{
	const char *p = strcmp(prefix, "/") == 0 ? "" : prefix;
	char *d;
	if (strcmp(prefix, "/usr") == 0 || strcmp(prefix, "/usr/local") == 0) {
		/* Debian's layout first, then the upstream one: BEFORE, the version (when AFTER), AFTER */
		static const struct {
			const char *before, *after;
		} layout[] = {
			{"/usr/local/lib/python", "/dist-packages"}, {"/usr/lib/python3/dist-packages", NULL},
			{"/usr/lib/python", "/dist-packages"},       {"/usr/local/lib/python", "/site-packages"},
			{"/usr/lib64/python", "/site-packages"},     {"/usr/lib/python", "/site-packages"},
		};
		for (size_t i = 0; i < GV_ARRAY_LEN(layout); i++) {
			d = xasprintf("%s%s%s", layout[i].before, layout[i].after ? ver : "",
				      layout[i].after ? layout[i].after : "");
			push_dir(dirs, kinds, d, "site");
			free(d);
		}
		return;
	}
	d = xasprintf("%s/lib/python%s/site-packages", p, ver);
	push_dir(dirs, kinds, d, "site");
	free(d);
	d = xasprintf("%s/lib64/python%s/site-packages", p, ver);
	push_dir(dirs, kinds, d, "site");
	free(d);
}

void py_site_dirs(const py_interp *py, const py_env *e, strlist *dirs, strlist *kinds)
{
	if (e->pythonpath && *e->pythonpath) {
		strlist parts = {0};
		sl_split(&parts, e->pythonpath, ":", false);
		for (size_t i = 0; i < parts.n && i < 64; i++) {
			const char *d = sysroot_strip(parts.v[i]);
			if (d[0] == '/')
				push_dir(dirs, kinds, d, "PYTHONPATH");
		}
		sl_free(&parts);
	}
	if (!py->version[0])
		return;
	char home[PATH_MAX];
	py_home(e, home, sizeof(home));
	if (py->user_site && *home) {
		char *u = xasprintf("%s/.local/lib/python%s/site-packages", home, py->version);
		push_dir(dirs, kinds, u, "user");
		free(u);
	}
	prefix_site_dirs(py->prefix, py->version, dirs, kinds);
	if (strcmp(py->kind, "venv") == 0 && py->system_site && py->base_prefix)
		prefix_site_dirs(py->base_prefix, py->version, dirs, kinds);
}

void py_discover_process(const char *explicit_python, py_env *e, py_list *out)
{
	py_env_from_process(e, explicit_python);
	py_discover(e, out);
}
