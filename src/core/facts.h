/*
 * Facts: what the probes observed, as dotted keys ("driver.kernel_version", "nvml.gpu.0.name").
 * The first component of a key is its layer. Every fact has a state, so that "not installed"
 * (absent), "not supported by this driver" (unsupported), "the call failed" (error), "the file is
 * there but cannot be read" (unreadable, with its errno) and "the file was read but is not what
 * it should be" (unparsable, with its first bytes) stay distinct, and a source (file path or API
 * call) saying where it came from. Probes that read files report failures with
 * facts_put_read_error and facts_put_unparsable, so a rule never mistakes a file it could not
 * read for one that is not there.
 *
 * Probes only put facts; rules only read them.
 *
 * Threads: every call but facts_free may run at once from any threads (probe threads put while
 * another reads back what it put). A fact, once put, never changes: the pointers the getters
 * return (the fact, its strings) stay valid and unchanged until facts_free, even when a later
 * put replaces the key (the store keeps the old fact until then). facts_free must not race
 * anything. Keys have no length limit: none is ever cut short and taken for another.
 */
#ifndef GPUVET_FACTS_H
#define GPUVET_FACTS_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

typedef enum { FACT_OK, FACT_ABSENT, FACT_UNSUPPORTED, FACT_ERROR, FACT_UNREADABLE, FACT_UNPARSABLE } fact_state;
typedef enum { FV_NONE, FV_STR, FV_INT, FV_REAL, FV_BOOL } fact_type;

typedef struct fact {
	char *key;
	fact_state state;
	fact_type type;
	char *str;    /* FV_STR */
	long long i;  /* FV_INT, FV_BOOL */
	double d;     /* FV_REAL */
	char *error;  /* the detail of any state but FACT_OK ("Permission denied", "no version in the file") */
	char *source; /* where it was read */
	int sys_errno;  /* FACT_UNREADABLE: the errno (EACCES...); 0 otherwise */
	char *excerpt;  /* FACT_UNPARSABLE: the first bytes, escaped ("NVRM\\x01garb..."); NULL otherwise */
} fact;

typedef struct facts facts;

facts *facts_new(void);
void facts_free(facts *f);

/* Setters: the key is a printf format, a constant of the fact-key registry (core/factkeys.h:
 * FK_NVML_GPU_NAME(d) for "nvml.gpu.%d.name"), or "%s" with a key built at run time; a later put
 * replaces. */
void facts_put_str(facts *f, const char *source, const char *value, const char *keyfmt, ...) GV_PRINTF(4, 5);
void facts_put_int(facts *f, const char *source, long long value, const char *keyfmt, ...) GV_PRINTF(4, 5);
void facts_put_real(facts *f, const char *source, double value, const char *keyfmt, ...) GV_PRINTF(4, 5);
void facts_put_bool(facts *f, const char *source, bool value, const char *keyfmt, ...) GV_PRINTF(4, 5);
/* The source of the facts this thread puts with source NULL: a fact derived from others rather
 * than read from one file or call. The probe registry names the probe that runs on the thread
 * ("derived: python probe"), so every fact of a diagnosis says where it came from. NULL: none. */
void facts_set_thread_source(const char *source);
/* A fact without a value: absent, unsupported or error, with the reason. */
void facts_put_state(facts *f, fact_state state, const char *source, const char *why, const char *keyfmt, ...)
	GV_PRINTF(5, 6);

/* A file that could not be read: rc is sysroot_read's (-errno; for a path that is a directory, a
 * FIFO, a socket or a device, what it is). ENOENT and ENOTDIR give FACT_ABSENT with absent_why
 * ("no NVIDIA kernel module loaded"); anything else FACT_UNREADABLE with the errno and what was
 * seen ("is a FIFO, not a file", "Permission denied (EACCES)"). source is the path. */
void facts_put_read_error(facts *f, const char *source, int rc, const char *absent_why, const char *keyfmt, ...)
	GV_PRINTF(5, 6);
/* A file that was read but does not say what it should: FACT_UNPARSABLE with what was expected
 * ("no \"NVRM version:\" line") and its first bytes, escaped (an empty file says "empty file"). */
void facts_put_unparsable(facts *f, const char *source, const char *text, size_t len, const char *expected,
			  const char *keyfmt, ...) GV_PRINTF(6, 7);
/* True when the fact was not collected because something there could not be read or understood
 * (unreadable, unparsable), as opposed to absent: "there is a file, we do not know what it says". */
bool fact_seen_but_unknown(const fact *ft);
/* One line for evidence: "cannot be read: Permission denied (EACCES)", "is not understood (no
 * version in the file); it starts with \"garbage\"", "does not exist". */
const char *fact_problem_text(const fact *ft, char *buf, size_t size);

/* Getters. facts_get returns any state; the typed getters only succeed for FACT_OK. What they
 * return is valid until facts_free (see Threads above). */
const fact *facts_get(const facts *f, const char *keyfmt, ...) GV_PRINTF(2, 3);
const char *facts_str(const facts *f, const char *keyfmt, ...) GV_PRINTF(2, 3);
bool facts_int(const facts *f, long long *out, const char *keyfmt, ...) GV_PRINTF(3, 4);
bool facts_real(const facts *f, double *out, const char *keyfmt, ...) GV_PRINTF(3, 4);
/* Returns the boolean value; false when absent or not ok. */
bool facts_true(const facts *f, const char *keyfmt, ...) GV_PRINTF(2, 3);
/* Integer with a default when missing or not ok. */
long long facts_int_or(const facts *f, long long dflt, const char *keyfmt, ...) GV_PRINTF(3, 4);

/* Iteration in insertion order (a replaced key keeps its place). With puts running at once the
 * count may grow between calls; facts_at past the end returns NULL. */
size_t facts_count(const facts *f);
const fact *facts_at(const facts *f, size_t i);
/* The current facts in order, under one lock: a malloc'd array of *n (free it, not the facts). */
const fact **facts_list(const facts *f, size_t *n);

/* Copies every fact of src into dst (replacing equal keys). */
void facts_merge(facts *dst, const facts *src);
/* facts_merge without the copies: src's facts become dst's and src is left empty (a pointer got
 * from src stays valid while dst lives). */
void facts_move(facts *dst, facts *src);
/* The same as facts_merge for the facts whose key starts with prefix ("nvml."). */
void facts_merge_prefix(facts *dst, const facts *src, const char *prefix);

/* Makes ft (complete, heap-allocated as facts_free frees it) the fact of its key, as a put does:
 * for the facts' own codecs (core/facts_wire.c). */
void facts_adopt(facts *f, fact *ft);

const char *fact_state_name(fact_state s);
bool fact_state_parse(const char *name, fact_state *out);
/* The value as text (for evidence lines); writes into buf. */
const char *fact_value_text(const fact *ft, char *buf, size_t size);

/* JSON: {"layer": {"rest.of.key": {"value":..,"state":..,"source":..,"error":..}}}. */
struct cJSON;
struct cJSON *facts_to_json(const facts *f);
/* Reads what facts_to_json wrote; returns NULL with *err set on malformed input. */
facts *facts_from_json(const struct cJSON *obj, char **err);
#endif
