#include "rules/registry.h"

/* Order here is the order rules run and, within a severity, the order findings print. */
const rule *const rule_tables[] = {
	rules_hardware,
	rules_devices,
	rules_driver,
	rules_isolation,
	rules_gpu,
	rules_host,
	rules_nvlink,
	rules_env,
	rules_nccl,
	rules_container,
	rules_toolkit,
	rules_loader,
	rules_bench,
	rules_known_bad,
	rules_files,
	/* rules_python links torch.cuda-unavailable to root causes found by the tables above it: keep it last */
	rules_python,
	NULL,
};
