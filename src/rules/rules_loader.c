/* Rules of the loader layer: duplicate CUDA libraries, stale LD_LIBRARY_PATH entries, a runtime
 * newer than the driver, a cuDNN built for another CUDA major. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "kb/kb_cudnn.h"
#include "loader/loader.h"
#include "toolkit/cudalibs.h"
#include "core/shell.h"
#include "rules/cuda_facts.h"
#include "rules/registry.h"

static int lib_count(const facts *f)
{
	return (int)facts_int_or(f, 0, FK_LOADER_LIB_COUNT);
}

static int pick_count(const facts *f)
{
	return (int)facts_int_or(f, 0, FK_LOADER_PICK_COUNT);
}

/* The pick whose real file is copy k, as text for evidence ("picked by dlopen via ld.so.cache"). */
static const char *picked_note(const facts *f, int k)
{
	for (int p = 0; p < pick_count(f); p++)
		if (facts_int_or(f, -1, FK_LOADER_PICK_LIB(d), p) == k) {
			const char *via = facts_str(f, FK_LOADER_PICK_VIA(d), p);
			static __thread char buf[128];
			snprintf(buf, sizeof(buf), " <- dlopen(\"%s\") picks this one (%s)",
				 facts_str(f, FK_LOADER_PICK_SONAME(d), p), via ? via : "?");
			return buf;
		}
	return "";
}

/* Libraries reported on their own; cuDNN's sub-libraries follow libcudnn. */
static const char *const main_libs[] = {"cudart", "cublas", "cublasLt", "cudnn", "nccl", "nvrtc",
					"nvJitLink", "cusparse", "nvidia-ml", "cuda", NULL};

/* A library copy of the loader's list, read once (the rule compares each with every main library). */
typedef struct lib_copy {
	const char *name, *version;
	bool stub;
} lib_copy;

static void lib_duplicates(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	int n = lib_count(f);
	lib_copy *libs = xcalloc(n > 0 ? (size_t)n : 1, sizeof(*libs));
	for (int k = 0; k < n; k++)
		libs[k] = (lib_copy){facts_str(f, FK_LOADER_LIB_NAME(d), k), facts_str(f, FK_LOADER_LIB_VERSION(d), k),
				     facts_true(f, FK_LOADER_LIB_STUB(d), k)};
	for (int m = 0; main_libs[m]; m++) {
		/* distinct known versions of this library */
		strlist versions = {0};
		for (int k = 0; k < n; k++) {
			const lib_copy *l = &libs[k];
			if (l->name && l->version && strcmp(l->name, main_libs[m]) == 0 && !l->stub &&
			    !sl_contains(&versions, l->version))
				sl_push(&versions, l->version);
		}
		if (versions.n >= 2) {
			if (!x)
				x = rule_emit(c, "several copies of CUDA libraries with different versions are on the search paths");
			for (int k = 0; k < n; k++) {
				const lib_copy *l = &libs[k];
				if (!l->name || strcmp(l->name, main_libs[m]) != 0 || l->stub)
					continue;
				finding_evidence(x, "lib%s %s: %s%s", l->name, l->version ? l->version : "(version unknown)",
						 facts_str(f, FK_LOADER_LIB_PATH(d), k), picked_note(f, k));
			}
		}
		sl_free(&versions);
	}
	free(libs);
	/* cuDNN's sub-libraries must all come from the same release as libcudnn */
	const char *main_v = NULL;
	for (int p = 0; p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p);
		if (name && strcmp(name, "cudnn") == 0)
			main_v = facts_str(f, FK_LOADER_PICK_VERSION(d), p);
	}
	for (int p = 0; main_v && p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p), *v = facts_str(f, FK_LOADER_PICK_VERSION(d), p);
		if (!name || !str_starts(name, "cudnn_") || !v || strcmp(v, main_v) == 0)
			continue;
		if (!x)
			x = rule_emit(c, "several copies of CUDA libraries with different versions are on the search paths");
		finding_evidence(x, "dlopen(\"%s\") picks cuDNN %s at %s, but libcudnn is %s: cuDNN fails with "
				    "CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH",
				 facts_str(f, FK_LOADER_PICK_SONAME(d), p), v, facts_str(f, FK_LOADER_PICK_PATH(d), p), main_v);
	}
	if (!x)
		return;
	finding_fix(x, "keep one copy of each library on the search paths; find the package of a copy with "
		       "dpkg -S PATH (or rpm -qf PATH) and remove the one you do not use");
	finding_fix(x, "gpuvet env --scan lists every copy on disk");
}

static void ld_path_stale(rule_ctx *c)
{
	const facts *f = c->facts;
	int n = (int)facts_int_or(f, 0, FK_LOADER_LD_LIBRARY_PATH_COUNT);
	if (n == 0)
		return;
	/* the reference runtime: CUDA_HOME's install, else the toolkit in use */
	int ref = cf_int(f, FK_TOOLKIT_CUDA_HOME_INSTALL);
	if (ref < 0)
		ref = cf_int(f, FK_TOOLKIT_ACTIVE);
	char ref_mm[32] = "";
	bool have_ref = ref >= 0 && cf_install_mm(f, ref, ref_mm, sizeof(ref_mm));
	finding *x = NULL;
	strbuf keep;
	sb_init(&keep);
	int stale = 0;
	for (int i = 0; i < n; i++) {
		const char *d = facts_str(f, FK_LOADER_LD_LIBRARY_PATH_DIR(d), i);
		if (!d)
			continue;
		const char *why = NULL;
		char buf[256];
		const char *cudart = facts_str(f, FK_LOADER_LD_LIBRARY_PATH_CUDART_VERSION(d), i);
		char mm[32];
		if (strcmp(d, ".") == 0)
			why = "an empty entry: the current directory, whatever it is when a program starts";
		else if (!facts_true(f, FK_LOADER_LD_LIBRARY_PATH_EXISTS(d), i))
			why = "does not exist";
		else if (have_ref && cudart && version_major_minor_text(cudart, mm, sizeof(mm)) && strcmp(mm, ref_mm) != 0) {
			snprintf(buf, sizeof(buf), "holds the CUDA %s runtime, but %s is CUDA %s", mm,
				 facts_str(f, FK_TOOLKIT_ROOT(d), ref), ref_mm);
			why = buf;
		}
		if (!why) {
			if (!loader_is_stubs_dir(d)) /* lib.stubs-on-path names it; a rewrite drops it */
				sb_addf(&keep, "%s%s", keep.len ? ":" : "", d);
			continue;
		}
		if (!x)
			x = rule_emit(c, "LD_LIBRARY_PATH has stale entries");
		finding_evidence(x, "%s: %s", d, why);
		stale++;
	}
	if (x) {
		char q[4096];
		if (keep.len && shell_word(q, sizeof(q), keep.buf))
			finding_fix_export(x, "LD_LIBRARY_PATH", q, NULL);
		else if (keep.len)
			finding_fix_refused(x, "the LD_LIBRARY_PATH value", keep.buf);
		else
			finding_fix_unset(x, "LD_LIBRARY_PATH", NULL);
		finding_fix(x, "and remove the old entries where they are set (~/.bashrc, ~/.profile, /etc/profile.d, "
			       "a module file or a job script)");
	}
	sb_free(&keep);
}

static void runtime_newer_than_driver(rule_ctx *c)
{
	const facts *f = c->facts;
	char max[32], why[256];
	if (!cf_driver_max_cuda(f, c->kb, max, sizeof(max), why, sizeof(why)))
		return;
	const char *drv = cf_driver_version(f);
	/* the cuda-compat package's libcuda, when it is what loads, raises the limit */
	for (int p = 0; p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p), *path = facts_str(f, FK_LOADER_PICK_PATH(d), p);
		const char *v = facts_str(f, FK_LOADER_PICK_VERSION(d), p);
		char cmax[32];
		if (name && strcmp(name, "cuda") == 0 && path && strstr(path, "/compat/") && v &&
		    kb_driver_max_cuda(c->kb, v, cmax, sizeof(cmax)) && version_cmp(cmax, max) > 0) {
			str_copy(max, sizeof(max), cmax);
			snprintf(why, sizeof(why), "the forward-compatibility libcuda %s (%s) supports CUDA up to %s", v, path,
				 cmax);
			drv = v;
		}
	}
	for (int p = 0; p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p), *v = facts_str(f, FK_LOADER_PICK_VERSION(d), p);
		if (!name || strcmp(name, "cudart") != 0 || !v)
			continue;
		char mm[32];
		if (!version_major_minor_text(v, mm, sizeof(mm)) || version_cmp(mm, max) <= 0)
			continue;
		/* same major: minor-version compatibility holds when the driver is at least the floor */
		char tk_min[64] = "", compat_min[64] = "";
		bool kb_ok = kb_cuda_min_driver(c->kb, mm, tk_min, sizeof(tk_min), compat_min, sizeof(compat_min));
		if (cf_major(mm) == cf_major(max)) {
			if (!drv || !kb_ok || !*compat_min || version_cmp(drv, compat_min) >= 0)
				continue;
		}
		finding *x = rule_emit(c, "the CUDA runtime that loads (%s) is newer than the driver supports (CUDA %s)", mm, max);
		finding_evidence(x, "dlopen(\"%s\") picks %s (CUDA %s, via %s)", facts_str(f, FK_LOADER_PICK_SONAME(d), p),
				 facts_str(f, FK_LOADER_PICK_PATH(d), p), v, facts_str(f, FK_LOADER_PICK_VIA(d), p));
		finding_evidence(x, "%s", why);
		finding_evidence(x, "programs using it fail with \"CUDA driver version is insufficient for CUDA runtime version\"");
		if (kb_ok)
			finding_fix(x, "upgrade the driver to %s or newer", tk_min);
		else
			finding_fix(x, "upgrade the driver to one that supports CUDA %s", mm);
		finding_fix(x, "or use a runtime this driver supports (CUDA %s or older): PyTorch wheels bring their own "
			       "(gpuvet fix names the build)",
			    max);
		x->rank = 1;
	}
}

/* The CUDA majors of the runtimes on the search paths (cudart picks), as a bit set. */
static unsigned long runtime_majors(const facts *f, strbuf *desc)
{
	unsigned long set = 0;
	for (int p = 0; p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p);
		if (!name || strcmp(name, "cudart") != 0 || !facts_str(f, FK_LOADER_PICK_PATH(d), p))
			continue;
		const char *so = facts_str(f, FK_LOADER_PICK_SONAME(d), p);
		const char *dot = so ? strstr(so, ".so.") : NULL;
		int m = dot ? atoi(dot + 4) : -1;
		if (m > 0 && m < 64) {
			set |= 1ul << m;
			sb_addf(desc, "%s%s -> %s", desc->len ? "; " : "", so, facts_str(f, FK_LOADER_PICK_PATH(d), p));
		}
	}
	return set;
}

static void cudnn_cuda_major(rule_ctx *c)
{
	const facts *f = c->facts;
	strbuf desc;
	sb_init(&desc);
	unsigned long rt = runtime_majors(f, &desc);
	if (!rt) {
		sb_free(&desc);
		return;
	}
	for (int p = 0; p < pick_count(f); p++) {
		const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p);
		if (!name || strcmp(name, "cudnn") != 0)
			continue;
		int k = (int)facts_int_or(f, -1, FK_LOADER_PICK_LIB(d), p);
		if (k < 0)
			continue;
		const char *v = facts_str(f, FK_LOADER_LIB_VERSION(d), k);
		long long built = facts_int_or(f, -1, FK_LOADER_LIB_CUDA_MAJOR(d), k);
		unsigned long can = 0;
		const char *how;
		if (built > 0 && built < 64) {
			can = 1ul << built;
			how = facts_str(f, FK_LOADER_LIB_CUDA_MAJOR_SOURCE(d), k);
		} else if (v && (can = kb_cudnn_cuda_majors(c->kb, v))) {
			how = "the cuDNN support matrix (knowledge base)";
		} else {
			continue; /* unknown: say nothing */
		}
		if (can & rt)
			continue;
		int want = -1;
		for (int m = 63; m > 0; m--)
			if (rt & (1ul << m)) {
				want = m;
				break;
			}
		finding *x = rule_emit(c, "cuDNN %s is built for another CUDA major than the runtime", v ? v : "");
		finding_evidence(x, "dlopen(\"%s\") picks %s", facts_str(f, FK_LOADER_PICK_SONAME(d), p),
				 facts_str(f, FK_LOADER_PICK_PATH(d), p));
		if (built > 0)
			finding_evidence(x, "it is built for CUDA %lld (%s)", built, how ? how : "?");
		else
			finding_evidence(x, "cuDNN %s has builds only for other CUDA majors (%s)", v, how);
		finding_evidence(x, "the CUDA runtime here: %s", desc.buf);
		int cm = cf_major(v);
		finding_fix(x, "install the cuDNN build for CUDA %d: sudo apt install libcudnn%d-cuda-%d "
			       "(NVIDIA's apt repository), or pip install nvidia-cudnn-cu%d",
			    want, cm > 0 ? cm : 9, want, want);
		finding_fix(x, "and remove the other build from the search path (dpkg -S %s names its package)",
			    shell_word_or_comment((char[4608]){0}, 4608, "the library", facts_str(f, FK_LOADER_LIB_PATH(d), k)));
	}
	sb_free(&desc);
}

/* ---- lib.stubs-on-path: the toolkit's link-time placeholders on the run-time search path ---- */

/* What a program that loads a stub instead of the real library sees. */
static const struct {
	const char *lib, *symptom;
} STUB_SYMPTOMS[] = {
	{"cuda", "cuInit fails with CUDA_ERROR_STUB_LIBRARY (34); the runtime says \"CUDA driver version is insufficient "
		 "for CUDA runtime version\" and torch.cuda.is_available() is False"},
	{"nvidia-ml", "every NVML call fails: nvidia-smi, nvitop, pynvml and gpuvet see no driver"},
	{"cublasLt", "prints \"You are running using the stub version of cublasLt\" and every call fails"},
	{"cublas", "prints a stub warning and every call fails (CUBLAS_STATUS_NOT_INITIALIZED)"},
};

static const char *stub_symptom(const char *lib)
{
	for (size_t i = 0; lib && i < GV_ARRAY_LEN(STUB_SYMPTOMS); i++)
		if (strcmp(STUB_SYMPTOMS[i].lib, lib) == 0)
			return STUB_SYMPTOMS[i].symptom;
	return NULL;
}

/* The first copy of lib that is not a stub: what the stub shadows. -1 when none. */
static int real_copy(const facts *f, const char *lib)
{
	for (int k = 0; k < lib_count(f); k++) {
		const char *name = facts_str(f, FK_LOADER_LIB_NAME(d), k);
		const char *path = facts_str(f, FK_LOADER_LIB_PATH(d), k);
		if (name && strcmp(name, lib) == 0 && !facts_true(f, FK_LOADER_LIB_STUB(d), k) && path) {
			char *d = xstrdup(path);
			char *slash = strrchr(d, '/');
			if (slash)
				*slash = '\0';
			bool stub = loader_is_stubs_dir(d);
			free(d);
			if (!stub)
				return k;
		}
	}
	return -1;
}

/* Evidence for one stubs directory; true when a versioned soname (what programs load at run time)
 * is among its files. *shadows: a stub stands before a real copy of its library. */
static bool stub_dir_evidence(const facts *f, finding *x, const char *dir, const char *files, const char *where,
			      bool *shadows)
{
	finding_evidence(x, "%s (%s) is a stubs directory: %s", dir, where, files && *files ? files : "no libraries in it");
	bool versioned = false;
	strlist names = {0};
	sl_split(&names, files ? files : "", ", ", false);
	strlist said = {0};
	for (size_t i = 0; i < names.n; i++) {
		const char *lib = cuda_lib_match(names.v[i]);
		const char *so = strstr(names.v[i], ".so");
		bool ver = so && so[3] == '.';
		versioned |= ver && lib;
		if (!lib || sl_contains(&said, lib))
			continue;
		sl_push(&said, lib);
		int k = real_copy(f, lib);
		const char *sym = stub_symptom(lib);
		if (k >= 0) {
			*shadows = true;
			const char *v = facts_str(f, FK_LOADER_LIB_VERSION(d), k);
			finding_evidence(x, "%s/%s shadows %s%s%s%s for a program that loads lib%s.so%s", dir, names.v[i],
					 facts_str(f, FK_LOADER_LIB_PATH(d), k), v ? " (" : "", v ? v : "", v ? ")" : "", lib,
					 ver ? " or its soname" : "");
			if (sym)
				finding_evidence(x, "with the stub lib%s: %s", lib, sym);
		} else if (sym) {
			finding_evidence(x, "%s/%s is the only lib%s found: %s", dir, names.v[i], lib, sym);
		}
	}
	sl_free(&said);
	sl_free(&names);
	return versioned;
}

static void stubs_on_path(rule_ctx *c)
{
	const facts *f = c->facts;
	finding *x = NULL;
	bool fail = false, conf = false, shadows = false;
	const char *llp = facts_str(f, FK_LOADER_LD_LIBRARY_PATH);
	for (int i = 0; i < facts_int_or(f, 0, FK_LOADER_LD_LIBRARY_PATH_COUNT) && i < 512; i++) {
		const char *d = facts_str(f, FK_LOADER_LD_LIBRARY_PATH_DIR(d), i);
		if (!loader_is_stubs_dir(d))
			continue;
		if (!x)
			x = rule_emit(c, "the CUDA toolkit's stubs directory is on the loader's search path: programs can load "
					 "link-time placeholders instead of the driver's libraries");
		fail |= stub_dir_evidence(f, x, d, facts_str(f, FK_LOADER_LD_LIBRARY_PATH_STUB_FILES(d), i), "in LD_LIBRARY_PATH",
					  &shadows);
	}
	for (int i = 0; i < facts_int_or(f, 0, FK_LOADER_CONF_COUNT) && i < 512; i++) {
		const char *d = facts_str(f, FK_LOADER_CONF_DIR(d), i);
		if (!loader_is_stubs_dir(d))
			continue;
		if (!x)
			x = rule_emit(c, "the CUDA toolkit's stubs directory is on the loader's search path: programs can load "
					 "link-time placeholders instead of the driver's libraries");
		conf = true;
		fail |= stub_dir_evidence(f, x, d, facts_str(f, FK_LOADER_CONF_STUB_FILES(d), i), "in /etc/ld.so.conf",
					  &shadows);
	}
	for (int p = 0; p < pick_count(f); p++) {
		const char *real = facts_str(f, FK_LOADER_PICK_REAL(d), p);
		if (!real)
			continue;
		char *d = xstrdup(real);
		char *slash = strrchr(d, '/');
		if (slash)
			*slash = '\0';
		if (loader_is_stubs_dir(d)) {
			/* also reached through a link from an ordinary directory (ln -s .../stubs/libcuda.so
			 * /usr/lib/x86_64-linux-gnu/libcuda.so.1): the stub is what programs get */
			if (!x)
				x = rule_emit(c, "a CUDA library the loader picks is the toolkit's stub: programs load a link-time "
						 "placeholder instead of the driver's library");
			const char *path = facts_str(f, FK_LOADER_PICK_PATH(d), p);
			const char *name = facts_str(f, FK_LOADER_PICK_NAME(d), p);
			const char *sym = stub_symptom(name);
			if (path && strcmp(path, real) != 0)
				finding_evidence(x, "dlopen(\"%s\") picks %s -> %s: the stub", facts_str(f, FK_LOADER_PICK_SONAME(d), p),
						 path, real);
			else
				finding_evidence(x, "dlopen(\"%s\") picks %s: the stub", facts_str(f, FK_LOADER_PICK_SONAME(d), p), real);
			if (sym)
				finding_evidence(x, "with the stub lib%s: %s", name, sym);
			char *pd = path ? xstrdup(path) : NULL;
			char *ps = pd ? strrchr(pd, '/') : NULL;
			if (ps)
				*ps = '\0';
			if (pd && strcmp(path, real) != 0 && !loader_is_stubs_dir(pd))
				finding_fix(x, "remove the link %s (made for a build) and reinstall the driver's user-space library "
					       "(the libnvidia-compute / nvidia-driver package, or in a container the NVIDIA runtime's "
					       "mount)", path);
			free(pd);
			fail = true;
		}
		free(d);
	}
	if (!x)
		return;
	if (facts_int_or(f, 0, FK_CUDA_INIT_CODE) == 34) {
		finding_evidence(x, "cuInit answered 34 (CUDA_ERROR_STUB_LIBRARY): a stub libcuda was loaded");
		fail = true;
	}
	x->sev = fail ? SEV_FAIL : SEV_WARN;
	if (!fail && shadows)
		finding_evidence(x, "the soname links (libcuda.so.1) still resolve to the driver here, but a program that "
				    "loads the unversioned name, or one linked at build time with the stubs, gets the placeholder");
	if (llp) {
		char *rest = loader_path_without_stubs(llp);
		if (*rest)
			finding_fix_export(x, "LD_LIBRARY_PATH", rest, NULL);
		else
			finding_fix_unset(x, "LD_LIBRARY_PATH", NULL);
		free(rest);
	}
	if (conf)
		finding_fix(x, "remove the stubs line from /etc/ld.so.conf.d (grep -rl stubs /etc/ld.so.conf /etc/ld.so.conf.d), "
			       "then sudo ldconfig");
	finding_fix(x, "stubs are for linking only: in a Dockerfile, give them to the build step as LIBRARY_PATH="
		       "/usr/local/cuda/lib64/stubs (or -L), never as LD_LIBRARY_PATH or in ld.so.conf; delete a libcuda.so.1 "
		       "link made inside the stubs directory for a build");
	x->rank = 5;
}

const rule rules_loader[] = {
	{"lib.duplicates", "loader", SEV_INFO, FK_LOADER_LIB_COUNT, lib_duplicates,
	 "several copies of a CUDA library with different versions on the search paths"},
	{"lib.ld-path-stale", "loader", SEV_INFO, FK_LOADER_LD_LIBRARY_PATH, ld_path_stale,
	 "LD_LIBRARY_PATH entries that do not exist or hold another CUDA version than CUDA_HOME"},
	{"lib.runtime-newer-than-driver", "loader", SEV_FAIL, FK_LOADER_PICK_COUNT, runtime_newer_than_driver,
	 "the libcudart that loads is newer than the driver supports", .root_cause = 17},
	{"lib.stubs-on-path", "loader", SEV_WARN, FK_LOADER_LD_LIBRARY_PATH, stubs_on_path,
	 "the CUDA toolkit's stubs directory on LD_LIBRARY_PATH or in ld.so.conf (placeholders shadow the driver)", .root_cause = 11},
	{"lib.cudnn-cuda-major", "loader", SEV_FAIL, FK_LOADER_PICK_COUNT, cudnn_cuda_major,
	 "the cuDNN that loads is built for another CUDA major than the runtime"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
