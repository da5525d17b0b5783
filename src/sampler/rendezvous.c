/* A torch.distributed rank and its rendezvous, from /proc (sampler/rendezvous.h). */
#include "sampler/rendezvous.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "parse/nettcp.h"
#include "sampler/procfd.h"

/* A process's sockets looked at: more than a rank holds (its store's clients, NCCL's bootstrap) */
#define DIST_MAX_FDS 4096
#define DIST_MAX_SOCKS 1024
#define DIST_MAX_THREADS 1024
#define TCP_ESTABLISHED 1
#define TCP_LISTEN 10

void dist_rank_init(dist_rank *d)
{
	memset(d, 0, sizeof(*d));
	d->rank = d->world = -1;
	d->store_clients = -1;
}

/* A small non-negative integer, or -1. */
static int small_int(const char *s)
{
	if (!*s || strlen(s) > 9)
		return -1;
	for (const char *p = s; *p; p++)
		if (!isdigit((unsigned char)*p))
			return -1;
	return atoi(s);
}

void dist_env_parse(const char *env, size_t len, dist_rank *d)
{
	char addr[64] = "", port[16] = "";
	for (size_t i = 0; i < len;) {
		const char *var = env + i;
		size_t n = strnlen(var, len - i);
		const char *eq = memchr(var, '=', n);
		if (eq) {
			size_t k = (size_t)(eq - var);
			char val[64];
			size_t vl = n - k - 1 < sizeof(val) - 1 ? n - k - 1 : sizeof(val) - 1;
			memcpy(val, eq + 1, vl);
			val[vl] = '\0';
			if (k == 4 && !memcmp(var, "RANK", 4))
				d->rank = small_int(val);
			else if (k == 10 && !memcmp(var, "WORLD_SIZE", 10))
				d->world = small_int(val);
			else if (k == 11 && !memcmp(var, "MASTER_ADDR", 11))
				str_copy(addr, sizeof(addr), val);
			else if (k == 11 && !memcmp(var, "MASTER_PORT", 11))
				str_copy(port, sizeof(port), val);
		}
		i += n + 1;
	}
	int p = small_int(port);
	if (p > 0 && p < 65536)
		d->master_port = (unsigned)p;
	if (addr[0] || d->master_port) {
		/* addresses and ports come from the job: printable ones only reach the verdict */
		for (char *c = addr; *c; c++)
			if (!isgraph((unsigned char)*c))
				*c = '?';
		snprintf(d->master, sizeof(d->master), "%s:%s", addr[0] ? addr : "?", d->master_port ? port : "?");
	}
	if (d->world > 1 || d->master_port)
		d->known = true;
}

bool dist_store_thread(const char *comm)
{
	/* c10d's TCPStore server: "pt_tcpstore" (the classic backend), "pt_tcpstore_uv" (libuv) */
	return strncmp(comm, "pt_tcpstore", 11) == 0;
}

static bool has_inode(const unsigned long long *inodes, size_t n, unsigned long long ino)
{
	for (size_t i = 0; i < n; i++)
		if (inodes[i] == ino)
			return true;
	return false;
}

size_t dist_sockets_parse(const char *table, const unsigned long long *inodes, size_t n, dist_sock *out, size_t max)
{
	size_t got = 0;
	net_row r;
	bool ok;
	for (const char *cur = table; got < max && net_row_next(&cur, &r, &ok);) {
		if (!ok || !r.inode || !has_inode(inodes, n, r.inode))
			continue;
		out[got].local_port = r.local_port;
		out[got].remote_port = r.remote_port;
		out[got].state = r.state;
		got++;
	}
	return got;
}

void dist_from_sockets(const dist_sock *s, size_t n, dist_rank *d)
{
	unsigned ports[16];
	size_t nports = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i].state != TCP_LISTEN)
			continue;
		size_t k = 0;
		while (k < nports && ports[k] != s[i].local_port)
			k++; /* the same port in tcp and tcp6 */
		if (k == nports && nports < GV_ARRAY_LEN(ports))
			ports[nports++] = s[i].local_port;
		if (d->master_port && s[i].local_port == d->master_port)
			d->store_port = d->master_port;
	}
	if (!d->store_port && d->hosts_store && nports == 1)
		d->store_port = ports[0];
	if (d->store_port) {
		d->store_clients = 0;
		for (size_t i = 0; i < n; i++)
			if (s[i].state == TCP_ESTABLISHED && s[i].local_port == d->store_port)
				d->store_clients++;
		d->known = true;
	}
	unsigned target = d->master_port ? d->master_port : d->store_port;
	for (size_t i = 0; i < n && target; i++)
		if (s[i].state == TCP_ESTABLISHED && s[i].remote_port == target)
			d->to_master = true;
}

typedef struct inode_list {
	unsigned long long *v;
	size_t n, max;
} inode_list;

static bool note_socket(const proc_fd *fd, void *arg)
{
	inode_list *l = arg;
	if (!strncmp(fd->link, "socket:[", 8))
		l->v[l->n++] = strtoull(fd->link + 8, NULL, 10);
	return l->n < l->max;
}

/* The inodes of the process's sockets ("socket:[N]" links under /proc/PID/fd); how many. */
static size_t socket_inodes(unsigned pid, unsigned long long *out, size_t max)
{
	inode_list l = {out, 0, max};
	if (max)
		proc_fd_each(pid, DIST_MAX_FDS, note_socket, &l);
	return l.n;
}

static bool store_thread_in(unsigned pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	DIR *dir = sysroot_opendir(path);
	if (!dir)
		return false;
	bool found = false;
	int n = 0;
	struct dirent *de;
	while (!found && (de = readdir(dir)) && n++ < DIST_MAX_THREADS) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char p[96];
		snprintf(p, sizeof(p), "/proc/%u/task/%.20s/comm", pid, de->d_name);
		char *comm = sysroot_read_line(p);
		found = comm && dist_store_thread(comm);
		free(comm);
	}
	closedir(dir);
	return found;
}

void dist_rank_read(unsigned pid, dist_rank *d)
{
	dist_rank_init(d);
	char path[64], *buf = NULL;
	size_t len = 0;
	snprintf(path, sizeof(path), "/proc/%u/environ", pid);
	if (sysroot_read_may_deny(path, 1 << 20, &buf, &len, NULL) == 0)
		dist_env_parse(buf, len, d);
	free(buf);
	d->hosts_store = store_thread_in(pid);
	if (d->hosts_store)
		d->known = true;
	if (!d->known)
		return; /* not a rank: its sockets are not the doctor's business */
	unsigned long long *inodes = xcalloc(DIST_MAX_SOCKS, sizeof(*inodes));
	size_t ni = socket_inodes(pid, inodes, DIST_MAX_SOCKS);
	dist_sock *socks = xcalloc(DIST_MAX_SOCKS, sizeof(*socks));
	size_t ns = 0;
	static const char *const tables[] = {"tcp", "tcp6"};
	for (size_t t = 0; t < GV_ARRAY_LEN(tables) && ni; t++) {
		snprintf(path, sizeof(path), "/proc/%u/net/%s", pid, tables[t]);
		buf = NULL;
		if (sysroot_read_may_deny(path, 4 << 20, &buf, &len, NULL) == 0)
			ns += dist_sockets_parse(buf, inodes, ni, socks + ns, DIST_MAX_SOCKS - ns);
		free(buf);
	}
	dist_from_sockets(socks, ns, d);
	free(socks);
	free(inodes);
}
