#include "core/factkeys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#undef FACT_KEY
#define FACT_KEY(pattern, type, unit, writer, meaning) {pattern, #pattern, FK_T_##type, unit, writer, meaning},
const factkey factkeys[] = {
#include "core/factkeys.def"
};
#undef FACT_KEY
const size_t n_factkeys = sizeof(factkeys) / sizeof(factkeys[0]);

/* the length of a printf conversion at p ("%d", "%zu", "%lld", "%s"); 0 when p is none */
static size_t conversion(const char *p, char *kind)
{
	if (p[0] != '%')
		return 0;
	size_t n = 1;
	while (p[n] == 'z' || p[n] == 'l')
		n++;
	if (p[n] == 'd' || p[n] == 'u' || p[n] == 'i') {
		*kind = 'd';
		return n + 1;
	}
	if (n == 1 && p[n] == 's') {
		*kind = 's';
		return 2;
	}
	return 0;
}

bool factkey_match(const char *pat, const char *key)
{
	while (*pat) {
		char kind = 0;
		size_t n = conversion(pat, &kind);
		if (!n) {
			if (*pat++ != *key++)
				return false;
			continue;
		}
		pat += n;
		if (kind == 'd') {
			if (*key == '-')
				key++;
			if (*key < '0' || *key > '9')
				return false;
			while (*key >= '0' && *key <= '9')
				key++;
			continue;
		}
		/* %s: at least one character, then the rest of the pattern somewhere after it */
		if (!*key)
			return false;
		for (const char *k = key + 1;; k++) {
			if (factkey_match(pat, k))
				return true;
			if (!*k)
				return false;
		}
	}
	return *key == '\0';
}

const factkey *factkey_lookup(const char *key)
{
	/* a pattern without a text part before one with (the exact entry wins) */
	const factkey *loose = NULL;
	for (size_t i = 0; i < n_factkeys; i++)
		if (factkey_match(factkeys[i].pattern, key)) {
			if (!strstr(factkeys[i].pattern, "%s"))
				return &factkeys[i];
			if (!loose)
				loose = &factkeys[i];
		}
	return loose;
}

const char *factkey_type_name(factkey_type t)
{
	static const char *const names[] = {"string", "integer", "real", "boolean", "state", "any"};
	return (unsigned)t < sizeof(names) / sizeof(names[0]) ? names[t] : "?";
}

static const char *log_path;
static pthread_once_t log_once = PTHREAD_ONCE_INIT;

static void log_init(void)
{
	const char *p = getenv("GPUVET_FACT_KEYS_LOG");
	log_path = p && *p ? p : NULL;
}

void factkey_check_put(const char *key)
{
	pthread_once(&log_once, log_init);
	if (!log_path || factkey_lookup(key))
		return;
	/* one write of one line: O_APPEND keeps lines whole across threads and child processes */
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0)
		return;
	size_t n = strlen(key);
	char *line = malloc(n + 2);
	if (line) {
		memcpy(line, key, n);
		line[n] = '\n';
		ssize_t w = write(fd, line, n + 1);
		(void)w;
		free(line);
	}
	close(fd);
}
