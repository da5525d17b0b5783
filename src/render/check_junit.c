#include <stdlib.h>
#include <string.h>

#include "render/render.h"
#include "render/text.h"
#include "rules/rules.h"

/* Through the text sanitizer first: XML 1.0 has no control characters, and the file is UTF-8. */
static void xml_escape(FILE *out, const char *raw)
{
	char *safe = text_safe_dup(raw);
	for (const char *s = safe; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\n' || *s == '\t')
				fputc(*s, out);
		}
	}
	free(safe);
}

/* One test case per rule: failure for a fail finding (and warn under --strict), skipped for a
 * rule that could not run, passed otherwise; CI systems show it as a test report. */
void render_check_junit(FILE *out, const findings *fs, const render_opts *o)
{
	int tests = 0, failures = 0, skipped = 0;
	for (const rule *r = rules_first(); r; r = rules_next(r))
		tests++;
	for (size_t i = 0; i < fs->n; i++)
		if (fs->v[i].sev == SEV_FAIL || (o->strict && fs->v[i].sev == SEV_WARN))
			failures++;
	skipped = (int)fs->nskipped;
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(out, "<testsuites><testsuite name=\"gpuvet check\" tests=\"%d\" failures=\"%d\" skipped=\"%d\" time=\"%.3f\">\n",
		tests, failures, skipped, o->seconds);
	for (const rule *r = rules_first(); r; r = rules_next(r)) {
		fprintf(out, "  <testcase classname=\"%s\" name=\"%s\">", r->layer, r->id);
		for (size_t i = 0; i < fs->n; i++) {
			const finding *x = &fs->v[i];
			if (strcmp(x->id, r->id) != 0)
				continue;
			bool fail = x->sev == SEV_FAIL || (o->strict && x->sev == SEV_WARN);
			fprintf(out, fail ? "<failure message=\"" : "<system-out>");
			if (fail) {
				xml_escape(out, x->title);
				fprintf(out, "\" type=\"%s\">", severity_name(x->sev));
			} else {
				fprintf(out, "[%s] ", severity_name(x->sev));
				xml_escape(out, x->title);
				fputc('\n', out);
			}
			for (size_t e = 0; e < x->evidence.n; e++) {
				xml_escape(out, x->evidence.v[e]);
				fputc('\n', out);
			}
			for (size_t e = 0; e < x->fix.n; e++) {
				fputs("fix: ", out);
				xml_escape(out, x->fix.v[e]);
				fputc('\n', out);
			}
			fprintf(out, fail ? "</failure>" : "</system-out>");
		}
		for (size_t i = 0; i < fs->nskipped; i++)
			if (strcmp(fs->skipped[i].id, r->id) == 0) {
				fprintf(out, "<skipped message=\"");
				xml_escape(out, fs->skipped[i].reason);
				fprintf(out, "\"/>");
			}
		fprintf(out, "</testcase>\n");
	}
	fprintf(out, "</testsuite></testsuites>\n");
}
