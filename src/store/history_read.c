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

static bool load_parts(history *h, hist_run_row *r, char **err)
{
	sqlite3_stmt *st;
	int rc;
	if (!(st = hist_prepare(h, "SELECT key, value FROM run_meta WHERE run_id = ? ORDER BY key", err)))
		return false;
	sqlite3_bind_int64(st, 1, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_meta_row *m = push((void **)&r->meta, &r->nmeta, sizeof(*m));
		m->key = col_text(st, 0);
		m->value = col_text(st, 1);
	}
	sqlite3_finalize(st);
	if (!step_error(h, rc, err))
		return false;

	if (!(st = hist_prepare(h, "SELECT idx, name, uuid, bus_id, sm_clock_mhz, mem_clock_mhz, temperature_c, power_w, "
				   "throttle FROM gpus WHERE run_id = ? ORDER BY idx", err)))
		return false;
	sqlite3_bind_int64(st, 1, r->id);
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
	sqlite3_finalize(st);
	if (!step_error(h, rc, err))
		return false;

	if (!(st = hist_prepare(h, "SELECT name, gpu, value, unit, better, min, max, repeats, params FROM results "
				   "WHERE run_id = ? ORDER BY name, gpu", err)))
		return false;
	sqlite3_bind_int64(st, 1, r->id);
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
	sqlite3_finalize(st);
	if (!step_error(h, rc, err))
		return false;

	if (!(st = hist_prepare(h, "SELECT id, severity, title, evidence, fix FROM findings WHERE run_id = ? ORDER BY seq",
				err)))
		return false;
	sqlite3_bind_int64(st, 1, r->id);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_finding_row *f = push((void **)&r->findings, &r->nfindings, sizeof(*f));
		f->id = col_text(st, 0);
		f->severity = col_text(st, 1);
		f->title = col_text(st, 2);
		f->evidence_json = col_text(st, 3);
		f->fix_json = col_text(st, 4);
	}
	sqlite3_finalize(st);
	if (!step_error(h, rc, err))
		return false;

	if (!(st = hist_prepare(h, "SELECT count(*) FROM samples WHERE run_id = ?", err)))
		return false;
	sqlite3_bind_int64(st, 1, r->id);
	if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r->nsamples = sqlite3_column_int64(st, 0);
		rc = SQLITE_DONE;
	}
	sqlite3_finalize(st);
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

/* Reads every run a prepared statement yields, with its parts. */
static bool read_runs(history *h, sqlite3_stmt *st, hist_run_row **out, size_t *n, char **err)
{
	hist_run_row *v = NULL;
	size_t cnt = 0;
	int rc;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		hist_run_row *r = push((void **)&v, &cnt, sizeof(*r));
		read_run_columns(st, r);
	}
	bool ok = step_error(h, rc, err);
	for (size_t i = 0; ok && i < cnt; i++)
		ok = load_parts(h, &v[i], err);
	if (!ok) {
		hist_runs_free(v, cnt);
		v = NULL;
		cnt = 0;
	}
	*out = v;
	*n = cnt;
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

bool history_list(history *h, const hist_query *q, hist_run_row **out, size_t *n, char **err)
{
	static const hist_query all = {true, HIST_CHECK, false, 0, false};
	if (!q)
		q = &all;
	*out = NULL;
	*n = 0;
	char *sql = xasprintf("SELECT " RUN_COLUMNS " FROM runs WHERE (?1 OR kind = ?2) AND (?3 OR complete) "
			      "ORDER BY started_utc %s, id %s LIMIT ?4",
			      q->oldest_first ? "ASC" : "DESC", q->oldest_first ? "ASC" : "DESC");
	if (!begin_read(h, err)) {
		free(sql);
		return false;
	}
	sqlite3_stmt *st = hist_prepare(h, sql, err);
	free(sql);
	bool ok = false;
	if (st) {
		sqlite3_bind_int(st, 1, q->any_kind);
		sqlite3_bind_text(st, 2, hist_kind_name(q->kind), -1, SQLITE_STATIC);
		sqlite3_bind_int(st, 3, q->incomplete);
		sqlite3_bind_int64(st, 4, q->limit > 0 ? q->limit : -1);
		ok = read_runs(h, st, out, n, err);
		sqlite3_finalize(st);
	}
	end_read(h);
	return ok;
}

static bool get_one(history *h, const char *sql, long long arg, hist_run_row *out, const char *missing, char **err)
{
	memset(out, 0, sizeof(*out));
	if (!begin_read(h, err))
		return false;
	sqlite3_stmt *st = hist_prepare(h, sql, err);
	hist_run_row *v = NULL;
	size_t n = 0;
	bool ok = false;
	if (st) {
		sqlite3_bind_int64(st, 1, arg);
		ok = read_runs(h, st, &v, &n, err);
		sqlite3_finalize(st);
	}
	end_read(h);
	if (ok && n == 0) {
		free(*err);
		*err = xstrdup(missing);
		ok = false;
	}
	if (ok) {
		*out = v[0];
		free(v);
	} else {
		hist_runs_free(v, n);
	}
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
		if (ch->in_a && ch->in_b && !isnan(ch->a) && !isnan(ch->b)) {
			if (ch->a != 0)
				ch->pct = (ch->b - ch->a) / fabs(ch->a) * 100.0;
			else /* from zero (0 failures to 1): any change is an infinite step */
				ch->pct = ch->b == 0 ? 0.0 : ch->b > 0 ? INFINITY : -INFINITY;
			double worse = ch->better == HIST_HIGHER_BETTER ? -ch->pct
				     : ch->better == HIST_LOWER_BETTER ? ch->pct : 0.0;
			ch->regression = worse > threshold_pct;
			ch->improvement = ch->better != HIST_NEUTRAL && -worse > threshold_pct;
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
