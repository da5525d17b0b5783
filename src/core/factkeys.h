/*
 * The fact-key registry: every fact key a probe writes or a rule reads, declared once in
 * core/factkeys.def with its type, unit, writer and meaning (docs/facts.md is generated from it:
 * scripts/gen-facts-doc.py).
 *
 * Code names a key through its constant, a string literal, so the printf checks of the facts_*
 * calls keep working and a misspelt key does not compile:
 *
 *     facts_put_str(f, src, name, FK_NVML_GPU_NAME(d), i);    // "nvml.gpu.%d.name"
 *     const char *v = facts_str(f, FK_NVML_DRIVER_VERSION);   // "nvml.driver_version"
 *
 * A key with integer parts (a GPU index, a list position) takes one argument per part: the
 * printf length and conversion of that part's argument (d, u, zu, ld, lld). Text parts are %s.
 *
 * factkey_lookup matches a concrete key against the registry's patterns; with the environment
 * variable GPUVET_FACT_KEYS_LOG=FILE, a put or a read of a key the registry lacks, or a put of a
 * value of another type than the registry's, appends a line to FILE (the scenario runner sets it
 * and fails a scenario whose run wrote one).
 */
#ifndef GPUVET_FACTKEYS_H
#define GPUVET_FACTKEYS_H
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"

/* the conversion of an integer part of a key */
#define FKS_d "%d"
#define FKS_u "%u"
#define FKS_zu "%zu"
#define FKS_ld "%ld"
#define FKS_lld "%lld"

#define FACT_KEY(pattern, type, unit, writer, meaning)
#include "core/factkeys.def"
#undef FACT_KEY

typedef enum { FK_T_STR, FK_T_INT, FK_T_REAL, FK_T_BOOL, FK_T_STATE, FK_T_ANY } factkey_type;

typedef struct factkey {
	const char *pattern; /* "nvml.gpu.%d.name": %d an integer part, %s a text part */
	const char *name;    /* the constant: "FK_NVML_GPU_NAME(d)" */
	factkey_type type;   /* FK_T_STATE: the fact carries a state and no value; FK_T_ANY: more than one type */
	const char *unit;    /* "bytes", "seconds", "mhz" ...; "" when none */
	const char *writer;  /* who writes it: "probes/nvml.c", "--facts files only" */
	const char *meaning;
} factkey;

extern const factkey factkeys[];
extern const size_t n_factkeys;

/* The entry whose pattern matches key ("nvml.gpu.3.name"); NULL when none does. */
const factkey *factkey_lookup(const char *key);
/* Whether key is an instance of pattern: %d (and %u, %zu ...) match an integer, %s any text of
 * at least one character. */
bool factkey_match(const char *pattern, const char *key);
const char *factkey_type_name(factkey_type t);
/* GPUVET_FACT_KEYS_LOG: notes key in that file when the registry lacks it, or when a fact of
 * state ok carries a value of another type than the registered one (facts.c calls it). */
void factkey_check_put(const char *key, fact_state state, fact_type type);
/* The same for a key read: a rule that reads a key no probe can write never sees it. */
void factkey_check_get(const char *key);

/* The NVLink error counters of a link, declared once for the NVML probe's facts
 * (nvml.gpu.G.nvlink.L.*), the previous check's (history.nvlink.gpu.P.L.*, put by
 * cmd/nvlink_history.c), the history's result names and the rules' words (rules_nvlink.c). */
typedef struct nvlink_counter_key {
	const char *name;  /* "crc_flit_errors": the history's result nvlink.L.NAME */
	const char *words; /* "CRC flit errors" */
	bool grave;        /* growth is a failure: a recovery is a link that went down and retrained */
	const char *now, *previous; /* the two key formats, each taking (int gpu, int link) */
} nvlink_counter_key;
extern const nvlink_counter_key nvlink_counter_keys[];
extern const size_t n_nvlink_counter_keys;
/* The counter of GPU gpu's link (the NVML fact, or with previous the history's); false when absent. */
bool facts_nvlink_counter(const facts *f, const nvlink_counter_key *k, bool previous, int gpu, int link,
			  long long *v);
/* Puts the previous check's value of the counter (history.nvlink.gpu.P.L.*). */
void facts_put_nvlink_previous(facts *f, const char *source, const nvlink_counter_key *k, int gpu, int link,
			       long long v);
#endif
