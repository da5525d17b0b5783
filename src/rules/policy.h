/*
 * --require EXPR: a site's own policy over facts and findings, for CI gates.
 *   KEY OP VALUE   fact comparison, OP one of == != >= <= > <; numbers compare as numbers,
 *                  other values as versions ("nvml.driver_version>=550")
 *   KEY            the fact is collected, ok and true/non-zero
 *   !ID            no finding with this id (or id prefix ending in '.': "!gpu.")
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
#endif
