/* Kernel log lines: their times and the out-of-memory killer's (parse/klog.h). */
#include "parse/klog.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	/* proleptic Gregorian days since 1970-01-01 (no timegm: keeps it pure and portable) */
	y -= m <= 2;
	long long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

static long long epoch_of(int y, int mo, int d, int h, int mi, int s)
{
	if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
	    s < 0 || s > 60)
		return -1;
	return days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 + h * 3600 + mi * 60 + s;
}

/* "2026-11-29T10:00:00.123456+01:00 ..." */
static long long parse_iso(const char *l, size_t len)
{
	char buf[64];
	size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, l, n);
	buf[n] = '\0';
	int y, mo, d, h, mi, s, used = 0;
	if (sscanf(buf, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &s, &used) != 6)
		return -1;
	long long t = epoch_of(y, mo, d, h, mi, s);
	if (t < 0)
		return -1;
	const char *p = buf + used;
	if (*p == '.' || *p == ',')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1, oh = 0, om = 0;
		if (sscanf(p + 1, "%2d:%2d", &oh, &om) == 2 || sscanf(p + 1, "%2d%2d", &oh, &om) == 2)
			t -= sign * (oh * 3600 + om * 60);
	}
	return t;
}

/* "Nov 29 10:00:00 host kernel: ..." */
static long long parse_syslog(const char *l, size_t len, int year)
{
	static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
					     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
	if (len < 15 || year < 1970)
		return -1;
	int mo = 0;
	for (int i = 0; i < 12; i++)
		if (memcmp(l, months[i], 3) == 0)
			mo = i + 1;
	if (!mo || l[3] != ' ')
		return -1;
	char buf[16];
	memcpy(buf, l + 4, 11);
	buf[11] = '\0';
	int d, h, mi, s;
	if (sscanf(buf, "%d %d:%d:%d", &d, &h, &mi, &s) != 4)
		return -1;
	return epoch_of(year, mo, d, h, mi, s);
}

void klog_time(const char *line, size_t plen, int year_hint, long long *time, long long *boot_us)
{
	*time = -1;
	*boot_us = -1;
	if (plen && isdigit((unsigned char)line[0])) {
		/* /dev/kmsg: "PRIO,SEQ,USEC,FLAGS;" */
		int commas = 0;
		const char *semi = NULL, *x = line + plen;
		for (const char *q = line; q < x; q++) {
			if (*q == ',')
				commas++;
			if (*q == ';') {
				semi = q;
				break;
			}
		}
		if (semi && commas >= 3) {
			const char *q = memchr(line, ',', plen);
			q = q ? memchr(q + 1, ',', (size_t)(x - q - 1)) : NULL;
			if (q) {
				long long us = 0;
				int nd = 0;
				for (q++; q < x && isdigit((unsigned char)*q) && nd < 18; q++, nd++)
					us = us * 10 + (*q - '0');
				if (nd)
					*boot_us = us;
			}
			return;
		}
		*time = parse_iso(line, plen);
	} else if (plen) {
		*time = parse_syslog(line, plen, year_hint);
	}
}

bool oom_parse_line(const char *line, size_t len, int year_hint, bool *cgroup_pending, oom_kill *out)
{
	memset(out, 0, sizeof(*out));
	out->anon_rss_kb = -1;
	const char *cg = str_find_n(line, len, "Memory cgroup out of memory");
	const char *k = str_find_n(line, len, "Killed process ");
	if (!k) {
		/* a pre-4.19 kernel's first line ("... out of memory: Kill process N (x) score ...") */
		if (str_find_n(line, len, "out of memory: Kill process ") || str_find_n(line, len, "Out of memory: Kill process "))
			*cgroup_pending = cg != NULL;
		return false;
	}
	out->cgroup = cg != NULL || *cgroup_pending;
	*cgroup_pending = false;
	const char *end = line + len, *p = k + strlen("Killed process ");
	unsigned long pid = 0;
	int nd = 0;
	while (p < end && isdigit((unsigned char)*p) && nd < 10)
		pid = pid * 10 + (unsigned long)(*p++ - '0'), nd++;
	if (!nd || pid > 0xffffffffUL || p + 2 >= end || p[0] != ' ' || p[1] != '(')
		return false;
	p += 2;
	const char *close = NULL;
	for (const char *q = p; q < end && q - p < 64; q++)
		if (*q == ')')
			close = q; /* the last one within reach: a name may hold ')' */
	if (!close)
		return false;
	out->pid = (unsigned)pid;
	size_t cn = (size_t)(close - p) < sizeof(out->comm) - 1 ? (size_t)(close - p) : sizeof(out->comm) - 1;
	memcpy(out->comm, p, cn);
	out->comm[cn] = '\0';
	str_sanitize(out->comm);
	const char *rss = str_find_n(close, (size_t)(end - close), "anon-rss:");
	if (rss) {
		long long kb = 0;
		int d = 0;
		for (const char *q = rss + 9; q < end && isdigit((unsigned char)*q) && d < 15; q++, d++)
			kb = kb * 10 + (*q - '0');
		if (d)
			out->anon_rss_kb = kb;
	}
	/* the time, from the prefix before the message ("Out of memory", or the killed line itself) */
	const char *msg = cg ? cg : str_find_n(line, len, "Out of memory");
	if (!msg || msg > k)
		msg = k;
	klog_time(line, (size_t)(msg - line), year_hint, &out->time, &out->boot_us);
	return true;
}
