#include "sampler/alloc.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/sysroot.h"
#include "core/util.h"

struct alloc_cache {
	bool loaded;
	int stat_rc;
	struct stat st;   /* the checkpoint's, when it was read */
	double next;      /* read again (liveness, names) from then on */
	int rc;           /* kubelet_checkpoint_read's */
	size_t n;
	kubelet_device *dev;
	owner *owners;    /* n: each device's pod */
	bool *alive;      /* n */
};

alloc_cache *alloc_cache_new(void)
{
	alloc_cache *c = xcalloc(1, sizeof(*c));
	c->rc = -ENOENT;
	return c;
}

static void clear(alloc_cache *c)
{
	free(c->dev);
	free(c->owners);
	free(c->alive);
	c->dev = NULL;
	c->owners = NULL;
	c->alive = NULL;
	c->n = 0;
}

void alloc_cache_free(alloc_cache *c)
{
	if (!c)
		return;
	clear(c);
	free(c);
}

/* "123" into *v; false when s is not all digits (or too long). */
static bool digits(const char *s, size_t n, int *v)
{
	if (n == 0 || n > 6)
		return false;
	int x = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (s[i] - '0');
	}
	*v = x;
	return true;
}

int alloc_match(const kubelet_device *d, const snapshot *s, int *gpu_instance)
{
	*gpu_instance = -1;
	const char *id = d->id;
	if (!id[0])
		return -1;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->uuid[0] && strcasecmp(g->uuid, id) == 0)
			return i;
		for (size_t m = 0; m < g->nmig; m++)
			if (g->mig[m].uuid[0] && strcasecmp(g->mig[m].uuid, id) == 0) {
				*gpu_instance = g->mig[m].gpu_instance;
				return i;
			}
	}
	/* an index or a device file only means a GPU for NVIDIA's resources */
	if (!str_starts(d->resource, "nvidia.com/"))
		return -1;
	int a, b;
	const char *colon = strchr(id, ':');
	size_t n = colon ? (size_t)(colon - id) : strlen(id);
	if (digits(id, n, &a)) { /* NVML index (deviceIDStrategy=index), "G:M" for MIG device M of GPU G */
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (g->index != a)
				continue;
			if (colon && digits(colon + 1, strlen(colon + 1), &b) && (size_t)b < g->nmig)
				*gpu_instance = g->mig[b].gpu_instance;
			return i;
		}
		return -1;
	}
	if (str_starts(id, "nvidia") && digits(id + 6, strlen(id + 6), &a)) /* /dev/nvidiaN (GKE's plugin) */
		for (int i = 0; i < s->ngpus; i++)
			if (s->gpus[i].minor == a)
				return i;
	return -1;
}

static void add(gpu_sample *g, const owner *o, int gi, const char *resource)
{
	for (size_t k = 0; k < g->nalloc; k++) {
		const gpu_alloc *a = &g->alloc[k];
		if (a->gpu_instance == gi && strcmp(a->owner.pod_uid, o->pod_uid) == 0 &&
		    strcmp(a->owner.container, o->container) == 0)
			return;
	}
	if (g->nalloc >= SNAP_MAX_ALLOCS)
		return;
	gpu_alloc *a = &g->alloc[g->nalloc++];
	a->owner = *o;
	a->gpu_instance = gi;
	str_copy(a->resource, sizeof(a->resource), resource);
}

void alloc_assign(snapshot *s, const kubelet_device *dev, const owner *owners, const bool *alive, size_t n)
{
	for (int i = 0; i < s->ngpus; i++)
		s->gpus[i].nalloc = 0;
	size_t entries = 0;
	for (size_t i = 0; i < n; i++)
		if (dev[i].entry + 1 > entries)
			entries = dev[i].entry + 1;
	/* an entry whose device ids name a GPU: its allocation response is not needed */
	bool *named = entries ? xcalloc(entries, sizeof(*named)) : NULL;
	for (size_t i = 0; i < n; i++) {
		int gi;
		if (alive[i] && !dev[i].from_env && alloc_match(&dev[i], s, &gi) >= 0)
			named[dev[i].entry] = true;
	}
	for (size_t i = 0; i < n; i++) {
		int gi, g;
		if (!alive[i] || (dev[i].from_env && named[dev[i].entry]) || (g = alloc_match(&dev[i], s, &gi)) < 0)
			continue;
		add(&s->gpus[g], &owners[i], gi, dev[i].resource);
	}
	free(named);
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static void reload(alloc_cache *c)
{
	clear(c);
	c->rc = kubelet_checkpoint_read(&c->dev, &c->n);
	if (c->rc != 0)
		return;
	c->owners = c->n ? xcalloc(c->n, sizeof(*c->owners)) : NULL;
	c->alive = c->n ? xcalloc(c->n, sizeof(*c->alive)) : NULL;
	for (size_t i = 0; i < c->n; i++) {
		const kubelet_device *d = &c->dev[i];
		size_t k = 0;
		while (k < i && strcmp(c->dev[k].pod_uid, d->pod_uid) != 0)
			k++;
		owner *o = &c->owners[i];
		if (k < i) { /* the pod was looked up for an earlier device */
			*o = c->owners[k];
			c->alive[i] = c->alive[k];
		} else {
			memset(o, 0, sizeof(*o));
			o->kind = OWNER_POD;
			str_copy(o->pod_uid, sizeof(o->pod_uid), d->pod_uid);
			c->alive[i] = kubelet_pod_alive(d->pod_uid);
			if (c->alive[i])
				owner_resolve_pod(o); /* namespace and name from /var/log/pods */
		}
		str_copy(o->container, sizeof(o->container), d->container);
	}
}

void alloc_fill(alloc_cache *c, snapshot *s, double now)
{
	struct stat st;
	memset(&st, 0, sizeof(st));
	int src = sysroot_stat(KUBELET_CHECKPOINT, &st) == 0 ? 0 : -errno;
	bool changed = !c->loaded || src != c->stat_rc || (src == 0 && !same_file(&st, &c->st));
	if (changed || now >= c->next) {
		reload(c);
		c->loaded = true;
		c->stat_rc = src;
		c->st = st;
		c->next = now + ALLOC_RECHECK_SECONDS;
	}
	s->kubelet_checkpoint = c->rc == 0 ? 1 : c->rc == -ENOENT || c->rc == -ENOTDIR ? 0 : -1;
	if (c->rc == 0)
		alloc_assign(s, c->dev, c->owners, c->alive, c->n);
	else
		for (int i = 0; i < s->ngpus; i++)
			s->gpus[i].nalloc = 0;
}
