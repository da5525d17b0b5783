#include "core/helper.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

/* set by CMakeLists.txt from GNUInstallDirs; these defaults are make install's */
#ifndef GPUVET_HELPER_DIR
#define GPUVET_HELPER_DIR "/usr/local/libexec/gpuvet"
#endif
#ifndef GPUVET_HELPER_DIR_FROM_BIN
#define GPUVET_HELPER_DIR_FROM_BIN "../libexec/gpuvet"
#endif

static bool runnable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

static void note(char *tried, size_t size, const char *path)
{
	size_t len = strlen(tried);
	if (len < size)
		snprintf(tried + len, size - len, "%s%s", len ? ", " : "", path);
}

bool gv_helper_find(const char *name, char *out, size_t size, char *tried, size_t tried_size)
{
	if (tried_size)
		tried[0] = '\0';
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char dirs[3][PATH_MAX];
	size_t ndirs = 0;
	if (n > 0) { /* without /proc: the configured directory alone */
		self[n] = '\0';
		char *own = path_dir(self);
		snprintf(dirs[ndirs++], PATH_MAX, "%s", own);
		snprintf(dirs[ndirs++], PATH_MAX, "%s/%s", own, GPUVET_HELPER_DIR_FROM_BIN);
		free(own);
	}
	snprintf(dirs[ndirs++], PATH_MAX, "%s", GPUVET_HELPER_DIR);
	for (size_t i = 0; i < ndirs; i++) {
		char path[PATH_MAX + 256];
		snprintf(path, sizeof(path), "%s/%s", dirs[i], name);
		if (runnable(path) && strlen(path) < size) {
			str_copy(out, size, path);
			return true;
		}
		note(tried, tried_size, path);
	}
	return false;
}
