/* diag's results: one per test and GPU, and the findings made from them. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag/diag.h"

diag_result *diag_result_add(diag_run *r, int test, int gpu)
{
	if (r->nres == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 32;
		r->res = xrealloc(r->res, r->cap * sizeof(*r->res));
	}
	diag_result *x = &r->res[r->nres++];
	memset(x, 0, sizeof(*x));
	x->test = test;
	x->gpu = gpu;
	x->st = DIAG_PASS;
	x->value = NAN;
	x->expected = NAN;
	x->finding = -1;
	return x;
}

void diag_result_set(diag_result *x, diag_status st, const char *fmt, ...)
{
	x->st = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(x->summary, sizeof(x->summary), fmt, ap);
	va_end(ap);
}

void diag_result_finding(diag_result *x, diag_finding_id f, int sev_override)
{
	severity sev = sev_override >= 0 ? (severity)sev_override : diag_findings[f].sev;
	int k = 0;
	while (k < x->nfindings && x->findings[k] != (int)f)
		k++;
	if (k == x->nfindings && k < (int)GV_ARRAY_LEN(x->findings)) {
		x->findings[x->nfindings] = (int)f;
		x->sevs[x->nfindings++] = sev;
	} else if (k < x->nfindings && sev > x->sevs[k]) {
		x->sevs[k] = sev;
	}
	/* the result's own finding is its most severe one (the first of them on a
	 * tie) */
	if (x->finding < 0 || sev > x->sev) {
		x->finding = (int)f;
		x->sev = sev;
	}
	diag_status st = sev == SEV_FAIL ? DIAG_FAIL : DIAG_WARN;
	if (st > x->st)
		x->st = st;
}

void diag_result_figure(diag_result *x, const char *metric, double value, const char *unit, int better)
{
	if (x->nextra >= GV_ARRAY_LEN(x->extra) || !isfinite(value))
		return;
	struct diag_figure *f = &x->extra[x->nextra++];
	str_copy(f->metric, sizeof(f->metric), metric);
	str_copy(f->unit, sizeof(f->unit), unit ? unit : "");
	f->value = value;
	f->better = better;
}

void diag_collect_findings(diag_run *r)
{
	for (size_t i = 0; i < r->nres; i++) {
		diag_result *x = &r->res[i];
		if (x->finding < 0 || (x->st != DIAG_WARN && x->st != DIAG_FAIL))
			continue;
		for (int k = 0; k < x->nfindings; k++) {
			const diag_finding_info *fi = &diag_findings[x->findings[k]];
			char where[64] = "";
			if (x->gpu >= 0)
				snprintf(where, sizeof(where), "GPU %d: ", x->gpu);
			finding *f = findings_add(&r->fs, fi->id, "diag", x->sevs[k], "%s%s", where,
			                          x->summary[0] ? x->summary : fi->title);
			for (size_t e = 0; e < x->evidence.n; e++)
				finding_evidence(f, "%s", x->evidence.v[e]);
			if (x->gpu >= 0) {
				for (int g = 0; g < r->ngpus; g++)
					if (r->gpus[g].ordinal == x->gpu) {
						const diag_gpu *d = &r->gpus[g];
						finding_evidence(f, "GPU %d: %s, %s, bus %s%s%s", d->ordinal, d->name,
						                 d->uuid[0] ? d->uuid : "uuid unknown",
						                 d->bus_id[0] ? d->bus_id : "unknown",
						                 d->serial[0] ? ", serial " : "", d->serial);
					}
			}
			finding_fix(f, "%s", fi->action);
			f->rank = x->gpu < 0 ? 0 : 10 + x->gpu;
		}
	}
	findings_sort(&r->fs);
}
