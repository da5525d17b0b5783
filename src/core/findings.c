#include "core/findings.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void findings_init(findings *fs)
{
	memset(fs, 0, sizeof(*fs));
}

void findings_free(findings *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		finding *f = &fs->v[i];
		free(f->id);
		free(f->layer);
		free(f->title);
		sl_free(&f->evidence);
		sl_free(&f->fix);
	}
	for (size_t i = 0; i < fs->nskipped; i++) {
		free(fs->skipped[i].id);
		free(fs->skipped[i].reason);
	}
	free(fs->v);
	free(fs->skipped);
	findings_init(fs);
}

finding *findings_add(findings *fs, const char *id, const char *layer, severity sev, const char *titlefmt, ...)
{
	if (fs->n == fs->cap) {
		fs->cap = fs->cap ? fs->cap * 2 : 16;
		fs->v = xrealloc(fs->v, fs->cap * sizeof(*fs->v));
	}
	finding *f = &fs->v[fs->n++];
	memset(f, 0, sizeof(*f));
	f->id = xstrdup(id);
	f->layer = xstrdup(layer ? layer : "");
	f->sev = sev;
	f->rank = 100;
	va_list ap;
	va_start(ap, titlefmt);
	f->title = xvasprintf(titlefmt, ap);
	va_end(ap);
	return f;
}

void finding_evidence(finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	sl_push_owned(&f->evidence, s); /* as is: every renderer escapes it (render/text.h) */
}

void finding_fix(finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	sl_push_owned(&f->fix, xvasprintf(fmt, ap));
	va_end(ap);
}

void findings_skip(findings *fs, const char *id, const char *reasonfmt, ...)
{
	if (fs->nskipped == fs->capskipped) {
		fs->capskipped = fs->capskipped ? fs->capskipped * 2 : 16;
		fs->skipped = xrealloc(fs->skipped, fs->capskipped * sizeof(*fs->skipped));
	}
	skipped_rule *s = &fs->skipped[fs->nskipped++];
	s->id = xstrdup(id);
	va_list ap;
	va_start(ap, reasonfmt);
	s->reason = xvasprintf(reasonfmt, ap);
	va_end(ap);
}

const finding *findings_find(const findings *fs, const char *id)
{
	for (size_t i = 0; i < fs->n; i++)
		if (strcmp(fs->v[i].id, id) == 0)
			return &fs->v[i];
	return NULL;
}

void findings_sort(findings *fs)
{
	/* insertion sort: stable, and lists are short */
	for (size_t i = 1; i < fs->n; i++) {
		finding x = fs->v[i];
		size_t j = i;
		while (j > 0 && (fs->v[j - 1].sev < x.sev || (fs->v[j - 1].sev == x.sev && fs->v[j - 1].rank > x.rank))) {
			fs->v[j] = fs->v[j - 1];
			j--;
		}
		fs->v[j] = x;
	}
}

static const char *const sev_names[] = {"info", "warn", "fail"};

const char *severity_name(severity s)
{
	return (unsigned)s < GV_ARRAY_LEN(sev_names) ? sev_names[s] : "fail";
}

bool severity_parse(const char *name, severity *out)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(sev_names); i++)
		if (name && strcmp(name, sev_names[i]) == 0) {
			*out = (severity)i;
			return true;
		}
	return false;
}

finding_counts findings_count(const findings *fs)
{
	finding_counts c = {0, 0, 0};
	for (size_t i = 0; i < fs->n; i++) {
		if (fs->v[i].sev == SEV_FAIL)
			c.fail++;
		else if (fs->v[i].sev == SEV_WARN)
			c.warn++;
		else
			c.info++;
	}
	return c;
}
