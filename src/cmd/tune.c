/* gpuvet tune (and gpuvet bench --torch): PyTorch training steps and what to switch on. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/history_record.h"
#include "kb/kb.h"
#include "render/render.h"
#include "tune/tune_advice.h"
#include "tune/tune_history.h"
#include "tune/tune_probe.h"
#include "tune/tune_render.h"

enum { OPT_MODELS = 256, OPT_BATCH, OPT_IMAGE, OPT_SEQ, OPT_SETTINGS, OPT_COMPILE, OPT_WORKERS, OPT_NO_CPU, OPT_NO_PIPE,
       OPT_NO_DDP, OPT_IMPL, OPT_BUDGET, OPT_PYTHON, OPT_JSON, OPT_SAVE, OPT_FROM, OPT_TORCH, OPT_LIST };

/* the models and settings the probe (data/tune_torch.py) knows */
static const char *const tune_models[] = {"resnet50", "bert", "mlp", NULL};
static const char *const tune_settings[] = {"fp32",     "tf32",         "amp_fp16", "amp_bf16", "channels_last", "cudnn_benchmark",
					    "ref_fp32", "ref_amp_fp16", "compile",  NULL};
static const char *const tune_impls[] = {"auto", "library", "builtin", NULL};

static const gv_option tune_options[] = {
	GV_OPT_GROUP("what to run"),
	GV_OPT_WORDS("models", OPT_MODELS, "LIST", GV_VAL_LIST, tune_models, "{values} (default: all three)"),
	GV_OPT_ARG("batch", OPT_BATCH, "N|M=N,...", GV_VAL_TEXT,
		   "batch size for every model, or per model (default resnet50=64, bert=32, mlp=256)"),
	GV_OPT_ARG("image-size", OPT_IMAGE, "N", GV_VAL_NUMBER, "ResNet-50's input size (default 224)"),
	GV_OPT_ARG("seq-len", OPT_SEQ, "N", GV_VAL_NUMBER, "BERT's sequence length (default 128)"),
	GV_OPT_WORDS("settings", OPT_SETTINGS, "LIST", GV_VAL_LIST, tune_settings,
		     "GPU settings to time (default all but compile): {values}"),
	GV_OPT_FLAG("compile", OPT_COMPILE, "also time torch.compile (its compile time is reported apart)"),
	GV_OPT_ARG("workers", OPT_WORKERS, "LIST", GV_VAL_TEXT, "DataLoader num_workers to try (default 0,2,4,8 up to the CPUs)"),
	GV_OPT_FLAG("no-cpu", OPT_NO_CPU, "skip the CPU steps (the slowest part on small machines)"),
	GV_OPT_FLAG("no-pipeline", OPT_NO_PIPE, "skip the DataLoader test"),
	GV_OPT_FLAG("no-ddp", OPT_NO_DDP, "skip the multi-GPU step"),
	GV_OPT_WORDS("impl", OPT_IMPL, "WHICH", GV_VAL_WORD, tune_impls,
		     "auto (default): torchvision/transformers when installed, else the probe's own definitions of the same "
		     "networks; library; builtin"),
	GV_OPT_ARG("budget", OPT_BUDGET, "SECONDS", GV_VAL_NUMBER, "time for everything (default 300); what does not fit is skipped"),
	GV_OPT_ARG("python", OPT_PYTHON, "PATH", GV_VAL_FILE, "the interpreter (default: the active venv/conda, then python3 on PATH)"),
	{"torch", OPT_TORCH, NULL, GV_VAL_NONE, NULL, NULL, "bench --torch lands here", GV_OPT_HIDDEN},
	GV_OPT_GROUP("output"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.tune/1, see docs/tune.md)"),
	GV_OPT_FLAG("verbose", 'v',
		    "every run's configuration, spread and GPU utilization; the probe's own messages as they come"),
	GV_OPT_FLAG("quiet", 'q', "no progress line"),
	GV_OPT_ARG("save-raw", OPT_SAVE, "FILE", GV_VAL_FILE, "keep the probe's own document (schema gpuvet.tune-probe/1)"),
	GV_OPT_ARG("from", OPT_FROM, "FILE", GV_VAL_FILE,
		   "report on a probe document (or its RESULT lines) saved earlier instead of measuring"),
	DB_OPTION,
	NO_HISTORY_OPTION("do not store the result (also GPUVET_NO_HISTORY=1); --from results are never stored"),
	GV_OPT_FLAG("list", OPT_LIST,
		    "the table over the tune runs stored in the history (date | model | batch | GPU ms | CPU ms | speedup), "
		    "oldest first; with --json as JSON"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli tune_cli = {
	.name = "tune",
	.summary = "PyTorch training steps: which settings (AMP, channels_last, ...) gain what here",
	.head = "usage: gpuvet tune [options]\n"
		"       gpuvet bench --torch [options]\n"
		"\n"
		"Times real PyTorch training steps (forward, backward, optimizer step) of ResNet-50, BERT-base\n"
		"and a small MLP through the selected Python interpreter, on the GPU under each setting that\n"
		"decides training speed (fp32, TF32, AMP fp16 and bf16, channels_last, cudnn.benchmark,\n"
		"torch.compile) and on the CPU; feeds a DataLoader into the GPU with pin_memory and workers;\n"
		"runs a DistributedDataParallel step over all GPUs. Says what to switch on, with the measured\n"
		"gain and the line of code to add, and how the figures compare with what this GPU class\n"
		"reaches. Random weights, synthetic data: nothing is downloaded.\n"
		"\n",
	.opts = tune_options,
	.tail = "\n"
		"Ctrl-C stops the probe and reports the steps that finished.\n"
		"\n"
		"exit status: 0 measured; 1 no GPU step could be measured, or a step was more than 10% slower\n"
		"than the knowledge base's figure for this GPU; 2 usage; 3 internal error; 130 interrupted\n",
};

static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
	(void)sig;
	if (stop_flag < 2)
		stop_flag++;
}

static bool check_batch(const char *value)
{
	strlist l = {0};
	sl_split(&l, value, ",", false);
	bool ok = l.n > 0;
	for (size_t i = 0; ok && i < l.n; i++) {
		char *eq = strchr(l.v[i], '=');
		const char *num = eq ? eq + 1 : l.v[i];
		if (eq) {
			*eq = '\0';
			if (!gv_option_check(gv_option_by_id(&tune_cli, OPT_MODELS), l.v[i])) {
				ok = false;
				break;
			}
		}
		long v;
		if (!parse_int_opt("--batch", num, 1, 1 << 20, &v))
			ok = false;
	}
	if (l.n == 0)
		gv_error("--batch: expected a size like 64 or resnet50=64,bert=32");
	sl_free(&l);
	return ok;
}

static bool check_workers(const char *value)
{
	strlist l = {0};
	sl_split(&l, value, ",", false);
	bool ok = l.n > 0;
	for (size_t i = 0; ok && i < l.n; i++) {
		long v;
		ok = parse_int_opt("--workers", l.v[i], 0, 256, &v);
	}
	if (l.n == 0)
		gv_error("--workers: expected numbers like 0,2,4,8");
	sl_free(&l);
	return ok;
}

/* A probe document, or a capture of its stderr (the RESULT lines). */
static tune_report *report_from_file(const char *path)
{
	size_t len;
	char *text = read_input_file("tune result", path, 64u << 20, &len);
	if (!text)
		return NULL;
	strlist lines = {0}, results = {0};
	sl_split(&lines, text, "\n", false);
	for (size_t i = 0; i < lines.n; i++)
		if (str_starts(lines.v[i], "RESULT {"))
			sl_push(&results, lines.v[i] + 7);
	tune_report *r = tune_report_parse(text, len, &results);
	sl_free(&lines);
	sl_free(&results);
	free(text);
	if (r->from_lines && r->nruns == 0 && !r->env.torch) {
		gv_error("%s is neither a tune probe document (gpuvet.tune-probe/1) nor its RESULT lines", path);
		tune_report_free(r);
		return NULL;
	}
	return r;
}

static void today(char *out, size_t n, const tune_report *r)
{
	if (strlen(r->started) >= 10 && r->started[4] == '-' && r->started[7] == '-') {
		snprintf(out, n, "%.10s", r->started);
		return;
	}
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(out, n, "%Y-%m-%d", &tm);
}

static int run_tune(int argc, char **argv, const char *usage_name)
{
	const char *tune_usage = gv_usage(&tune_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&tune_cli, longopts, shortopts);
	bool json = false, verbose = false, quiet = false, no_history = false, list = false;
	const char *python_opt = NULL, *save = NULL, *from = NULL, *db = NULL;
	double budget = 300;
	strlist args = {0};
	int c;
	optind = 1;
	opterr = 0;
	int rc = EXIT_OK;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		long v;
		switch (c) {
		case OPT_MODELS:
			if (!gv_option_check(gv_option_by_id(&tune_cli, OPT_MODELS), optarg))
				goto usage;
			sl_pushf(&args, "--models=%s", optarg);
			break;
		case OPT_BATCH:
			if (!check_batch(optarg))
				goto usage;
			sl_pushf(&args, "--batch=%s", optarg);
			break;
		case OPT_IMAGE:
			if (!parse_int_opt("--image-size", optarg, 16, 4096, &v))
				goto usage;
			sl_pushf(&args, "--image-size=%ld", v);
			break;
		case OPT_SEQ:
			if (!parse_int_opt("--seq-len", optarg, 1, 65536, &v))
				goto usage;
			sl_pushf(&args, "--seq-len=%ld", v);
			break;
		case OPT_SETTINGS:
			if (!gv_option_check(gv_option_by_id(&tune_cli, OPT_SETTINGS), optarg))
				goto usage;
			sl_pushf(&args, "--settings=%s", optarg);
			break;
		case OPT_COMPILE: sl_push(&args, "--compile"); break;
		case OPT_WORKERS:
			if (!check_workers(optarg))
				goto usage;
			sl_pushf(&args, "--workers=%s", optarg);
			break;
		case OPT_NO_CPU: sl_push(&args, "--no-cpu"); break;
		case OPT_NO_PIPE: sl_push(&args, "--no-pipeline"); break;
		case OPT_NO_DDP: sl_push(&args, "--no-ddp"); break;
		case OPT_IMPL:
			if (!gv_option_check(gv_option_by_id(&tune_cli, OPT_IMPL), optarg))
				goto usage;
			sl_pushf(&args, "--impl=%s", optarg);
			break;
		case OPT_BUDGET:
			if (!parse_double_opt("--budget", optarg, 5, 86400, &budget))
				goto usage;
			break;
		case OPT_PYTHON: python_opt = optarg; break;
		case OPT_JSON: json = true; break;
		case 'v': verbose = true; break;
		case 'q': quiet = true; break;
		case OPT_SAVE: save = optarg; break;
		case OPT_FROM: from = optarg; break;
		case OPT_HIST_DB: db = optarg; break;
		case OPT_HIST_NO: no_history = true; break;
		case OPT_TORCH: break;
		case OPT_LIST: list = true; break;
		default:
			sl_free(&args);
			return usage_getopt_rest(c, tune_usage, argv);
		}
	}
	if (optind < argc) {
		sl_free(&args);
		return usage_error(tune_usage, "unexpected argument '%s'", argv[optind]);
	}
	if (list) {
		sl_free(&args);
		return tune_history_table(db, 0, json, stdout) == 0 ? EXIT_OK : EXIT_INTERNAL;
	}
	if (gopts.root)
		gv_warning("--root does not apply to %s: it measures this machine", usage_name);

	tune_report *r;
	tune_conditions cond;
	tune_sampler_conditions(NULL, &cond);
	if (from) {
		r = report_from_file(from);
		if (!r) {
			sl_free(&args);
			return EXIT_USAGE;
		}
		no_history = true; /* it was stored when it was measured */
	} else {
		const char *why = NULL;
		char *python = tune_pick_python(python_opt, &why);
		const char *nvml_why = NULL;
		tune_sampler *sampler = tune_sampler_open(&nvml_why);
		struct sigaction sa, old_int, old_term;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_signal; /* no SA_RESTART: the wait for the probe wakes up */
		sigemptyset(&sa.sa_mask);
		stop_flag = 0;
		sigaction(SIGINT, &sa, &old_int);
		sigaction(SIGTERM, &sa, &old_term);
		if (verbose)
			fprintf(stderr, "gpuvet: tune runs %s (%s)%s%s\n", python, why, sampler ? "" : "; no GPU utilization: ",
				sampler ? "" : nvml_why);
		tune_probe_opts po = {
			.python = python,
			.args = &args,
			.budget_s = budget,
			.progress = !quiet && isatty(STDERR_FILENO),
			.echo = verbose,
			.stop = &stop_flag,
			.sampler = sampler,
			.save_raw = save,
		};
		r = tune_probe_run(&po);
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		tune_sampler_conditions(sampler, &cond);
		tune_sampler_close(sampler);
		free(python);
		if (stop_flag)
			rc = 128 + SIGINT;
	}
	sl_free(&args);

	if (strcmp(r->status, "usage") == 0) {
		gv_error("%s", r->message ? r->message : "the probe rejected its arguments");
		tune_report_free(r);
		return EXIT_USAGE;
	}
	tune_advice *a = tune_advise(r, kb_global());
	char date[16];
	today(date, sizeof(date), r);
	tune_render_opts ro = {color_wanted(stdout, gopts.color), verbose, date, cond.samples ? &cond : NULL};
	if (json) {
		cJSON *doc = tune_render_json(r, a, &ro);
		char *s = cJSON_Print(doc);
		puts(s);
		free(s);
		cJSON_Delete(doc);
	} else {
		tune_render_text(stdout, r, a, &ro);
	}
	/* a failure to store is a warning, never the exit status */
	if (history_wanted(no_history) && (r->nruns || r->npipes || r->ddp.present))
		history_record(db, tune_history_run(r, a, cond.samples ? &cond : NULL, argc, argv));
	if (rc == EXIT_OK && (!tune_report_has_gpu(r) || a->any_bad_verdict))
		rc = EXIT_FINDING;
	tune_advice_free(a);
	tune_report_free(r);
	return rc;
usage:
	sl_free(&args);
	fputc('\n', stderr);
	fputs(tune_usage, stderr);
	return EXIT_USAGE;
}

int cmd_tune(int argc, char **argv)
{
	return run_tune(argc, argv, "tune");
}

int cmd_bench_torch(int argc, char **argv)
{
	/* `gpuvet bench --torch ...`: the same options; --torch itself is accepted and ignored */
	return run_tune(argc, argv, "bench --torch");
}
