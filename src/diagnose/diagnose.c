#include "diagnose/diagnose.h"

#include "core/factkeys.h"
#include "core/trace.h"
#include "rules/policy.h"
#include "rules/rules.h"

typedef struct beside_work {
	const kb *k;
	const diagnose_opts *o;
	facts *f;
} beside_work;

static void work_beside(void *arg)
{
	beside_work *w = arg;
	kb_warm(w->k);
	if (w->o->beside)
		w->o->beside(w->f, w->o->beside_arg);
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
		beside_work w = {k, o, f};
		probe_opts po = *o->probes;
		po.beside = work_beside;
		po.beside_arg = &w;
		probes_run(f, &po);
	} else if (o->beside) {
		o->beside(f, o->beside_arg);
	}
	gv_trace("rules");
	rules_run(f, k, o->layer, fs);
	for (size_t i = 0; o->requires && i < o->requires->n; i++)
		policy_apply(o->requires->v[i], f, fs);
	findings_sort(fs);
}
