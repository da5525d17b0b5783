#include "core/findings.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/shell.h"

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
		for (size_t k = 0; k < f->nfixes; k++) {
			free(f->fixes[k].var);
			free(f->fixes[k].value);
			free(f->fixes[k].command);
			free(f->fixes[k].purpose);
		}
		free(f->fixes);
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
	sl_vpushf(&f->evidence, fmt, ap); /* as is: every renderer escapes it (render/text.h) */
	va_end(ap);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Adds the line and its item; takes text. */
static void add_fix(finding *f, char *text, fix_kind kind, fix_scope scope, const char *var, const char *value,
		    const char *command, const char *purpose)
{
	sl_push_owned(&f->fix, text);
	f->fixes = xrealloc(f->fixes, (f->nfixes + 1) * sizeof(*f->fixes));
	f->fixes[f->nfixes++] = (fix_item){kind, scope, dup_or_null(var), dup_or_null(value), dup_or_null(command),
					   dup_or_null(purpose)};
}

void finding_fix(finding *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *text = xvasprintf(fmt, ap);
	va_end(ap);
	add_fix(f, text, FIX_ADVICE, FIX_SCOPE_NONE, NULL, NULL, NULL, NULL);
}

static bool is_name(const char *s)
{
	if (!s || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return false;
	for (const char *p = s + 1; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '_')
			return false;
	return true;
}

/* One shell word as the callers quote them: nothing shell_unquotable, and no blank or shell
 * syntax outside single quotes ($VAR is allowed: PATH=/x/bin:$PATH). */
static bool is_word(const char *s)
{
	if (!s || shell_unquotable(s))
		return false;
	bool quoted = false;
	for (const char *q = s; *q; q++)
		if (*q == '\'')
			quoted = !quoted;
		else if (!quoted && strchr(" \t;&|`()<>\"\\#*?[]~{}!", *q))
			return false;
	return !quoted;
}

static char *fix_text(const char *command, const char *purpose)
{
	return purpose ? xasprintf("%s   (%s)", command, purpose) : xstrdup(command);
}

void finding_fix_export(finding *f, const char *var, const char *value, const char *purpose)
{
	char *cmd = xasprintf("export %s=%s", var ? var : "", value ? value : "");
	bool ok = is_name(var) && is_word(value);
	add_fix(f, fix_text(cmd, purpose), ok ? FIX_ENV_SET : FIX_ADVICE, ok ? FIX_SCOPE_SHELL : FIX_SCOPE_NONE,
		ok ? var : NULL, ok ? value : NULL, ok ? cmd : NULL, ok ? purpose : NULL);
	free(cmd);
}

void finding_fix_unset(finding *f, const char *var, const char *purpose)
{
	char *cmd = xasprintf("unset %s", var ? var : "");
	bool ok = is_name(var);
	add_fix(f, fix_text(cmd, purpose), ok ? FIX_ENV_UNSET : FIX_ADVICE, ok ? FIX_SCOPE_SHELL : FIX_SCOPE_NONE,
		ok ? var : NULL, NULL, ok ? cmd : NULL, ok ? purpose : NULL);
	free(cmd);
}

void finding_fix_command(finding *f, fix_scope scope, const char *command, const char *purpose)
{
	bool ok = command && *command && !shell_unquotable(command);
	add_fix(f, fix_text(command ? command : "", purpose), ok ? FIX_COMMAND : FIX_ADVICE,
		ok ? scope : FIX_SCOPE_NONE, NULL, NULL, ok ? command : NULL, ok ? purpose : NULL);
}

void finding_fix_copy(finding *f, const finding *from, size_t i)
{
	if (i >= from->fix.n)
		return;
	const fix_item *it = finding_fix_item(from, i);
	if (!it) {
		add_fix(f, xstrdup(from->fix.v[i]), FIX_ADVICE, FIX_SCOPE_NONE, NULL, NULL, NULL, NULL);
		return;
	}
	add_fix(f, xstrdup(from->fix.v[i]), it->kind, it->scope, it->var, it->value, it->command, it->purpose);
}

const fix_item *finding_fix_item(const finding *f, size_t i)
{
	return i < f->nfixes ? &f->fixes[i] : NULL;
}

static const char *const fix_kind_names[] = {"advice", "command", "env-set", "env-unset"};

const char *fix_kind_name(fix_kind k)
{
	return (unsigned)k < GV_ARRAY_LEN(fix_kind_names) ? fix_kind_names[k] : "advice";
}

const char *fix_scope_name(fix_scope s)
{
	static const char *const names[] = {NULL, "shell", "user", "system"};
	return (unsigned)s < GV_ARRAY_LEN(names) ? names[s] : NULL;
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
