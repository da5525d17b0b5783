#include "sampler/xid.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"

static const char *find_n(const char *s, size_t len, const char *needle)
{
	size_t nl = strlen(needle);
	for (size_t i = 0; i + nl <= len; i++)
		if (memcmp(s + i, needle, nl) == 0)
			return s + i;
	return NULL;
}

/* Reads hex digits at *p (not past end); false when none or too many. */
static bool hex_field(const char **p, const char *end, unsigned *out, int maxdigits)
{
	unsigned v = 0;
	int n = 0;
	while (*p < end && isxdigit((unsigned char)**p)) {
		if (++n > maxdigits)
			return false;
		char c = (char)tolower((unsigned char)**p);
		v = v * 16 + (unsigned)(c <= '9' ? c - '0' : c - 'a' + 10);
		(*p)++;
	}
	*out = v;
	return n > 0;
}

bool xid_parse_line(const char *line, size_t len, xid_line *out)
{
	memset(out, 0, sizeof(*out));
	const char *end = line + len;
	const char *p = find_n(line, len, "NVRM: Xid (");
	if (!p)
		return false;
	p += strlen("NVRM: Xid (");
	if (end - p >= 4 && memcmp(p, "PCI:", 4) == 0)
		p += 4;
	/* domain:bus:device, the domain optional */
	unsigned f[3];
	int nf = 0;
	const char *q = p;
	while (nf < 3 && q < end) {
		if (!hex_field(&q, end, &f[nf], 8))
			break;
		nf++;
		if (q < end && *q == ':')
			q++;
		else
			break;
	}
	if (nf >= 2 && q < end && (*q == ')' || *q == '.')) {
		out->has_pci = true;
		if (nf == 3)
			out->domain = f[0], out->bus = f[1], out->device = f[2];
		else
			out->domain = 0, out->bus = f[0], out->device = f[1];
	}
	const char *close = memchr(p, ')', (size_t)(end - p));
	if (!close)
		return false;
	p = close + 1;
	if (p < end && *p == ':')
		p++;
	while (p < end && *p == ' ')
		p++;
	unsigned long code = 0;
	int digits = 0;
	while (p < end && isdigit((unsigned char)*p) && digits < 6) {
		code = code * 10 + (unsigned long)(*p - '0');
		p++, digits++;
	}
	if (digits == 0 || (p < end && isdigit((unsigned char)*p)))
		return false;
	out->code = (unsigned)code;
	while (p < end && (*p == ',' || *p == ' '))
		p++;
	size_t tl = (size_t)(end - p);
	while (tl && (p[tl - 1] == '\n' || p[tl - 1] == '\r'))
		tl--;
	if (tl >= sizeof(out->text))
		tl = sizeof(out->text) - 1;
	memcpy(out->text, p, tl);
	out->text[tl] = '\0';
	for (size_t i = 0; i < tl; i++)
		if (out->text[i] == '\0')
			out->text[i] = ' ';
	str_sanitize(out->text);
	return true;
}

bool xid_line_matches_bus_id(const xid_line *x, const char *pci_bus_id)
{
	if (!x->has_pci || !pci_bus_id)
		return false;
	unsigned dom, bus, dev, fn;
	if (sscanf(pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return false;
	return dom == x->domain && bus == x->bus && dev == x->device;
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
	if (xid_parse_line(s, n, &x))
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
