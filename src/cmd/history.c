/* gpuvet history: the stored check, bench, tune and watch runs; list, show, compare, baselines. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd/cmd.h"
#include "core/atomicfile.h"
#include "cmd/history_record.h"
#include "render/render.h"
#include "core/json.h"
#include "core/text.h"
#include "store/history.h"
#include "store/history_export.h"

enum { OPT_JSON = 256, OPT_KIND, OPT_LIMIT, OPT_ALL, OPT_THRESHOLD, OPT_FORMAT, OPT_BASELINE, OPT_KEEP };
typedef struct hopts {
	const char *db;
	bool json, all, color;
	bool have_kind;
	hist_kind kind;
	long long limit;
	double threshold;
	const char *format, *output, *baseline;
	long long keep; /* -1: not given */
} hopts;

/* Opens the store, which must exist; a missing file is a usage error (2), anything else internal
 * (3). Subcommands that write (baseline, gc) open for writing, which checks the file's integrity. */
static history *open_db(const hopts *o, history_mode mode, int *rc)
{
	char *path = history_default_path(o->db);
	struct stat st;
	bool missing = path && stat(path, &st) != 0 && errno == ENOENT;
	char *err = NULL;
	history *h = NULL;
	if (missing)
		err = xasprintf("no history database at %s yet (gpuvet check, bench and tune record their runs there; "
				"--db or GPUVET_DB name another)", path);
	else
		h = history_open(o->db, mode, &err);
	if (h && history_notice(h))
		gv_warning("%s", history_notice(h));
	free(path);
	if (!h) {
		char limit[96];
		gv_error("%s%s", err ? err : "cannot open the history database",
			 history_limit_hint(limit, sizeof(limit)));
		*rc = missing ? EXIT_USAGE : EXIT_INTERNAL;
	}
	free(err);
	return h;
}

static void print_json(cJSON *j)
{
	json_print_doc(stdout, j); /* stored text from the machine: escaped as JSON, always UTF-8 */
}

static const char *fmt_num(double d, char *buf, size_t size)
{
	if (isnan(d))
		snprintf(buf, size, "-");
	else
		snprintf(buf, size, "%.6g", d);
	return buf;
}

/* "8x NVIDIA H200", "NVIDIA H100 80GB HBM3 +1 other", "-" */
static char *gpu_label(const hist_run_row *r)
{
	const char *first = NULL;
	size_t same = 0;
	for (size_t i = 0; i < r->ngpus; i++) {
		const char *n = r->gpus[i].name ? r->gpus[i].name : "GPU";
		if (!first)
			first = n;
		if (strcmp(n, first) == 0)
			same++;
	}
	if (!first)
		return xstrdup("-");
	if (same == r->ngpus)
		return same > 1 ? xasprintf("%zux %s", same, first) : xstrdup(first);
	return xasprintf("%s +%zu other", first, r->ngpus - same);
}

static char *headline(const hist_run_row *r)
{
	if (r->summary && *r->summary)
		return xstrdup(r->summary);
	strbuf sb;
	sb_init(&sb);
	char num[32];
	for (size_t i = 0; i < r->nresults && i < 3; i++) {
		const hist_result_row *x = &r->results[i];
		sb_addf(&sb, "%s%s %s%s%s", i ? ", " : "", x->name, fmt_num(x->value, num, sizeof(num)), x->unit ? " " : "",
			x->unit ? x->unit : "");
	}
	if (r->nresults > 3)
		sb_addf(&sb, " (+%zu)", r->nresults - 3);
	if (!r->nresults && r->nsamples)
		sb_addf(&sb, "%lld samples", r->nsamples);
	return sb_steal(&sb);
}

/* history_each, the error said when it fails. */
static bool each_run(history *h, const hist_query *q, history_run_cb cb, void *ctx)
{
	char *err = NULL;
	bool ok = history_each(h, q, cb, ctx, &err);
	if (!ok)
		gv_error("%s", err);
	free(err);
	return ok;
}

typedef struct list_ctx {
	const hopts *o;
	hist_json_writer json;
	size_t n;
} list_ctx;

static bool list_row(void *ctx, hist_run_row *r)
{
	list_ctx *l = ctx;
	if (l->o->json) {
		history_json_run(&l->json, r);
	} else {
		if (!l->n)
			printf("%s%5s  %-19s  %-5s  %-16s  %-24s  %s%s\n", col_bold(l->o->color), "ID", "DATE (local)", "KIND",
			       "HOST", "GPU", "HEADLINE", col_reset(l->o->color));
		char date[32];
		char *gpu = gpu_label(r);
		char *head = headline(r);
		printf("%5lld  %-19s  %-5s  %-16.16s  %-24.24s  %s%s\n", r->id,
		       hist_utc_to_local(r->started_utc, date, sizeof(date)), hist_kind_name(r->kind),
		       r->host ? TEXT(r->host) : "", TEXT(gpu), r->complete ? "" : "(interrupted) ", TEXT(head));
		free(gpu);
		free(head);
	}
	l->n++;
	return true;
}

static int sub_list(const hopts *o)
{
	char *path = history_default_path(o->db);
	struct stat st;
	if (path && stat(path, &st) != 0 && errno == ENOENT) {
		/* nothing recorded yet is not an error */
		if (o->json) {
			hist_json_writer w;
			history_json_begin(&w, stdout);
			history_json_end(&w);
		} else {
			printf("no runs recorded yet (%s does not exist; gpuvet check, bench and tune record there)\n", path);
		}
		free(path);
		return EXIT_OK;
	}
	free(path);
	int rc = EXIT_OK;
	history *h = open_db(o, HISTORY_READ, &rc);
	if (!h)
		return rc;
	hist_query q = {.any_kind = !o->have_kind, .kind = o->kind, .incomplete = o->all, .limit = o->limit};
	/* run by run: --limit 0 over a long history holds one page of runs, not all of them */
	list_ctx l = {.o = o};
	if (o->json)
		history_json_begin(&l.json, stdout);
	if (!each_run(h, &q, list_row, &l)) {
		history_close(h);
		return EXIT_INTERNAL;
	}
	if (o->json)
		history_json_end(&l.json);
	else if (l.n == 0)
		printf("no %s%sruns in %s\n", o->have_kind ? hist_kind_name(o->kind) : "", o->have_kind ? " " : "",
		       history_path(h));
	history_close(h);
	return EXIT_OK;
}

/* An id, or "latest" (the newest complete run, of kind when have_kind). */
static bool resolve_run(history *h, const char *arg, bool have_kind, hist_kind kind, hist_run_row *out, int *rc)
{
	char *err = NULL;
	bool ok;
	if (strcmp(arg, "latest") == 0) {
		ok = history_latest(h, have_kind ? (int)kind : -1, out, &err);
	} else {
		char *end;
		errno = 0;
		long long id = strtoll(arg, &end, 10);
		if (!*arg || *end || errno || id <= 0) {
			gv_error("'%s' is not a run id: expected a number from `gpuvet history list`, or latest", arg);
			*rc = EXIT_USAGE;
			return false;
		}
		ok = history_get(h, id, out, &err);
	}
	if (!ok) {
		gv_error("%s", err);
		*rc = EXIT_USAGE;
	}
	free(err);
	return ok;
}

static void print_show(const hopts *o, const hist_run_row *r)
{
	bool c = o->color;
	char date[32], num[4][32];
	printf("%srun %lld%s  %s%s\n", col_bold(c), r->id, col_reset(c), hist_kind_name(r->kind),
	       r->complete ? "" : "  (interrupted: never finished)");
	printf("  started    %s\n", hist_utc_to_local(r->started_utc, date, sizeof(date)));
	if (r->finished_utc)
		printf("  finished   %s\n", hist_utc_to_local(r->finished_utc, date, sizeof(date)));
	/* what a run stored came from the machine: through the text sanitizer */
	printf("  host       %s\n", r->host ? TEXT(r->host) : "-");
	printf("  command    %s\n", r->command && *r->command ? TEXT(r->command) : "-");
	printf("  gpuvet     %s\n", r->version ? TEXT(r->version) : "-");
	if (r->summary)
		printf("  summary    %s\n", TEXT(r->summary));
	for (size_t i = 0; i < r->nmeta; i++)
		printf("  %-10s %s\n", TEXT(r->meta[i].key), r->meta[i].value ? TEXT(r->meta[i].value) : "-");
	if (r->ngpus) {
		printf("%sGPUs%s\n", col_bold(c), col_reset(c));
		for (size_t i = 0; i < r->ngpus; i++) {
			const hist_gpu_row *g = &r->gpus[i];
			printf("  %d  %s  %s  %s\n", g->index, g->name ? TEXT(g->name) : "-", g->uuid ? TEXT(g->uuid) : "-",
			       g->bus_id ? TEXT(g->bus_id) : "-");
			if (!isnan(g->sm_clock_mhz) || !isnan(g->mem_clock_mhz) || !isnan(g->temperature_c) ||
			    !isnan(g->power_w) || g->throttle)
				printf("     during the run: SM %s MHz, memory %s MHz, %s C, %s W, clock events: %s\n",
				       fmt_num(g->sm_clock_mhz, num[0], 32), fmt_num(g->mem_clock_mhz, num[1], 32),
				       fmt_num(g->temperature_c, num[2], 32), fmt_num(g->power_w, num[3], 32),
				       g->throttle ? TEXT(g->throttle) : "-");
		}
	}
	if (r->nresults) {
		printf("%sresults%s\n", col_bold(c), col_reset(c));
		for (size_t i = 0; i < r->nresults; i++) {
			const hist_result_row *x = &r->results[i];
			char name[160];
			if (x->gpu >= 0)
				snprintf(name, sizeof(name), "%s [gpu %d]", x->name, x->gpu);
			else
				snprintf(name, sizeof(name), "%s", x->name);
			printf("  %-36s %12s %-8s", TEXT(name), fmt_num(x->value, num[0], 32), x->unit ? TEXT(x->unit) : "");
			if (!isnan(x->min) || !isnan(x->max) || x->repeats)
				printf("  min %s, max %s, %d repeats", fmt_num(x->min, num[1], 32), fmt_num(x->max, num[2], 32),
				       x->repeats);
			printf("  %s%s%s\n", col_dim(c),
			       x->better == HIST_HIGHER_BETTER ? "higher is better"
			       : x->better == HIST_LOWER_BETTER ? "lower is better" : "",
			       col_reset(c));
			if (x->params_json)
				printf("  %s  %s%s\n", col_dim(c), TEXT(x->params_json), col_reset(c));
		}
	}
	if (r->nfindings) {
		printf("%sfindings%s\n", col_bold(c), col_reset(c));
		for (size_t i = 0; i < r->nfindings; i++) {
			const hist_finding_row *f = &r->findings[i];
			const char *sev = f->severity ? f->severity : "?";
			const char *col = strcmp(sev, "fail") == 0 ? col_fail(c) : strcmp(sev, "warn") == 0 ? col_warn(c) : "";
			printf("  %s%-4s%s  %-28s %s\n", col, TEXT(sev), col_reset(c), f->id ? TEXT(f->id) : "?",
			       f->title ? TEXT(f->title) : "");
		}
	}
	if (r->nsamples)
		printf("%lld samples recorded (gpuvet history samples %lld)\n", r->nsamples, r->id);
}

/* The database and the one run a subcommand names ("history SUB ID|latest"), or NULL with the
 * exit status in *rc: a usage error, a database that does not open, no such run. */
static history *open_run_arg(const hopts *o, int argc, char **argv, const char *sub, bool have_kind, hist_kind kind,
			     hist_run_row *r, int *rc)
{
	if (argc != 1) {
		*rc = usage_error(gv_usage(&history_cli), "history %s needs one run id (or latest)", sub);
		return NULL;
	}
	*rc = EXIT_OK;
	history *h = open_db(o, HISTORY_READ, rc);
	if (h && !resolve_run(h, argv[0], have_kind, kind, r, rc)) {
		history_close(h);
		h = NULL;
	}
	return h;
}

static int sub_show(const hopts *o, int argc, char **argv)
{
	hist_run_row r;
	int rc;
	history *h = open_run_arg(o, argc, argv, "show", o->have_kind, o->kind, &r, &rc);
	if (!h)
		return rc;
	if (o->json) {
		/* the run as in gpuvet.history/1's runs, named as a document of its own */
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "schema", "gpuvet.history.run/1");
		cJSON *run = history_run_json(&r);
		for (cJSON *it = run->child; it;) {
			cJSON *next = it->next;
			cJSON_AddItemToObject(j, it->string, cJSON_DetachItemViaPointer(run, it));
			it = next;
		}
		cJSON_Delete(run);
		print_json(j);
	} else {
		print_show(o, &r);
	}
	hist_run_row_free(&r);
	history_close(h);
	return rc;
}

static const char *meta_value(const hist_run_row *r, const char *key)
{
	for (size_t i = 0; i < r->nmeta; i++)
		if (strcmp(r->meta[i].key, key) == 0)
			return r->meta[i].value;
	return NULL;
}

/* What differs between the two machines: it often explains a change in the figures. */
static void context_changes(const hist_run_row *a, const hist_run_row *b, cJSON *arr, FILE *out)
{
	strlist keys = {0};
	for (size_t i = 0; i < a->nmeta; i++)
		sl_push(&keys, a->meta[i].key);
	for (size_t i = 0; i < b->nmeta; i++)
		if (!sl_contains(&keys, b->meta[i].key))
			sl_push(&keys, b->meta[i].key);
	char *ga = gpu_label(a), *gb = gpu_label(b);
	sl_push(&keys, "gpus");
	sl_push(&keys, "host");
	for (size_t i = 0; i < keys.n; i++) {
		const char *k = keys.v[i];
		const char *va = strcmp(k, "gpus") == 0 ? ga : strcmp(k, "host") == 0 ? a->host : meta_value(a, k);
		const char *vb = strcmp(k, "gpus") == 0 ? gb : strcmp(k, "host") == 0 ? b->host : meta_value(b, k);
		if ((va && vb && strcmp(va, vb) == 0) || (!va && !vb))
			continue;
		if (arr) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "key", k);
			if (va)
				cJSON_AddStringToObject(x, "a", va);
			else
				cJSON_AddNullToObject(x, "a");
			if (vb)
				cJSON_AddStringToObject(x, "b", vb);
			else
				cJSON_AddNullToObject(x, "b");
			cJSON_AddItemToArray(arr, x);
		}
		if (out)
			fprintf(out, "  note: %s changed: %s -> %s\n", TEXT(k), va ? TEXT(va) : "(none)", vb ? TEXT(vb) : "(none)");
	}
	free(ga);
	free(gb);
	sl_free(&keys);
}

static bool has_finding(const hist_run_row *r, const char *id)
{
	for (size_t i = 0; i < r->nfindings; i++)
		if (r->findings[i].id && strcmp(r->findings[i].id, id) == 0)
			return true;
	return false;
}

/* Finding ids of `from` that `other` lacks: new in B (from b) or gone since A (from a). */
static void finding_diff(const hist_run_row *from, const hist_run_row *other, const char *label, cJSON *root, FILE *out)
{
	cJSON *arr = root ? cJSON_AddArrayToObject(root, label) : NULL;
	for (size_t i = 0; i < from->nfindings; i++) {
		const hist_finding_row *f = &from->findings[i];
		if (!f->id || has_finding(other, f->id))
			continue;
		if (arr)
			cJSON_AddItemToArray(arr, cJSON_CreateString(f->id));
		if (out)
			fprintf(out, "  finding %s: %s %s  %s\n", strcmp(label, "findings_new") == 0 ? "new in B" : "gone since A",
				f->severity ? TEXT(f->severity) : "?", TEXT(f->id), f->title ? TEXT(f->title) : "");
	}
}

static const char *pct_text(const hist_change *ch, char *buf, size_t size)
{
	if (!ch->in_a)
		snprintf(buf, size, "only in B");
	else if (!ch->in_b)
		snprintf(buf, size, "only in A");
	else if (isnan(ch->pct))
		snprintf(buf, size, "-");
	else if (isinf(ch->pct))
		snprintf(buf, size, "from 0");
	else
		snprintf(buf, size, "%+.1f%%", ch->pct);
	return buf;
}

static cJSON *run_ref_json(const hist_run_row *r)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "id", (double)r->id);
	cJSON_AddStringToObject(o, "kind", hist_kind_name(r->kind));
	cJSON_AddStringToObject(o, "started_utc", r->started_utc);
	if (r->host)
		cJSON_AddStringToObject(o, "host", r->host);
	return o;
}

static int print_compare(const hopts *o, const hist_run_row *a, const hist_run_row *b, const char *baseline)
{
	hist_change *v;
	size_t nreg = 0;
	size_t n = history_compare(a, b, o->threshold, &v, &nreg);
	bool c = o->color;
	if (o->json) {
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "schema", "gpuvet.history.compare/1");
		if (baseline)
			cJSON_AddStringToObject(root, "baseline", baseline);
		cJSON_AddItemToObject(root, "a", run_ref_json(a));
		cJSON_AddItemToObject(root, "b", run_ref_json(b));
		cJSON_AddNumberToObject(root, "threshold_pct", o->threshold);
		cJSON *arr = cJSON_AddArrayToObject(root, "changes");
		for (size_t i = 0; i < n; i++) {
			const hist_change *ch = &v[i];
			cJSON *x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "name", ch->name);
			cJSON_AddNumberToObject(x, "gpu", ch->gpu);
			if (ch->unit)
				cJSON_AddStringToObject(x, "unit", ch->unit);
			cJSON_AddStringToObject(x, "better", hist_direction_name(ch->better));
			json_add_num(x, "a", ch->a);
			json_add_num(x, "b", ch->b);
			json_add_num(x, "change_pct", ch->pct);
			json_add_num(x, "spread_pct", ch->spread_pct);
			cJSON_AddBoolToObject(x, "from_zero", ch->in_a && ch->in_b && isinf(ch->pct));
			cJSON_AddBoolToObject(x, "regression", ch->regression);
			cJSON_AddBoolToObject(x, "improvement", ch->improvement);
			cJSON_AddBoolToObject(x, "within_spread", ch->within_spread);
			cJSON_AddItemToArray(arr, x);
		}
		context_changes(a, b, cJSON_AddArrayToObject(root, "context_changes"), NULL);
		finding_diff(b, a, "findings_new", root, NULL);
		finding_diff(a, b, "findings_gone", root, NULL);
		cJSON_AddNumberToObject(root, "regressions", (double)nreg);
		print_json(root);
	} else {
		char da[32], db[32];
		printf("A: run %lld (%s, %s%s%s)\nB: run %lld (%s, %s)\nthreshold: %g%%\n\n", a->id, hist_kind_name(a->kind),
		       hist_utc_to_local(a->started_utc, da, sizeof(da)), baseline ? ", baseline " : "", baseline ? baseline : "",
		       b->id, hist_kind_name(b->kind), hist_utc_to_local(b->started_utc, db, sizeof(db)), o->threshold);
		size_t w = 6;
		for (size_t i = 0; i < n; i++) {
			size_t l = strlen(v[i].name) + (v[i].gpu >= 0 ? 9 : 0);
			if (l > w)
				w = l;
		}
		if (w > 60)
			w = 60;
		printf("%s  %-*s %12s %12s %-8s %10s %9s%s\n", col_bold(c), (int)w, "RESULT", "A", "B", "UNIT", "CHANGE",
		       "SPREAD", col_reset(c));
		size_t nnoise = 0;
		for (size_t i = 0; i < n; i++) {
			const hist_change *ch = &v[i];
			char name[200], na[32], nb[32], pct[32];
			if (ch->gpu >= 0)
				snprintf(name, sizeof(name), "%s [gpu %d]", ch->name, ch->gpu);
			else
				snprintf(name, sizeof(name), "%s", ch->name);
			const char *flag = ch->regression ? "REGRESSION" : ch->improvement ? "better" : ch->within_spread ? "within spread" : "";
			const char *col = ch->regression ? col_fail(c) : ch->improvement ? col_ok(c) : ch->within_spread ? col_dim(c) : "";
			char spread[32] = "-";
			if (isfinite(ch->spread_pct))
				snprintf(spread, sizeof(spread), "%.1f%%", ch->spread_pct);
			nnoise += ch->within_spread;
			printf("  %-*s %12s %12s %-8s %10s %9s  %s%s%s\n", (int)w, name, fmt_num(ch->a, na, sizeof(na)),
			       fmt_num(ch->b, nb, sizeof(nb)), ch->unit ? ch->unit : "", pct_text(ch, pct, sizeof(pct)), spread,
			       col, flag, col_reset(c));
		}
		if (n == 0)
			printf("  (neither run has results)\n");
		printf("\n");
		finding_diff(b, a, "findings_new", NULL, stdout);
		finding_diff(a, b, "findings_gone", NULL, stdout);
		context_changes(a, b, NULL, stdout);
		if (a->kind != b->kind)
			printf("  note: the runs are of different kinds (%s, %s)\n", hist_kind_name(a->kind),
			       hist_kind_name(b->kind));
		if (nnoise)
			printf("%zu change%s past %g%% within the figure's own spread (SPREAD: max/min - 1 over the repeats "
			       "of the noisier run): not counted\n",
			       nnoise, nnoise == 1 ? "" : "s", o->threshold);
		if (nreg)
			printf("%s%zu regression%s beyond %g%% and beyond the figure's spread%s\n", col_fail(c), nreg,
			       nreg == 1 ? "" : "s", o->threshold, col_reset(c));
		else
			printf("%sno regression beyond %g%%%s\n", col_ok(c), o->threshold, col_reset(c));
	}
	free(v);
	return nreg ? EXIT_FINDING : EXIT_OK;
}

static int sub_compare(const hopts *o, int argc, char **argv)
{
	if (o->baseline ? argc > 1 : (argc != 0 && argc != 2))
		return usage_error(gv_usage(&history_cli), o->baseline ? "history compare --baseline NAME takes at most one run id"
							      : "history compare takes two run ids (A, the reference, then B), or none");
	int rc = EXIT_OK;
	history *h = open_db(o, HISTORY_READ, &rc);
	if (!h)
		return rc;
	hist_run_row a = {0}, b = {0};
	char *err = NULL;
	bool ok = false;
	if (o->baseline) {
		long long id;
		if (!history_baseline_get(h, o->baseline, &id, &err)) {
			gv_error("%s", err);
			rc = EXIT_USAGE;
		} else if (!history_get(h, id, &a, &err)) {
			gv_error("%s", err);
			rc = EXIT_INTERNAL;
		} else {
			/* latest means the latest run of the baseline's own kind */
			bool kind_given = o->have_kind;
			ok = resolve_run(h, argc ? argv[0] : "latest", true, kind_given ? o->kind : a.kind, &b, &rc);
		}
	} else if (argc == 2) {
		ok = resolve_run(h, argv[0], o->have_kind, o->kind, &a, &rc) &&
		     resolve_run(h, argv[1], o->have_kind, o->kind, &b, &rc);
	} else {
		/* the latest run against the one of the same kind before it */
		hist_query q = {.any_kind = false, .limit = 2};
		hist_run_row *v = NULL;
		size_t n = 0;
		if (!o->have_kind) {
			if (!history_latest(h, -1, &b, &err)) {
				gv_error("%s", err);
				rc = EXIT_USAGE;
				goto out;
			}
			q.kind = b.kind;
			hist_run_row_free(&b);
		} else {
			q.kind = o->kind;
		}
		if (!history_list(h, &q, &v, &n, &err)) {
			gv_error("%s", err);
			rc = EXIT_INTERNAL;
		} else if (n < 2) {
			gv_error("%s %s run in %s: nothing to compare with", n ? "only one" : "no", hist_kind_name(q.kind),
				 history_path(h));
			rc = EXIT_USAGE;
			hist_runs_free(v, n);
		} else {
			b = v[0];
			a = v[1];
			free(v);
			ok = true;
		}
	}
	if (ok)
		rc = print_compare(o, &a, &b, o->baseline);
out:
	free(err);
	hist_run_row_free(&a);
	hist_run_row_free(&b);
	history_close(h);
	return rc;
}

typedef struct baseline_ctx {
	history *h;
	cJSON *arr;
	size_t n;
} baseline_ctx;

static void baseline_row(void *ctx, const char *name, long long run_id, const char *set_utc)
{
	baseline_ctx *b = ctx;
	b->n++;
	hist_run_row r;
	char *err = NULL;
	bool have = history_get(b->h, run_id, &r, &err);
	free(err);
	if (b->arr) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", name ? name : "");
		cJSON_AddNumberToObject(x, "run_id", (double)run_id);
		cJSON_AddStringToObject(x, "set_utc", set_utc ? set_utc : "");
		if (have) {
			cJSON_AddStringToObject(x, "kind", hist_kind_name(r.kind));
			cJSON_AddStringToObject(x, "started_utc", r.started_utc);
		}
		cJSON_AddItemToArray(b->arr, x);
	} else {
		char date[32];
		printf("  %-24s run %-6lld %s\n", name ? name : "", run_id,
		       have ? hist_kind_name(r.kind) : "(run missing)");
		if (have)
			printf("  %-24s %s from %s\n", "", r.host ? r.host : "",
			       hist_utc_to_local(r.started_utc, date, sizeof(date)));
	}
	if (have)
		hist_run_row_free(&r);
}

static int sub_baseline(const hopts *o, int argc, char **argv)
{
	if (argc < 1)
		return usage_error(gv_usage(&history_cli), "history baseline needs set, list or delete");
	const char *what = argv[0];
	bool set = strcmp(what, "set") == 0, list = strcmp(what, "list") == 0, del = strcmp(what, "delete") == 0;
	if (!set && !list && !del)
		return usage_error(gv_usage(&history_cli), "unknown history baseline action '%s' (set, list, delete)", what);
	if ((set && argc != 3) || (list && argc != 1) || (del && argc != 2))
		return usage_error(gv_usage(&history_cli), set ? "usage: gpuvet history baseline set NAME ID|latest"
					       : del ? "usage: gpuvet history baseline delete NAME"
						     : "usage: gpuvet history baseline list");
	int rc = EXIT_OK;
	history *h = open_db(o, list ? HISTORY_READ : HISTORY_WRITE, &rc);
	if (!h)
		return rc;
	char *err = NULL;
	if (set) {
		hist_run_row r;
		if (resolve_run(h, argv[2], o->have_kind, o->kind, &r, &rc)) {
			if (history_baseline_set(h, argv[1], r.id, &err)) {
				printf("baseline %s -> run %lld (%s)\n", argv[1], r.id, hist_kind_name(r.kind));
			} else {
				gv_error("%s", err);
				rc = EXIT_USAGE;
			}
			hist_run_row_free(&r);
		}
	} else if (del) {
		if (history_baseline_delete(h, argv[1], &err)) {
			printf("baseline %s deleted (its run is kept)\n", argv[1]);
		} else {
			gv_error("%s", err);
			rc = EXIT_USAGE;
		}
	} else {
		baseline_ctx b = {h, o->json ? cJSON_CreateArray() : NULL, 0};
		cJSON *root = NULL;
		if (b.arr) {
			root = cJSON_CreateObject();
			cJSON_AddStringToObject(root, "schema", "gpuvet.history.baselines/1");
			cJSON_AddItemToObject(root, "baselines", b.arr);
		}
		if (!history_baseline_list(h, baseline_row, &b, &err)) {
			gv_error("%s", err);
			rc = EXIT_INTERNAL;
			cJSON_Delete(root);
		} else if (root) {
			print_json(root);
		} else if (b.n == 0) {
			printf("no baselines yet (gpuvet history baseline set NAME ID names one)\n");
		}
	}
	free(err);
	history_close(h);
	return rc;
}

typedef struct export_ctx {
	FILE *out;
	bool csv;
	hist_json_writer json;
} export_ctx;

static bool export_row(void *ctx, hist_run_row *r)
{
	export_ctx *e = ctx;
	if (e->csv)
		history_export_csv_run(e->out, r);
	else
		history_json_run(&e->json, r);
	return !ferror(e->out); /* a full disk: stop reading; the commit below reports it */
}

static int sub_export(const hopts *o, int argc, char **argv)
{
	(void)argv;
	if (argc != 0)
		return usage_error(gv_usage(&history_cli), "history export takes no arguments");
	const char *fmt = o->format ? o->format : "csv";
	int rc = EXIT_OK;
	history *h = open_db(o, HISTORY_READ, &rc);
	if (!h)
		return rc;
	hist_query q = {.any_kind = !o->have_kind, .kind = o->kind, .incomplete = o->all, .oldest_first = true};
	char err[PATH_MAX + 256];
	bool to_file = o->output && strcmp(o->output, "-") != 0;
	atomic_file *a = to_file ? atomic_file_open(o->output, 0666, err, sizeof(err)) : NULL;
	export_ctx e = {.out = to_file ? (a ? atomic_file_stream(a) : NULL) : stdout, .csv = strcmp(fmt, "csv") == 0};
	bool read_ok = true;
	if (e.out) {
		/* run by run from the store to the file: a history of any size holds one page of runs */
		if (e.csv)
			history_export_csv_header(e.out);
		else
			history_json_begin(&e.json, e.out);
		read_ok = each_run(h, &q, export_row, &e);
		if (!e.csv)
			history_json_end(&e.json);
	}
	if (to_file && a && !read_ok) {
		atomic_file_abort(a); /* half an export never takes the name */
	} else if (to_file && (!a || !atomic_file_commit(a, err, sizeof(err)))) {
		gv_error("%s", err);
		rc = EXIT_INTERNAL;
	}
	if (!read_ok)
		rc = EXIT_INTERNAL;
	history_close(h);
	return rc;
}

typedef struct samples_ctx {
	cJSON *arr;
	long long n;
} samples_ctx;

static bool sample_row(void *ctx, double t, int gpu, const char *metric, double value)
{
	samples_ctx *c = ctx;
	c->n++;
	if (c->arr) {
		cJSON *x = cJSON_CreateObject();
		json_add_num(x, "t", t);
		cJSON_AddNumberToObject(x, "gpu", gpu);
		cJSON_AddStringToObject(x, "metric", metric);
		json_add_num(x, "value", value);
		cJSON_AddItemToArray(c->arr, x);
	} else {
		char num[32];
		printf("%.3f,%d,", t, gpu);
		csv_field(stdout, metric);
		printf(",%s\n", isnan(value) ? "" : fmt_num(value, num, sizeof(num)));
	}
	return true;
}

static int sub_samples(const hopts *o, int argc, char **argv)
{
	hist_run_row r;
	int rc;
	/* latest here means the latest recording */
	history *h = open_run_arg(o, argc, argv, "samples", true, o->have_kind ? o->kind : HIST_WATCH, &r, &rc);
	if (!h)
		return rc;
	samples_ctx c = {o->json ? cJSON_CreateArray() : NULL, 0};
	char *err = NULL;
	if (!c.arr)
		printf("t,gpu,metric,value\n");
	if (!history_samples(h, r.id, sample_row, &c, &err)) {
		gv_error("%s", err);
		rc = EXIT_INTERNAL;
		cJSON_Delete(c.arr);
	} else if (c.arr) {
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "schema", "gpuvet.history.samples/1");
		cJSON_AddNumberToObject(root, "run_id", (double)r.id);
		cJSON_AddItemToObject(root, "samples", c.arr);
		print_json(root);
	}
	free(err);
	hist_run_row_free(&r);
	history_close(h);
	return rc;
}

static int sub_gc(const hopts *o, int argc)
{
	if (argc != 0 || o->keep < 0)
		return usage_error(gv_usage(&history_cli), "usage: gpuvet history gc --keep N");
	int rc = EXIT_OK;
	history *h = open_db(o, HISTORY_WRITE, &rc);
	if (!h)
		return rc;
	long long deleted = 0;
	char *err = NULL;
	if (!history_gc(h, o->keep, &deleted, &err)) {
		gv_error("%s", err);
		rc = EXIT_INTERNAL;
	} else if (o->json) {
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "schema", "gpuvet.history.gc/1");
		cJSON_AddNumberToObject(j, "deleted", (double)deleted);
		cJSON_AddNumberToObject(j, "kept", (double)o->keep);
		print_json(j);
	} else {
		printf("deleted %lld run%s; kept the newest %lld, every baseline's run and recordings still going\n", deleted,
		       deleted == 1 ? "" : "s", o->keep);
	}
	free(err);
	history_close(h);
	return rc;
}

static int run_list(const void *o, int argc, char **argv)
{
	if (argc)
		return usage_error(gv_usage(&history_cli), "history list takes no arguments (did you mean show %s?)", argv[0]);
	return sub_list(o);
}
static int run_show(const void *o, int argc, char **argv) { return sub_show(o, argc, argv); }
static int run_compare(const void *o, int argc, char **argv) { return sub_compare(o, argc, argv); }
static int run_baseline(const void *o, int argc, char **argv) { return sub_baseline(o, argc, argv); }
static int run_export(const void *o, int argc, char **argv) { return sub_export(o, argc, argv); }
static int run_samples(const void *o, int argc, char **argv) { return sub_samples(o, argc, argv); }
static int run_gc(const void *o, int argc, char **argv)
{
	(void)argv;
	return sub_gc(o, argc);
}
static int run_path(const void *vo, int argc, char **argv)
{
	(void)argc;
	(void)argv;
	const hopts *o = vo;
	char *p = history_default_path(o->db);
	if (!p) {
		gv_error("no place for the history database: set HOME, XDG_DATA_HOME or GPUVET_DB, or use --db");
		return EXIT_USAGE;
	}
	puts(p);
	free(p);
	return EXIT_OK;
}

static const gv_subcommand history_subs[] = {
	{"list", NULL, "the runs, newest first (the default): id, local date, kind, host, GPUs and the headline figures",
	 GV_VAL_NONE, run_list},
	{"show", "ID|latest", "one run: machine, GPUs and their conditions, results, findings", GV_VAL_TEXT, run_show},
	{"compare", "A B",
	 "each result of run A (the reference) against run B: both values, the change in %, the figure's spread over "
	 "its repeats (max/min - 1, the noisier run's), REGRESSION where B is worse than A by more than --threshold "
	 "in the figure's own direction (higher or lower is better) and by more than that spread; a change within "
	 "the spread is noise, not a regression",
	 GV_VAL_TEXT, run_compare},
	{"compare", NULL, "the latest run against the run of the same kind before it", GV_VAL_TEXT, NULL},
	{"compare", "--baseline NAME [ID|latest]", "a run (default: the latest of the baseline's kind) against a baseline",
	 GV_VAL_TEXT, NULL},
	{"baseline", "set NAME ID|latest", "name a run as a reference (\"h200-golden\")", GV_VAL_TEXT, run_baseline},
	{"baseline", "list", "the baselines and their runs", GV_VAL_TEXT, NULL},
	{"baseline", "delete NAME", "forget a baseline (its run stays)", GV_VAL_TEXT, NULL},
	{"export", "[--format csv|json] [--output FILE]",
	 "every run, oldest first; CSV has one row per result, JSON every detail, one run a line (written, and read "
	 "back by gpuvet report, run by run, whatever the history's size)",
	 GV_VAL_NONE, run_export},
	{"samples", "ID|latest",
	 "a watch --record run's samples as CSV (t in Unix seconds, gpu, metric, value), or JSON with --json", GV_VAL_TEXT,
	 run_samples},
	{"gc", "--keep N", "delete all but the newest N runs (baselines' runs are kept)", GV_VAL_NONE, run_gc},
	{"path", NULL, "print the database file's path", GV_VAL_NONE, run_path},
	{NULL, NULL, NULL, GV_VAL_NONE, NULL},
};

/* --kind's words: the kinds of runs */
static const char *kind_word(size_t i)
{
	return (int)i + HIST_CHECK <= HIST_KIND_LAST ? hist_kind_name((hist_kind)((int)i + HIST_CHECK)) : NULL;
}

static const char *const format_words[] = {"csv", "json", NULL};

static const gv_option history_options[] = {
	GV_OPT_GROUP("options"),
	DB_OPTION,
	GV_OPT_WORD_FN("kind", OPT_KIND, "KIND", GV_VAL_WORD, kind_word, "only runs of {values} (list, export, latest)"),
	GV_OPT_ARG("limit", OPT_LIMIT, "N", GV_VAL_NUMBER, "list at most N runs (default 20; 0 for all)"),
	GV_OPT_FLAG("all", OPT_ALL, "also list interrupted runs (a killed watch --record)"),
	GV_OPT_ARG("threshold", OPT_THRESHOLD, "PCT", GV_VAL_NUMBER,
		   "the change that counts as a regression (default 5), when it is also beyond the figure's own spread"),
	GV_OPT_WORDS("format", OPT_FORMAT, "FORMAT", GV_VAL_WORD, format_words, "export as {values} (default csv)"),
	GV_OPT_ARG("output", 'o', "FILE", GV_VAL_FILE, "export to FILE instead of standard output"),
	GV_OPT_ARG("baseline", OPT_BASELINE, "NAME", GV_VAL_TEXT, "compare against this baseline (compare --baseline NAME)"),
	GV_OPT_ARG("keep", OPT_KEEP, "N", GV_VAL_NUMBER, "with gc: the newest runs to keep"),
	GV_OPT_FLAG("json", OPT_JSON, "machine-readable output (list, show, compare, baseline list, samples, gc)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli history_cli = {
	.name = "history",
	.summary = "stored check, bench and tune results: list, compare, regressions",
	.head = "usage: gpuvet history [SUBCOMMAND] [options]\n"
		"\n"
		"Every `gpuvet check`, `bench`, `diag`, `tune` and `watch --record` run is kept in a SQLite file,\n"
		"with the machine it ran on (GPUs, driver, CUDA and library versions) and the clocks, temperature\n"
		"and power seen during the run. This command reads it back, compares runs and catches regressions.\n"
		"\n",
	.subs_title = "subcommands",
	.subs = history_subs,
	.opts = history_options,
	.tail = "\n"
		"examples\n"
		"  gpuvet bench && gpuvet history baseline set golden latest\n"
		"  gpuvet bench && gpuvet history compare --baseline golden     # in CI: exit 1 on a regression\n"
		"  gpuvet history compare 12 15 --threshold 3\n"
		"  gpuvet history export --format csv --kind bench > bench.csv\n"
		"\n"
		"Times are shown in local time and stored in UTC (ISO 8601). The schema is in docs/history.md.\n"
		"\n"
		"exit status: 0 ok, 1 compare found a regression beyond --threshold, 2 usage error or an unknown\n"
		"run or baseline, 3 the database cannot be opened or read (it is never overwritten)\n",
};

int cmd_history(int argc, char **argv)
{
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&history_cli, longopts, shortopts);
	hopts o = {.limit = 20, .threshold = 5.0, .keep = -1};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		long v;
		switch (c) {
		case OPT_HIST_DB: o.db = optarg; break;
		case OPT_JSON: o.json = true; break;
		case OPT_KIND:
			if (!gv_option_check(gv_option_by_id(&history_cli, OPT_KIND), optarg) || !hist_kind_parse(optarg, &o.kind))
				return EXIT_USAGE;
			o.have_kind = true;
			break;
		case OPT_LIMIT:
			if (!parse_int_opt("--limit", optarg, 0, 1000000000L, &v))
				return EXIT_USAGE;
			o.limit = v;
			break;
		case OPT_ALL: o.all = true; break;
		case OPT_THRESHOLD:
			if (!parse_double_opt("--threshold", optarg, 0, 1e6, &o.threshold))
				return EXIT_USAGE;
			break;
		case OPT_FORMAT:
			if (!gv_option_check(gv_option_by_id(&history_cli, OPT_FORMAT), optarg))
				return EXIT_USAGE;
			o.format = optarg;
			break;
		case 'o': o.output = optarg; break;
		case OPT_BASELINE: o.baseline = optarg; break;
		case OPT_KEEP:
			if (!parse_int_opt("--keep", optarg, 0, 1000000000L, &v))
				return EXIT_USAGE;
			o.keep = v;
			break;
		default: return usage_getopt_rest(c, gv_usage(&history_cli), argv);
		}
	}
	o.color = color_wanted(stdout, gopts.color);
	const char *sub = optind < argc ? argv[optind++] : "list";
	int nargs = argc - optind;
	char **args = argv + optind;
	bool is_compare = strcmp(sub, "compare") == 0, is_export = strcmp(sub, "export") == 0,
	     is_gc = strcmp(sub, "gc") == 0;
	if (o.baseline && !is_compare)
		return usage_error(gv_usage(&history_cli), "--baseline goes with history compare");
	if ((o.format || o.output) && !is_export)
		return usage_error(gv_usage(&history_cli), "--format and --output go with history export");
	if (o.keep >= 0 && !is_gc)
		return usage_error(gv_usage(&history_cli), "--keep goes with history gc");

	const gv_subcommand *run = gv_subcommand_find(&history_cli, strcmp(sub, "baselines") == 0 ? "baseline" : sub);
	if (run)
		return run->run(&o, nargs, args);
	return usage_error(gv_usage(&history_cli), "unknown history subcommand '%s'", sub);
}
