/* --root as a jail, on trees the input describes: every lookup the resolver makes stays below the
 * root whatever the links hold (absolute, relative, "..", loops, long chains), and the answer is
 * a clean absolute path inside the root or an error.
 *
 * Input: lines "PATH" (a file), "PATH/" (a directory), "PATH -> TARGET" (a link); the last line
 * is the path to resolve. The tree lives in memory behind the gv_sys override table. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/sysroot.h"
#include "core/util.h"

#define ROOT "/fuzz-root"

typedef struct node {
	char *path, *target; /* target: a link's */
	bool dir;
} node;

static node nodes[64];
static size_t nn;
static long lookups;

static const char *inside(const char *host)
{
	/* a host path outside the root is an escape */
	if (strncmp(host, ROOT, strlen(ROOT)) != 0 || (host[strlen(ROOT)] != '/' && host[strlen(ROOT)] != '\0'))
		abort();
	return host[strlen(ROOT)] ? host + strlen(ROOT) : "/";
}

static const node *find(const char *p, bool *implicit_dir)
{
	*implicit_dir = strcmp(p, "/") == 0;
	size_t n = strlen(p);
	for (size_t i = 0; i < nn; i++) {
		if (strcmp(nodes[i].path, p) == 0)
			return &nodes[i];
		if (strncmp(nodes[i].path, p, n) == 0 && nodes[i].path[n] == '/')
			*implicit_dir = true;
	}
	return NULL;
}

static int fake_lstat(const char *host, struct stat *st)
{
	const char *p = inside(host);
	if (++lookups > 100000)
		abort(); /* the walk must be bounded */
	bool dir;
	const node *x = find(p, &dir);
	memset(st, 0, sizeof(*st));
	if (x)
		st->st_mode = x->target ? S_IFLNK | 0777 : x->dir ? S_IFDIR | 0755 : S_IFREG | 0644;
	else if (dir)
		st->st_mode = S_IFDIR | 0755;
	else {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

static ssize_t fake_readlink(const char *host, char *buf, size_t n)
{
	bool dir;
	const node *x = find(inside(host), &dir);
	if (!x || !x->target) {
		errno = EINVAL;
		return -1;
	}
	size_t l = strlen(x->target);
	if (l > n)
		l = n;
	memcpy(buf, x->target, l);
	return (ssize_t)l;
}

static void check_clean(const char *p)
{
	if (p[0] != '/' || strstr(p, "//") || strstr(p, "/./") || strstr(p, "/../") || str_ends(p, "/..") ||
	    str_ends(p, "/.") || (strlen(p) > 1 && str_ends(p, "/")))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	strlist lines = {0};
	sl_split(&lines, text, "\n", false);
	free(text);
	if (lines.n == 0) {
		sl_free(&lines);
		return 0;
	}
	nn = 0;
	for (size_t i = 0; i + 1 < lines.n && nn < GV_ARRAY_LEN(nodes); i++) {
		char *l = lines.v[i], *arrow = strstr(l, " -> ");
		node *x = &nodes[nn];
		memset(x, 0, sizeof(*x));
		if (arrow) {
			*arrow = '\0';
			x->target = xstrdup(arrow + 4);
		}
		size_t n = strlen(l);
		if (!x->target && n > 1 && l[n - 1] == '/') {
			x->dir = true;
			l[--n] = '\0';
		}
		if (l[0] != '/' || n < 2) {
			free(x->target);
			continue;
		}
		x->path = xstrdup(l);
		nn++;
	}
	gv_sys.lstat = fake_lstat;
	gv_sys.readlink = fake_readlink;
	sysroot_set(ROOT);
	lookups = 0;
	const char *q = lines.v[lines.n - 1];
	for (int follow = 0; follow < 2; follow++) {
		char out[PATH_MAX];
		int rc = sysroot_resolve(q, follow, out, sizeof(out));
		if (rc == 0)
			check_clean(out);
		else if (rc != -ENOENT && rc != -ENOTDIR && rc != -ELOOP && rc != -ENAMETOOLONG && rc != -EINVAL)
			abort();
		char host[PATH_MAX];
		const char *h = follow ? sysroot_path(host, sizeof(host), q) : sysroot_path_nofollow(host, sizeof(host), q);
		if (*h)
			inside(h);
	}
	char *real = sysroot_realpath(q);
	if (real)
		check_clean(real);
	free(real);
	sysroot_set(NULL);
	sysroot_reset_ops();
	for (size_t i = 0; i < nn; i++) {
		free(nodes[i].path);
		free(nodes[i].target);
	}
	sl_free(&lines);
	return 0;
}
