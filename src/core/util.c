#include "core/util.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void out_of_memory(void)
{
	fputs("gpuvet: out of memory\n", stderr);
	exit(3);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		out_of_memory();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		out_of_memory();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s ? s : "", s ? strlen(s) : 0);
}

/* Like strndup: copies at most n bytes, stopping at a NUL. */
char *xstrndup(const char *s, size_t n)
{
	n = strnlen(s, n);
	char *p = xmalloc(n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

/* The conversions fact keys use (%s %d %u %ld %lu %lld %llu %zu %%, no flags, no width) without
 * vsnprintf's machinery, which cost some 600 instructions a key; -1 for any other format (the
 * caller then asks vsnprintf) or when it does not fit. */
static int fmt_simple(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t n = 0;
	for (const char *p = fmt; *p; p++) {
		if (*p != '%') {
			if (n + 1 >= size)
				return -1;
			buf[n++] = *p;
			continue;
		}
		p++;
		const char *s = NULL;
		char num[24];
		unsigned long long u = 0;
		bool neg = false, is_num = true;
		if (*p == 's') {
			s = va_arg(ap, const char *);
			is_num = false;
			if (!s)
				return -1; /* vsnprintf's "(null)" */
		} else if (*p == '%') {
			s = "%";
			is_num = false;
		} else if (*p == 'd') {
			int v = va_arg(ap, int);
			neg = v < 0, u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
		} else if (*p == 'u') {
			u = va_arg(ap, unsigned);
		} else if (*p == 'z' && p[1] == 'u') {
			p++;
			u = va_arg(ap, size_t);
		} else if (*p == 'l' && p[1] == 'l' && (p[2] == 'd' || p[2] == 'u')) {
			p += 2;
			if (*p == 'd') {
				long long v = va_arg(ap, long long);
				neg = v < 0, u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
			} else {
				u = va_arg(ap, unsigned long long);
			}
		} else if (*p == 'l' && (p[1] == 'd' || p[1] == 'u')) {
			p++;
			if (*p == 'd') {
				long v = va_arg(ap, long);
				neg = v < 0, u = neg ? 0ULL - (unsigned long long)v : (unsigned long long)v;
			} else {
				u = va_arg(ap, unsigned long);
			}
		} else {
			return -1;
		}
		if (is_num) {
			size_t i = sizeof(num);
			do
				num[--i] = (char)('0' + u % 10);
			while (u /= 10);
			if (neg)
				num[--i] = '-';
			size_t len = sizeof(num) - i;
			if (n + len >= size)
				return -1;
			memcpy(buf + n, num + i, len);
			n += len;
		} else {
			size_t len = strlen(s);
			if (n + len >= size)
				return -1;
			memcpy(buf + n, s, len);
			n += len;
		}
	}
	if (n >= size)
		return -1;
	buf[n] = '\0';
	return (int)n;
}

int gv_vformat_key(char *buf, size_t size, const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = fmt_simple(buf, size, fmt, cp);
	va_end(cp);
	return n >= 0 ? n : vsnprintf(buf, size, fmt, ap);
}

char *xvasprintf(const char *fmt, va_list ap)
{
	/* most callers format fact keys: no conversion, or short enough for one pass on the stack
	 * (vsnprintf twice was the largest part of the facts' cost) */
	if (!strchr(fmt, '%'))
		return xstrdup(fmt);
	char stack[256];
	va_list cp;
	va_copy(cp, ap);
	int n = gv_vformat_key(stack, sizeof(stack), fmt, cp);
	va_end(cp);
	if (n < 0)
		return xstrdup("");
	char *p = xmalloc((size_t)n + 1);
	if ((size_t)n < sizeof(stack))
		memcpy(p, stack, (size_t)n + 1);
	else
		vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *p = xvasprintf(fmt, ap);
	va_end(ap);
	return p;
}

void sb_init(strbuf *sb)
{
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}

void sb_free(strbuf *sb)
{
	free(sb->buf);
	sb_init(sb);
}

static void sb_grow(strbuf *sb, size_t extra)
{
	if (sb->len + extra + 1 <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < sb->len + extra + 1)
		cap *= 2;
	sb->buf = xrealloc(sb->buf, cap);
	sb->cap = cap;
}

void sb_addn(strbuf *sb, const char *s, size_t n)
{
	sb_grow(sb, n);
	memcpy(sb->buf + sb->len, s, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sb_add(strbuf *sb, const char *s)
{
	sb_addn(sb, s, strlen(s));
}

void sb_addc(strbuf *sb, char c)
{
	sb_addn(sb, &c, 1);
}

void sb_addf(strbuf *sb, const char *fmt, ...)
{
	/* formatted straight into the buffer: what fits in its free room is written once, a longer
	 * text a second time after the buffer grew to its length */
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	sb_grow(sb, 0);
	size_t room = sb->cap - sb->len;
	int n = vsnprintf(sb->buf + sb->len, room, fmt, ap);
	if (n >= 0 && (size_t)n >= room) {
		sb_grow(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, again);
	}
	if (n > 0)
		sb->len += (size_t)n;
	sb->buf[sb->len] = '\0';
	va_end(again);
	va_end(ap);
}

char *sb_steal(strbuf *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");
	sb_init(sb);
	return p;
}

void sl_push_owned(strlist *l, char *s)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 8;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n++] = s;
}

void sl_push(strlist *l, const char *s)
{
	sl_push_owned(l, xstrdup(s));
}

void sl_vpushf(strlist *l, const char *fmt, va_list ap)
{
	sl_push_owned(l, xvasprintf(fmt, ap));
}

void sl_pushf(strlist *l, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sl_vpushf(l, fmt, ap);
	va_end(ap);
}

bool sl_contains(const strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

void sl_free(strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = l->cap = 0;
}

void sl_split(strlist *out, const char *s, const char *seps, bool keep_empty)
{
	if (!s)
		return;
	const char *start = s;
	for (const char *p = s;; p++) {
		if (*p == '\0' || strchr(seps, *p)) {
			if (p > start || keep_empty)
				sl_push_owned(out, xstrndup(start, (size_t)(p - start)));
			if (*p == '\0')
				break;
			start = p + 1;
		}
	}
}

bool str_starts(const char *s, const char *prefix)
{
	return s && strncmp(s, prefix, strlen(prefix)) == 0;
}

bool str_ends(const char *s, const char *suffix)
{
	if (!s)
		return false;
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

const char *str_find_n(const char *s, size_t len, const char *needle)
{
	return memmem(s, len, needle, strlen(needle));
}

char *str_trim(char *s)
{
	while (*s && isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

char *path_fold(const char *path)
{
	strlist comps = {0}, out = {0};
	sl_split(&comps, path, "/", false);
	for (size_t c = 0; c < comps.n; c++) {
		if (strcmp(comps.v[c], ".") == 0)
			continue;
		if (strcmp(comps.v[c], "..") == 0) {
			if (out.n)
				free(out.v[--out.n]);
			continue;
		}
		sl_push(&out, comps.v[c]);
	}
	strbuf sb;
	sb_init(&sb);
	for (size_t c = 0; c < out.n; c++) {
		sb_addc(&sb, '/');
		sb_add(&sb, out.v[c]);
	}
	if (!sb.len)
		sb_addc(&sb, '/');
	sl_free(&comps);
	sl_free(&out);
	return sb_steal(&sb);
}

char *path_dir(const char *path)
{
	char *d = xstrdup(path);
	char *slash = strrchr(d, '/');
	if (slash)
		slash[slash == d ? 1 : 0] = '\0';
	return d;
}

bool mkdir_parents(const char *path, char *err, size_t errsize)
{
	char *dir = path_dir(path);
	if (strcmp(dir, path) == 0 || strcmp(dir, "/") == 0) { /* no directory part, or the root */
		free(dir);
		return true;
	}
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char saved = *p;
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			snprintf(err, errsize, "cannot create directory %s: %s", dir, strerror(errno));
			free(dir);
			return false;
		}
		*p = saved;
		if (saved == '\0')
			break;
	}
	struct stat st;
	bool ok = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	if (!ok)
		snprintf(err, errsize, "%s: not a directory", dir);
	free(dir);
	return ok;
}

void stdout_mute(stdout_muted *m)
{
	fflush(stdout);
	m->saved = dup(STDOUT_FILENO);
	m->null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (m->saved >= 0 && m->null >= 0)
		dup2(m->null, STDOUT_FILENO);
}

void stdout_unmute(stdout_muted *m)
{
	fflush(stdout); /* what it printed through stdio goes to /dev/null too */
	if (m->saved >= 0 && m->null >= 0)
		dup2(m->saved, STDOUT_FILENO);
	if (m->saved >= 0)
		close(m->saved);
	if (m->null >= 0)
		close(m->null);
	m->saved = m->null = -1;
}

size_t pread_full(int fd, void *buf, size_t n, unsigned long long offset)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(offset + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	return got;
}

size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp)
{
	if (n == 0)
		return 0;
	unsigned char c = s[0];
	size_t len;
	uint32_t v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, v = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, v = c & 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

bool str_fmt_whole(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < size)
		return true;
	if (size)
		buf[0] = '\0';
	errno = ENAMETOOLONG;
	return false;
}

void str_copy(char *dst, size_t dst_size, const char *src)
{
	if (!dst_size)
		return;
	size_t n = src ? strlen(src) : 0;
	if (n >= dst_size)
		n = dst_size - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

void str_sanitize(char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = (*s == '\t') ? ' ' : '?';
}

int version_cmp(const char *a, const char *b)
{
	a = a ? a : "";
	b = b ? b : "";
	while (*a || *b) {
		if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
			while (*a == '0' && isdigit((unsigned char)a[1]))
				a++;
			while (*b == '0' && isdigit((unsigned char)b[1]))
				b++;
			size_t la = 0, lb = 0;
			while (isdigit((unsigned char)a[la]))
				la++;
			while (isdigit((unsigned char)b[lb]))
				lb++;
			if (la != lb)
				return la < lb ? -1 : 1;
			int c = strncmp(a, b, la);
			if (c)
				return c < 0 ? -1 : 1;
			a += la;
			b += lb;
		} else {
			if (*a != *b) {
				/* a shorter version ("12.4") sorts before a longer one ("12.4.1") */
				if (!*a)
					return -1;
				if (!*b)
					return 1;
				return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
			}
			a++;
			b++;
		}
	}
	return 0;
}

int version_parse(const char *s, int *major, int *minor, int *patch)
{
	int v[3] = {0, 0, 0}, n = 0;
	if (!s)
		return 0;
	while (n < 3 && isdigit((unsigned char)*s)) {
		long x = 0;
		while (isdigit((unsigned char)*s)) {
			if (x < 100000000)
				x = x * 10 + (*s - '0');
			s++;
		}
		v[n++] = (int)x;
		if (*s != '.')
			break;
		s++;
	}
	if (major)
		*major = v[0];
	if (minor)
		*minor = v[1];
	if (patch)
		*patch = v[2];
	return n;
}

bool double_to_int(double v, long long lo, long long hi, long long *out)
{
	/* compared as doubles before any cast: the bounds of a long long are not all doubles, so
	 * the test is strict where they round up */
	if (!(v >= (double)lo && v < (double)hi + 1.0) || v >= 9223372036854775807.0)
		return false;
	long long x = (long long)v;
	if (x < lo || x > hi)
		return false;
	*out = x;
	return true;
}

bool seconds_to_time(double t, long long *out)
{
	return double_to_int(t, 0, (long long)GV_TIME_MAX, out);
}

bool utc_minute_text(long long t, char *out, size_t n)
{
	long long secs;
	struct tm tm;
	time_t tt;
	if (n)
		out[0] = '\0';
	if (t <= 0 || !seconds_to_time((double)t, &secs) || (tt = (time_t)secs, !gmtime_r(&tt, &tm)))
		return false;
	return strftime(out, n, "%Y-%m-%d %H:%M UTC", &tm) > 0;
}

double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void sleep_seconds(double s)
{
	if (!(s > 0))
		return;
	if (s > 1e8) /* about three years: a time_t conversion that cannot overflow */
		s = 1e8;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	if (ts.tv_nsec > 999999999)
		ts.tv_nsec = 999999999;
	nanosleep(&ts, NULL);
}

const char *bytes_words(char *buf, size_t size, double bytes)
{
	if (bytes >= 1024.0 * 1024 * 1024)
		snprintf(buf, size, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
	else if (bytes >= 1024.0 * 1024)
		snprintf(buf, size, "%.0f MiB", bytes / (1024.0 * 1024));
	else if (bytes >= 1024.0)
		snprintf(buf, size, "%.0f KiB", bytes / 1024.0);
	else
		snprintf(buf, size, "%.0f B", bytes);
	return buf;
}
