#include "bench/report.h"
#include "core/factkeys.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void report_init(bench_report *r)
{
	memset(r, 0, sizeof(*r));
	r->facts = facts_new();
}

static void figure_free(bench_figure *f)
{
	free(f->id);
	free(f->group);
	free(f->title);
	free(f->unit);
	free(f->peak_how);
	free(f->verify_text);
	free(f->note);
}

void report_free(bench_report *r)
{
	for (size_t i = 0; i < r->n; i++)
		figure_free(&r->v[i]);
	free(r->v);
	sl_free(&r->notes);
	facts_free(r->facts);
	memset(r, 0, sizeof(*r));
}

static bench_figure *add(bench_report *r, const char *id, const char *group, const char *unit, char *title)
{
	bench_figure *f = report_find(r, id);
	if (f) { /* measured again (e.g. a retry): the later one counts */
		figure_free(f);
	} else {
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 32;
			r->v = xrealloc(r->v, r->cap * sizeof(*r->v));
		}
		f = &r->v[r->n++];
	}
	memset(f, 0, sizeof(*f));
	f->id = xstrdup(id);
	f->group = xstrdup(group);
	f->unit = xstrdup(unit);
	f->title = title;
	f->verified = VERIFY_NONE;
	f->gpu = -1;
	f->st.median = f->st.min = f->st.max = f->st.mean = NAN;
	f->lower_is_better = strcmp(unit, "us") == 0;
	return f;
}

bench_figure *report_add(bench_report *r, const char *id, const char *group, const char *unit, const char *titlefmt,
			 ...)
{
	va_list ap;
	va_start(ap, titlefmt);
	char *title = xvasprintf(titlefmt, ap);
	va_end(ap);
	return add(r, id, group, unit, title);
}

bench_figure *report_skip(bench_report *r, const char *id, const char *group, const char *unit, const char *title,
			  const char *whyfmt, ...)
{
	bench_figure *f = add(r, id, group, unit, xstrdup(title));
	va_list ap;
	va_start(ap, whyfmt);
	f->note = xvasprintf(whyfmt, ap);
	va_end(ap);
	f->skipped = true;
	return f;
}

bench_figure *report_find(const bench_report *r, const char *id)
{
	for (size_t i = 0; i < r->n; i++)
		if (strcmp(r->v[i].id, id) == 0)
			return &r->v[i];
	return NULL;
}

void report_note(bench_report *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	if (!sl_contains(&r->notes, s))
		sl_push(&r->notes, s);
	free(s);
}

void figure_set_note(bench_figure *f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	if (f->note) {
		char *both = xasprintf("%s; %s", f->note, s);
		free(f->note);
		free(s);
		s = both;
	}
	f->note = s;
}

void figure_set_peak(bench_figure *f, double peak, const char *how)
{
	f->peak = peak;
	free(f->peak_how);
	f->peak_how = how ? xstrdup(how) : NULL;
}

void figure_set_verified(bench_figure *f, bool ok, const char *text)
{
	f->verified = ok ? VERIFY_OK : VERIFY_FAILED;
	free(f->verify_text);
	f->verify_text = text ? xstrdup(text) : NULL;
}

double figure_pct(const bench_figure *f)
{
	if (f->st.n == 0 || !(f->peak > 0))
		return NAN;
	return f->st.median / f->peak * 100;
}

void report_facts(bench_report *r)
{
	static const char src[] = "gpuvet bench";
	for (size_t i = 0; i < r->n; i++) {
		const bench_figure *f = &r->v[i];
		if (f->skipped) {
			facts_put_state(r->facts, FACT_ABSENT, src, f->note ? f->note : "not measured", FK_BENCH_FIGURE_VALUE,
					f->id);
			facts_put_bool(r->facts, src, true, FK_BENCH_FIGURE_SKIPPED, f->id);
			continue;
		}
		if (f->st.n == 0)
			continue;
		facts_put_real(r->facts, src, f->st.median, FK_BENCH_FIGURE_VALUE, f->id);
		facts_put_real(r->facts, src, f->st.min, FK_BENCH_FIGURE_MIN, f->id);
		facts_put_real(r->facts, src, f->st.max, FK_BENCH_FIGURE_MAX, f->id);
		facts_put_real(r->facts, src, f->st.spread, FK_BENCH_FIGURE_SPREAD, f->id);
		facts_put_int(r->facts, src, (long long)f->st.n, FK_BENCH_FIGURE_REPEATS, f->id);
		facts_put_str(r->facts, src, f->unit, FK_BENCH_FIGURE_UNIT, f->id);
		if (f->peak > 0) {
			facts_put_real(r->facts, src, f->peak, FK_BENCH_FIGURE_PEAK, f->id);
			facts_put_real(r->facts, src, figure_pct(f), FK_BENCH_FIGURE_PCT_PEAK, f->id);
		}
		if (f->verified != VERIFY_NONE)
			facts_put_bool(r->facts, src, f->verified == VERIFY_OK, FK_BENCH_FIGURE_VERIFIED, f->id);
		if (f->verified == VERIFY_FAILED && f->verify_text)
			facts_put_str(r->facts, src, f->verify_text, FK_BENCH_FIGURE_VERIFY_TEXT, f->id);
		if (f->size > 0)
			facts_put_int(r->facts, src, f->size, FK_BENCH_FIGURE_SIZE, f->id);
		if (f->clock_mhz > 0)
			facts_put_real(r->facts, src, f->clock_mhz, FK_BENCH_FIGURE_CLOCK_MHZ, f->id);
		if (f->activity_window_s > 0 || (isfinite(f->sm_active) && f->sm_active > 0)) {
			if (isfinite(f->sm_active))
				facts_put_real(r->facts, src, f->sm_active, FK_BENCH_FIGURE_SM_ACTIVE, f->id);
			if (isfinite(f->tensor_active))
				facts_put_real(r->facts, src, f->tensor_active, FK_BENCH_FIGURE_TENSOR_ACTIVE, f->id);
			if (isfinite(f->dram_active))
				facts_put_real(r->facts, src, f->dram_active, FK_BENCH_FIGURE_DRAM_ACTIVE, f->id);
		}
		if (f->activity_window_s > 0) {
			facts_put_real(r->facts, src, f->activity_window_s, FK_BENCH_FIGURE_ACTIVITY_WINDOW_S, f->id);
			facts_put_real(r->facts, src, f->activity_busy_s, FK_BENCH_FIGURE_ACTIVITY_BUSY_S, f->id);
			if (isfinite(f->window_sm_active))
				facts_put_real(r->facts, src, f->window_sm_active, FK_BENCH_FIGURE_WINDOW_SM_ACTIVE, f->id);
			if (isfinite(f->window_tensor_active))
				facts_put_real(r->facts, src, f->window_tensor_active, FK_BENCH_FIGURE_WINDOW_TENSOR_ACTIVE, f->id);
			if (isfinite(f->window_dram_active))
				facts_put_real(r->facts, src, f->window_dram_active, FK_BENCH_FIGURE_WINDOW_DRAM_ACTIVE, f->id);
		}
		if (f->gpu >= 0)
			facts_put_int(r->facts, src, f->gpu, FK_BENCH_FIGURE_GPU, f->id);
	}
}

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *report_json(const bench_report *r, const findings *fs)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "schema", "gpuvet.bench/1");
	cJSON_AddStringToObject(doc, "tool", "gpuvet " GPUVET_VERSION);
	cJSON_AddStringToObject(doc, "mode", r->quick ? "quick" : "full");
	cJSON_AddNumberToObject(doc, "started", r->started);
	cJSON_AddNumberToObject(doc, "seconds", r->seconds);
	cJSON *figs = cJSON_AddArrayToObject(doc, "figures");
	for (size_t i = 0; i < r->n; i++) {
		const bench_figure *f = &r->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", f->id);
		cJSON_AddStringToObject(o, "group", f->group);
		cJSON_AddStringToObject(o, "title", f->title);
		cJSON_AddStringToObject(o, "unit", f->unit);
		if (f->skipped) {
			cJSON_AddBoolToObject(o, "skipped", true);
		} else {
			cJSON_AddItemToObject(o, "value", num_or_null(f->st.n ? f->st.median : NAN));
			cJSON_AddItemToObject(o, "min", num_or_null(f->st.n ? f->st.min : NAN));
			cJSON_AddItemToObject(o, "max", num_or_null(f->st.n ? f->st.max : NAN));
			cJSON_AddItemToObject(o, "spread", num_or_null(f->st.n ? f->st.spread : NAN));
			cJSON_AddNumberToObject(o, "repeats", (double)f->st.n);
			if (f->st.nsamples > 1) {
				cJSON *sa = cJSON_AddArrayToObject(o, "samples");
				for (size_t k = 0; k < f->st.nsamples; k++)
					cJSON_AddItemToArray(sa, num_or_null(f->st.samples[k]));
			}
			cJSON_AddBoolToObject(o, "lower_is_better", f->lower_is_better);
		}
		if (f->peak > 0) {
			cJSON_AddNumberToObject(o, "peak", f->peak);
			cJSON_AddItemToObject(o, "pct_peak", num_or_null(figure_pct(f)));
			if (f->peak_how)
				cJSON_AddStringToObject(o, "peak_how", f->peak_how);
		}
		if (f->verified != VERIFY_NONE)
			cJSON_AddBoolToObject(o, "verified", f->verified == VERIFY_OK);
		if (f->verify_text)
			cJSON_AddStringToObject(o, "verification", f->verify_text);
		if (f->gpu >= 0)
			cJSON_AddNumberToObject(o, "gpu", f->gpu);
		if (f->size > 0)
			cJSON_AddNumberToObject(o, "size", (double)f->size);
		if (f->clock_mhz > 0)
			cJSON_AddNumberToObject(o, "sm_clock_mhz", f->clock_mhz);
		if (f->activity_window_s > 0 || (isfinite(f->sm_active) && f->sm_active > 0)) {
			cJSON *a = cJSON_AddObjectToObject(o, "activity");
			cJSON_AddItemToObject(a, "sm_active_ratio", num_or_null(f->sm_active));
			cJSON_AddItemToObject(a, "tensor_active_ratio", num_or_null(f->tensor_active));
			cJSON_AddItemToObject(a, "dram_active_ratio", num_or_null(f->dram_active));
			if (f->activity_window_s > 0) {
				cJSON_AddNumberToObject(a, "window_seconds", f->activity_window_s);
				cJSON_AddNumberToObject(a, "busy_seconds", f->activity_busy_s);
				if (isfinite(f->pcie_rx_bps))
					cJSON_AddNumberToObject(a, "pcie_rx_bytes_per_second", f->pcie_rx_bps);
				if (isfinite(f->pcie_tx_bps))
					cJSON_AddNumberToObject(a, "pcie_tx_bytes_per_second", f->pcie_tx_bps);
				cJSON *w = cJSON_AddObjectToObject(a, "window");
				cJSON_AddItemToObject(w, "sm_active_ratio", num_or_null(f->window_sm_active));
				cJSON_AddItemToObject(w, "tensor_active_ratio", num_or_null(f->window_tensor_active));
				cJSON_AddItemToObject(w, "dram_active_ratio", num_or_null(f->window_dram_active));
			}
		}
		if (f->note)
			cJSON_AddStringToObject(o, "note", f->note);
		cJSON_AddItemToArray(figs, o);
	}
	cJSON *notes = cJSON_AddArrayToObject(doc, "notes");
	for (size_t i = 0; i < r->notes.n; i++)
		cJSON_AddItemToArray(notes, cJSON_CreateString(r->notes.v[i]));
	cJSON *fj = cJSON_AddArrayToObject(doc, "findings");
	for (size_t i = 0; fs && i < fs->n; i++) {
		const finding *x = &fs->v[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", x->id);
		cJSON_AddStringToObject(o, "severity", severity_name(x->sev));
		cJSON_AddStringToObject(o, "title", x->title);
		cJSON *ev = cJSON_AddArrayToObject(o, "evidence");
		for (size_t k = 0; k < x->evidence.n; k++)
			cJSON_AddItemToArray(ev, cJSON_CreateString(x->evidence.v[k]));
		cJSON *fix = cJSON_AddArrayToObject(o, "fix");
		for (size_t k = 0; k < x->fix.n; k++)
			cJSON_AddItemToArray(fix, cJSON_CreateString(x->fix.v[k]));
		cJSON_AddItemToArray(fj, o);
	}
	if (fs) {
		finding_counts c = findings_count(fs);
		cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
		cJSON_AddNumberToObject(sum, "fail", c.fail);
		cJSON_AddNumberToObject(sum, "warn", c.warn);
		cJSON_AddNumberToObject(sum, "info", c.info);
	}
	cJSON_AddItemToObject(doc, "facts", facts_to_json(r->facts));
	return doc;
}

static const struct {
	const char *group, *title, *explain;
} groups[] = {
	{"gemm", "GEMM (cuBLASLt)",
	 "D = A x B with square n x n matrices through cuBLASLt: fp64, fp32 (no TF32), tf32 (fp32 data on TF32 tensor "
	 "cores), fp16 and bf16 (fp32 accumulate, same type out), fp8 e4m3 (transposed A, scale factors 1, bf16 out) and "
	 "int8 (int32 out). Inputs are random non-zero values made on the GPU. The fastest of cuBLASLt's top heuristic "
	 "algorithms (64 MiB workspace) is timed with CUDA events after a warm-up, one GEMM per repeat, the GPU resting "
	 "as long as a GEMM of 5 ms or more took between repeats (back to back, long GEMMs hold the GPU at its power "
	 "limit, where the clock swings), each behind a short spinning kernel so that the events time the GEMM and not the host "
	 "enqueueing it, with no NVML call meanwhile; "
	 "TFLOP/s = 2 n^3 / time, the median of the repeats. A sample of output elements is recomputed on the CPU and "
	 "must agree within the data type's error bound. % of peak: against SMs x FMA/clk/SM x 2 x the SM clock NVML "
	 "reported right after the repeats."},
	{"speedup", "Mixed precision and CPU vs GPU",
	 "Plain ratios of the median figures above: each GEMM data type against fp32 on the same GPU at the same size, "
	 "and the GPU against the CPU's BLAS at the same size."},
	{"memory", "Device memory bandwidth",
	 "PTX kernels over arrays of at least 4x the L2 cache with 16-byte loads and stores: copy (c = a), scale (b = s c), "
	 "add (c = a + b), triad (a = b + s c), read (a sum of a). GB/s counts bytes read plus bytes written, timed with "
	 "CUDA events; the best of a few launch shapes is used. Results are checked against their expected values. "
	 "% of the memory's peak from the knowledge base."},
	{"transfer", "Host <-> device transfers",
	 "cuMemcpy of one buffer (1 GiB unless --transfer-mib) between host and GPU: from pinned (page-locked) host "
	 "memory and from ordinary pageable memory, each direction alone and both at once on two streams. GB/s per "
	 "direction; both-ways figures count the bytes of both directions. % of the PCIe link's rate for the generation "
	 "and width NVML reported during the transfer."},
	{"launch", "Kernel launch",
	 "An empty PTX kernel: back to back (host time of N cuLaunchKernel calls and one synchronize, divided by N), "
	 "launch plus cuStreamSynchronize per kernel, and replay of a CUDA graph of N kernels (per kernel). Measured "
	 "first, after at least a second of the same loop as warm-up."},
	{"p2p", "GPU to GPU",
	 "cuDeviceCanAccessPeer for every pair, then cuMemcpyPeerAsync of 256 MiB (1 GiB in the full run) with peer "
	 "access enabled: one way, and both ways at once (sum of both directions)."},
	{"nccl", "NCCL collectives",
	 "One process drives every visible GPU (ncclCommInitAll, group calls). Bus bandwidth as nccl-tests defines it: "
	 "algbw = bytes / time, busbw = algbw x 2(n-1)/n for all-reduce and x (n-1)/n for all-gather and reduce-scatter. "
	 "Each result is checked. NCCL_NVLS_ENABLE=0 unless already set."},
	{"cpu", "CPU baseline (BLAS)",
	 "sgemm and dgemm of the system's BLAS (OpenBLAS preferred) on every core, at the GEMM size (smaller when one "
	 "multiplication would take too long: the size is shown). Random inputs, results checked like the GPU's."},
	{"monitor", "During the run",
	 "NVML sampled every 100 ms: SM clock, temperature, power, clock event reasons, PCIe link; not while GEMMs, "
	 "launches, P2P copies and collectives are timed (NVML's calls take the driver's locks). On GPUs with GPM, each "
	 "GEMM and bandwidth figure's activity (SM, tensor, DRAM) comes from a window of its own: a GPM sample right "
	 "before its first timed repeat and one right after its last, scaled to the GPU time of the repeats."},
};

const char *report_group_at(size_t i, const char **title)
{
	if (i >= GV_ARRAY_LEN(groups))
		return NULL;
	if (title)
		*title = groups[i].title;
	return groups[i].group;
}

char *report_result_name(const char *id, long long size)
{
	if ((str_starts(id, "gemm.") || str_starts(id, "cpu.gemm.")) && !strstr(id, ".n") && size > 0)
		return xasprintf("%s.%lld", id, size);
	return xstrdup(id);
}

const char *report_explain(const char *group)
{
	for (size_t i = 0; i < GV_ARRAY_LEN(groups); i++)
		if (strcmp(groups[i].group, group) == 0)
			return groups[i].explain;
	return NULL;
}

static void fmt_value(char *buf, size_t n, double v)
{
	if (!isfinite(v))
		snprintf(buf, n, "-");
	else if (fabs(v) >= 100)
		snprintf(buf, n, "%.0f", v);
	else if (fabs(v) >= 10)
		snprintf(buf, n, "%.1f", v);
	else if (fabs(v) >= 1)
		snprintf(buf, n, "%.2f", v);
	else
		snprintf(buf, n, "%.3g", v);
}

static void wrap(FILE *out, const char *text, const char *indent, int width)
{
	int col = 0;
	const char *p = text;
	fputs(indent, out);
	col = (int)strlen(indent);
	while (*p) {
		const char *sp = strchr(p, ' ');
		int len = sp ? (int)(sp - p) : (int)strlen(p);
		if (col + len > width && col > (int)strlen(indent)) {
			fprintf(out, "\n%s", indent);
			col = (int)strlen(indent);
		}
		fprintf(out, "%.*s", len, p);
		col += len;
		p += len;
		if (*p == ' ') {
			fputc(' ', out);
			col++;
			p++;
		}
	}
	fputc('\n', out);
}

void report_text(FILE *out, const bench_report *r, const findings *fs, bool color, bool explain)
{
	const char *bold = color ? "\033[1m" : "", *dim = color ? "\033[2m" : "", *red = color ? "\033[31m" : "",
		   *reset = color ? "\033[0m" : "";
	for (size_t g = 0; g < GV_ARRAY_LEN(groups); g++) {
		bool any = false;
		for (size_t i = 0; i < r->n && !any; i++)
			any = strcmp(r->v[i].group, groups[g].group) == 0;
		if (!any)
			continue;
		fprintf(out, "%s%s%s\n", bold, groups[g].title, reset);
		if (explain)
			wrap(out, groups[g].explain, "  ", 100);
		/* every figure skipped for the same reason: one line */
		const char *same = NULL;
		bool all_same = true;
		for (size_t i = 0; i < r->n && all_same; i++) {
			const bench_figure *f = &r->v[i];
			if (strcmp(f->group, groups[g].group) != 0)
				continue;
			if (!f->skipped || !f->note || (same && strcmp(same, f->note) != 0))
				all_same = false;
			same = f->note;
		}
		if (all_same && same) {
			fprintf(out, "  %snot measured: %s%s\n\n", dim, same, reset);
			continue;
		}
		/* the title column fits the group's longest title (at least 34), so the figures line up */
		int tw = 34;
		for (size_t i = 0; i < r->n; i++)
			if (strcmp(r->v[i].group, groups[g].group) == 0 && !r->v[i].skipped && (int)strlen(r->v[i].title) > tw)
				tw = (int)strlen(r->v[i].title);
		fprintf(out, "  %-*s %10s %-8s %9s %9s %7s %7s  %s\n", tw, "", "median", "", "min", "max", "spread", "% peak",
			"check");
		for (size_t i = 0; i < r->n; i++) {
			const bench_figure *f = &r->v[i];
			if (strcmp(f->group, groups[g].group) != 0)
				continue;
			if (f->skipped) {
				fprintf(out, "  %-34s %s%s%s\n", f->title, dim, f->note ? f->note : "not measured", reset);
				continue;
			}
			char med[32], mn[32], mx[32], pct[16], spread[16];
			fmt_value(med, sizeof(med), f->st.median);
			fmt_value(mn, sizeof(mn), f->st.min);
			fmt_value(mx, sizeof(mx), f->st.max);
			double p = figure_pct(f);
			if (isfinite(p))
				snprintf(pct, sizeof(pct), "%.0f%%", p);
			else
				snprintf(pct, sizeof(pct), "-");
			if (f->st.n > 1)
				snprintf(spread, sizeof(spread), "%.1f%%", f->st.spread * 100);
			else
				snprintf(spread, sizeof(spread), "-");
			const char *check = f->verified == VERIFY_OK ? "ok" : f->verified == VERIFY_FAILED ? "WRONG" : "";
			fprintf(out, "  %-*s %10s %-8s %9s %9s %7s %7s  %s%s%s\n", tw, f->title, med, f->unit, mn, mx, spread,
				pct, f->verified == VERIFY_FAILED ? red : "", check, f->verified == VERIFY_FAILED ? reset : "");
			if (f->note)
				fprintf(out, "  %s  %s%s\n", dim, f->note, reset);
			if (f->verified == VERIFY_FAILED && f->verify_text)
				fprintf(out, "  %s  %s%s\n", red, f->verify_text, reset);
			if (explain && f->peak_how)
				fprintf(out, "  %s  peak %s%s\n", dim, f->peak_how, reset);
		}
		fputc('\n', out);
	}
	if (r->notes.n) {
		fprintf(out, "%sNot measured%s\n", bold, reset);
		for (size_t i = 0; i < r->notes.n; i++)
			wrap(out, r->notes.v[i], "  ", 100);
		fputc('\n', out);
	}
	if (fs && fs->n) {
		fprintf(out, "%sFindings%s\n", bold, reset);
		for (size_t i = 0; i < fs->n; i++) {
			const finding *x = &fs->v[i];
			fprintf(out, "  [%s] %s: %s\n", severity_name(x->sev), x->id, x->title);
			for (size_t k = 0; k < x->evidence.n; k++)
				fprintf(out, "      %s\n", x->evidence.v[k]);
			for (size_t k = 0; k < x->fix.n; k++)
				fprintf(out, "      fix: %s\n", x->fix.v[k]);
		}
		fputc('\n', out);
	}
	fprintf(out, "%s%s run, %.1f s%s\n", dim, r->quick ? "quick" : "full", r->seconds, reset);
}
