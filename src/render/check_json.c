#include <cjson/cJSON.h>

#include <stdlib.h>

#include "core/facts_print.h"
#include "render/render.h"

static cJSON *string_array(const strlist *l)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->v[i]));
	return a;
}

static void add_str_or_skip(cJSON *o, const char *key, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, key, v);
}

cJSON *render_finding_json(const finding *x)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", x->id);
	cJSON_AddStringToObject(o, "severity", severity_name(x->sev));
	cJSON_AddStringToObject(o, "layer", x->layer);
	cJSON_AddStringToObject(o, "title", x->title);
	cJSON_AddItemToObject(o, "evidence", string_array(&x->evidence));
	cJSON_AddItemToObject(o, "fix", string_array(&x->fix));
	/* the fix lines that are commands, as data (core/findings.h: fix_item) */
	cJSON *fixes = cJSON_AddArrayToObject(o, "fixes");
	for (size_t i = 0; i < x->fix.n; i++) {
		const fix_item *it = finding_fix_item(x, i);
		if (!it || it->kind == FIX_ADVICE)
			continue;
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "kind", fix_kind_name(it->kind));
		add_str_or_skip(c, "scope", fix_scope_name(it->scope));
		cJSON_AddStringToObject(c, "command", it->command);
		add_str_or_skip(c, "variable", it->var);
		add_str_or_skip(c, "value", it->value);
		add_str_or_skip(c, "purpose", it->purpose);
		cJSON_AddNumberToObject(c, "line", (double)i);
		cJSON_AddItemToArray(fixes, c);
	}
	return o;
}

cJSON *render_json_document(const char *schema)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "schema", schema);
	cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
	cJSON_AddStringToObject(tool, "name", "gpuvet");
	cJSON_AddStringToObject(tool, "version", GPUVET_VERSION);
	return doc;
}

cJSON *render_check_json(const facts *f, const findings *fs, const render_opts *o)
{
	cJSON *root = render_json_document("gpuvet.check/1");
	/* the facts' text, not their tree: most of the document, and the same bytes (core/facts_print.h) */
	char *text = facts_json_print(f, 2);
	cJSON_AddRawToObject(root, "facts", text);
	free(text);
	cJSON *arr = cJSON_AddArrayToObject(root, "findings");
	for (size_t i = 0; i < fs->n; i++) {
		cJSON_AddItemToArray(arr, render_finding_json(&fs->v[i]));
	}
	cJSON *sk = cJSON_AddArrayToObject(root, "skipped");
	for (size_t i = 0; i < fs->nskipped; i++) {
		cJSON *o2 = cJSON_CreateObject();
		cJSON_AddStringToObject(o2, "id", fs->skipped[i].id);
		cJSON_AddStringToObject(o2, "reason", fs->skipped[i].reason);
		cJSON_AddItemToArray(sk, o2);
	}
	finding_counts c = findings_count(fs);
	cJSON *sum = cJSON_AddObjectToObject(root, "summary");
	cJSON_AddNumberToObject(sum, "fail", c.fail);
	cJSON_AddNumberToObject(sum, "warn", c.warn);
	cJSON_AddNumberToObject(sum, "info", c.info);
	cJSON_AddStringToObject(sum, "verdict", c.fail ? "fail" : c.warn ? "warn" : "ok");
	cJSON_AddNumberToObject(sum, "seconds", o->seconds);
	return root;
}
