#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_config.h"

#define MAX_ENTRIES 1024
#define MAX_COUNTERS 256

struct entry {
	char *key, *value;
	unsigned long calls; /* picks of this key, for cycling lists */
};

struct counter {
	char name[96];
	unsigned long calls;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static struct entry entries[MAX_ENTRIES];
static int nentries;
static struct counter counters[MAX_COUNTERS];
static int ncounters;

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	char *e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static void clear_locked(void)
{
	for (int i = 0; i < nentries; i++) {
		free(entries[i].key);
		free(entries[i].value);
	}
	nentries = 0;
	ncounters = 0;
}

static void load_locked(void)
{
	clear_locked();
	loaded = true;
	const char *path = getenv("GPUVET_FAKE_CONFIG");
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[4096];
	while (fgets(line, sizeof(line), f) && nentries < MAX_ENTRIES) {
		char *l = trim(line);
		if (!*l || *l == '#')
			continue;
		char *eq = strchr(l, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char *k = trim(l), *v = trim(eq + 1);
		/* a later line replaces an earlier one */
		int i;
		for (i = 0; i < nentries; i++)
			if (strcmp(entries[i].key, k) == 0)
				break;
		if (i < nentries) {
			free(entries[i].value);
			entries[i].value = strdup(v);
			entries[i].calls = 0;
		} else {
			entries[nentries].key = strdup(k);
			entries[nentries].value = strdup(v);
			entries[nentries].calls = 0;
			nentries++;
		}
	}
	fclose(f);
}

/* calls inside fake_error (a hang: gpuvet abandons the thread and exits while it sleeps) */
static int in_flight;

/* the fakes are dlclosed and opened again by the tests: leave nothing behind; but a call that
 * still runs (a hung one, at exit) reads the entries, so they stay then */
__attribute__((destructor)) static void fake_unload(void)
{
	pthread_mutex_lock(&lock);
	if (!in_flight) {
		clear_locked();
		loaded = false;
	}
	pthread_mutex_unlock(&lock);
}

void fake_reload(void)
{
	pthread_mutex_lock(&lock);
	load_locked();
	pthread_mutex_unlock(&lock);
}

void fake_ensure(void)
{
	pthread_mutex_lock(&lock);
	if (!loaded)
		load_locked();
	pthread_mutex_unlock(&lock);
}

static struct entry *find_locked(const char *key)
{
	if (!loaded)
		load_locked();
	for (int i = 0; i < nentries; i++)
		if (strcmp(entries[i].key, key) == 0)
			return &entries[i];
	return NULL;
}

/* Values are never freed while the library is in use except by fake_reload, which the fakes
 * only call from init, so returning the pointer is safe enough for a test double. */
const char *fake_raw(const char *key)
{
	pthread_mutex_lock(&lock);
	struct entry *e = find_locked(key);
	const char *v = e ? e->value : NULL;
	pthread_mutex_unlock(&lock);
	return v;
}

static void gpu_key(char *buf, size_t size, int gpu, const char *field, bool wildcard)
{
	if (wildcard)
		snprintf(buf, size, "gpu.*.%s", field);
	else
		snprintf(buf, size, "gpu.%d.%s", gpu, field);
}

const char *fake_gpu_raw(int gpu, const char *field)
{
	char key[256];
	gpu_key(key, sizeof(key), gpu, field, false);
	const char *v = fake_raw(key);
	if (v)
		return v;
	gpu_key(key, sizeof(key), gpu, field, true);
	return fake_raw(key);
}

int fake_list_len(const char *value)
{
	int n = 1;
	for (const char *p = value; *p; p++)
		if (*p == ',')
			n++;
	return n;
}

const char *fake_list_item(const char *value, int i, char *buf, size_t size)
{
	const char *p = value;
	for (int k = 0; k < i && p; k++) {
		p = strchr(p, ',');
		if (p)
			p++;
	}
	if (!p) {
		buf[0] = '\0';
		return buf;
	}
	const char *e = strchr(p, ',');
	size_t n = e ? (size_t)(e - p) : strlen(p);
	if (n >= size)
		n = size - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	char *t = trim(buf);
	if (t != buf)
		memmove(buf, t, strlen(t) + 1);
	return buf;
}

static const char *pick_entry_locked(struct entry *e, char *buf, size_t size)
{
	int n = fake_list_len(e->value);
	int i = (int)(e->calls++ % (unsigned long)n);
	return fake_list_item(e->value, i, buf, size);
}

const char *fake_pick(const char *key, char *buf, size_t size)
{
	pthread_mutex_lock(&lock);
	struct entry *e = find_locked(key);
	const char *r = e ? pick_entry_locked(e, buf, size) : NULL;
	pthread_mutex_unlock(&lock);
	return r;
}

const char *fake_gpu_pick(int gpu, const char *field, char *buf, size_t size)
{
	char key[256];
	pthread_mutex_lock(&lock);
	gpu_key(key, sizeof(key), gpu, field, false);
	struct entry *e = find_locked(key);
	if (!e) {
		gpu_key(key, sizeof(key), gpu, field, true);
		e = find_locked(key);
	}
	const char *r = e ? pick_entry_locked(e, buf, size) : NULL;
	pthread_mutex_unlock(&lock);
	return r;
}

bool fake_parse_num(const char *s, long long *out)
{
	if (!s)
		return false;
	while (isspace((unsigned char)*s))
		s++;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 0);
	if (end == s || errno)
		return false;
	while (isspace((unsigned char)*end))
		end++;
	long long mul = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mul = 1LL << 10; break;
	case 'M': mul = 1LL << 20; break;
	case 'G': mul = 1LL << 30; break;
	case 'T': mul = 1LL << 40; break;
	case '\0': break;
	default: return false;
	}
	*out = v * mul;
	return true;
}

static long long num_of(const char *v, long long dflt, bool *unsupported)
{
	if (unsupported)
		*unsupported = false;
	if (!v)
		return dflt;
	if (strcmp(v, "unsupported") == 0) {
		if (unsupported)
			*unsupported = true;
		return dflt;
	}
	long long n;
	return fake_parse_num(v, &n) ? n : dflt;
}

long long fake_num(const char *key, long long dflt, bool *unsupported)
{
	char buf[256];
	return num_of(fake_pick(key, buf, sizeof(buf)), dflt, unsupported);
}

long long fake_gpu_num(int gpu, const char *field, long long dflt, bool *unsupported)
{
	char buf[256];
	return num_of(fake_gpu_pick(gpu, field, buf, sizeof(buf)), dflt, unsupported);
}

void fake_sleep_ms(long long ms)
{
	if (ms <= 0)
		return;
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* "nvmlDeviceGetPciInfo_v3" -> "nvmlDeviceGetPciInfo" */
static void base_name(const char *fn, char *buf, size_t size)
{
	snprintf(buf, size, "%s", fn);
	char *u = strrchr(buf, '_');
	if (u && u[1] == 'v' && isdigit((unsigned char)u[2]))
		*u = '\0';
}

static unsigned long count_call_locked(const char *base)
{
	for (int i = 0; i < ncounters; i++)
		if (strcmp(counters[i].name, base) == 0)
			return ++counters[i].calls;
	if (ncounters < MAX_COUNTERS) {
		snprintf(counters[ncounters].name, sizeof(counters[ncounters].name), "%s", base);
		counters[ncounters].calls = 1;
		ncounters++;
	}
	return 1;
}

/* Looks up PREFIX.NAME for the exact symbol, then its base name. */
static const char *lookup2(const char *prefix, const char *fn, const char *base, const char *suffix, char *key,
			   size_t ksize)
{
	snprintf(key, ksize, "%s%s%s", prefix, fn, suffix);
	const char *v = fake_raw(key);
	if (!v && strcmp(fn, base) != 0) {
		snprintf(key, ksize, "%s%s%s", prefix, base, suffix);
		v = fake_raw(key);
	}
	return v;
}

static int error_of(const char *fn, int gpu);

int fake_error(const char *fn, int gpu)
{
	pthread_mutex_lock(&lock);
	in_flight++;
	pthread_mutex_unlock(&lock);
	int rc = error_of(fn, gpu);
	pthread_mutex_lock(&lock);
	in_flight--;
	pthread_mutex_unlock(&lock);
	return rc;
}

static int error_of(const char *fn, int gpu)
{
	char base[96], key[256], prefix[64];
	base_name(fn, base, sizeof(base));
	pthread_mutex_lock(&lock);
	if (!loaded)
		load_locked();
	unsigned long calls = count_call_locked(base);
	pthread_mutex_unlock(&lock);

	const char *hang = lookup2("hang.", fn, base, "", key, sizeof(key));
	long long ms;
	if (hang && fake_parse_num(hang, &ms))
		fake_sleep_ms(ms);
	/* crash.FN = SIG: the call dies of that signal (a driver bug, a GPU whose BAR went away) */
	const char *crash = lookup2("crash.", fn, base, "", key, sizeof(key));
	long long sig;
	if (crash && fake_parse_num(crash, &sig) && sig > 0 && sig < 65)
		raise((int)sig);

	const char *code = NULL;
	if (gpu >= 0) {
		snprintf(prefix, sizeof(prefix), "gpu.%d.error.", gpu);
		code = lookup2(prefix, fn, base, "", key, sizeof(key));
		if (!code)
			code = lookup2("gpu.*.error.", fn, base, "", key, sizeof(key));
	}
	if (!code)
		code = lookup2("error.", fn, base, "", key, sizeof(key));
	if (!code)
		return 0;
	const char *after = lookup2("error.", fn, base, ".after", key, sizeof(key));
	long long n;
	if (after && fake_parse_num(after, &n) && (long long)calls <= n)
		return 0;
	char buf[64];
	/* a comma list of codes cycles per call too */
	long long rc;
	const char *item = fake_list_item(code, (int)((calls - 1) % (unsigned long)fake_list_len(code)), buf,
					  sizeof(buf));
	return fake_parse_num(item, &rc) ? (int)rc : 999;
}
