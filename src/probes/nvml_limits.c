/* The per-boot cache of each GPU's fixed limits: see nvml_limits.h. */
#include "probes/nvml_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/atomicfile.h"
#include "core/sysroot.h"
#include "core/util.h"

#define LIMITS_MAX_GPUS 64
#define LIMITS_FILE_MAX 65536
#define LIMITS_MAGIC "gpuvet nvml-limits 1"

struct limits_entry {
	char uuid[96];
	gv_nv_u64 v[16]; /* gv_nvml_limit_fields' order */
};

struct nvml_limits {
	pthread_mutex_t mu;
	char *path;
	char boot[64], driver[64];
	struct limits_entry e[LIMITS_MAX_GPUS];
	int n;
	bool dirty;
};

static gv_nv_u64 *field_of(gv_nvml_device *d, size_t k)
{
	return (gv_nv_u64 *)(void *)((char *)d + gv_nvml_limit_fields[k].offset);
}

static const gv_nv_u64 *field_of_const(const gv_nvml_device *d, size_t k)
{
	return (const gv_nv_u64 *)(const void *)((const char *)d + gv_nvml_limit_fields[k].offset);
}

/* Only in a directory of our own: `sudo` that keeps the user's HOME must not leave a root-owned
 * cache there (the user's own check could then neither read nor replace it). */
static bool ours(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid();
}

/* The XDG base directory spec ignores relative values. */
static char *cache_path(void)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	if (xdg && xdg[0] == '/')
		return ours(xdg) ? xasprintf("%s/gpuvet/nvml-limits", xdg) : NULL;
	const char *home = getenv("HOME");
	if (home && home[0] == '/')
		return ours(home) ? xasprintf("%s/.cache/gpuvet/nvml-limits", home) : NULL;
	return NULL;
}

static bool token_ok(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (!n || n >= max)
		return false;
	for (; *s; s++)
		if (*s <= ' ' || *s == 0x7f)
			return false;
	return true;
}

/* One "gpu UUID name=ST,RC,V ..." line into an entry; false when it is not exactly that. */
static bool parse_gpu(char *line, struct limits_entry *out)
{
	char *save = NULL;
	char *tok = strtok_r(line, " ", &save);
	if (!tok || strcmp(tok, "gpu") != 0)
		return false;
	tok = strtok_r(NULL, " ", &save);
	if (!tok || !token_ok(tok, sizeof(out->uuid)))
		return false;
	str_copy(out->uuid, sizeof(out->uuid), tok);
	for (size_t k = 0; k < gv_nvml_n_limit_fields; k++) {
		tok = strtok_r(NULL, " ", &save);
		size_t nl = strlen(gv_nvml_limit_fields[k].name);
		if (!tok || strncmp(tok, gv_nvml_limit_fields[k].name, nl) != 0 || tok[nl] != '=')
			return false;
		int st, rc, used = 0;
		unsigned long long v;
		if (sscanf(tok + nl + 1, "%d,%d,%llu%n", &st, &rc, &v, &used) != 3 || tok[nl + 1 + used] != '\0')
			return false;
		if (st < GV_V_OK || st > GV_V_ERROR)
			return false;
		out->v[k] = (gv_nv_u64){.st = (gv_vstate)st, .rc = (nvmlReturn_t)rc, .v = v};
	}
	return strtok_r(NULL, " ", &save) == NULL;
}

/* The file's entries when its boot and driver are this boot's and this driver's. */
static void read_file(nvml_limits *c)
{
	int fd = open(c->path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return;
	struct stat st;
	char *buf = NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 && st.st_size < LIMITS_FILE_MAX) {
		buf = xmalloc((size_t)st.st_size + 1);
		ssize_t got = read(fd, buf, (size_t)st.st_size);
		if (got != st.st_size) {
			free(buf);
			buf = NULL;
		} else {
			buf[got] = '\0';
		}
	}
	close(fd);
	if (!buf)
		return;
	size_t size = strlen(buf);
	bool newline_last = size > 0 && buf[size - 1] == '\n';
	char *save = NULL;
	char *line = strtok_r(buf, "\n", &save);
	bool ok = size == (size_t)st.st_size && line && strcmp(line, LIMITS_MAGIC) == 0; /* no NUL inside */
	char want[96];
	snprintf(want, sizeof(want), "boot %s", c->boot);
	ok = ok && (line = strtok_r(NULL, "\n", &save)) && strcmp(line, want) == 0;
	snprintf(want, sizeof(want), "driver %s", c->driver);
	ok = ok && (line = strtok_r(NULL, "\n", &save)) && strcmp(line, want) == 0;
	/* the gpu lines, then "end" as the file's last line: a file cut anywhere is never believed */
	bool ended = false;
	while (ok && (line = strtok_r(NULL, "\n", &save))) {
		struct limits_entry e;
		memset(&e, 0, sizeof(e));
		if (strcmp(line, "end") == 0 && newline_last && line + 4 == buf + size) {
			ended = true;
			break;
		}
		if (c->n >= LIMITS_MAX_GPUS || !parse_gpu(line, &e))
			break;
		c->e[c->n++] = e;
	}
	if (!ended)
		c->n = 0; /* a damaged file counts for nothing: rewritten at the next put */
	free(buf);
}

nvml_limits *nvml_limits_open(const char *driver_version)
{
	if (!driver_version || !token_ok(driver_version, 64) || gv_nvml_n_limit_fields > GV_ARRAY_LEN(((struct limits_entry *)0)->v))
		return NULL;
	/* through sysroot: a scenario's machine has its own boot (or none) */
	char *boot = sysroot_read_line("/proc/sys/kernel/random/boot_id");
	char *path = cache_path();
	if (!boot || !token_ok(boot, 64) || !path) {
		free(boot);
		free(path);
		return NULL;
	}
	nvml_limits *c = xcalloc(1, sizeof(*c));
	pthread_mutex_init(&c->mu, NULL);
	c->path = path;
	str_copy(c->boot, sizeof(c->boot), boot);
	str_copy(c->driver, sizeof(c->driver), driver_version);
	free(boot);
	read_file(c);
	return c;
}

static struct limits_entry *find(nvml_limits *c, const char *uuid)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->e[i].uuid, uuid) == 0)
			return &c->e[i];
	return NULL;
}

bool nvml_limits_get(nvml_limits *c, const char *uuid, gv_nvml_device *d)
{
	if (!c || !uuid || !*uuid)
		return false;
	pthread_mutex_lock(&c->mu);
	const struct limits_entry *e = find(c, uuid);
	if (e)
		for (size_t k = 0; k < gv_nvml_n_limit_fields; k++)
			*field_of(d, k) = e->v[k];
	pthread_mutex_unlock(&c->mu);
	return e != NULL;
}

void nvml_limits_put(nvml_limits *c, const char *uuid, const gv_nvml_device *d)
{
	if (!c || !uuid || !token_ok(uuid, sizeof(c->e[0].uuid)))
		return;
	struct limits_entry e;
	memset(&e, 0, sizeof(e));
	str_copy(e.uuid, sizeof(e.uuid), uuid);
	for (size_t k = 0; k < gv_nvml_n_limit_fields; k++) {
		e.v[k] = *field_of_const(d, k);
		/* not asked, or a failed call (asked again next time): nothing to keep */
		if (e.v[k].st == GV_V_UNSET || e.v[k].st == GV_V_ERROR)
			return;
	}
	pthread_mutex_lock(&c->mu);
	struct limits_entry *old = find(c, uuid);
	if (!old && c->n < LIMITS_MAX_GPUS)
		old = &c->e[c->n++], memset(old, 0, sizeof(*old));
	if (old && memcmp(old, &e, sizeof(e)) != 0) {
		*old = e;
		c->dirty = true;
	}
	pthread_mutex_unlock(&c->mu);
}

const char *nvml_limits_path(const nvml_limits *c)
{
	return c ? c->path : NULL;
}

void nvml_limits_close(nvml_limits *c)
{
	if (!c)
		return;
	if (c->dirty) {
		size_t cap = 256 + (size_t)c->n * 512, len = 0;
		char *text = xmalloc(cap);
		len += (size_t)snprintf(text + len, cap - len, "%s\nboot %s\ndriver %s\n", LIMITS_MAGIC, c->boot, c->driver);
		for (int i = 0; i < c->n && len < cap; i++) {
			len += (size_t)snprintf(text + len, cap - len, "gpu %s", c->e[i].uuid);
			for (size_t k = 0; k < gv_nvml_n_limit_fields && len < cap; k++)
				len += (size_t)snprintf(text + len, cap - len, " %s=%d,%d,%llu", gv_nvml_limit_fields[k].name,
							(int)c->e[i].v[k].st, (int)c->e[i].v[k].rc, c->e[i].v[k].v);
			if (len < cap)
				len += (size_t)snprintf(text + len, cap - len, "\n");
		}
		if (len < cap)
			len += (size_t)snprintf(text + len, cap - len, "end\n");
		if (len < cap) {
			/* a cache: a write that fails (read-only home, full disk) only costs the next --fast its queries */
			char err[PATH_MAX + 128];
			if (mkdir_parents(c->path, err, sizeof(err)))
				(void)atomic_file_write(c->path, text, len, 0600, err, sizeof(err));
		}
		free(text);
	}
	pthread_mutex_destroy(&c->mu);
	free(c->path);
	free(c);
}
