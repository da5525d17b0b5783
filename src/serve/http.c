#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"
#include "expo/gzip.h"
#include "serve/conn_budget.h"

/* connections being closed may still hold their descriptors for one turn of the event loop:
 * room for them above the budget, so a newcomer is accepted (and room made) at once */
#define HTTP_CLOSING_ROOM 32
/* the event loop wakes at least this often to apply the deadlines and to see http_stop */
#define HTTP_TICK_MS 200

struct http_server {
	struct MHD_Daemon *d;
	exporter *ex;
	unsigned port;
	char address[128];
	conn_table conns; /* touched only by the event loop thread (every callback runs there) */
	conn_net *allow;
	size_t nallow;
	struct pollfd *pf; /* close_hung_up's, one per slot */
	conn_slot **pf_slot;
	pthread_t loop;
	bool loop_started;
	atomic_bool stop;
};

/* Closing a connection from outside libmicrohttpd: shut the socket down; the library sees the
 * end of the stream on its next turn and closes the connection (and its descriptor) itself. */
static void close_conn(conn_slot *s)
{
	if (s->fd >= 0)
		shutdown(s->fd, SHUT_RDWR);
}

static conn_slot *slot_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	http_server *h = cls;
	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		conn_remove(&h->conns, *socket_context);
		*socket_context = NULL;
		return;
	}
	if (toe != MHD_CONNECTION_NOTIFY_STARTED)
		return;
	const union MHD_ConnectionInfo *fdi = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ai = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	int fd = fdi ? fdi->connect_fd : -1;
	conn_key key = conn_key_of(ai ? ai->client_addr : NULL);
	double now = now_seconds();
	conn_slot *s = conn_add(&h->conns, fd, &key, now);
	*socket_context = s;
	if (!s) { /* every slot taken by connections being closed: this one waits for none */
		if (fd >= 0)
			shutdown(fd, SHUT_RDWR);
		return;
	}
	conn_slot *v;
	while ((v = conn_victim(&h->conns, s, now)) != NULL) {
		close_conn(v);
		if (v == s)
			break;
	}
}

static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	http_server *h = cls;
	(void)addrlen;
	if (!h->nallow || conn_allowed(h->allow, h->nallow, addr))
		return MHD_YES;
	h->conns.closed[CONN_NOT_ALLOWED]++;
	return MHD_NO;
}

static void *on_request_line(void *cls, const char *uri, struct MHD_Connection *c)
{
	http_server *h = cls;
	(void)uri;
	conn_set_state(&h->conns, slot_of(c), CONN_HEADERS, now_seconds());
	return NULL;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe)
{
	http_server *h = cls;
	(void)req_cls;
	(void)toe;
	conn_set_state(&h->conns, slot_of(c), CONN_IDLE, now_seconds());
}

/* Every connection of the budget needs a descriptor: raise the soft limit when it is short. */
static bool fd_room(unsigned connections, char *err, size_t errsize)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)connections + 64; /* the listener, epoll, NVML, the check's files */
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return true;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need) {
		snprintf(err, errsize,
			 "--max-connections %u needs %lu file descriptors; the limit is %lu (ulimit -n): lower --max-connections",
			 connections - HTTP_CLOSING_ROOM, (unsigned long)need, (unsigned long)rl.rlim_max);
		return false;
	}
	rl.rlim_cur = need;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		snprintf(err, errsize, "cannot raise the file descriptor limit to %lu: %s", (unsigned long)need,
			 strerror(errno));
		return false;
	}
	return true;
}

/* Connections whose client hung up before a whole request, with nothing left unread: nothing
 * can be asked on them any more (this runs after libmicrohttpd has read and parsed what there
 * was). libmicrohttpd sometimes misses that end of stream on a connection it has just accepted
 * (the client gave up while it waited in the listen queue) and would keep it until its
 * timeout; shutting it down wakes the library. Answers under way are left alone (a client may
 * half-close after its request). */
static void close_hung_up(http_server *h)
{
	conn_table *t = &h->conns;
	struct pollfd *pf = h->pf;
	conn_slot **who = h->pf_slot;
	nfds_t n = 0;
	for (size_t i = 0; i < t->cap; i++) {
		conn_slot *s = &t->v[i];
		if (s->used && !s->closing && s->fd >= 0 && s->state != CONN_ANSWERING) {
			pf[n].fd = s->fd;
			pf[n].events = POLLRDHUP;
			who[n++] = s;
		}
	}
	if (n && poll(pf, n, 0) > 0)
		for (nfds_t i = 0; i < n; i++) {
			short r = pf[i].revents;
			int unread = 0;
			/* a request sent before the hang-up is still to be read: the library answers it */
			if (!(r & (POLLHUP | POLLERR)) &&
			    (!(r & POLLRDHUP) || ioctl(pf[i].fd, FIONREAD, &unread) != 0 || unread > 0))
				continue;
			conn_hung_up(t, who[i]);
			close_conn(who[i]);
		}
}

static void *event_loop(void *arg)
{
	http_server *h = arg;
	while (!atomic_load(&h->stop)) {
		double wait = conn_next_deadline(&h->conns, now_seconds(), HTTP_TICK_MS / 1000.0);
		if (MHD_run_wait(h->d, (int32_t)(wait * 1000) + 1) != MHD_YES)
			sleep_seconds(0.01); /* never spin on an error */
		double now = now_seconds();
		conn_slot *s;
		while ((s = conn_expired(&h->conns, now)) != NULL)
			close_conn(s);
		close_hung_up(h);
	}
	return NULL;
}

void http_opts_default(http_opts *o)
{
	o->listen = GPUVET_DEFAULT_LISTEN;
	o->max_connections = 512;
	o->max_per_ip = 64;
	o->timeout_seconds = 10;
	o->connection_memory = 16 * 1024;
	o->allow = NULL;
	o->nallow = 0;
}

bool http_parse_listen(const char *listen, char *host, size_t hostsize, unsigned *port, bool *all, char *err,
		       size_t errsize)
{
	const char *colon;
	*all = false;
	host[0] = '\0';
	if (!listen || !*listen) {
		snprintf(err, errsize, "empty address");
		return false;
	}
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');
		if (!close || close[1] != ':') {
			snprintf(err, errsize, "'%s': expected [IPv6]:PORT", listen);
			return false;
		}
		size_t n = (size_t)(close - listen - 1);
		if (n == 0 || n >= hostsize) {
			snprintf(err, errsize, "'%s': bad IPv6 address", listen);
			return false;
		}
		memcpy(host, listen + 1, n);
		host[n] = '\0';
		colon = close + 1;
	} else {
		colon = strrchr(listen, ':');
		if (!colon) {
			snprintf(err, errsize, "'%s': expected HOST:PORT, or :PORT for every interface", listen);
			return false;
		}
		size_t n = (size_t)(colon - listen);
		if (n >= hostsize || memchr(listen, ':', n)) {
			snprintf(err, errsize, "'%s': write an IPv6 address in brackets: [::1]:PORT", listen);
			return false;
		}
		memcpy(host, listen, n);
		host[n] = '\0';
		*all = n == 0;
	}
	char *end;
	errno = 0;
	unsigned long p = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || errno || p > 65535) {
		snprintf(err, errsize, "'%s': the port must be a number from 0 to 65535", listen);
		return false;
	}
	*port = (unsigned)p;
	return true;
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	enum MHD_Result ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* 503 with Retry-After: the exporter is there, its answer is not yet. */
static enum MHD_Result send_unavailable(struct MHD_Connection *c, const char *text)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_SERVICE_UNAVAILABLE, r);
	MHD_destroy_response(r);
	return ret;
}

struct scrape {
	expo_body *body;
	char *prefix;
	unsigned char *gz_pre; /* gzip: the header and the prefix's deflate blocks */
	unsigned char gz_trailer[8];
};

static void scrape_done(void *cls)
{
	struct scrape *s = cls;
	expo_body_unref(s->body);
	free(s->prefix);
	free(s->gz_pre);
	free(s);
}

/* The body's deflate blocks, made by the first gzip scrape of this body (event loop only). */
static const expo_deflated *body_gz(expo_body *b, expo_format fmt)
{
	expo_deflated *d = fmt == EXPO_OPENMETRICS ? &b->om_gz : &b->text_gz;
	if (!d->data && !expo_deflate(fmt == EXPO_OPENMETRICS ? b->om : b->text, fmt == EXPO_OPENMETRICS ? b->om_len : b->text_len, d))
		return NULL;
	return d;
}

/* The budget at scrape time: an exporter under attack says so (docs/serve.md, "Limits"). */
static void render_conns(expo *e, const conn_table *t)
{
	metrics_declare(e, NULL, MF_HTTP_CONNECTIONS);
	for (conn_state st = CONN_IDLE; st <= CONN_ANSWERING; st++)
		expo_sample(e, (double)conn_count(t, st), "state", conn_state_name(st), NULL);
	metrics_declare(e, NULL, MF_HTTP_CONNECTIONS_CLOSED);
	for (conn_reason r = 0; r < CONN_REASONS; r++)
		expo_sample(e, (double)t->closed[r], "reason", conn_reason_name(r), NULL);
}

static enum MHD_Result send_metrics(struct MHD_Connection *c, http_server *h)
{
	exporter *ex = h->ex;
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	expo_format fmt = expo_negotiate(accept);
	struct scrape *s = xcalloc(1, sizeof(*s));
	metrics_status st;
	s->body = exporter_body(ex, &st);
	if (!s->body) {
		/* the first sample is under way (a first contact with NVML takes a while on a loaded
		 * machine): an answer without the GPUs would tell Prometheus that every GPU vanished at
		 * each restart. 503: this scrape failed, the target is not up yet. */
		scrape_done(s);
		return send_unavailable(c, "no sample yet: the first one is under way\n");
	}
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, fmt);
	metrics_render_status(&e, &st);
	render_conns(&e, &h->conns);
	size_t plen = sb.len;
	s->prefix = sb_steal(&sb);
	struct MHD_IoVec iov[3] = {{s->prefix, plen}, {NULL, 0}, {NULL, 0}};
	unsigned n = 1;
	/* gzip when the scraper takes it: the body compressed once, the prefix per answer, joined
	 * into one gzip member (expo/gzip.h); identity when compressing fails */
	const char *enc = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING);
	bool gz = false;
	if (expo_gzip_accepted(enc)) {
		const expo_deflated *d = s->body ? body_gz(s->body, fmt) : NULL;
		size_t pre_len;
		if ((d || !s->body) && expo_gzip_join(s->prefix, plen, d, &s->gz_pre, &pre_len, s->gz_trailer)) {
			iov[0] = (struct MHD_IoVec){s->gz_pre, pre_len};
			if (d)
				iov[n++] = (struct MHD_IoVec){d->data, d->len};
			iov[n++] = (struct MHD_IoVec){s->gz_trailer, sizeof(s->gz_trailer)};
			gz = true;
		}
	}
	if (!gz && s->body) {
		iov[1].iov_base = fmt == EXPO_OPENMETRICS ? s->body->om : s->body->text;
		iov[1].iov_len = fmt == EXPO_OPENMETRICS ? s->body->om_len : s->body->text_len;
		n = 2;
	}
	struct MHD_Response *r = MHD_create_response_from_iovec(iov, n, scrape_done, s);
	if (!r) {
		scrape_done(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				fmt == EXPO_OPENMETRICS ? EXPO_CONTENT_TYPE_OPENMETRICS : EXPO_CONTENT_TYPE_TEXT);
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
	MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, "Accept-Encoding");
	if (gz)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
	enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			       const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls)
{
	(void)version;
	(void)upload_data;
	http_server *h = cls;
	static int headers_seen;
	bool readable = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	/* A GET or HEAD is answered on the second call, once libmicrohttpd has read the whole
	 * request: an answer queued on the first call (headers only) makes it close the connection
	 * after the answer ("Connection: close"), so every scrape would pay a new connection.
	 * Any other method is refused at once, without reading its body, and the connection closed. */
	if (readable && !*req_cls) {
		*req_cls = &headers_seen;
		return MHD_YES;
	}
	if (*upload_data_size) { /* a body nobody asked for: discard it */
		*upload_data_size = 0;
		return MHD_YES;
	}
	conn_set_state(&h->conns, slot_of(c), CONN_ANSWERING, now_seconds());
	if (!readable)
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/metrics") == 0)
		return send_metrics(c, h);
	if (strcmp(url, "/healthz") == 0) {
		char why[300], text[320];
		bool alive = exporter_alive(h->ex, why, sizeof(why));
		snprintf(text, sizeof(text), "%s\n", why);
		return send_text(c, alive ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, text);
	}
	if (strcmp(url, "/") == 0)
		return send_text(c, MHD_HTTP_OK,
				 "gpuvet exporter\n/metrics  Prometheus metrics (OpenMetrics when asked)\n/healthz  liveness of the sampler\n");
	return send_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
}

/* What http_start made, at whatever step it stopped (h is zeroed at the start). */
static void server_free(http_server *h)
{
	if (h->d)
		MHD_stop_daemon(h->d);
	conn_table_free(&h->conns);
	free(h->pf);
	free(h->pf_slot);
	free(h->allow);
	free(h);
}

http_server *http_start(const http_opts *o, exporter *ex, char *err, size_t errsize)
{
	char host[256];
	unsigned port;
	bool all;
	if (!http_parse_listen(o->listen, host, sizeof(host), &port, &all, err, errsize))
		return NULL;
	http_server *h = xcalloc(1, sizeof(*h));
	h->ex = ex;
	if (o->nallow) {
		h->allow = xcalloc(o->nallow, sizeof(conn_net));
		for (size_t i = 0; i < o->nallow; i++) {
			char why[256];
			if (!conn_net_parse(o->allow[i], &h->allow[i], why, sizeof(why))) {
				snprintf(err, errsize, "--allow %s", why);
				server_free(h);
				return NULL;
			}
		}
		h->nallow = o->nallow;
	}
	/* one thread of ours runs libmicrohttpd's epoll loop, the callbacks and the deadlines */
	unsigned flags = MHD_USE_EPOLL;
	struct sockaddr_storage ss;
	memset(&ss, 0, sizeof(ss));
	if (all) {
		flags |= MHD_USE_DUAL_STACK;
	} else {
		struct addrinfo hints = {0}, *res = NULL;
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_PASSIVE;
		int gai = getaddrinfo(host, NULL, &hints, &res);
		if (gai != 0 || !res) {
			snprintf(err, errsize, "cannot resolve listen address '%s': %s", host, gai_strerror(gai));
			server_free(h);
			return NULL;
		}
		memcpy(&ss, res->ai_addr, res->ai_addrlen);
		freeaddrinfo(res);
		if (ss.ss_family == AF_INET6) {
			((struct sockaddr_in6 *)&ss)->sin6_port = htons((uint16_t)port);
			flags |= MHD_USE_IPv6;
		} else {
			((struct sockaddr_in *)&ss)->sin_port = htons((uint16_t)port);
		}
	}
	/* the budgets are ours (conn_budget.h): libmicrohttpd's own limits only back them up, and
	 * its per-address limit would refuse a scrape beside an address's idle connections */
	unsigned hard = o->max_connections + HTTP_CLOSING_ROOM;
	if (!fd_room(hard, err, errsize)) {
		server_free(h);
		return NULL;
	}
	conn_table_init(&h->conns, o->max_connections, o->max_per_ip, o->timeout_seconds, hard);
	h->pf = xcalloc(hard, sizeof(*h->pf));
	h->pf_slot = xcalloc(hard, sizeof(*h->pf_slot));
	struct MHD_OptionItem opts[] = {
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)hard, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->timeout_seconds, NULL},
		{MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h},
		{MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
		{MHD_OPTION_URI_LOG_CALLBACK, (intptr_t)on_request_line, h},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory, NULL},
		{MHD_OPTION_LISTEN_BACKLOG_SIZE, 511, NULL},
		{all ? MHD_OPTION_END : MHD_OPTION_SOCK_ADDR, 0, all ? NULL : &ss},
		{MHD_OPTION_END, 0, NULL},
	};
	h->d = MHD_start_daemon(flags, (uint16_t)port, on_accept, h, handler, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errsize, "cannot listen on %s: %s", o->listen,
			 errno ? strerror(errno) : "libmicrohttpd refused the options");
		server_free(h);
		return NULL;
	}
	int pe = pthread_create(&h->loop, NULL, event_loop, h);
	if (pe != 0) {
		snprintf(err, errsize, "cannot start the http thread: %s", strerror(pe));
		server_free(h);
		return NULL;
	}
	h->loop_started = true;
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
	h->port = info ? info->port : port;
	if (all)
		snprintf(h->address, sizeof(h->address), "*:%u (every interface)", h->port);
	else if (strchr(host, ':'))
		snprintf(h->address, sizeof(h->address), "[%s]:%u", host, h->port);
	else
		snprintf(h->address, sizeof(h->address), "%s:%u", host, h->port);
	return h;
}

unsigned http_port(const http_server *h)
{
	return h->port;
}

const char *http_address(const http_server *h)
{
	return h->address;
}

void http_stop(http_server *h)
{
	if (!h)
		return;
	atomic_store(&h->stop, true);
	if (h->loop_started)
		pthread_join(h->loop, NULL);
	server_free(h);
}
