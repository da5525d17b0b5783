#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "nvidia/dlload.h"
#include "nvidia/libfile.h"

bool gv_driver_lib_name_version(const char *name, const char *prefix, char *out, size_t size)
{
	if (!str_starts(name, prefix))
		return false;
	const char *v = name + strlen(prefix);
	int dots = 0;
	if (!isdigit((unsigned char)*v))
		return false;
	for (const char *p = v; *p; p++) {
		if (*p == '.')
			dots++;
		else if (!isdigit((unsigned char)*p))
			return false;
	}
	/* ".so.1" is the soname link, not a version */
	if (dots < 1 || strlen(v) > 32)
		return false;
	str_copy(out, size, v);
	return true;
}

bool gv_driver_lib_file_version(const char *host_path, const char *prefix, char *out, size_t size)
{
	char *real = NULL;
	if (sysroot_active())
		real = sysroot_realpath(sysroot_strip(host_path));
	else
		real = realpath(host_path, NULL);
	if (!real)
		return false;
	const char *base = strrchr(real, '/');
	bool ok = gv_driver_lib_name_version(base ? base + 1 : real, prefix, out, size);
	free(real);
	return ok;
}

bool gv_driver_lib_find(const char *prefix, char *path, size_t path_size, char *ver, size_t ver_size)
{
	for (int i = 0; gv_driver_lib_dirs[i]; i++) {
		DIR *d = sysroot_opendir(gv_driver_lib_dirs[i]);
		if (!d)
			continue;
		struct dirent *de;
		int seen = 0;
		bool found = false;
		while (!found && (de = readdir(d)) && seen++ < 100000) {
			if (gv_driver_lib_name_version(de->d_name, prefix, ver, ver_size)) {
				snprintf(path, path_size, "%s/%s", gv_driver_lib_dirs[i], de->d_name);
				found = true;
			}
		}
		closedir(d);
		if (found)
			return true;
	}
	return false;
}
