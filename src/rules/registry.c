#include "rules/registry.h"

/* Order here is the order rules run and, within a severity, the order findings print. */
const rule *const rule_tables[] = {
	rules_hardware,
	rules_driver,
	rules_gpu,
	NULL,
};
