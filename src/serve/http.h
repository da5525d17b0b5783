/*
 * The HTTP side of gpuvet serve, on libmicrohttpd: GET /metrics (text format, or OpenMetrics
 * when the Accept header asks), GET /healthz, GET / (a pointer to both). One epoll thread
 * serves every connection; each scrape only references the body the sampler rendered.
 *
 * Bounded under abuse (serve/conn_budget.h): a budget of connections in all and per client
 * class that closes idle and slow connections first to make room, a deadline for a whole
 * request and a whole answer, a per-connection memory limit (request line and headers beyond it
 * get 431 and are dropped), and an optional allow-list of client networks.
 */
#ifndef GPUVET_SERVE_HTTP_H
#define GPUVET_SERVE_HTTP_H
#include <stdbool.h>
#include <stddef.h>

#include "serve/exporter.h"

#define GPUVET_DEFAULT_PORT 10134
#define GPUVET_DEFAULT_LISTEN "127.0.0.1:10134"

typedef struct http_opts {
	const char *listen;        /* "HOST:PORT", "[V6]:PORT", ":PORT" (every interface) */
	unsigned max_connections;  /* 512 */
	unsigned max_per_ip;       /* 64: one IPv4 address, or one IPv6 /64; 0 for no per-client budget */
	unsigned timeout_seconds;  /* 10: a whole request, a whole answer, an idle keep-alive */
	size_t connection_memory;  /* 16 KiB */
	const char *const *allow;  /* --allow networks ("ADDR[/PREFIX]"); none: every client */
	size_t nallow;
} http_opts;
void http_opts_default(http_opts *o);

/* Splits a --listen value. *all is true for ":PORT". Returns false with err on garbage. */
bool http_parse_listen(const char *listen, char *host, size_t hostsize, unsigned *port, bool *all, char *err,
		       size_t errsize);

typedef struct http_server http_server;
http_server *http_start(const http_opts *o, exporter *ex, char *err, size_t errsize);
/* The port bound (useful with port 0), and the address as text for the log line. */
unsigned http_port(const http_server *h);
const char *http_address(const http_server *h);
void http_stop(http_server *h);
#endif
