/*
 * The one diagnosis pipeline: probe (or take facts recorded earlier), judge with the rules,
 * apply the site's policies, sort. check, fix, explain, run, serve and bench all judge through
 * diagnose(): it is the only caller of rules_run, so a policy or a setting added here holds for
 * every command.
 */
#ifndef GPUVET_DIAGNOSE_H
#define GPUVET_DIAGNOSE_H
#include <stdbool.h>

#include "core/facts.h"
#include "core/findings.h"
#include "core/util.h"
#include "kb/kb.h"
#include "probes/probes.h"

typedef struct diagnose_opts {
	/* the probes to run into the facts first; NULL: judge the facts as they are (--facts FILE,
	 * bench's measured results) */
	const probe_opts *probes;
	const kb *kb;      /* NULL: the built-in knowledge base (or --kb DIR) */
	const char *layer; /* only the rules of this layer ("bench"); NULL: every rule */
	/* --require EXPRs (syntax checked by the caller with policy_check_syntax): each one that
	 * does not hold is a fail finding policy.require */
	const strlist *requires;
	/* --memory-headroom: a setting for the rules, recorded with the facts it judged
	 * (config.memory_headroom_bytes); ignored unless memory_headroom_set */
	bool memory_headroom_set;
	long long memory_headroom_bytes;
	/* other work for the wait on the driver (check's read of its last run's NVLink counters from
	 * the history): on the thread that readies the knowledge base, beside the probes, before the
	 * rules; it may put facts into f. Run before the rules as well when there are no probes. */
	void (*beside)(facts *f, void *arg);
	void *beside_arg;
} diagnose_opts;

/* Probes (when o->probes), rules, policies, into fs (initialised by the caller), sorted by
 * severity and rank. o NULL: every rule over f as it is. */
void diagnose(facts *f, const diagnose_opts *o, findings *fs);
#endif
