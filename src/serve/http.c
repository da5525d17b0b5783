#include "serve/http.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "core/util.h"

struct http_server {
	struct MHD_Daemon *d;
	exporter *ex;
	unsigned port;
	char address[128];
};

void http_opts_default(http_opts *o)
{
	o->listen = GPUVET_DEFAULT_LISTEN;
	o->max_connections = 512;
	o->max_per_ip = 64;
	o->timeout_seconds = 10;
	o->connection_memory = 16 * 1024;
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

struct scrape {
	expo_body *body;
	char *prefix;
};

static void scrape_done(void *cls)
{
	struct scrape *s = cls;
	expo_body_unref(s->body);
	free(s->prefix);
	free(s);
}

static enum MHD_Result send_metrics(struct MHD_Connection *c, exporter *ex)
{
	const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
	expo_format fmt = expo_negotiate(accept);
	struct scrape *s = xcalloc(1, sizeof(*s));
	metrics_status st;
	s->body = exporter_body(ex, &st);
	strbuf sb;
	sb_init(&sb);
	expo e;
	expo_init(&e, &sb, fmt);
	metrics_render_status(&e, &st);
	if (!s->body)
		expo_finish(&e); /* nothing sampled yet: the status alone is the whole exposition */
	size_t plen = sb.len;
	s->prefix = sb_steal(&sb);
	struct MHD_IoVec iov[2] = {{s->prefix, plen}, {NULL, 0}};
	unsigned n = 1;
	if (s->body) {
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
	if (*upload_data_size) { /* a body nobody asked for: discard it */
		*upload_data_size = 0;
		return MHD_YES;
	}
	(void)req_cls;
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
		return send_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
	if (strcmp(url, "/metrics") == 0)
		return send_metrics(c, h->ex);
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

http_server *http_start(const http_opts *o, exporter *ex, char *err, size_t errsize)
{
	char host[256];
	unsigned port;
	bool all;
	if (!http_parse_listen(o->listen, host, sizeof(host), &port, &all, err, errsize))
		return NULL;
	http_server *h = xcalloc(1, sizeof(*h));
	h->ex = ex;
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD;
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
			free(h);
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
	struct MHD_OptionItem opts[] = {
		{MHD_OPTION_CONNECTION_LIMIT, (intptr_t)o->max_connections, NULL},
		{MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)o->max_per_ip, NULL},
		{MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)o->timeout_seconds, NULL},
		{MHD_OPTION_CONNECTION_MEMORY_LIMIT, (intptr_t)o->connection_memory, NULL},
		{MHD_OPTION_LISTEN_BACKLOG_SIZE, 511, NULL},
		{all ? MHD_OPTION_END : MHD_OPTION_SOCK_ADDR, 0, all ? NULL : &ss},
		{MHD_OPTION_END, 0, NULL},
	};
	h->d = MHD_start_daemon(flags, (uint16_t)port, NULL, NULL, handler, h, MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
	if (!h->d) {
		snprintf(err, errsize, "cannot listen on %s: %s", o->listen,
			 errno ? strerror(errno) : "libmicrohttpd refused the options");
		free(h);
		return NULL;
	}
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
	MHD_stop_daemon(h->d);
	free(h);
}
