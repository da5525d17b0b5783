/*
 * The child's facts as bytes (facts_wire.h):
 *   "GVF1" | count (u32) | count records
 *   record: state (u8) | type (u8) | errno (i32) | i (i64) | d (f64) | key | str | error | source | excerpt
 *   string: length (u32, NO_STRING for NULL) | the bytes, without their NUL
 * Host order, memcpy'd: a record is not aligned in the buffer.
 */
#include "core/facts_wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define WIRE_MAGIC "GVF1"
#define NO_STRING UINT32_MAX

static void put_u32(strbuf *b, uint32_t v)
{
	sb_addn(b, (const char *)&v, sizeof(v));
}

static void put_string(strbuf *b, const char *s)
{
	if (!s) {
		put_u32(b, NO_STRING);
		return;
	}
	size_t n = strlen(s);
	put_u32(b, (uint32_t)n);
	sb_addn(b, s, n);
}

char *facts_wire_pack(const facts *f, size_t *len)
{
	strbuf b;
	sb_init(&b);
	sb_addn(&b, WIRE_MAGIC, 4);
	size_t n;
	const fact **all = facts_list(f, &n);
	uint32_t count = (uint32_t)n;
	put_u32(&b, count);
	for (size_t i = 0; i < n; i++) {
		const fact *ft = all[i];
		uint8_t state = (uint8_t)ft->state, type = (uint8_t)ft->type;
		int32_t err = ft->sys_errno;
		int64_t iv = ft->i;
		sb_addn(&b, (const char *)&state, 1);
		sb_addn(&b, (const char *)&type, 1);
		sb_addn(&b, (const char *)&err, sizeof(err));
		sb_addn(&b, (const char *)&iv, sizeof(iv));
		sb_addn(&b, (const char *)&ft->d, sizeof(ft->d));
		put_string(&b, ft->key);
		put_string(&b, ft->str);
		put_string(&b, ft->error);
		put_string(&b, ft->source);
		put_string(&b, ft->excerpt);
	}
	free(all);
	*len = b.len;
	return sb_steal(&b);
}

typedef struct reader {
	const char *p, *end;
} reader;

static bool take(reader *r, void *out, size_t n)
{
	if ((size_t)(r->end - r->p) < n)
		return false;
	memcpy(out, r->p, n);
	r->p += n;
	return true;
}

/* A string's bytes (*s, *n) or NULL (*s NULL); false when cut short or holding a NUL. */
static bool take_string(reader *r, const char **s, size_t *n)
{
	uint32_t len;
	if (!take(r, &len, sizeof(len)))
		return false;
	*s = NULL;
	*n = 0;
	if (len == NO_STRING)
		return true;
	if ((size_t)(r->end - r->p) < len || memchr(r->p, '\0', len))
		return false;
	*s = r->p;
	*n = len;
	r->p += len;
	return true;
}

typedef struct wire_fact {
	uint8_t state, type;
	int32_t err;
	int64_t i;
	double d;
	const char *s[5]; /* key, str, error, source, excerpt */
	size_t n[5];
} wire_fact;

static bool take_fact(reader *r, wire_fact *w)
{
	if (!take(r, &w->state, 1) || !take(r, &w->type, 1) || !take(r, &w->err, sizeof(w->err)) ||
	    !take(r, &w->i, sizeof(w->i)) || !take(r, &w->d, sizeof(w->d)))
		return false;
	if (w->state > FACT_UNPARSABLE || w->type > FV_BOOL)
		return false;
	for (size_t k = 0; k < 5; k++)
		if (!take_string(r, &w->s[k], &w->n[k]))
			return false;
	return w->s[0] != NULL; /* every fact has a key */
}

static char *dup_or_null(const char *s, size_t n)
{
	return s ? xstrndup(s, n) : NULL;
}

bool facts_wire_unpack(facts *dst, const char *buf, size_t len)
{
	reader r = {buf, buf + len};
	char magic[4];
	uint32_t count;
	if (!take(&r, magic, 4) || memcmp(magic, WIRE_MAGIC, 4) != 0 || !take(&r, &count, sizeof(count)))
		return false;
	/* whole first, so that a bad buffer puts nothing */
	const char *first = r.p;
	wire_fact w;
	for (uint32_t i = 0; i < count; i++)
		if (!take_fact(&r, &w))
			return false;
	if (r.p != r.end)
		return false;
	r.p = first;
	for (uint32_t i = 0; i < count; i++) {
		take_fact(&r, &w);
		fact *ft = xcalloc(1, sizeof(*ft));
		ft->state = (fact_state)w.state;
		ft->type = (fact_type)w.type;
		ft->sys_errno = w.err;
		ft->i = w.i;
		ft->d = w.d;
		ft->key = xstrndup(w.s[0], w.n[0]);
		ft->str = dup_or_null(w.s[1], w.n[1]);
		ft->error = dup_or_null(w.s[2], w.n[2]);
		ft->source = dup_or_null(w.s[3], w.n[3]);
		ft->excerpt = dup_or_null(w.s[4], w.n[4]);
		facts_adopt(dst, ft);
	}
	return true;
}
