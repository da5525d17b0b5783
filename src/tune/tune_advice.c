#include "tune/tune_advice.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "kb/kb_tune.h"

/* ---- the settings gpuvet knows, with the code to add ---- */

static const tune_setting_info settings[] = {
	{"fp32", "fp32", "precision", "fp32 with TF32 off: the baseline every gain is measured from", ""},
	{"tf32", "TF32", "precision", "fp32 matmuls and convolutions on tensor cores (10-bit mantissa)",
	 "torch.backends.cuda.matmul.allow_tf32 = True\ntorch.backends.cudnn.allow_tf32 = True"},
	{"amp_fp16", "AMP fp16", "precision", "autocast to fp16 with a GradScaler against underflow",
	 "scaler = torch.amp.GradScaler(\"cuda\")\n"
	 "with torch.autocast(\"cuda\", dtype=torch.float16):\n"
	 "    loss = loss_fn(model(x), y)\n"
	 "scaler.scale(loss).backward()\nscaler.step(optimizer)\nscaler.update()"},
	{"amp_bf16", "AMP bf16", "precision", "autocast to bf16: fp32's range, no GradScaler needed",
	 "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n"
	 "    loss = loss_fn(model(x), y)\n"
	 "loss.backward()\noptimizer.step()"},
	{"channels_last", "channels_last", "layout", "NHWC memory layout, the one tensor-core convolutions want",
	 "model = model.to(memory_format=torch.channels_last)\n"
	 "x = x.to(\"cuda\", memory_format=torch.channels_last)  # each batch"},
	{"cudnn_benchmark", "cudnn.benchmark", "cudnn", "cuDNN tries its algorithms once per input shape, then keeps the fastest",
	 "torch.backends.cudnn.benchmark = True  # input shapes stay the same"},
	{"compile", "torch.compile", "compile", "TorchInductor fuses the model's operations into fewer kernels",
	 "model = torch.compile(model)"},
	{"ref_fp32", "reference fp32", "reference",
	 "anchors/bench_models.py's settings: PyTorch defaults, cudnn.benchmark, channels_last for CNNs", ""},
	{"ref_amp_fp16", "reference AMP fp16", "reference",
	 "anchors/bench_models.py's settings with fp16 autocast and no GradScaler", ""},
	{"pipeline", "DataLoader workers and pinned memory", "pipeline",
	 "prepare batches in worker processes and copy them from pinned memory, overlapped with compute", ""},
};

const tune_setting_info *tune_setting(const char *key)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(settings); i++)
		if (strcmp(settings[i].key, key) == 0)
			return &settings[i];
	return NULL;
}

const char *tune_setting_code(const tune_setting_info *s, const char *torch_version)
{
	if (!s)
		return "";
	if (strcmp(s->key, "tf32") == 0 && torch_version && version_cmp(torch_version, "2.9") >= 0)
		return "torch.backends.cuda.matmul.fp32_precision = \"tf32\"\n"
		       "torch.backends.cudnn.conv.fp32_precision = \"tf32\"";
	return s->code;
}

/* ---- formatting ---- */

void tune_format_gain(char *out, size_t n, double speedup, double mem_saving)
{
	if (!isfinite(speedup) || speedup <= 0) {
		snprintf(out, n, "unknown");
		return;
	}
	int w;
	if (speedup >= 1.0)
		w = snprintf(out, n, "%.2fx faster", speedup);
	else
		w = snprintf(out, n, "%.2fx slower", 1.0 / speedup);
	if (w < 0 || (size_t)w >= n || !isfinite(mem_saving))
		return;
	if (mem_saving >= 0.02)
		snprintf(out + w, n - (size_t)w, ", %.0f%% less memory", mem_saving * 100.0);
	else if (mem_saving <= -0.02)
		snprintf(out + w, n - (size_t)w, ", %.0f%% more memory", -mem_saving * 100.0);
}

void tune_describe_config(char *out, size_t n, const tune_config *c)
{
	strbuf sb;
	sb_init(&sb);
	if (strcmp(c->precision, "fp16") == 0)
		sb_add(&sb, c->grad_scaler ? "AMP fp16" : "AMP fp16 (no GradScaler)");
	else if (strcmp(c->precision, "bf16") == 0)
		sb_add(&sb, "AMP bf16");
	else if (c->tf32_matmul && c->tf32_cudnn)
		sb_add(&sb, "TF32");
	else if (c->tf32_cudnn)
		sb_add(&sb, "fp32 (TF32 convolutions)");
	else
		sb_add(&sb, "fp32");
	if (c->channels_last)
		sb_add(&sb, " + channels_last");
	if (c->cudnn_benchmark)
		sb_add(&sb, " + cudnn.benchmark");
	if (c->compile)
		sb_add(&sb, " + torch.compile");
	str_copy(out, n, sb.buf ? sb.buf : "");
	sb_free(&sb);
}

/* ---- per model ---- */

static bool run_ok(const tune_run *x)
{
	return x && strcmp(x->status, "ok") == 0 && isfinite(x->ms) && x->ms > 0;
}

static double ratio_or_nan(double a, double b)
{
	return (isfinite(a) && isfinite(b) && b > 0) ? a / b : NAN;
}

static void summarize_model(const tune_report *r, const char *model, tune_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->model = model;
	s->meta = tune_find_model(r, model);
	s->batch = s->meta ? s->meta->batch : -1;
	const tune_run *g = tune_find_run(r, model, "cuda", "fp32");
	const tune_run *c = tune_find_run(r, model, "cpu", "fp32");
	s->gpu_fp32 = run_ok(g) ? g : NULL;
	s->cpu_fp32 = run_ok(c) ? c : NULL;
	s->gains = xcalloc(r->nruns ? r->nruns : 1, sizeof(tune_gain));
	for (size_t i = 0; i < r->nruns; i++) {
		const tune_run *x = &r->runs[i];
		if (strcmp(x->model, model) != 0 || strcmp(x->device, "cuda") != 0 || !run_ok(x))
			continue;
		if (s->batch < 0)
			s->batch = x->batch;
		if (!x->reference && (!s->best || x->ms < s->best->ms))
			s->best = x;
		if (!x->base[0])
			continue;
		const tune_run *b = tune_find_run(r, model, "cuda", x->base);
		if (!run_ok(b) || b == x)
			continue;
		tune_gain *gn = &s->gains[s->ngains++];
		gn->run = x;
		gn->base = b;
		gn->speedup = b->ms / x->ms;
		gn->mem_saving = (isfinite(x->peak_mib) && isfinite(b->peak_mib) && b->peak_mib > 0)
					 ? 1.0 - x->peak_mib / b->peak_mib
					 : NAN;
	}
	if (s->cpu_fp32 && s->batch < 0)
		s->batch = s->cpu_fp32->batch;
	s->speedup = (s->cpu_fp32 && s->gpu_fp32) ? s->cpu_fp32->ms / s->gpu_fp32->ms : NAN;
	s->tuned_speedup = (s->cpu_fp32 && s->best) ? s->cpu_fp32->ms / s->best->ms : NAN;
	s->tuned_gain = (s->gpu_fp32 && s->best) ? s->gpu_fp32->ms / s->best->ms : NAN;
	if (s->best)
		tune_describe_config(s->best_desc, sizeof(s->best_desc), &s->best->cfg);
}

static bool listed(const char **names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return true;
	return false;
}

/* ---- recommendations ---- */

static const char *const ranked_settings[] = {"tf32", "amp_fp16", "amp_bf16", "channels_last", "cudnn_benchmark",
					      "compile"};

static void collect_rec(tune_advice *a, const char *key, tune_rec *rec)
{
	memset(rec, 0, sizeof(*rec));
	rec->info = tune_setting(key);
	rec->mem_saving = NAN;
	double logsum = 0;
	for (size_t m = 0; m < a->nsums; m++) {
		const tune_summary *s = &a->sums[m];
		for (size_t g = 0; g < s->ngains; g++) {
			const tune_gain *gn = &s->gains[g];
			if (strcmp(gn->run->setting, key) != 0 || rec->nper >= TUNE_MAX_MODELS)
				continue;
			tune_rec_model *p = &rec->per[rec->nper++];
			p->model = s->model;
			p->base_setting = gn->base->setting;
			p->speedup = gn->speedup;
			p->mem_saving = gn->mem_saving;
			logsum += log(gn->speedup);
			if (isfinite(gn->mem_saving) && (!isfinite(rec->mem_saving) || gn->mem_saving > rec->mem_saving))
				rec->mem_saving = gn->mem_saving;
		}
	}
	rec->score = rec->nper ? exp(logsum / (double)rec->nper) : NAN;
}

static bool worth_it(tune_rec *rec)
{
	if (!rec->nper || !isfinite(rec->score))
		return false;
	if (rec->score >= TUNE_GAIN_MIN)
		return true;
	if (isfinite(rec->mem_saving) && rec->mem_saving >= TUNE_MEMORY_MIN && rec->score >= 0.98) {
		rec->for_memory = true;
		return true;
	}
	return false;
}

static int rec_order(const void *pa, const void *pb)
{
	const tune_rec *a = pa, *b = pb;
	if (a->alternative != b->alternative)
		return a->alternative ? 1 : -1;
	if (a->for_memory != b->for_memory)
		return a->for_memory ? 1 : -1;
	return (a->score < b->score) - (a->score > b->score);
}

static void pipeline_view(const tune_report *r, tune_pipeline_view *v)
{
	memset(v, 0, sizeof(*v));
	v->gain = v->gpu_samples_s = v->dflt_fraction = v->best_fraction = NAN;
	for (size_t i = 0; i < r->npipes; i++) {
		const tune_pipe *p = &r->pipes[i];
		if (isfinite(p->gpu_samples_s) && !isfinite(v->gpu_samples_s))
			v->gpu_samples_s = p->gpu_samples_s;
		if (strcmp(p->status, "ok") != 0 || !isfinite(p->samples_s))
			continue;
		v->present = true;
		if (p->workers == 0 && !p->pin_memory && !v->dflt)
			v->dflt = p;
		if (!v->best || p->samples_s > v->best->samples_s)
			v->best = p;
	}
	if (!v->present)
		return;
	if (v->dflt)
		v->gain = v->best->samples_s / v->dflt->samples_s;
	v->best_fraction = ratio_or_nan(v->best->samples_s, v->gpu_samples_s);
	v->dflt_fraction = v->dflt ? ratio_or_nan(v->dflt->samples_s, v->gpu_samples_s) : NAN;
	v->starves_best = isfinite(v->best_fraction) && v->best_fraction < 0.9;
	v->starves_default = isfinite(v->dflt_fraction) && v->dflt_fraction < 0.9;
}

static void add_pipeline_rec(tune_advice *a)
{
	const tune_pipeline_view *v = &a->pipe;
	if (!v->present || !v->dflt || !isfinite(v->gain) || v->gain < TUNE_GAIN_MIN || v->best == v->dflt)
		return;
	tune_rec *rec = &a->recs[a->nrecs++];
	memset(rec, 0, sizeof(*rec));
	rec->info = tune_setting("pipeline");
	rec->score = v->gain;
	rec->mem_saving = NAN;
	rec->nper = 1;
	rec->per[0].model = "resnet50";
	rec->per[0].base_setting = "workers=0 pin_memory=off";
	rec->per[0].speedup = v->gain;
	rec->per[0].mem_saving = NAN;
	rec->detail = xasprintf("num_workers=%d, pin_memory=%s", v->best->workers, v->best->pin_memory ? "True" : "False");
	rec->code = xasprintf("loader = DataLoader(dataset, batch_size=%d, num_workers=%d, pin_memory=%s)\n"
			      "x = x.to(\"cuda\", non_blocking=True)",
			      v->best->batch > 0 ? v->best->batch : 64, v->best->workers,
			      v->best->pin_memory ? "True" : "False");
}

static void build_recs(const tune_report *r, tune_advice *a)
{
	a->recs = xcalloc(GV_ARRAY_LEN(ranked_settings) + 1, sizeof(tune_rec));
	tune_rec *chosen_precision = NULL;
	for (size_t i = 0; i < GV_ARRAY_LEN(ranked_settings); i++) {
		tune_rec rec;
		collect_rec(a, ranked_settings[i], &rec);
		if (!worth_it(&rec))
			continue;
		rec.code = xstrdup(tune_setting_code(rec.info, r->env.torch));
		a->recs[a->nrecs++] = rec;
	}
	/* one precision: the fastest; bf16 when it is within 3% of fp16 (no GradScaler, fp32's range) */
	for (size_t i = 0; i < a->nrecs; i++) {
		tune_rec *rec = &a->recs[i];
		if (strcmp(rec->info->group, "precision") != 0 || rec->for_memory)
			continue;
		if (!chosen_precision || rec->score > chosen_precision->score)
			chosen_precision = rec;
	}
	if (chosen_precision && strcmp(chosen_precision->info->key, "amp_fp16") == 0)
		for (size_t i = 0; i < a->nrecs; i++)
			if (strcmp(a->recs[i].info->key, "amp_bf16") == 0 && a->recs[i].score >= 0.97 * chosen_precision->score)
				chosen_precision = &a->recs[i];
	for (size_t i = 0; i < a->nrecs; i++) {
		tune_rec *rec = &a->recs[i];
		if (strcmp(rec->info->group, "precision") == 0 && rec != chosen_precision)
			rec->alternative = true;
	}
	add_pipeline_rec(a);
	qsort(a->recs, a->nrecs, sizeof(tune_rec), rec_order);
}

/* ---- verdicts against the knowledge base ---- */

static void add_verdict(tune_advice *a, const tune_report *r, const tune_summary *s, const tune_run *x,
			const char *metric, double measured, const kb *k)
{
	if (!isfinite(measured) || !r->env.gpu_name || !s->meta)
		return;
	tune_expect_key key = {r->env.gpu_name, s->model, s->meta->impl, x->batch > 0 ? x->batch : s->batch,
			       s->meta->image_size, s->meta->seq_len, x->setting, metric};
	double expected, tol;
	const char *source = NULL;
	if (!kb_tune_expect(k, &key, &expected, &tol, &source))
		return;
	bool step = strcmp(metric, "step_ms") == 0;
	if (isnan(tol))
		tol = step ? TUNE_VERDICT_TOLERANCE : TUNE_MEMORY_TOLERANCE;
	tune_verdict *v = &a->verdicts[a->nverdicts++];
	memset(v, 0, sizeof(*v));
	v->model = s->model;
	v->setting = x->setting;
	v->metric = strcmp(metric, "step_ms") == 0 ? "step_ms" : "peak_mib";
	v->source = source;
	v->gpu = r->env.gpu_name;
	v->batch = key.batch;
	v->measured = measured;
	v->expected = expected;
	v->tolerance = tol;
	if (step) {
		/* measured slower than expected by more than the tolerance: expected/measured < 1/(1+tol) */
		v->ratio = expected / measured;
		if (measured > expected * (1.0 + tol)) {
			v->word = "slower than expected";
			v->bad = true;
			a->any_bad_verdict = true;
		} else if (measured < expected * (1.0 - tol)) {
			v->word = "faster than expected";
		} else {
			v->word = "as expected";
		}
	} else {
		v->ratio = measured / expected;
		v->word = fabs(v->ratio - 1.0) <= tol ? "as expected" : "differs";
	}
}

static void build_verdicts(const tune_report *r, tune_advice *a, const kb *k)
{
	a->verdicts = xcalloc(a->nsums * 4 + 1, sizeof(tune_verdict));
	static const char *const refs[] = {"ref_fp32", "ref_amp_fp16"};
	for (size_t m = 0; m < a->nsums; m++)
		for (size_t i = 0; i < GV_ARRAY_LEN(refs); i++) {
			const tune_run *x = tune_find_run(r, a->sums[m].model, "cuda", refs[i]);
			if (!run_ok(x))
				continue;
			add_verdict(a, r, &a->sums[m], x, "step_ms", x->ms, k);
			add_verdict(a, r, &a->sums[m], x, "peak_mib", x->peak_mib, k);
		}
}

tune_advice *tune_advise(const tune_report *r, const kb *k)
{
	tune_advice *a = xcalloc(1, sizeof(*a));
	/* the models in the order the probe described them, then any that only have runs */
	const char **names = xcalloc(r->nmodels + r->nruns + 1, sizeof(char *));
	size_t n = 0;
	for (size_t i = 0; i < r->nmodels; i++)
		if (!listed(names, n, r->models[i].name))
			names[n++] = r->models[i].name;
	for (size_t i = 0; i < r->nruns; i++)
		if (!listed(names, n, r->runs[i].model))
			names[n++] = r->runs[i].model;
	if (n > TUNE_MAX_MODELS)
		n = TUNE_MAX_MODELS;
	a->sums = xcalloc(n ? n : 1, sizeof(tune_summary));
	for (size_t i = 0; i < n; i++)
		summarize_model(r, names[i], &a->sums[a->nsums++]);
	free(names);
	pipeline_view(r, &a->pipe);
	build_recs(r, a);
	build_verdicts(r, a, k);
	if (r->ddp.present && isfinite(r->ddp.efficiency) && strcmp(r->ddp.status, "ok") == 0)
		a->ddp_word = r->ddp.efficiency >= 0.9 ? "scales well" : r->ddp.efficiency >= 0.75 ? "scales with some loss"
												 : "scales poorly";
	return a;
}

void tune_advice_free(tune_advice *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nsums; i++)
		free(a->sums[i].gains);
	free(a->sums);
	for (size_t i = 0; i < a->nrecs; i++) {
		free(a->recs[i].code);
		free(a->recs[i].detail);
	}
	free(a->recs);
	free(a->verdicts);
	free(a);
}
