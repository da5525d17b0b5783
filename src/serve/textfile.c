#include "serve/textfile.h"

#include <stdio.h>

#include "core/atomicfile.h"

int textfile_write(const char *dir, const char *name, const char *data, size_t len, char *err, size_t errsize)
{
	char dst[4096];
	if (snprintf(dst, sizeof(dst), "%s/%s", dir, name) >= (int)sizeof(dst)) {
		snprintf(err, errsize, "path too long: %s", dir);
		return -1;
	}
	/* 0644 under the umask, as before: node_exporter runs as another user */
	return atomic_file_write(dst, data, len, 0644, err, errsize) ? 0 : -1;
}
