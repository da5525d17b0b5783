#include "cuda/fatbin.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "elf/elf.h"

#define ENTRY_MIN 48u       /* up to and including the flags field */
#define ENTRY_MAX 4096u     /* larger entry headers are garbage */
#define SCAN_CHUNK 65536u   /* bytes read at a time when looking for the next container */

static void add_arch(fatbin_arch *v, unsigned *n, uint16_t sm, char variant)
{
	for (unsigned i = 0; i < *n; i++)
		if (v[i].sm == sm && v[i].variant == variant)
			return;
	if (*n >= FATBIN_MAX_ARCHS)
		return;
	/* insertion keeps the list sorted */
	unsigned i = *n;
	while (i > 0 && (v[i - 1].sm > sm || (v[i - 1].sm == sm && v[i - 1].variant > variant))) {
		v[i] = v[i - 1];
		i--;
	}
	v[i].sm = sm;
	v[i].variant = variant;
	(*n)++;
}

/* Next offset >= pos (relative to the section) where a container magic starts, or size. */
static uint64_t find_magic(const binsrc *b, uint64_t off, uint64_t size, uint64_t pos)
{
	static const unsigned char magic[4] = {0x50, 0xED, 0x55, 0xBA};
	unsigned char buf[SCAN_CHUNK];
	while (pos + 4 <= size) {
		uint64_t want = size - pos < SCAN_CHUNK ? size - pos : SCAN_CHUNK;
		size_t got = binsrc_read_some(b, off + pos, buf, (size_t)want);
		if (got < 4)
			return size;
		const unsigned char *hit = memmem(buf, got, magic, sizeof(magic));
		if (hit)
			return pos + (uint64_t)(hit - buf);
		pos += got - 3; /* the magic may straddle two chunks */
	}
	return size;
}

/* Walks the entries of one container; returns false when an entry left the container. */
static bool scan_entries(const binsrc *b, uint64_t start, uint64_t end, fatbin_summary *out)
{
	uint64_t q = start;
	while (q < end) {
		if (end - q < ENTRY_MIN)
			return end - q < 8; /* trailing padding is fine; a cut header is not */
		unsigned char e[64];
		size_t want = end - q < sizeof(e) ? (size_t)(end - q) : sizeof(e);
		if (!binsrc_read(b, q, e, want))
			return false;
		uint16_t kind = le16(e);
		uint32_t hsize = le32(e + 4);
		uint64_t psize = le64(e + 8);
		uint32_t sm = le32(e + 28);
		uint64_t flags = le64(e + 40);
		if (hsize < ENTRY_MIN || hsize > ENTRY_MAX || hsize > end - q || psize > end - q - hsize)
			return false;
		out->entries++;
		if (sm >= 10 && sm < 1000) {
			char variant = (flags & 0x100000) ? 'a' : (flags & 0x200000) ? 'f' : 0;
			if (kind == 1)
				add_arch(out->ptx, &out->nptx, (uint16_t)sm, variant);
			else if (kind == 2 || kind == 0x10)
				add_arch(out->sass, &out->nsass, (uint16_t)sm, variant);
		}
		if (flags & 0xA000)
			out->compressed = true;
		q += hsize + psize;
	}
	return true;
}

/* ---- big sections: the container chain first, then their entries in several threads ---- */

#define PARALLEL_MIN (64u << 20) /* a section this big (libtorch_cuda.so, cuBLASLt) is split */
#define SCAN_THREADS 4

struct crange {
	uint64_t start, end; /* absolute offsets of a container's entries */
};

struct part {
	const binsrc *b;
	const struct crange *r;
	size_t n;
	double deadline;
	fatbin_summary s;
};

static void *scan_part(void *arg)
{
	struct part *p = arg;
	for (size_t i = 0; i < p->n; i++) {
		if (p->deadline > 0 && (i & 63) == 63 && now_seconds() > p->deadline) {
			p->s.incomplete = true;
			break;
		}
		if (!scan_entries(p->b, p->r[i].start, p->r[i].end, &p->s))
			p->s.malformed++;
	}
	return NULL;
}

static bool limited(const fatbin_limits *lim, const fatbin_summary *out)
{
	return lim && ((lim->max_containers && out->containers >= lim->max_containers) ||
		       (lim->deadline > 0 && (out->containers & 63) == 63 && now_seconds() > lim->deadline));
}

enum step { STEP_CONTAINER, STEP_SKIPPED, STEP_END };

/* One step along the chain of containers from *pos (relative to the section of size bytes at
 * off): STEP_CONTAINER with its entries' absolute range in *r and *pos past it; STEP_SKIPPED
 * over bytes that are no container (to the next magic) or a bad header (counted malformed);
 * STEP_END when no container follows or a read fails. A container that claims more than the
 * section holds is counted malformed and cut to what is there. */
static enum step container_step(const binsrc *b, uint64_t off, uint64_t size, uint64_t *pos, fatbin_summary *out,
				struct crange *r)
{
	unsigned char h[16];
	if (!binsrc_read(b, off + *pos, h, sizeof(h)))
		return STEP_END;
	if (le32(h) != FATBIN_MAGIC) {
		uint64_t next = find_magic(b, off, size, *pos + 1);
		if (next >= size)
			return STEP_END;
		*pos = next;
		return STEP_SKIPPED;
	}
	uint16_t hsize = le16(h + 6);
	uint64_t body = le64(h + 8);
	if (hsize < 16 || hsize > 256 || hsize > size - *pos) {
		out->malformed++;
		*pos += 4;
		return STEP_SKIPPED;
	}
	out->containers++;
	uint64_t start = *pos + hsize;
	uint64_t end = body > size - start ? size : start + body;
	if (body > size - start)
		out->malformed++;
	*r = (struct crange){off + start, off + end};
	*pos = end > *pos + 4 ? end : *pos + 4;
	return STEP_CONTAINER;
}

/* The chain of containers, exactly as the one-thread scan follows it; NULL (and *n 0) when a
 * limit or a read stops it early: the caller scans the usual way then. */
static struct crange *container_chain(const binsrc *b, uint64_t off, uint64_t size, const fatbin_limits *lim,
				      fatbin_summary *out, size_t *n)
{
	size_t cap = 1024;
	struct crange *v = xmalloc(cap * sizeof(*v));
	*n = 0;
	uint64_t pos = 0;
	while (pos + 16 <= size) {
		if (limited(lim, out)) {
			free(v);
			*n = 0;
			return NULL;
		}
		struct crange r;
		enum step k = container_step(b, off, size, &pos, out, &r);
		if (k == STEP_END)
			break;
		if (k == STEP_SKIPPED)
			continue;
		if (*n == cap) {
			cap *= 2;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[(*n)++] = r;
	}
	return v;
}

static void merge_part(fatbin_summary *out, const fatbin_summary *s)
{
	out->entries += s->entries;
	out->malformed += s->malformed;
	out->compressed |= s->compressed;
	out->incomplete |= s->incomplete;
	for (unsigned i = 0; i < s->nsass; i++)
		add_arch(out->sass, &out->nsass, s->sass[i].sm, s->sass[i].variant);
	for (unsigned i = 0; i < s->nptx; i++)
		add_arch(out->ptx, &out->nptx, s->ptx[i].sm, s->ptx[i].variant);
}

/* Same result as the one-thread scan, in a fraction of the time on a multi-core machine: the
 * entry headers are most of the reads. False when it did not run (the caller scans). */
static bool scan_parallel(const binsrc *b, uint64_t off, uint64_t size, const fatbin_limits *lim, fatbin_summary *out)
{
	size_t n = 0;
	fatbin_summary chain;
	memset(&chain, 0, sizeof(chain));
	struct crange *v = container_chain(b, off, size, lim, &chain, &n);
	if (!v)
		return false;
	struct part parts[SCAN_THREADS];
	pthread_t tid[SCAN_THREADS];
	bool started[SCAN_THREADS] = {false};
	size_t per = (n + SCAN_THREADS - 1) / SCAN_THREADS;
	for (int k = 0; k < SCAN_THREADS; k++) {
		size_t from = (size_t)k * per < n ? (size_t)k * per : n;
		size_t to = from + per < n ? from + per : n;
		parts[k] = (struct part){b, v + from, to - from, lim ? lim->deadline : 0, {0}};
		if (k > 0 && parts[k].n)
			started[k] = pthread_create(&tid[k], NULL, scan_part, &parts[k]) == 0;
	}
	scan_part(&parts[0]);
	for (int k = 1; k < SCAN_THREADS; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else if (parts[k].n)
			scan_part(&parts[k]); /* no thread: this one does it */
	}
	*out = chain;
	for (int k = 0; k < SCAN_THREADS; k++)
		merge_part(out, &parts[k].s);
	free(v);
	return true;
}

unsigned fatbin_scan(const binsrc *b, uint64_t off, uint64_t size, const fatbin_limits *lim, fatbin_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (off <= b->size && size >= PARALLEL_MIN && !(lim && lim->max_containers)) {
		uint64_t sz = size > b->size - off ? b->size - off : size;
		if (scan_parallel(b, off, sz, lim, out))
			return out->containers;
		memset(out, 0, sizeof(*out));
	}
	if (off > b->size)
		return 0;
	if (size > b->size - off)
		size = b->size - off;
	uint64_t pos = 0;
	while (pos + 16 <= size) {
		if (limited(lim, out)) {
			out->incomplete = true;
			break;
		}
		struct crange r;
		enum step k = container_step(b, off, size, &pos, out, &r);
		if (k == STEP_END)
			break;
		if (k == STEP_CONTAINER && !scan_entries(b, r.start, r.end, out))
			out->malformed++;
	}
	return out->containers;
}

static void arch_token(char *buf, size_t n, const char *prefix, const fatbin_arch *a)
{
	if (a->variant)
		snprintf(buf, n, "%s_%u%c", prefix, a->sm, a->variant);
	else
		snprintf(buf, n, "%s_%u", prefix, a->sm);
}

void fatbin_arch_text(const fatbin_summary *s, char *buf, size_t n)
{
	strbuf sb;
	sb_init(&sb);
	char tok[32];
	for (unsigned i = 0; i < s->nsass; i++) {
		arch_token(tok, sizeof(tok), "sm", &s->sass[i]);
		if (sb.len)
			sb_addc(&sb, ' ');
		sb_add(&sb, tok);
	}
	for (unsigned i = 0; i < s->nptx; i++) {
		arch_token(tok, sizeof(tok), "compute", &s->ptx[i]);
		if (sb.len)
			sb_addc(&sb, ' ');
		sb_add(&sb, tok);
	}
	str_copy(buf, n, sb.buf ? sb.buf : "");
	sb_free(&sb);
}

int fatbin_scan_elf(struct elf_image *img, const fatbin_limits *lim, fatbin_summary *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t off, size;
	if (!elf_find_section(img, ".nv_fatbin", &off, &size) || size == 0)
		return 0;
	binsrc b;
	binsrc_elf(&b, img);
	fatbin_scan(&b, off, size, lim, out);
	return 1;
}
