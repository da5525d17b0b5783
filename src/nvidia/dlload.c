#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/child.h"
#include "core/sysroot.h"
#include "core/util.h"
#include "nvidia/dlload.h"

const char *const gv_driver_lib_dirs[] = {
	"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/lib/wsl/lib",
	"/usr/local/nvidia/lib64", NULL,
};

static void set_err(char *err, size_t size, const char *msg)
{
	if (err && size)
		str_copy(err, size, msg ? msg : "unknown dlopen error");
}

void *gv_dl_open_driver_lib(const char *env_var, const char *soname, char *path, size_t path_size, char *err,
			    size_t err_size, bool *from_env)
{
	const char *env = getenv(env_var);
	*from_env = false;
	path[0] = '\0';
	const char *file = soname;
	char host[1024];
	if (env && *env) {
		*from_env = true;
		file = env;
	} else if (sysroot_active()) {
		/* a root tree is another machine: never load this machine's driver for it */
		file = NULL;
		for (int i = 0; gv_driver_lib_dirs[i]; i++) {
			char abs[512];
			snprintf(abs, sizeof(abs), "%s/%s", gv_driver_lib_dirs[i], soname);
			if (sysroot_exists(abs)) {
				sysroot_path(host, sizeof(host), abs);
				file = host;
				break;
			}
		}
		if (!file) {
			snprintf(path, path_size, "%s", soname);
			char msg[256];
			snprintf(msg, sizeof(msg), "%s: not found in the root tree's library directories", soname);
			set_err(err, err_size, msg);
			errno = ENOENT;
			return NULL;
		}
	}
	str_copy(path, path_size, file);
	dlerror();
	/* lazy binding: libcuda is large, and --fast loads it only to ask its version */
	/* in a supervised child: a constructor that hangs, crashes or exits is named by this */
	gv_child_stage(soname, file, "dlopen");
	gv_child_dlopen_begin();
	void *h = dlopen(file, RTLD_LAZY | RTLD_LOCAL);
	if (!h) {
		set_err(err, err_size, dlerror());
		dlerror(); /* frees the message's block (gv_dl_sym) */
	}
	gv_child_dlopen_end();
	gv_child_stage_end();
	return h;
}

void *gv_dl_sym(void *handle, const char *name)
{
	void *p = dlsym(handle, name);
	if (!p) {
		dlerror(); /* hands the message out ... */
		dlerror(); /* ... and frees the block that held it */
	}
	return p;
}

void *gv_dl_sym_first(void *handle, const char *const names[])
{
	for (int i = 0; names[i]; i++) {
		void *p = gv_dl_sym(handle, names[i]);
		if (p)
			return p;
	}
	return NULL;
}

bool gv_dl_load_driver_lib(const gv_driver_lib *lib, void **handle, char *path, size_t path_size, char *err,
			   size_t err_size, bool *from_env)
{
	*handle = gv_dl_open_driver_lib(lib->env_var, lib->soname, path, path_size, err, err_size, from_env);
	if (!*handle)
		return false;
	lib->resolve();
	const char *miss = lib->missing();
	if (miss) {
		snprintf(err, err_size, "%s: symbol %s not found", path, miss);
		return false;
	}
	if (!*from_env)
		gv_dl_real_path(*handle, lib->anchor, path, path_size);
	return true;
}

void *gv_dl_open_quiet(const char *file, int flags)
{
	stdout_muted m;
	stdout_mute(&m);
	gv_child_dlopen_begin();
	void *h = dlopen(file, flags);
	gv_child_dlopen_end();
	stdout_unmute(&m);
	return h;
}

void gv_dl_real_path(void *handle, const char *symbol, char *path, size_t size)
{
	void *sym = gv_dl_sym(handle, symbol);
	Dl_info info;
	if (sym && dladdr(sym, &info) && info.dli_fname && info.dli_fname[0] == '/')
		str_copy(path, size, info.dli_fname);
}
