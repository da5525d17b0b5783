/*
 * Writing a run: a builder in memory (nothing can fail while measuring), then one transaction
 * that writes the whole run and marks it complete. A process killed before COMMIT leaves nothing:
 * SQLite rolls the transaction back when the file is next opened.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/history_internal.h"
#include "core/factkeys.h"

/* the GPUs and the metadata are the rows history_read gives back (store/history.h) */
typedef struct run_result {
	char *name, *unit, *params;
	int gpu, repeats;
	double value, min, max;
	hist_direction better;
} run_result;

typedef struct run_finding {
	char *id, *sev, *title, *evidence, *fix;
} run_finding;

typedef struct run_sample {
	double t, value;
	int gpu;
	char *metric;
} run_sample;

struct hist_run {
	hist_kind kind;
	char *started, *host, *command, *version, *summary;
	long long id; /* 0 until a flush wrote the run row */
	hist_meta_row *meta;
	size_t nmeta, capmeta;
	hist_gpu_row *gpus;
	size_t ngpus, capgpus;
	run_result *results;
	size_t nresults, capresults;
	run_finding *findings;
	size_t nfindings, capfindings;
	run_sample *samples;
	size_t nsamples, capsamples;
};

/* Room for one more element in a growable array. */
static void *grow(void *v, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return v;
	*cap = *cap ? *cap * 2 : 8;
	return xrealloc(v, *cap * elem);
}
#define PUSH(arr, n, cap) ((arr) = grow((arr), &(cap), (n), sizeof(*(arr))), &(arr)[(n)++])

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

static void replace(char **slot, const char *s)
{
	free(*slot);
	*slot = dup_or_null(s);
}

/* Shell-quotes one argument when it needs it, so the command line can be pasted back. */
static void add_quoted(strbuf *sb, const char *a)
{
	bool plain = *a != '\0';
	for (const char *p = a; *p; p++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./=:,@%+-", *p))
			plain = false;
	if (plain) {
		sb_add(sb, a);
		return;
	}
	sb_addc(sb, '\'');
	for (const char *p = a; *p; p++)
		if (*p == '\'')
			sb_add(sb, "'\\''");
		else
			sb_addc(sb, *p);
	sb_addc(sb, '\'');
}

hist_run *history_run_begin(hist_kind kind, int argc, char *const *argv)
{
	hist_run *r = xcalloc(1, sizeof(*r));
	r->kind = kind;
	r->started = hist_now_utc();
	char host[256] = "";
	if (gethostname(host, sizeof(host) - 1) != 0)
		host[0] = '\0';
	r->host = xstrdup(host);
	r->version = xstrdup(GPUVET_VERSION);
	strbuf sb;
	sb_init(&sb);
	if (argv && argc > 0 && argv[0]) {
		/* commands get argv[0] = their name ("bench"): store "gpuvet bench ..." */
		const char *base = strrchr(argv[0], '/');
		if (strcmp(base ? base + 1 : argv[0], "gpuvet") != 0)
			sb_add(&sb, "gpuvet");
	}
	for (int i = 0; argv && i < argc && argv[i]; i++) {
		if (sb.len)
			sb_addc(&sb, ' ');
		add_quoted(&sb, argv[i]);
	}
	r->command = sb_steal(&sb);
	return r;
}

void history_run_set(hist_run *r, const char *key, const char *value)
{
	if (!key)
		return;
	for (size_t i = 0; i < r->nmeta; i++)
		if (strcmp(r->meta[i].key, key) == 0) {
			replace(&r->meta[i].value, value);
			return;
		}
	hist_meta_row *kv = PUSH(r->meta, r->nmeta, r->capmeta);
	kv->key = xstrdup(key);
	kv->value = dup_or_null(value);
}

void history_run_set_summary(hist_run *r, const char *summary)
{
	replace(&r->summary, summary);
}

static hist_gpu_row *gpu_slot(hist_run *r, int index)
{
	for (size_t i = 0; i < r->ngpus; i++)
		if (r->gpus[i].index == index)
			return &r->gpus[i];
	hist_gpu_row *g = PUSH(r->gpus, r->ngpus, r->capgpus);
	memset(g, 0, sizeof(*g));
	g->index = index;
	g->sm_clock_mhz = g->mem_clock_mhz = g->temperature_c = g->power_w = NAN;
	return g;
}

void history_run_add_gpu(hist_run *r, int index, const char *name, const char *uuid, const char *bus_id)
{
	hist_gpu_row *g = gpu_slot(r, index);
	if (name)
		replace(&g->name, name);
	if (uuid)
		replace(&g->uuid, uuid);
	if (bus_id)
		replace(&g->bus_id, bus_id);
}

void history_run_gpu_conditions(hist_run *r, int index, double sm_clock_mhz, double mem_clock_mhz,
				double temperature_c, double power_w, const char *throttle_reasons)
{
	hist_gpu_row *g = gpu_slot(r, index);
	g->sm_clock_mhz = sm_clock_mhz;
	g->mem_clock_mhz = mem_clock_mhz;
	g->temperature_c = temperature_c;
	g->power_w = power_w;
	replace(&g->throttle, throttle_reasons);
}

/* a number fact; NAN when not collected */
static double fact_num(const facts *f, const char *keyfmt, ...) GV_PRINTF(2, 3);
static double fact_num(const facts *f, const char *keyfmt, ...)
{
	va_list ap;
	va_start(ap, keyfmt);
	char *key = xvasprintf(keyfmt, ap);
	va_end(ap);
	double d;
	bool ok = facts_real(f, &d, "%s", key);
	free(key);
	return ok ? d : NAN;
}

void history_run_context_from_facts(hist_run *r, const facts *f)
{
	if (!f)
		return;
	const char *drv = facts_str(f, FK_NVML_DRIVER_VERSION);
	if (!drv)
		drv = facts_str(f, FK_HARDWARE_KERNEL_MODULE_VERSION);
	if (drv)
		history_run_set(r, HIST_META_DRIVER, drv);
	if (facts_str(f, FK_NVML_CUDA_VERSION))
		history_run_set(r, HIST_META_CUDA_DRIVER, facts_str(f, FK_NVML_CUDA_VERSION));
	/* meta key <- fact, each only when the probe found it */
	static const char *const pairs[][2] = {
		{HIST_META_KERNEL, FK_HARDWARE_KERNEL_RELEASE},
		{HIST_META_PYTHON, FK_PYTHON_VERSION},
		{HIST_META_TORCH, FK_PYTHON_TORCH_VERSION},
		{"torch.cuda", FK_PYTHON_TORCH_CUDA},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(pairs); i++) {
		const char *v = facts_str(f, "%s", pairs[i][1]);
		if (v)
			history_run_set(r, pairs[i][0], v);
	}
	long long n = facts_int_or(f, 0, FK_NVML_DEVICE_COUNT);
	for (int i = 0; i < n && i < 1024; i++) {
		const char *name = facts_str(f, FK_NVML_GPU_NAME(d), i);
		const char *uuid = facts_str(f, FK_NVML_GPU_UUID(d), i);
		const char *bus = facts_str(f, FK_NVML_GPU_PCI_BUS_ID(d), i);
		if (!name && !uuid && !bus)
			continue;
		history_run_add_gpu(r, i, name, uuid, bus);
		history_run_gpu_conditions(r, i, fact_num(f, FK_NVML_GPU_SM_CLOCK_MHZ(d), i), fact_num(f, FK_NVML_GPU_MEM_CLOCK_MHZ(d), i),
					   fact_num(f, FK_NVML_GPU_TEMPERATURE_C(d), i), fact_num(f, FK_NVML_GPU_POWER_W(d), i),
					   facts_str(f, FK_NVML_GPU_CLOCK_EVENT_REASONS_TEXT(d), i));
	}
}

/* Params are stored as compact JSON; text that is not a JSON object is kept as {"text": ...}. */
static char *normalize_params(const char *s)
{
	if (!s || !*s)
		return NULL;
	cJSON *j = cJSON_Parse(s);
	if (!j || !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "text", s);
	}
	char *out = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	char *copy = xstrdup(out);
	cJSON_free(out);
	return copy;
}

void history_run_add_result(hist_run *r, const hist_result *res)
{
	if (!res || !res->name || !*res->name)
		return;
	run_result *x = NULL;
	for (size_t i = 0; i < r->nresults; i++)
		if (r->results[i].gpu == res->gpu && strcmp(r->results[i].name, res->name) == 0) {
			x = &r->results[i];
			free(x->name);
			free(x->unit);
			free(x->params);
			break;
		}
	if (!x)
		x = PUSH(r->results, r->nresults, r->capresults);
	x->name = xstrdup(res->name);
	x->unit = dup_or_null(res->unit);
	x->params = normalize_params(res->params_json);
	x->gpu = res->gpu < -1 ? -1 : res->gpu;
	x->repeats = res->repeats < 0 ? 0 : res->repeats;
	x->value = res->value;
	x->min = res->min;
	x->max = res->max;
	x->better = res->better < 0 ? HIST_LOWER_BETTER : res->better > 0 ? HIST_HIGHER_BETTER : HIST_NEUTRAL;
}

void history_run_add_value(hist_run *r, const char *name, double value, const char *unit, hist_direction better)
{
	history_run_add_result(r, &(hist_result){.name = name, .value = value, .unit = unit, .better = better,
						  .min = NAN, .max = NAN, .gpu = -1});
}

static char *json_string_array(const strlist *l)
{
	cJSON *a = cJSON_CreateArray();
	for (size_t i = 0; i < l->n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(l->v[i]));
	char *s = cJSON_PrintUnformatted(a);
	cJSON_Delete(a);
	char *copy = xstrdup(s);
	cJSON_free(s);
	return copy;
}

void history_run_add_findings(hist_run *r, const findings *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; i < fs->n; i++) {
		const finding *f = &fs->v[i];
		run_finding *x = PUSH(r->findings, r->nfindings, r->capfindings);
		x->id = xstrdup(f->id);
		x->sev = xstrdup(severity_name(f->sev));
		x->title = dup_or_null(f->title);
		x->evidence = json_string_array(&f->evidence);
		x->fix = json_string_array(&f->fix);
	}
	finding_counts c = findings_count(fs);
	history_run_add_value(r, "findings.fail", c.fail, NULL, HIST_LOWER_BETTER);
	history_run_add_value(r, "findings.warn", c.warn, NULL, HIST_LOWER_BETTER);
	history_run_add_value(r, "findings.info", c.info, NULL, HIST_NEUTRAL);
	if (!r->summary) {
		char *s = c.fail || c.warn ? xasprintf("%d fail, %d warn, %d info", c.fail, c.warn, c.info)
					   : xasprintf("ok, %d info", c.info);
		history_run_set_summary(r, s);
		free(s);
	}
}

void history_run_add_sample(hist_run *r, double t, int gpu, const char *metric, double value)
{
	if (!metric || !*metric)
		return;
	run_sample *s = PUSH(r->samples, r->nsamples, r->capsamples);
	s->t = t;
	s->gpu = gpu;
	s->value = value;
	s->metric = xstrdup(metric);
}

static void free_samples(hist_run *r)
{
	for (size_t i = 0; i < r->nsamples; i++)
		free(r->samples[i].metric);
	r->nsamples = 0;
}

void history_run_discard(hist_run *r)
{
	if (!r)
		return;
	free(r->started);
	free(r->host);
	free(r->command);
	free(r->version);
	free(r->summary);
	hist_meta_rows_free(r->meta, r->nmeta);
	hist_gpu_rows_free(r->gpus, r->ngpus);
	for (size_t i = 0; i < r->nresults; i++) {
		free(r->results[i].name);
		free(r->results[i].unit);
		free(r->results[i].params);
	}
	free(r->results);
	for (size_t i = 0; i < r->nfindings; i++) {
		run_finding *x = &r->findings[i];
		free(x->id);
		free(x->sev);
		free(x->title);
		free(x->evidence);
		free(x->fix);
	}
	free(r->findings);
	free_samples(r);
	free(r->samples);
	free(r);
}

/* ------------------------------------------------------------------ the transaction */

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* NaN and infinities are stored as NULL (unknown): SQLite has no NaN. */
static void bind_real(sqlite3_stmt *st, int i, double d)
{
	if (isfinite(d))
		sqlite3_bind_double(st, i, d);
	else
		sqlite3_bind_null(st, i);
}

/* Steps a statement that returns no rows, then resets it for the next use. */
static bool step_done(history *h, sqlite3_stmt *st, char **err)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE) {
		free(*err);
		*err = hist_db_error(h, "cannot write the run");
		return false;
	}
	return true;
}

/* Writes everything but the samples again (delete and insert), appends the buffered samples. */
static bool write_parts(history *h, hist_run *r, long long id, char **err)
{
	static const char *const clear[] = {
		"DELETE FROM run_meta WHERE run_id = ?1",
		"DELETE FROM gpus WHERE run_id = ?1",
		"DELETE FROM results WHERE run_id = ?1",
		"DELETE FROM findings WHERE run_id = ?1",
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(clear); i++) {
		sqlite3_stmt *st = hist_prepare(h, clear[i], err);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, id);
		bool ok = step_done(h, st, err);
		sqlite3_finalize(st);
		if (!ok)
			return false;
	}
	bool ok = false;
	sqlite3_stmt *meta = hist_prepare(h, "INSERT INTO run_meta (run_id, key, value) VALUES (?, ?, ?)", err);
	sqlite3_stmt *gpu = hist_prepare(h, "INSERT INTO gpus (run_id, idx, name, uuid, bus_id, sm_clock_mhz, "
					    "mem_clock_mhz, temperature_c, power_w, throttle) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
	sqlite3_stmt *res = hist_prepare(h, "INSERT INTO results (run_id, name, gpu, value, unit, better, min, max, "
					    "repeats, params) VALUES (?,?,?,?,?,?,?,?,?,?)", err);
	sqlite3_stmt *fnd = hist_prepare(h, "INSERT INTO findings (run_id, seq, id, severity, title, evidence, fix) "
					    "VALUES (?,?,?,?,?,?,?)", err);
	sqlite3_stmt *smp = hist_prepare(h, "INSERT INTO samples (run_id, t, gpu, metric, value) VALUES (?,?,?,?,?)", err);
	if (!meta || !gpu || !res || !fnd || !smp)
		goto out;
	for (size_t i = 0; i < r->nmeta; i++) {
		sqlite3_bind_int64(meta, 1, id);
		bind_text(meta, 2, r->meta[i].key);
		bind_text(meta, 3, r->meta[i].value);
		if (!step_done(h, meta, err))
			goto out;
	}
	for (size_t i = 0; i < r->ngpus; i++) {
		const hist_gpu_row *g = &r->gpus[i];
		sqlite3_bind_int64(gpu, 1, id);
		sqlite3_bind_int(gpu, 2, g->index);
		bind_text(gpu, 3, g->name);
		bind_text(gpu, 4, g->uuid);
		bind_text(gpu, 5, g->bus_id);
		bind_real(gpu, 6, g->sm_clock_mhz);
		bind_real(gpu, 7, g->mem_clock_mhz);
		bind_real(gpu, 8, g->temperature_c);
		bind_real(gpu, 9, g->power_w);
		bind_text(gpu, 10, g->throttle);
		if (!step_done(h, gpu, err))
			goto out;
	}
	for (size_t i = 0; i < r->nresults; i++) {
		const run_result *x = &r->results[i];
		sqlite3_bind_int64(res, 1, id);
		bind_text(res, 2, x->name);
		sqlite3_bind_int(res, 3, x->gpu);
		bind_real(res, 4, x->value);
		bind_text(res, 5, x->unit);
		sqlite3_bind_int(res, 6, x->better);
		bind_real(res, 7, x->min);
		bind_real(res, 8, x->max);
		sqlite3_bind_int(res, 9, x->repeats);
		bind_text(res, 10, x->params);
		if (!step_done(h, res, err))
			goto out;
	}
	for (size_t i = 0; i < r->nfindings; i++) {
		const run_finding *x = &r->findings[i];
		sqlite3_bind_int64(fnd, 1, id);
		sqlite3_bind_int64(fnd, 2, (long long)i);
		bind_text(fnd, 3, x->id);
		bind_text(fnd, 4, x->sev);
		bind_text(fnd, 5, x->title);
		bind_text(fnd, 6, x->evidence);
		bind_text(fnd, 7, x->fix);
		if (!step_done(h, fnd, err))
			goto out;
	}
	for (size_t i = 0; i < r->nsamples; i++) {
		const run_sample *s = &r->samples[i];
		sqlite3_bind_int64(smp, 1, id);
		bind_real(smp, 2, s->t);
		sqlite3_bind_int(smp, 3, s->gpu);
		bind_text(smp, 4, s->metric);
		bind_real(smp, 5, s->value);
		if (!step_done(h, smp, err))
			goto out;
	}
	ok = true;
out:
	sqlite3_finalize(meta);
	sqlite3_finalize(gpu);
	sqlite3_finalize(res);
	sqlite3_finalize(fnd);
	sqlite3_finalize(smp);
	return ok;
}

/* The run row: inserted the first time, updated after a flush (re-inserted if gc removed it). */
static bool write_row(history *h, hist_run *r, bool complete, const char *finished, long long *id, char **err)
{
	sqlite3_stmt *st;
	if (r->id) {
		st = hist_prepare(h, "UPDATE runs SET complete = ?2, finished_utc = ?3, summary = ?4 WHERE id = ?1", err);
		if (!st)
			return false;
		sqlite3_bind_int64(st, 1, r->id);
		sqlite3_bind_int(st, 2, complete);
		bind_text(st, 3, finished);
		bind_text(st, 4, r->summary);
		bool ok = step_done(h, st, err);
		sqlite3_finalize(st);
		if (!ok)
			return false;
		if (sqlite3_changes(h->db) == 1) {
			*id = r->id;
			return true;
		}
	}
	st = hist_prepare(h, "INSERT INTO runs (kind, started_utc, finished_utc, complete, host, command, version, "
			     "summary) VALUES (?,?,?,?,?,?,?,?)", err);
	if (!st)
		return false;
	bind_text(st, 1, hist_kind_name(r->kind));
	bind_text(st, 2, r->started);
	bind_text(st, 3, finished);
	sqlite3_bind_int(st, 4, complete);
	bind_text(st, 5, r->host);
	bind_text(st, 6, r->command);
	bind_text(st, 7, r->version);
	bind_text(st, 8, r->summary);
	bool ok = step_done(h, st, err);
	sqlite3_finalize(st);
	if (ok)
		*id = sqlite3_last_insert_rowid(h->db);
	return ok;
}

static bool write_run(history *h, hist_run *r, bool complete, long long *id_out, char **err)
{
	if (!h || !h->db || h->readonly) {
		free(*err);
		*err = xasprintf("history database %s is not open for writing", h && h->path ? h->path : "?");
		return false;
	}
	/* BEGIN IMMEDIATE takes the write lock now, waiting up to the busy timeout for other writers,
	 * instead of failing half way when a read transaction would have to become a write one. */
	int tries = 0;
	while (!hist_exec(h, "BEGIN IMMEDIATE", err)) {
		int code = sqlite3_errcode(h->db) & 0xff;
		if ((code != SQLITE_BUSY && code != SQLITE_LOCKED) || ++tries >= 3)
			return false;
	}
	long long id = 0;
	char *finished = complete ? hist_now_utc() : NULL;
	bool ok = write_row(h, r, complete, finished, &id, err) && write_parts(h, r, id, err) &&
		  hist_exec(h, "COMMIT", err);
	free(finished);
	if (!ok) {
		sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
		return false;
	}
	free(*err);
	*err = NULL;
	r->id = id;
	free_samples(r);
	if (id_out)
		*id_out = id;
	return true;
}

bool history_run_flush(history *h, hist_run *r, char **err)
{
	char *e = NULL;
	bool ok = r && write_run(h, r, false, NULL, &e);
	if (!ok && err)
		*err = e ? e : xstrdup("no run to flush");
	else
		free(e);
	return ok;
}

bool history_run_finish(history *h, hist_run *r, long long *id_out, char **err)
{
	char *e = NULL;
	bool ok = r && write_run(h, r, true, id_out, &e);
	if (!ok && err)
		*err = e ? e : xstrdup("no run to finish");
	else
		free(e);
	history_run_discard(r);
	return ok;
}
