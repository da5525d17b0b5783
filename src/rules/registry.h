/* The list of rule tables, one per layer module. Add a table here when adding a module. */
#ifndef GPUVET_RULES_REGISTRY_H
#define GPUVET_RULES_REGISTRY_H
#include <stdlib.h>

#include "rules/rules.h"

extern const rule rules_hardware[];
extern const rule rules_python[];
extern const rule rules_toolkit[];
extern const rule rules_loader[];
extern const rule rules_devices[];
extern const rule rules_env[];
extern const rule rules_nccl[];
extern const rule rules_container[];
extern const rule rules_host[];
extern const rule rules_driver[];
extern const rule rules_isolation[];
extern const rule rules_gpu[];
extern const rule rules_nvlink[];
extern const rule rules_bench[];
extern const rule rules_known_bad[];
extern const rule rules_files[];
extern const rule *const rule_tables[];
#endif
