/* gpuvet diag: active tests that prove each GPU sound under load, in run levels (src/diag/). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/color.h"
#include "core/text.h"
#include "diag/diag.h"
#include "cmd/history_record.h"
#include "store/history.h"

enum { OPT_SIZE = 255, OPT_TEST = 256, OPT_GPUS, OPT_DURATION, OPT_JSON, OPT_JUNIT, OPT_INJECT, OPT_FORCE, OPT_NO_PROGRESS,
       OPT_LIST, OPT_MERGE, OPT_LIMIT_SCALE };

/* -r's words: each level's number and name */
static const char *level_word(size_t i)
{
	static char num[GV_ARRAY_LEN(diag_levels)][4];
	size_t n = GV_ARRAY_LEN(diag_levels);
	if (i < n) {
		snprintf(num[i], sizeof(num[i]), "%d", diag_levels[i].level);
		return num[i];
	}
	return i < 2 * n ? diag_levels[i - n].name : NULL;
}

static const char *test_word(size_t i)
{
	return i < DIAG_NTESTS ? diag_tests[i].name : NULL;
}

static const char *const inject_words[] = {"gemm", "memory", NULL};

static const gv_option diag_options[] = {
	GV_OPT_GROUP("what to run"),
	GV_OPT_WORD_FN("level", 'r', "LEVEL", GV_VAL_WORD, level_word, "1 quick (default), 2 medium, 3 long, 4 xlong (also by name)"),
	GV_OPT_WORD_FN("test", OPT_TEST, "LIST", GV_VAL_LIST, test_word, "only these tests, comma-separated (at the level's sizes)"),
	GV_OPT_ARG("gpus", OPT_GPUS, "LIST", GV_VAL_TEXT,
		   "CUDA device numbers, comma-separated (default all that CUDA sees; CUDA_VISIBLE_DEVICES and MIG "
		   "instances are honoured)"),
	GV_OPT_ARG("duration", OPT_DURATION, "S", GV_VAL_NUMBER,
		   "seconds of the stress tests (the repeated GEMMs per GPU, the power test)"),
	GV_OPT_ARG("size", OPT_SIZE, "N", GV_VAL_NUMBER, "the GEMMs' matrices N x N (default 8192; the power test's are 2N)"),
	GV_OPT_FLAG("force", OPT_FORCE, "test GPUs that other processes use, in the memory they leave free"),
	GV_OPT_WORDS("inject", OPT_INJECT, "KIND", GV_VAL_WORD, inject_words,
		     "prove the detection path on this hardware: gemm corrupts one element of one GEMM result, memory flips "
		     "one bit at one address after the pattern is written; the first GPU tested must then fail and say where"),
	GV_OPT_ARG("limit-scale", OPT_LIMIT_SCALE, "X", GV_VAL_NUMBER, "stretch every test's deadline X times (default 1)"),
	GV_OPT_GROUP("output"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.diag/1, docs/diag.md)"),
	GV_OPT_ARG("junit", OPT_JUNIT, "FILE", GV_VAL_FILE, "JUnit XML: one test case per test and GPU"),
	GV_OPT_FLAG("no-progress", OPT_NO_PROGRESS, "no progress line on stderr (it only shows on a terminal anyway)"),
	GV_OPT_FLAG("list-findings", OPT_LIST, "the finding ids diag can report, one a line, and exit"),
	GV_OPT_GROUP("fleet"),
	{"merge", OPT_MERGE, "FILE...", GV_VAL_FILE, NULL, NULL,
	 "many nodes' `diag --json` documents (\"-\": standard input) into one table per node and GPU, with the outliers "
	 "against the fleet's median of each GPU class (docs/fleet.md has the Slurm and Kubernetes recipes)",
	 GV_OPT_OPERANDS},
	GV_OPT_GROUP("history"),
	NO_HISTORY_OPTION("do not store this run (also GPUVET_NO_HISTORY=1)"),
	DB_OPTION,
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli diag_cli = {
	.name = "diag",
	.summary = "active tests that prove each GPU sound under load, in run levels (as dcgmi diag)",
	.head = "usage: gpuvet diag [-r LEVEL] [--test NAME,...] [--gpus LIST] [--duration S] [--json] [--junit FILE]\n"
		"                   [--inject gemm|memory] [--force]\n"
		"       gpuvet diag --merge FILE... [--json]\n"
		"\n"
		"Proves each GPU sound with active tests under load, as `dcgmi diag`, gpu-burn and memtest do:\n"
		"results verified against the CPU and compared iteration by iteration, memory patterns written\n"
		"and read back, copies at the link's speed, the board at its power limit, and the error\n"
		"counters compared before and after. Each test on each GPU passes, warns, fails or is skipped,\n"
		"with its figure, the figure expected (the GPU class's measured reference in\n"
		"data/diag_expected.csv, else the link's or datasheet's rate) and the margin; a GPU markedly\n"
		"slower than the other GPUs of its kind on the node warns even when it meets the reference.\n"
		"What is not a pass is a finding, with its evidence (the element, the address, the clock, the\n"
		"link) and what to do (reset, reseat, RMA with the serial). Every run is kept in the history.\n"
		"\n",
	.opts = diag_options,
	.tail = "\n"
		"safety: clocks, power limits and modes are never changed and no GPU is reset; GPUs used by other\n"
		"processes are skipped unless --force; every allocation is bounded and freed; SIGINT or SIGTERM\n"
		"ends the run within 2 s with the partial results; a test that hangs is bounded by a deadline\n"
		"(--limit-scale X stretches them) and becomes a diag.hung failure.\n"
		"\n"
		"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: 0 every GPU passed (warnings allowed), 1 a GPU failed or none could be tested,\n"
		"2 usage, 3 internal error, "
		"128+N interrupted by signal N (the partial results are printed)\n\n",
	.help_more = diag_print_tests,
};

static void print_usage(FILE *out)
{
	fputs(gv_usage(&diag_cli), out);
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* How the run is printed, for the normal end and for the hang hook alike. */
static struct {
	bool json;
	const char *junit;
	bool color;
} out_opts;

static void write_junit(const diag_run *r)
{
	if (!out_opts.junit)
		return;
	FILE *fp = strcmp(out_opts.junit, "-") == 0 ? stdout : fopen(out_opts.junit, "w");
	if (!fp) {
		gv_error("cannot write the JUnit report %s: %s", out_opts.junit, strerror(errno));
		return;
	}
	diag_render_junit(fp, r);
	if (fp != stdout)
		fclose(fp);
}

static void emit(diag_run *r)
{
	if (out_opts.json)
		json_print_doc(stdout, diag_render_json(r));
	else
		diag_render_text(stdout, r, out_opts.color);
	write_junit(r);
	fflush(stdout);
}

/* The run into the history: every figure per GPU (NVML index) and the findings. */
static void store(diag_run *r, const diag_opts *o)
{
	if (o->no_history)
		return;
	hist_run *hr = history_run_begin(HIST_DIAG, r->argc, r->argv);
	if (r->driver[0])
		history_run_set(hr, HIST_META_DRIVER, r->driver);
	if (r->cuda_driver[0])
		history_run_set(hr, HIST_META_CUDA_DRIVER, r->cuda_driver);
	char lv[16];
	snprintf(lv, sizeof(lv), "%d", o->level->level);
	history_run_set(hr, "level", lv);
	for (int g = 0; g < r->ngpus; g++) {
		const diag_gpu *d = &r->gpus[g];
		if (d->nvml >= 0)
			history_run_add_gpu(hr, d->nvml, d->name, d->uuid[0] ? d->uuid : NULL, d->bus_id[0] ? d->bus_id : NULL);
	}
	for (size_t i = 0; i < r->nres; i++) {
		const diag_result *x = &r->res[i];
		int nvml = -1;
		for (int g = 0; g < r->ngpus; g++)
			if (r->gpus[g].ordinal == x->gpu)
				nvml = r->gpus[g].nvml;
		if (x->metric[0] && isfinite(x->value) && !strstr(x->metric, ".peers")) {
			char name[96], params[160];
			snprintf(name, sizeof(name), "diag.%s", x->metric);
			snprintf(params, sizeof(params), "{\"status\":\"%s\",\"test\":\"%s\"}", diag_status_name(x->st),
				 diag_tests[x->test].name);
			bool lower = strstr(x->metric, "errors") || strstr(x->metric, "replays") || strstr(x->metric, "fail") ||
				     strstr(x->metric, "mismatch") || strstr(x->metric, "new_errors") || strcmp(x->metric, "processes") == 0;
			hist_result hres = {name, x->value, x->unit[0] ? x->unit : NULL, lower ? HIST_LOWER_BETTER : HIST_HIGHER_BETTER,
					    NAN, NAN, 0, nvml, params};
			history_run_add_result(hr, &hres);
		}
		for (size_t k = 0; k < x->nextra; k++) {
			char name[96];
			snprintf(name, sizeof(name), "diag.%s", x->extra[k].metric);
			hist_result hres = {name, x->extra[k].value, x->extra[k].unit[0] ? x->extra[k].unit : NULL,
					    x->extra[k].better > 0 ? HIST_HIGHER_BETTER : x->extra[k].better < 0 ? HIST_LOWER_BETTER : HIST_NEUTRAL,
					    NAN, NAN, 0, nvml, NULL};
			history_run_add_result(hr, &hres);
		}
	}
	history_run_add_findings(hr, &r->fs);
	finding_counts n = findings_count(&r->fs);
	char sum[128];
	snprintf(sum, sizeof(sum), "level %d: %s (%d fail, %d warn)%s", o->level->level, n.fail ? "FAIL" : "pass", n.fail, n.warn,
		 r->interrupted ? ", interrupted" : "");
	history_run_set_summary(hr, sum);
	r->history_id = history_record(o->db, hr);
}

int cmd_diag(int argc, char **argv)
{
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&diag_cli, longopts, shortopts);
	diag_opts o;
	memset(&o, 0, sizeof(o));
	o.level = &diag_levels[0];
	o.limit_scale = 1;
	bool no_progress = false, merge = false;
	const char *tests = NULL;
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			if (!(o.level = diag_level_parse(optarg)))
				return usage_error(NULL, "--level: unknown level '%s' (1-4, or quick, medium, long, xlong)", optarg);
			break;
		case OPT_TEST: tests = optarg; break;
		case OPT_GPUS: o.gpus = optarg; break;
		case OPT_DURATION:
			if (!parse_double_opt("--duration", optarg, 1, 86400, &o.duration))
				return EXIT_USAGE;
			break;
		case OPT_SIZE: {
			long v;
			if (!parse_int_opt("--size", optarg, 64, 32768, &v))
				return EXIT_USAGE;
			o.gemm_n = (int)v;
			break;
		}
		case OPT_JSON: out_opts.json = true; break;
		case OPT_JUNIT: out_opts.junit = optarg; break;
		case OPT_INJECT:
			if (strcmp(optarg, "gemm") == 0)
				o.inject = DIAG_INJECT_GEMM;
			else if (strcmp(optarg, "memory") == 0)
				o.inject = DIAG_INJECT_MEMORY;
			else
				return usage_error(NULL, "--inject: unknown kind '%s' (gemm or memory)", optarg);
			break;
		case OPT_FORCE: o.force = true; break;
		case OPT_NO_PROGRESS: no_progress = true; break;
		case OPT_LIST:
			for (int i = 0; i < DIAG_NFINDINGS; i++)
				printf("%s %s %s\n", diag_findings[i].id, severity_name(diag_findings[i].sev), diag_findings[i].title);
			return 0;
		case OPT_MERGE: merge = true; break;
		case OPT_HIST_NO: o.no_history = true; break;
		case OPT_HIST_DB: o.db = optarg; break;
		case OPT_LIMIT_SCALE:
			if (!parse_double_opt("--limit-scale", optarg, 0.01, 1000, &o.limit_scale))
				return EXIT_USAGE;
			break;
		case 'h': print_usage(stdout); return 0;
		case ':': return usage_error(NULL, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(NULL, "unknown option %s (gpuvet diag --help lists them)", argv[optind - 1]);
		}
	}
	if (merge) {
		if (optind >= argc)
			return usage_error(NULL, "--merge needs the diag --json files of the nodes");
		int n = argc - optind, rc = 0;
		char **texts = xcalloc((size_t)n, sizeof(char *));
		for (int i = 0; i < n && rc == 0; i++) {
			size_t len;
			if (!(texts[i] = read_input_file("diag result", argv[optind + i], 64u << 20, &len)))
				rc = EXIT_USAGE;
		}
		if (rc == 0)
			rc = diag_merge(n, argv + optind, texts, out_opts.json, stdout);
		for (int i = 0; i < n; i++)
			free(texts[i]);
		free(texts);
		return rc;
	}
	if (optind < argc)
		return usage_error(NULL, "unexpected argument '%s' (gpuvet diag --help)", argv[optind]);
	if (tests) {
		strlist parts = {0};
		sl_split(&parts, tests, ", ", false);
		for (size_t i = 0; i < parts.n; i++) {
			int t = diag_test_find(parts.v[i]);
			if (t < 0) {
				char names[256] = "";
				for (int k = 0; k < DIAG_NTESTS; k++)
					snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? ", " : "", diag_tests[k].name);
				int rc = usage_error(NULL, "--test: unknown test '%s' (%s)", parts.v[i], names);
				sl_free(&parts);
				return rc;
			}
			o.tests[t] = true;
		}
		if (!parts.n)
			return usage_error(NULL, "--test: expected a list such as gemm,memory");
		sl_free(&parts);
		o.tests_given = true;
	} else {
		for (int t = 0; t < DIAG_NTESTS; t++)
			o.tests[t] = diag_tests[t].level <= o.level->level;
	}
	if (o.inject == DIAG_INJECT_GEMM && !o.tests[DIAG_T_GEMM])
		return usage_error(NULL, "--inject gemm needs the gemm test");
	if (o.inject == DIAG_INJECT_MEMORY && !o.tests[DIAG_T_MEMORY])
		return usage_error(NULL, "--inject memory needs the memory test");
	o.no_history = !history_wanted(o.no_history);
	o.progress = !no_progress && !out_opts.json && isatty(2);
	out_opts.color = color_wanted(stdout, gopts.color);
	if (!getenv("NCCL_NVLS_ENABLE"))
		setenv("NCCL_NVLS_ENABLE", "0", 0);

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	diag_set_hang_hook(emit);
	diag_run *r = diag_run_all(&o, argc, argv, &stop_signal);
	if (r->usage_error) {
		gv_error("%s", r->error);
		diag_run_free(r);
		return EXIT_USAGE;
	}
	emit(r); /* the report first, always: then the history */
	store(r, &o);
	int rc = diag_exit_code(r);
	diag_run_free(r);
	return rc;
}
