/*
 * Xid errors of the NVIDIA kernel driver, and the processes the out-of-memory killer killed
 * (parse/klog.h), in the kernel log: the tail of /var/log/kern.log,
 * /var/log/syslog and /var/log/messages (through sysroot), and on the real root /dev/kmsg when
 * this user may read it (non-blocking). Lines are grouped by (device, code, message), so the same
 * event seen in two logs counts once per occurrence of its text.
 *
 * Facts: kmsg.*  (docs/facts/nvidia.md)
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "nvidia/nvrmlog.h"
#include "nvidia/xidlog.h"
#include "parse/klog.h"
#include "probes/probes.h"

#define TAIL_BYTES (4u << 20)  /* per log file: the recent part is what matters */
#define KMSG_MAX_RECORDS 20000
#define MAX_XIDS 32

struct xid_group {
	xid_line x;
	int count;
	const char *source;
};

#define MAX_REFUSED 16
#define MAX_OOMS 16
/* where Xid lines are looked for: the source of what is counted over all of them */
#define KMSG_PLACES "/var/log/kern.log, /var/log/syslog, /var/log/messages, /dev/kmsg"

struct xid_set {
	struct xid_group g[MAX_XIDS];
	int n;
	int total;
	int dropped;
	/* the driver refusing a GPU (nvidia/nvrmlog.h): one entry per distinct message */
	nvrm_scan nscan;
	nvrm_refusal refused[MAX_REFUSED];
	const char *refused_source[MAX_REFUSED];
	int nrefused;
	/* the out-of-memory killer's kills: one per (pid, name), the most recent kept */
	bool oom_cgroup_pending;
	oom_kill oom[MAX_OOMS];
	const char *oom_source[MAX_OOMS];
	int noom;
};

static void scan_oom(struct xid_set *s, const char *line, size_t n, int year, const char *source)
{
	oom_kill k;
	if (!oom_parse_line(line, n, year, &s->oom_cgroup_pending, &k))
		return;
	for (int i = 0; i < s->noom; i++)
		if (s->oom[i].pid == k.pid && strcmp(s->oom[i].comm, k.comm) == 0)
			return; /* the same kill in two logs */
	if (s->noom == MAX_OOMS) {
		memmove(&s->oom[0], &s->oom[1], sizeof(k) * (MAX_OOMS - 1));
		memmove(&s->oom_source[0], &s->oom_source[1], sizeof(s->oom_source[0]) * (MAX_OOMS - 1));
		s->noom--;
	}
	s->oom_source[s->noom] = source;
	s->oom[s->noom++] = k;
}

static void scan_refusal(struct xid_set *s, const char *line, size_t n, const char *source)
{
	nvrm_refusal r;
	if (!nvrm_scan_line(&s->nscan, line, n, &r))
		return;
	for (int i = 0; i < s->nrefused; i++)
		if (memcmp(&s->refused[i], &r, sizeof(r)) == 0)
			return;
	if (s->nrefused == MAX_REFUSED) { /* keep the most recent */
		memmove(&s->refused[0], &s->refused[1], sizeof(r) * (MAX_REFUSED - 1));
		memmove(&s->refused_source[0], &s->refused_source[1], sizeof(s->refused_source[0]) * (MAX_REFUSED - 1));
		s->nrefused--;
	}
	s->refused_source[s->nrefused] = source;
	s->refused[s->nrefused++] = r;
}

static void add_line(struct xid_set *s, const xid_line *x, const char *source)
{
	s->total++;
	for (int i = 0; i < s->n; i++) {
		struct xid_group *g = &s->g[i];
		if (g->x.code == x->code && strcmp(g->x.pci, x->pci) == 0 && strcmp(g->x.message, x->message) == 0) {
			g->count++;
			if (x->time > g->x.time)
				g->x.time = x->time;
			if (x->boot_us > g->x.boot_us)
				g->x.boot_us = x->boot_us;
			return;
		}
	}
	if (s->n == MAX_XIDS) {
		/* keep the most recent: drop the oldest group */
		memmove(&s->g[0], &s->g[1], sizeof(s->g[0]) * (MAX_XIDS - 1));
		s->n--;
		s->dropped++;
	}
	s->g[s->n++] = (struct xid_group){*x, 1, source};
}

static void scan_text(struct xid_set *s, const char *text, size_t len, int year, const char *source)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		xid_line x;
		if (n > 10 && xid_parse_line(p, n, year, &x))
			add_line(s, &x, source);
		scan_refusal(s, p, n, source);
		scan_oom(s, p, n, year, source);
		p += n + 1;
	}
}

/* Reads the last TAIL_BYTES of a log file below the root; -errno on failure. */
static int read_tail(const char *abs, char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	struct stat st;
	int fd = sysroot_open_regular(abs, &st);
	if (fd < 0)
		return fd;
	off_t start = st.st_size > (off_t)TAIL_BYTES ? st.st_size - (off_t)TAIL_BYTES : 0;
	if (start && lseek(fd, start, SEEK_SET) < 0) {
		int e = errno;
		gv_sys.close(fd);
		return -e;
	}
	char *buf = xmalloc(TAIL_BYTES + 1);
	size_t n = 0;
	while (n < TAIL_BYTES) {
		ssize_t r = gv_sys.read(fd, buf + n, TAIL_BYTES - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	gv_sys.close(fd);
	buf[n] = '\0';
	/* a tail starts mid-line: skip to the first whole one */
	size_t skip = 0;
	if (start) {
		char *nl = memchr(buf, '\n', n);
		skip = nl ? (size_t)(nl - buf) + 1 : n;
	}
	memmove(buf, buf + skip, n - skip + 1);
	*out = buf;
	*len = n - skip;
	return 0;
}

/* /dev/kmsg: one record per read; O_NONBLOCK ends at EAGAIN instead of waiting for new ones. */
static int read_kmsg(struct xid_set *s)
{
	int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	char rec[8192];
	for (int i = 0; i < KMSG_MAX_RECORDS; i++) {
		ssize_t r = read(fd, rec, sizeof(rec) - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EPIPE) /* overwritten while reading: go on with the next */
				continue;
			break; /* EAGAIN: no more records */
		}
		if (r == 0)
			break;
		rec[r] = '\0';
		xid_line x;
		/* continuation lines (" KEY=value") follow the first newline; the message is the first line */
		char *nl = memchr(rec, '\n', (size_t)r);
		size_t n = nl ? (size_t)(nl - rec) : (size_t)r;
		if (xid_parse_line(rec, n, 0, &x))
			add_line(s, &x, "/dev/kmsg");
		scan_refusal(s, rec, n, "/dev/kmsg");
		scan_oom(s, rec, n, 0, "/dev/kmsg");
	}
	close(fd);
	return 0;
}

static long long boot_time(void)
{
	char *text = NULL;
	if (sysroot_read("/proc/stat", 1 << 20, &text, NULL, NULL) < 0)
		return -1;
	long long bt = -1;
	const char *p = strstr(text, "\nbtime ");
	if (p)
		bt = strtoll(p + 7, NULL, 10);
	free(text);
	return bt > 0 ? bt : -1;
}

static int year_of(long long epoch)
{
	time_t t = (time_t)epoch;
	struct tm tm;
	if (!gmtime_r(&t, &tm))
		return 0;
	return tm.tm_year + 1900;
}

void probe_kmsg(facts *f, const probe_opts *o)
{
	(void)o;
	static const char *const logs[] = {"/var/log/kern.log", "/var/log/syslog", "/var/log/messages"};
	struct xid_set *s = xcalloc(1, sizeof(*s));
	strlist read_ok = {0}, unreadable = {0};
	long long btime = boot_time();
	if (btime > 0)
		facts_put_int(f, "/proc/stat", btime, FK_KMSG_BOOT_TIME);
	/* syslog dates carry no year: the year of the boot (a log is rotated well within a year) */
	int year = year_of(btime > 0 ? btime : (long long)time(NULL));
	for (size_t i = 0; i < GV_ARRAY_LEN(logs); i++) {
		char *text;
		size_t len;
		int rc = read_tail(logs[i], &text, &len);
		memset(&s->nscan, 0, sizeof(s->nscan)); /* a message does not span two logs */
		s->oom_cgroup_pending = false;
		if (rc == 0) {
			sl_push(&read_ok, logs[i]);
			scan_text(s, text, len, year, logs[i]);
			free(text);
		} else if (rc != -ENOENT && rc != -ENOTDIR) {
			sl_pushf(&unreadable, "%s (%s)", logs[i], strerror(-rc));
		}
	}
	if (!sysroot_active()) {
		int rc = read_kmsg(s);
		if (rc == 0)
			sl_push(&read_ok, "/dev/kmsg");
		else if (rc != -ENOENT)
			sl_pushf(&unreadable, "/dev/kmsg (%s)", strerror(-rc));
	}
	strbuf b;
	sb_init(&b);
	for (size_t i = 0; i < read_ok.n; i++)
		sb_addf(&b, "%s%s", i ? "," : "", read_ok.v[i]);
	if (read_ok.n)
		facts_put_str(f, KMSG_PLACES, b.buf, FK_KMSG_SOURCES);
	sb_free(&b);
	if (unreadable.n) {
		sb_init(&b);
		for (size_t i = 0; i < unreadable.n; i++)
			sb_addf(&b, "%s%s", i ? ", " : "", unreadable.v[i]);
		facts_put_str(f, KMSG_PLACES, b.buf, FK_KMSG_UNREADABLE);
		sb_free(&b);
	}
	if (!read_ok.n) {
		facts_put_state(f, unreadable.n ? FACT_ERROR : FACT_ABSENT, KMSG_PLACES,
				unreadable.n ? "no kernel log readable" : "no kernel log found", FK_KMSG_XID_COUNT);
	} else {
		facts_put_int(f, KMSG_PLACES, s->n, FK_KMSG_XID_COUNT);
		facts_put_int(f, KMSG_PLACES, s->total, FK_KMSG_XID_TOTAL);
		for (int i = 0; i < s->n; i++) {
			const struct xid_group *g = &s->g[i];
			facts_put_int(f, g->source, g->x.code, FK_KMSG_XID_CODE(d), i);
			facts_put_str(f, g->source, g->x.pci, FK_KMSG_XID_PCI(d), i);
			facts_put_str(f, g->source, g->x.message, FK_KMSG_XID_MESSAGE(d), i);
			facts_put_int(f, g->source, g->count, FK_KMSG_XID_N_COUNT(d), i);
			long long t = g->x.time;
			if (t < 0 && g->x.boot_us >= 0 && btime > 0)
				t = btime + g->x.boot_us / 1000000;
			if (t >= 0)
				facts_put_int(f, g->source, t, FK_KMSG_XID_TIME(d), i);
			/* /dev/kmsg holds only this boot; a dated line is this boot when after btime */
			if (g->x.boot_us >= 0)
				facts_put_bool(f, g->source, true, FK_KMSG_XID_THIS_BOOT(d), i);
			else if (t >= 0 && btime > 0)
				facts_put_bool(f, g->source, t >= btime, FK_KMSG_XID_THIS_BOOT(d), i);
		}
	}
	if (read_ok.n) {
		facts_put_int(f, KMSG_PLACES, s->nrefused, FK_KMSG_REFUSED_COUNT);
		for (int i = 0; i < s->nrefused; i++) {
			const nvrm_refusal *r = &s->refused[i];
			const char *src = s->refused_source[i];
			facts_put_str(f, src, r->driver, FK_KMSG_REFUSED_DRIVER(d), i);
			if (r->pci[0])
				facts_put_str(f, src, r->pci, FK_KMSG_REFUSED_PCI(d), i);
			if (r->pci_id[0])
				facts_put_str(f, src, r->pci_id, FK_KMSG_REFUSED_PCI_ID(d), i);
			if (r->gpu[0])
				facts_put_str(f, src, r->gpu, FK_KMSG_REFUSED_GPU(d), i);
			if (r->legacy_branch)
				facts_put_int(f, src, r->legacy_branch, FK_KMSG_REFUSED_LEGACY_BRANCH(d), i);
		}
	}
	if (read_ok.n) {
		facts_put_int(f, KMSG_PLACES, s->noom, FK_KMSG_OOM_COUNT);
		for (int i = 0; i < s->noom; i++) {
			const oom_kill *k = &s->oom[i];
			const char *src = s->oom_source[i];
			facts_put_int(f, src, k->pid, FK_KMSG_OOM_PID(d), i);
			facts_put_str(f, src, k->comm, FK_KMSG_OOM_NAME(d), i);
			facts_put_bool(f, src, k->cgroup, FK_KMSG_OOM_CGROUP(d), i);
			if (k->anon_rss_kb >= 0)
				facts_put_int(f, src, k->anon_rss_kb * 1024, FK_KMSG_OOM_RSS_BYTES(d), i);
			long long t = k->time;
			if (t < 0 && k->boot_us >= 0 && btime > 0)
				t = btime + k->boot_us / 1000000;
			if (t >= 0)
				facts_put_int(f, src, t, FK_KMSG_OOM_TIME(d), i);
			if (k->boot_us >= 0)
				facts_put_bool(f, src, true, FK_KMSG_OOM_THIS_BOOT(d), i);
			else if (t >= 0 && btime > 0)
				facts_put_bool(f, src, t >= btime, FK_KMSG_OOM_THIS_BOOT(d), i);
		}
	}
	sl_free(&read_ok);
	sl_free(&unreadable);
	free(s);
}
