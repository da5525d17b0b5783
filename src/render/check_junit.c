#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "core/text.h"
#include "rules/policy.h"
#include "rules/rules.h"

/* XML 1.0 text and attribute values, through the text sanitizer first (XML 1.0 has no control
 * characters, and the file is UTF-8): the five specials escaped, whatever control characters
 * remain other than tab and newline dropped, newlines in attributes kept as character references. */
void render_xml_escape(FILE *out, const char *raw, bool attr)
{
	char *safe = text_safe_dup(raw);
	for (const char *s = safe; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		case '\n': fputs(attr ? "&#10;" : "\n", out); break;
		case '\t': fputs(attr ? "&#9;" : "\t", out); break;
		default:
			if ((unsigned char)*s >= 0x20 && *s != 0x7f)
				fputc(*s, out);
		}
	}
	free(safe);
}

/* One test case: a rule, a --require, or a finding no rule of the table made. */
typedef enum { CASE_PASS, CASE_FAIL, CASE_SKIP } case_result;

typedef struct jcase {
	const char *classname, *name;
	const char *require; /* the expression, for a --require case */
	const char *skip_reason;
	case_result result;
} jcase;

static bool counts_as_failure(const finding *x, const render_opts *o)
{
	return x->sev == SEV_FAIL || (o->strict && x->sev == SEV_WARN);
}

/* Does finding x belong to case c: the rule's id, or the requirement's own finding. */
static bool belongs(const jcase *c, const finding *x, const char *req_title)
{
	if (c->require)
		return strcmp(x->id, "policy.require") == 0 && req_title && strcmp(x->title, req_title) == 0;
	return strcmp(x->id, c->name) == 0;
}

static void finding_text(FILE *out, const finding *x)
{
	fprintf(out, "[%s] %s: ", severity_name(x->sev), x->id);
	render_xml_escape(out, x->title, false);
	fputc('\n', out);
	for (size_t e = 0; e < x->evidence.n; e++) {
		fputs("evidence: ", out);
		render_xml_escape(out, x->evidence.v[e], false);
		fputc('\n', out);
	}
	for (size_t e = 0; e < x->fix.n; e++) {
		fputs("fix: ", out);
		render_xml_escape(out, x->fix.v[e], false);
		fputc('\n', out);
	}
}

/*
 * Every rule and every --require is a test case (docs/json.md, "JUnit"): <failure> when a finding
 * of it is fail (warn too under --strict), with the first such finding's title as message and
 * every finding's title, evidence and fix as text; <skipped> for a rule whose facts were never
 * collected; passed otherwise, warn and info findings in <system-out>. A finding of an id that is
 * neither (none today) gets a case of its own, so no failure is lost. tests, failures, errors and
 * skipped are counted from the cases written.
 */
void render_check_junit(FILE *out, const findings *fs, const strlist *requires, const render_opts *o)
{
	size_t nrules = 0;
	for (const rule *r = rules_first(); r; r = rules_next(r))
		nrules++;
	size_t nreq = requires ? requires->n : 0;
	size_t cap = nrules + nreq + fs->n;
	jcase *cs = xcalloc(cap ? cap : 1, sizeof(*cs));
	char **titles = xcalloc(cap ? cap : 1, sizeof(*titles));
	size_t n = 0;
	for (const rule *r = rules_first(); r; r = rules_next(r))
		cs[n++] = (jcase){r->layer, r->id, NULL, NULL, CASE_PASS};
	for (size_t i = 0; i < nreq; i++) {
		titles[n] = policy_title(requires->v[i]);
		cs[n++] = (jcase){"policy", requires->v[i], requires->v[i], NULL, CASE_PASS};
	}
	for (size_t i = 0; i < fs->n; i++) {
		bool owned = false;
		for (size_t k = 0; k < n && !owned; k++)
			owned = belongs(&cs[k], &fs->v[i], titles[k]);
		if (!owned)
			cs[n++] = (jcase){fs->v[i].layer, fs->v[i].id, NULL, NULL, CASE_PASS};
	}
	int failures = 0, skipped = 0;
	for (size_t k = 0; k < n; k++) {
		for (size_t i = 0; i < fs->n; i++)
			if (belongs(&cs[k], &fs->v[i], titles[k]) && counts_as_failure(&fs->v[i], o))
				cs[k].result = CASE_FAIL;
		if (cs[k].result == CASE_PASS && !cs[k].require)
			for (size_t i = 0; i < fs->nskipped; i++)
				if (strcmp(fs->skipped[i].id, cs[k].name) == 0) {
					cs[k].result = CASE_SKIP;
					cs[k].skip_reason = fs->skipped[i].reason;
					break;
				}
		failures += cs[k].result == CASE_FAIL;
		skipped += cs[k].result == CASE_SKIP;
	}

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(out, "<testsuites name=\"gpuvet\" tests=\"%zu\" failures=\"%d\" errors=\"0\" time=\"%.3f\">\n", n, failures,
		o->seconds);
	fprintf(out, "<testsuite name=\"gpuvet check\" tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"%d\" time=\"%.3f\">\n",
		n, failures, skipped, o->seconds);
	for (size_t k = 0; k < n; k++) {
		const jcase *c = &cs[k];
		fputs("  <testcase classname=\"", out);
		render_xml_escape(out, c->classname, true);
		fputs("\" name=\"", out);
		if (c->require)
			fputs("require ", out);
		render_xml_escape(out, c->name, true);
		fputs("\" time=\"0\">", out);
		if (c->result == CASE_FAIL) {
			const finding *first = NULL;
			for (size_t i = 0; i < fs->n && !first; i++)
				if (belongs(c, &fs->v[i], titles[k]) && counts_as_failure(&fs->v[i], o))
					first = &fs->v[i];
			fputs("<failure message=\"", out);
			render_xml_escape(out, first->title, true);
			fprintf(out, "\" type=\"%s\">", severity_name(first->sev));
			for (size_t i = 0; i < fs->n; i++)
				if (belongs(c, &fs->v[i], titles[k]))
					finding_text(out, &fs->v[i]);
			fputs("</failure>", out);
		} else if (c->result == CASE_SKIP) {
			fputs("<skipped message=\"", out);
			render_xml_escape(out, c->skip_reason, true);
			fputs("\"/>", out);
		} else {
			bool any = false;
			for (size_t i = 0; i < fs->n; i++)
				if (belongs(c, &fs->v[i], titles[k])) {
					if (!any)
						fputs("<system-out>", out);
					any = true;
					finding_text(out, &fs->v[i]);
				}
			if (any)
				fputs("</system-out>", out);
		}
		fputs("</testcase>\n", out);
	}
	fputs("</testsuite>\n</testsuites>\n", out);
	for (size_t k = 0; k < n; k++)
		free(titles[k]);
	free(titles);
	free(cs);
}
