#include "tune/tune_history.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
