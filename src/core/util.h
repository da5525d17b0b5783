/* Small helpers used everywhere: checked allocation, growable strings, string lists. */
#ifndef GPUVET_UTIL_H
#define GPUVET_UTIL_H
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define GV_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GV_PRINTF(a, b)
#endif
#define GV_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* 1 in a build under the sanitizers (ASan, TSan, LSan): what a command holds at its end is then
 * freed before the process exits, since their leak check reads what is left (elsewhere the kernel
 * drops it at once, where walking the knowledge base's and the facts' allocations cost check
 * --fast 0.2 ms), and threads keep glibc's stack size (the sanitizers' frames are larger). */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define GV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(leak_sanitizer)
#define GV_SANITIZED 1
#endif
#endif
#ifndef GV_SANITIZED
#define GV_SANITIZED 0
#endif

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) GV_PRINTF(1, 2);
char *xvasprintf(const char *fmt, va_list ap) GV_PRINTF(1, 0);
/* vsnprintf, quicker for the simple formats of fact keys ("nvml.gpu.%d.name"); ap is left as
 * vsnprintf leaves it. */
int gv_vformat_key(char *buf, size_t size, const char *fmt, va_list ap) GV_PRINTF(3, 0);

/* Growable NUL-terminated buffer. */
typedef struct strbuf {
	char *buf;
	size_t len, cap;
} strbuf;
void sb_init(strbuf *sb);
void sb_free(strbuf *sb);
void sb_add(strbuf *sb, const char *s);
void sb_addn(strbuf *sb, const char *s, size_t n);
void sb_addc(strbuf *sb, char c);
void sb_addf(strbuf *sb, const char *fmt, ...) GV_PRINTF(2, 3);
char *sb_steal(strbuf *sb); /* returns the buffer ("" when empty), leaves sb empty */

/* Growable list of owned strings. */
typedef struct strlist {
	char **v;
	size_t n, cap;
} strlist;
void sl_push(strlist *l, const char *s);
void sl_pushf(strlist *l, const char *fmt, ...) GV_PRINTF(2, 3);
void sl_vpushf(strlist *l, const char *fmt, va_list ap) GV_PRINTF(2, 0); /* for variadic wrappers */
void sl_push_owned(strlist *l, char *s);
bool sl_contains(const strlist *l, const char *s);
void sl_free(strlist *l);
/* Splits s at any of the separator characters; empty fields kept only when keep_empty. */
void sl_split(strlist *out, const char *s, const char *seps, bool keep_empty);

bool str_starts(const char *s, const char *prefix);
bool str_ends(const char *s, const char *suffix);
/* The first needle in s[0, len) (a line that need not end in a NUL), or NULL. */
const char *str_find_n(const char *s, size_t len, const char *needle);
char *str_trim(char *s); /* in place; returns s advanced past leading blanks */
/* Copies at most dst_size-1 bytes, always terminates. */
void str_copy(char *dst, size_t dst_size, const char *src);
/* An absolute path with "." and ".." folded lexically ("/a/./b/../c" -> "/a/c"; ".." at the top
 * stays at "/"), malloc'd. */
char *path_fold(const char *path);
/* The directory of path, malloc'd: "/a/b.so" -> "/a", "/b.so" -> "/"; a path without a '/' is
 * returned whole. */
char *path_dir(const char *path);
/* mkdir -p of the directories above path, each new one 0700 (existing ones are left alone); false
 * with err ("cannot create directory DIR: ...", or "DIR: not a directory") when one cannot be had. */
bool mkdir_parents(const char *path, char *err, size_t errsize);
/* fd 1 on /dev/null from stdout_mute until stdout_unmute (stdio flushed at both ends): a library
 * that prints while it loads or initialises cannot mix its text into our output (bench --json).
 * Where /dev/null or a copy of fd 1 cannot be had, stdout stays as it was. */
typedef struct stdout_muted {
	int saved, null;
} stdout_muted;
void stdout_mute(stdout_muted *m);
void stdout_unmute(stdout_muted *m);
/* pread until n bytes or the end of the file (EINTR and short reads retried); returns how many. */
size_t pread_full(int fd, void *buf, size_t n, unsigned long long offset);
/* Decodes one UTF-8 character at s (n bytes left): its length, and the code point in *cp; 0 when
 * the bytes there are not UTF-8 (overlong forms, surrogates and values past U+10FFFF included). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);
/* snprintf for a path or a key that must not be cut: false, with buf "" and errno ENAMETOOLONG,
 * when the whole text does not fit, so a cut one is never taken for another. */
bool str_fmt_whole(char *buf, size_t size, const char *fmt, ...) GV_PRINTF(3, 4);
/* Replaces bytes that are not printable ASCII with '?', so garbage read from files stays readable. */
void str_sanitize(char *s);

/* Compares dotted version strings numerically ("12.10" > "12.9"); non-digits compare as text. */
int version_cmp(const char *a, const char *b);
/* Parses "MAJOR.MINOR[.PATCH]" into ints; returns number of parts read (0 on garbage). */
int version_parse(const char *s, int *major, int *minor, int *patch);

/* A number read from a document as an integer in [lo, hi], truncated toward zero (below lo is
 * out): false for NaN, the infinities and whatever lies outside (casting those to an integer is
 * undefined behaviour, and 1e300 is valid JSON). */
bool double_to_int(double v, long long lo, long long hi, long long *out);
/* Seconds since the epoch as a time_t: false for NaN, the infinities and times outside the years
 * 1970 to 9999, which no run of gpuvet has (gmtime and strftime then say nothing sensible). */
#define GV_TIME_MAX 253402300799.0 /* 9999-12-31T23:59:59Z */
bool seconds_to_time(double t, long long *out);
/* Seconds since the epoch as the minute a finding names, "2026-12-05 00:41 UTC": false (out "")
 * for 0, negative times and those seconds_to_time refuses (a facts document's number). */
bool utc_minute_text(long long t, char *out, size_t n);

/* A size as a person reads it (into buf, which it returns): "1.0 GiB", "12 MiB", "4 KiB", "512 B". */
const char *bytes_words(char *buf, size_t size, double bytes);

/* Monotonic clock in seconds. */
double now_seconds(void);
/* Sleeps s seconds (nothing when s <= 0). A signal ends the sleep early, so a loop that sleeps
 * between samples sees its stop flag at once. */
void sleep_seconds(double s);
#endif
