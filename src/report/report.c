#include "report/report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/report.h"
#include "core/util.h"
#include "report/chart.h"
#include "report/html.h"
#include "report/runstream.h"
#include "rules/rules.h"
#include "store/history_export.h"
#include "tune/tune_advice.h"

/* ------------------------------------------------------------------ the model */

/* The recorded metrics the page draws (section_watch); samples of others are counted, not kept. */
static const struct {
	const char *metric, *title, *unit;
	double scale;
} watch_metrics[] = {
	{"utilization_gpu", "GPU utilization", "%", 1},
	{"memory_used_bytes", "memory used", "GiB", 1.0 / (1024.0 * 1024 * 1024)},
	{"temperature_c", "temperature", "°C", 1},
	{"power_w", "power", "W", 1},
	{"sm_clock_mhz", "SM clock", "MHz", 1},
};

typedef struct report_sample {
	double t, value;
	int gpu;
	unsigned metric; /* index in watch_metrics */
} report_sample;

typedef struct report_run {
	cJSON *run;        /* a gpuvet.history/1 run object, owned */
	double t;          /* start, Unix seconds; NAN when unknown */
	size_t order;      /* input order, to keep runs of unknown time stable */
	const cJSON *tune; /* the gpuvet.tune/1 document it came from (in d->docs), or NULL */
	report_sample *samples; /* the drawn metrics' samples, SAMPLES_MAX at most */
	size_t nsamples, capsamples;
	size_t samples_seen; /* every sample of the run, drawn or not */
	char *source;
} report_run;

struct report_data {
	/* the newest REPORT_RUNS_MAX runs read: slots that never move (a pointer to a run stays
	 * valid while the run is kept), and a heap of slot numbers with the oldest kept run on top,
	 * the one a newer run replaces */
	report_run *runs;
	size_t n;
	size_t *heap;
	size_t next_order;
	/* every run read, kept or not: what the page counts */
	size_t seen, seen_kind[HIST_KIND_LAST + 1];
	cJSON *docs; /* documents that runs point into */
	char *history_unread; /* why the history was not read (the page is made without it), or NULL */
};

/* A recording longer than this is drawn from every k-th sample: the page stays small. */
#define SAMPLES_PER_SERIES 600
/* Samples kept per run at most (a day at 1 Hz on 8 GPUs with the 5 drawn metrics is 3.5 M). */
#define SAMPLES_MAX 2000000
/* The watch runs drawn (the newest that have samples): the history's samples are read for these. */
#define WATCH_RUNS_MAX 3

report_data *report_data_new(void)
{
	report_data *d = xcalloc(1, sizeof(*d));
	d->docs = cJSON_CreateArray();
	return d;
}

static void run_free(report_run *r)
{
	cJSON_Delete(r->run);
	free(r->samples);
	free(r->source);
	memset(r, 0, sizeof(*r));
}

void report_data_free(report_data *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		run_free(&d->runs[i]);
	free(d->runs);
	free(d->heap);
	cJSON_Delete(d->docs);
	free(d->history_unread);
	free(d);
}

void report_history_unread(report_data *d, const char *why)
{
	free(d->history_unread);
	d->history_unread = xstrdup(why);
}

size_t report_run_count(const report_data *d)
{
	return d->n;
}

size_t report_runs_read(const report_data *d)
{
	return d->seen;
}

/* "2026-11-29T10:15:03.120Z" as Unix seconds; NAN when it is not such a time. */
static double parse_utc(const char *s)
{
	if (!s)
		return NAN;
	struct tm tm = {0};
	double frac = 0;
	int n = 0;
	if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
		   &tm.tm_sec, &n) != 6)
		return NAN;
	if (s[n] == '.')
		frac = strtod(s + n, NULL);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (double)timegm(&tm) + frac;
}

/* A time of a document for people; one that is no time (missing, NaN, 1e300) says so. */
static void utc_text(char *buf, size_t size, double t)
{
	long long secs;
	struct tm tm;
	time_t s;
	if (!seconds_to_time(t, &secs) || (s = (time_t)secs, !gmtime_r(&s, &tm)) ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		str_copy(buf, size, "unknown time");
}

/* A time read from a document: NaN unless it is one (seconds_to_time). */
static double doc_time(double t)
{
	long long secs;
	return seconds_to_time(t, &secs) ? t : NAN;
}

/* A GPU index read from a document: -1 unless it is one. */
static int doc_gpu(double g)
{
	long long v;
	return double_to_int(g, 0, 65535, &v) ? (int)v : -1;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(x) ? x->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int cmp_runs(const void *a, const void *b);

/* x older than y: the order the page draws runs in (cmp_runs). */
static bool older(const report_data *d, size_t x, size_t y)
{
	const report_run *rx = &d->runs[x], *ry = &d->runs[y];
	return cmp_runs(&rx, &ry) < 0;
}

static void heap_down(report_data *d, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < d->n && older(d, d->heap[l], d->heap[m]))
			m = l;
		if (r < d->n && older(d, d->heap[r], d->heap[m]))
			m = r;
		if (m == i)
			return;
		size_t t = d->heap[i];
		d->heap[i] = d->heap[m];
		d->heap[m] = t;
		i = m;
	}
}

static void heap_up(report_data *d, size_t i)
{
	while (i > 0 && older(d, d->heap[i], d->heap[(i - 1) / 2])) {
		size_t p = (i - 1) / 2, t = d->heap[i];
		d->heap[i] = d->heap[p];
		d->heap[p] = t;
		i = p;
	}
}

/* Counts a run read (every run counts, kept or not). */
static void count_run(report_data *d, const cJSON *run)
{
	hist_kind k;
	d->seen++;
	if (hist_kind_parse(jstr(run, "kind"), &k))
		d->seen_kind[k]++;
}

/* Keeps run (owned) among the newest REPORT_RUNS_MAX, as input number order; returns its slot,
 * or NULL when it is older than every run kept and so left out (run is freed then). */
static report_run *keep_run(report_data *d, cJSON *run, const char *source, size_t order)
{
	report_run cand = {.run = run, .t = parse_utc(jstr(run, "started_utc")), .order = order};
	size_t slot;
	if (d->n < REPORT_RUNS_MAX) {
		if (!d->runs) {
			d->runs = xcalloc(REPORT_RUNS_MAX, sizeof(*d->runs));
			d->heap = xcalloc(REPORT_RUNS_MAX, sizeof(*d->heap));
		}
		slot = d->n;
		d->runs[slot] = cand;
		d->heap[d->n++] = slot;
		heap_up(d, d->n - 1);
	} else {
		const report_run *c = &cand, *oldest = &d->runs[d->heap[0]];
		if (cmp_runs(&c, &oldest) <= 0) {
			cJSON_Delete(run);
			return NULL;
		}
		slot = d->heap[0];
		run_free(&d->runs[slot]);
		d->runs[slot] = cand;
		heap_down(d, 0);
	}
	d->runs[slot].source = xstrdup(source);
	return &d->runs[slot];
}

/* After r's time changed: back to its place in the heap. */
static void reorder_run(report_data *d, const report_run *r)
{
	size_t slot = (size_t)(r - d->runs);
	for (size_t i = 0; i < d->n; i++)
		if (d->heap[i] == slot) {
			heap_up(d, i);
			heap_down(d, i);
			return;
		}
}

/* A run read now: counted, and kept while it is among the newest. */
static report_run *add_run(report_data *d, cJSON *run, const char *source)
{
	count_run(d, run);
	return keep_run(d, run, source, d->next_order++);
}

void report_add_run(report_data *d, const char *name, cJSON *run)
{
	add_run(d, run, name);
}

static void add_sample(report_run *r, double t, int gpu, const char *metric, double v)
{
	if (!metric)
		return;
	r->samples_seen++;
	size_t m = 0;
	while (m < GV_ARRAY_LEN(watch_metrics) && strcmp(watch_metrics[m].metric, metric) != 0)
		m++;
	if (m == GV_ARRAY_LEN(watch_metrics) || r->nsamples >= SAMPLES_MAX)
		return;
	if (r->nsamples == r->capsamples) {
		r->capsamples = r->capsamples ? 2 * r->capsamples : 256;
		r->samples = xrealloc(r->samples, r->capsamples * sizeof(*r->samples));
	}
	r->samples[r->nsamples++] = (report_sample){.t = t, .value = v, .gpu = gpu, .metric = (unsigned)m};
}

static bool sample_cb(void *ctx, double t, int gpu, const char *metric, double value)
{
	add_sample(ctx, t, gpu, metric, value);
	return ((report_run *)ctx)->nsamples < SAMPLES_MAX;
}

typedef struct history_ctx {
	report_data *d;
	history *h;
	size_t want, got;   /* runs to read, newest first, and read so far */
	size_t first_order; /* the input number of the oldest of them */
	size_t watch_loaded;
	char **err;
	bool failed;
} history_ctx;

static bool history_run(void *ctx, hist_run_row *row)
{
	history_ctx *c = ctx;
	if (c->got >= c->want) /* a run stored since they were counted */
		return false;
	/* the store gives the newest first; the page numbers them oldest first, as if read in time order */
	size_t order = c->first_order + (c->want - 1 - c->got++);
	report_run *r = keep_run(c->d, history_run_json(row), history_path(c->h), order);
	/* only the recordings the page draws have their samples read: a history of long recordings
	 * would otherwise be read whole */
	if (r && row->kind == HIST_WATCH && row->nsamples > 0 && c->watch_loaded < WATCH_RUNS_MAX) {
		c->watch_loaded++;
		if (!history_samples(c->h, row->id, sample_cb, r, c->err)) {
			c->failed = true;
			return false;
		}
		r->samples_seen = (size_t)row->nsamples;
	} else if (r) {
		r->samples_seen = (size_t)row->nsamples;
	}
	return true;
}

bool report_add_history(report_data *d, history *h, long long limit, char **err)
{
	hist_query q = {.any_kind = true, .limit = limit};
	long long counts[HIST_KIND_LAST + 1];
	if (!history_count(h, &q, counts, err))
		return false;
	size_t total = 0;
	for (int k = 0; k <= HIST_KIND_LAST; k++) {
		total += (size_t)counts[k];
		d->seen_kind[k] += (size_t)counts[k];
	}
	d->seen += total;
	/* the counts are of every run asked for; the runs themselves, the newest the page keeps */
	history_ctx c = {.d = d, .h = h, .want = total < REPORT_RUNS_MAX ? total : REPORT_RUNS_MAX,
			 .first_order = d->next_order, .err = err};
	d->next_order += c.want;
	if (!c.want)
		return true;
	q.limit = (long long)c.want;
	return history_each(h, &q, history_run, &c, err) && !c.failed;
}

/* A run object with the history's fields, empty. */
static cJSON *new_run(const char *kind, const char *started_utc)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNullToObject(o, "id");
	cJSON_AddStringToObject(o, "kind", kind);
	if (started_utc)
		cJSON_AddStringToObject(o, "started_utc", started_utc);
	else
		cJSON_AddNullToObject(o, "started_utc");
	cJSON_AddBoolToObject(o, "complete", true);
	cJSON_AddObjectToObject(o, "meta");
	cJSON_AddArrayToObject(o, "gpus");
	cJSON_AddArrayToObject(o, "results");
	cJSON_AddArrayToObject(o, "findings");
	return o;
}

static void add_result(cJSON *run, const char *name, double v, const char *unit, const char *better)
{
	cJSON *r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "name", name);
	cJSON_AddNumberToObject(r, "gpu", -1);
	cJSON_AddNumberToObject(r, "value", v);
	cJSON_AddStringToObject(r, "unit", unit);
	cJSON_AddStringToObject(r, "better", better);
	cJSON_AddItemToArray(cJSON_GetObjectItem(run, "results"), r);
}

static void copy_findings(cJSON *run, const cJSON *doc)
{
	const cJSON *fs = jget(doc, "findings");
	if (cJSON_IsArray(fs))
		cJSON_ReplaceItemInObject(run, "findings", cJSON_Duplicate(fs, true));
}

/* A fact's value from a check document's facts (grouped by layer), as text. */
static const char *check_fact(const cJSON *doc, const char *layer, const char *key)
{
	const cJSON *f = jget(jget(jget(doc, "facts"), layer), key);
	return jstr(f, "value");
}

static void from_check(cJSON *run, const cJSON *doc)
{
	copy_findings(run, doc);
	cJSON *meta = cJSON_GetObjectItem(run, "meta");
	static const char *const pairs[][3] = {
		{"driver", "nvml", "driver_version"},     {"cuda.driver", "nvml", "cuda_version"},
		{"kernel", "hardware", "kernel_release"}, {"python", "python", "version"},
		{"torch", "python", "torch.version"},     {"torch.cuda", "python", "torch.cuda"},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(pairs); i++) {
		const char *v = check_fact(doc, pairs[i][1], pairs[i][2]);
		if (v)
			cJSON_AddStringToObject(meta, pairs[i][0], v);
	}
	const cJSON *nv = jget(jget(doc, "facts"), "nvml");
	double count = jnum(jget(nv, "device_count"), "value");
	cJSON *gpus = cJSON_GetObjectItem(run, "gpus");
	for (int i = 0; isfinite(count) && i < count && i < 1024; i++) {
		char key[64];
		snprintf(key, sizeof(key), "gpu.%d.name", i);
		const char *name = jstr(jget(nv, key), "value");
		snprintf(key, sizeof(key), "gpu.%d.uuid", i);
		const char *uuid = jstr(jget(nv, key), "value");
		snprintf(key, sizeof(key), "gpu.%d.pci_bus_id", i);
		const char *bus = jstr(jget(nv, key), "value");
		cJSON *g = cJSON_CreateObject();
		cJSON_AddNumberToObject(g, "index", i);
		if (name)
			cJSON_AddStringToObject(g, "name", name);
		if (uuid)
			cJSON_AddStringToObject(g, "uuid", uuid);
		if (bus)
			cJSON_AddStringToObject(g, "bus_id", bus);
		cJSON_AddItemToArray(gpus, g);
	}
	const cJSON *sum = jget(doc, "summary");
	static const char *const sev[] = {"fail", "warn", "info"};
	for (size_t i = 0; i < GV_ARRAY_LEN(sev); i++) {
		double v = jnum(sum, sev[i]);
		if (isfinite(v)) {
			char name[32];
			snprintf(name, sizeof(name), "findings.%s", sev[i]);
			add_result(run, name, v, "", i < 2 ? "lower" : "neutral");
		}
	}
}

static void from_bench(cJSON *run, const cJSON *doc)
{
	copy_findings(run, doc);
	cJSON *results = cJSON_GetObjectItem(run, "results");
	const cJSON *f;
	cJSON_ArrayForEach(f, jget(doc, "figures"))
	{
		const char *id = jstr(f, "id");
		double v = jnum(f, "value");
		if (!id || cJSON_IsTrue(jget(f, "skipped")) || !isfinite(v))
			continue;
		long long size = 0;
		if (!double_to_int(jnum(f, "size"), 0, 1LL << 40, &size))
			size = 0;
		char *name = report_result_name(id, size);
		cJSON *r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "name", name);
		free(name);
		double gpu = jnum(f, "gpu");
		cJSON_AddNumberToObject(r, "gpu", doc_gpu(gpu));
		cJSON_AddNumberToObject(r, "value", v);
		const char *unit = jstr(f, "unit");
		cJSON_AddStringToObject(r, "unit", unit ? unit : "");
		cJSON_AddStringToObject(r, "better", cJSON_IsTrue(jget(f, "lower_is_better")) ? "lower" : "higher");
		static const char *const nums[] = {"min", "max", "repeats"};
		for (size_t i = 0; i < GV_ARRAY_LEN(nums); i++)
			if (isfinite(jnum(f, nums[i])))
				cJSON_AddNumberToObject(r, nums[i], jnum(f, nums[i]));
		cJSON *p = cJSON_AddObjectToObject(r, "params");
		static const char *const pnums[] = {"size", "peak", "pct_peak", "sm_clock_mhz"};
		for (size_t i = 0; i < GV_ARRAY_LEN(pnums); i++)
			if (isfinite(jnum(f, pnums[i])) && jnum(f, pnums[i]) > 0)
				cJSON_AddNumberToObject(p, pnums[i], jnum(f, pnums[i]));
		const cJSON *ver = jget(f, "verified");
		if (cJSON_IsBool(ver))
			cJSON_AddBoolToObject(p, "verified", cJSON_IsTrue(ver));
		/* the document's words, which a history row does not keep */
		if (jstr(f, "title"))
			cJSON_AddStringToObject(r, "title", jstr(f, "title"));
		if (jstr(f, "note"))
			cJSON_AddStringToObject(r, "note", jstr(f, "note"));
		cJSON_AddItemToArray(results, r);
	}
}

/* A gpuvet.diag/1 document as a run of the history's shape: its GPUs (by NVML index), every
 * figure as a result "diag.METRIC" with its GPU and its status in params, its findings. */
static void from_diag(cJSON *run, const cJSON *doc)
{
	copy_findings(run, doc);
	if (jstr(doc, "host"))
		cJSON_AddStringToObject(run, "host", jstr(doc, "host"));
	cJSON *meta = cJSON_GetObjectItem(run, "meta");
	if (jstr(doc, "driver"))
		cJSON_AddStringToObject(meta, "driver", jstr(doc, "driver"));
	double level = jnum(doc, "level");
	if (isfinite(level)) {
		char lv[16];
		snprintf(lv, sizeof(lv), "%d", (int)level);
		cJSON_AddStringToObject(meta, "level", lv);
	}
	cJSON *gpus = cJSON_GetObjectItem(run, "gpus"), *results = cJSON_GetObjectItem(run, "results");
	const cJSON *g;
	cJSON_ArrayForEach(g, jget(doc, "gpus"))
	{
		double idx = jnum(g, "nvml_index");
		if (!isfinite(idx))
			idx = jnum(g, "index");
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "index", isfinite(idx) ? idx : -1);
		static const char *const keys[][2] = {{"name", "name"}, {"uuid", "uuid"}, {"pci_bus_id", "bus_id"}, {"serial", "serial"}};
		for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++)
			if (jstr(g, keys[k][0]))
				cJSON_AddStringToObject(o, keys[k][1], jstr(g, keys[k][0]));
		cJSON_AddItemToArray(gpus, o);
		const cJSON *x;
		cJSON_ArrayForEach(x, jget(g, "results"))
		{
			const char *metric = jstr(x, "metric");
			if (!metric || !isfinite(jnum(x, "value")))
				continue;
			char name[96];
			snprintf(name, sizeof(name), "diag.%s", metric);
			cJSON *r = cJSON_CreateObject();
			cJSON_AddStringToObject(r, "name", name);
			cJSON_AddNumberToObject(r, "gpu", isfinite(idx) ? idx : -1);
			cJSON_AddNumberToObject(r, "value", jnum(x, "value"));
			cJSON_AddStringToObject(r, "unit", jstr(x, "unit") ? jstr(x, "unit") : "");
			cJSON *pa = cJSON_AddObjectToObject(r, "params");
			cJSON_AddStringToObject(pa, "status", jstr(x, "status") ? jstr(x, "status") : "");
			cJSON_AddStringToObject(pa, "test", jstr(x, "test") ? jstr(x, "test") : "");
			cJSON_AddItemToArray(results, r);
		}
	}
}

static void from_tune(cJSON *run, const cJSON *doc)
{
	cJSON *meta = cJSON_GetObjectItem(run, "meta");
	const cJSON *env = jget(doc, "env");
	static const char *const pairs[][2] = {{"torch", "torch"}, {"torch.cuda", "torch_cuda"}, {"python", "python"},
					       {"cudnn", "cudnn"},  {"cpu", "cpu"}};
	for (size_t i = 0; i < GV_ARRAY_LEN(pairs); i++)
		if (jstr(env, pairs[i][1]))
			cJSON_AddStringToObject(meta, pairs[i][0], jstr(env, pairs[i][1]));
	if (jstr(env, "gpu_name")) {
		cJSON *g = cJSON_CreateObject();
		cJSON_AddNumberToObject(g, "index", 0);
		cJSON_AddStringToObject(g, "name", jstr(env, "gpu_name"));
		if (jstr(env, "gpu_uuid"))
			cJSON_AddStringToObject(g, "uuid", jstr(env, "gpu_uuid"));
		cJSON_AddItemToArray(cJSON_GetObjectItem(run, "gpus"), g);
	}
}

static report_run *find_run_id(report_data *d, double id)
{
	for (size_t i = 0; i < d->n; i++)
		if (jnum(d->runs[i].run, "id") == id)
			return &d->runs[i];
	return NULL;
}

bool report_add_document(report_data *d, const char *name, const char *text, size_t len, char **err)
{
	cJSON *doc = cJSON_ParseWithLength(text, len);
	if (!doc || !cJSON_IsObject(doc)) {
		*err = xasprintf("%s: not a JSON document", name);
		cJSON_Delete(doc);
		return false;
	}
	const char *schema = jstr(doc, "schema");
	if (!schema) {
		*err = xasprintf("%s: no \"schema\" key: not a gpuvet document", name);
		cJSON_Delete(doc);
		return false;
	}
	if (strcmp(schema, "gpuvet.history/1") == 0) {
		cJSON *runs = cJSON_DetachItemFromObject(doc, "runs");
		cJSON *r;
		while (runs && (r = cJSON_DetachItemFromArray(runs, 0)))
			if (cJSON_IsObject(r))
				add_run(d, r, name);
			else
				cJSON_Delete(r);
		cJSON_Delete(runs);
		cJSON_Delete(doc);
		/* the export is newest first, like list */
		return true;
	}
	if (strcmp(schema, "gpuvet.history.samples/1") == 0) {
		double id = jnum(doc, "run_id");
		report_run *r = isfinite(id) ? find_run_id(d, id) : NULL;
		if (!r) /* a recording of its own: of unknown time until its samples say, so kept */
			r = add_run(d, new_run("watch", NULL), name);
		if (!r) {
			cJSON_Delete(doc);
			return true;
		}
		const cJSON *s;
		double first = NAN;
		bool any = false;
		cJSON_ArrayForEach(s, jget(doc, "samples"))
		{
			double t = doc_time(jnum(s, "t"));
			if (!any && jstr(s, "metric")) {
				any = true;
				first = t;
			}
			add_sample(r, t, doc_gpu(jnum(s, "gpu")), jstr(s, "metric"), jnum(s, "value"));
		}
		if (!isfinite(r->t) && any) {
			char b[40];
			utc_text(b, sizeof(b), first); /* "unknown time" when the first sample has none */
			cJSON_ReplaceItemInObject(r->run, "started_utc", cJSON_CreateString(b));
			r->t = first;
			reorder_run(d, r); /* its time moves it among the kept runs */
		}
		cJSON_Delete(doc);
		return true;
	}
	cJSON *run;
	if (strcmp(schema, "gpuvet.check/1") == 0) {
		run = new_run("check", NULL);
		from_check(run, doc);
	} else if (strcmp(schema, "gpuvet.bench/1") == 0) {
		char b[40] = "";
		if (isfinite(doc_time(jnum(doc, "started"))))
			utc_text(b, sizeof(b), jnum(doc, "started"));
		run = new_run("bench", b[0] ? b : NULL);
		from_bench(run, doc);
	} else if (strcmp(schema, "gpuvet.tune/1") == 0) {
		run = new_run("tune", jstr(doc, "started"));
		from_tune(run, doc);
	} else if (strcmp(schema, "gpuvet.diag/1") == 0) {
		run = new_run("diag", jstr(doc, "started"));
		from_diag(run, doc);
	} else {
		*err = xasprintf("%s: schema %s is not one gpuvet report reads (check, bench, tune, diag, history, "
				 "history samples)",
				 name, schema);
		cJSON_Delete(doc);
		return false;
	}
	report_run *r = add_run(d, run, name);
	if (r && strcmp(schema, "gpuvet.tune/1") == 0) {
		cJSON_AddItemToArray(d->docs, doc);
		r->tune = doc;
	} else {
		cJSON_Delete(doc);
	}
	return true;
}

bool report_add_file(report_data *d, const char *name, FILE *in, size_t max, char **err)
{
	runstream *rs = runstream_open(in, name);
	bool ok;
	if (runstream_is_history(rs)) {
		/* an export of any size: run by run, each counted, the newest kept */
		char *e = NULL;
		cJSON *run;
		while ((run = runstream_next(rs, &e)))
			add_run(d, run, name);
		ok = !e;
		if (e)
			*err = e;
	} else {
		size_t len = 0;
		char *text = runstream_slurp(rs, max, &len, err);
		ok = text && report_add_document(d, name, text, len, err);
		free(text);
	}
	runstream_close(rs);
	return ok;
}

/* ------------------------------------------------------------------ helpers */

static int cmp_runs(const void *a, const void *b)
{
	const report_run *x = *(const report_run *const *)a, *y = *(const report_run *const *)b;
	/* runs of unknown time count as the newest, in input order */
	bool kx = isfinite(x->t), ky = isfinite(y->t);
	if (kx && ky && x->t != y->t)
		return x->t < y->t ? -1 : 1;
	if (kx != ky)
		return kx ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Runs of kind (NULL: all) oldest first; *n gets the count. Free the array. */
static const report_run **runs_of(const report_data *d, const char *kind, size_t *n)
{
	const report_run **v = xcalloc(d->n + 1, sizeof(*v));
	*n = 0;
	for (size_t i = 0; i < d->n; i++)
		if (!kind || strcmp(jstr(d->runs[i].run, "kind") ? jstr(d->runs[i].run, "kind") : "", kind) == 0)
			v[(*n)++] = &d->runs[i];
	qsort(v, *n, sizeof(*v), cmp_runs);
	return v;
}

static const report_run *latest(const report_data *d, const char *kind)
{
	size_t n;
	const report_run **v = runs_of(d, kind, &n);
	const report_run *r = n ? v[n - 1] : NULL;
	free(v);
	return r;
}

static void run_when(FILE *out, const report_run *r)
{
	const char *s = jstr(r->run, "started_utc");
	html_text(out, s ? s : "time unknown");
	fputs(" · ", out);
	html_text(out, r->source);
	if (isfinite(jnum(r->run, "id")))
		fprintf(out, " run %.0f", jnum(r->run, "id"));
}

static const char *severity_class(const char *sev)
{
	return sev && strcmp(sev, "fail") == 0 ? "fail" : sev && strcmp(sev, "warn") == 0 ? "warn" : "info";
}

/* A run's findings as a list under a heading of the given level. */
static void verdicts(FILE *out, const cJSON *run, int level)
{
	const cJSON *fs = jget(run, "findings"), *f;
	if (!cJSON_GetArraySize(fs))
		return;
	fprintf(out, "<h%d>Verdicts</h%d><ul>\n", level, level);
	cJSON_ArrayForEach(f, fs)
	{
		fprintf(out, "<li class=\"%s\"><code>", severity_class(jstr(f, "severity")));
		html_text(out, jstr(f, "id"));
		fputs("</code> ", out);
		html_text(out, jstr(f, "title"));
		fputs("</li>\n", out);
	}
	fputs("</ul>\n", out);
}


/* ------------------------------------------------------------------ sections */

static void section_machine(FILE *out, const report_data *d)
{
	fputs("<section id=\"machine\"><h2>Machine</h2>\n", out);
	const report_run *r = latest(d, NULL);
	if (!r && d->history_unread) {
		fputs("<p class=\"empty\">nothing to show: the history could not be read (above)</p></section>\n", out);
		return;
	}
	if (!r) {
		fputs("<p class=\"empty\">nothing recorded yet: run <code>gpuvet check</code>, <code>gpuvet bench</code> or "
		      "<code>gpuvet tune</code>, or give <code>--json</code> documents</p></section>\n",
		      out);
		return;
	}
	fputs("<dl class=\"facts\">", out);
	if (jstr(r->run, "host")) {
		fputs("<dt>host</dt><dd>", out);
		html_text(out, jstr(r->run, "host"));
		fputs("</dd>", out);
	}
	/* GPUs from the newest run that names them */
	size_t n;
	const report_run **v = runs_of(d, NULL, &n);
	for (size_t i = n; i-- > 0;) {
		const cJSON *gpus = jget(v[i]->run, "gpus");
		if (cJSON_GetArraySize(gpus) == 0)
			continue;
		const cJSON *g;
		cJSON_ArrayForEach(g, gpus)
		{
			fprintf(out, "<dt>GPU %.0f</dt><dd>", jnum(g, "index"));
			html_text(out, jstr(g, "name") ? jstr(g, "name") : "(name unknown)");
			if (jstr(g, "bus_id")) {
				fputs(" · ", out);
				html_text(out, jstr(g, "bus_id"));
			}
			if (jstr(g, "uuid")) {
				fputs(" · <span class=\"dim\">", out);
				html_text(out, jstr(g, "uuid"));
				fputs("</span>", out);
			}
			fputs("</dd>", out);
		}
		break;
	}
	static const char *const keys[][2] = {{"driver", "driver"},	    {"cuda.driver", "CUDA (driver)"},
					      {"cuda.runtime", "CUDA (runtime)"}, {"torch", "PyTorch"},
					      {"torch.cuda", "PyTorch's CUDA"},   {"cudnn", "cuDNN"},
					      {"nccl", "NCCL"},		    {"python", "Python"},
					      {"kernel", "kernel"},		    {"cpu", "CPU"}};
	for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++) {
		/* the newest run that knows it */
		for (size_t i = n; i-- > 0;) {
			const char *val = jstr(jget(v[i]->run, "meta"), keys[k][0]);
			if (!val)
				continue;
			fprintf(out, "<dt>%s</dt><dd>", keys[k][1]);
			html_text(out, val);
			fputs("</dd>", out);
			break;
		}
	}
	fputs("</dl>\n", out);
	/* every run read counts, also those older than the runs kept */
	fprintf(out, "<p class=\"dim\">%zu run%s read: ", d->seen, d->seen == 1 ? "" : "s");
	for (int k = 0; k <= HIST_KIND_LAST; k++)
		fprintf(out, "%s%zu %s", k ? ", " : "", d->seen_kind[k], hist_kind_name((hist_kind)k));
	if (d->seen > d->n)
		fprintf(out, "; the newest %zu are drawn", d->n);
	fputs("</p></section>\n", out);
	free(v);
}

static const char *finding_layer(const cJSON *f)
{
	const char *l = jstr(f, "layer");
	if (l)
		return l;
	const rule *r = jstr(f, "id") ? rules_find(jstr(f, "id")) : NULL;
	return r ? r->layer : "other";
}

static void string_lines(FILE *out, const cJSON *arr, const char *tag, const char *cls)
{
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
	{
		if (!cJSON_IsString(x))
			continue;
		fprintf(out, "<%s class=\"%s\">", tag, cls);
		html_text(out, x->valuestring);
		fprintf(out, "</%s>\n", tag);
	}
}

static int cmp_layer_names(const void *a, const void *b)
{
	return layer_order(*(const char *const *)a) - layer_order(*(const char *const *)b);
}

static void section_check(FILE *out, const report_data *d)
{
	fputs("<section id=\"check\"><h2>Diagnosis</h2>\n", out);
	const report_run *r = latest(d, "check");
	if (!r) {
		fputs("<p class=\"empty\">no check run recorded: <code>gpuvet check</code> stores one</p></section>\n", out);
		return;
	}
	const cJSON *fs = jget(r->run, "findings");
	int counts[3] = {0, 0, 0};
	const cJSON *f;
	cJSON_ArrayForEach(f, fs)
	{
		const char *c = severity_class(jstr(f, "severity"));
		counts[c[0] == 'f' ? 0 : c[0] == 'w' ? 1 : 2]++;
	}
	const char *verdict = counts[0] ? "fail" : counts[1] ? "warn" : "ok";
	fprintf(out, "<p class=\"verdict %s\"><strong>%s</strong> · %d fail, %d warn, %d info <span class=\"dim\">(",
		verdict, counts[0] ? "FAIL" : counts[1] ? "WARN" : "OK", counts[0], counts[1], counts[2]);
	run_when(out, r);
	fputs(")</span></p>\n", out);
	/* layers in display order */
	const char *layers[64];
	size_t nl = 0;
	cJSON_ArrayForEach(f, fs)
	{
		const char *l = finding_layer(f);
		bool seen = false;
		for (size_t i = 0; i < nl; i++)
			seen |= strcmp(layers[i], l) == 0;
		if (!seen && nl < GV_ARRAY_LEN(layers))
			layers[nl++] = l;
	}
	qsort(layers, nl, sizeof(layers[0]), cmp_layer_names);
	for (size_t l = 0; l < nl; l++) {
		fputs("<h3>", out);
		html_text(out, layer_title(layers[l]));
		fputs("</h3>\n", out);
		/* severity order inside a layer, as the findings came otherwise */
		static const char *const order[] = {"fail", "warn", "info"};
		for (size_t s = 0; s < GV_ARRAY_LEN(order); s++)
			cJSON_ArrayForEach(f, fs)
			{
				if (strcmp(finding_layer(f), layers[l]) != 0 || strcmp(severity_class(jstr(f, "severity")), order[s]) != 0)
					continue;
				fprintf(out, "<article class=\"finding %s\"><h4><span class=\"sev\">%s</span> ", order[s], order[s]);
				fputs("<code class=\"id\">", out);
				html_text(out, jstr(f, "id"));
				fputs("</code> ", out);
				html_text(out, jstr(f, "title"));
				fputs("</h4>\n", out);
				const cJSON *ev = jget(f, "evidence"), *fix = jget(f, "fix");
				if (cJSON_GetArraySize(ev)) {
					fputs("<ul class=\"evidence\">\n", out);
					string_lines(out, ev, "li", "ev");
					fputs("</ul>\n", out);
				}
				if (cJSON_GetArraySize(fix)) {
					fputs("<p class=\"label\">fix</p><pre class=\"fix\">", out);
					const cJSON *x;
					cJSON_ArrayForEach(x, fix)
					{
						if (!cJSON_IsString(x))
							continue;
						html_text(out, x->valuestring);
						fputc('\n', out);
					}
					fputs("</pre>\n", out);
				}
				fputs("</article>\n", out);
			}
	}
	if (!nl)
		fputs("<p>no finding: every layer checked out</p>\n", out);
	fputs("</section>\n", out);
}

static const char *result_group(const cJSON *res, char *buf, size_t size)
{
	const char *name = jstr(res, "name");
	str_copy(buf, size, name ? name : "");
	char *dot = strchr(buf, '.');
	if (dot)
		*dot = '\0';
	return buf;
}

static void value_text(char *buf, size_t size, const cJSON *res)
{
	char num[64];
	const char *unit = jstr(res, "unit");
	snprintf(buf, size, "%s%s%s", fmt_number(num, sizeof(num), jnum(res, "value")), unit && *unit ? " " : "",
		 unit ? unit : "");
}

static void result_label(char *buf, size_t size, const cJSON *res)
{
	const char *title = jstr(res, "title") ? jstr(res, "title") : jstr(jget(res, "params"), "title");
	double gpu = jnum(res, "gpu");
	if (title)
		snprintf(buf, size, "%s", title);
	else
		snprintf(buf, size, "%s", jstr(res, "name") ? jstr(res, "name") : "?");
	if (isfinite(gpu) && gpu >= 0) {
		size_t l = strlen(buf);
		snprintf(buf + l, size - l, " (GPU %.0f)", gpu);
	}
}

static void section_bench(FILE *out, const report_data *d)
{
	fputs("<section id=\"bench\"><h2>Benchmarks against the hardware's peaks</h2>\n", out);
	const report_run *r = latest(d, "bench");
	if (!r) {
		fputs("<p class=\"empty\">no bench run recorded: <code>gpuvet bench</code> stores one</p></section>\n", out);
		return;
	}
	fputs("<p class=\"dim\">", out);
	run_when(out, r);
	fputs("</p>\n", out);
	const cJSON *results = jget(r->run, "results");
	const char *title, *group;
	bool any = false;
	for (size_t gi = 0; (group = report_group_at(gi, &title)); gi++) {
		size_t nb = 0, cap = (size_t)cJSON_GetArraySize(results) + 1;
		chart_bar *bars = xcalloc(cap, sizeof(*bars));
		char (*labels)[160] = xcalloc(cap, sizeof(*labels));
		char (*values)[96] = xcalloc(cap, sizeof(*values));
		const cJSON *x;
		cJSON_ArrayForEach(x, results)
		{
			char g[64];
			if (strcmp(result_group(x, g, sizeof(g)), group) != 0)
				continue;
			result_label(labels[nb], sizeof(labels[nb]), x);
			value_text(values[nb], sizeof(values[nb]), x);
			const cJSON *p = jget(x, "params");
			bars[nb] = (chart_bar){labels[nb], values[nb], jnum(p, "pct_peak"), cJSON_IsFalse(jget(p, "verified"))};
			nb++;
		}
		if (nb) {
			any = true;
			fprintf(out, "<h3 id=\"bench-%s\">", group);
			html_text(out, title);
			fputs("</h3>\n", out);
			bool pct = false;
			for (size_t i = 0; i < nb; i++)
				pct |= isfinite(bars[i].pct);
			if (pct) {
				chart_bars(out, title, bars, nb);
			} else {
				fputs("<table class=\"figures\"><tr><th>figure</th><th>value</th></tr>\n", out);
				for (size_t i = 0; i < nb; i++) {
					fprintf(out, "<tr%s><td>", bars[i].bad ? " class=\"bad\"" : "");
					html_text(out, labels[i]);
					fputs("</td><td class=\"num\">", out);
					html_text(out, values[i]);
					fputs("</td></tr>\n", out);
				}
				fputs("</table>\n", out);
			}
			for (size_t i = 0; i < nb; i++)
				if (bars[i].bad) {
					fputs("<p class=\"fail\">result not verified: ", out);
					html_text(out, labels[i]);
					fputs("</p>\n", out);
				}
		}
		free(bars);
		free(labels);
		free(values);
	}
	if (!any)
		fputs("<p class=\"empty\">the run measured nothing (no GPU, or every figure was skipped)</p>\n", out);
	verdicts(out, r->run, 3);
	fputs("</section>\n", out);
}

/* ------------------------------------------------------------------ history */

/* A series: one result name on one GPU across runs of a kind. */
typedef struct trend {
	char name[160];
	char label[200]; /* the figure's title where the run kept it, else the name */
	int gpu;
	char unit[32];
	int better; /* 1 higher, -1 lower, 0 neutral */
	chart_point *pts;
	double *spread; /* each point's spread over its repeats in % (hist_spread_pct), NAN unknown */
	char **tips;
	size_t n;
} trend;

static int better_of(const cJSON *res)
{
	const char *b = jstr(res, "better");
	return b && strcmp(b, "higher") == 0 ? 1 : b && strcmp(b, "lower") == 0 ? -1 : 0;
}

/* The figures worth a trend line first: the headline ones; then the rest in name order. */
static int headline_rank(const char *name)
{
	static const char *const heads[] = {"gemm.bf16", "gemm.fp16", "gemm.fp8",	    "gemm.tf32",
					    "gemm.fp32", "memory.triad", "memory.copy",	    "transfer.h2d_pinned",
					    "transfer.d2h_pinned", "launch", "nccl", "p2p", "findings.fail",
					    "findings.warn", "tune"};
	for (size_t i = 0; i < GV_ARRAY_LEN(heads); i++)
		if (str_starts(name, heads[i]))
			return (int)i;
	return (int)GV_ARRAY_LEN(heads);
}

static trend *trend_find(trend **v, size_t *n, size_t *cap, const cJSON *res)
{
	const char *name = jstr(res, "name");
	double g = jnum(res, "gpu");
	int gpu = doc_gpu(g);
	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].name, name) == 0 && (*v)[i].gpu == gpu)
			return &(*v)[i];
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 32;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	trend *t = &(*v)[(*n)++];
	memset(t, 0, sizeof(*t));
	str_copy(t->name, sizeof(t->name), name);
	t->gpu = gpu;
	const char *title = jstr(res, "title") ? jstr(res, "title") : jstr(jget(res, "params"), "title");
	str_copy(t->label, sizeof(t->label), title ? title : name);
	str_copy(t->unit, sizeof(t->unit), jstr(res, "unit") ? jstr(res, "unit") : "");
	t->better = better_of(res);
	return t;
}

static int cmp_trend(const void *a, const void *b)
{
	const trend *x = a, *y = b;
	int rx = headline_rank(x->name), ry = headline_rank(y->name);
	if (rx != ry)
		return rx - ry;
	int c = strcmp(x->name, y->name);
	return c ? c : x->gpu - y->gpu;
}

/* The machine's changes between consecutive runs (any kind): driver, CUDA, torch, libraries. */
static chart_event *context_events(const report_data *d, size_t *nev, strlist *labels)
{
	static const char *const keys[] = {"driver", "cuda.driver", "cuda.runtime", "torch", "cudnn", "nccl"};
	size_t n;
	const report_run **v = runs_of(d, NULL, &n);
	chart_event *ev = xcalloc(n * GV_ARRAY_LEN(keys) + 1, sizeof(*ev));
	*nev = 0;
	for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++) {
		const char *prev = NULL;
		for (size_t i = 0; i < n; i++) {
			const char *val = jstr(jget(v[i]->run, "meta"), keys[k]);
			if (!val || !isfinite(v[i]->t))
				continue;
			if (prev && strcmp(prev, val) != 0) {
				sl_pushf(labels, "%s %s → %s", keys[k], prev, val);
				ev[(*nev)++] = (chart_event){v[i]->t, NULL};
			}
			prev = val;
		}
	}
	for (size_t i = 0; i < *nev; i++)
		ev[i].label = labels->v[i];
	free(v);
	return ev;
}

/* Marks points worse than the one before by more than threshold_pct in the figure's direction and
 * by more than the figure's spread in either run, as `history compare` counts a regression:
 * (b - a) / |a| * 100 (store/history.h: hist_change_counts). */
static size_t mark_regressions(trend *t, double threshold_pct)
{
	size_t marked = 0;
	for (size_t i = 1; i < t->n; i++) {
		double a = t->pts[i - 1].y, b = t->pts[i].y;
		if (!t->better || !isfinite(a) || !isfinite(b) || a == 0)
			continue;
		double pct = (b - a) / fabs(a) * 100;
		double s = t->spread[i - 1], s2 = t->spread[i];
		double spread = isnan(s) ? s2 : isnan(s2) ? s : s > s2 ? s : s2;
		if (hist_change_counts(-pct * t->better, threshold_pct, spread)) {
			t->pts[i].marked = true;
			marked++;
		}
	}
	return marked;
}

#define TREND_CHARTS_MAX 12

static void section_history(FILE *out, const report_data *d, double threshold_pct)
{
	fputs("<section id=\"history\"><h2>History</h2>\n", out);
	strlist labels = {0};
	size_t nev = 0;
	chart_event *ev = context_events(d, &nev, &labels);
	static const char *const kinds[] = {"bench", "check", "tune"};
	size_t charts = 0, regressions_total = 0;
	char *regbuf = NULL;
	size_t reglen = 0;
	FILE *reg = open_memstream(&regbuf, &reglen);
	for (size_t k = 0; k < GV_ARRAY_LEN(kinds); k++) {
		size_t n;
		const report_run **v = runs_of(d, kinds[k], &n);
		trend *tr = NULL;
		size_t ntr = 0, cap = 0;
		for (size_t i = 0; i < n; i++) {
			if (!isfinite(v[i]->t))
				continue;
			const cJSON *x;
			cJSON_ArrayForEach(x, jget(v[i]->run, "results"))
			{
				if (!jstr(x, "name") || !isfinite(jnum(x, "value")))
					continue;
				trend *t = trend_find(&tr, &ntr, &cap, x);
				t->pts = xrealloc(t->pts, (t->n + 1) * sizeof(*t->pts));
				t->tips = xrealloc(t->tips, (t->n + 1) * sizeof(*t->tips));
				t->spread = xrealloc(t->spread, (t->n + 1) * sizeof(*t->spread));
				t->spread[t->n] = hist_spread_pct(jnum(x, "value"), jnum(x, "min"), jnum(x, "max"));
				char val[96];
				value_text(val, sizeof(val), x);
				const char *when = jstr(v[i]->run, "started_utc");
				t->tips[t->n] = xasprintf("%s: %s", when ? when : "time unknown", val);
				t->pts[t->n] = (chart_point){v[i]->t, jnum(x, "value"), false, t->tips[t->n]};
				t->n++;
			}
		}
		if (ntr)
			qsort(tr, ntr, sizeof(*tr), cmp_trend);
		for (size_t i = 0; i < ntr; i++) {
			trend *t = &tr[i];
			if (t->n < 2)
				continue;
			size_t m = mark_regressions(t, threshold_pct);
			regressions_total += m;
			for (size_t j = 1; j < t->n; j++) {
				if (!t->pts[j].marked)
					continue;
				char a[64], b[64];
				fprintf(reg, "<tr><td>%s</td><td><code>", kinds[k]);
				html_text(reg, t->name);
				if (t->gpu >= 0)
					fprintf(reg, " (GPU %d)", t->gpu);
				fprintf(reg, "</code></td><td class=\"num\">%s → %s</td><td class=\"num\">%+.1f%%</td></tr>\n",
					fmt_number(a, sizeof(a), t->pts[j - 1].y), fmt_number(b, sizeof(b), t->pts[j].y),
					(t->pts[j].y - t->pts[j - 1].y) / fabs(t->pts[j - 1].y) * 100);
			}
			if (charts >= TREND_CHARTS_MAX)
				continue;
			char title[400];
			if (t->gpu >= 0)
				snprintf(title, sizeof(title), "%s on GPU %d", t->label, t->gpu);
			else
				snprintf(title, sizeof(title), "%s", t->label);
			if (!charts)
				fputs("<div class=\"grid2\">\n", out);
			fprintf(out, "<figure class=\"trend\" data-kind=\"%s\">", kinds[k]);
			chart_series s = {t->better > 0 ? "higher is better" : t->better < 0 ? "lower is better" : "value",
					  t->pts, t->n};
			chart_lines(out, title, t->unit, &s, 1, ev, nev);
			fputs("<figcaption>", out);
			html_text(out, title);
			fprintf(out, " · %zu runs", t->n);
			if (m)
				fprintf(out, " · <strong class=\"fail\">%zu regression%s</strong>", m, m == 1 ? "" : "s");
			fputs("</figcaption></figure>\n", out);
			charts++;
		}
		for (size_t i = 0; i < ntr; i++) {
			for (size_t j = 0; j < tr[i].n; j++)
				free(tr[i].tips[j]);
			free(tr[i].tips);
			free(tr[i].pts);
			free(tr[i].spread);
		}
		free(tr);
		free(v);
	}
	if (charts)
		fputs("</div>\n", out);
	else
		fputs("<p class=\"empty\">trends need two runs of the same kind with the same figure</p>\n", out);
	if (charts >= TREND_CHARTS_MAX)
		fprintf(out, "<p class=\"dim\">the first %d trends are drawn (headline figures first); "
			     "<code>gpuvet history compare</code> lists every figure</p>\n",
			TREND_CHARTS_MAX);
	fclose(reg);
	fprintf(out, "<h3>Regressions</h3>\n");
	if (regressions_total)
		fprintf(out, "<table class=\"regressions\"><tr><th>kind</th><th>figure</th><th>before → after</th><th>change</th></tr>\n%s</table>\n",
			regbuf);
	else
		fprintf(out, "<p>none beyond %.3g%% between consecutive runs</p>\n", threshold_pct);
	if (nev) {
		fputs("<h3>Changes of the machine</h3><ul class=\"changes\">\n", out);
		for (size_t i = 0; i < nev; i++) {
			char b[40];
			utc_text(b, sizeof(b), ev[i].x);
			fprintf(out, "<li>%s: ", b);
			html_text(out, ev[i].label);
			fputs("</li>\n", out);
		}
		fputs("</ul>\n", out);
	}
	free(regbuf);
	free(ev);
	sl_free(&labels);
	fputs("</section>\n", out);
}

/* ------------------------------------------------------------------ tune */

typedef struct tune_row {
	char model[96], setting[64];
	double speedup, mem_saving;
	char *code; /* the lines to add, malloc'd; NULL: none */
} tune_row;

static int cmp_tune_row(const void *a, const void *b)
{
	const tune_row *x = a, *y = b;
	double sx = isfinite(x->speedup) ? x->speedup : 0, sy = isfinite(y->speedup) ? y->speedup : 0;
	return sx < sy ? 1 : sx > sy ? -1 : strcmp(x->setting, y->setting);
}

/* The first n bytes of s into out, cut to fit. */
static void seg_copy_n(char *out, size_t size, const char *s, size_t n)
{
	if (n >= size)
		n = size - 1;
	memcpy(out, s, n);
	out[n] = '\0';
}

static void tune_table(FILE *out, tune_row *rows, size_t n)
{
	qsort(rows, n, sizeof(*rows), cmp_tune_row);
	fputs("<table class=\"tune\"><tr><th>#</th><th>setting</th><th>model</th><th>speed-up over the run it changes</th><th>memory saved</th><th>the code</th></tr>\n",
	      out);
	for (size_t i = 0; i < n; i++) {
		const tune_row *r = &rows[i];
		fprintf(out, "<tr><td class=\"num\">%zu</td><td>", i + 1);
		html_text(out, r->setting);
		fputs("</td><td>", out);
		html_text(out, r->model);
		fputs("</td><td class=\"num\">", out);
		if (isfinite(r->speedup))
			fprintf(out, "%.2fx", r->speedup);
		fputs("</td><td class=\"num\">", out);
		if (isfinite(r->mem_saving))
			fprintf(out, "%.0f%%", r->mem_saving * 100);
		fputs("</td><td>", out);
		if (r->code && *r->code) {
			fputs("<pre class=\"code\">", out);
			html_text(out, r->code);
			fputs("</pre>", out);
		}
		fputs("</td></tr>\n", out);
	}
	fputs("</table>\n", out);
}

/* From a gpuvet.tune/1 document: its recommendations, ranked by measured gain. */
static size_t tune_rows_doc(const cJSON *doc, tune_row **out)
{
	size_t n = 0;
	const cJSON *rec;
	*out = xcalloc((size_t)cJSON_GetArraySize(jget(doc, "recommendations")) + 1, sizeof(**out));
	cJSON_ArrayForEach(rec, jget(doc, "recommendations"))
	{
		tune_row *r = &(*out)[n++];
		str_copy(r->setting, sizeof(r->setting), jstr(rec, "title") ? jstr(rec, "title") : jstr(rec, "setting"));
		const cJSON *pm = jget(rec, "per_model"), *m;
		strbuf models;
		sb_init(&models);
		cJSON_ArrayForEach(m, pm)
		{
			if (jstr(m, "model"))
				sb_addf(&models, "%s%s", models.len ? ", " : "", jstr(m, "model"));
		}
		str_copy(r->model, sizeof(r->model), models.len ? models.buf : "");
		sb_free(&models);
		r->speedup = jnum(rec, "speedup");
		r->mem_saving = jnum(rec, "mem_saving");
		/* the code lines, joined (kept alive by the document) */
		const cJSON *code = jget(rec, "code"), *line;
		strbuf c;
		sb_init(&c);
		cJSON_ArrayForEach(line, code)
		{
			if (cJSON_IsString(line))
				sb_addf(&c, "%s%s", c.len ? "\n" : "", line->valuestring);
		}
		r->code = c.len ? sb_steal(&c) : NULL;
		sb_free(&c);
	}
	return n;
}

/* From a history run: tune.MODEL.SHAPE.gpu.SETTING.ms against the same model's fp32 step. */
static size_t tune_rows_history(const cJSON *run, tune_row **out)
{
	const cJSON *results = jget(run, "results"), *x;
	const char *torch = jstr(jget(run, "meta"), "torch");
	*out = xcalloc((size_t)cJSON_GetArraySize(results) + 1, sizeof(**out));
	size_t n = 0;
	cJSON_ArrayForEach(x, results)
	{
		const char *name = jstr(x, "name");
		if (!name || !str_starts(name, "tune.") || !str_ends(name, ".ms"))
			continue;
		/* tune . MODEL . SHAPE . gpu . SETTING . ms, where SHAPE holds dots ("bs64.img224") */
		strlist parts = {0};
		sl_split(&parts, name, ".", true);
		size_t np = parts.n;
		if (np >= 6 && strcmp(parts.v[np - 3], "gpu") == 0 && strcmp(parts.v[np - 2], "fp32") != 0) {
			const char *model = parts.v[1], *setting = parts.v[np - 2];
			/* the shape: the name between the model and ".gpu." */
			const char *sh = name + strlen("tune.") + strlen(model) + 1;
			const char *gpu_at = strstr(sh, ".gpu.");
			char shape[128];
			seg_copy_n(shape, sizeof(shape), sh, gpu_at ? (size_t)(gpu_at - sh) : 0);
			/* the gain is over the run this setting changes (params.base, as tune measured it;
			 * fp32 for runs stored before the base was kept) */
			const tune_setting_info *info = tune_setting(setting);
			const char *based_on = jstr(jget(x, "params"), "base");
			if (!based_on)
				based_on = "fp32";
			if (info && strcmp(info->group, "reference") == 0) {
				sl_free(&parts);
				continue; /* the anchors' settings: measured for comparison, not advice */
			}
			char base[256], peak[256], basepeak[256];
			snprintf(base, sizeof(base), "tune.%s.%s.gpu.%s.ms", model, shape, based_on);
			snprintf(peak, sizeof(peak), "tune.%s.%s.gpu.%s.peak_mib", model, shape, setting);
			snprintf(basepeak, sizeof(basepeak), "tune.%s.%s.gpu.%s.peak_mib", model, shape, based_on);
			double b = NAN, p = NAN, bp = NAN;
			const cJSON *y;
			cJSON_ArrayForEach(y, results)
			{
				const char *yn = jstr(y, "name");
				if (!yn)
					continue;
				if (strcmp(yn, base) == 0)
					b = jnum(y, "value");
				else if (strcmp(yn, peak) == 0)
					p = jnum(y, "value");
				else if (strcmp(yn, basepeak) == 0)
					bp = jnum(y, "value");
			}
			double ms = jnum(x, "value");
			tune_row *r = &(*out)[n++];
			str_copy(r->setting, sizeof(r->setting), info ? info->title : setting);
			snprintf(r->model, sizeof(r->model), "%s %s (over %s)", model, shape, based_on);
			r->speedup = isfinite(b) && ms > 0 ? b / ms : NAN;
			r->mem_saving = isfinite(p) && bp > 0 ? 1 - p / bp : NAN;
			const char *code = info ? tune_setting_code(info, torch) : NULL;
			r->code = code ? xstrdup(code) : NULL;
		}
		sl_free(&parts);
	}
	return n;
}

static void section_tune(FILE *out, const report_data *d)
{
	fputs("<section id=\"tune\"><h2>Training settings (tune)</h2>\n", out);
	const report_run *r = latest(d, "tune");
	if (!r) {
		fputs("<p class=\"empty\">no tune run recorded: <code>gpuvet tune</code> stores one</p></section>\n", out);
		return;
	}
	fputs("<p class=\"dim\">", out);
	run_when(out, r);
	fputs("</p>\n", out);
	if (r->tune) {
		const cJSON *m;
		fputs("<table class=\"models\"><tr><th>model</th><th>batch</th><th>GPU fp32 ms</th><th>CPU ms</th><th>GPU vs CPU</th><th>tuned ms</th><th>tuned with</th></tr>\n",
		      out);
		cJSON_ArrayForEach(m, jget(r->tune, "models"))
		{
			char a[64], b[64], c[64], e[64], t[64];
			fputs("<tr><td>", out);
			html_text(out, jstr(m, "model"));
			fprintf(out, "</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%s</td><td class=\"num\">%sx</td><td class=\"num\">%s</td><td>",
				fmt_number(a, sizeof(a), jnum(m, "batch")), fmt_number(b, sizeof(b), jnum(m, "gpu_fp32_ms")),
				fmt_number(c, sizeof(c), jnum(m, "cpu_fp32_ms")), fmt_number(e, sizeof(e), jnum(m, "speedup")),
				fmt_number(t, sizeof(t), jnum(m, "tuned_ms")));
			html_text(out, jstr(m, "tuned_description") ? jstr(m, "tuned_description") : jstr(m, "tuned_setting"));
			fputs("</td></tr>\n", out);
		}
		fputs("</table>\n", out);
	}
	tune_row *rows;
	size_t n = r->tune ? tune_rows_doc(r->tune, &rows) : tune_rows_history(r->run, &rows);
	if (n) {
		fputs("<h3>Ranked by measured gain</h3>\n", out);
		tune_table(out, rows, n);
	} else {
		fputs("<p class=\"empty\">no setting measured against the fp32 step</p>\n", out);
	}
	/* AMP's memory saving in words: the question the table answers most often */
	for (size_t i = 0; i < n; i++)
		if (strstr(rows[i].setting, "AMP") && isfinite(rows[i].mem_saving)) {
			fputs("<p class=\"callout\">", out);
			html_text(out, rows[i].setting);
			fprintf(out, " saves %.0f%% of the peak GPU memory", rows[i].mem_saving * 100);
			if (rows[i].model[0]) {
				fputs(" (", out);
				html_text(out, rows[i].model);
				fputs(")", out);
			}
			fputs("</p>\n", out);
		}
	for (size_t i = 0; i < n; i++)
		free(rows[i].code);
	free(rows);
	fputs("</section>\n", out);
}

/* ------------------------------------------------------------------ watch */

/* diag: the latest run of each host, one row per GPU with every test's status and figure, and
 * the findings; many nodes' documents give one table for the fleet. */
static void section_diag(FILE *out, const report_data *d)
{
	fputs("<section id=\"diag\"><h2>Active tests (diag)</h2>\n", out);
	size_t n = 0;
	const report_run **v = runs_of(d, "diag", &n);
	/* newest first: keep the first run of each host */
	const report_run *keep[256];
	size_t nk = 0;
	for (size_t i = n; i-- > 0 && nk < GV_ARRAY_LEN(keep);) {
		const char *h = jstr(v[i]->run, "host");
		bool seen = false;
		for (size_t k = 0; k < nk; k++) {
			const char *o = jstr(keep[k]->run, "host");
			seen |= (h && o && strcmp(h, o) == 0) || (!h && !o);
		}
		if (!seen)
			keep[nk++] = v[i];
	}
	free(v);
	if (!nk) {
		fputs("<p class=\"empty\">no diag run recorded: <code>gpuvet diag</code> stores one</p></section>\n", out);
		return;
	}
	fputs("<table><thead><tr><th>node</th><th>GPU</th><th>name</th><th>serial</th><th>tests</th></tr></thead><tbody>\n", out);
	for (size_t k = 0; k < nk; k++) {
		const cJSON *run = keep[k]->run, *g;
		cJSON_ArrayForEach(g, jget(run, "gpus"))
		{
			double idx = jnum(g, "index");
			fputs("<tr><td>", out);
			html_text(out, jstr(run, "host") ? jstr(run, "host") : "");
			fprintf(out, "</td><td>%d</td><td>", isfinite(idx) ? (int)idx : -1);
			html_text(out, jstr(g, "name") ? jstr(g, "name") : "");
			fputs("</td><td>", out);
			html_text(out, jstr(g, "serial") ? jstr(g, "serial") : "");
			fputs("</td><td>", out);
			const cJSON *x;
			cJSON_ArrayForEach(x, jget(run, "results"))
			{
				if (jnum(x, "gpu") != idx)
					continue;
				const char *st = jstr(jget(x, "params"), "status");
				const char *cls = !st ? "" : strcmp(st, "fail") == 0 ? "fail" : strcmp(st, "warn") == 0 ? "warn" : "ok";
				char val[64];
				snprintf(val, sizeof(val), "%.4g", jnum(x, "value"));
				fprintf(out, "<span class=\"%s\">", cls);
				html_text(out, jstr(x, "name") ? jstr(x, "name") + (strncmp(jstr(x, "name"), "diag.", 5) ? 0 : 5) : "");
				fputs(" ", out);
				html_text(out, val);
				if (jstr(x, "unit") && *jstr(x, "unit")) {
					fputs(" ", out);
					html_text(out, jstr(x, "unit"));
				}
				fputs(st ? " (" : "", out);
				if (st)
					html_text(out, st);
				fputs(st ? ")</span><br>\n" : "</span><br>\n", out);
			}
			fputs("</td></tr>\n", out);
		}
	}
	fputs("</tbody></table>\n", out);
	for (size_t k = 0; k < nk; k++) {
		const cJSON *f;
		cJSON_ArrayForEach(f, jget(keep[k]->run, "findings"))
		{
			const char *cls = severity_class(jstr(f, "severity"));
			fprintf(out, "<article class=\"finding %s\"><h4><span class=\"sev\">%s</span> ", cls, cls);
			html_text(out, jstr(keep[k]->run, "host") ? jstr(keep[k]->run, "host") : "");
			fputs(" <code class=\"id\">", out);
			html_text(out, jstr(f, "id"));
			fputs("</code> ", out);
			html_text(out, jstr(f, "title"));
			fputs("</h4>\n", out);
			if (cJSON_GetArraySize(jget(f, "evidence"))) {
				fputs("<ul class=\"evidence\">\n", out);
				string_lines(out, jget(f, "evidence"), "li", "ev");
				fputs("</ul>\n", out);
			}
			fputs("</article>\n", out);
		}
	}
	fputs("</section>\n", out);
}

#define WATCH_GPUS_MAX 16

static void watch_run(FILE *out, const report_run *r)
{
	fputs("<h3>", out);
	run_when(out, r);
	fprintf(out, " · %zu samples</h3>\n<div class=\"grid2\">\n", r->samples_seen);
	for (size_t m = 0; m < GV_ARRAY_LEN(watch_metrics); m++) {
		chart_series s[WATCH_GPUS_MAX];
		chart_point *pts[WATCH_GPUS_MAX] = {0};
		char names[WATCH_GPUS_MAX][16];
		size_t counts[WATCH_GPUS_MAX] = {0}, ns = 0;
		for (size_t i = 0; i < r->nsamples; i++)
			if (r->samples[i].metric == m && r->samples[i].gpu >= 0 &&
			    r->samples[i].gpu < WATCH_GPUS_MAX)
				counts[r->samples[i].gpu]++;
		for (int g = 0; g < WATCH_GPUS_MAX; g++) {
			if (!counts[g])
				continue;
			size_t every = counts[g] / SAMPLES_PER_SERIES + 1, seen = 0, k = 0;
			pts[g] = xcalloc(counts[g] / every + 2, sizeof(chart_point));
			for (size_t i = 0; i < r->nsamples; i++) {
				const report_sample *x = &r->samples[i];
				if (x->gpu != g || x->metric != m)
					continue;
				if (seen++ % every == 0)
					pts[g][k++] = (chart_point){x->t, x->value * watch_metrics[m].scale, false, NULL};
			}
			snprintf(names[ns], sizeof(names[ns]), "GPU %d", g);
			s[ns] = (chart_series){names[ns], pts[g], k};
			ns++;
		}
		if (ns) {
			fprintf(out, "<figure class=\"watch\" data-metric=\"%s\">", watch_metrics[m].metric);
			chart_lines(out, watch_metrics[m].title, watch_metrics[m].unit, s, ns, NULL, 0);
			fprintf(out, "<figcaption>%s</figcaption></figure>\n", watch_metrics[m].title);
		}
		for (int g = 0; g < WATCH_GPUS_MAX; g++)
			free(pts[g]);
	}
	fputs("</div>\n", out);
	verdicts(out, r->run, 4);
}

static void section_watch(FILE *out, const report_data *d)
{
	fputs("<section id=\"watch\"><h2>Recorded samples (watch --record)</h2>\n", out);
	size_t n, shown = 0;
	const report_run **v = runs_of(d, "watch", &n);
	for (size_t i = n; i-- > 0 && shown < WATCH_RUNS_MAX;)
		if (v[i]->samples_seen) {
			watch_run(out, v[i]);
			shown++;
		}
	if (!shown)
		fputs("<p class=\"empty\">no recording: <code>gpuvet watch --record</code> keeps one</p>\n", out);
	free(v);
	fputs("</section>\n", out);
}

/* ------------------------------------------------------------------ the page */

static const char css[] =
	":root{color-scheme:light}"
	"body{font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:#1a1a1a;background:#fff;"
	"max-width:1040px;margin:0 auto;padding:16px 24px}"
	"h1{font-size:1.5em;margin:.2em 0}h2{border-bottom:2px solid #1f5fa8;padding-bottom:2px;margin-top:1.6em}"
	"nav a{margin-right:1em;color:#1f5fa8}"
	"code,pre{font-family:ui-monospace,'DejaVu Sans Mono',Menlo,monospace;font-size:.92em}"
	"pre{background:#f3f5f8;border:1px solid #d5dae1;padding:6px 8px;white-space:pre-wrap;overflow-wrap:anywhere;"
	"margin:4px 0}pre.code{white-space:pre;overflow-x:auto;overflow-wrap:normal}"
	".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:8px}"
	".dim{color:#555}.empty{color:#555;font-style:italic}"
	".verdict{font-size:1.1em;padding:6px 10px;border-radius:4px;border-left:6px solid}"
	".verdict.ok{background:#e8f3ea;border-color:#2e7d32}.verdict.warn{background:#fff4e0;border-color:#b35900}"
	".verdict.fail{background:#fdecea;border-color:#c62828}"
	".finding{border-left:4px solid #999;padding:2px 10px;margin:8px 0}"
	".finding.fail{border-color:#c62828}.finding.warn{border-color:#b35900}.finding.info{border-color:#1f5fa8}"
	".finding h4{margin:4px 0;font-weight:600}.sev{text-transform:uppercase;font-size:.8em;padding:1px 5px;"
	"border-radius:3px;color:#fff;background:#1f5fa8}"
	".fail .sev{background:#c62828}.warn .sev{background:#8a4500}"
	"li.fail,p.fail,.fail strong,strong.fail{color:#b71c1c}li.warn{color:#8a4500}"
	".label{margin:4px 0 0;font-size:.85em;color:#555}"
	"dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}dt{font-weight:600}dd{margin:0}"
	"table{border-collapse:collapse;margin:6px 0}th,td{border-bottom:1px solid #d5dae1;padding:3px 8px;"
	"text-align:left;vertical-align:top}td.num{text-align:right;font-variant-numeric:tabular-nums}"
	"tr.bad td{color:#b71c1c}"
	"svg.chart{max-width:100%;height:auto;display:block;margin:4px 0}"
	"svg text{font:12px system-ui,sans-serif;fill:#1a1a1a}svg .tick{fill:#444}svg .axis{fill:#444}"
	"svg .grid{stroke:#d5dae1;stroke-width:1}svg .grid.full{stroke:#555;stroke-dasharray:3 3}"
	"svg .bar rect{fill:#1f5fa8}svg .bar.bad rect{fill:#c62828}svg .bar .value{fill:#1a1a1a}"
	"svg .event line{stroke:#8e24aa;stroke-dasharray:4 3}svg .event text{fill:#6a1b9a;font-size:11px}"
	"svg .regression{fill:none;stroke:#c62828;stroke-width:2}"
	"figure{margin:10px 0}figcaption{font-size:.9em;color:#444}"
	".callout{background:#e8f0fb;border-left:4px solid #1f5fa8;padding:6px 10px}"
	"footer{margin-top:2em;font-size:.85em;color:#555}"
	"@media print{body{max-width:none;font-size:11pt}nav{display:none}section{break-inside:auto}"
	"figure,article,table{break-inside:avoid}pre.code{white-space:pre-wrap}}";

void report_write_html(FILE *out, const report_data *d, const report_opts *o)
{
	const report_run *last = latest(d, NULL);
	const char *host = last ? jstr(last->run, "host") : NULL;
	char gen[40];
	if (o->generated_utc)
		str_copy(gen, sizeof(gen), o->generated_utc);
	else
		utc_text(gen, sizeof(gen), (double)time(NULL));
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">\n"
	      "<meta name=\"generator\" content=\"gpuvet " GPUVET_VERSION "\">\n<title>",
	      out);
	if (o->title)
		html_text(out, o->title);
	else
		html_textf(out, "gpuvet report: %s", host ? host : "this machine");
	fprintf(out, "</title>\n<style>%s</style></head>\n<body>\n<header><h1>", css);
	if (o->title)
		html_text(out, o->title);
	else
		html_textf(out, "gpuvet report: %s", host ? host : "this machine");
	fputs("</h1><p class=\"dim\">made ", out);
	html_text(out, gen);
	fputs(" by gpuvet " GPUVET_VERSION "</p>\n<nav><a href=\"#machine\">machine</a><a href=\"#check\">diagnosis</a>"
	      "<a href=\"#bench\">benchmarks</a><a href=\"#diag\">diag</a><a href=\"#history\">history</a><a href=\"#tune\">tune</a>"
	      "<a href=\"#watch\">samples</a></nav></header>\n<main>\n",
	      out);
	if (d->history_unread) {
		fputs("<p class=\"callout\">the history was not read, so this page lacks it: ", out);
		html_text(out, d->history_unread);
		fputs("</p>\n", out);
	}
	if (d->seen > d->n)
		fprintf(out, "<p class=\"callout\" id=\"left-out\">This page draws the newest %zu of the %zu runs read: it keeps "
			     "%d runs at most, so that a history of any size makes a page in bounded memory. The %zu older "
			     "runs are counted under Machine, not drawn (<code>gpuvet report --limit N</code> chooses "
			     "fewer).</p>\n",
			d->n, d->seen, REPORT_RUNS_MAX, d->seen - d->n);
	section_machine(out, d);
	section_check(out, d);
	section_bench(out, d);
	section_diag(out, d);
	section_history(out, d, o->threshold_pct > 0 ? o->threshold_pct : 5);
	section_tune(out, d);
	section_watch(out, d);
	fputs("</main>\n<footer>Made by <code>gpuvet report</code>; the figures are the ones stored by gpuvet check, bench, "
	      "tune and watch --record (docs/report.md).</footer>\n</body></html>\n",
	      out);
}
