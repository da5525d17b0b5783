#include "tune/tune_history.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

static void shape_of(const tune_summary *s, char *out, size_t n)
{
	int w = snprintf(out, n, "bs%d", s->batch);
	if (w < 0 || (size_t)w >= n || !s->meta)
		return;
	if (s->meta->image_size > 0)
		snprintf(out + w, n - (size_t)w, ".img%d", s->meta->image_size);
	else if (s->meta->seq_len > 0)
		snprintf(out + w, n - (size_t)w, ".seq%d", s->meta->seq_len);
}

static void add(hist_run *h, const char *name, double v, const char *unit, hist_direction better, double lo, double hi,
		int repeats, const char *params)
{
	if (!isfinite(v))
		return;
	hist_result res = {.name = name, .value = v, .unit = unit, .better = better, .min = isfinite(lo) ? lo : NAN,
			   .max = isfinite(hi) ? hi : NAN, .repeats = repeats > 0 ? repeats : 0, .gpu = -1,
			   .params_json = params};
	history_run_add_result(h, &res);
}

static void add_runs(hist_run *h, const tune_report *r, const tune_summary *s)
{
	char shape[64];
	shape_of(s, shape, sizeof(shape));
	for (size_t i = 0; i < r->nruns; i++) {
		const tune_run *x = &r->runs[i];
		if (strcmp(x->model, s->model) != 0 || strcmp(x->status, "ok") != 0)
			continue;
		const char *dev = strcmp(x->device, "cuda") == 0 ? "gpu" : x->device;
		char name[256], desc[160];
		tune_describe_config(desc, sizeof(desc), &x->cfg);
		cJSON *pj = cJSON_CreateObject();
		if (s->meta && s->meta->impl[0])
			cJSON_AddStringToObject(pj, "impl", s->meta->impl);
		cJSON_AddStringToObject(pj, "config", desc);
		if (x->base[0])
			cJSON_AddStringToObject(pj, "base", x->base); /* the run it changes: its gain's reference */
		if (isfinite(x->gpu_util))
			cJSON_AddNumberToObject(pj, "gpu_util", x->gpu_util);
		char *params = cJSON_PrintUnformatted(pj);
		cJSON_Delete(pj);
		snprintf(name, sizeof(name), "tune.%s.%s.%s.%s.ms", s->model, shape, dev, x->setting);
		add(h, name, x->ms, "ms", HIST_LOWER_BETTER, x->ms_min, x->ms_max, x->iters, params);
		free(params);
		if (isfinite(x->peak_mib)) {
			snprintf(name, sizeof(name), "tune.%s.%s.%s.%s.peak_mib", s->model, shape, dev, x->setting);
			add(h, name, x->peak_mib, "MiB", HIST_LOWER_BETTER, NAN, NAN, 0, NULL);
		}
		if (isfinite(x->compile_s)) {
			snprintf(name, sizeof(name), "tune.%s.%s.%s.%s.compile_s", s->model, shape, dev, x->setting);
			add(h, name, x->compile_s, "s", HIST_LOWER_BETTER, NAN, NAN, 0, NULL);
		}
	}
	char name[256];
	if (s->best) {
		snprintf(name, sizeof(name), "tune.%s.%s.tuned.ms", s->model, shape);
		add(h, name, s->best->ms, "ms", HIST_LOWER_BETTER, NAN, NAN, 0, NULL);
	}
	snprintf(name, sizeof(name), "tune.%s.%s.speedup", s->model, shape);
	add(h, name, s->speedup, "x", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
	snprintf(name, sizeof(name), "tune.%s.%s.tuned_speedup", s->model, shape);
	add(h, name, s->tuned_speedup, "x", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
}

static void add_pipeline(hist_run *h, const tune_report *r, const tune_advice *a)
{
	char shape[64] = "";
	for (size_t i = 0; i < r->npipes; i++) {
		const tune_pipe *p = &r->pipes[i];
		snprintf(shape, sizeof(shape), "bs%d.img%d", p->batch, r->image_size);
		if (strcmp(p->status, "ok") != 0)
			continue;
		char name[256];
		snprintf(name, sizeof(name), "tune.pipeline.%s.w%d.pin%d.samples_s", shape, p->workers, p->pin_memory ? 1 : 0);
		add(h, name, p->samples_s, "samples/s", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
		if (isfinite(p->gpu_util)) {
			snprintf(name, sizeof(name), "tune.pipeline.%s.w%d.pin%d.gpu_util", shape, p->workers,
				 p->pin_memory ? 1 : 0);
			add(h, name, p->gpu_util, "%", HIST_NEUTRAL, NAN, NAN, 0, NULL);
		}
	}
	if (shape[0] && isfinite(a->pipe.gpu_samples_s)) {
		char name[256];
		snprintf(name, sizeof(name), "tune.pipeline.%s.gpu_samples_s", shape);
		add(h, name, a->pipe.gpu_samples_s, "samples/s", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
	}
}

static void add_ddp(hist_run *h, const tune_report *r)
{
	const tune_ddp *d = &r->ddp;
	if (!d->present || strcmp(d->status, "ok") != 0)
		return;
	char base[160], name[256];
	snprintf(base, sizeof(base), "tune.ddp.%dgpu.%s.bs%d", d->world_size, d->model, d->batch_per_gpu);
	snprintf(name, sizeof(name), "%s.ms", base);
	add(h, name, d->ddp_ms, "ms", HIST_LOWER_BETTER, NAN, NAN, 0, NULL);
	snprintf(name, sizeof(name), "%s.efficiency", base);
	add(h, name, d->efficiency, "", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
	snprintf(name, sizeof(name), "%s.memory_balance", base);
	add(h, name, d->memory_balance, "", HIST_HIGHER_BETTER, NAN, NAN, 0, NULL);
}

static void summary(hist_run *h, const tune_advice *a)
{
	strbuf sb;
	sb_init(&sb);
	for (size_t i = 0; i < a->nsums && i < 3; i++) {
		const tune_summary *s = &a->sums[i];
		if (!s->gpu_fp32 && !s->best)
			continue;
		if (sb.len)
			sb_add(&sb, "; ");
		sb_addf(&sb, "%s", s->model);
		if (s->gpu_fp32)
			sb_addf(&sb, " %.1f ms fp32", s->gpu_fp32->ms);
		if (s->best && s->best != s->gpu_fp32)
			sb_addf(&sb, ", %.1f ms tuned", s->best->ms);
	}
	if (sb.len)
		history_run_set_summary(h, sb.buf);
	sb_free(&sb);
}

hist_run *tune_history_run(const tune_report *r, const tune_advice *a, const tune_conditions *cond, int argc,
			   char *const *argv)
{
	hist_run *h = history_run_begin(HIST_TUNE, argc, argv);
	if (r->env.torch)
		history_run_set(h, HIST_META_TORCH, r->env.torch);
	if (r->env.python)
		history_run_set(h, HIST_META_PYTHON, r->env.python);
	if (r->env.torch_cuda)
		history_run_set(h, HIST_META_CUDA_RUNTIME, r->env.torch_cuda);
	if (r->env.cudnn > 0) {
		char v[32];
		snprintf(v, sizeof(v), "%ld", r->env.cudnn);
		history_run_set(h, HIST_META_CUDNN, v);
	}
	if (r->env.cpu)
		history_run_set(h, HIST_META_CPU, r->env.cpu);
	history_run_set(h, "tune.status", r->status);
	if (cond && cond->index >= 0) {
		history_run_add_gpu(h, cond->index, cond->name[0] ? cond->name : r->env.gpu_name,
				    cond->uuid[0] ? cond->uuid : r->env.gpu_uuid, NULL);
		history_run_gpu_conditions(h, cond->index, cond->sm_clock_mhz, cond->mem_clock_mhz,
					   cond->temperature_max_c, cond->power_w, cond->reasons[0] ? cond->reasons : NULL);
	} else if (r->env.gpu_name) {
		history_run_add_gpu(h, 0, r->env.gpu_name, r->env.gpu_uuid, NULL);
	}
	for (size_t i = 0; i < a->nsums; i++)
		add_runs(h, r, &a->sums[i]);
	add_pipeline(h, r, a);
	add_ddp(h, r);
	summary(h, a);
	return h;
}

/* ---- the table over stored runs ---- */

typedef struct table_row {
	char date[16], model[TUNE_NAME], shape[64], gpu[96];
	long long run;
	int batch;
	double gpu_ms, cpu_ms, speedup, tuned_ms, tuned_speedup;
} table_row;

/* "tune.resnet50.bs64.img224.gpu.fp32.ms" -> model, shape, what ("gpu.fp32.ms"); false for others. */
static bool split_name(const char *name, char *model, size_t nm, char *shape, size_t ns, const char **what)
{
	static const char *const whats[] = {".gpu.fp32.ms", ".cpu.fp32.ms", ".tuned.ms", ".tuned_speedup", ".speedup"};
	if (!str_starts(name, "tune.") || str_starts(name, "tune.pipeline.") || str_starts(name, "tune.ddp."))
		return false;
	const char *m = name + 5, *dot = strchr(m, '.');
	if (!dot)
		return false;
	for (size_t i = 0; i < GV_ARRAY_LEN(whats); i++) {
		size_t lw = strlen(whats[i]), ln = strlen(dot);
		if (ln > lw && strcmp(dot + ln - lw, whats[i]) == 0) {
			snprintf(model, nm, "%.*s", (int)(dot - m), m);
			snprintf(shape, ns, "%.*s", (int)(ln - lw - 1), dot + 1);
			*what = whats[i] + 1;
			return true;
		}
	}
	return false;
}

static table_row *row_for(table_row **rows, size_t *n, const hist_run_row *run, const char *model, const char *shape)
{
	for (size_t i = 0; i < *n; i++)
		if ((*rows)[i].run == run->id && strcmp((*rows)[i].model, model) == 0 && strcmp((*rows)[i].shape, shape) == 0)
			return &(*rows)[i];
	*rows = xrealloc(*rows, (*n + 1) * sizeof(table_row));
	table_row *t = &(*rows)[(*n)++];
	memset(t, 0, sizeof(*t));
	t->run = run->id;
	str_copy(t->model, sizeof(t->model), model);
	str_copy(t->shape, sizeof(t->shape), shape);
	t->batch = str_starts(shape, "bs") ? atoi(shape + 2) : -1;
	char local[64];
	snprintf(t->date, sizeof(t->date), "%.10s", hist_utc_to_local(run->started_utc, local, sizeof(local)));
	if (run->ngpus && run->gpus[0].name)
		str_copy(t->gpu, sizeof(t->gpu), run->gpus[0].name);
	t->gpu_ms = t->cpu_ms = t->speedup = t->tuned_ms = t->tuned_speedup = NAN;
	return t;
}

/* A right-aligned figure with its decimals and suffix; "-" when unknown. */
static void cell(FILE *out, int width, int decimals, const char *suffix, double v)
{
	char buf[48];
	if (isfinite(v))
		snprintf(buf, sizeof(buf), "%.*f%s", decimals, v, suffix);
	else
		snprintf(buf, sizeof(buf), "-");
	fprintf(out, " %*s", width, buf);
}

int tune_history_table(const char *db, long long limit, bool json, FILE *out)
{
	char *path = history_default_path(db);
	if (path && access(path, F_OK) != 0) {
		if (json)
			fprintf(out, "[]\n");
		else
			fprintf(out, "no tune runs recorded yet (%s does not exist)\n", path);
		free(path);
		return 0;
	}
	free(path);
	char *err = NULL;
	history *h = history_open(db, HISTORY_READ, &err);
	if (!h) {
		fprintf(stderr, "gpuvet: %s\n", err ? err : "cannot open the history");
		free(err);
		return 1;
	}
	hist_query q = {.kind = HIST_TUNE, .limit = limit, .oldest_first = false};
	hist_run_row *runs = NULL;
	size_t nruns = 0;
	if (!history_list(h, &q, &runs, &nruns, &err)) {
		fprintf(stderr, "gpuvet: %s\n", err ? err : "cannot read the history");
		free(err);
		history_close(h);
		return 1;
	}
	table_row *rows = NULL;
	size_t n = 0;
	for (size_t k = nruns; k-- > 0;) { /* oldest first */
		const hist_run_row *run = &runs[k];
		for (size_t i = 0; i < run->nresults; i++) {
			char model[TUNE_NAME], shape[64];
			const char *what;
			if (!split_name(run->results[i].name, model, sizeof(model), shape, sizeof(shape), &what))
				continue;
			table_row *t = row_for(&rows, &n, run, model, shape);
			double v = run->results[i].value;
			if (strcmp(what, "gpu.fp32.ms") == 0)
				t->gpu_ms = v;
			else if (strcmp(what, "cpu.fp32.ms") == 0)
				t->cpu_ms = v;
			else if (strcmp(what, "tuned.ms") == 0)
				t->tuned_ms = v;
			else if (strcmp(what, "tuned_speedup") == 0)
				t->tuned_speedup = v;
			else
				t->speedup = v;
		}
	}
	if (json) {
		cJSON *arr = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "run", (double)rows[i].run);
			cJSON_AddStringToObject(o, "date", rows[i].date);
			cJSON_AddStringToObject(o, "gpu", rows[i].gpu);
			cJSON_AddStringToObject(o, "model", rows[i].model);
			cJSON_AddStringToObject(o, "shape", rows[i].shape);
			cJSON_AddNumberToObject(o, "batch", rows[i].batch);
			const double vals[] = {rows[i].gpu_ms, rows[i].cpu_ms, rows[i].speedup, rows[i].tuned_ms,
					       rows[i].tuned_speedup};
			const char *keys[] = {"gpu_fp32_ms", "cpu_fp32_ms", "speedup", "tuned_ms", "tuned_speedup"};
			for (size_t k = 0; k < GV_ARRAY_LEN(keys); k++) {
				if (isfinite(vals[k]))
					cJSON_AddNumberToObject(o, keys[k], vals[k]);
				else
					cJSON_AddNullToObject(o, keys[k]);
			}
			cJSON_AddItemToArray(arr, o);
		}
		char *s = cJSON_Print(arr);
		fprintf(out, "%s\n", s);
		free(s);
		cJSON_Delete(arr);
	} else if (!n) {
		fprintf(out, "no tune runs in %s\n", history_path(h));
	} else {
		fprintf(out, "%5s  %-10s  %-20s %-9s %6s %9s %10s %8s %9s %8s\n", "run", "date", "GPU", "model", "batch", "GPU ms",
			"CPU ms", "speedup", "tuned ms", "speedup");
		for (size_t i = 0; i < n; i++) {
			const table_row *t = &rows[i];
			fprintf(out, "%5lld  %-10s  %-20.20s %-9s %6d", t->run, t->date, t->gpu[0] ? t->gpu : "-", t->model, t->batch);
			cell(out, 9, 2, "", t->gpu_ms);
			cell(out, 10, 1, "", t->cpu_ms);
			cell(out, 8, 0, "x", t->speedup);
			cell(out, 9, 2, "", t->tuned_ms);
			cell(out, 8, 0, "x", t->tuned_speedup);
			fputc('\n', out);
		}
		fprintf(out, "GPU ms: fp32 with TF32 off; tuned: the fastest settings measured in that run. `gpuvet history "
			     "show RUN` has every figure; `gpuvet history compare A B` compares two runs.\n");
	}
	free(rows);
	hist_runs_free(runs, nruns);
	history_close(h);
	return 0;
}
