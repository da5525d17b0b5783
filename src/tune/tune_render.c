#include "tune/tune_render.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "core/color.h"
#include "core/json.h"

/* ---- text ---- */

static const char *title_of(const char *setting)
{
	const tune_setting_info *s = tune_setting(setting);
	return s ? s->title : setting;
}

/* "12.34", "1234.5", "—" for unknown, in a field of width w */
static void fmt_ms(char *out, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(out, n, "-");
	else if (v < 10)
		snprintf(out, n, "%.3f", v);
	else if (v < 1000)
		snprintf(out, n, "%.2f", v);
	else
		snprintf(out, n, "%.1f", v);
}

static void fmt_x(char *out, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(out, n, "-");
	else if (v < 10)
		snprintf(out, n, "%.2fx", v);
	else
		snprintf(out, n, "%.0fx", v);
}

static void header(FILE *out, const tune_report *r, bool on)
{
	const tune_env *e = &r->env;
	fprintf(out, "%sgpuvet tune%s: ", col_bold(on), col_reset(on));
	if (e->gpu_name) {
		fprintf(out, "%s", e->gpu_name);
		if (e->gpu_count > 1)
			fprintf(out, " x%d", e->gpu_count);
		if (e->gpu_cc)
			fprintf(out, " (compute capability %s)", e->gpu_cc);
	} else {
		fprintf(out, "no GPU step");
	}
	if (e->torch) {
		fprintf(out, ", PyTorch %s", e->torch);
		if (e->torch_cuda)
			fprintf(out, " (CUDA %s", e->torch_cuda);
		if (e->torch_cuda && e->cudnn > 0)
			fprintf(out, ", cuDNN %ld", e->cudnn);
		if (e->torch_cuda)
			fputc(')', out);
	}
	if (e->python)
		fprintf(out, ", Python %s", e->python);
	if (e->executable)
		fprintf(out, " %s%s%s", col_dim(on), e->executable, col_reset(on));
	fputc('\n', out);
	if (strcmp(r->status, "ok") != 0) {
		const char *c = strcmp(r->status, "cpu-only") == 0 || strcmp(r->status, "budget") == 0 ? col_warn(on)
														 : col_fail(on);
		fprintf(out, "%s%s%s: %s\n", c, r->status, col_reset(on), r->message ? r->message : "");
		const char *hint = NULL;
		if (strcmp(r->status, "no-torch") == 0)
			hint = "install PyTorch into this interpreter (`gpuvet fix` prints the pip line for the build that fits "
			       "this driver), or point tune at one that has it with --python PATH";
		else if (strcmp(r->status, "cpu-only") == 0)
			hint = "`gpuvet check` says why PyTorch cannot use a GPU here";
		else if (strcmp(r->status, "crashed") == 0 || strcmp(r->status, "timeout") == 0 ||
			 strcmp(r->status, "unreadable") == 0)
			hint = "`gpuvet tune -v` shows the probe's own messages as they come";
		if (hint)
			fprintf(out, "  %s\n", hint);
	}
}

static void table(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	if (!a->nsums)
		return;
	fprintf(out, "\n%s%-10s  %-9s %6s %9s %10s %8s %9s %8s%s\n", col_bold(on), "date", "model", "batch", "GPU ms",
		"CPU ms", "speedup", "tuned ms", "speedup", col_reset(on));
	for (size_t i = 0; i < a->nsums; i++) {
		const tune_summary *s = &a->sums[i];
		char g[24], c[24], sp[24], t[24], tsp[24];
		fmt_ms(g, sizeof(g), s->gpu_fp32 ? s->gpu_fp32->ms : NAN);
		fmt_ms(c, sizeof(c), s->cpu_fp32 ? s->cpu_fp32->ms : NAN);
		fmt_x(sp, sizeof(sp), s->speedup);
		fmt_ms(t, sizeof(t), s->best ? s->best->ms : NAN);
		fmt_x(tsp, sizeof(tsp), s->tuned_speedup);
		fprintf(out, "%-10s  %-9s %6d %9s %10s %8s %9s %8s\n", o->date, s->model, s->batch, g, c, sp, t, tsp);
	}
	int threads = -1;
	for (size_t i = 0; i < a->nsums; i++)
		if (a->sums[i].cpu_fp32 && a->sums[i].cpu_fp32->threads > 0)
			threads = a->sums[i].cpu_fp32->threads;
	fprintf(out, "%sGPU ms: fp32 with TF32 off. CPU ms: fp32", col_dim(on));
	if (threads > 0)
		fprintf(out, " on %d thread%s", threads, threads == 1 ? "" : "s");
	fprintf(out, ". tuned: the fastest settings measured");
	int shown = 0;
	for (size_t i = 0; i < a->nsums; i++)
		if (a->sums[i].best)
			fprintf(out, "%s%s: %s", shown++ ? "; " : " (", a->sums[i].model, a->sums[i].best_desc);
	if (shown)
		fputc(')', out);
	fprintf(out, ".\nEach figure: the median of timed training steps (forward, backward, optimizer) after "
		     "warm-up.%s\n",
		col_reset(on));
}

static const tune_gain *gain_of(const tune_summary *s, const tune_run *x)
{
	for (size_t i = 0; i < s->ngains; i++)
		if (s->gains[i].run == x)
			return &s->gains[i];
	return NULL;
}

static void model_heading(FILE *out, const tune_summary *s, bool on)
{
	fprintf(out, "  %s%s%s", col_bold(on), s->model, col_reset(on));
	if (s->meta) {
		fprintf(out, " (%s, batch %d", s->meta->impl[0] ? s->meta->impl : "?", s->meta->batch);
		if (s->meta->image_size > 0)
			fprintf(out, ", %dx%d images", s->meta->image_size, s->meta->image_size);
		if (s->meta->seq_len > 0)
			fprintf(out, ", sequence length %d", s->meta->seq_len);
		fputc(')', out);
	}
	fputc('\n', out);
}

static void settings_section(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	bool any = false;
	for (size_t i = 0; i < r->nruns && !any; i++)
		any = strcmp(r->runs[i].device, "cuda") == 0;
	if (!any)
		return;
	fprintf(out, "\n%sSettings%s %s(each against the run it changes; memory: peak allocated in a step)%s\n",
		col_bold(on), col_reset(on), col_dim(on), col_reset(on));
	for (size_t m = 0; m < a->nsums; m++) {
		const tune_summary *s = &a->sums[m];
		model_heading(out, s, on);
		for (size_t i = 0; i < r->nruns; i++) {
			const tune_run *x = &r->runs[i];
			if (strcmp(x->model, s->model) != 0 || strcmp(x->device, "cuda") != 0)
				continue;
			char ms[24], mem[24] = "";
			fmt_ms(ms, sizeof(ms), x->ms);
			if (isfinite(x->peak_mib))
				snprintf(mem, sizeof(mem), "%.0f MiB", x->peak_mib);
			if (strcmp(x->status, "ok") != 0) {
				fprintf(out, "    %-20s %s%s%s%s%s\n", title_of(x->setting), col_warn(on), x->status, x->reason ? ": " : "",
					x->reason ? x->reason : "", col_reset(on));
				continue;
			}
			fprintf(out, "    %-20s %9s ms %10s", title_of(x->setting), ms, mem);
			const tune_gain *g = gain_of(s, x);
			if (g) {
				char text[96];
				tune_format_gain(text, sizeof(text), g->speedup, g->mem_saving);
				const char *c = g->speedup >= TUNE_GAIN_MIN ? col_ok(on) : g->speedup < 1.0 / TUNE_GAIN_MIN ? col_warn(on) : "";
				char based[160];
				if (g->base->reference)
					str_copy(based, sizeof(based), title_of(g->base->setting));
				else
					tune_describe_config(based, sizeof(based), &g->base->cfg);
				fprintf(out, "   %s%s%s than %s", c, text, col_reset(on), based);
			} else if (x->reference) {
				fprintf(out, "   %s(the settings of anchors/bench_models.py)%s", col_dim(on), col_reset(on));
			} else if (strcmp(x->setting, "fp32") == 0) {
				fprintf(out, "   %s(baseline)%s", col_dim(on), col_reset(on));
			}
			if (isfinite(x->compile_s))
				fprintf(out, "; compiling took %.1f s", x->compile_s);
			if (isfinite(x->gpu_util) && o->verbose)
				fprintf(out, "; GPU %.0f%% busy", x->gpu_util);
			if (x->reduced)
				fprintf(out, " %s(%d steps: budget)%s", col_dim(on), x->iters, col_reset(on));
			fputc('\n', out);
			if (o->verbose) {
				char d[160], lo[24], hi[24];
				tune_describe_config(d, sizeof(d), &x->cfg);
				fmt_ms(lo, sizeof(lo), x->ms_min);
				fmt_ms(hi, sizeof(hi), x->ms_max);
				fprintf(out, "    %s%-20s %s; %d steps after %d warm-up, min %s max %s ms%s\n", col_dim(on), "", d,
					x->iters, x->warmup, lo, hi, col_reset(on));
			}
		}
	}
}

static void print_code(FILE *out, const char *code, const char *indent)
{
	const char *p = code;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		fprintf(out, "%s%.*s\n", indent, (int)n, p);
		p = nl ? nl + 1 : NULL;
	}
}

static void recs_section(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	if (!a->nsums || !tune_report_has_gpu(r))
		return;
	fprintf(out, "\n%sRecommendations%s %s(ranked by measured gain)%s\n", col_bold(on), col_reset(on), col_dim(on),
		col_reset(on));
	int rank = 0;
	bool alt_header = false;
	for (size_t i = 0; i < a->nrecs; i++) {
		const tune_rec *rec = &a->recs[i];
		if (rec->alternative && !alt_header) {
			fprintf(out, "  %salternatives to the precision above:%s\n", col_dim(on), col_reset(on));
			alt_header = true;
		}
		char text[96];
		tune_format_gain(text, sizeof(text), rec->score, rec->mem_saving);
		if (strcmp(rec->info->key, "pipeline") == 0)
			snprintf(text, sizeof(text), "%.2fx the samples/s of the defaults", rec->score);
		if (rec->alternative) {
			fprintf(out, "     %s: %s", rec->info->title, text);
		} else {
			fprintf(out, "  %d. %s%s%s: %s", ++rank, col_bold(on), rec->info->title, col_reset(on), text);
			if (rec->detail)
				fprintf(out, " with %s", rec->detail);
		}
		if (rec->nper > 1 || (rec->nper == 1 && !rec->detail)) {
			fprintf(out, " (");
			for (size_t m = 0; m < rec->nper; m++)
				fprintf(out, "%s%s %.2fx", m ? ", " : "", rec->per[m].model, rec->per[m].speedup);
			fputc(')', out);
		}
		if (rec->for_memory)
			fprintf(out, " %s(for the memory it saves)%s", col_dim(on), col_reset(on));
		fputc('\n', out);
		if (!rec->alternative) {
			if (rec->info->why && o->verbose)
				fprintf(out, "       %s%s%s\n", col_dim(on), rec->info->why, col_reset(on));
			print_code(out, rec->code, "       ");
		}
	}
	if (rank == 0)
		fprintf(out, "  none: no setting measured here gains %.0f%% or more over the one it changes\n",
			(TUNE_GAIN_MIN - 1) * 100);
}

static void pipeline_section(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	if (!r->npipes)
		return;
	const tune_pipe *p0 = &r->pipes[0];
	char desc[160];
	tune_describe_config(desc, sizeof(desc), &p0->cfg);
	int size = p0->image_size > 0 ? p0->image_size : r->image_size;
	fprintf(out, "\n%sInput pipeline%s %s(synthetic %dx%d images through a DataLoader into resnet50's training step, batch %d, %s)%s\n",
		col_bold(on), col_reset(on), col_dim(on), size, size, p0->batch, desc, col_reset(on));
	fprintf(out, "  %7s %11s %10s %7s %9s\n", "workers", "pin_memory", "samples/s", "of GPU", "GPU busy");
	for (size_t i = 0; i < r->npipes; i++) {
		const tune_pipe *p = &r->pipes[i];
		if (strcmp(p->status, "ok") != 0) {
			fprintf(out, "  %7d %11s %s%s%s%s%s\n", p->workers, p->pin_memory ? "on" : "off", col_warn(on), p->status,
				p->reason ? ": " : "", p->reason ? p->reason : "", col_reset(on));
			continue;
		}
		char frac[16] = "-", util[16] = "-";
		if (isfinite(a->pipe.gpu_samples_s) && a->pipe.gpu_samples_s > 0)
			snprintf(frac, sizeof(frac), "%.0f%%", 100.0 * p->samples_s / a->pipe.gpu_samples_s);
		if (isfinite(p->gpu_util))
			snprintf(util, sizeof(util), "%.0f%%", p->gpu_util);
		fprintf(out, "  %7d %11s %10.0f %7s %9s\n", p->workers, p->pin_memory ? "on" : "off", p->samples_s, frac, util);
	}
	const tune_pipeline_view *v = &a->pipe;
	if (isfinite(v->gpu_samples_s))
		fprintf(out, "  the GPU alone, with the batch already in its memory: %.0f samples/s\n", v->gpu_samples_s);
	if (!v->present)
		return;
	fprintf(out, "  verdict: ");
	if (v->dflt && v->starves_default)
		fprintf(out, "with the DataLoader's defaults (num_workers=0, pin_memory=False) the GPU starves: it gets %.0f%% "
			     "of the samples it could take. ",
			100 * v->dflt_fraction);
	else if (v->dflt && isfinite(v->dflt_fraction))
		fprintf(out, "the DataLoader's defaults keep up (%.0f%% of the GPU's rate). ", 100 * v->dflt_fraction);
	if (v->starves_best && v->best != v->dflt)
		fprintf(out, "Even the best here (num_workers=%d, pin_memory=%s) reaches only %.0f%%: the data preparation "
			     "is the bottleneck (more CPU cores, lighter transforms, or preprocessing on the GPU).\n",
			v->best->workers, v->best->pin_memory ? "True" : "False", 100 * v->best_fraction);
	else if (isfinite(v->best_fraction) && v->best != v->dflt)
		fprintf(out, "num_workers=%d, pin_memory=%s feeds it (%.0f%%).\n", v->best->workers,
			v->best->pin_memory ? "True" : "False", 100 * v->best_fraction);
	else
		fputc('\n', out);
	fprintf(out, "  %sJPEG decoding is not part of this test: a real image pipeline needs more CPU per sample.%s\n",
		col_dim(on), col_reset(on));
}

static void ddp_section(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	const tune_ddp *d = &r->ddp;
	if (!d->present)
		return;
	fprintf(out, "\n%sMulti-GPU%s %s(DistributedDataParallel, NCCL, one process per GPU)%s\n", col_bold(on),
		col_reset(on), col_dim(on), col_reset(on));
	if (strcmp(d->status, "ok") != 0) {
		fprintf(out, "  %s%s%s: %s\n", col_warn(on), d->status, col_reset(on), d->reason ? d->reason : "no figure");
		return;
	}
	char ddp[24], one[24], desc[160];
	fmt_ms(ddp, sizeof(ddp), d->ddp_ms);
	fmt_ms(one, sizeof(one), d->single_ms);
	tune_describe_config(desc, sizeof(desc), &d->cfg);
	fprintf(out, "  %s over %d GPUs, batch %d per GPU, %s: %s ms a step, %s ms on one GPU", d->model, d->world_size,
		d->batch_per_gpu, desc, ddp, one);
	if (isfinite(d->efficiency))
		fprintf(out, ": %.1f%% scaling efficiency", 100 * d->efficiency);
	if (isfinite(d->samples_s) && isfinite(d->single_samples_s))
		fprintf(out, " (%.0f samples/s against %.0f on one GPU)", d->samples_s, d->single_samples_s);
	fputc('\n', out);
	if (d->nranks) {
		fprintf(out, "  peak memory per GPU:");
		for (size_t i = 0; i < d->nranks; i++) {
			if (isfinite(d->ranks[i].peak_mib))
				fprintf(out, "%s %.0f", i ? " /" : "", d->ranks[i].peak_mib);
			else
				fprintf(out, "%s ?", i ? " /" : "");
		}
		fprintf(out, " MiB");
		if (isfinite(d->memory_balance))
			fprintf(out, " (smallest/largest %.0f%%)", 100 * d->memory_balance);
		fputc('\n', out);
	}
	if (a->ddp_word)
		fprintf(out, "  verdict: %s%s%s\n", strcmp(a->ddp_word, "scales well") == 0 ? col_ok(on) : col_warn(on),
			a->ddp_word, col_reset(on));
}

static void verdict_section(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	bool on = o->color;
	if (!tune_report_has_gpu(r))
		return;
	if (!a->nverdicts) {
		fprintf(out, "\n%sVerdict%s: the knowledge base (data/tune_expect.csv) has no figures for %s with these models "
			     "and shapes%s\n",
			col_bold(on), col_reset(on), r->env.gpu_name ? r->env.gpu_name : "this GPU",
			" (ResNet-50 batch 64 at 224x224, BERT-base batch 32 at sequence length 128, from torchvision/transformers)");
		return;
	}
	fprintf(out, "\n%sVerdict against %s figures%s %s(%s)%s\n", col_bold(on), a->verdicts[0].gpu, col_reset(on),
		col_dim(on), a->verdicts[0].source ? a->verdicts[0].source : "", col_reset(on));
	for (size_t i = 0; i < a->nverdicts; i++) {
		const tune_verdict *v = &a->verdicts[i];
		bool ms = strcmp(v->metric, "step_ms") == 0;
		const char *c = v->bad ? col_fail(on) : strcmp(v->word, "as expected") == 0 ? col_ok(on) : col_warn(on);
		char m[48], e[48];
		snprintf(m, sizeof(m), "%.2f %s", v->measured, ms ? "ms" : "MiB");
		snprintf(e, sizeof(e), "%.2f %s", v->expected, ms ? "ms" : "MiB");
		fprintf(out, "  %-9s batch %-4d %-19s %s %12s, expected %12s: %s%s%s", v->model, v->batch,
			title_of(v->setting), ms ? "step" : "peak", m, e, c, v->word, col_reset(on));
		if (ms)
			fprintf(out, " (%.0f%% of the expected speed, tolerance %.0f%%)", 100 * v->ratio,
				100 * v->tolerance);
		fputc('\n', out);
	}
	if (a->any_bad_verdict && o->cond && o->cond->slowed)
		fprintf(out, "  %sthe GPU was slowed during the timed steps (%s): that explains a slow step%s\n", col_warn(on),
			o->cond->reasons, col_reset(on));
	else if (a->any_bad_verdict)
		fprintf(out, "  %sa slow step: look for other processes on the GPU, a lower power limit or clocks "
			     "(gpuvet watch, nvidia-smi -q -d PERFORMANCE)%s\n",
			col_dim(on), col_reset(on));
}

static void conditions_line(FILE *out, const tune_render_opts *o)
{
	const tune_conditions *c = o->cond;
	if (!c || !c->samples)
		return;
	bool on = o->color;
	fprintf(out, "\n%sGPU during the timed steps (NVML, %d samples):", col_dim(on), c->samples);
	if (isfinite(c->sm_clock_mhz))
		fprintf(out, " SM clock %.0f MHz", c->sm_clock_mhz);
	if (isfinite(c->temperature_max_c))
		fprintf(out, ", at most %.0f C", c->temperature_max_c);
	if (isfinite(c->power_w))
		fprintf(out, ", %.0f W on average", c->power_w);
	fprintf(out, "%s", col_reset(on));
	if (c->slowed)
		fprintf(out, ", %sslowed: %s%s", col_warn(on), c->reasons, col_reset(on));
	fputc('\n', out);
}

static void notes_section(FILE *out, const tune_report *r, const tune_render_opts *o)
{
	bool on = o->color;
	for (size_t i = 0; i < r->notes.n; i++)
		fprintf(out, "%snote: %s%s\n", i == 0 ? "\n" : "", r->notes.v[i], col_reset(on));
	if (r->skipped.n && (o->verbose || r->skipped.n <= 8)) {
		fprintf(out, "\n%sNot measured:%s\n", col_dim(on), col_reset(on));
		for (size_t i = 0; i < r->skipped.n; i++)
			fprintf(out, "  %s\n", r->skipped.v[i]);
	} else if (r->skipped.n) {
		fprintf(out, "\n%s%zu steps were not measured (-v lists them)%s\n", col_dim(on), r->skipped.n, col_reset(on));
	}
}

void tune_render_text(FILE *out, const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	header(out, r, o->color);
	table(out, r, a, o);
	settings_section(out, r, a, o);
	recs_section(out, r, a, o);
	pipeline_section(out, r, a, o);
	ddp_section(out, r, a, o);
	verdict_section(out, r, a, o);
	if (o->verbose || (o->cond && o->cond->slowed))
		conditions_line(out, o);
	notes_section(out, r, o);
}

/* ---- JSON: one table per struct written (core/json.h) ---- */

static const json_field config_fields[] = {
	JF(tune_config, JF_TEXT, "precision", precision),
	JF(tune_config, JF_BOOL, "grad_scaler", grad_scaler),
	JF(tune_config, JF_BOOL, "channels_last", channels_last),
	JF(tune_config, JF_BOOL, "cudnn_benchmark", cudnn_benchmark),
	JF(tune_config, JF_BOOL, "tf32_matmul", tf32_matmul),
	JF(tune_config, JF_BOOL, "tf32_cudnn", tf32_cudnn),
	JF(tune_config, JF_BOOL, "compile", compile),
};

/* a run after its setting and title */
static const json_field run_fields[] = {
	JF(tune_run, JF_TEXT, "device", device),     JF(tune_run, JF_TEXT, "status", status),
	JF(tune_run, JF_PTR, "reason", reason),      JF(tune_run, JF_TEXT, "base", base),
	JF(tune_run, JF_BOOL, "reference", reference), JF(tune_run, JF_INT, "batch", batch),
	JF(tune_run, JF_NUM, "ms", ms),              JF(tune_run, JF_NUM, "ms_min", ms_min),
	JF(tune_run, JF_NUM, "ms_max", ms_max),      JF(tune_run, JF_INT, "iters", iters),
	JF(tune_run, JF_INT, "warmup", warmup),      JF(tune_run, JF_NUM, "peak_mib", peak_mib),
	JF(tune_run, JF_NUM, "compile_s", compile_s), JF(tune_run, JF_NUM, "gpu_util", gpu_util),
};

/* the environment: before cudnn, and after it */
static const json_field env_fields[] = {
	JF(tune_env, JF_PTR, "python", python),
	JF(tune_env, JF_PTR, "executable", executable),
	JF(tune_env, JF_PTR, "torch", torch),
	JF(tune_env, JF_PTR, "torch_cuda", torch_cuda),
};
static const json_field env_fields2[] = {
	JF(tune_env, JF_PTR, "torchvision", torchvision),   JF(tune_env, JF_PTR, "transformers", transformers),
	JF(tune_env, JF_BOOL, "cuda_available", cuda_available), JF(tune_env, JF_INT, "gpu_count", gpu_count),
	JF(tune_env, JF_PTR, "gpu_name", gpu_name),         JF(tune_env, JF_PTR, "gpu_cc", gpu_cc),
	JF(tune_env, JF_PTR, "gpu_uuid", gpu_uuid),         JF(tune_env, JF_NUM, "gpu_memory_mib", gpu_memory_mib),
	JF(tune_env, JF_BOOL, "bf16_supported", bf16_supported), JF(tune_env, JF_PTR, "cpu", cpu),
	JF(tune_env, JF_INT, "cpu_count", cpu_count),       JF(tune_env, JF_INT, "cpu_threads", cpu_threads),
};

static const json_field pipe_fields[] = {
	JF(tune_pipe, JF_NUMBER, "workers", workers), JF(tune_pipe, JF_BOOL, "pin_memory", pin_memory),
	JF(tune_pipe, JF_TEXT, "status", status),     JF(tune_pipe, JF_PTR, "reason", reason),
	JF(tune_pipe, JF_INT, "batch", batch),        JF(tune_pipe, JF_TEXT, "setting", setting),
	JF(tune_pipe, JF_NUM, "samples_s", samples_s), JF(tune_pipe, JF_NUM, "gpu_util", gpu_util),
};

static const json_field ddp_fields[] = {
	JF(tune_ddp, JF_TEXT, "status", status),
	JF(tune_ddp, JF_PTR, "reason", reason),
	JF(tune_ddp, JF_TEXT, "model", model),
	JF(tune_ddp, JF_TEXT, "setting", setting),
	JF(tune_ddp, JF_INT, "world_size", world_size),
	JF(tune_ddp, JF_INT, "batch_per_gpu", batch_per_gpu),
	JF(tune_ddp, JF_NUM, "single_ms", single_ms),
	JF(tune_ddp, JF_NUM, "ddp_ms", ddp_ms),
	JF(tune_ddp, JF_NUM, "efficiency", efficiency),
	JF(tune_ddp, JF_NUM, "samples_s", samples_s),
	JF(tune_ddp, JF_NUM, "single_samples_s", single_samples_s),
	JF(tune_ddp, JF_NUM, "memory_balance", memory_balance),
};

static const json_field rank_fields[] = {
	JF(tune_rank, JF_INT, "rank", rank),
	JF(tune_rank, JF_NUM, "ms", ms),
	JF(tune_rank, JF_NUM, "peak_mib", peak_mib),
	JF(tune_rank, JF_PTR, "error", error),
};

/* a recommendation after its rank, setting and title */
static const json_field rec_fields[] = {
	JF(tune_rec, JF_NUM, "speedup", score),
	JF(tune_rec, JF_NUM, "mem_saving", mem_saving),
	JF(tune_rec, JF_BOOL, "alternative", alternative),
	JF(tune_rec, JF_BOOL, "for_memory", for_memory),
	JF(tune_rec, JF_PTR, "detail", detail),
};

static const json_field rec_model_fields[] = {
	JF(tune_rec_model, JF_PTR, "model", model),
	JF(tune_rec_model, JF_PTR, "base", base_setting),
	JF(tune_rec_model, JF_NUM, "speedup", speedup),
	JF(tune_rec_model, JF_NUM, "mem_saving", mem_saving),
};

/* the DataLoader summary before its configurations */
static const json_field pipeline_fields[] = {
	JF(tune_pipeline_view, JF_NUM, "gpu_samples_s", gpu_samples_s),
	JF(tune_pipeline_view, JF_NUM, "default_fraction", dflt_fraction),
	JF(tune_pipeline_view, JF_NUM, "best_fraction", best_fraction),
	JF(tune_pipeline_view, JF_BOOL, "starves_default", starves_default),
	JF(tune_pipeline_view, JF_BOOL, "starves_best", starves_best),
	JF(tune_pipeline_view, JF_NUM, "gain", gain),
};

static const json_field verdict_fields[] = {
	JF(tune_verdict, JF_PTR, "gpu", gpu),
	JF(tune_verdict, JF_PTR, "model", model),
	JF(tune_verdict, JF_INT, "batch", batch),
	JF(tune_verdict, JF_PTR, "setting", setting),
	JF(tune_verdict, JF_PTR, "metric", metric),
	JF(tune_verdict, JF_NUM, "measured", measured),
	JF(tune_verdict, JF_NUM, "expected", expected),
	JF(tune_verdict, JF_NUM, "tolerance", tolerance),
	JF(tune_verdict, JF_NUM, "ratio", ratio),
	JF(tune_verdict, JF_PTR, "verdict", word),
	JF(tune_verdict, JF_BOOL, "slow", bad),
	JF(tune_verdict, JF_PTR, "source", source),
};

/* the GPU during the timed steps */
static const json_field conditions_fields[] = {
	JF(tune_conditions, JF_NUMBER, "nvml_index", index),
	JF(tune_conditions, JF_NUMBER, "samples", samples),
	JF(tune_conditions, JF_NUM, "sm_clock_mhz", sm_clock_mhz),
	JF(tune_conditions, JF_NUM, "mem_clock_mhz", mem_clock_mhz),
	JF(tune_conditions, JF_NUM, "power_w", power_w),
	JF(tune_conditions, JF_NUM, "temperature_max_c", temperature_max_c),
	JF(tune_conditions, JF_TEXT, "slowed_by", reasons),
};

static cJSON *config_json(const tune_config *c)
{
	return json_fields_object(c, config_fields, GV_ARRAY_LEN(config_fields));
}

static cJSON *run_json(const tune_run *x, const tune_summary *s)
{
	cJSON *o = cJSON_CreateObject();
	json_add_text(o, "setting", x->setting);
	json_add_text(o, "title", title_of(x->setting));
	json_add_fields(o, x, run_fields, GV_ARRAY_LEN(run_fields));
	if (x->threads > 0)
		cJSON_AddNumberToObject(o, "threads", x->threads);
	const tune_gain *g = s ? gain_of(s, x) : NULL;
	json_add_num(o, "speedup_vs_base", g ? g->speedup : NAN);
	json_add_num(o, "mem_saving_vs_base", g ? g->mem_saving : NAN);
	cJSON_AddItemToObject(o, "config", config_json(&x->cfg));
	return o;
}

static cJSON *code_lines(const char *code)
{
	cJSON *arr = cJSON_CreateArray();
	strlist l = {0};
	sl_split(&l, code ? code : "", "\n", false);
	for (size_t i = 0; i < l.n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(l.v[i]));
	sl_free(&l);
	return arr;
}

static cJSON *strlist_json(const strlist *l)
{
	cJSON *arr = cJSON_CreateArray();
	for (size_t i = 0; i < l->n; i++)
		cJSON_AddItemToArray(arr, cJSON_CreateString(l->v[i]));
	return arr;
}

static cJSON *env_json(const tune_env *e)
{
	cJSON *o = json_fields_object(e, env_fields, GV_ARRAY_LEN(env_fields));
	if (e->cudnn > 0)
		cJSON_AddNumberToObject(o, "cudnn", (double)e->cudnn);
	else
		cJSON_AddNullToObject(o, "cudnn");
	json_add_fields(o, e, env_fields2, GV_ARRAY_LEN(env_fields2));
	return o;
}

cJSON *tune_render_json(const tune_report *r, const tune_advice *a, const tune_render_opts *o)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "schema", "gpuvet.tune/1");
	cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
	cJSON_AddStringToObject(tool, "name", "gpuvet");
	cJSON_AddStringToObject(tool, "version", GPUVET_VERSION);
	json_add_text(doc, "date", o->date);
	json_add_text(doc, "started", r->started);
	json_add_text(doc, "status", r->status);
	json_add_text(doc, "message", r->message);
	cJSON_AddBoolToObject(doc, "partial", r->from_lines);
	json_add_num(doc, "budget_s", r->budget_s);
	json_add_num(doc, "elapsed_s", r->elapsed_s);
	cJSON_AddItemToObject(doc, "env", env_json(&r->env));

	cJSON *models = cJSON_AddArrayToObject(doc, "models");
	for (size_t i = 0; i < a->nsums; i++) {
		const tune_summary *s = &a->sums[i];
		cJSON *m = cJSON_CreateObject();
		json_add_text(m, "model", s->model);
		json_add_text(m, "impl", s->meta ? s->meta->impl : NULL);
		json_add_count(m, "batch", s->batch);
		json_add_count(m, "image_size", s->meta ? s->meta->image_size : -1);
		json_add_count(m, "seq_len", s->meta ? s->meta->seq_len : -1);
		json_add_num(m, "params", s->meta ? s->meta->params : NAN);
		json_add_num(m, "gpu_fp32_ms", s->gpu_fp32 ? s->gpu_fp32->ms : NAN);
		json_add_num(m, "cpu_fp32_ms", s->cpu_fp32 ? s->cpu_fp32->ms : NAN);
		json_add_num(m, "speedup", s->speedup);
		json_add_num(m, "tuned_ms", s->best ? s->best->ms : NAN);
		json_add_text(m, "tuned_setting", s->best ? s->best->setting : NULL);
		json_add_text(m, "tuned_description", s->best ? s->best_desc : NULL);
		json_add_num(m, "tuned_speedup", s->tuned_speedup);
		json_add_num(m, "tuned_gain", s->tuned_gain);
		cJSON *runs = cJSON_AddArrayToObject(m, "runs");
		for (size_t k = 0; k < r->nruns; k++)
			if (strcmp(r->runs[k].model, s->model) == 0)
				cJSON_AddItemToArray(runs, run_json(&r->runs[k], s));
		cJSON_AddItemToArray(models, m);
	}

	cJSON *recs = cJSON_AddArrayToObject(doc, "recommendations");
	int rank = 0;
	for (size_t i = 0; i < a->nrecs; i++) {
		const tune_rec *rec = &a->recs[i];
		cJSON *x = cJSON_CreateObject();
		if (!rec->alternative)
			cJSON_AddNumberToObject(x, "rank", ++rank);
		else
			cJSON_AddNullToObject(x, "rank");
		json_add_text(x, "setting", rec->info->key);
		json_add_text(x, "title", rec->info->title);
		json_add_fields(x, rec, rec_fields, GV_ARRAY_LEN(rec_fields));
		cJSON *per = cJSON_AddArrayToObject(x, "per_model");
		for (size_t m = 0; m < rec->nper; m++)
			cJSON_AddItemToArray(per, json_fields_object(&rec->per[m], rec_model_fields, GV_ARRAY_LEN(rec_model_fields)));
		cJSON_AddItemToObject(x, "code", code_lines(rec->code));
		cJSON_AddItemToArray(recs, x);
	}

	if (r->npipes) {
		cJSON *p = cJSON_AddObjectToObject(doc, "pipeline");
		json_add_fields(p, &a->pipe, pipeline_fields, GV_ARRAY_LEN(pipeline_fields));
		cJSON *cfgs = cJSON_AddArrayToObject(p, "configs");
		for (size_t i = 0; i < r->npipes; i++)
			cJSON_AddItemToArray(cfgs, json_fields_object(&r->pipes[i], pipe_fields, GV_ARRAY_LEN(pipe_fields)));
	} else {
		cJSON_AddNullToObject(doc, "pipeline");
	}

	if (r->ddp.present) {
		const tune_ddp *d = &r->ddp;
		cJSON *x = cJSON_AddObjectToObject(doc, "ddp");
		json_add_fields(x, d, ddp_fields, GV_ARRAY_LEN(ddp_fields));
		json_add_text(x, "verdict", a->ddp_word);
		cJSON *ranks = cJSON_AddArrayToObject(x, "ranks");
		for (size_t i = 0; i < d->nranks; i++)
			cJSON_AddItemToArray(ranks, json_fields_object(&d->ranks[i], rank_fields, GV_ARRAY_LEN(rank_fields)));
	} else {
		cJSON_AddNullToObject(doc, "ddp");
	}

	cJSON *verdicts = cJSON_AddArrayToObject(doc, "verdicts");
	for (size_t i = 0; i < a->nverdicts; i++)
		cJSON_AddItemToArray(verdicts, json_fields_object(&a->verdicts[i], verdict_fields, GV_ARRAY_LEN(verdict_fields)));
	if (o->cond && o->cond->samples) {
		cJSON_AddItemToObject(doc, "gpu_conditions",
				      json_fields_object(o->cond, conditions_fields, GV_ARRAY_LEN(conditions_fields)));
	} else {
		cJSON_AddNullToObject(doc, "gpu_conditions");
	}
	cJSON_AddItemToObject(doc, "notes", strlist_json(&r->notes));
	cJSON_AddItemToObject(doc, "skipped", strlist_json(&r->skipped));
	return doc;
}
