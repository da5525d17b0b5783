/* The file probes over a machine the input builds: every file they parse (/proc/driver/nvidia/
 * version, /proc/modules, /sys PCI attributes, /etc/group, /proc/mounts, cgroups, ld.so.conf and
 * its cache, version.json, dist-info, kernel logs ...) can hold any bytes, and links can point
 * anywhere; the probes that load libraries or start programs are not run.
 *
 * Input: sections "@PATH" (a line), then the file's content up to the next line that starts with
 * "@/"; "@PATH -> TARGET" makes a link; "@PATH/" a directory. Written below a fresh --root tree. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/facts.h"
#include "core/sysroot.h"
#include "core/util.h"
#include "probes/probes.h"

static char base[PATH_MAX];

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void mkparents(char *p)
{
	for (char *s = p + strlen(base) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
}

/* True when a directory on the way to full, below the tree, is a symbolic link: an entry written
 * there would land outside the tree (an input's "@/etc -> /etc" then "@/etc/passwd" overwrote
 * the machine's /etc/passwd as root). */
static bool through_link(const char *full)
{
	char *p = xstrdup(full);
	bool link = false;
	for (char *s = p + strlen(base) + 1; *s && !link; s++)
		if (*s == '/') {
			*s = '\0';
			struct stat st;
			link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
			*s = '/';
		}
	free(p);
	return link;
}

/* A name below the tree: no "..", no empty or overlong path. */
static bool plausible(const char *rel)
{
	return rel[0] == '/' && strlen(rel) < 512 && !strstr(rel, "/../") && !str_ends(rel, "/..") && !strstr(rel, "//");
}

static void build(const char *data, size_t size)
{
	const char *p = data, *end = data + size;
	while (p < end) {
		if (*p != '@') {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			p = nl ? nl + 1 : end;
			continue;
		}
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char *head = xstrndup(p + 1, (size_t)((nl ? nl : end) - p - 1));
		p = nl ? nl + 1 : end;
		/* the content: up to the next "\n@/" */
		const char *c = p;
		while (p < end && !(p[0] == '@' && p + 1 < end && p[1] == '/' && (p == c || p[-1] == '\n')))
			p++;
		size_t clen = (size_t)(p - c);
		char *arrow = strstr(head, " -> ");
		if (arrow)
			*arrow = '\0';
		char *full = plausible(head) ? xasprintf("%s%s", base, head) : NULL;
		if (full && !through_link(full)) {
			mkparents(full);
			if (arrow) {
				(void)symlink(arrow + 4, full);
			} else if (str_ends(full, "/")) {
				mkdir(full, 0755);
			} else { /* never through a link the input made, never blocked by a FIFO */
				int fd = open(full, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
				if (fd >= 0) {
					if (write(fd, c, clen) < 0) { /* a short tree is still a tree */
					}
					close(fd);
				}
			}
		}
		free(full);
		free(head);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *tmp = getenv("TMPDIR");
	snprintf(base, sizeof(base), "%s/gpuvet-fuzz-tree-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(base))
		abort();
	build((const char *)data, size);
	/* never a library of this machine, never a program from the tree */
	unsetenv("GPUVET_NVML_LIB");
	unsetenv("GPUVET_CUDA_LIB");
	setenv("PATH", "/usr/bin:/bin", 1);
	sysroot_set(base);
	facts *f = facts_new();
	probe_opts o = {.fast = true, .no_python = true};
	probe_hardware(f, &o);
	probe_devices(f, &o);
	probe_container(f, &o);
	probe_kmsg(f, &o);
	probe_loader(f, &o);
	probe_python(f, &o);
	if (getenv("FUZZ_PROBE_TREE_DEBUG"))
		fprintf(stderr, "%zu facts\n", facts_count(f));
	facts_free(f);
	sysroot_set(NULL);
	nftw(base, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}
