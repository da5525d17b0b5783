/* The one pipeline of check, explain and run: probes, then rules, findings sorted. */
#include "cmd/cmd.h"
#include "kb/kb.h"
#include "probes/probes.h"
#include "rules/rules.h"

void diagnose(facts *f, const probe_opts *po, findings *fs)
{
	if (po)
		probes_run(f, po);
	rules_run(f, kb_global(), fs);
	findings_sort(fs);
}
