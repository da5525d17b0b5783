/*
 * diag's output: text for a person (per GPU, one line a test, then the findings with their
 * evidence and what to do), the gpuvet.diag/1 JSON document (docs/diag.md), and JUnit (one test
 * case per test and GPU, a fail as a failure with the finding's text, a skip as skipped).
 * Renderers compute nothing; every text from the driver is sanitized on the way out.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/color.h"
#include "core/json.h"
#include "core/text.h"
#include "diag/diag.h"
#include "render/render.h"

static const char *status_word(diag_status s)
{
	static const char *const w[] = {"pass", "skip", "warn", "FAIL"};
	return (unsigned)s < GV_ARRAY_LEN(w) ? w[s] : "FAIL";
}

static const char *status_color(diag_status s, bool color)
{
	return s == DIAG_FAIL ? col_fail(color) : s == DIAG_WARN ? col_warn(color) : s == DIAG_PASS ? col_ok(color) : col_dim(color);
}

static void result_line(FILE *out, const diag_result *x, bool color)
{
	char safe[512];
	fprintf(out, "  %s%-4s%s  %-10s %s", status_color(x->st, color), status_word(x->st), col_reset(color),
		diag_tests[x->test].name, text_safe(safe, sizeof(safe), x->summary));
	if (x->seconds >= 0.05)
		fprintf(out, "  %s(%.1f s)%s", col_dim(color), x->seconds, col_reset(color));
	fputc('\n', out);
}

static const char *level_text(const diag_run *r, char *buf, size_t n)
{
	if (r->o->tests_given)
		snprintf(buf, n, "the tests asked for, at level %d (%s)", r->o->level->level, r->o->level->name);
	else
		snprintf(buf, n, "level %d (%s)", r->o->level->level, r->o->level->name);
	return buf;
}

void diag_render_text(FILE *out, const diag_run *r, bool color)
{
	char lv[96], safe[512];
	int tested = 0;
	for (int i = 0; i < r->ngpus; i++)
		tested += r->gpus[i].tested;
	fprintf(out, "%sgpuvet diag%s: %s, %d GPU%s tested, %.1f s%s\n", col_bold(color), col_reset(color),
		level_text(r, lv, sizeof(lv)), tested, tested == 1 ? "" : "s", r->seconds,
		r->interrupted ? " (interrupted: partial results)" : "");
	bool node = false;
	for (size_t i = 0; i < r->nres; i++)
		if (r->res[i].gpu < 0) {
			if (!node)
				fprintf(out, "\n%snode %s%s\n", col_bold(color), text_safe(safe, sizeof(safe), r->host), col_reset(color));
			node = true;
			result_line(out, &r->res[i], color);
		}
	for (int g = 0; g < r->ngpus; g++) {
		const diag_gpu *d = &r->gpus[g];
		fprintf(out, "\n%sGPU %d%s  %s", col_bold(color), d->ordinal, col_reset(color), text_safe(safe, sizeof(safe), d->name));
		fprintf(out, "  %s", text_safe(safe, sizeof(safe), d->uuid[0] ? d->uuid : "uuid unknown"));
		fprintf(out, "  bus %s", text_safe(safe, sizeof(safe), d->bus_id[0] ? d->bus_id : "unknown"));
		if (d->serial[0])
			fprintf(out, "  serial %s", text_safe(safe, sizeof(safe), d->serial));
		fputc('\n', out);
		for (size_t i = 0; i < r->nres; i++)
			if (r->res[i].gpu == d->ordinal)
				result_line(out, &r->res[i], color);
	}
	if (r->fs.n) {
		fprintf(out, "\n%sFindings%s\n", col_bold(color), col_reset(color));
		for (size_t i = 0; i < r->fs.n; i++) {
			const finding *f = &r->fs.v[i];
			diag_status st = f->sev == SEV_FAIL ? DIAG_FAIL : f->sev == SEV_WARN ? DIAG_WARN : DIAG_PASS;
			fprintf(out, "  %s%-4s%s %s%s%s  %s\n", status_color(st, color), f->sev == SEV_INFO ? "info" : status_word(st),
				col_reset(color), col_bold(color), f->id, col_reset(color), text_safe(safe, sizeof(safe), f->title));
			for (size_t e = 0; e < f->evidence.n; e++)
				fprintf(out, "        %s\n", text_safe(safe, sizeof(safe), f->evidence.v[e]));
			for (size_t e = 0; e < f->fix.n; e++)
				fprintf(out, "        what to do: %s\n", text_safe(safe, sizeof(safe), f->fix.v[e]));
		}
	}
	finding_counts n = findings_count(&r->fs);
	fputc('\n', out);
	if (r->usage_error || (r->error[0] && tested == 0))
		fprintf(out, "%sResult: no GPU tested%s: %s\n", col_fail(color), col_reset(color), text_safe(safe, sizeof(safe), r->error));
	else if (n.fail)
		fprintf(out, "%sResult: FAIL%s: %d failure%s, %d warning%s\n", col_fail(color), col_reset(color), n.fail,
			n.fail == 1 ? "" : "s", n.warn, n.warn == 1 ? "" : "s");
	else if (r->interrupted)
		fprintf(out, "%sResult: interrupted%s: no failure in what ran\n", col_warn(color), col_reset(color));
	else
		fprintf(out, "%sResult: PASS%s: %d GPU%s passed%s%d warning%s\n", col_ok(color), col_reset(color), tested,
			tested == 1 ? "" : "s", n.warn ? ", " : " with ", n.warn, n.warn == 1 ? "" : "s");
}

static cJSON *result_json(const diag_result *x)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "test", diag_tests[x->test].name);
	cJSON_AddStringToObject(o, "status", diag_status_name(x->st));
	json_add_text(o, "metric", x->metric);
	json_add_num(o, "value", x->value);
	json_add_num(o, "expected", x->expected);
	json_add_num(o, "margin_pct", isfinite(x->value) && isfinite(x->expected) && x->expected != 0
					      ? (x->value - x->expected) / x->expected * 100
					      : NAN);
	json_add_text(o, "unit", x->unit);
	json_add_text(o, "expected_source", x->expected_src);
	cJSON_AddStringToObject(o, "summary", x->summary);
	cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
	for (size_t i = 0; i < x->evidence.n; i++)
		cJSON_AddItemToArray(ev, cJSON_CreateString(x->evidence.v[i]));
	json_add_text(o, "finding", x->finding >= 0 ? diag_findings[x->finding].id : NULL);
	cJSON *fl = cJSON_AddArrayToObject(o, "finding_ids");
	for (int k = 0; k < x->nfindings; k++)
		cJSON_AddItemToArray(fl, cJSON_CreateString(diag_findings[x->findings[k]].id));
	json_add_num(o, "seconds", x->seconds);
	cJSON *fig = cJSON_AddArrayToObject(o, "figures");
	for (size_t i = 0; i < x->nextra; i++) {
		cJSON *f = cJSON_CreateObject();
		cJSON_AddStringToObject(f, "metric", x->extra[i].metric);
		json_add_num(f, "value", x->extra[i].value);
		json_add_text(f, "unit", x->extra[i].unit);
		cJSON_AddItemToArray(fig, f);
	}
	return o;
}

cJSON *diag_render_json(const diag_run *r)
{
	cJSON *doc = render_json_document("gpuvet.diag/1");
	cJSON_AddStringToObject(doc, "host", r->host);
	cJSON_AddStringToObject(doc, "started", r->started_utc);
	json_add_num(doc, "seconds", r->seconds);
	cJSON_AddNumberToObject(doc, "level", r->o->level->level);
	cJSON_AddStringToObject(doc, "level_name", r->o->level->name);
	cJSON *tests = cJSON_AddArrayToObject(doc, "tests_run");
	for (int t = 0; t < DIAG_NTESTS; t++)
		if (r->o->tests[t])
			cJSON_AddItemToArray(tests, cJSON_CreateString(diag_tests[t].name));
	json_add_text(doc, "driver", r->driver);
	json_add_text(doc, "cuda_driver", r->cuda_driver);
	cJSON_AddBoolToObject(doc, "interrupted", r->interrupted);
	json_add_text(doc, "error", r->error);
	cJSON *node = cJSON_AddArrayToObject(doc, "node_results");
	for (size_t i = 0; i < r->nres; i++)
		if (r->res[i].gpu < 0)
			cJSON_AddItemToArray(node, result_json(&r->res[i]));
	cJSON *gpus = cJSON_AddArrayToObject(doc, "gpus");
	for (int g = 0; g < r->ngpus; g++) {
		const diag_gpu *d = &r->gpus[g];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "index", d->ordinal);
		json_add_count(o, "nvml_index", d->nvml);
		cJSON_AddStringToObject(o, "name", d->name);
		json_add_text(o, "uuid", d->uuid);
		json_add_text(o, "pci_bus_id", d->bus_id);
		json_add_text(o, "serial", d->serial);
		cJSON_AddBoolToObject(o, "tested", d->tested);
		json_add_text(o, "skip_reason", d->skip_reason);
		cJSON_AddStringToObject(o, "status", diag_status_name(d->st));
		cJSON *res = cJSON_AddArrayToObject(o, "results");
		for (size_t i = 0; i < r->nres; i++)
			if (r->res[i].gpu == d->ordinal)
				cJSON_AddItemToArray(res, result_json(&r->res[i]));
		cJSON_AddItemToArray(gpus, o);
	}
	cJSON *fs = cJSON_AddArrayToObject(doc, "findings");
	for (size_t i = 0; i < r->fs.n; i++)
		cJSON_AddItemToArray(fs, render_finding_json(&r->fs.v[i]));
	finding_counts n = findings_count(&r->fs);
	cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
	cJSON_AddNumberToObject(sum, "fail", n.fail);
	cJSON_AddNumberToObject(sum, "warn", n.warn);
	cJSON_AddNumberToObject(sum, "info", n.info);
	cJSON_AddNumberToObject(doc, "exit_code", diag_exit_code(r));
	return doc;
}

void diag_render_junit(FILE *out, const diag_run *r)
{
	size_t fails = 0, skips = 0;
	for (size_t i = 0; i < r->nres; i++) {
		fails += r->res[i].st == DIAG_FAIL;
		skips += r->res[i].st == DIAG_SKIP;
	}
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(out, "<testsuites name=\"gpuvet\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" time=\"%.3f\">\n", r->nres, fails,
		r->seconds);
	fprintf(out, "<testsuite name=\"gpuvet diag\" tests=\"%zu\" failures=\"%zu\" errors=\"0\" skipped=\"%zu\" time=\"%.3f\">\n",
		r->nres, fails, skips, r->seconds);
	for (size_t i = 0; i < r->nres; i++) {
		const diag_result *x = &r->res[i];
		char cls[64], name[96];
		if (x->gpu < 0)
			snprintf(cls, sizeof(cls), "diag.node");
		else
			snprintf(cls, sizeof(cls), "diag.gpu%d", x->gpu);
		snprintf(name, sizeof(name), "%s%s%s", diag_tests[x->test].name, x->metric[0] ? " " : "", x->metric);
		fputs("  <testcase classname=\"", out);
		render_xml_escape(out, cls, true);
		fputs("\" name=\"", out);
		render_xml_escape(out, name, true);
		fprintf(out, "\" time=\"%.3f\">", x->seconds);
		if (x->st == DIAG_FAIL) {
			fputs("<failure message=\"", out);
			render_xml_escape(out, x->summary, true);
			fprintf(out, "\" type=\"%s\">", x->finding >= 0 ? diag_findings[x->finding].id : "fail");
			for (size_t e = 0; e < x->evidence.n; e++) {
				render_xml_escape(out, x->evidence.v[e], false);
				fputc('\n', out);
			}
			if (x->finding >= 0) {
				fputs("what to do: ", out);
				render_xml_escape(out, diag_findings[x->finding].action, false);
				fputc('\n', out);
			}
			fputs("</failure>", out);
		} else if (x->st == DIAG_SKIP) {
			fputs("<skipped message=\"", out);
			render_xml_escape(out, x->summary, true);
			fputs("\"/>", out);
		} else {
			fputs("<system-out>", out);
			render_xml_escape(out, x->summary, false);
			for (size_t e = 0; e < x->evidence.n; e++) {
				fputc('\n', out);
				render_xml_escape(out, x->evidence.v[e], false);
			}
			fputs("</system-out>", out);
		}
		fputs("</testcase>\n", out);
	}
	fputs("</testsuite>\n</testsuites>\n", out);
}

void diag_print_tests(FILE *out)
{
	fprintf(out, "tests (the level that first runs each; --test picks them by name)\n");
	for (int t = 0; t < DIAG_NTESTS; t++)
		fprintf(out, "  %-11s %d  %s\n", diag_tests[t].name, diag_tests[t].level, diag_tests[t].what);
	fprintf(out, "\nrun levels (-r; the time is the target on an H200, per GPU; docs/diag.md has what each took)\n");
	for (size_t i = 0; i < GV_ARRAY_LEN(diag_levels); i++) {
		const diag_level *l = &diag_levels[i];
		fprintf(out, "  %d %-7s %-7s", l->level, l->name, l->target);
		int first = 1;
		for (int t = 0; t < DIAG_NTESTS; t++)
			if (diag_tests[t].level <= l->level) {
				fprintf(out, "%s%s", first ? "" : ", ", diag_tests[t].name);
				first = 0;
			}
		fprintf(out, "\n            gemm %.0f s, memory %.0f%% of free%s, %s%s", l->gemm_seconds, l->memory_fraction * 100,
			l->memory_max_bytes ? " (at most 8 GiB)" : "", l->memory_all_patterns ? "every pattern" : "two patterns",
			l->memory_passes > 1 ? "" : "");
		if (l->memory_passes > 1)
			fprintf(out, " x%d passes", l->memory_passes);
		if (l->power_seconds > 0)
			fprintf(out, ", power %.0f s", l->power_seconds);
		fputc('\n', out);
	}
}
