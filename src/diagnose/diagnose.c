#include "diagnose/diagnose.h"

#include "rules/policy.h"
#include "rules/rules.h"

void diagnose(facts *f, const diagnose_opts *o, findings *fs)
{
	static const diagnose_opts none = {0};
	if (!o)
		o = &none;
	if (o->memory_headroom_set)
		facts_put_int(f, "--memory-headroom", o->memory_headroom_bytes, "config.memory_headroom_bytes");
	if (o->probes)
		probes_run(f, o->probes);
	rules_run(f, o->kb ? o->kb : kb_global(), o->layer, fs);
	for (size_t i = 0; o->requires && i < o->requires->n; i++)
		policy_apply(o->requires->v[i], f, fs);
	findings_sort(fs);
}
