/*
 * scrape_latency: how long a Prometheus scrape of gpuvet serve takes, measured from C so the
 * client's own overhead (a Python loop, urllib) stays out of the figure. Used by
 * scripts/device/servefast.sh on the GPU machine and by hand here (docs/benchmarks.md).
 *
 *   scrape_latency [-n N] [-g GAP_MS] [-m keepalive|fresh|both] [-p PATH] [-a ACCEPT]
 *                  [-P PID] [-o BODY_FILE] HOST:PORT
 *
 * keepalive: one connection, N requests on it (as Prometheus scrapes: it keeps the connection);
 * fresh: a new connection per request (connect, request, whole answer, close). The time of one
 * scrape runs from just before connect (fresh) or the request's write (keepalive) to the last
 * byte of the body (Content-Length). GAP_MS between scrapes (default 0; Prometheus's 15 s would
 * let every CPU sleep, which is what -g tries to imitate in part). With -P the exporter's CPU
 * time (utime + stime from /proc/PID/stat) over the run and its VmRSS/VmHWM afterwards.
 * Prints one JSON object per mode on stdout. Exit 0, 1 when a scrape failed, 2 on usage.
 * No timing is asserted anywhere: this is a measuring tool, not a test.
 */

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int dial(const struct addrinfo *ai)
{
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

typedef struct buf {
	char *p;
	size_t len, cap;
} buf;

static void buf_need(buf *b, size_t more)
{
	if (b->len + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap : 1 << 16;
	while (cap < b->len + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		fprintf(stderr, "scrape_latency: out of memory\n");
		exit(1);
	}
	b->p = p;
	b->cap = cap;
}

/* One request and its whole answer into b (headers and body). Returns the body's offset, or
 * 0 on failure with why. */
static size_t exchange(int fd, const char *req, size_t reqlen, buf *b, int *status, char *why, size_t whysize)
{
	b->len = 0;
	for (size_t off = 0; off < reqlen;) {
		ssize_t w = send(fd, req + off, reqlen - off, MSG_NOSIGNAL);
		if (w <= 0) {
			snprintf(why, whysize, "send: %s", w < 0 ? strerror(errno) : "closed");
			return 0;
		}
		off += (size_t)w;
	}
	size_t head = 0, clen = (size_t)-1;
	for (;;) {
		buf_need(b, 1 << 16);
		ssize_t r = recv(fd, b->p + b->len, b->cap - b->len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (head && clen == (size_t)-1) /* no Content-Length: the answer ends at close */
				return head;
			snprintf(why, whysize, "recv: %s", r < 0 ? strerror(errno) : "connection closed early");
			return 0;
		}
		b->len += (size_t)r;
		b->p[b->len] = '\0';
		if (!head) {
			char *end = strstr(b->p, "\r\n\r\n");
			if (!end)
				continue;
			head = (size_t)(end - b->p) + 4;
			*status = atoi(b->p + 9);
			for (char *l = strstr(b->p, "\r\n"); l && l < end; l = strstr(l + 2, "\r\n"))
				if (strncasecmp(l + 2, "Content-Length:", 15) == 0)
					clen = strtoul(l + 17, NULL, 10);
		}
		if (clen != (size_t)-1 && b->len >= head + clen)
			return head;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	if (!n)
		return 0;
	double k = (double)(n - 1) * p / 100;
	size_t lo = (size_t)k, hi = lo + 1 < n ? lo + 1 : n - 1;
	return v[lo] + (v[hi] - v[lo]) * (k - (double)lo);
}

static double cpu_seconds(int pid)
{
	char path[64], text[4096];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = '\0';
	char *p = strrchr(text, ')');
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static long status_kib(int pid, const char *key)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	long v = -1;
	size_t kl = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ':')
			v = strtol(line + kl + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

static void usage(void)
{
	fprintf(stderr, "usage: scrape_latency [-n N] [-g GAP_MS] [-m keepalive|fresh|both] [-p PATH] [-a ACCEPT] "
			"[-P PID] [-o BODY_FILE] HOST:PORT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	long n = 1000, pid = 0;
	double gap_ms = 0;
	const char *mode = "both", *path = "/metrics", *accept = NULL, *body_file = NULL;
	int c;
	while ((c = getopt(argc, argv, "n:g:m:p:a:P:o:")) != -1) {
		switch (c) {
		case 'n': n = strtol(optarg, NULL, 10); break;
		case 'g': gap_ms = strtod(optarg, NULL); break;
		case 'm': mode = optarg; break;
		case 'p': path = optarg; break;
		case 'a': accept = optarg; break;
		case 'P': pid = strtol(optarg, NULL, 10); break;
		case 'o': body_file = optarg; break;
		default: usage();
		}
	}
	if (optind + 1 != argc || n <= 0 ||
	    (strcmp(mode, "keepalive") != 0 && strcmp(mode, "fresh") != 0 && strcmp(mode, "both") != 0))
		usage();
	char host[256];
	const char *target = argv[optind], *colon = strrchr(target, ':');
	if (!colon || (size_t)(colon - target) >= sizeof(host))
		usage();
	memcpy(host, target, (size_t)(colon - target));
	host[colon - target] = '\0';
	if (host[0] == '[') { /* [::1]:PORT */
		memmove(host, host + 1, strlen(host));
		host[strcspn(host, "]")] = '\0';
	}
	struct addrinfo hints = {0}, *ai = NULL;
	hints.ai_socktype = SOCK_STREAM;
	int gai = getaddrinfo(host, colon + 1, &hints, &ai);
	if (gai != 0) {
		fprintf(stderr, "scrape_latency: cannot resolve '%s': %s\n", target, gai_strerror(gai));
		return 2;
	}
	double *lat = calloc((size_t)n, sizeof(double));
	buf b = {0};
	int failed = 0;
	const char *modes[2] = {"keepalive", "fresh"};
	for (int m = 0; m < 2; m++) {
		if (strcmp(mode, "both") != 0 && strcmp(mode, modes[m]) != 0)
			continue;
		int fresh = m == 1;
		char req[1024];
		int rl = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n%s%s%s%s\r\n", path, target,
				  accept ? "Accept: " : "", accept ? accept : "", accept ? "\r\n" : "",
				  fresh ? "Connection: close\r\n" : "");
		double cpu0 = pid ? cpu_seconds((int)pid) : 0, t0 = now();
		int fd = -1, status = 0;
		size_t head = 0, done = 0;
		char why[256] = "";
		for (long i = 0; i < n; i++) {
			if (gap_ms > 0 && i)
				nanosleep(&(struct timespec){(time_t)(gap_ms / 1000), (long)((gap_ms - 1000 * (time_t)(gap_ms / 1000)) * 1e6)},
					  NULL);
			double s = now();
			if (fd < 0 && (fd = dial(ai)) < 0) {
				snprintf(why, sizeof(why), "connect: %s", strerror(errno));
				break;
			}
			head = exchange(fd, req, (size_t)rl, &b, &status, why, sizeof(why));
			double e = now();
			if (!head || status != 200) {
				if (head)
					snprintf(why, sizeof(why), "status %d", status);
				break;
			}
			lat[done++] = (e - s) * 1e3;
			if (fresh) {
				close(fd);
				fd = -1;
			}
		}
		double wall = now() - t0, cpu1 = pid ? cpu_seconds((int)pid) : 0;
		if (fd >= 0)
			close(fd);
		if (done < (size_t)n) {
			fprintf(stderr, "scrape_latency: %s scrape %zu of %ld failed: %s\n", modes[m], done + 1, n, why);
			failed = 1;
		}
		if (body_file && done) {
			FILE *f = fopen(body_file, "w");
			if (!f || fwrite(b.p + head, 1, b.len - head, f) != b.len - head) {
				fprintf(stderr, "scrape_latency: cannot write %s: %s\n", body_file, strerror(errno));
				failed = 1;
			}
			if (f)
				fclose(f);
		}
		qsort(lat, done, sizeof(double), cmp_double);
		printf("{\"mode\": \"%s\", \"scrapes\": %zu, \"gap_ms\": %g, \"body_bytes\": %zu, \"p50_ms\": %.4f, "
		       "\"p90_ms\": %.4f, \"p99_ms\": %.4f, \"max_ms\": %.4f, \"min_ms\": %.4f",
		       modes[m], done, gap_ms, done ? b.len - head : 0, pct(lat, done, 50), pct(lat, done, 90),
		       pct(lat, done, 99), done ? lat[done - 1] : 0, done ? lat[0] : 0);
		if (pid)
			printf(", \"exporter_cpu_s\": %.3f, \"wall_s\": %.3f, \"exporter_cpu_ms_per_scrape\": %.4f, "
			       "\"exporter_rss_kib\": %ld, \"exporter_hwm_kib\": %ld",
			       cpu1 - cpu0, wall, done ? (cpu1 - cpu0) * 1e3 / (double)done : 0, status_kib((int)pid, "VmRSS"),
			       status_kib((int)pid, "VmHWM"));
		printf("}\n");
		fflush(stdout);
	}
	freeaddrinfo(ai);
	free(lat);
	free(b.p);
	return failed;
}
