/*
 * Rules: pure functions from facts (and the knowledge base) to findings. No I/O here, so the
 * whole rule suite runs on any machine from recorded facts (`gpuvet check --facts FILE`).
 *
 * Each layer has its own table (rules_<layer>.c); registry.c lists the tables.
 */
#ifndef GPUVET_RULES_H
#define GPUVET_RULES_H
#include "core/facts.h"
#include "core/findings.h"
#include "kb/kb.h"

struct rule;
/* What several rules of one run derive from the same facts, derived once: rules_run makes it
 * empty, the module that derives a part fills it on first use. */
typedef struct rules_memo {
	bool children_listed;
	strlist children; /* every probe NAME with an isolation.NAME.outcome fact, sorted (rules_isolation.c) */
} rules_memo;

typedef struct rule_ctx {
	const facts *facts;
	const kb *kb;
	findings *out;
	const struct rule *rule;
	rules_memo *memo;
} rule_ctx;

typedef struct rule {
	const char *id;    /* stable finding id */
	const char *layer; /* hardware, driver, devices, gpu, toolkit, loader, env, container, python */
	severity sev;      /* default severity */
	/* Space-separated fact keys the rule needs, as registry constants (FK_NVML_INIT " "
	 * FK_CUDA_DEVICE_COUNT: core/factkeys.h); when one was never collected the rule is skipped
	 * with that reason. A fact collected with state absent/error still counts. */
	const char *needs;
	void (*eval)(rule_ctx *c);
	const char *summary; /* one line for --list-rules and docs */
	/* Optional (named in the rows that have it: `.root_cause = N`). > 0: a fail finding of this
	 * rule is a root cause of what fails downstream (torch.cuda-unavailable names it and takes
	 * its fixes); where several are found, the lowest N, the more fundamental, is the one. */
	int root_cause;
} rule;

/* Emits a finding with the rule's id, layer and default severity. */
finding *rule_emit(rule_ctx *c, const char *titlefmt, ...) GV_PRINTF(2, 3);
finding *rule_emit_sev(rule_ctx *c, severity sev, const char *titlefmt, ...) GV_PRINTF(3, 4);

/* Runs every registered rule (only those of layer, when not NULL), a rule whose needs were not
 * collected skipped with the reason. Called by diagnose() (diagnose/diagnose.h) alone. */
void rules_run(const facts *f, const kb *k, const char *layer, findings *out);
/* All rules, in order, NULL id terminated iteration through rules_next. */
const rule *rules_first(void);
const rule *rules_next(const rule *r);
const rule *rules_find(const char *id);
/* The root cause among the findings so far: the fail finding whose rule has the lowest
 * root_cause; its index in fs, or -1. */
long rules_root_cause(const findings *fs);

/* Layer display order and names for renderers. */
const char *layer_title(const char *layer);
int layer_order(const char *layer);
#endif
