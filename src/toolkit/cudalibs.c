#include "toolkit/cudalibs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/child.h"
#include "core/sysroot.h"
#include "elf/elf.h"
#include "nvidia/dlload.h"
#include "toolkit/cuda_version.h"
#include "toolkit/toolkits.h"

#define MAX_DIR_ENTRIES 65536
#define MAX_COPIES 1024
#define MAX_HEADER (1u << 20)
#define DLOPEN_BUDGET_S 0.02 /* the library's own version call: skipped once it costs more */

const char *const cuda_lib_names[] = {
	"cudart", "cublas", "cublasLt", "cudnn", "cudnn_ops", "cudnn_cnn", "cudnn_adv", "cudnn_graph",
	"cudnn_engines_precompiled", "cudnn_engines_runtime_compiled", "cudnn_heuristic",
	/* cuDNN 8 */
	"cudnn_ops_infer", "cudnn_ops_train", "cudnn_cnn_infer", "cudnn_cnn_train", "cudnn_adv_infer",
	"cudnn_adv_train", "nccl", "nvrtc", "nvJitLink", "cusparse", "nvidia-ml", "cuda", NULL,
};

const char *cuda_lib_match(const char *f)
{
	if (!f || strncmp(f, "lib", 3) != 0)
		return NULL;
	for (size_t i = 0; cuda_lib_names[i]; i++) {
		size_t n = strlen(cuda_lib_names[i]);
		if (strncmp(f + 3, cuda_lib_names[i], n) != 0 || strncmp(f + 3 + n, ".so", 3) != 0)
			continue;
		const char *rest = f + 3 + n + 3;
		/* "" or ".<digits and dots>" */
		if (*rest == '\0' || (rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' &&
				      rest[strspn(rest, "0123456789.")] == '\0'))
			return cuda_lib_names[i];
	}
	return NULL;
}

char *cuda_lib_soname(const char *lib, int major)
{
	return major >= 0 ? xasprintf("lib%s.so.%d", lib, major) : xasprintf("lib%s.so", lib);
}

static cuda_lib_copy *copy_for(cuda_libs *L, const char *lib, const char *real)
{
	for (size_t i = 0; i < L->n; i++)
		if (strcmp(L->v[i].real, real) == 0)
			return &L->v[i];
	if (L->n >= MAX_COPIES)
		return NULL;
	L->v = xrealloc(L->v, (L->n + 1) * sizeof(*L->v));
	cuda_lib_copy *c = &L->v[L->n++];
	memset(c, 0, sizeof(*c));
	c->lib = lib;
	c->real = xstrdup(real);
	c->major = -1;
	c->cuda_major = -1;
	return c;
}

void cuda_libs_scan_dir(cuda_libs *L, const char *dir)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	L->dirs_scanned++;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen++ < MAX_DIR_ENTRIES) {
		const char *lib = cuda_lib_match(de->d_name);
		if (!lib)
			continue;
		char *path = xasprintf("%s%s%s", dir, str_ends(dir, "/") ? "" : "/", de->d_name);
		char *real = sysroot_realpath(path);
		struct stat st;
		if (real && sysroot_stat(real, &st) == 0 && S_ISREG(st.st_mode)) {
			cuda_lib_copy *c = copy_for(L, lib, real);
			if (c) {
				if (!sl_contains(&c->names, path))
					sl_push(&c->names, path);
				/* the soname major: "libcuda.so.1" beats "libcuda.so.580.95.05" */
				int m = libname_major(de->d_name);
				const char *so = strstr(de->d_name, ".so.");
				bool plain = so && so[4 + strspn(so + 4, "0123456789")] == '\0';
				if (m >= 0 && (c->major < 0 || plain))
					c->major = plain || c->major < 0 ? m : c->major;
				if (strstr(real, "/stubs/") || strstr(path, "/stubs/"))
					c->stub = true;
			}
		}
		free(real);
		free(path);
	}
	closedir(d);
}

static const char *header_of(const char *lib, const char **kind)
{
	if (str_starts(lib, "cudnn")) {
		*kind = "cudnn";
		return "cudnn_version.h";
	}
	if (strcmp(lib, "cudart") == 0) {
		*kind = "cudart";
		return "cuda_runtime_api.h";
	}
	if (strcmp(lib, "cublas") == 0 || strcmp(lib, "cublasLt") == 0) {
		*kind = "cublas";
		return "cublas_api.h";
	}
	if (strcmp(lib, "nccl") == 0) {
		*kind = "nccl";
		return "nccl.h";
	}
	if (strcmp(lib, "cusparse") == 0) {
		*kind = "cusparse";
		return "cusparse.h";
	}
	return NULL;
}

/* The version in a header beside the library: <libdir>/../include/<header>. */
static bool version_from_header(const cuda_lib_copy *c, const char *libdir, char *out, size_t n)
{
	const char *kind;
	const char *hdr = header_of(c->lib, &kind);
	if (!hdr)
		return false;
	const char *names[] = {hdr, strcmp(kind, "cudnn") == 0 ? "cudnn.h" : NULL};
	for (size_t i = 0; i < GV_ARRAY_LEN(names) && names[i]; i++) {
		char *p = xasprintf("%s/../include/%s", libdir, names[i]);
		char *buf;
		size_t len;
		bool trunc, ok = false;
		if (sysroot_read(p, MAX_HEADER, &buf, &len, &trunc) == 0) {
			ok = header_version(kind, buf, len, out, n);
			free(buf);
		}
		free(p);
		int maj;
		/* a header of another major is not this library's */
		if (ok && version_parse(out, &maj, NULL, NULL) >= 1 && (c->major < 0 || maj == c->major))
			return true;
	}
	return false;
}

typedef int (*int_getter)(int *);
typedef size_t (*size_getter)(void);

static double dlopen_spent;

/* The library's own version call through dlopen, for the cheap ones only (cudaRuntimeGetVersion,
 * ncclGetVersion, cublasLtGetVersion): never under --root, and not once the calls have cost more
 * than a few milliseconds in all; only inside the loader probe's supervised child. */
static bool version_from_dlopen(const cuda_lib_copy *c, char *out, size_t n, const char **source)
{
	bool cudart = strcmp(c->lib, "cudart") == 0, nccl = strcmp(c->lib, "nccl") == 0,
	     lt = strcmp(c->lib, "cublasLt") == 0;
	/* vendor code runs only in a supervised child (core/child.h), never in gpuvet's own process */
	if (!(cudart || nccl || lt) || dlopen_spent > DLOPEN_BUDGET_S || !gv_child_inside())
		return false;
	double t0 = now_seconds();
	const char *base = strrchr(c->real, '/');
	base = base ? base + 1 : c->real;
	gv_child_stage(base, c->real, "dlopen");
	void *h = dlopen(c->real, RTLD_LAZY | RTLD_LOCAL);
	gv_child_stage_end();
	bool ok = false;
	if (h) {
		gv_child_stage(base, c->real, cudart ? "cudaRuntimeGetVersion" : nccl ? "ncclGetVersion" : "cublasLtGetVersion");
		if (cudart || nccl) {
			int_getter get = (int_getter)gv_dl_sym(h, cudart ? "cudaRuntimeGetVersion" : "ncclGetVersion");
			int v = 0;
			if (get && get(&v) == 0 && v >= 1000) {
				if (cudart)
					snprintf(out, n, "%d.%d", v / 1000, (v % 1000) / 10);
				else if (v >= 20900) /* NCCL >= 2.9: MAJOR*10000 + MINOR*100 + PATCH */
					snprintf(out, n, "%d.%d.%d", v / 10000, (v % 10000) / 100, v % 100);
				else
					snprintf(out, n, "%d.%d.%d", v / 1000, (v % 1000) / 100, v % 100);
				*source = cudart ? "cudaRuntimeGetVersion" : "ncclGetVersion";
				ok = true;
			}
		} else {
			size_getter get = (size_getter)gv_dl_sym(h, "cublasLtGetVersion");
			size_t v = get ? get() : 0;
			if (v >= 10000 && v < 10000000) {
				snprintf(out, n, "%zu.%zu.%zu", v / 10000, (v % 10000) / 100, v % 100);
				*source = "cublasLtGetVersion";
				ok = true;
			}
		}
		gv_child_stage_end();
		/* no dlclose: a destructor is one more call into the library, and the child ends soon */
	}
	dlopen_spent += now_seconds() - t0;
	return ok;
}

/* "nvidia_cudnn_cu12-9.1.0.70.dist-info" -> 12 for lib "cudnn" */
static int cuda_major_from_distinfo_name(const char *name, const char *pkg)
{
	char prefix[64];
	snprintf(prefix, sizeof(prefix), "nvidia_%s_cu", pkg);
	if (!str_starts(name, prefix) || !str_ends(name, ".dist-info"))
		return -1;
	int v = atoi(name + strlen(prefix));
	return v > 0 && v < 100 ? v : -1;
}

/* Looks up to three levels above the library for a pip dist-info naming the CUDA major. */
static bool cuda_major_from_pip(cuda_lib_copy *c, const char *libdir, const char *pkg)
{
	char *d = xstrdup(libdir);
	for (int up = 0; up < 3; up++) {
		char *slash = strrchr(d, '/');
		if (!slash || slash == d)
			break;
		*slash = '\0';
		const char *subs[] = {"", "/dist-info"};
		for (size_t s = 0; s < GV_ARRAY_LEN(subs); s++) {
			char *scan = xasprintf("%s%s", d, subs[s]);
			DIR *dd = sysroot_opendir(scan);
			free(scan);
			if (!dd)
				continue;
			struct dirent *de;
			int seen = 0, found = -1;
			char name[256] = "";
			while (found < 0 && (de = readdir(dd)) && seen++ < MAX_DIR_ENTRIES)
				if ((found = cuda_major_from_distinfo_name(de->d_name, pkg)) > 0)
					str_copy(name, sizeof(name), de->d_name);
			closedir(dd);
			if (found > 0) {
				c->cuda_major = found;
				c->cuda_major_source = xasprintf("pip package %s", name);
				free(d);
				return true;
			}
		}
	}
	free(d);
	return false;
}

/* Debian/Ubuntu packages: /var/lib/dpkg/info/libcudnn9-cuda-12.list lists the file. */
static bool cuda_major_from_dpkg(cuda_lib_copy *c, const char *prefix)
{
	DIR *d = sysroot_opendir("/var/lib/dpkg/info");
	if (!d)
		return false;
	struct dirent *de;
	int seen = 0;
	bool ok = false;
	while (!ok && (de = readdir(d)) && seen++ < 65536) {
		const char *cu = strstr(de->d_name, "-cuda-");
		if (!str_starts(de->d_name, prefix) || !str_ends(de->d_name, ".list") || !cu)
			continue;
		int major = atoi(cu + 6);
		char *p = xasprintf("/var/lib/dpkg/info/%s", de->d_name);
		char *buf;
		size_t len;
		bool trunc;
		if (major > 0 && sysroot_read(p, 1u << 20, &buf, &len, &trunc) == 0) {
			for (size_t i = 0; i < c->names.n && !ok; i++) {
				/* dpkg lists /usr/lib/x86_64-linux-gnu/libcudnn.so.9 and friends */
				const char *nm = c->names.v[i];
				size_t k = strlen(nm);
				const char *hit = strstr(buf, nm);
				if (hit && (hit[k] == '\n' || hit[k] == '\0'))
					ok = true;
			}
			if (ok) {
				c->cuda_major = major;
				char pkg[256];
				str_copy(pkg, sizeof(pkg), de->d_name);
				pkg[strlen(pkg) - 5] = '\0';
				c->cuda_major_source = xasprintf("Debian package %s", pkg);
			}
			free(buf);
		}
		free(p);
	}
	closedir(d);
	return ok;
}

/* "cudnn-linux-x86_64-9.1.0.70_cuda12-archive" or ".../cuda12/..." in the path */
static bool cuda_major_from_path(cuda_lib_copy *c)
{
	const char *p = c->real;
	while ((p = strstr(p, "cuda"))) {
		const char *q = p + 4;
		if (q[0] >= '1' && q[0] <= '9' && q[1] >= '0' && q[1] <= '9' && (q[2] < '0' || q[2] > '9') &&
		    (p == c->real || p[-1] == '_' || p[-1] == '-' || p[-1] == '/')) {
			c->cuda_major = (q[0] - '0') * 10 + (q[1] - '0');
			c->cuda_major_source = xasprintf("its path (%.*s)", 6, p);
			return true;
		}
		p = q;
	}
	return false;
}

/* The ELF: NEEDED libcublas.so.12 / libcudart.so.12, or a RUNPATH into a pip ".../cu13/lib". */
static bool cuda_major_from_elf(cuda_lib_copy *c)
{
	const char *err;
	elf_image *img = elf_open_file(c->real, &err);
	if (!img)
		return false;
	elf_dyn d;
	bool ok = false;
	if (elf_read_dynamic(img, &d, &err) == 0) {
		for (size_t i = 0; i < d.needed.n && !ok; i++) {
			const char *n = d.needed.v[i];
			if (str_starts(n, "libcublas.so.") || str_starts(n, "libcublasLt.so.") ||
			    str_starts(n, "libcudart.so.")) {
				int m = libname_major(n);
				if (m >= 10 && m < 100) {
					c->cuda_major = m;
					c->cuda_major_source = xasprintf("it links %s", n);
					ok = true;
				}
			}
		}
		const char *rp = d.runpath ? d.runpath : d.rpath;
		const char *cu = rp ? strstr(rp, "/cu1") : NULL;
		if (!ok && cu && cu[3] >= '0' && cu[3] <= '9' && cu[4] >= '0' && cu[4] <= '9' && cu[5] == '/') {
			c->cuda_major = atoi(cu + 3);
			c->cuda_major_source = xasprintf("its RUNPATH (%.*s/lib)", 5, cu + 1);
			ok = true;
		}
		elf_dyn_free(&d);
	}
	elf_close(img);
	return ok;
}

static int lib_index(const char *lib)
{
	for (int i = 0; cuda_lib_names[i]; i++)
		if (strcmp(cuda_lib_names[i], lib) == 0)
			return i;
	return 1000;
}

/* table order, then path: stable output whatever readdir's order */
static int copy_cmp(const void *a, const void *b)
{
	const cuda_lib_copy *x = a, *y = b;
	int d = lib_index(x->lib) - lib_index(y->lib);
	return d ? d : strcmp(x->real, y->real);
}

void cuda_libs_versions(cuda_libs *L, bool allow_dlopen)
{
	if (L->n > 1)
		qsort(L->v, L->n, sizeof(*L->v), copy_cmp);
	for (size_t i = 0; i < L->n; i++) {
		cuda_lib_copy *c = &L->v[i];
		char v[64];
		const char *base = strrchr(c->real, '/');
		base = base ? base + 1 : c->real;
		char *realdir = path_dir(c->real);
		if (c->major < 0)
			c->major = libname_major(base);
		if (libname_version(base, v, sizeof(v))) {
			c->version = xstrdup(v);
			c->version_source = "file name";
		} else if (version_from_header(c, realdir, v, sizeof(v))) {
			c->version = xstrdup(v);
			c->version_source = "header";
		} else {
			for (size_t k = 0; k < c->names.n && !c->version; k++) {
				char *nd = path_dir(c->names.v[k]);
				if (version_from_header(c, nd, v, sizeof(v))) {
					c->version = xstrdup(v);
					c->version_source = "header";
				}
				free(nd);
			}
		}
		const char *src = NULL;
		if (!c->version && allow_dlopen && !sysroot_active() && version_from_dlopen(c, v, sizeof(v), &src)) {
			c->version = xstrdup(v);
			c->version_source = src;
		}
		/* the CUDA major of the build */
		bool cuda_versioned = strcmp(c->lib, "cudart") == 0 || strcmp(c->lib, "cublas") == 0 ||
				      strcmp(c->lib, "cublasLt") == 0 || strcmp(c->lib, "nvrtc") == 0 ||
				      strcmp(c->lib, "nvJitLink") == 0;
		if (cuda_versioned && c->major >= 10) {
			c->cuda_major = c->major;
			c->cuda_major_source = xasprintf("its soname (lib%s.so.%d)", c->lib, c->major);
		} else if (str_starts(c->lib, "cudnn") || strcmp(c->lib, "nccl") == 0) {
			const char *pkg = str_starts(c->lib, "cudnn") ? "cudnn" : "nccl";
			if (!cuda_major_from_pip(c, realdir, pkg) &&
			    !cuda_major_from_dpkg(c, str_starts(c->lib, "cudnn") ? "libcudnn" : "libnccl") &&
			    !cuda_major_from_path(c))
				cuda_major_from_elf(c);
		}
		free(realdir);
	}
}

const cuda_lib_copy *cuda_libs_find_real(const cuda_libs *L, const char *real_path)
{
	for (size_t i = 0; real_path && i < L->n; i++)
		if (strcmp(L->v[i].real, real_path) == 0)
			return &L->v[i];
	return NULL;
}

void cuda_libs_free(cuda_libs *L)
{
	for (size_t i = 0; i < L->n; i++) {
		free(L->v[i].real);
		free(L->v[i].version);
		free(L->v[i].cuda_major_source);
		sl_free(&L->v[i].names);
	}
	free(L->v);
	memset(L, 0, sizeof(*L));
}

void cuda_libs_toolkit_versions(cuda_libs *L, const cuda_env *e)
{
	for (size_t i = 0; i < L->n; i++) {
		cuda_lib_copy *c = &L->v[i];
		if (c->version || !(strcmp(c->lib, "cudart") == 0 || strcmp(c->lib, "nvrtc") == 0 ||
				    strcmp(c->lib, "nvJitLink") == 0))
			continue;
		for (size_t t = 0; t < e->n; t++) {
			const cuda_install *ci = &e->v[t];
			int tmaj, tmin;
			size_t rl = strlen(ci->root);
			if (!ci->version || strncmp(c->real, ci->root, rl) != 0 || c->real[rl] != '/' ||
			    version_parse(ci->version, &tmaj, &tmin, NULL) < 2 || tmaj != c->major)
				continue;
			c->version = xasprintf("%d.%d", tmaj, tmin);
			c->version_source = "toolkit version";
			break;
		}
	}
}
