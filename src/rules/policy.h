/*
 * --require EXPR: a site's own policy over facts and findings, for CI gates.
 *   KEY OP VALUE   fact comparison, OP one of == != >= <= > <; numeric facts compare as numbers,
 *                  text facts as versions, part by part ("cuda.driver_version>=12.10": 12.10 >
 *                  12.4; 550.54.15 < 550.100); booleans with true/false
 *   KEY            the fact is collected, ok and true/non-zero
 *   !ID            no finding with this id (or id prefix ending in '.': "!gpu.")
 * KEY is LAYER.NAME with a known layer; >= <= > < need a finite number or a version (never nan);
 * !ID a rule's id or a prefix of one. Anything else does not parse: a usage error.
 * A requirement that does not hold becomes a fail finding "policy.require".
 */
#ifndef GPUVET_POLICY_H
#define GPUVET_POLICY_H
#include <stdbool.h>

#include "core/facts.h"
#include "core/findings.h"

/* Returns false (and *err) when the expression does not parse. */
bool policy_check_syntax(const char *expr, char **err);
void policy_apply(const char *expr, const facts *f, findings *fs);
/* The title of the finding for a requirement that does not hold (the JUnit renderer matches
 * requirements to their findings by it); caller frees. */
char *policy_title(const char *expr);
#endif
