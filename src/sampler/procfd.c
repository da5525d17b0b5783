/* A process's open descriptors (sampler/procfd.h). */
#include "sampler/procfd.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/sysroot.h"

bool proc_fd_each(unsigned pid, int max, bool (*each)(const proc_fd *fd, void *arg), void *arg)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	DIR *d = sysroot_opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	bool more = true;
	for (int seen = 0; more && seen < max && (de = readdir(d)); seen++) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[96];
		snprintf(path, sizeof(path), "/proc/%u/fd/%.20s", pid, de->d_name);
		char *link = sysroot_readlink(path);
		if (link)
			more = each(&(proc_fd){pid, de->d_name, path, link}, arg);
		free(link);
	}
	closedir(d);
	return true;
}
