/* Findings: what the rules concluded, each with a stable id, evidence and the exact fix. */
#ifndef GPUVET_FINDINGS_H
#define GPUVET_FINDINGS_H
#include <stddef.h>

#include "core/util.h"

typedef enum { SEV_INFO = 0, SEV_WARN = 1, SEV_FAIL = 2 } severity;

/*
 * A fix as data, beside the line check prints: what `gpuvet fix` composes into its plan (the
 * environment lines of every finding, merged) without reading the text back.
 */
typedef enum {
	FIX_ADVICE = 0, /* text for a person: no command to run as it stands */
	FIX_COMMAND,    /* a command line to run as it stands */
	FIX_ENV_SET,    /* export VAR=VALUE */
	FIX_ENV_UNSET,  /* unset VAR */
} fix_kind;
typedef enum {
	FIX_SCOPE_NONE = 0, /* advice */
	FIX_SCOPE_SHELL,    /* this shell (and the job script that starts the program) */
	FIX_SCOPE_USER,     /* this user's files (~/.bashrc, a venv) */
	FIX_SCOPE_SYSTEM,   /* the machine: needs root */
} fix_scope;
typedef struct fix_item {
	fix_kind kind;
	fix_scope scope;
	char *var;     /* FIX_ENV_*: the variable name */
	char *value;   /* FIX_ENV_SET: the value as one shell word (quoted where it needs quotes) */
	char *command; /* FIX_COMMAND, FIX_ENV_*: the line to run ("export VAR=VALUE", "unset VAR") */
	char *purpose; /* what it does or what else to do; NULL when nothing is said */
} fix_item;
const char *fix_kind_name(fix_kind k);   /* "advice", "command", "env-set", "env-unset" */
const char *fix_scope_name(fix_scope s); /* NULL (none), "shell", "user", "system" */

typedef struct finding {
	char *id;    /* stable, dotted, lower case: "driver.nouveau" */
	char *layer; /* layer of the rule that made it: "driver", "toolkit", ... */
	severity sev;
	char *title;
	strlist evidence;
	strlist fix;       /* the fix lines as check prints them */
	fix_item *fixes;   /* fixes[i]: fix.v[i] as data (nfixes == fix.n) */
	size_t nfixes;
	int rank; /* lower first within a severity; root causes get a low rank */
} finding;

typedef struct skipped_rule {
	char *id;
	char *reason;
} skipped_rule;

typedef struct findings {
	finding *v;
	size_t n, cap;
	skipped_rule *skipped;
	size_t nskipped, capskipped;
} findings;

void findings_init(findings *fs);
void findings_free(findings *fs);
finding *findings_add(findings *fs, const char *id, const char *layer, severity sev, const char *titlefmt, ...)
	GV_PRINTF(5, 6);
void finding_evidence(finding *f, const char *fmt, ...) GV_PRINTF(2, 3);
/* A fix line of advice (FIX_ADVICE): the text path. */
void finding_fix(finding *f, const char *fmt, ...) GV_PRINTF(2, 3);
/* Structured fixes; each also adds its line to f->fix: the command, then "   (purpose)" when
 * purpose is not NULL. value is one shell word, quoted by the caller (core/shell.h); a name or a
 * value that is not one safe word makes the line advice, never a command. */
void finding_fix_export(finding *f, const char *var, const char *value, const char *purpose);
void finding_fix_unset(finding *f, const char *var, const char *purpose);
void finding_fix_command(finding *f, fix_scope scope, const char *command, const char *purpose);
/* Fix i of from, structure and all, added to f. */
void finding_fix_copy(finding *f, const finding *from, size_t i);
/* Fix i of f as data; NULL past the end. */
const fix_item *finding_fix_item(const finding *f, size_t i);
void findings_skip(findings *fs, const char *id, const char *reasonfmt, ...) GV_PRINTF(3, 4);
const finding *findings_find(const findings *fs, const char *id);
/* Orders by severity (fail first), then rank, keeping the rule order otherwise. */
void findings_sort(findings *fs);

const char *severity_name(severity s);
bool severity_parse(const char *name, severity *out);

typedef struct finding_counts {
	int fail, warn, info;
} finding_counts;
finding_counts findings_count(const findings *fs);
#endif
