#include "python/pysite.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "elf/elf.h"
#include "parse/pyparse.h"

#define MAX_DISTS 4096
#define MAX_SO_FILES 4096
#define MAX_RECORD (4u << 20)

int torch_read_version(const char *torch_dir, torch_version_info *out)
{
	memset(out, 0, sizeof(*out));
	char *p = xasprintf("%s/version.py", torch_dir);
	char *text = NULL;
	int rc = sysroot_read(p, 256 * 1024, &text, NULL, NULL);
	free(p);
	if (rc < 0)
		return rc;
	bool none = false;
	if (!pyparse_assign(text, "__version__", out->version, sizeof(out->version), &none) || none || !out->version[0]) {
		free(text);
		return -EINVAL;
	}
	out->have_cuda_field = pyparse_assign(text, "cuda", out->cuda, sizeof(out->cuda), &out->cuda_none);
	bool hip_none = false;
	if (!pyparse_assign(text, "hip", out->hip, sizeof(out->hip), &hip_none) || hip_none)
		out->hip[0] = '\0';
	bool gv_none = false;
	if (!pyparse_assign(text, "git_version", out->git_version, sizeof(out->git_version), &gv_none) || gv_none)
		out->git_version[0] = '\0';
	free(text);
	return 0;
}

static int dist_cmp(const void *a, const void *b)
{
	return strcmp(((const pip_dist *)a)->name, ((const pip_dist *)b)->name);
}

void pip_list(const char *site, pip_dists *out)
{
	memset(out, 0, sizeof(*out));
	DIR *d = sysroot_opendir(site);
	if (!d)
		return;
	struct dirent *de;
	size_t cap = 0;
	while ((de = readdir(d)) && out->n < MAX_DISTS) {
		if (!str_ends(de->d_name, ".dist-info") && !str_ends(de->d_name, ".egg-info"))
			continue;
		pip_dist x = {0};
		if (!pyparse_dist_info_dir(de->d_name, x.name, sizeof(x.name), x.version, sizeof(x.version)))
			continue;
		x.meta_dir = xasprintf("%s/%s", site, de->d_name);
		if (out->n == cap) {
			cap = cap ? cap * 2 : 64;
			out->v = xrealloc(out->v, cap * sizeof(*out->v));
		}
		out->v[out->n++] = x;
	}
	closedir(d);
	if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), dist_cmp);
}

void pip_dists_free(pip_dists *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->v[i].meta_dir);
	free(d->v);
	memset(d, 0, sizeof(*d));
}

const pip_dist *pip_find(const pip_dists *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->v[i].name, name) == 0)
			return &d->v[i];
	return NULL;
}

bool pip_metadata(const pip_dist *d, char *name, size_t nn, char *version, size_t vn)
{
	str_copy(name, nn, d->name);
	str_copy(version, vn, d->version);
	char *p = xasprintf("%s/%s", d->meta_dir, str_ends(d->meta_dir, ".egg-info") ? "PKG-INFO" : "METADATA");
	char *text = NULL;
	bool ok = false;
	if (sysroot_read(p, 64 * 1024, &text, NULL, NULL) == 0) {
		char raw[128];
		if (pyparse_metadata_field(text, "Name", raw, sizeof(raw))) {
			pyparse_normalize_name(raw, name, nn);
			ok = true;
		}
		if (pyparse_metadata_field(text, "Version", raw, sizeof(raw)) && raw[0]) {
			str_copy(version, vn, raw);
			ok = true;
		}
		free(text);
	}
	free(p);
	return ok;
}

struct record_ctx {
	pip_owners *o;
	const char *site;
	const pip_dist *dist;
};

static void lexical_normalize(char *path)
{
	char *folded = path_fold(path);
	str_copy(path, PATH_MAX, folded); /* never longer than path */
	free(folded);
}

static void record_line(const char *rel, void *ctx)
{
	struct record_ctx *c = ctx;
	/* only shared libraries matter: they are what the loader picks */
	if (!strstr(rel, ".so") || c->o->paths.n >= 20000)
		return;
	char abs[PATH_MAX];
	snprintf(abs, sizeof(abs), "%s/%s", c->site, rel);
	lexical_normalize(abs);
	sl_push(&c->o->paths, abs);
	sl_push(&c->o->dists, c->dist->name);
	sl_push(&c->o->versions, c->dist->version);
}

void pip_owners_add(pip_owners *o, const char *site, const pip_dists *d, const char *const *prefixes)
{
	char *real_site = sysroot_realpath(site);
	for (size_t i = 0; i < d->n; i++) {
		bool want = false;
		for (size_t p = 0; prefixes[p] && !want; p++)
			want = str_starts(d->v[i].name, prefixes[p]);
		if (!want)
			continue;
		char *rp = xasprintf("%s/RECORD", d->v[i].meta_dir);
		char *text = NULL;
		if (sysroot_read(rp, MAX_RECORD, &text, NULL, NULL) == 0) {
			pip_dist md = d->v[i]; /* METADATA's name and version outrank the directory's */
			pip_metadata(&d->v[i], md.name, sizeof(md.name), md.version, sizeof(md.version));
			struct record_ctx c = {o, real_site ? real_site : site, &md};
			pyparse_record(text, record_line, &c);
			free(text);
		}
		free(rp);
	}
	free(real_site);
}

void pip_owners_free(pip_owners *o)
{
	sl_free(&o->paths);
	sl_free(&o->dists);
	sl_free(&o->versions);
}

const char *pip_owner(const pip_owners *o, const char *abs, const char **version)
{
	char *real = sysroot_realpath(abs);
	for (int pass = 0; pass < 2; pass++) {
		const char *want = pass == 0 ? abs : real;
		if (!want)
			continue;
		for (size_t i = 0; i < o->paths.n; i++)
			if (strcmp(o->paths.v[i], want) == 0) {
				if (version)
					*version = o->versions.v[i];
				free(real);
				return o->dists.v[i];
			}
	}
	free(real);
	return NULL;
}

static bool conda_interesting(const char *name)
{
	static const char *const names[] = {"cudatoolkit", "cudnn", "pytorch", "pytorch-cuda", "pytorch-gpu",
					    "pytorch-cpu", "cuda-version", "cuda-cudart", "cuda-runtime", "nccl",
					    "cuda-nvcc", "cuda-toolkit", "libcublas", "cpuonly", "libtorch"};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++)
		if (strcmp(name, names[i]) == 0)
			return true;
	return false;
}

bool conda_list(const char *prefix, conda_pkgs *out)
{
	memset(out, 0, sizeof(*out));
	char *dir = xasprintf("%s/conda-meta", strcmp(prefix, "/") == 0 ? "" : prefix);
	DIR *d = sysroot_opendir(dir);
	free(dir);
	if (!d)
		return false;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen++ < 20000) {
		char name[128], version[64], build[128];
		if (!pyparse_conda_meta(de->d_name, name, sizeof(name), version, sizeof(version), build, sizeof(build)))
			continue;
		if (!conda_interesting(name) || out->names.n >= 64)
			continue;
		sl_push(&out->names, name);
		sl_push(&out->versions, version);
		sl_push(&out->builds, build);
	}
	closedir(d);
	return true;
}

void conda_pkgs_free(conda_pkgs *c)
{
	sl_free(&c->names);
	sl_free(&c->versions);
	sl_free(&c->builds);
}

int lib_fatbin(const char *abs, double deadline, fatbin_summary *out, char *err, size_t errn)
{
	memset(out, 0, sizeof(*out));
	const char *e = NULL;
	elf_image *img = elf_open_file(abs, &e);
	if (!img) {
		snprintf(err, errn, "%s", e ? e : "unreadable");
		return strcmp(e ? e : "", "not an ELF file") == 0 ? 0 : -1;
	}
	fatbin_limits lim = {0, deadline};
	int rc = fatbin_scan_elf(img, &lim, out);
	elf_close(img);
	return rc;
}

static bool skip_dir(const char *name)
{
	static const char *const skip[] = {"torch", "nvidia", "__pycache__", "tests", "test", "include", "caffe2",
					   "functorch", "torchgen", "pip", "setuptools", "_distutils_hack", "pkg_resources"};
	for (size_t i = 0; i < GV_ARRAY_LEN(skip); i++)
		if (strcmp(name, skip[i]) == 0)
			return true;
	return str_ends(name, ".dist-info") || str_ends(name, ".egg-info") || name[0] == '.';
}

static bool is_so_name(const char *name)
{
	/* NVIDIA's own libraries that other packages bundle (triton's CUPTI, nvrtc...) are not
	 * extensions: they carry code for every architecture of their CUDA release */
	if (str_starts(name, "libcu") || str_starts(name, "libnv") || str_starts(name, "libnccl"))
		return false;
	return str_ends(name, ".so") || strstr(name, ".so.") != NULL;
}

struct walk {
	double deadline;
	size_t files, found;
	ext_fn fn;
	void *ctx;
};

/* The next entry whose name does not start with '.', or NULL at the end or once 20000 entries
 * were read (the cap on one directory of both walks). */
static struct dirent *next_visible(DIR *d, int *seen)
{
	struct dirent *de;
	while ((de = readdir(d)) && (*seen)++ < 20000)
		if (de->d_name[0] != '.')
			return de;
	return NULL;
}

/* A directory entry's type, from lstat inside the root where readdir does not say it or says
 * link (a link stays DT_LNK: the walks do not follow links); DT_UNKNOWN when lstat fails. */
static unsigned char entry_type(const char *dir, const struct dirent *de)
{
	unsigned char type = de->d_type;
	if (type != DT_UNKNOWN && type != DT_LNK)
		return type;
	char *p = xasprintf("%s/%s", dir, de->d_name);
	struct stat st;
	type = sysroot_lstat(p, &st) == 0 ? (S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK)
					   : DT_UNKNOWN;
	free(p);
	return type;
}

static void walk_dir(struct walk *w, const char *dir, const char *package, int depth)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	strlist subdirs = {0}, files = {0};
	struct dirent *de;
	int seen = 0;
	while ((de = next_visible(d, &seen))) {
		const char *n = de->d_name;
		unsigned char type = entry_type(dir, de);
		if (type == DT_DIR && depth < 3 && !(depth == 0 && skip_dir(n)) && !(depth > 0 && (strcmp(n, "__pycache__") == 0)))
			sl_push(&subdirs, n);
		else if (type == DT_REG && is_so_name(n))
			sl_push(&files, n);
	}
	closedir(d);
	for (size_t i = 0; i < files.n && w->files < MAX_SO_FILES; i++) {
		if (w->deadline > 0 && now_seconds() > w->deadline)
			break;
		w->files++;
		char *p = xasprintf("%s/%s", dir, files.v[i]);
		fatbin_summary s;
		char err[128];
		if (lib_fatbin(p, w->deadline, &s, err, sizeof(err)) == 1 && (s.nsass || s.nptx)) {
			char pkg[128];
			if (package) {
				str_copy(pkg, sizeof(pkg), package);
			} else { /* a top-level module: its name up to the first dot */
				str_copy(pkg, sizeof(pkg), files.v[i]);
				pkg[strcspn(pkg, ".")] = '\0';
			}
			w->found++;
			w->fn(p, pkg, &s, w->ctx);
		}
		free(p);
	}
	for (size_t i = 0; i < subdirs.n; i++) {
		char *p = xasprintf("%s/%s", dir, subdirs.v[i]);
		walk_dir(w, p, package ? package : subdirs.v[i], depth + 1);
		free(p);
	}
	sl_free(&subdirs);
	sl_free(&files);
}

/* One shared object (site/rel) for the walk's callback. */
static void ext_file(struct walk *w, const char *abs, const char *package)
{
	if (w->files >= MAX_SO_FILES || (w->deadline > 0 && now_seconds() > w->deadline))
		return;
	w->files++;
	fatbin_summary s;
	char err[128];
	if (lib_fatbin(abs, w->deadline, &s, err, sizeof(err)) == 1 && (s.nsass || s.nptx)) {
		w->found++;
		w->fn(abs, package, &s, w->ctx);
	}
}

/* The RECORD of one dist-info (pip's list of every installed file): each top-level directory
 * it installs is `covered` (its files are known without walking it), and the shared objects
 * within the walk's depth go to `sos` (relative paths). False when it has no usable RECORD. */
static bool record_read(const char *site, const char *distinfo, strlist *covered, strlist *sos)
{
	char *p = xasprintf("%s/%s/RECORD", site, distinfo);
	char *text = NULL;
	size_t len = 0;
	bool trunc = false;
	int rc = sysroot_read(p, MAX_RECORD, &text, &len, &trunc);
	free(p);
	if (rc < 0 || trunc || !text) {
		free(text);
		return false;
	}
	char last[256] = "";
	for (char *line = text, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *path = line;
		if (*path == '"') { /* a CSV-quoted path (it holds a comma) */
			path++;
			char *q = strchr(path, '"');
			if (!q)
				continue;
			*q = '\0';
		} else {
			path[strcspn(path, ",\r")] = '\0';
		}
		if (!*path || *path == '/' || strstr(path, "..") || !strchr(path, '/'))
			continue; /* outside the site, or a top-level file (the walk lists those) */
		size_t toplen = strcspn(path, "/");
		char top[256];
		if (toplen >= sizeof(top))
			continue;
		memcpy(top, path, toplen);
		top[toplen] = '\0';
		if (strcmp(top, last) != 0) { /* RECORD lines come grouped by directory */
			if (!sl_contains(covered, top))
				sl_push(covered, top);
			str_copy(last, sizeof(last), top);
		}
		int comps = 1;
		for (const char *c = path; *c; c++)
			comps += *c == '/';
		const char *base = strrchr(path, '/') + 1;
		/* the walk's bound: files of directories down to depth 3 (top/a/b/x.so), not in __pycache__ */
		if (comps <= 4 && is_so_name(base) && !strstr(path, "/__pycache__/") && !skip_dir(top))
			sl_push(sos, path);
	}
	free(text);
	return true;
}

/* The top-level names of a dist without a RECORD (top_level.txt): those directories are walked
 * even when another package's RECORD covers them (a namespace shared with an egg). */
static bool top_level_names(const char *site, const char *info, strlist *out)
{
	char *p = xasprintf("%s/%s/top_level.txt", site, info);
	char *text = NULL;
	bool ok = false;
	if (sysroot_read(p, 64 * 1024, &text, NULL, NULL) >= 0 && text) {
		ok = true;
		strlist l = {0};
		sl_split(&l, text, "\r\n", false);
		for (size_t i = 0; i < l.n; i++) {
			char *t = str_trim(l.v[i]);
			if (*t && !strchr(t, '/') && !sl_contains(out, t))
				sl_push(out, t);
		}
		sl_free(&l);
	}
	free(text);
	free(p);
	return ok;
}

size_t ext_scan(const char *site, double deadline, ext_fn fn, void *ctx)
{
	struct walk w = {deadline, 0, 0, fn, ctx};
	DIR *d = sysroot_opendir(site);
	if (!d)
		return 0;
	strlist dirs = {0}, files = {0}, distinfos = {0};
	struct dirent *de;
	int seen = 0;
	while ((de = next_visible(d, &seen))) {
		const char *n = de->d_name;
		if (str_ends(n, ".dist-info") || str_ends(n, ".egg-info")) {
			sl_push(&distinfos, n);
			continue;
		}
		unsigned char type = entry_type(site, de);
		if (type == DT_DIR && !skip_dir(n))
			sl_push(&dirs, n);
		else if (type == DT_REG && is_so_name(n))
			sl_push(&files, n);
	}
	closedir(d);
	/* pip's RECORD files name every file a package installed: a directory they cover is not
	 * walked (transformers alone has hundreds of model directories, botocore thousands) */
	strlist covered = {0}, sos = {0}, walk = {0};
	bool unsure = false; /* a package without RECORD nor top_level.txt: who owns what is unknown, walk all */
	for (size_t i = 0; i < distinfos.n; i++)
		if (!str_ends(distinfos.v[i], ".dist-info") || !record_read(site, distinfos.v[i], &covered, &sos))
			/* no RECORD (eggs, some conda builds): walk its tops */
			unsure |= !top_level_names(site, distinfos.v[i], &walk);
	if (unsure) {
		sl_free(&covered);
		sl_free(&sos);
	}
	for (size_t i = 0; i < files.n; i++) { /* top-level modules: the package is the name up to the first dot */
		char pkg[128], *p = xasprintf("%s/%s", site, files.v[i]);
		str_copy(pkg, sizeof(pkg), files.v[i]);
		pkg[strcspn(pkg, ".")] = '\0';
		ext_file(&w, p, pkg);
		free(p);
	}
	for (size_t i = 0; i < sos.n; i++) {
		char pkg[256], *p = xasprintf("%s/%s", site, sos.v[i]);
		str_copy(pkg, sizeof(pkg), sos.v[i]);
		pkg[strcspn(pkg, "/")] = '\0';
		struct stat st;
		/* a RECORD may be stale: only what is there, and only regular files */
		if (sysroot_lstat(p, &st) == 0 && S_ISREG(st.st_mode))
			ext_file(&w, p, pkg);
		free(p);
	}
	for (size_t i = 0; i < dirs.n; i++) {
		if (sl_contains(&covered, dirs.v[i]) && !sl_contains(&walk, dirs.v[i]))
			continue;
		char *p = xasprintf("%s/%s", site, dirs.v[i]);
		walk_dir(&w, p, dirs.v[i], 1);
		free(p);
	}
	sl_free(&dirs);
	sl_free(&files);
	sl_free(&distinfos);
	sl_free(&covered);
	sl_free(&sos);
	sl_free(&walk);
	return w.found;
}

void lib_file_version(const char *abs, char *out, size_t n, char **real)
{
	char *r = sysroot_realpath(abs);
	const char *name = strrchr(r ? r : abs, '/');
	name = name ? name + 1 : abs;
	char v1[64] = "", v2[64] = "";
	pyparse_so_version(name, v1, sizeof(v1));
	const char *own = strrchr(abs, '/');
	pyparse_so_version(own ? own + 1 : abs, v2, sizeof(v2));
	/* the resolved name carries the full version when the link names only the major */
	str_copy(out, n, strlen(v1) >= strlen(v2) ? v1 : v2);
	if (real)
		*real = r;
	else
		free(r);
}
