#include "core/factkeys.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

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

/* whether a fact of this state and type fits the registered type */
static bool type_fits(factkey_type want, fact_state state, fact_type t)
{
	if (want == FK_T_ANY || state != FACT_OK)
		return true; /* any fact may carry a state instead of its value */
	switch (want) {
	case FK_T_STR:
		return t == FV_STR;
	case FK_T_INT:
		return t == FV_INT;
	case FK_T_REAL:
		return t == FV_REAL || t == FV_INT; /* a whole number read back from a facts file */
	case FK_T_BOOL:
		return t == FV_BOOL;
	default:
		return false; /* FK_T_STATE: no value */
	}
}

/* one write of one line: O_APPEND keeps lines whole across threads and child processes */
static void log_line(char *line)
{
	int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0666);
	if (fd >= 0) {
		ssize_t w = write(fd, line, strlen(line));
		(void)w;
		close(fd);
	}
	free(line);
}

void factkey_check_put(const char *key, fact_state state, fact_type type)
{
	pthread_once(&log_once, log_init);
	if (!log_path)
		return;
	const factkey *k = factkey_lookup(key);
	if (k && type_fits(k->type, state, type))
		return;
	static const char *const vt[] = {"no value", "a string", "an integer", "a real", "a boolean"};
	log_line(k ? xasprintf("%s: %s, but the registry's %s says %s\n", key,
			       (unsigned)type < GV_ARRAY_LEN(vt) ? vt[type] : "?", k->name, factkey_type_name(k->type))
		   : xasprintf("%s\n", key));
}

void factkey_check_get(const char *key)
{
	pthread_once(&log_once, log_init);
	if (log_path && !factkey_lookup(key))
		log_line(xasprintf("%s: read\n", key));
}

const nvlink_counter_key nvlink_counter_keys[] = {
	{"crc_flit_errors", "CRC flit errors", false, FK_NVML_GPU_NVLINK_CRC_FLIT_ERRORS(d, d),
	 FK_HISTORY_NVLINK_GPU_CRC_FLIT_ERRORS(d, d)},
	{"crc_data_errors", "CRC data errors", false, FK_NVML_GPU_NVLINK_CRC_DATA_ERRORS(d, d),
	 FK_HISTORY_NVLINK_GPU_CRC_DATA_ERRORS(d, d)},
	{"replay_errors", "replay errors", false, FK_NVML_GPU_NVLINK_REPLAY_ERRORS(d, d),
	 FK_HISTORY_NVLINK_GPU_REPLAY_ERRORS(d, d)},
	{"recovery_errors", "recovery errors", true, FK_NVML_GPU_NVLINK_RECOVERY_ERRORS(d, d),
	 FK_HISTORY_NVLINK_GPU_RECOVERY_ERRORS(d, d)},
};
const size_t n_nvlink_counter_keys = sizeof(nvlink_counter_keys) / sizeof(nvlink_counter_keys[0]);

/* The one place a key format comes from a table rather than the call: every format of the table
 * above is a registry constant taking (int, int). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
bool facts_nvlink_counter(const facts *f, const nvlink_counter_key *k, bool previous, int gpu, int link,
			  long long *v)
{
	return facts_int(f, v, previous ? k->previous : k->now, gpu, link);
}

void facts_put_nvlink_previous(facts *f, const char *source, const nvlink_counter_key *k, int gpu, int link,
			       long long v)
{
	facts_put_int(f, source, v, k->previous, gpu, link);
}
#pragma GCC diagnostic pop
