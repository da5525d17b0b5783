#include "toolkit/toolkits.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/proc.h"
#include "core/sysroot.h"
#include "elf/elf.h"
#include "toolkit/cuda_version.h"

#define MAX_INSTALLS 64
#define MAX_DIR_ENTRIES 4096 /* names read from one directory */
#define MAX_SMALL_FILE (256u << 10)
#define NVCC_TIMEOUT_MS 2000
#define NVCC_MAX_OUTPUT (64u << 10)
#define NVCC_ELF_MAX_SCAN (64u << 20) /* bytes of nvcc's .rodata searched for its version text */
#define NVCC_ELF_CHUNK (1u << 20)

static const char *target_arch(void)
{
#if defined(__aarch64__)
	return "sbsa-linux";
#elif defined(__powerpc64__)
	return "ppc64le-linux";
#else
	return "x86_64-linux";
#endif
}

/* An environment path: scenario tests give host paths below the root, users give machine paths. */
static const char *env_path(const char *var)
{
	const char *v = getenv(var);
	if (!v || !*v)
		return NULL;
	return sysroot_strip(v);
}

static char *join(const char *dir, const char *name)
{
	return xasprintf("%s%s%s", dir, str_ends(dir, "/") ? "" : "/", name);
}

static bool is_exec_file(const char *abs)
{
	struct stat st;
	return sysroot_stat(abs, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

static bool read_small(const char *abs, char **buf, size_t *len)
{
	bool trunc;
	return sysroot_read(abs, MAX_SMALL_FILE, buf, len, &trunc) == 0;
}

/* "<prefix><version>.dist-info" or "<prefix><version>-<build>.json" in a directory. */
static bool version_from_names(const char *dir, const char *prefix, const char *suffix, char *out, size_t n)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	int seen = 0;
	bool ok = false;
	size_t pl = strlen(prefix);
	while (!ok && (de = readdir(d)) && seen++ < MAX_DIR_ENTRIES) {
		if (strncmp(de->d_name, prefix, pl) != 0 || !str_ends(de->d_name, suffix))
			continue;
		char v[64];
		str_copy(v, sizeof(v), de->d_name + pl);
		v[strspn(v, "0123456789.")] = '\0';
		int a, b;
		if (strchr(v, '.') && version_parse(v, &a, &b, NULL) >= 2) {
			size_t k = strlen(v);
			while (k && v[k - 1] == '.')
				v[--k] = '\0';
			str_copy(out, n, v);
			ok = true;
		}
	}
	closedir(d);
	return ok;
}

/* The include directory holding a header: root/include or root/targets/<arch>/include. */
static bool read_header(const char *root, const char *name, char **buf, size_t *len)
{
	char *p = xasprintf("%s/include/%s", root, name);
	bool ok = read_small(p, buf, len);
	free(p);
	if (ok)
		return true;
	p = xasprintf("%s/targets/%s/include/%s", root, target_arch(), name);
	ok = read_small(p, buf, len);
	free(p);
	return ok;
}

/* nvcc's --version text ("Cuda compilation tools, release 12.4, V12.4.131") is a literal in its
 * .rodata: read there, the version needs no program of the examined machine to be run. Read in
 * chunks that overlap by more than the line, bounded. */
static bool version_from_nvcc_elf(const char *nvcc, char *out, size_t n)
{
	static const char marker[] = "Cuda compilation tools, release ";
	enum { OVERLAP = 256 };
	const char *err;
	elf_image *img = elf_open_file(nvcc, &err);
	if (!img)
		return false;
	uint64_t off = 0, size = 0;
	if (!elf_find_section(img, ".rodata", &off, &size) || size == 0) {
		off = 0;
		size = elf_file_size(img);
	}
	if (size > NVCC_ELF_MAX_SCAN)
		size = NVCC_ELF_MAX_SCAN;
	char *buf = xmalloc(NVCC_ELF_CHUNK + OVERLAP);
	bool ok = false;
	for (uint64_t at = 0; at < size && !ok; at += NVCC_ELF_CHUNK) {
		size_t want = (size_t)(size - at < NVCC_ELF_CHUNK + OVERLAP ? size - at : NVCC_ELF_CHUNK + OVERLAP);
		size_t got = elf_read_at(img, off + at, buf, want);
		if (got == 0)
			break;
		const char *m = memmem(buf, got, marker, sizeof(marker) - 1);
		if (m)
			ok = cuda_version_from_nvcc(m, got - (size_t)(m - buf), out, n);
	}
	free(buf);
	elf_close(img);
	return ok;
}

static void run_nvcc_version(cuda_install *ci)
{
	char host[PATH_MAX];
	sysroot_path(host, sizeof(host), ci->nvcc);
	char *argv[] = {host, "--version", NULL};
	proc_result r;
	proc_run(argv, NULL, NULL, NVCC_TIMEOUT_MS, NVCC_MAX_OUTPUT, &r);
	char v[64];
	if (r.spawn_failed)
		ci->version_error = xasprintf("nvcc could not be started: %s", strerror(r.spawn_errno));
	else if (r.timed_out)
		ci->version_error = xasprintf("nvcc --version did not answer within %d s", NVCC_TIMEOUT_MS / 1000);
	else if (cuda_version_from_nvcc(r.out, r.out_len, v, sizeof(v))) {
		ci->version = xstrdup(v);
		ci->version_source = "nvcc --version";
	} else
		ci->version_error = xstrdup("nvcc --version printed no version");
	proc_result_free(&r);
}

void cuda_install_probe(cuda_install *ci, bool run_nvcc)
{
	char v[64];
	char *buf = NULL, *p;
	size_t len = 0;
	p = join(ci->root, "bin/nvcc");
	if (is_exec_file(p))
		ci->nvcc = p;
	else
		free(p);
	/* the library directory */
	const char *libs[] = {"lib64", NULL, "lib"};
	char targets_lib[64];
	snprintf(targets_lib, sizeof(targets_lib), "targets/%s/lib", target_arch());
	libs[1] = targets_lib;
	for (size_t i = 0; i < GV_ARRAY_LEN(libs) && !ci->lib_dir; i++) {
		p = join(ci->root, libs[i]);
		if (sysroot_is_dir(p))
			ci->lib_dir = p;
		else
			free(p);
	}
	p = join(ci->root, "compat");
	DIR *d = sysroot_opendir(p);
	free(p);
	if (d) {
		struct dirent *de;
		int seen = 0;
		while ((de = readdir(d)) && seen++ < MAX_DIR_ENTRIES)
			if (str_starts(de->d_name, "libcuda.so"))
				ci->compat = true;
		closedir(d);
	}
	if (read_header(ci->root, "cudnn_version.h", &buf, &len) || read_header(ci->root, "cudnn.h", &buf, &len)) {
		if (header_version("cudnn", buf, len, v, sizeof(v)))
			ci->cudnn_version = xstrdup(v);
		free(buf);
		buf = NULL;
	}
	/* the version: files first, the compiler only as a fallback */
	p = join(ci->root, "version.json");
	if (read_small(p, &buf, &len)) {
		if (cuda_version_from_json(buf, len, v, sizeof(v))) {
			ci->version = xstrdup(v);
			ci->version_source = "version.json";
		}
		free(buf);
		buf = NULL;
	}
	free(p);
	if (!ci->version) {
		p = join(ci->root, "version.txt");
		if (read_small(p, &buf, &len)) {
			if (cuda_version_from_txt(buf, len, v, sizeof(v))) {
				ci->version = xstrdup(v);
				ci->version_source = "version.txt";
			}
			free(buf);
			buf = NULL;
		}
		free(p);
	}
	if (!ci->version) {
		/* pip-assembled toolkits keep the wheels' dist-info; conda keeps conda-meta */
		p = join(ci->root, "dist-info");
		if (version_from_names(p, "nvidia_cuda_nvcc-", ".dist-info", v, sizeof(v))) {
			ci->version = xstrdup(v);
			ci->version_source = "dist-info";
		}
		free(p);
	}
	if (!ci->version) {
		p = join(ci->root, "conda-meta");
		if (version_from_names(p, "cuda-nvcc-", ".json", v, sizeof(v)) ||
		    version_from_names(p, "cudatoolkit-", ".json", v, sizeof(v))) {
			ci->version = xstrdup(v);
			ci->version_source = "conda-meta";
		}
		free(p);
	}
	if (!ci->version && read_header(ci->root, "cuda.h", &buf, &len)) {
		if (header_version("cuda", buf, len, v, sizeof(v))) {
			ci->version = xstrdup(v);
			ci->version_source = "cuda.h";
		}
		free(buf);
		buf = NULL;
	}
	if (!ci->version && ci->nvcc && version_from_nvcc_elf(ci->nvcc, v, sizeof(v))) {
		ci->version = xstrdup(v);
		ci->version_source = "nvcc (ELF)";
	}
	/* the runtime's real file name, lib64/libcudart.so.12.4.127 */
	if (!ci->version && ci->lib_dir && version_from_names(ci->lib_dir, "libcudart.so.", "", v, sizeof(v))) {
		ci->version = xstrdup(v);
		ci->version_source = "libcudart file name";
	}
	/* a --root tree is read, never run: its nvcc would run on this host, as this user */
	if (!ci->version && ci->nvcc && run_nvcc && !sysroot_active())
		run_nvcc_version(ci);
	if (!ci->version && !ci->version_error)
		ci->version_error = xstrdup(!ci->nvcc ? "no version.json, version.txt, dist-info, cuda.h or libcudart.so.X.Y"
					    : sysroot_active() ? "no version file, and nvcc's version text not found in its ELF "
								 "(a --root tree's nvcc is never run)"
							       : "no version file, and nvcc was not run");
}

/* Does a directory look like a CUDA install (compiler, version file or runtime library)? */
static bool looks_like_cuda(const char *dir)
{
	static const char *marks[] = {"bin/nvcc", "version.json", "version.txt", "lib64/libcudart.so",
				      "include/cuda_runtime_api.h"};
	for (size_t i = 0; i < GV_ARRAY_LEN(marks); i++) {
		char *p = join(dir, marks[i]);
		bool ok = sysroot_exists(p);
		free(p);
		if (ok)
			return true;
	}
	char *p = xasprintf("%s/targets/%s/lib/libcudart.so", dir, target_arch());
	bool ok = sysroot_exists(p);
	free(p);
	return ok;
}

/* Adds the install at dir (any name that leads there); returns its index or -1. */
static int add_install(cuda_env *e, const char *dir, const char *origin, bool check)
{
	char *real = sysroot_realpath(dir);
	if (!real || !sysroot_is_dir(real)) {
		free(real);
		return -1;
	}
	for (size_t i = 0; i < e->n; i++)
		if (strcmp(e->v[i].root, real) == 0) {
			free(real);
			return (int)i;
		}
	if ((check && !looks_like_cuda(real)) || e->n >= MAX_INSTALLS) {
		free(real);
		return -1;
	}
	e->v = xrealloc(e->v, (e->n + 1) * sizeof(*e->v));
	cuda_install *ci = &e->v[e->n];
	memset(ci, 0, sizeof(*ci));
	ci->root = real;
	ci->found_as = xstrdup(dir);
	ci->origin = origin;
	return (int)e->n++;
}

static int name_cmp(const void *a, const void *b)
{
	return version_cmp(*(char *const *)a, *(char *const *)b);
}

/* Subdirectories of dir whose names start with prefix, sorted by version. */
static void list_dirs(const char *dir, const char *prefix, strlist *out)
{
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	int seen = 0;
	while ((de = readdir(d)) && seen++ < MAX_DIR_ENTRIES && out->n < MAX_INSTALLS) {
		if (de->d_name[0] == '.' || !str_starts(de->d_name, prefix))
			continue;
		sl_push_owned(out, join(dir, de->d_name));
	}
	closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(char *), name_cmp);
}

static void scan_places(cuda_env *e)
{
	strlist l = {0};
	list_dirs("/usr/local", "cuda-", &l);
	for (size_t i = 0; i < l.n; i++)
		add_install(e, l.v[i], "usr-local", true);
	sl_free(&l);
	list_dirs("/opt", "cuda", &l);
	for (size_t i = 0; i < l.n; i++)
		add_install(e, l.v[i], "opt", true);
	sl_free(&l);
	/* NVIDIA HPC SDK: /opt/nvidia/hpc_sdk/Linux_x86_64/24.5/cuda/12.4 */
	strlist plat = {0};
	list_dirs("/opt/nvidia/hpc_sdk", "", &plat);
	for (size_t i = 0; i < plat.n; i++) {
		strlist rel = {0};
		list_dirs(plat.v[i], "", &rel);
		sl_push(&rel, plat.v[i]);
		for (size_t j = 0; j < rel.n; j++) {
			char *cdir = join(rel.v[j], "cuda");
			strlist cv = {0};
			list_dirs(cdir, "", &cv);
			for (size_t k = 0; k < cv.n; k++)
				add_install(e, cv.v[k], "hpc-sdk", true);
			sl_free(&cv);
			free(cdir);
		}
		sl_free(&rel);
	}
	sl_free(&plat);
	/* conda: the active environment, then the usual base installs and their envs (bin/nvcc only) */
	strlist conda = {0};
	const char *cp = env_path("CONDA_PREFIX");
	if (cp)
		sl_push(&conda, cp);
	sl_push(&conda, "/opt/conda");
	const char *home = env_path("HOME");
	static const char *bases[] = {"miniconda3", "anaconda3", "miniforge3", "mambaforge"};
	for (size_t i = 0; home && i < GV_ARRAY_LEN(bases); i++)
		sl_push_owned(&conda, join(home, bases[i]));
	size_t nbase = conda.n;
	for (size_t i = cp ? 1 : 0; i < nbase; i++) {
		char *envs = join(conda.v[i], "envs");
		list_dirs(envs, "", &conda);
		free(envs);
	}
	for (size_t i = 0; i < conda.n; i++) {
		char *nvcc = join(conda.v[i], "bin/nvcc");
		if (is_exec_file(nvcc))
			add_install(e, conda.v[i], "conda", false);
		free(nvcc);
	}
	sl_free(&conda);
}

static void scan_pointers(cuda_env *e)
{
	/* /usr/local/cuda */
	struct stat st;
	e->usr_local_cuda_install = -1;
	if (sysroot_lstat("/usr/local/cuda", &st) == 0) {
		if (S_ISLNK(st.st_mode)) {
			e->usr_local_cuda_target = sysroot_readlink("/usr/local/cuda");
			errno = 0;
			char *real = sysroot_realpath("/usr/local/cuda");
			if (!real)
				e->usr_local_cuda = errno == ELOOP ? LINK_LOOP : LINK_DANGLING;
			else if (!sysroot_is_dir(real))
				e->usr_local_cuda = LINK_DANGLING;
			else {
				e->usr_local_cuda = LINK_OK;
				e->usr_local_cuda_install = add_install(e, "/usr/local/cuda", "usr-local", false);
			}
			free(real);
		} else if (S_ISDIR(st.st_mode)) {
			e->usr_local_cuda = LINK_DIRECTORY;
			e->usr_local_cuda_install = add_install(e, "/usr/local/cuda", "usr-local", false);
		}
	}
	/* PATH's nvcc: the first one a shell runs */
	e->path_nvcc_install = -1;
	const char *path = getenv("PATH");
	strlist entries = {0};
	if (path)
		sl_split(&entries, path, ":", false);
	for (size_t i = 0; i < entries.n && i < 256; i++) {
		const char *dir = sysroot_strip(entries.v[i]);
		if (dir[0] != '/')
			continue;
		char *nvcc = join(dir, "nvcc");
		if (is_exec_file(nvcc)) {
			e->path_nvcc_count++;
			if (!e->path_nvcc) {
				e->path_nvcc = xstrdup(nvcc);
				/* the install is two levels above the real file (bin/nvcc) */
				char *real = sysroot_realpath(nvcc);
				if (real) {
					char *slash = strrchr(real, '/');
					if (slash)
						*slash = '\0';
					slash = strrchr(real, '/');
					if (slash)
						slash[slash == real ? 1 : 0] = '\0';
					e->path_nvcc_install = add_install(e, real, "PATH", false);
					free(real);
				}
			}
		}
		free(nvcc);
	}
	sl_free(&entries);
	/* CUDA_HOME (PyTorch's cpp_extension, many build scripts), CUDA_PATH (CMake, NVIDIA's docs) */
	e->cuda_home_install = e->cuda_path_install = -1;
	const char *home = env_path("CUDA_HOME"), *cpath = env_path("CUDA_PATH");
	if (home) {
		e->cuda_home = xstrdup(home);
		e->cuda_home_var = "CUDA_HOME";
		if (cpath) {
			e->cuda_path = xstrdup(cpath);
			e->cuda_path_install = add_install(e, cpath, "CUDA_PATH", false);
		}
	} else if (cpath) {
		e->cuda_home = xstrdup(cpath);
		e->cuda_home_var = "CUDA_PATH";
	}
	if (e->cuda_home) {
		e->cuda_home_exists = sysroot_is_dir(e->cuda_home);
		e->cuda_home_install = add_install(e, e->cuda_home, e->cuda_home_var, false);
	}
}

void cuda_env_scan(cuda_env *e, bool run_nvcc)
{
	memset(e, 0, sizeof(*e));
	scan_places(e);
	scan_pointers(e);
	for (size_t i = 0; i < e->n; i++)
		cuda_install_probe(&e->v[i], run_nvcc);
}

const char *cuda_link_state_name(int s)
{
	switch (s) {
	case LINK_OK:
		return "symlink";
	case LINK_DANGLING:
		return "dangling";
	case LINK_LOOP:
		return "loop";
	case LINK_DIRECTORY:
		return "directory";
	default:
		return "absent";
	}
}

void cuda_env_free(cuda_env *e)
{
	for (size_t i = 0; i < e->n; i++) {
		cuda_install *ci = &e->v[i];
		free(ci->root);
		free(ci->version);
		free(ci->version_error);
		free(ci->nvcc);
		free(ci->lib_dir);
		free(ci->cudnn_version);
		free(ci->found_as);
	}
	free(e->v);
	free(e->path_nvcc);
	free(e->cuda_home);
	free(e->cuda_path);
	free(e->usr_local_cuda_target);
	memset(e, 0, sizeof(*e));
}

int cuda_env_find_version(const cuda_env *e, const char *want)
{
	if (!want || !*want)
		return -1;
	int best = -1;
	for (size_t i = 0; i < e->n; i++) {
		const char *v = e->v[i].version;
		if (!v)
			continue;
		size_t k = strlen(want);
		/* "12.4" matches "12.4" and "12.4.1", not "12.40" */
		if (strncmp(v, want, k) == 0 && (v[k] == '\0' || v[k] == '.')) {
			/* prefer a full toolkit (with nvcc) over a runtime-only directory */
			if (best < 0 || (!e->v[best].nvcc && e->v[i].nvcc))
				best = (int)i;
		}
	}
	return best;
}

int cuda_env_active(const cuda_env *e)
{
	if (e->path_nvcc_install >= 0)
		return e->path_nvcc_install;
	if (e->cuda_home_install >= 0)
		return e->cuda_home_install;
	if (e->usr_local_cuda_install >= 0)
		return e->usr_local_cuda_install;
	return e->n == 1 ? 0 : -1;
}
