/*
 * Python and PyTorch, read statically (no interpreter is started): the interpreters on the
 * machine, the selected one's site-packages, torch's version.py and dist-info, the nvidia-* wheels,
 * conda packages, the RUNPATH and device architectures of libtorch_cuda.so, CUDA extension modules,
 * and which copy of each CUDA library the loader would give torch.
 *
 * Facts: python.*  (see docs/facts/python.md)
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "kb/kb_torch.h"
#include "probes/probes.h"

/* where the interpreters are looked for */
#define PY_PLACES "VIRTUAL_ENV, CONDA_PREFIX, pyenv (PYENV_VERSION, PYENV_ROOT), PATH"
/* where torch is looked for */
#define PY_SITES "the interpreter's site-packages and PYTHONPATH"
/* the libraries torch loads, by the loader simulation */
#define PY_LOADER "loader simulation: torch's RUNPATH, LD_LIBRARY_PATH, /etc/ld.so.cache"
#include "elf/elf.h"
#include "python/ldsim.h"
#include "python/pyenv.h"
#include "parse/pyparse.h"
#include "python/pysite.h"

#define MAX_LIBS 64
#define MAX_EXTS 64
/* time the static probe may spend reading device code of big libraries (libtorch_cuda.so is ~1 GB) */
#define FATBIN_BUDGET_S 0.2
#define EXT_BUDGET_S 0.2

/* The torch directories reachable from an interpreter, in sys.path order (the first one wins). */
static void find_torch_dirs(const strlist *sites, strlist *torch_dirs, strlist *torch_sites)
{
	for (size_t i = 0; i < sites->n; i++) {
		char *t = xasprintf("%s/torch", sites->v[i]);
		char *vp = xasprintf("%s/version.py", t);
		char *ip = xasprintf("%s/__init__.py", t);
		if (sysroot_exists(vp) || sysroot_exists(ip)) {
			sl_push(torch_dirs, t);
			sl_push(torch_sites, sites->v[i]);
		}
		free(t);
		free(vp);
		free(ip);
	}
}

static void interp_summary(facts *f, const py_env *env, const py_list *l)
{
	facts_put_int(f, PY_PLACES, (long long)l->n, FK_PYTHON_INTERPRETERS_COUNT);
	for (size_t i = 0; i < l->n; i++) {
		const py_interp *py = &l->v[i];
		facts_put_str(f, py->path, py->path, FK_PYTHON_INTERPRETERS_PATH(zu), i);
		facts_put_str(f, py->path, py->prefix, FK_PYTHON_INTERPRETERS_PREFIX(zu), i);
		facts_put_str(f, py->path, py->kind, FK_PYTHON_INTERPRETERS_KIND(zu), i);
		facts_put_str(f, py->path, py->origin, FK_PYTHON_INTERPRETERS_ORIGIN(zu), i);
		facts_put_bool(f, py->path, py->exists, FK_PYTHON_INTERPRETERS_EXISTS(zu), i);
		if (py->version[0])
			facts_put_str(f, py->path, py->version, FK_PYTHON_INTERPRETERS_VERSION(zu), i);
		else
			facts_put_state(f, FACT_ABSENT, py->prefix, "no lib/pythonX.Y found", FK_PYTHON_INTERPRETERS_VERSION(zu), i);
		strlist sites = {0}, tdirs = {0}, tsites = {0};
		py_site_dirs(py, env, &sites, NULL);
		find_torch_dirs(&sites, &tdirs, &tsites);
		torch_version_info tv;
		if (tdirs.n && torch_read_version(tdirs.v[0], &tv) == 0)
			facts_put_str(f, tdirs.v[0], tv.version, FK_PYTHON_INTERPRETERS_TORCH(zu), i);
		else if (tdirs.n)
			facts_put_str(f, tdirs.v[0], "unknown", FK_PYTHON_INTERPRETERS_TORCH(zu), i);
		else
			facts_put_state(f, FACT_ABSENT, py->path, "torch not installed", FK_PYTHON_INTERPRETERS_TORCH(zu), i);
		sl_free(&sites);
		sl_free(&tdirs);
		sl_free(&tsites);
	}
}

static void put_torch_version(facts *f, const char *tdir, const torch_version_info *tv)
{
	char src[PATH_MAX];
	snprintf(src, sizeof(src), "%s/version.py", tdir);
	facts_put_str(f, src, tv->version, FK_PYTHON_TORCH_VERSION);
	if (tv->cuda[0])
		facts_put_str(f, src, tv->cuda, FK_PYTHON_TORCH_CUDA);
	else
		facts_put_state(f, FACT_ABSENT, src, tv->cuda_none ? "torch.version.cuda is None" : "no cuda field",
				FK_PYTHON_TORCH_CUDA);
	if (tv->hip[0])
		facts_put_str(f, src, tv->hip, FK_PYTHON_TORCH_HIP);
	if (tv->git_version[0])
		facts_put_str(f, src, tv->git_version, FK_PYTHON_TORCH_GIT_VERSION);
	char label[32], variant[32];
	torch_version_label(tv->version, label, sizeof(label));
	if (label[0])
		str_copy(variant, sizeof(variant), label);
	else if (tv->hip[0])
		snprintf(variant, sizeof(variant), "rocm");
	else if (!tv->cuda[0])
		str_copy(variant, sizeof(variant), "cpu");
	else if (!torch_cuda_variant(tv->cuda, variant, sizeof(variant)))
		str_copy(variant, sizeof(variant), "unknown");
	facts_put_str(f, src, variant, FK_PYTHON_TORCH_VARIANT);
}

static const char *const OWNER_PREFIXES[] = {"nvidia-", "cuda-", NULL};

typedef struct lib_job {
	char soname[128];
} lib_job;

static bool cuda_lib_name(const char *n)
{
	static const char *const pfx[] = {"libcud", "libcublas", "libnccl", "libnvrtc", "libnvJitLink", "libnvjitlink",
					  "libcusparse", "libcufft", "libcurand", "libcusolver", "libcupti",
					  "libnvToolsExt", "libcufile", "libnvshmem", "libcusparseLt"};
	if (str_starts(n, "libcuda.so")) /* the driver: not torch's to ship */
		return false;
	for (size_t i = 0; i < GV_ARRAY_LEN(pfx); i++)
		if (str_starts(n, pfx[i]))
			return strstr(n, ".so") != NULL;
	return false;
}

/* The sonames torch needs: CUDA-library NEEDED entries of libtorch_cuda.so, and the libraries in
 * the nvidia pip directories its RUNPATH names (cuDNN's sub-libraries are opened at run time). */
static void torch_sonames(const elf_dyn *e, const strlist *runpath, strlist *sonames)
{
	for (size_t i = 0; i < e->needed.n && sonames->n < MAX_LIBS; i++)
		if (cuda_lib_name(e->needed.v[i]) && !sl_contains(sonames, e->needed.v[i]))
			sl_push(sonames, e->needed.v[i]);
	for (size_t d = 0; d < runpath->n; d++) {
		if (!strstr(runpath->v[d], "/nvidia/"))
			continue;
		DIR *dir = sysroot_opendir(runpath->v[d]);
		if (!dir)
			continue;
		strlist names = {0};
		struct dirent *de;
		while ((de = readdir(dir)) && names.n < 256)
			if (cuda_lib_name(de->d_name) && strstr(de->d_name, ".so."))
				sl_push(&names, de->d_name);
		closedir(dir);
		for (size_t a = 1; a < names.n; a++)
			for (size_t b = a; b > 0 && strcmp(names.v[b - 1], names.v[b]) > 0; b--) {
				char *t = names.v[b];
				names.v[b] = names.v[b - 1];
				names.v[b - 1] = t;
			}
		for (size_t i = 0; i < names.n && sonames->n < MAX_LIBS; i++) {
			/* "libcudnn.so.9" yes; "libcudnn.so.9.1.0" only when it is the soname itself */
			const char *so = strstr(names.v[i], ".so.");
			if (so && strchr(so + 4, '.'))
				continue;
			if (!sl_contains(sonames, names.v[i]))
				sl_push(sonames, names.v[i]);
		}
		sl_free(&names);
	}
}

static void copy_version(const pip_owners *owners, const char *path, char *ver, size_t n, const char **owner)
{
	const char *pv = NULL;
	const char *o = pip_owner(owners, path, &pv);
	if (owner)
		*owner = o;
	if (o && pv)
		str_copy(ver, n, pv);
	else
		lib_file_version(path, ver, n, NULL);
}

/* The dynamic section of libtorch_cuda.so, as the toolkit layer's ELF reader gives it. */
static void loader_simulation(facts *f, const char *torch_dir, const elf_dyn *e, const pip_owners *owners,
			      const strlist *pin_names, const strlist *pin_versions)
{
	char origin[PATH_MAX];
	snprintf(origin, sizeof(origin), "%s/lib", torch_dir);
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (llp)
		facts_put_str(f, "environment", llp, FK_PYTHON_LD_LIBRARY_PATH);
	else
		facts_put_state(f, FACT_ABSENT, "environment", "LD_LIBRARY_PATH is not set", FK_PYTHON_LD_LIBRARY_PATH);
	ldsim s;
	ldsim_init(&s, llp);
	strlist runpath = {0}, sonames = {0};
	ldsim_expand_path(&s, e->runpath ? e->runpath : e->rpath, origin, &runpath);
	torch_sonames(e, &runpath, &sonames);
	size_t n = 0;
	for (size_t i = 0; i < sonames.n; i++) {
		const char *so = sonames.v[i];
		ld_hit *hits;
		size_t nh = ldsim_search(&s, so, origin, e->rpath, e->runpath, &hits);
		facts_put_str(f, PY_LOADER, so, FK_PYTHON_LIB_SONAME(zu), n);
		/* the copy torch expects: the first in its own RUNPATH/RPATH */
		const char *expected = NULL;
		for (size_t d = 0; d < runpath.n && !expected; d++)
			for (size_t h = 0; h < nh && !expected; h++)
				if (str_starts(hits[h].path, runpath.v[d]) && hits[h].path[strlen(runpath.v[d])] == '/' &&
				    !strchr(hits[h].path + strlen(runpath.v[d]) + 1, '/'))
					expected = hits[h].path;
		if (expected) {
			char ver[64];
			const char *owner = NULL;
			copy_version(owners, expected, ver, sizeof(ver), &owner);
			facts_put_str(f, PY_LOADER, expected, FK_PYTHON_LIB_EXPECTED(zu), n);
			char *real = sysroot_realpath(expected);
			if (real)
				facts_put_str(f, PY_LOADER, real, FK_PYTHON_LIB_EXPECTED_REAL(zu), n);
			free(real);
			if (ver[0])
				facts_put_str(f, PY_LOADER, ver, FK_PYTHON_LIB_EXPECTED_VERSION(zu), n);
			if (owner) {
				facts_put_str(f, PY_LOADER, owner, FK_PYTHON_LIB_EXPECTED_PACKAGE(zu), n);
				for (size_t p = 0; p < pin_names->n; p++)
					if (strcmp(pin_names->v[p], owner) == 0)
						facts_put_str(f, "torch METADATA Requires-Dist", pin_versions->v[p],
							      FK_PYTHON_LIB_PINNED_VERSION(zu), n);
			}
		} else {
			facts_put_state(f, FACT_ABSENT, PY_LOADER, "not in torch's RUNPATH", FK_PYTHON_LIB_EXPECTED(zu), n);
		}
		if (nh) {
			char ver[64];
			copy_version(owners, hits[0].path, ver, sizeof(ver), NULL);
			facts_put_str(f, hits[0].via, hits[0].path, FK_PYTHON_LIB_PICKED(zu), n);
			char *preal = sysroot_realpath(hits[0].path);
			if (preal)
				facts_put_str(f, PY_LOADER, preal, FK_PYTHON_LIB_PICKED_REAL(zu), n);
			free(preal);
			facts_put_str(f, PY_LOADER, hits[0].via, FK_PYTHON_LIB_PICKED_VIA(zu), n);
			if (ver[0])
				facts_put_str(f, PY_LOADER, ver, FK_PYTHON_LIB_PICKED_VERSION(zu), n);
			strbuf sb;
			sb_init(&sb);
			for (size_t h = 0; h < nh && h < 16; h++) {
				char v[64];
				copy_version(owners, hits[h].path, v, sizeof(v), NULL);
				sb_addf(&sb, "%s%s (%s, %s)", h ? "; " : "", hits[h].path, v[0] ? v : "version unknown",
					hits[h].via);
				facts_put_str(f, PY_LOADER, hits[h].path, FK_PYTHON_LIB_COPY_PATH(zu, zu), n, h);
				if (hits[h].real)
					facts_put_str(f, PY_LOADER, hits[h].real, FK_PYTHON_LIB_COPY_REAL(zu, zu), n, h);
				if (v[0])
					facts_put_str(f, PY_LOADER, v, FK_PYTHON_LIB_COPY_VERSION(zu, zu), n, h);
				facts_put_str(f, PY_LOADER, hits[h].via, FK_PYTHON_LIB_COPY_VIA(zu, zu), n, h);
			}
			facts_put_str(f, PY_LOADER, sb.buf, FK_PYTHON_LIB_COPIES(zu), n);
			facts_put_int(f, PY_LOADER, (long long)nh, FK_PYTHON_LIB_COPIES_COUNT(zu), n);
			sb_free(&sb);
		} else {
			facts_put_state(f, FACT_ABSENT, PY_LOADER, "no copy on the loader's search path", FK_PYTHON_LIB_PICKED(zu), n);
			facts_put_int(f, PY_LOADER, 0, FK_PYTHON_LIB_COPIES_COUNT(zu), n);
		}
		ldsim_hits_free(hits, nh);
		n++;
	}
	facts_put_int(f, PY_LOADER, (long long)n, FK_PYTHON_LIB_COUNT);
	ldsim_free(&s);
	sl_free(&runpath);
	sl_free(&sonames);
}

static void inspect_libtorch_cuda(facts *f, const char *torch_dir, const pip_owners *owners, const strlist *pin_names,
				  const strlist *pin_versions)
{
	char *lib = xasprintf("%s/lib/libtorch_cuda.so", torch_dir);
	if (!sysroot_exists(lib)) {
		facts_put_state(f, FACT_ABSENT, lib, "no libtorch_cuda.so (a CPU or ROCm build)", FK_PYTHON_TORCH_LIB_CUDA);
		free(lib);
		return;
	}
	const char *err = NULL;
	elf_image *img = elf_open_file(lib, &err);
	if (!img) {
		facts_put_state(f, FACT_ERROR, lib, err ? err : "unreadable", FK_PYTHON_TORCH_LIB_CUDA);
		free(lib);
		return;
	}
	facts_put_str(f, lib, lib, FK_PYTHON_TORCH_LIB_CUDA);
	elf_dyn dyn;
	if (elf_read_dynamic(img, &dyn, &err) != 0) {
		facts_put_state(f, FACT_ERROR, lib, err ? err : "no dynamic section", FK_PYTHON_TORCH_RUNPATH);
		memset(&dyn, 0, sizeof(dyn));
	} else if (dyn.runpath) {
		facts_put_str(f, lib, dyn.runpath, FK_PYTHON_TORCH_RUNPATH);
	} else {
		facts_put_state(f, FACT_ABSENT, lib, "no DT_RUNPATH", FK_PYTHON_TORCH_RUNPATH);
	}
	if (dyn.rpath)
		facts_put_str(f, lib, dyn.rpath, FK_PYTHON_TORCH_RPATH);
	fatbin_summary s;
	fatbin_limits lim = {0, now_seconds() + FATBIN_BUDGET_S};
	if (fatbin_scan_elf(img, &lim, &s)) {
		char arch[1024];
		fatbin_arch_text(&s, arch, sizeof(arch));
		facts_put_str(f, lib, arch, FK_PYTHON_TORCH_ARCH);
		facts_put_bool(f, lib, !s.incomplete, FK_PYTHON_TORCH_ARCH_COMPLETE);
		facts_put_int(f, lib, s.containers, FK_PYTHON_TORCH_FATBIN_CONTAINERS);
		if (s.malformed)
			facts_put_int(f, lib, s.malformed, FK_PYTHON_TORCH_FATBIN_MALFORMED);
	} else {
		facts_put_state(f, FACT_ABSENT, lib, "no .nv_fatbin section", FK_PYTHON_TORCH_ARCH);
	}
	loader_simulation(f, torch_dir, &dyn, owners, pin_names, pin_versions);
	elf_dyn_free(&dyn);
	elf_close(img);
	free(lib);
}

struct ext_ctx {
	facts *f;
	size_t n;
};

static void ext_found(const char *abs, const char *package, const fatbin_summary *s, void *ctx)
{
	struct ext_ctx *c = ctx;
	if (c->n >= MAX_EXTS)
		return;
	char arch[1024];
	fatbin_arch_text(s, arch, sizeof(arch));
	facts_put_str(c->f, abs, abs, FK_PYTHON_EXT_PATH(zu), c->n);
	facts_put_str(c->f, abs, package, FK_PYTHON_EXT_PACKAGE(zu), c->n);
	facts_put_str(c->f, abs, arch, FK_PYTHON_EXT_ARCH(zu), c->n);
	facts_put_bool(c->f, abs, !s->incomplete, FK_PYTHON_EXT_COMPLETE(zu), c->n);
	c->n++;
}

static void conda_facts(facts *f, const char *prefix)
{
	conda_pkgs c;
	char *meta = xasprintf("%s/conda-meta", prefix);
	if (!conda_list(prefix, &c)) {
		facts_put_bool(f, meta, false, FK_PYTHON_CONDA_ENV);
		free(meta);
		return;
	}
	facts_put_bool(f, meta, true, FK_PYTHON_CONDA_ENV);
	for (size_t i = 0; i < c.names.n; i++) {
		facts_put_str(f, meta, c.versions.v[i], FK_PYTHON_CONDA_VERSION, c.names.v[i]);
		facts_put_str(f, meta, c.builds.v[i], FK_PYTHON_CONDA_BUILD, c.names.v[i]);
	}
	conda_pkgs_free(&c);
	free(meta);
}

/* What a pip line needs of the interpreter: is it externally managed (PEP 668: EXTERNALLY-MANAGED
 * beside the standard library; pip ignores it inside a venv), is pip importable from one of its
 * site directories, and can `-m venv` bootstrap pip (ensurepip: Debian and Ubuntu ship it in
 * python3.X-venv). */
static void install_facts(facts *f, const py_interp *py, const strlist *sites)
{
	if (!py->version[0])
		return;
	const char *base = strcmp(py->base_prefix, "/") == 0 ? "" : py->base_prefix;
	char *marker = xasprintf("%s/lib/python%s/EXTERNALLY-MANAGED", base, py->version);
	bool venv = strcmp(py->kind, "venv") == 0;
	facts_put_bool(f, marker, !venv && sysroot_exists(marker), FK_PYTHON_EXTERNALLY_MANAGED);
	char *ensure = xasprintf("%s/lib/python%s/ensurepip/__init__.py", base, py->version);
	facts_put_bool(f, ensure, sysroot_exists(ensure), FK_PYTHON_ENSUREPIP);
	const char *pip_at = NULL;
	for (size_t i = 0; i < sites->n && !pip_at; i++) {
		char *p = xasprintf("%s/pip/__init__.py", sites->v[i]);
		if (sysroot_exists(p))
			pip_at = sites->v[i];
		free(p);
	}
	if (pip_at)
		facts_put_bool(f, pip_at, true, FK_PYTHON_PIP_MODULE);
	else
		facts_put_bool(f, py->path, false, FK_PYTHON_PIP_MODULE);
	free(marker);
	free(ensure);
}

/* One stage's time (meta.stage_seconds.NAME): the probe's share of a check is known, its
 * stages' are not, and this probe walks whatever a site directory holds. Returns the clock. */
static double stage_done(facts *f, const char *name, double t0)
{
	double t = now_seconds();
	facts_put_real(f, "gpuvet's clock: the stage's run time", t - t0, FK_META_STAGE_SECONDS, name);
	return t;
}

static void inspect_selected(facts *f, const py_env *env, const py_interp *py, bool fast)
{
	double t_sites = now_seconds();
	facts_put_str(f, PY_PLACES, py->path, FK_PYTHON_SELECTED);
	facts_put_str(f, PY_PLACES, py->origin, FK_PYTHON_SELECTED_ORIGIN);
	facts_put_str(f, py->path, py->kind, FK_PYTHON_KIND);
	facts_put_str(f, py->path, py->prefix, FK_PYTHON_PREFIX);
	facts_put_bool(f, py->path, py->exists, FK_PYTHON_EXISTS);
	if (py->version[0])
		facts_put_str(f, py->prefix, py->version, FK_PYTHON_VERSION);
	else
		facts_put_state(f, FACT_ABSENT, py->prefix, "no lib/pythonX.Y found", FK_PYTHON_VERSION);
	conda_facts(f, py->prefix);

	strlist sites = {0}, kinds = {0};
	py_site_dirs(py, env, &sites, &kinds);
	facts_put_int(f, py->path, (long long)sites.n, FK_PYTHON_SITE_COUNT);
	for (size_t i = 0; i < sites.n; i++) {
		facts_put_str(f, py->path, sites.v[i], FK_PYTHON_SITE_PATH(zu), i);
		facts_put_str(f, py->path, kinds.v[i], FK_PYTHON_SITE_KIND(zu), i);
	}
	install_facts(f, py, &sites);
	strlist tdirs = {0}, tsites = {0};
	find_torch_dirs(&sites, &tdirs, &tsites);
	facts_put_int(f, py->path, (long long)tdirs.n, FK_PYTHON_TORCH_INSTALLS_COUNT);
	for (size_t i = 0; i < tdirs.n; i++) {
		torch_version_info tv;
		facts_put_str(f, tdirs.v[i], tdirs.v[i], FK_PYTHON_TORCH_INSTALLS_PATH(zu), i);
		if (torch_read_version(tdirs.v[i], &tv) == 0)
			facts_put_str(f, tdirs.v[i], tv.version, FK_PYTHON_TORCH_INSTALLS_VERSION(zu), i);
	}

	double t = stage_done(f, "python.sites", t_sites);
	/* the wheels of every site directory (first one wins for a name) */
	pip_owners owners = {0};
	strlist pin_names = {0}, pin_versions = {0};
	strlist seen = {0};
	for (size_t i = 0; i < sites.n; i++) {
		pip_dists d;
		pip_list(sites.v[i], &d);
		for (size_t k = 0; k < d.n; k++) {
			const char *n = d.v[k].name;
			bool interesting = str_starts(n, "nvidia-") || str_starts(n, "cuda-") || strcmp(n, "torch") == 0 ||
					   strcmp(n, "torchvision") == 0 || strcmp(n, "torchaudio") == 0 ||
					   strcmp(n, "triton") == 0 || strcmp(n, "pytorch-triton") == 0 ||
					   strcmp(n, "flash-attn") == 0 || strcmp(n, "xformers") == 0 ||
					   strcmp(n, "bitsandbytes") == 0 || strcmp(n, "vllm") == 0 ||
					   strcmp(n, "apex") == 0 || strcmp(n, "deepspeed") == 0;
			if (!interesting || sl_contains(&seen, n) || seen.n >= 256)
				continue;
			sl_push(&seen, n);
			char mname[96], mver[48];
			pip_metadata(&d.v[k], mname, sizeof(mname), mver, sizeof(mver));
			facts_put_str(f, d.v[k].meta_dir, mver, FK_PYTHON_PIP, n);
			if (strcmp(n, "torch") == 0 && tsites.n && strcmp(sites.v[i], tsites.v[0]) == 0) {
				char *mp = xasprintf("%s/METADATA", d.v[k].meta_dir);
				char *text = NULL;
				if (sysroot_read(mp, 1 << 20, &text, NULL, NULL) == 0) {
					pyparse_requires_pins(text, &pin_names, &pin_versions);
					free(text);
				}
				free(mp);
			}
		}
		pip_owners_add(&owners, sites.v[i], &d, OWNER_PREFIXES);
		pip_dists_free(&d);
	}
	for (size_t p = 0; p < pin_names.n; p++)
		facts_put_str(f, "torch METADATA", pin_versions.v[p], FK_PYTHON_TORCH_REQUIRES, pin_names.v[p]);
	t = stage_done(f, "python.pip", t);

	if (tdirs.n) {
		torch_version_info tv;
		int rc = torch_read_version(tdirs.v[0], &tv);
		facts_put_bool(f, PY_SITES, true, FK_PYTHON_TORCH_INSTALLED);
		facts_put_str(f, PY_SITES, tdirs.v[0], FK_PYTHON_TORCH_LOCATION);
		for (size_t i = 0; i < sites.n; i++)
			if (strcmp(sites.v[i], tsites.v[0]) == 0)
				facts_put_str(f, tdirs.v[0], kinds.v[i], FK_PYTHON_TORCH_SITE_KIND);
		if (rc == 0) {
			put_torch_version(f, tdirs.v[0], &tv);
		} else {
			char *vp = xasprintf("%s/version.py", tdirs.v[0]);
			if (rc == -EINVAL && sysroot_is_regular(vp))
				facts_put_state(f, FACT_UNPARSABLE, vp, "no __version__ in version.py", FK_PYTHON_TORCH_VERSION);
			else
				facts_put_read_error(f, vp, rc, "no version.py", FK_PYTHON_TORCH_VERSION);
			free(vp);
		}
		inspect_libtorch_cuda(f, tdirs.v[0], &owners, &pin_names, &pin_versions);
	} else {
		facts_put_bool(f, PY_SITES, false, FK_PYTHON_TORCH_INSTALLED);
		facts_put_state(f, FACT_ABSENT, PY_SITES, "torch not installed", FK_PYTHON_TORCH_VERSION);
	}

	t = stage_done(f, "python.torch", t);
	/* CUDA extension modules of every site directory: each shared object's ELF is read, which
	 * --fast does not do (53 of the python probe's 71 ms in a venv with torch, cupy and jax on
	 * an H200 machine; ext.arch-missing is then not decided, and says why) */
	if (fast) {
		facts_put_state(f, FACT_ABSENT, "--fast", "skipped by --fast (the extension scan reads every shared object)",
				FK_PYTHON_EXT_COUNT);
		goto done;
	}
	struct ext_ctx ec = {f, 0};
	double deadline = now_seconds() + EXT_BUDGET_S;
	for (size_t i = 0; i < sites.n; i++)
		ext_scan(sites.v[i], deadline, ext_found, &ec);
	/* and the ones torch.utils.cpp_extension.load/load_inline built (TORCH_EXTENSIONS_DIR, by
	 * default ~/.cache/torch_extensions): the usual home of an extension built for another GPU */
	const char *tx = getenv("TORCH_EXTENSIONS_DIR");
	char home[PATH_MAX];
	char *jit = tx && *tx ? xstrdup(sysroot_strip(tx))
			      : (*py_home(env, home, sizeof(home)) ? xasprintf("%s/.cache/torch_extensions", home) : NULL);
	if (jit) {
		ext_scan(jit, deadline, ext_found, &ec);
		free(jit);
	}
	facts_put_int(f, PY_SITES, (long long)ec.n, FK_PYTHON_EXT_COUNT);
	stage_done(f, "python.ext", t);
done:

	pip_owners_free(&owners);
	sl_free(&pin_names);
	sl_free(&pin_versions);
	sl_free(&seen);
	sl_free(&tdirs);
	sl_free(&tsites);
	sl_free(&sites);
	sl_free(&kinds);
}

void probe_python(facts *f, const probe_opts *o)
{
	py_env env;
	py_list l;
	double t = now_seconds();
	py_discover_process(o->python, &env, &l);
	interp_summary(f, &env, &l);
	t = stage_done(f, "python.discover", t);
	if (l.path_python)
		facts_put_str(f, "PATH", l.path_python, FK_PYTHON_PATH_PYTHON);
	else
		facts_put_state(f, FACT_ABSENT, "PATH", "no python3 or python on PATH", FK_PYTHON_PATH_PYTHON);
	if (l.selected < 0) {
		facts_put_state(f, FACT_ABSENT, PY_PLACES, "no Python interpreter found", FK_PYTHON_SELECTED);
		facts_put_bool(f, PY_SITES, false, FK_PYTHON_TORCH_INSTALLED);
	} else {
		facts_put_int(f, PY_PLACES, l.selected, FK_PYTHON_SELECTED_INDEX);
		inspect_selected(f, &env, &l.v[l.selected], o->fast);
	}
	py_list_free(&l);
}
