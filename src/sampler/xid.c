#include "sampler/xid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"

bool xid_pci_matches(const char *xid_pci, const char *pci_bus_id)
{
	unsigned d1, b1, v1, d2, b2, v2, f2;
	if (!xid_pci || !pci_bus_id)
		return false;
	int n = sscanf(xid_pci, "%x:%x:%x", &d1, &b1, &v1);
	if (n == 2) { /* no domain */
		v1 = b1, b1 = d1, d1 = 0;
	} else if (n != 3) {
		return false;
	}
	if (sscanf(pci_bus_id, "%x:%x:%x.%x", &d2, &b2, &v2, &f2) != 4)
		return false;
	return d1 == d2 && b1 == b2 && v1 == v2;
}

void kmsg_open(kmsg_reader *r, const char *path)
{
	memset(r, 0, sizeof(*r));
	char buf[4096];
	const char *host = sysroot_path(buf, sizeof(buf), path);
	r->fd = open(host, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (r->fd < 0) {
		snprintf(r->error, sizeof(r->error), "%s: %s", path, strerror(errno));
		return;
	}
	struct stat st;
	if (fstat(r->fd, &st) == 0 && S_ISCHR(st.st_mode))
		lseek(r->fd, 0, SEEK_END); /* /dev/kmsg: skip the records logged before we started */
}

static void kmsg_line(kmsg_reader *r, const char *s, size_t n, void (*fn)(void *, const xid_line *), void *ctx,
		      size_t *count)
{
	(void)r;
	xid_line x;
	(*count)++;
	if (xid_parse_line(s, n, 0, &x))
		fn(ctx, &x);
}

size_t kmsg_poll(kmsg_reader *r, void (*fn)(void *ctx, const xid_line *x), void *ctx)
{
	size_t count = 0;
	if (r->fd < 0)
		return 0;
	/* /dev/kmsg returns one record per read; a plain file returns what fits. Bounded: at most
	 * 256 reads per poll, so a flooding log cannot hold the sampler. */
	for (int iter = 0; iter < 256; iter++) {
		char buf[8192];
		ssize_t n = read(r->fd, buf, sizeof(buf));
		if (n < 0 && errno == EPIPE)
			continue; /* records were overwritten before we read them */
		if (n <= 0)
			break;
		size_t start = 0;
		for (size_t i = 0; i < (size_t)n; i++) {
			if (buf[i] != '\n')
				continue;
			if (r->plen) {
				size_t take = i - start;
				if (take > sizeof(r->partial) - r->plen)
					take = sizeof(r->partial) - r->plen;
				memcpy(r->partial + r->plen, buf + start, take);
				kmsg_line(r, r->partial, r->plen + take, fn, ctx, &count);
				r->plen = 0;
			} else {
				kmsg_line(r, buf + start, i - start, fn, ctx, &count);
			}
			start = i + 1;
		}
		if (start < (size_t)n) { /* a line cut by the buffer: keep its start (bounded) */
			size_t take = (size_t)n - start;
			if (take > sizeof(r->partial) - r->plen)
				take = sizeof(r->partial) - r->plen;
			memcpy(r->partial + r->plen, buf + start, take);
			r->plen += take;
		}
	}
	return count;
}

void kmsg_close(kmsg_reader *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
}

void xid_tally_init(xid_tally *t, int ngpus)
{
	pthread_mutex_init(&t->mu, NULL);
	t->ngpus = ngpus > 0 ? ngpus : 0;
	t->gpus = t->ngpus ? xcalloc((size_t)t->ngpus, sizeof(*t->gpus)) : NULL;
}

void xid_tally_free(xid_tally *t)
{
	free(t->gpus);
	t->gpus = NULL;
	pthread_mutex_destroy(&t->mu);
}

void xid_tally_add(xid_tally *t, int gpu, unsigned code, int src, double now)
{
	if (gpu < 0 || gpu >= t->ngpus)
		return;
	pthread_mutex_lock(&t->mu);
	xid_tally_gpu *g = &t->gpus[gpu];
	/* the same event from the other source */
	bool dup = g->total > 0 && g->last_code == code && g->last_src != src && now - g->last_time < XID_MERGE_SECONDS;
	if (!dup) {
		size_t i;
		for (i = 0; i < g->n; i++)
			if (g->counts[i].code == code)
				break;
		if (i == g->n) {
			if (g->n < SNAP_MAX_XID_CODES) {
				g->n++;
			} else { /* full: the code seen longest ago makes room */
				i = 0;
				for (size_t k = 1; k < g->n; k++)
					if (g->counts[k].last_time < g->counts[i].last_time)
						i = k;
			}
			g->counts[i] = (xid_count){code, 0, now};
		}
		g->counts[i].count++;
		g->counts[i].last_time = now;
		g->total++;
	}
	g->last_code = code;
	g->last_time = now;
	g->last_src = dup ? 0 : src; /* a merged pair does not merge with a third report */
	pthread_mutex_unlock(&t->mu);
}

void xid_tally_copy(xid_tally *t, int gpu, gpu_sample *g)
{
	g->nxid = 0;
	g->xid_total = 0;
	if (gpu < 0 || gpu >= t->ngpus)
		return;
	pthread_mutex_lock(&t->mu);
	const xid_tally_gpu *src = &t->gpus[gpu];
	memcpy(g->xids, src->counts, src->n * sizeof(*g->xids));
	g->nxid = src->n;
	g->xid_total = src->total;
	pthread_mutex_unlock(&t->mu);
}
