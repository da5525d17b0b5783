#include "serve/conn_budget.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* the youngest answer that may be closed to make room: a live client takes a whole answer in
 * milliseconds */
#define CONN_GRACE_S 1.0

conn_key conn_key_of(const struct sockaddr *sa)
{
	conn_key k;
	memset(&k, 0, sizeof(k));
	if (!sa)
		return k;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		memcpy(k.b, &in->sin_addr, 4);
		k.family = 4;
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		const unsigned char *a = in6->sin6_addr.s6_addr;
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(a, mapped, sizeof(mapped)) == 0) {
			memcpy(k.b, a + 12, 4);
			k.family = 4;
		} else {
			memcpy(k.b, a, 8); /* one /64 is one client: a host picks from 2^64 addresses */
			k.family = 6;
		}
	}
	return k;
}

const char *conn_reason_name(conn_reason r)
{
	static const char *const names[CONN_REASONS] = {"evicted", "deadline", "refused", "hung_up", "not_allowed"};
	return (unsigned)r < CONN_REASONS ? names[r] : "unknown";
}

const char *conn_state_name(conn_state s)
{
	static const char *const names[] = {"idle", "headers", "answering"};
	return (unsigned)s < GV_ARRAY_LEN(names) ? names[s] : "unknown";
}

size_t conn_count(const conn_table *t, conn_state st)
{
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->v[i].used && !t->v[i].closing && t->v[i].state == st)
			n++;
	return n;
}

static bool same_key(const conn_key *a, const conn_key *b)
{
	return a->family == b->family && memcmp(a->b, b->b, sizeof(a->b)) == 0;
}

void conn_table_init(conn_table *t, unsigned max_total, unsigned max_per_class, double deadline, size_t cap)
{
	memset(t, 0, sizeof(*t));
	if (cap < max_total)
		cap = max_total;
	t->v = xcalloc(cap ? cap : 1, sizeof(conn_slot));
	t->cap = cap;
	t->max_total = max_total;
	t->max_per_class = max_per_class;
	t->deadline = deadline;
	t->grace = deadline < CONN_GRACE_S ? deadline : CONN_GRACE_S;
}

void conn_table_free(conn_table *t)
{
	free(t->v);
	memset(t, 0, sizeof(*t));
}

conn_slot *conn_add(conn_table *t, int fd, const conn_key *key, double now)
{
	for (size_t i = 0; i < t->cap; i++) {
		conn_slot *s = &t->v[i];
		if (s->used)
			continue;
		memset(s, 0, sizeof(*s));
		s->used = true;
		s->fd = fd;
		s->key = *key;
		s->state = CONN_IDLE;
		s->since = now;
		t->live++;
		return s;
	}
	return NULL;
}

static void mark_closing(conn_table *t, conn_slot *s, conn_reason why)
{
	s->closing = true;
	t->live--;
	t->closed[why]++;
}

/* The most expendable live connection other than the newcomer, within key's class (or all
 * when key is NULL): idle before headers before stalled answers, the oldest first. */
static conn_slot *most_expendable(conn_table *t, const conn_slot *newcomer, const conn_key *key, double now)
{
	conn_slot *best = NULL;
	for (size_t i = 0; i < t->cap; i++) {
		conn_slot *s = &t->v[i];
		if (!s->used || s->closing || s == newcomer || (key && !same_key(&s->key, key)))
			continue;
		if (s->state == CONN_ANSWERING && now - s->since < t->grace)
			continue; /* an answer being taken: leave it */
		if (!best || s->state < best->state || (s->state == best->state && s->since < best->since))
			best = s;
	}
	return best;
}

static size_t class_count(const conn_table *t, const conn_key *key)
{
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++) {
		const conn_slot *s = &t->v[i];
		if (s->used && !s->closing && same_key(&s->key, key))
			n++;
	}
	return n;
}

conn_slot *conn_victim(conn_table *t, conn_slot *newcomer, double now)
{
	if (!newcomer || newcomer->closing)
		return NULL;
	const conn_key *key = NULL;
	if (t->max_per_class && class_count(t, &newcomer->key) > t->max_per_class)
		key = &newcomer->key;
	else if (t->live <= t->max_total)
		return NULL;
	conn_slot *v = most_expendable(t, newcomer, key, now);
	if (v) {
		mark_closing(t, v, CONN_EVICTED);
		return v;
	}
	mark_closing(t, newcomer, CONN_REFUSED);
	return newcomer;
}

void conn_set_state(conn_table *t, conn_slot *s, conn_state st, double now)
{
	(void)t;
	if (!s || s->state == st)
		return;
	/* the request's deadline runs from its first moment: headers do not restart it */
	if (!(s->state == CONN_IDLE && st == CONN_HEADERS))
		s->since = now;
	s->state = st;
}

void conn_remove(conn_table *t, conn_slot *s)
{
	if (!s || !s->used)
		return;
	if (!s->closing)
		t->live--;
	memset(s, 0, sizeof(*s));
}

void conn_hung_up(conn_table *t, conn_slot *s)
{
	if (s && s->used && !s->closing)
		mark_closing(t, s, CONN_HUNG_UP);
}

conn_slot *conn_expired(conn_table *t, double now)
{
	for (size_t i = 0; i < t->cap; i++) {
		conn_slot *s = &t->v[i];
		if (s->used && !s->closing && now - s->since >= t->deadline) {
			mark_closing(t, s, CONN_DEADLINE);
			return s;
		}
	}
	return NULL;
}

double conn_next_deadline(const conn_table *t, double now, double cap_s)
{
	double best = cap_s;
	for (size_t i = 0; i < t->cap; i++) {
		const conn_slot *s = &t->v[i];
		if (s->used && !s->closing) {
			double left = s->since + t->deadline - now;
			if (left < best)
				best = left;
		}
	}
	return best < 0 ? 0 : best;
}

bool conn_net_parse(const char *text, conn_net *n, char *err, size_t errsize)
{
	memset(n, 0, sizeof(*n));
	char addr[64];
	const char *slash = strchr(text, '/');
	size_t len = slash ? (size_t)(slash - text) : strlen(text);
	if (len == 0 || len >= sizeof(addr)) {
		snprintf(err, errsize, "'%s': expected an address or ADDRESS/PREFIX", text);
		return false;
	}
	memcpy(addr, text, len);
	addr[len] = '\0';
	unsigned max;
	if (inet_pton(AF_INET, addr, n->b) == 1) {
		n->family = 4;
		max = 32;
	} else if (inet_pton(AF_INET6, addr, n->b) == 1) {
		n->family = 6;
		max = 128;
	} else {
		snprintf(err, errsize, "'%s': '%s' is not an IPv4 or IPv6 address", text, addr);
		return false;
	}
	unsigned long bits = max;
	if (slash) {
		char *end;
		errno = 0;
		bits = strtoul(slash + 1, &end, 10);
		if (!slash[1] || *end || errno || bits > max) {
			snprintf(err, errsize, "'%s': the prefix length must be a number from 0 to %u", text, max);
			return false;
		}
	}
	n->bits = (unsigned char)bits;
	return true;
}

static bool prefix_equal(const unsigned char *a, const unsigned char *b, unsigned bits)
{
	unsigned whole = bits / 8, rest = bits % 8;
	if (memcmp(a, b, whole) != 0)
		return false;
	if (!rest)
		return true;
	unsigned char mask = (unsigned char)(0xff << (8 - rest));
	return (a[whole] & mask) == (b[whole] & mask);
}

bool conn_allowed(const conn_net *nets, size_t n, const struct sockaddr *sa)
{
	if (!sa)
		return false;
	unsigned char a[16];
	unsigned family;
	if (sa->sa_family == AF_INET) {
		memcpy(a, &((const struct sockaddr_in *)sa)->sin_addr, 4);
		family = 4;
	} else if (sa->sa_family == AF_INET6) {
		const unsigned char *b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
		static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
		if (memcmp(b, mapped, sizeof(mapped)) == 0) {
			memcpy(a, b + 12, 4);
			family = 4;
		} else {
			memcpy(a, b, 16);
			family = 6;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if (nets[i].family == family && prefix_equal(a, nets[i].b, nets[i].bits))
			return true;
	return false;
}
