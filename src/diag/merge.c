/*
 * gpuvet diag --merge: many nodes' gpuvet.diag/1 documents (srun ... gpuvet diag --json > node.json,
 * a Kubernetes Job's logs) into one table per node and GPU, and the outliers: for each GPU class
 * (NVML's name) and figure, the fleet's median, and every GPU below 90% of it (warn) or 75% (fail).
 * The absolute thresholds were judged on each node; what only the fleet shows is the GPU that is
 * slower than its kind everywhere else.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/stats.h"
#include "core/cli.h"
#include "core/json.h"
#include "core/text.h"
#include "diag/diag.h"
#include "render/render.h"

typedef struct merged_gpu {
	const char *host, *name, *uuid, *serial, *status;
	int index;
	cJSON *results; /* the document's results array */
} merged_gpu;

typedef struct figure_ref {
	size_t gpu;
	const char *metric, *unit;
	double value;
} figure_ref;

static const char *jstr(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Lower-is-better figures (errors, replays) are not compared as speeds. */
static bool is_speed(const char *metric, const char *unit)
{
	return unit && (strstr(unit, "/s") || strcmp(unit, "W") == 0) && !strstr(metric, ".peers");
}

int diag_merge(int nfiles, char *const *files, char *const *texts, bool json, FILE *out)
{
	cJSON **docs = xcalloc((size_t)nfiles, sizeof(*docs));
	merged_gpu *g = NULL;
	size_t ng = 0, gcap = 0;
	figure_ref *fr = NULL;
	size_t nf = 0, fcap = 0;
	int rc = 0;
	for (int i = 0; i < nfiles; i++) {
		docs[i] = cJSON_Parse(texts[i]);
		const char *schema = docs[i] ? jstr(docs[i], "schema") : NULL;
		if (!schema || strncmp(schema, "gpuvet.diag/", 12) != 0) {
			gv_error("%s is not a `gpuvet diag --json` document%s%s", files[i], schema ? ": its schema is " : "",
				 schema ? schema : "");
			rc = EXIT_USAGE;
			goto out;
		}
		const char *host = jstr(docs[i], "host");
		const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(docs[i], "gpus"), *x;
		cJSON_ArrayForEach(x, gpus)
		{
			if (ng == gcap) {
				gcap = gcap ? gcap * 2 : 64;
				g = xrealloc(g, gcap * sizeof(*g));
			}
			merged_gpu *m = &g[ng];
			m->host = host ? host : files[i];
			m->name = jstr(x, "name");
			m->uuid = jstr(x, "uuid");
			m->serial = jstr(x, "serial");
			m->status = jstr(x, "status");
			m->index = (int)jnum(x, "index");
			m->results = cJSON_GetObjectItemCaseSensitive(x, "results");
			if (!m->name)
				continue;
			const cJSON *r;
			cJSON_ArrayForEach(r, m->results)
			{
				const char *metric = jstr(r, "metric"), *unit = jstr(r, "unit"), *st = jstr(r, "status");
				double v = jnum(r, "value");
				if (!metric || !isfinite(v) || !is_speed(metric, unit) || (st && strcmp(st, "skip") == 0))
					continue;
				if (nf == fcap) {
					fcap = fcap ? fcap * 2 : 256;
					fr = xrealloc(fr, fcap * sizeof(*fr));
				}
				fr[nf++] = (figure_ref){ng, metric, unit, v};
			}
			ng++;
		}
	}
	/* medians per class and metric, and the outliers against them */
	cJSON *doc = render_json_document("gpuvet.diag-merge/1");
	cJSON_AddNumberToObject(doc, "nodes", nfiles);
	cJSON *jg = cJSON_AddArrayToObject(doc, "gpus");
	cJSON *jm = cJSON_AddArrayToObject(doc, "medians");
	cJSON *jo = cJSON_AddArrayToObject(doc, "outliers");
	double *vals = xmalloc((nf + 1) * sizeof(double));
	bool *done = xcalloc(nf + 1, sizeof(bool));
	int outliers_fail = 0, outliers_warn = 0, failed = 0;
	for (size_t i = 0; i < nf; i++) {
		if (done[i])
			continue;
		size_t n = 0;
		for (size_t j = i; j < nf; j++)
			if (!done[j] && strcmp(fr[j].metric, fr[i].metric) == 0 && strcmp(g[fr[j].gpu].name, g[fr[i].gpu].name) == 0) {
				vals[n++] = fr[j].value;
				done[j] = true;
			}
		double med = stats_median(vals, n);
		cJSON *m = cJSON_CreateObject();
		cJSON_AddStringToObject(m, "class", g[fr[i].gpu].name);
		cJSON_AddStringToObject(m, "metric", fr[i].metric);
		json_add_num(m, "median", med);
		json_add_text(m, "unit", fr[i].unit);
		cJSON_AddNumberToObject(m, "count", (double)n);
		cJSON_AddItemToArray(jm, m);
		if (n < 3 || !(med > 0)) /* a median of two says nothing about which one is off */
			continue;
		for (size_t j = 0; j < nf; j++) {
			if (strcmp(fr[j].metric, fr[i].metric) != 0 || strcmp(g[fr[j].gpu].name, g[fr[i].gpu].name) != 0 ||
			    fr[j].value >= DIAG_PEER_WARN * med)
				continue;
			bool fail = fr[j].value < DIAG_PEER_FAIL * med;
			outliers_fail += fail;
			outliers_warn += !fail;
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "host", g[fr[j].gpu].host);
			cJSON_AddNumberToObject(o, "index", g[fr[j].gpu].index);
			json_add_text(o, "uuid", g[fr[j].gpu].uuid);
			json_add_text(o, "serial", g[fr[j].gpu].serial);
			cJSON_AddStringToObject(o, "class", g[fr[j].gpu].name);
			cJSON_AddStringToObject(o, "metric", fr[j].metric);
			json_add_num(o, "value", fr[j].value);
			json_add_num(o, "median", med);
			json_add_num(o, "ratio", fr[j].value / med);
			json_add_text(o, "unit", fr[j].unit);
			cJSON_AddStringToObject(o, "status", fail ? "fail" : "warn");
			cJSON_AddItemToArray(jo, o);
		}
	}
	for (size_t i = 0; i < ng; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "host", g[i].host);
		cJSON_AddNumberToObject(o, "index", g[i].index);
		json_add_text(o, "name", g[i].name);
		json_add_text(o, "uuid", g[i].uuid);
		json_add_text(o, "serial", g[i].serial);
		json_add_text(o, "status", g[i].status);
		cJSON *ft = cJSON_AddArrayToObject(o, "not_passed");
		const cJSON *r;
		cJSON_ArrayForEach(r, g[i].results)
		{
			const char *st = jstr(r, "status");
			if (st && (strcmp(st, "fail") == 0 || strcmp(st, "warn") == 0)) {
				char t[160];
				snprintf(t, sizeof(t), "%s %s%s%s", st, jstr(r, "test") ? jstr(r, "test") : "?", jstr(r, "finding") ? " " : "",
					 jstr(r, "finding") ? jstr(r, "finding") : "");
				cJSON_AddItemToArray(ft, cJSON_CreateString(t));
			}
		}
		failed += g[i].status && strcmp(g[i].status, "fail") == 0;
		cJSON_AddItemToArray(jg, o);
	}
	cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
	cJSON_AddNumberToObject(sum, "gpus", (double)ng);
	cJSON_AddNumberToObject(sum, "failed", failed);
	cJSON_AddNumberToObject(sum, "outliers_fail", outliers_fail);
	cJSON_AddNumberToObject(sum, "outliers_warn", outliers_warn);
	rc = failed || outliers_fail ? 1 : 0;
	if (json) {
		json_print_doc(out, doc);
	} else {
		char a[128], b[128];
		fprintf(out, "gpuvet diag --merge: %d node%s, %zu GPU%s\n\n", nfiles, nfiles == 1 ? "" : "s", ng, ng == 1 ? "" : "s");
		fprintf(out, "%-24s %4s  %-24s %-6s %s\n", "node", "gpu", "name", "status", "not passed");
		const cJSON *o;
		cJSON_ArrayForEach(o, jg)
		{
			strbuf np;
			sb_init(&np);
			const cJSON *t;
			cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(o, "not_passed"))
				sb_addf(&np, "%s%s", np.len ? ", " : "", t->valuestring);
			char c[512];
			fprintf(out, "%-24s %4d  %-24s %-6s %s\n", text_safe(a, sizeof(a), jstr(o, "host")), (int)jnum(o, "index"),
				text_safe(b, sizeof(b), jstr(o, "name") ? jstr(o, "name") : "?"),
				jstr(o, "status") ? jstr(o, "status") : "?", np.len ? text_safe(c, sizeof(c), np.buf) : "-");
			sb_free(&np);
		}
		fprintf(out, "\nfleet medians per GPU class (outliers need 3 GPUs of a class or more)\n");
		cJSON_ArrayForEach(o, jm)
		fprintf(out, "  %-24s %-20s %10.4g %s over %d GPU%s\n", text_safe(a, sizeof(a), jstr(o, "class")),
			text_safe(b, sizeof(b), jstr(o, "metric")), jnum(o, "median"), jstr(o, "unit") ? jstr(o, "unit") : "",
			(int)jnum(o, "count"), jnum(o, "count") == 1 ? "" : "s");
		fprintf(out, "\noutliers (below %.0f%% of the class's median warn, below %.0f%% fail)\n", DIAG_PEER_WARN * 100,
			DIAG_PEER_FAIL * 100);
		if (!cJSON_GetArraySize(jo))
			fprintf(out, "  none\n");
		cJSON_ArrayForEach(o, jo)
		{
			char c[96];
			fprintf(out, "  %-4s %s GPU %d (%s%s%s): %s %.4g %s, %.0f%% of the median %.4g\n", jstr(o, "status"),
				text_safe(a, sizeof(a), jstr(o, "host")), (int)jnum(o, "index"), text_safe(b, sizeof(b), jstr(o, "class")),
				jstr(o, "serial") ? ", serial " : "", jstr(o, "serial") ? text_safe(c, sizeof(c), jstr(o, "serial")) : "",
				jstr(o, "metric"), jnum(o, "value"), jstr(o, "unit") ? jstr(o, "unit") : "", jnum(o, "ratio") * 100,
				jnum(o, "median"));
		}
		fprintf(out, "\nResult: %s: %d GPU%s failed on their node, %d outlier%s fail, %d warn\n", rc ? "FAIL" : "PASS", failed,
			failed == 1 ? "" : "s", outliers_fail, outliers_fail == 1 ? "" : "s", outliers_warn);
		cJSON_Delete(doc);
	}
	free(vals);
	free(done);
out:
	for (int i = 0; i < nfiles; i++)
		cJSON_Delete(docs[i]);
	free(docs);
	free(g);
	free(fr);
	return rc;
}
