/*
 * The cause decider: for an error signature, which of its candidate causes (finding ids) holds
 * on this machine. A cause holds when its rule made a finding; it is ruled out when the rule ran
 * on the facts collected and made none; it is undecided when the rule was skipped for a fact that
 * was not collected (the probe that gives it did not run or found nothing).
 */
#ifndef GPUVET_EXPLAIN_DECIDE_H
#define GPUVET_EXPLAIN_DECIDE_H
#include <stdbool.h>

#include "core/facts.h"
#include "core/findings.h"
#include "explain/match.h"

typedef enum { CAUSE_HOLDS, CAUSE_RULED_OUT, CAUSE_UNDECIDED } cause_state;

typedef struct cause_verdict {
	const char *id;
	cause_state state;
	const finding *finding; /* CAUSE_HOLDS */
	char *why;              /* ruled out: the facts the rule read; undecided: why it was skipped */
} cause_verdict;

const char *cause_state_name(cause_state s);
/* Whether deciding the signature's causes needs the live Python probe (a rule of the python or
 * ext layer, or one that needs a python.* fact). */
bool sig_needs_python(const signature *s);
/* Fills out[0..s->ncauses); free each why. */
void sig_decide(const signature *s, const facts *f, const findings *fs, cause_verdict *out);
void cause_verdicts_free(cause_verdict *v, size_t n);
#endif
