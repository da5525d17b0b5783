/* diag's deployment test: the fail findings of `gpuvet check --fast` (NVML and files, no cuInit,
 * no Python: the same pipeline check runs), each kept under its own id beside diag.deployment. */
#include <stdio.h>
#include <string.h>

#include "core/factkeys.h"
#include "diag/diag_internal.h"
#include "diagnose/diagnose.h"
#include "probes/probes.h"

/* A copy of a check finding into the run's findings: its id, evidence and fixes as check says them. */
static void copy_finding(findings *to, const finding *f)
{
	finding *x = findings_add(to, f->id, f->layer, f->sev, "%s", f->title);
	for (size_t i = 0; i < f->evidence.n; i++)
		finding_evidence(x, "%s", f->evidence.v[i]);
	for (size_t i = 0; i < f->nfixes; i++)
		finding_fix_copy(x, f, i);
	x->rank = f->rank;
}

void diag_t_deployment(diag_ctx *c)
{
	diag_result *x = diag_result_add(c->r, DIAG_T_DEPLOYMENT, -1);
	double t0 = now_seconds();
	facts *f = facts_new();
	probe_opts po = {.fast = true};
	diagnose_opts dopt = {.probes = &po};
	findings fs;
	findings_init(&fs);
	diagnose(f, &dopt, &fs);
	int fails = 0;
	for (size_t i = 0; i < fs.n; i++) {
		const finding *y = &fs.v[i];
		if (y->sev != SEV_FAIL)
			continue;
		fails++;
		sl_pushf(&x->evidence, "check: FAIL %s: %s", y->id, y->title);
		copy_finding(&c->r->fs, y);
	}
	if (probes_driver_hung(f)) {
		/* cuInit would hang as nvmlInit did: the GPU tests are not started (diag_run_all) */
		const fact *ni = facts_get(f, FK_NVML_INIT);
		snprintf(c->driver_hung, sizeof(c->driver_hung), "the driver does not answer: %s",
			 ni && ni->error ? ni->error : "nvmlInit did not return");
	}
	long long count = -1;
	bool have_count = facts_int(f, &count, FK_NVML_DEVICE_COUNT);
	str_copy(x->metric, sizeof(x->metric), "check.fail");
	x->value = fails;
	x->seconds = now_seconds() - t0;
	if (fails) {
		diag_result_set(x, DIAG_FAIL, "`gpuvet check --fast` has %d fail finding%s", fails, fails == 1 ? "" : "s");
		diag_result_finding(x, DIAG_F_DEPLOYMENT, -1);
	} else if (have_count) {
		diag_result_set(x, DIAG_PASS, "no fail finding from `gpuvet check --fast`; NVML sees %lld GPU%s", count,
				count == 1 ? "" : "s");
	} else {
		diag_result_set(x, DIAG_PASS, "no fail finding from `gpuvet check --fast`");
	}
	findings_free(&fs);
	facts_free(f);
}
