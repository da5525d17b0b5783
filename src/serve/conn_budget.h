/*
 * The exporter's connection budget: which connection to close so that a scrape is answered
 * whatever other clients do. Pure bookkeeping (no sockets, no clock): serve/http.c feeds it the
 * events of libmicrohttpd and closes what it names.
 *
 * Rules (docs/serve.md, "Under abuse"):
 * - A deadline for a whole request and a whole answer, not per byte: a connection must deliver
 *   its complete request headers within `deadline` seconds of connecting (or of the end of its
 *   previous answer, on keep-alive), and take its whole answer within `deadline` seconds.
 * - A budget of max_total connections, and of max_per_class for one client class (an IPv4
 *   address, or an IPv6 /64). A new connection over either budget does not wait: room is made by
 *   closing, within the class that is over, first the idle connections (no request line yet,
 *   oldest first), then those still sending headers (oldest first), then answers that have
 *   stalled for `grace` seconds (oldest first); only when none of those exists is the newcomer
 *   itself closed. So trickling, idle and non-reading clients cannot keep a scrape out: a
 *   scrape sends its request at once and is the youngest connection of all.
 */
#ifndef GPUVET_SERVE_CONN_BUDGET_H
#define GPUVET_SERVE_CONN_BUDGET_H
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

typedef enum conn_state {
	CONN_IDLE,      /* connected (or between keep-alive requests), no request line yet */
	CONN_HEADERS,   /* request line seen, headers still coming */
	CONN_ANSWERING, /* a complete request, its answer under way */
} conn_state;

typedef struct conn_key {
	unsigned char b[16]; /* IPv4 address, or IPv6 /64 prefix; zero elsewhere */
	unsigned char family;
} conn_key;

/* The client class of an address: IPv4 (also IPv4-mapped IPv6) per address, IPv6 per /64. */
conn_key conn_key_of(const struct sockaddr *sa);

typedef struct conn_slot {
	bool used;
	bool closing;     /* named as a victim or past its deadline: no longer counts */
	int fd;
	conn_key key;
	conn_state state;
	double since;     /* when the current request (or answer) began: the deadline runs from here */
} conn_slot;

/* Why the exporter closed a connection (the reason label of gpuvet_http_connections_closed_total). */
typedef enum conn_reason {
	CONN_EVICTED,     /* to make room for a newcomer */
	CONN_DEADLINE,    /* its request or answer took longer than the deadline */
	CONN_REFUSED,     /* the newcomer itself: every other connection was an answer under way */
	CONN_HUNG_UP,     /* the client hung up before a whole request */
	CONN_NOT_ALLOWED, /* outside --allow */
	CONN_REASONS
} conn_reason;
const char *conn_reason_name(conn_reason r); /* "evicted", "deadline", ... */
const char *conn_state_name(conn_state s);   /* "idle", "headers", "answering" */


typedef struct conn_table {
	conn_slot *v;
	size_t cap;            /* slots: max_total plus room for connections being closed */
	size_t live;           /* used and not closing */
	unsigned max_total;
	unsigned max_per_class; /* 0: no per-class budget */
	double deadline;
	double grace;
	unsigned long closed[CONN_REASONS]; /* connections closed by each rule */
} conn_table;

void conn_table_init(conn_table *t, unsigned max_total, unsigned max_per_class, double deadline, size_t cap);
void conn_table_free(conn_table *t);

/* A new connection; NULL when every slot is taken (close it: the caller's hard limit). */
conn_slot *conn_add(conn_table *t, int fd, const conn_key *key, double now);
/* After conn_add: the next connection to close to bring the budgets back, marked closing, or
 * NULL when both hold. Call until NULL; it may name the newcomer itself (then stop). */
conn_slot *conn_victim(conn_table *t, conn_slot *newcomer, double now);
void conn_set_state(conn_table *t, conn_slot *s, conn_state st, double now);
void conn_remove(conn_table *t, conn_slot *s);
/* The client hung up before a whole request: marked closing. */
void conn_hung_up(conn_table *t, conn_slot *s);
/* The next connection past its deadline at now, marked closing; NULL when none. */
conn_slot *conn_expired(conn_table *t, double now);
/* Connections open now in state st. */
size_t conn_count(const conn_table *t, conn_state st);
/* Seconds until the earliest deadline (at most cap_s); for the wait of the event loop. */
double conn_next_deadline(const conn_table *t, double now, double cap_s);

/* --allow: the networks whose clients may connect at all (others are closed on accept). */
typedef struct conn_net {
	unsigned char b[16];
	unsigned char family; /* 4 or 6 */
	unsigned char bits;
} conn_net;
/* "ADDRESS" or "ADDRESS/PREFIX", IPv4 or IPv6; false with err on anything else. */
bool conn_net_parse(const char *text, conn_net *n, char *err, size_t errsize);
/* True when sa is in one of the n networks (an IPv4-mapped IPv6 address is its IPv4 address). */
bool conn_allowed(const conn_net *nets, size_t n, const struct sockaddr *sa);
#endif
