#include "tune/tune_report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TEXT 600 /* longest free text kept from the probe (reasons, messages, notes) */

/* ---- checked field readers: anything of the wrong type or out of range is "unknown" ---- */

static const cJSON *field(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static void get_name(const cJSON *o, const char *key, char *out, size_t n)
{
	const cJSON *v = field(o, key);
	out[0] = '\0';
	if (cJSON_IsString(v) && v->valuestring) {
		str_copy(out, n, v->valuestring);
		str_sanitize(out);
	}
}

static char *get_text(const cJSON *o, const char *key)
{
	const cJSON *v = field(o, key);
	if (!cJSON_IsString(v) || !v->valuestring)
		return NULL;
	char *s = xstrndup(v->valuestring, strnlen(v->valuestring, MAX_TEXT));
	str_sanitize(s);
	return s;
}

/* A finite number in [lo, hi], else NAN. */
static double get_num(const cJSON *o, const char *key, double lo, double hi)
{
	const cJSON *v = field(o, key);
	if (!cJSON_IsNumber(v))
		return NAN;
	double d = v->valuedouble;
	if (!isfinite(d) || d < lo || d > hi)
		return NAN;
	return d;
}

static int get_int(const cJSON *o, const char *key, int lo, int hi, int dflt)
{
	double d = get_num(o, key, lo, hi);
	return isnan(d) ? dflt : (int)d;
}

static bool get_bool(const cJSON *o, const char *key)
{
	return cJSON_IsTrue(field(o, key));
}

/* A record's status word, "unknown" when it has none. */
static void get_status(const cJSON *o, char *out, size_t n)
{
	get_name(o, "status", out, n);
	if (!out[0])
		str_copy(out, n, "unknown");
}

/* An "ok" record without its figure (a step time, a rate) is not ok. */
static void invalid_without(char *status, size_t n, double figure)
{
	if (strcmp(status, "ok") == 0 && isnan(figure))
		str_copy(status, n, "invalid");
}

/* Step times: positive and under a day; memory under a petabyte. */
#define MS_MAX 86400000.0
#define MIB_MAX 1e9

static void read_config(const cJSON *o, tune_config *c)
{
	memset(c, 0, sizeof(*c));
	get_name(o, "precision", c->precision, sizeof(c->precision));
	c->grad_scaler = get_bool(o, "grad_scaler");
	c->channels_last = get_bool(o, "channels_last");
	c->cudnn_benchmark = get_bool(o, "cudnn_benchmark");
	c->tf32_matmul = get_bool(o, "tf32_matmul");
	c->tf32_cudnn = get_bool(o, "tf32_cudnn");
	c->compile = get_bool(o, "compile");
}

/* read_run and read_pipe: false for what is not a run (a pipeline setting), before anything is
 * allocated, so a row refused holds nothing. */
static bool read_run(const cJSON *o, tune_run *x)
{
	memset(x, 0, sizeof(*x));
	get_name(o, "model", x->model, sizeof(x->model));
	get_name(o, "setting", x->setting, sizeof(x->setting));
	get_name(o, "device", x->device, sizeof(x->device));
	if (!x->model[0] || !x->setting[0] || (strcmp(x->device, "cuda") != 0 && strcmp(x->device, "cpu") != 0))
		return false;
	x->id = get_int(o, "id", 0, 1 << 30, 0);
	get_name(o, "base", x->base, sizeof(x->base));
	get_status(o, x->status, sizeof(x->status));
	x->reason = get_text(o, "reason");
	x->reference = get_bool(o, "reference");
	x->reduced = get_bool(o, "reduced");
	x->batch = get_int(o, "batch", 1, 1 << 24, -1);
	x->iters = get_int(o, "iters", 0, 1 << 24, -1);
	x->warmup = get_int(o, "warmup", 0, 1 << 24, -1);
	x->threads = get_int(o, "threads", 1, 1 << 20, -1);
	x->ms = get_num(o, "ms", 1e-6, MS_MAX);
	x->ms_min = get_num(o, "ms_min", 1e-6, MS_MAX);
	x->ms_max = get_num(o, "ms_max", 1e-6, MS_MAX);
	x->peak_mib = get_num(o, "peak_mib", 0, MIB_MAX);
	x->compile_s = get_num(o, "compile_s", 0, 86400);
	x->gpu_util = NAN;
	read_config(field(o, "config"), &x->cfg);
	invalid_without(x->status, sizeof(x->status), x->ms);
	return true;
}

static void read_model(const cJSON *o, tune_model *m)
{
	memset(m, 0, sizeof(*m));
	get_name(o, "model", m->name, sizeof(m->name));
	get_name(o, "impl", m->impl, sizeof(m->impl));
	m->batch = get_int(o, "batch", 1, 1 << 24, -1);
	m->image_size = get_int(o, "image_size", 1, 1 << 16, -1);
	m->seq_len = get_int(o, "seq_len", 1, 1 << 24, -1);
	m->params = get_num(o, "params", 0, 1e15);
	m->note = get_text(o, "note");
}

static bool read_pipe(const cJSON *o, tune_pipe *p)
{
	memset(p, 0, sizeof(*p));
	p->workers = get_int(o, "workers", 0, 4096, -1);
	if (p->workers < 0)
		return false;
	p->id = get_int(o, "id", 0, 1 << 30, 0);
	p->pin_memory = get_bool(o, "pin_memory");
	p->batch = get_int(o, "batch", 1, 1 << 24, -1);
	p->batches = get_int(o, "batches", 0, 1 << 30, -1);
	p->image_size = get_int(o, "image_size", 1, 1 << 16, -1);
	get_status(o, p->status, sizeof(p->status));
	get_name(o, "setting", p->setting, sizeof(p->setting));
	p->reason = get_text(o, "reason");
	p->samples_s = get_num(o, "samples_s", 1e-9, 1e12);
	p->gpu_samples_s = get_num(o, "gpu_samples_s", 1e-9, 1e12);
	p->seconds = get_num(o, "seconds", 0, 86400);
	p->gpu_util = NAN;
	read_config(field(o, "config"), &p->cfg);
	invalid_without(p->status, sizeof(p->status), p->samples_s);
	return true;
}

static void free_ddp(tune_ddp *d)
{
	free(d->reason);
	for (size_t i = 0; i < d->nranks; i++)
		free(d->ranks[i].error);
	free(d->ranks);
	memset(d, 0, sizeof(*d));
}

static void read_ddp(const cJSON *o, tune_ddp *d)
{
	free_ddp(d);
	if (!cJSON_IsObject(o))
		return;
	d->present = true;
	d->id = get_int(o, "id", 0, 1 << 30, 0);
	d->world_size = get_int(o, "world_size", 1, 1 << 16, -1);
	d->batch_per_gpu = get_int(o, "batch_per_gpu", 1, 1 << 24, -1);
	get_name(o, "model", d->model, sizeof(d->model));
	get_name(o, "setting", d->setting, sizeof(d->setting));
	get_status(o, d->status, sizeof(d->status));
	d->reason = get_text(o, "reason");
	d->single_ms = get_num(o, "single_ms", 1e-6, MS_MAX);
	d->ddp_ms = get_num(o, "ddp_ms", 1e-6, MS_MAX);
	d->efficiency = get_num(o, "efficiency", 0, 1000);
	d->memory_balance = get_num(o, "memory_balance", 0, 1);
	d->samples_s = get_num(o, "samples_s", 0, 1e12);
	d->single_samples_s = get_num(o, "single_samples_s", 0, 1e12);
	d->single_peak_mib = get_num(o, "single_peak_mib", 0, MIB_MAX);
	read_config(field(o, "config"), &d->cfg);
	const cJSON *ranks = field(o, "ranks");
	if (cJSON_IsArray(ranks)) {
		int n = cJSON_GetArraySize(ranks);
		if (n > TUNE_MAX_RANKS)
			n = TUNE_MAX_RANKS;
		d->ranks = xcalloc(n > 0 ? (size_t)n : 1, sizeof(tune_rank));
		const cJSON *it;
		cJSON_ArrayForEach(it, ranks)
		{
			if (d->nranks >= (size_t)n)
				break;
			if (!cJSON_IsObject(it))
				continue;
			tune_rank *k = &d->ranks[d->nranks++];
			k->rank = get_int(it, "rank", 0, 1 << 16, -1);
			k->ms = get_num(it, "ms", 1e-6, MS_MAX);
			k->peak_mib = get_num(it, "peak_mib", 0, MIB_MAX);
			k->error = get_text(it, "error");
		}
	}
	/* derived figures must agree with the ranks' own; recompute what is missing */
	invalid_without(d->status, sizeof(d->status), d->ddp_ms);
}

/* The environment's texts, by their keys in the probe's JSON: read and freed by this one list. */
static const struct env_text {
	const char *key;
	size_t off;
} env_texts[] = {
	{"python", offsetof(tune_env, python)},       {"executable", offsetof(tune_env, executable)},
	{"torch", offsetof(tune_env, torch)},         {"torch_cuda", offsetof(tune_env, torch_cuda)},
	{"gpu_name", offsetof(tune_env, gpu_name)},   {"gpu_cc", offsetof(tune_env, gpu_cc)},
	{"gpu_uuid", offsetof(tune_env, gpu_uuid)},   {"torchvision", offsetof(tune_env, torchvision)},
	{"transformers", offsetof(tune_env, transformers)}, {"cpu", offsetof(tune_env, cpu)},
	{"cuda_error", offsetof(tune_env, cuda_error)},
};

static char **env_text(tune_env *e, size_t i)
{
	return (char **)((char *)e + env_texts[i].off);
}

static void free_env(tune_env *e)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(env_texts); i++)
		free(*env_text(e, i));
	memset(e, 0, sizeof(*e));
	e->cudnn = -1;
	e->gpu_memory_mib = NAN;
	e->gpu_count = e->cpu_count = e->cpu_threads = -1;
}

static void read_env(const cJSON *o, tune_env *e)
{
	free_env(e);
	if (!cJSON_IsObject(o))
		return;
	for (size_t i = 0; i < GV_ARRAY_LEN(env_texts); i++)
		*env_text(e, i) = get_text(o, env_texts[i].key);
	double c = get_num(o, "cudnn", 0, 1e9);
	e->cudnn = isnan(c) ? -1 : (long)c;
	e->gpu_count = get_int(o, "gpu_count", 0, 1 << 16, -1);
	e->cpu_count = get_int(o, "cpu_count", 1, 1 << 20, -1);
	e->cpu_threads = get_int(o, "cpu_threads", 1, 1 << 20, -1);
	e->gpu_memory_mib = get_num(o, "gpu_memory_mib", 0, MIB_MAX);
	e->cuda_available = get_bool(o, "cuda_available");
	e->bf16_supported = get_bool(o, "bf16_supported");
}

/* ---- the report ---- */

static tune_report *report_new(void)
{
	tune_report *r = xcalloc(1, sizeof(*r));
	free_env(&r->env);
	r->budget_s = r->elapsed_s = NAN;
	r->image_size = r->seq_len = -1;
	return r;
}

/* The next row of one of the report's lists for the object o: NULL when o is not an object or
 * the list holds its MAX already (the list is allocated whole on its first row). The row is
 * kept by counting it (n++) once it has been read. */
#define NEXT_ROW(o, rows, n, max)                                                                                     \
	(!cJSON_IsObject(o) || (n) >= (max) ? NULL : &((rows) ? (rows) : ((rows) = xcalloc((max), sizeof(*(rows)))))[n])

static void add_run(tune_report *r, const cJSON *o)
{
	tune_run *x = NEXT_ROW(o, r->runs, r->nruns, TUNE_MAX_RUNS);
	if (x && read_run(o, x))
		r->nruns++;
}

static void add_model(tune_report *r, const cJSON *o)
{
	tune_model *m = NEXT_ROW(o, r->models, r->nmodels, TUNE_MAX_MODELS);
	if (!m)
		return;
	read_model(o, m);
	if (m->name[0] && !tune_find_model(r, m->name))
		r->nmodels++;
	else
		free(m->note);
}

static void add_pipe(tune_report *r, const cJSON *o)
{
	tune_pipe *p = NEXT_ROW(o, r->pipes, r->npipes, TUNE_MAX_PIPES);
	if (p && read_pipe(o, p))
		r->npipes++;
}

static void add_note(strlist *l, const char *text)
{
	if (!text || l->n >= TUNE_MAX_NOTES || sl_contains(l, text))
		return;
	char *s = xstrndup(text, strnlen(text, MAX_TEXT));
	str_sanitize(s);
	sl_push_owned(l, s);
}

static void add_skip(tune_report *r, const cJSON *o)
{
	char what[TUNE_NAME * 3];
	get_name(o, "what", what, sizeof(what));
	char *reason = get_text(o, "reason");
	if (what[0]) {
		char *s = xasprintf("%s: %s", what, reason ? reason : "skipped");
		add_note(&r->skipped, s);
		free(s);
	}
	free(reason);
}

static void read_config_block(tune_report *r, const cJSON *cfg)
{
	r->budget_s = get_num(cfg, "budget_s", 0, 1e7);
	r->image_size = get_int(cfg, "image_size", 1, 1 << 16, -1);
	r->seq_len = get_int(cfg, "seq_len", 1, 1 << 24, -1);
	r->compile = get_bool(cfg, "compile");
}

static void for_each(const cJSON *arr, tune_report *r, void (*fn)(tune_report *, const cJSON *))
{
	if (!cJSON_IsArray(arr))
		return;
	const cJSON *it;
	cJSON_ArrayForEach(it, arr) fn(r, it);
}

static void add_note_item(tune_report *r, const cJSON *it)
{
	if (cJSON_IsString(it))
		add_note(&r->notes, it->valuestring);
}

static bool read_document(tune_report *r, const cJSON *doc)
{
	const cJSON *schema = field(doc, "schema");
	if (!cJSON_IsString(schema) || !schema->valuestring || strcmp(schema->valuestring, "gpuvet.tune-probe/1") != 0)
		return false;
	get_status(doc, r->status, sizeof(r->status));
	r->message = get_text(doc, "message");
	get_name(doc, "started", r->started, sizeof(r->started));
	read_env(field(doc, "env"), &r->env);
	read_config_block(r, field(doc, "config"));
	r->elapsed_s = get_num(doc, "elapsed_s", 0, 1e7);
	for_each(field(doc, "models"), r, add_model);
	for_each(field(doc, "runs"), r, add_run);
	for_each(field(doc, "pipeline"), r, add_pipe);
	for_each(field(doc, "notes"), r, add_note_item);
	for_each(field(doc, "skipped"), r, add_skip);
	read_ddp(field(doc, "ddp"), &r->ddp);
	return true;
}

/* One RESULT line: {"type": "run"|"model"|"pipeline"|"ddp"|"env"|"note"|"skip", ...}. */
static void read_line(tune_report *r, const char *line)
{
	cJSON *o = cJSON_ParseWithLength(line, strlen(line));
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return;
	}
	char type[16];
	get_name(o, "type", type, sizeof(type));
	if (strcmp(type, "run") == 0)
		add_run(r, o);
	else if (strcmp(type, "model") == 0)
		add_model(r, o);
	else if (strcmp(type, "pipeline") == 0)
		add_pipe(r, o);
	else if (strcmp(type, "ddp") == 0)
		read_ddp(o, &r->ddp);
	else if (strcmp(type, "env") == 0)
		read_env(o, &r->env);
	else if (strcmp(type, "note") == 0) {
		char *t = get_text(o, "text");
		add_note(&r->notes, t);
		free(t);
	} else if (strcmp(type, "skip") == 0)
		add_skip(r, o);
	cJSON_Delete(o);
}

tune_report *tune_report_parse(const char *doc, size_t len, const strlist *result_lines)
{
	tune_report *r = report_new();
	cJSON *j = doc && len ? cJSON_ParseWithLength(doc, len) : NULL;
	bool ok = j && read_document(r, j);
	cJSON_Delete(j);
	if (ok)
		return r;
	/* start again from the lines: nothing of a half-read document stays */
	tune_report_free(r);
	r = report_new();
	r->from_lines = true;
	size_t n = 0;
	if (result_lines)
		for (size_t i = 0; i < result_lines->n; i++, n++)
			read_line(r, result_lines->v[i]);
	bool some = r->nruns || r->npipes || r->ddp.present || r->env.torch;
	tune_report_set_status(r, some ? "partial" : "unreadable",
			       some ? "no report document: what the probe printed as it went (its RESULT lines)"
				    : "no report document and no RESULT lines");
	return r;
}

void tune_report_free(tune_report *r)
{
	if (!r)
		return;
	free(r->message);
	free_env(&r->env);
	for (size_t i = 0; i < r->nmodels; i++)
		free(r->models[i].note);
	free(r->models);
	for (size_t i = 0; i < r->nruns; i++)
		free(r->runs[i].reason);
	free(r->runs);
	for (size_t i = 0; i < r->npipes; i++)
		free(r->pipes[i].reason);
	free(r->pipes);
	free_ddp(&r->ddp);
	sl_free(&r->notes);
	sl_free(&r->skipped);
	free(r);
}

const tune_run *tune_find_run(const tune_report *r, const char *model, const char *device, const char *setting)
{
	for (size_t i = 0; i < r->nruns; i++) {
		const tune_run *x = &r->runs[i];
		if (strcmp(x->model, model) == 0 && strcmp(x->device, device) == 0 && strcmp(x->setting, setting) == 0)
			return x;
	}
	return NULL;
}

const tune_model *tune_find_model(const tune_report *r, const char *name)
{
	for (size_t i = 0; i < r->nmodels; i++)
		if (strcmp(r->models[i].name, name) == 0)
			return &r->models[i];
	return NULL;
}

void tune_report_set_status(tune_report *r, const char *status, const char *fmt, ...)
{
	str_copy(r->status, sizeof(r->status), status);
	free(r->message);
	r->message = NULL;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		r->message = xvasprintf(fmt, ap);
		va_end(ap);
	}
}

bool tune_report_has_gpu(const tune_report *r)
{
	for (size_t i = 0; i < r->nruns; i++)
		if (strcmp(r->runs[i].device, "cuda") == 0 && strcmp(r->runs[i].status, "ok") == 0)
			return true;
	return false;
}
