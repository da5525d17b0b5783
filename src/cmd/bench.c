/* gpuvet bench: micro-benchmarks of the GPU and CPU against the hardware's peaks. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/bench.h"
#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "cmd/cmd.h"
#include "cmd/history_record.h"
#include "core/factkeys.h"
#include "kb/kb.h"
#include "nvidia/nvml.h"
#include "render/render.h"
#include "store/history.h"

enum { OPT_QUICK = 256, OPT_ONLY, OPT_DTYPES, OPT_SIZE, OPT_TRANSFER, OPT_DEVICE, OPT_FORCE, OPT_JSON, OPT_EXPLAIN,
       OPT_NO_PROGRESS, OPT_BASELINE, OPT_THRESHOLD, OPT_LIMIT_SCALE, OPT_TORCH };

/* --only's words: the group table, and "all" */
static const char *group_word(size_t i)
{
	return i < BENCH_N_GROUPS ? bench_groups[i].name : i == BENCH_N_GROUPS ? "all" : NULL;
}

static const char *dtype_word(size_t i)
{
	return i < DT_COUNT ? dtype_get((bench_dtype)i)->name : NULL;
}

static const gv_option bench_options[] = {
	GV_OPT_GROUP("what to run"),
	GV_OPT_FLAG("torch", OPT_TORCH, "model-level training steps through PyTorch instead (see gpuvet tune --help)"),
	GV_OPT_FLAG("quick", OPT_QUICK,
		    "about 30 s on an H200, the GPM activity evidence included: fewer repeats, smaller buffers"),
	GV_OPT_WORD_FN("only", OPT_ONLY, "LIST", GV_VAL_LIST, group_word, "groups, comma-separated: {values} (default all)"),
	GV_OPT_WORD_FN("dtypes", OPT_DTYPES, "LIST", GV_VAL_LIST, dtype_word, "GEMM types (default {values})"),
	GV_OPT_ARG("size", OPT_SIZE, "N", GV_VAL_NUMBER, "GEMM matrices N x N (default 8192)"),
	GV_OPT_ARG("transfer-mib", OPT_TRANSFER, "N", GV_VAL_NUMBER, "host<->device buffer in MiB (default 1024)"),
	GV_OPT_ARG("device", OPT_DEVICE, "N", GV_VAL_NUMBER, "the CUDA device for single-GPU benchmarks (default 0)"),
	GV_OPT_FLAG("force", OPT_FORCE, "run although other processes use the GPU (their work lowers the figures)"),
	GV_OPT_ARG("limit-scale", OPT_LIMIT_SCALE, "X", GV_VAL_NUMBER,
		   "stretch every benchmark's time limit X times (slow machines; default 1)"),
	GV_OPT_GROUP("output"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.bench/1, docs/benchmarks.md)"),
	GV_OPT_FLAG("explain", OPT_EXPLAIN, "say how each figure is measured and where its peak comes from"),
	GV_OPT_FLAG("no-progress", OPT_NO_PROGRESS, "no progress line on stderr (it only shows on a terminal anyway)"),
	GV_OPT_GROUP("history"),
	NO_HISTORY_OPTION("do not store this run (also GPUVET_NO_HISTORY=1)"),
	DB_OPTION,
	GV_OPT_ARG("baseline", OPT_BASELINE, "NAME", GV_VAL_TEXT,
		   "compare with a named baseline run (gpuvet history baseline set NAME ID) and exit 1 when a figure is "
		   "worse by more than --threshold"),
	GV_OPT_ARG("threshold", OPT_THRESHOLD, "PCT", GV_VAL_NUMBER, "the change that counts as a regression (default 5)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli bench_cli = {
	.name = "bench",
	.summary = "micro-benchmarks against the hardware's peaks (GEMM, memory, PCIe, launch, NCCL, CPU)",
	.head = "usage: gpuvet bench [options]\n"
		"\n"
		"Measures what training depends on, each figure the median of repeats with its minimum and\n"
		"maximum, checked for correctness and judged against the hardware's own peak:\n"
		"  GEMM through cuBLASLt (fp64, fp32, tf32, fp16, bf16, fp8, int8), device memory bandwidth\n"
		"  (copy, scale, add, triad, read), host<->device copies (pinned, pageable, each way and both),\n"
		"  kernel launch latency (plain, with synchronize, CUDA graph), GPU to GPU copies and NCCL\n"
		"  all-reduce, all-gather and reduce-scatter, and the CPU's BLAS as the baseline.\n"
		"A figure under its expected fraction of peak becomes a finding with the cause NVML saw during\n"
		"the run (throttling, clocks, link width, other processes). Without a GPU (or a library) the\n"
		"rest still runs and the output says what could not. Every run is stored in the history.\n"
		"\n",
	.opts = bench_options,
	.tail = "\n"
		"safety: clocks, power limits and modes are never changed; buffers are sized from free memory;\n"
		"every benchmark has a time limit (--limit-scale X stretches them on slow machines).\n"
		"\n"
		"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: 0 no failure, 1 a wrong result, a refusal (busy GPU) or a regression against\n"
		"--baseline, 2 usage, 3 internal error or a benchmark that hung\n",
};

static const char src[] = "gpuvet bench";

/* Which GPU benchmarks touch which devices: all of them for the multi-GPU group. */
static bool busy_check(bench_ctx *c, bool force)
{
	if (!c->mon || !c->gpu)
		return true;
	bool busy = false;
	strbuf who;
	sb_init(&who);
	for (int i = 0; i < c->gpu->count; i++) {
		bool used = i == c->o->device || (c->o->groups & BENCH_G_MULTI);
		const monitor_gpu_info *g = monitor_gpu(c->mon, c->gpu->dev[i].nvml_index);
		if (!used || !g || g->nprocs_other == 0)
			continue;
		busy = true;
		sb_addf(&who, "%sGPU %d: %s", who.len ? "; " : "", i, g->procs_other);
	}
	if (busy && !force) {
		gv_warning("other processes use the GPU (%s): their work would make every figure wrong; the GPU "
			   "benchmarks are skipped. Rerun with --force to measure anyway",
			   who.buf);
		snprintf(c->gpu_error, sizeof(c->gpu_error), "other processes use the GPU (%s); --force runs anyway",
			 who.buf);
		str_copy(c->gpu_skip, sizeof(c->gpu_skip), "refused: other processes use the GPU (--force runs anyway)");
		facts_put_bool(c->r->facts, src, true, FK_BENCH_REFUSED);
		report_note(c->r, "GPU benchmarks: %s", c->gpu_error);
	} else if (busy) {
		gv_warning("other processes use the GPU (%s): the figures will be low", who.buf);
		facts_put_bool(c->r->facts, src, true, FK_BENCH_FORCED);
	}
	sb_free(&who);
	return !busy || force;
}

static void cpu_model(char *buf, size_t n)
{
	buf[0] = 0;
	FILE *fp = fopen("/proc/cpuinfo", "r");
	if (!fp)
		return;
	char line[512];
	while (fgets(line, sizeof(line), fp))
		if (str_starts(line, "model name")) {
			char *colon = strchr(line, ':');
			if (colon) {
				str_copy(buf, n, str_trim(colon + 1));
				buf[strcspn(buf, "\n")] = 0;
			}
			break;
		}
	fclose(fp);
}

/* The history's name for a figure: GEMMs carry their size so that different sizes never compare. */
static long long store_run(bench_ctx *c, const findings *fs, const char *db, int argc, char **argv)
{
	bench_report *r = c->r;
	hist_run *h = history_run_begin(HIST_BENCH, argc, argv);
	gv_nvml_status ns;
	gv_nvml_status_get(&ns);
	if (ns.init_called && ns.init_rc == NVML_SUCCESS) {
		gv_nvml_system sys;
		gv_nvml_system_info(&sys);
		if (GV_OK(sys.driver_version))
			history_run_set(h, HIST_META_DRIVER, sys.driver_version.v);
	}
	long long cv;
	if (facts_int(r->facts, &cv, FK_BENCH_CUDA_DRIVER_VERSION)) {
		char v[32];
		snprintf(v, sizeof(v), "%lld.%lld", cv / 1000, cv % 1000 / 10);
		history_run_set(h, HIST_META_CUDA_DRIVER, v);
	}
	const char *v;
	if ((v = facts_str(r->facts, FK_BENCH_LIB_CUBLASLT_VERSION)))
		history_run_set(h, HIST_META_CUBLASLT, v);
	if ((v = facts_str(r->facts, FK_BENCH_LIB_NCCL_VERSION)))
		history_run_set(h, HIST_META_NCCL, v);
	if ((v = facts_str(r->facts, FK_BENCH_LIB_BLAS_IMPL)))
		history_run_set(h, "blas", v);
	char cpu[256];
	cpu_model(cpu, sizeof(cpu));
	if (cpu[0])
		history_run_set(h, HIST_META_CPU, cpu);
	history_run_set(h, "mode", r->quick ? "quick" : "full");
	for (int g = 0; g < monitor_gpu_count(c->mon); g++) {
		const monitor_gpu_info *gi = monitor_gpu(c->mon, g);
		history_run_add_gpu(h, g, gi->name[0] ? gi->name : NULL, gi->uuid[0] ? gi->uuid : NULL,
				    gi->bus_id[0] ? gi->bus_id : NULL);
		monitor_summary ms;
		if (monitor_summary_get(c->mon, NULL, g, &ms)) {
			char reasons[256];
			gv_nvml_clock_reasons_text(ms.reasons, reasons, sizeof(reasons));
			history_run_gpu_conditions(h, g, ms.sm_clock_median, ms.mem_clock_median, ms.temp_max_c, ms.power_mean_w,
						   reasons);
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		const bench_figure *f = &r->v[i];
		if (f->skipped || f->st.n == 0)
			continue;
		char *name = report_result_name(f->id, f->size);
		cJSON *p = cJSON_CreateObject();
		cJSON_AddStringToObject(p, "title", f->title); /* for gpuvet report */
		if (f->size > 0)
			cJSON_AddNumberToObject(p, "size", (double)f->size);
		if (f->peak > 0) {
			cJSON_AddNumberToObject(p, "peak", f->peak);
			cJSON_AddNumberToObject(p, "pct_peak", figure_pct(f));
		}
		if (f->clock_mhz > 0)
			cJSON_AddNumberToObject(p, "sm_clock_mhz", f->clock_mhz);
		if (f->verified != VERIFY_NONE)
			cJSON_AddBoolToObject(p, "verified", f->verified == VERIFY_OK);
		char *pj = cJSON_PrintUnformatted(p);
		hist_result res = {name, f->st.median, f->unit, f->lower_is_better ? HIST_LOWER_BETTER : HIST_HIGHER_BETTER,
				   f->st.min, f->st.max, (int)f->st.n,
				   f->gpu >= 0 ? (int)facts_int_or(r->facts, -1, FK_BENCH_GPU_NVML_INDEX(d), f->gpu) : -1, pj};
		history_run_add_result(h, &res);
		free(pj);
		cJSON_Delete(p);
		free(name);
	}
	history_run_add_findings(h, fs);
	/* headline: the bf16 GEMM and the best bandwidth when measured */
	strbuf sum;
	sb_init(&sum);
	const char *heads[] = {"gemm.bf16", "memory.triad", "transfer.h2d_pinned", "cpu.gemm.fp32"};
	for (size_t i = 0; i < GV_ARRAY_LEN(heads); i++) {
		const bench_figure *f = report_find(r, heads[i]);
		if (f && !f->skipped && f->st.n)
			sb_addf(&sum, "%s%s %.0f %s", sum.len ? ", " : "", heads[i], f->st.median, f->unit);
	}
	if (sum.len)
		history_run_set_summary(h, sum.buf);
	sb_free(&sum);
	return history_record(db, h);
}

/* Compares run `id` with a named baseline; prints the regressions. Returns their number, or -1
 * when the comparison could not be made. */
static int compare_baseline(const char *db, const char *name, long long id, double threshold, bool quiet,
			    cJSON *json_out)
{
	char *err = NULL;
	history *h = history_open(db, HISTORY_READ, &err);
	if (!h) {
		gv_error("cannot compare with baseline %s: %s", name, err);
		free(err);
		return -1;
	}
	long long base_id = 0;
	hist_run_row a = {0}, b = {0};
	int rc = -1;
	if (!history_baseline_get(h, name, &base_id, &err) || !history_get(h, base_id, &a, &err) ||
	    !history_get(h, id, &b, &err)) {
		gv_error("cannot compare with baseline %s: %s", name, err ? err : "unknown error");
		free(err);
		history_close(h);
		hist_run_row_free(&a);
		hist_run_row_free(&b);
		return -1;
	}
	hist_change *v = NULL;
	size_t nreg = 0;
	size_t n = history_compare(&a, &b, threshold, &v, &nreg);
	cJSON *arr = json_out ? cJSON_AddArrayToObject(json_out, "regressions") : NULL;
	if (json_out) {
		cJSON_AddStringToObject(json_out, "name", name);
		cJSON_AddNumberToObject(json_out, "run", (double)base_id);
		cJSON_AddNumberToObject(json_out, "threshold_pct", threshold);
	}
	if (!quiet)
		printf("Against baseline %s (run %lld): %zu regression%s beyond %.0f%%\n", name, base_id, nreg,
		       nreg == 1 ? "" : "s", threshold);
	for (size_t i = 0; i < n; i++) {
		char spread[32];
		if (!v[i].regression)
			continue;
		if (!quiet)
			printf("  %-32s %10.4g -> %-10.4g %s (%+.1f%%, spread %s)\n", v[i].name, v[i].a, v[i].b,
			       v[i].unit ? v[i].unit : "", v[i].pct,
			       isfinite(v[i].spread_pct) ? (snprintf(spread, sizeof(spread), "%.1f%%", v[i].spread_pct), spread) : "unknown");
		if (arr) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "name", v[i].name);
			cJSON_AddNumberToObject(o, "baseline", v[i].a);
			cJSON_AddNumberToObject(o, "now", v[i].b);
			if (isfinite(v[i].pct))
				cJSON_AddNumberToObject(o, "change_pct", v[i].pct);
			if (isfinite(v[i].spread_pct))
				cJSON_AddNumberToObject(o, "spread_pct", v[i].spread_pct);
			cJSON_AddItemToArray(arr, o);
		}
	}
	rc = (int)nreg;
	free(v);
	hist_run_row_free(&a);
	hist_run_row_free(&b);
	history_close(h);
	return rc;
}

int cmd_bench(int argc, char **argv)
{
	/* `bench --torch` is the model-level half: training steps through PyTorch (gpuvet tune) */
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--torch") == 0)
			return cmd_bench_torch(argc, argv);
	const char *bench_usage = gv_usage(&bench_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&bench_cli, longopts, shortopts);
	bench_opts o;
	memset(&o, 0, sizeof(o));
	o.size = 8192;
	o.transfer_bytes = 1ll << 30;
	o.groups = BENCH_G_ALL;
	o.limit_scale = 1;
	for (int i = 0; i < DT_COUNT; i++)
		o.dtypes[i] = true;
	bool json = false, explain = false, no_progress = false, no_history = false;
	const char *db = NULL, *baseline = NULL;
	double threshold = 5;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		long v;
		double d;
		const char *bad = NULL;
		switch (c) {
		case OPT_QUICK: o.quick = true; break;
		case OPT_ONLY:
			if (!bench_parse_groups(optarg, &o.groups, &bad)) {
				char words[256];
				return usage_error(NULL, "--only: unknown group '%s' (%s)", bad,
						   gv_option_words_text(gv_option_by_id(&bench_cli, OPT_ONLY), ", ", words, sizeof(words)));
			}
			break;
		case OPT_DTYPES: {
			strlist parts = {0};
			sl_split(&parts, optarg, ", ", false);
			memset(o.dtypes, 0, sizeof(o.dtypes));
			for (size_t i = 0; i < parts.n; i++) {
				bench_dtype dt;
				if (!dtype_parse(parts.v[i], &dt)) {
					int rc = usage_error(NULL, "--dtypes: unknown type '%s' (%s)", parts.v[i], dtype_all_names());
					sl_free(&parts);
					return rc;
				}
				o.dtypes[dt] = true;
			}
			if (!parts.n)
				return usage_error(NULL, "--dtypes: expected a list such as bf16,fp16");
			sl_free(&parts);
			break;
		}
		case OPT_SIZE:
			if (!parse_int_opt("--size", optarg, 16, 65536, &v))
				return EXIT_USAGE;
			o.size = (int)v;
			break;
		case OPT_TRANSFER:
			if (!parse_int_opt("--transfer-mib", optarg, 1, 65536, &v))
				return EXIT_USAGE;
			o.transfer_bytes = (long long)v << 20;
			break;
		case OPT_DEVICE:
			if (!parse_int_opt("--device", optarg, 0, 63, &v))
				return EXIT_USAGE;
			o.device = (int)v;
			break;
		case OPT_FORCE: o.force = true; break;
		case OPT_JSON: json = true; break;
		case OPT_EXPLAIN: explain = true; break;
		case OPT_NO_PROGRESS: no_progress = true; break;
		case OPT_HIST_NO: no_history = true; break;
		case OPT_HIST_DB: db = optarg; break;
		case OPT_BASELINE: baseline = optarg; break;
		case OPT_THRESHOLD:
			if (!parse_double_opt("--threshold", optarg, 0, 1000, &d))
				return EXIT_USAGE;
			threshold = d;
			break;
		case OPT_LIMIT_SCALE:
			if (!parse_double_opt("--limit-scale", optarg, 0.01, 1000, &d))
				return EXIT_USAGE;
			o.limit_scale = d;
			break;
		default: return usage_getopt_rest(c, bench_usage, argv);
		}
	}
	if (optind < argc)
		return usage_error(bench_usage, "unexpected argument '%s'", argv[optind]);
	if (baseline && (no_history || !history_wanted(false)))
		return usage_error(NULL, "--baseline needs the run stored in the history (drop --no-history)");
	o.progress = !no_progress && !json && isatty(STDERR_FILENO);
	/* NCCL's NVLink SHARP (multicast) stays off unless the user chose (../shared/device.md) */
	setenv("NCCL_NVLS_ENABLE", "0", 0);

	bench_report r;
	report_init(&r);
	r.quick = o.quick;
	r.started = (double)time(NULL);
	double t0 = now_seconds();
	facts_put_str(r.facts, src, o.quick ? "quick" : "full", FK_BENCH_RUN);
	facts_put_int(r.facts, src, o.size, FK_BENCH_SIZE);
	bench_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.o = &o;
	ctx.r = &r;
	watchdog_start();

	if (o.groups & bench_gpu_groups()) {
		bench_open_gpus(&ctx, false);
		if (ctx.gpu && o.device >= ctx.gpu->count) {
			int n = ctx.gpu->count;
			bench_close_gpus(&ctx);
			monitor_stop(ctx.mon);
			report_free(&r);
			return usage_error(NULL, "--device %d: this machine has %d CUDA device%s", o.device, n, n == 1 ? "" : "s");
		}
		if (ctx.gpu && !busy_check(&ctx, o.force))
			bench_close_gpus(&ctx);
	}
	/* in the table's order (bench.h: launch first); the report shows its sections in its own */
	bench_run_groups(&ctx);
	bench_speedups(&ctx);
	bench_progress_done(&ctx);
	bench_close_gpus(&ctx);
	monitor *mon = ctx.mon;
	r.seconds = now_seconds() - t0;
	facts_put_real(r.facts, src, r.seconds, FK_BENCH_SECONDS);
	report_facts(&r);

	findings fs;
	findings_init(&fs);
	bench_judge(r.facts, kb_global(), &fs);

	long long run_id = 0;
	if (history_wanted(no_history))
		run_id = store_run(&ctx, &fs, db, argc, argv);
	monitor_stop(mon);
	ctx.mon = NULL;

	int nreg = 0;
	cJSON *base_json = NULL;
	if (baseline && run_id > 0 && json)
		base_json = cJSON_CreateObject();

	if (json) {
		if (baseline && run_id > 0)
			nreg = compare_baseline(db, baseline, run_id, threshold, true, base_json);
		cJSON *doc = report_json(&r, &fs);
		if (run_id > 0)
			cJSON_AddNumberToObject(doc, "history_run", (double)run_id);
		if (base_json) {
			cJSON_AddItemToObject(doc, "baseline", base_json);
			base_json = NULL;
		}
		char *s = cJSON_Print(doc);
		puts(s);
		free(s);
		cJSON_Delete(doc);
	} else {
		report_text(stdout, &r, &fs, color_wanted(stdout, gopts.color), explain);
		if (run_id > 0)
			printf("stored in the history as run %lld (gpuvet history show %lld)\n", run_id, run_id);
		if (baseline && run_id > 0)
			nreg = compare_baseline(db, baseline, run_id, threshold, false, NULL);
	}
	cJSON_Delete(base_json);
	finding_counts cnt = findings_count(&fs);
	int rc = EXIT_OK;
	if (cnt.fail > 0 || nreg > 0)
		rc = EXIT_FINDING;
	if (baseline && nreg < 0 && rc == EXIT_OK)
		rc = EXIT_USAGE;
	findings_free(&fs);
	report_free(&r);
	return rc;
}
