#include "diagnose/diagnose.h"

#include "core/factkeys.h"
#include "core/trace.h"
#include "rules/policy.h"
#include "rules/rules.h"

static void warm_kb(void *arg)
{
	kb_warm(arg);
}

void diagnose(facts *f, const diagnose_opts *o, findings *fs)
{
	static const diagnose_opts none = {0};
	if (!o)
		o = &none;
	if (o->memory_headroom_set)
		facts_put_int(f, "--memory-headroom", o->memory_headroom_bytes, FK_CONFIG_MEMORY_HEADROOM_BYTES);
	const kb *k = o->kb ? o->kb : kb_global();
	if (o->probes) {
		/* the tables the rules read are parsed while the probes wait for the driver */
		probe_opts po = *o->probes;
		po.beside = warm_kb;
		po.beside_arg = (void *)k;
		probes_run(f, &po);
	}
	gv_trace("rules");
	rules_run(f, k, o->layer, fs);
	for (size_t i = 0; o->requires && i < o->requires->n; i++)
		policy_apply(o->requires->v[i], f, fs);
	findings_sort(fs);
}
