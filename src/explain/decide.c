#include <stdlib.h>
#include <string.h>

#include "explain/decide.h"
#include "rules/rules.h"

const char *cause_state_name(cause_state s)
{
	switch (s) {
	case CAUSE_HOLDS: return "holds";
	case CAUSE_RULED_OUT: return "ruled-out";
	default: return "undecided";
	}
}

static bool rule_needs_python(const rule *r)
{
	if (strcmp(r->layer, "python") == 0 || strcmp(r->layer, "ext") == 0)
		return true;
	return r->needs && strstr(r->needs, "python.") != NULL;
}

bool sig_needs_python(const signature *s)
{
	for (size_t i = 0; i < s->ncauses; i++) {
		const rule *r = rules_find(s->causes[i]);
		if (r && rule_needs_python(r))
			return true;
	}
	return false;
}

/* "nvml.library = libnvidia-ml.so.580.95.05, hardware.pci.count = 1" */
static char *checked_facts(const rule *r, const facts *f)
{
	strbuf b;
	sb_init(&b);
	strlist needs = {0};
	sl_split(&needs, r->needs ? r->needs : "", " ", false);
	for (size_t i = 0; i < needs.n; i++) {
		const fact *ft = facts_get(f, "%s", needs.v[i]);
		char buf[160];
		const char *val = ft ? fact_value_text(ft, buf, sizeof(buf)) : "(not collected)";
		sb_addf(&b, "%s%s = %s", i ? ", " : "", needs.v[i], val ? val : "");
	}
	sl_free(&needs);
	return sb_steal(&b);
}

static bool needs_failed(const rule *r, const facts *f)
{
	strlist needs = {0};
	sl_split(&needs, r->needs ? r->needs : "", " ", false);
	bool failed = false;
	for (size_t i = 0; i < needs.n; i++) {
		const fact *ft = facts_get(f, "%s", needs.v[i]);
		failed |= ft && ft->state == FACT_ERROR;
	}
	sl_free(&needs);
	return failed;
}

void sig_decide(const signature *s, const facts *f, const findings *fs, cause_verdict *out)
{
	for (size_t i = 0; i < s->ncauses; i++) {
		cause_verdict *v = &out[i];
		v->id = s->causes[i];
		v->finding = findings_find(fs, v->id);
		v->why = NULL;
		if (v->finding) {
			v->state = CAUSE_HOLDS;
			continue;
		}
		const char *skip = NULL;
		for (size_t k = 0; k < fs->nskipped; k++)
			if (strcmp(fs->skipped[k].id, v->id) == 0)
				skip = fs->skipped[k].reason;
		const rule *r = rules_find(v->id);
		if (!r) {
			v->state = CAUSE_UNDECIDED;
			v->why = xasprintf("no rule %s in this gpuvet", v->id);
		} else if (skip) {
			v->state = CAUSE_UNDECIDED;
			v->why = xstrdup(skip);
		} else if (needs_failed(r, f)) {
			/* a fact the rule needs could not be read: its silence decides nothing */
			v->state = CAUSE_UNDECIDED;
			char *facts_read = checked_facts(r, f);
			v->why = xasprintf("%s: cannot tell, a fact it needs failed: %s", r->summary ? r->summary : r->id, facts_read);
			free(facts_read);
		} else {
			v->state = CAUSE_RULED_OUT;
			char *facts_read = checked_facts(r, f);
			v->why = xasprintf("%s: not so here; checked %s", r->summary ? r->summary : r->id, facts_read);
			free(facts_read);
		}
	}
}

void cause_verdicts_free(cause_verdict *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i].why);
}
