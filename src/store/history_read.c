/* Reading runs back, named baselines, garbage collection, and comparing two runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/history_internal.h"

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *s = sqlite3_column_text(st, i);
	return s ? xstrdup((const char *)s) : NULL;
}

static double col_real(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

static bool step_error(history *h, int rc, char **err)
{
	if (rc == SQLITE_DONE)
		return true;
	free(*err);
	*err = hist_db_error(h, "cannot read the history");
	return false;
}

/* Grows *v by one zeroed element; returns it. */
static void *push(void **v, size_t *n, size_t elem)
{
	*v = xrealloc(*v, (*n + 1) * elem);
	void *p = (char *)*v + *n * elem;
	memset(p, 0, elem);
	(*n)++;
	return p;
}

/* The statements that read a run's parts, prepared once for every run a read goes through: a
 * prepare costs more than the lookup (100,000 runs, five parts each). */
typedef struct part_stmts {
	sqlite3_stmt *meta, *gpus, *results, *findings, *samples;
} part_stmts;

static void parts_finalize(part_stmts *p)
{
	sqlite3_finalize(p->meta);
	sqlite3_finalize(p->gpus);
	sqlite3_finalize(p->results);
	sqlite3_finalize(p->findings);
	sqlite3_finalize(p->samples);
	*p = (part_stmts){0};
}

static bool parts_prepare(history *h, part_stmts *p, char **err)
{
	*p = (part_stmts){0};
	p->meta = hist_prepare(h, "SELECT key, value FROM run_meta WHERE run_id = ? ORDER BY key", err);
	p->gpus = p->meta ? hist_prepare(h, "SELECT idx, name, uuid, bus_id, sm_clock_mhz, mem_clock_mhz, temperature_c, "
					    "power_w, throttle FROM gpus WHERE run_id = ? ORDER BY idx", err)
			  : NULL;
	p->results = p->gpus ? hist_prepare(h, "SELECT name, gpu, value, unit, better, min, max, repeats, params FROM "
					       "results WHERE run_id = ? ORDER BY name, gpu", err)
			     : NULL;
	p->findings = p->results ? hist_prepare(h, "SELECT id, severity, title, evidence, fix FROM findings "
						   "WHERE run_id = ? ORDER BY seq", err)
				 : NULL;
	p->samples = p->findings ? hist_prepare(h, "SELECT count(*) FROM samples WHERE run_id = ?", err) : NULL;
	if (!p->samples) {
		parts_finalize(p);
		return false;
	}
	return true;
}

/* st reset and bound to the run id, ready to step. */
static sqlite3_stmt *for_run(sqlite3_stmt *st, long long id)
{
	sqlite3_reset(st);
	sqlite3_bind_int64(st, 1, id);
	return st;
}

static bool load_parts(history *h, part_stmts *p, hist_run_row *r, char **err)
{
	sqlite3_stmt *st = for_run(p->meta, r->id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_meta_row *m = push((void **)&r->meta, &r->nmeta, sizeof(*m));
		m->key = col_text(st, 0);
		m->value = col_text(st, 1);
	}
	if (!step_error(h, rc, err))
		return false;

	st = for_run(p->gpus, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_gpu_row *g = push((void **)&r->gpus, &r->ngpus, sizeof(*g));
		g->index = sqlite3_column_int(st, 0);
		g->name = col_text(st, 1);
		g->uuid = col_text(st, 2);
		g->bus_id = col_text(st, 3);
		g->sm_clock_mhz = col_real(st, 4);
		g->mem_clock_mhz = col_real(st, 5);
		g->temperature_c = col_real(st, 6);
		g->power_w = col_real(st, 7);
		g->throttle = col_text(st, 8);
	}
	if (!step_error(h, rc, err))
		return false;

	st = for_run(p->results, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_result_row *x = push((void **)&r->results, &r->nresults, sizeof(*x));
		x->name = col_text(st, 0);
		x->gpu = sqlite3_column_int(st, 1);
		x->value = col_real(st, 2);
		x->unit = col_text(st, 3);
		int b = sqlite3_column_int(st, 4);
		x->better = b < 0 ? HIST_LOWER_BETTER : b > 0 ? HIST_HIGHER_BETTER : HIST_NEUTRAL;
		x->min = col_real(st, 5);
		x->max = col_real(st, 6);
		x->repeats = sqlite3_column_int(st, 7);
		x->params_json = col_text(st, 8);
		if (!x->name)
			x->name = xstrdup("");
	}
	if (!step_error(h, rc, err))
		return false;

	st = for_run(p->findings, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_finding_row *f = push((void **)&r->findings, &r->nfindings, sizeof(*f));
		f->id = col_text(st, 0);
		f->severity = col_text(st, 1);
		f->title = col_text(st, 2);
		f->evidence_json = col_text(st, 3);
		f->fix_json = col_text(st, 4);
	}
	if (!step_error(h, rc, err))
		return false;

	st = for_run(p->samples, r->id);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r->nsamples = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	return step_error(h, rc, err);
}

#define RUN_COLUMNS "id, kind, started_utc, finished_utc, complete, host, command, version, summary"

static void read_run_columns(sqlite3_stmt *st, hist_run_row *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(st, 0);
	const char *kind = (const char *)sqlite3_column_text(st, 1);
	if (!hist_kind_parse(kind, &r->kind))
		r->kind = HIST_CHECK;
	r->started_utc = col_text(st, 2);
	r->finished_utc = col_text(st, 3);
	r->complete = sqlite3_column_int(st, 4) != 0;
	r->host = col_text(st, 5);
	r->command = col_text(st, 6);
	r->version = col_text(st, 7);
	r->summary = col_text(st, 8);
	if (!r->started_utc)
		r->started_utc = xstrdup("");
}

/* Runs read at once: their rows are read, then their parts, then each goes to the callback and is
 * freed. What a read holds is one page, whatever the history's size. */
#define HIST_PAGE 64

/* Every run a prepared statement of RUN_COLUMNS yields, with its parts, a page at a time, to cb
 * (which may move a row out: the rest is freed after it). Stops early when cb returns false. */
static bool each_run(history *h, sqlite3_stmt *st, history_run_cb cb, void *ctx, char **err)
{
	part_stmts p;
	if (!parts_prepare(h, &p, err))
		return false;
	hist_run_row page[HIST_PAGE];
	bool ok = true, done = false, stopped = false;
	while (ok && !done && !stopped) {
		size_t n = 0;
		int rc = SQLITE_ROW;
		while (n < HIST_PAGE && (rc = sqlite3_step(st)) == SQLITE_ROW)
			read_run_columns(st, &page[n++]);
		if (n < HIST_PAGE) { /* the statement is done, or failed */
			done = true;
			ok = step_error(h, rc, err);
		}
		for (size_t i = 0; ok && i < n; i++)
			ok = load_parts(h, &p, &page[i], err);
		for (size_t i = 0; i < n; i++) {
			if (ok && !stopped && !cb(ctx, &page[i]))
				stopped = true;
			hist_run_row_free(&page[i]);
		}
	}
	parts_finalize(&p);
	return ok;
}

/* Reads in one transaction, so that a run being committed meanwhile is seen whole or not at all. */
static bool begin_read(history *h, char **err)
{
	return hist_exec(h, "BEGIN", err);
}

static void end_read(history *h)
{
	sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
}

static const hist_query every_complete_run = {.any_kind = true};

/* The runs of q, in its order, its limit included. */
static sqlite3_stmt *query_runs(history *h, const hist_query *q, char **err)
{
	char *sql = xasprintf("SELECT " RUN_COLUMNS " FROM runs WHERE (?1 OR kind = ?2) AND (?3 OR complete) "
			      "ORDER BY started_utc %s, id %s LIMIT ?4",
			      q->oldest_first ? "ASC" : "DESC", q->oldest_first ? "ASC" : "DESC");
	sqlite3_stmt *st = hist_prepare(h, sql, err);
	free(sql);
	if (st) {
		sqlite3_bind_int(st, 1, q->any_kind);
		sqlite3_bind_text(st, 2, hist_kind_name(q->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, q->incomplete);
		sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
	}
	return st;
}

bool history_each(history *h, const hist_query *q, history_run_cb cb, void *ctx, char **err)
{
	if (!q)
		q = &every_complete_run;
	if (!begin_read(h, err))
		return false;
	sqlite3_stmt *st = query_runs(h, q, err);
	bool ok = st && each_run(h, st, cb, ctx, err);
	sqlite3_finalize(st);
	end_read(h);
	return ok;
}

bool history_count(history *h, const hist_query *q, long long counts[HIST_KIND_LAST + 1], char **err)
{
	if (!q)
		q = &every_complete_run;
	for (int k = 0; k <= HIST_KIND_LAST; k++)
		counts[k] = 0;
	/* the limit counts the newest (or oldest) runs, as history_each reads them */
	char *sql = xasprintf("SELECT kind, count(*) FROM (SELECT kind FROM runs WHERE (?1 OR kind = ?2) AND "
			      "(?3 OR complete) ORDER BY started_utc %s, id %s LIMIT ?4) GROUP BY kind",
			      q->oldest_first ? "ASC" : "DESC", q->oldest_first ? "ASC" : "DESC");
	sqlite3_stmt *st = hist_prepare(h, sql, err);
	free(sql);
	if (!st)
		return false;
	sqlite3_bind_int(st, 1, q->any_kind);
	sqlite3_bind_text(st, 2, hist_kind_name(q->kind), -1, SQLITE_STATIC);
	sqlite3_bind_int(st, 3, q->incomplete);
	sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_kind k;
		if (hist_kind_parse((const char *)sqlite3_column_text(st, 0), &k))
			counts[k] += sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	return step_error(h, rc, err);
}

typedef struct collect_ctx {
	hist_run_row *v;
	size_t n;
} collect_ctx;

static bool collect(void *ctx, hist_run_row *r)
{
	collect_ctx *c = ctx;
	hist_run_row *dst = push((void **)&c->v, &c->n, sizeof(*dst));
	*dst = *r;
	memset(r, 0, sizeof(*r)); /* moved: each_run frees nothing of it */
	return true;
}

bool history_list(history *h, const hist_query *q, hist_run_row **out, size_t *n, char **err)
{
	collect_ctx c = {0};
	bool ok = history_each(h, q, collect, &c, err);
	if (!ok) {
		hist_runs_free(c.v, c.n);
		c = (collect_ctx){0};
	}
	*out = c.v;
	*n = c.n;
	return ok;
}

static bool get_one(history *h, const char *sql, long long arg, hist_run_row *out, const char *missing, char **err)
{
	memset(out, 0, sizeof(*out));
	if (!begin_read(h, err))
		return false;
	sqlite3_stmt *st = hist_prepare(h, sql, err);
	collect_ctx c = {0};
	bool ok = false;
	if (st) {
		sqlite3_bind_int64(st, 1, arg);
		ok = each_run(h, st, collect, &c, err);
		sqlite3_finalize(st);
	}
	end_read(h);
	if (ok && c.n == 0) {
		free(*err);
		*err = xstrdup(missing);
		ok = false;
	}
	if (ok) {
		*out = c.v[0];
		c.v[0] = (hist_run_row){0};
	}
	hist_runs_free(c.v, c.n);
	return ok;
}

bool history_get(history *h, long long id, hist_run_row *out, char **err)
{
	char *missing = xasprintf("no run %lld in %s (gpuvet history list shows the ids)", id, h->path);
	bool ok = get_one(h, "SELECT " RUN_COLUMNS " FROM runs WHERE id = ?1", id, out, missing, err);
	free(missing);
	return ok;
}

bool history_latest(history *h, int kind_or_neg, hist_run_row *out, char **err)
{
	char *sql = kind_or_neg >= 0
		? xasprintf("SELECT " RUN_COLUMNS " FROM runs WHERE complete AND kind = '%s' "
			    "ORDER BY started_utc DESC, id DESC LIMIT 1", hist_kind_name((hist_kind)kind_or_neg))
		: xstrdup("SELECT " RUN_COLUMNS " FROM runs WHERE complete AND ?1 = ?1 ORDER BY started_utc DESC, id DESC LIMIT 1");
	char *missing = kind_or_neg >= 0
		? xasprintf("no complete %s run in %s yet", hist_kind_name((hist_kind)kind_or_neg), h->path)
		: xasprintf("no complete run in %s yet", h->path);
	bool ok = get_one(h, sql, 0, out, missing, err);
	free(sql);
	free(missing);
	return ok;
}

void hist_gpu_rows_free(hist_gpu_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].uuid);
		free(v[i].bus_id);
		free(v[i].throttle);
	}
	free(v);
}

void hist_meta_rows_free(hist_meta_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].value);
	}
	free(v);
}

void hist_run_row_free(hist_run_row *r)
{
	if (!r)
		return;
	free(r->started_utc);
	free(r->finished_utc);
	free(r->host);
	free(r->command);
	free(r->version);
	free(r->summary);
	hist_gpu_rows_free(r->gpus, r->ngpus);
	hist_meta_rows_free(r->meta, r->nmeta);
	for (size_t i = 0; i < r->nresults; i++) {
		free(r->results[i].name);
		free(r->results[i].unit);
		free(r->results[i].params_json);
	}
	free(r->results);
	for (size_t i = 0; i < r->nfindings; i++) {
		free(r->findings[i].id);
		free(r->findings[i].severity);
		free(r->findings[i].title);
		free(r->findings[i].evidence_json);
		free(r->findings[i].fix_json);
	}
	free(r->findings);
	memset(r, 0, sizeof(*r));
}

void hist_runs_free(hist_run_row *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		hist_run_row_free(&v[i]);
	free(v);
}

bool history_samples(history *h, long long run_id,
		     bool (*cb)(void *ctx, double t, int gpu, const char *metric, double value), void *ctx, char **err)
{
	sqlite3_stmt *st = hist_prepare(h, "SELECT t, gpu, metric, value FROM samples WHERE run_id = ? "
					   "ORDER BY t, gpu, metric", err);
	if (!st)
		return false;
	sqlite3_bind_int64(st, 1, run_id);
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *m = (const char *)sqlite3_column_text(st, 2);
		if (!cb(ctx, col_real(st, 0), sqlite3_column_int(st, 1), m ? m : "", col_real(st, 3))) {
			rc = SQLITE_DONE;
			break;
		}
	}
	sqlite3_finalize(st);
	return step_error(h, rc, err);
}

/* ------------------------------------------------------------------ baselines */

bool history_baseline_set(history *h, const char *name, long long run_id, char **err)
{
	if (!name || !*name) {
		free(*err);
		*err = xstrdup("a baseline needs a name");
		return false;
	}
	hist_run_row r;
	if (!history_get(h, run_id, &r, err))
		return false;
	bool complete = r.complete;
	hist_run_row_free(&r);
	if (!complete) {
		free(*err);
		*err = xasprintf("run %lld is incomplete (it was interrupted); choose a complete run", run_id);
		return false;
	}
	sqlite3_stmt *st = hist_prepare(h, "INSERT OR REPLACE INTO baselines (name, run_id, set_utc) VALUES (?, ?, ?)", err);
	if (!st)
		return false;
	char *now = hist_now_utc();
	sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 2, run_id);
	sqlite3_bind_text(st, 3, now, -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	free(now);
	return step_error(h, rc, err);
}

bool history_baseline_get(history *h, const char *name, long long *run_id, char **err)
{
	sqlite3_stmt *st = hist_prepare(h, "SELECT run_id FROM baselines WHERE name = ?", err);
	if (!st)
		return false;
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*run_id = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		return true;
	}
	sqlite3_finalize(st);
	if (rc == SQLITE_DONE) {
		free(*err);
		*err = xasprintf("no baseline named '%s' in %s (gpuvet history baseline list shows them)", name ? name : "",
				 h->path);
		return false;
	}
	return step_error(h, rc, err);
}

bool history_baseline_list(history *h, void (*cb)(void *ctx, const char *name, long long run_id, const char *set_utc),
			   void *ctx, char **err)
{
	sqlite3_stmt *st = hist_prepare(h, "SELECT name, run_id, set_utc FROM baselines ORDER BY name", err);
	if (!st)
		return false;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		cb(ctx, (const char *)sqlite3_column_text(st, 0), sqlite3_column_int64(st, 1),
		   (const char *)sqlite3_column_text(st, 2));
	sqlite3_finalize(st);
	return step_error(h, rc, err);
}

bool history_baseline_delete(history *h, const char *name, char **err)
{
	sqlite3_stmt *st = hist_prepare(h, "DELETE FROM baselines WHERE name = ?", err);
	if (!st)
		return false;
	sqlite3_bind_text(st, 1, name ? name : "", -1, SQLITE_TRANSIENT);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (!step_error(h, rc, err))
		return false;
	if (sqlite3_changes(h->db) == 0) {
		free(*err);
		*err = xasprintf("no baseline named '%s' in %s", name ? name : "", h->path);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------------ gc */

bool history_gc(history *h, long long keep, long long *deleted, char **err)
{
	*deleted = 0;
	if (!hist_exec(h, "BEGIN IMMEDIATE", err))
		return false;
	/* complete runs beyond the newest keep; incomplete ones (an interrupted watch --record) whose
	 * last sign of life is more than a day old; never a run a baseline names */
	sqlite3_stmt *st = hist_prepare(h,
		"DELETE FROM runs WHERE id NOT IN (SELECT run_id FROM baselines) AND ("
		"  (complete AND id NOT IN (SELECT id FROM runs WHERE complete "
		"                           ORDER BY started_utc DESC, id DESC LIMIT ?1))"
		"  OR (NOT complete AND coalesce((SELECT max(t) FROM samples WHERE run_id = runs.id),"
		"                                 CAST(strftime('%s', started_utc) AS REAL)) < ?2))", err);
	if (!st) {
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return false;
	}
	sqlite3_bind_int64(st, 1, keep);
	sqlite3_bind_double(st, 2, (double)time(NULL) - 86400.0);
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	long long n = sqlite3_changes(h->db);
	if (!step_error(h, rc, err) || !hist_exec(h, "COMMIT", err)) {
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return false;
	}
	*deleted = n;
	return true;
}

/* ------------------------------------------------------------------ compare */

static int cmp_key(const char *na, int ga, const char *nb, int gb)
{
	int c = strcmp(na, nb);
	return c ? c : (ga > gb) - (ga < gb);
}

double hist_spread_pct(double value, double min, double max)
{
	if (!isfinite(min) || !isfinite(max) || max < min)
		return NAN;
	if (min > 0)
		return (max / min - 1.0) * 100.0;
	if (isfinite(value) && value != 0)
		return (max - min) / fabs(value) * 100.0;
	return NAN;
}

bool hist_change_counts(double worse_pct, double threshold_pct, double spread_pct)
{
	return worse_pct > threshold_pct && !(isfinite(spread_pct) && worse_pct <= spread_pct);
}

/* The larger of two spreads, either may be unknown. */
static double wider(double s, double t)
{
	return isnan(s) ? t : isnan(t) ? s : s > t ? s : t;
}

size_t history_compare(const hist_run_row *a, const hist_run_row *b, double threshold_pct, hist_change **out,
		       size_t *nregressions)
{
	/* both result lists are sorted by (name, gpu): merge them */
	hist_change *v = xcalloc(a->nresults + b->nresults + 1, sizeof(*v));
	size_t n = 0, nreg = 0, i = 0, j = 0;
	while (i < a->nresults || j < b->nresults) {
		const hist_result_row *x = i < a->nresults ? &a->results[i] : NULL;
		const hist_result_row *y = j < b->nresults ? &b->results[j] : NULL;
		int c = !x ? 1 : !y ? -1 : cmp_key(x->name, x->gpu, y->name, y->gpu);
		hist_change *ch = &v[n++];
		const hist_result_row *any = c <= 0 ? x : y;
		ch->name = any->name;
		ch->gpu = any->gpu;
		/* the newer run's unit and direction win: it states what the figure means now */
		ch->unit = c >= 0 ? y->unit : x->unit;
		ch->better = c >= 0 ? y->better : x->better;
		ch->in_a = c <= 0;
		ch->in_b = c >= 0;
		ch->a = ch->in_a ? x->value : NAN;
		ch->b = ch->in_b ? y->value : NAN;
		ch->pct = NAN;
		ch->spread_pct = wider(ch->in_a ? hist_spread_pct(x->value, x->min, x->max) : NAN,
				       ch->in_b ? hist_spread_pct(y->value, y->min, y->max) : NAN);
		if (ch->in_a && ch->in_b && !isnan(ch->a) && !isnan(ch->b)) {
			if (ch->a != 0)
				ch->pct = (ch->b - ch->a) / fabs(ch->a) * 100.0;
			else /* from zero (0 failures to 1): any change is an infinite step */
				ch->pct = ch->b == 0 ? 0.0 : ch->b > 0 ? INFINITY : -INFINITY;
			double worse = ch->better == HIST_HIGHER_BETTER ? -ch->pct
				     : ch->better == HIST_LOWER_BETTER ? ch->pct : 0.0;
			ch->regression = hist_change_counts(worse, threshold_pct, ch->spread_pct);
			ch->improvement = ch->better != HIST_NEUTRAL && hist_change_counts(-worse, threshold_pct, ch->spread_pct);
			ch->within_spread = ch->better != HIST_NEUTRAL && fabs(worse) > threshold_pct && !ch->regression &&
					    !ch->improvement;
			if (ch->regression)
				nreg++;
		}
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
	}
	*out = v;
	if (nregressions)
		*nregressions = nreg;
	return n;
}
