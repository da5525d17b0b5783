#include "store/history_export.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/text.h"

const char *hist_direction_name(hist_direction d)
{
	return d == HIST_HIGHER_BETTER ? "higher" : d == HIST_LOWER_BETTER ? "lower" : "neutral";
}

void csv_field(FILE *out, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void csv_num(FILE *out, double d)
{
	if (isfinite(d))
		fprintf(out, "%.10g", d);
}

static const char *gpu_name(const hist_run_row *r, int gpu)
{
	for (size_t i = 0; i < r->ngpus; i++)
		if (r->gpus[i].index == gpu || gpu < 0)
			return r->gpus[i].name;
	return NULL;
}

void history_export_csv_header(FILE *out)
{
	fputs("run_id,started_utc,kind,host,gpu_name,command,result,gpu,value,unit,better,min,max,repeats,params\n", out);
}

void history_export_csv_run(FILE *out, const hist_run_row *r)
{
	size_t rows = r->nresults ? r->nresults : 1;
	for (size_t k = 0; k < rows; k++) {
		const hist_result_row *x = r->nresults ? &r->results[k] : NULL;
		fprintf(out, "%lld,", r->id);
		csv_field(out, r->started_utc);
		fprintf(out, ",%s,", hist_kind_name(r->kind));
		csv_field(out, r->host);
		fputc(',', out);
		csv_field(out, gpu_name(r, x ? x->gpu : -1));
		fputc(',', out);
		csv_field(out, r->command);
		fputc(',', out);
		if (x) {
			csv_field(out, x->name);
			fprintf(out, ",%d,", x->gpu);
			csv_num(out, x->value);
			fputc(',', out);
			csv_field(out, x->unit);
			fprintf(out, ",%s,", hist_direction_name(x->better));
			csv_num(out, x->min);
			fputc(',', out);
			csv_num(out, x->max);
			fprintf(out, ",%d,", x->repeats);
			csv_field(out, x->params_json);
		} else {
			fputs(",,,,,,,,", out);
		}
		fputc('\n', out);
	}
}

/* Stored JSON text back as JSON (a string when it does not parse). */
static cJSON *parsed_or_string(const char *s)
{
	if (!s)
		return cJSON_CreateNull();
	cJSON *j = cJSON_Parse(s);
	return j ? j : cJSON_CreateString(s);
}

cJSON *history_run_json(const hist_run_row *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddStringToObject(o, "kind", hist_kind_name(r->kind));
	json_add_str(o, "started_utc", r->started_utc);
	json_add_str(o, "finished_utc", r->finished_utc);
	cJSON_AddBoolToObject(o, "complete", r->complete);
	json_add_str(o, "host", r->host);
	json_add_str(o, "command", r->command);
	json_add_str(o, "version", r->version);
	json_add_str(o, "summary", r->summary);
	cJSON *meta = cJSON_AddObjectToObject(o, "meta");
	for (size_t i = 0; i < r->nmeta; i++)
		json_add_str(meta, r->meta[i].key, r->meta[i].value);
	cJSON *gpus = cJSON_AddArrayToObject(o, "gpus");
	for (size_t i = 0; i < r->ngpus; i++) {
		const hist_gpu_row *g = &r->gpus[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "index", g->index);
		json_add_str(x, "name", g->name);
		json_add_str(x, "uuid", g->uuid);
		json_add_str(x, "bus_id", g->bus_id);
		json_add_num(x, "sm_clock_mhz", g->sm_clock_mhz);
		json_add_num(x, "mem_clock_mhz", g->mem_clock_mhz);
		json_add_num(x, "temperature_c", g->temperature_c);
		json_add_num(x, "power_w", g->power_w);
		json_add_str(x, "throttle", g->throttle);
		cJSON_AddItemToArray(gpus, x);
	}
	cJSON *res = cJSON_AddArrayToObject(o, "results");
	for (size_t i = 0; i < r->nresults; i++) {
		const hist_result_row *x = &r->results[i];
		cJSON *y = cJSON_CreateObject();
		cJSON_AddStringToObject(y, "name", x->name);
		cJSON_AddNumberToObject(y, "gpu", x->gpu);
		json_add_num(y, "value", x->value);
		json_add_str(y, "unit", x->unit);
		cJSON_AddStringToObject(y, "better", hist_direction_name(x->better));
		json_add_num(y, "min", x->min);
		json_add_num(y, "max", x->max);
		cJSON_AddNumberToObject(y, "repeats", x->repeats);
		cJSON_AddItemToObject(y, "params", parsed_or_string(x->params_json));
		cJSON_AddItemToArray(res, y);
	}
	cJSON *fnd = cJSON_AddArrayToObject(o, "findings");
	for (size_t i = 0; i < r->nfindings; i++) {
		const hist_finding_row *f = &r->findings[i];
		cJSON *y = cJSON_CreateObject();
		json_add_str(y, "id", f->id);
		json_add_str(y, "severity", f->severity);
		json_add_str(y, "title", f->title);
		cJSON_AddItemToObject(y, "evidence", parsed_or_string(f->evidence_json));
		cJSON_AddItemToObject(y, "fix", parsed_or_string(f->fix_json));
		cJSON_AddItemToArray(fnd, y);
	}
	cJSON_AddNumberToObject(o, "samples", (double)r->nsamples);
	return o;
}

void history_json_begin(hist_json_writer *w, FILE *out)
{
	*w = (hist_json_writer){.out = out};
	fputs("{\"schema\":\"gpuvet.history/1\",\"runs\":[\n", out);
}

void history_json_run(hist_json_writer *w, const hist_run_row *r)
{
	cJSON *j = history_run_json(r);
	char *s = cJSON_PrintUnformatted(j);
	char *safe = json_text_safe(s ? s : "null");
	if (w->runs++)
		fputs(",\n", w->out);
	fputs(safe, w->out);
	free(safe);
	cJSON_free(s);
	cJSON_Delete(j);
}

void history_json_end(hist_json_writer *w)
{
	fputs(w->runs ? "\n]}\n" : "]}\n", w->out);
}
