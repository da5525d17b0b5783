/* Rules about the evidence itself: paths the probes found but could not read. */
#include <errno.h>
#include <stdio.h>

#include "rules/registry.h"
#include "core/factkeys.h"

#define SHOWN 12

static void files_unreadable(rule_ctx *c)
{
	const facts *f = c->facts;
	long long n = facts_int_or(f, 0, FK_FILES_UNREADABLE_COUNT);
	if (n <= 0)
		return;
	finding *x = rule_emit(c, "%lld path%s that gpuvet examines %s there but cannot be read; conclusions that need "
			       "them are withheld", n, n == 1 ? "" : "s", n == 1 ? "is" : "are");
	bool denied = false;
	for (long long i = 0; i < n && i < SHOWN; i++) {
		const fact *ft = facts_get(f, FK_FILES_UNREADABLE(lld), i);
		if (!ft)
			break;
		char what[512];
		finding_evidence(x, "%s: %s", ft->source ? ft->source : "?", fact_problem_text(ft, what, sizeof(what)));
		denied = denied || ft->sys_errno == EACCES || ft->sys_errno == EPERM;
	}
	if (n > SHOWN)
		finding_evidence(x, "and %lld more (gpuvet check --json lists them under facts.files)", n - SHOWN);
	if (denied)
		finding_fix(x, "run gpuvet as a user who may read them (sudo gpuvet check), or give read access to them");
	finding_fix(x, "a directory, FIFO or device where a file belongs was put there by something else: look with "
		       "`ls -l PATH` and `findmnt -T PATH`");
}

const rule rules_files[] = {
	{"files.unreadable", "files", SEV_WARN, FK_FILES_UNREADABLE_COUNT, files_unreadable,
	 "paths gpuvet examines exist but cannot be read (permissions, a directory or FIFO in place of a file)"},
	{NULL, NULL, 0, NULL, NULL, NULL},
};
