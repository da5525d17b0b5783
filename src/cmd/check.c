/* gpuvet check: run the probes, apply the rules, render the findings. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/history_record.h"
#include "cmd/nvlink_history.h"
#include "core/atomicfile.h"
#include "core/factkeys.h"
#include "core/sysroot.h"
#include "core/trace.h"
#include "diagnose/diagnose.h"
#include "render/render.h"
#include "core/text.h"
#include "rules/policy.h"
#include "rules/rules.h"

enum { OPT_JUNIT = 256, OPT_STRICT, OPT_REQUIRE, OPT_LIST, OPT_JSON, OPT_HEADROOM };

static const gv_option check_options[] = {
	GV_OPT_GROUP("output"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.check/1, see docs/json.md)"),
	GV_OPT_ARG("junit", OPT_JUNIT, "FILE", GV_VAL_FILE,
		   "also write a JUnit XML report: one test case per rule and per --require (docs/json.md); - for stdout"),
	GV_OPT_FLAG("verbose", 'v', "list every fact collected and the rules skipped"),
	GV_OPT_FLAG("list-rules", OPT_LIST, "list the rules (finding ids) and exit"),
	GV_OPT_GROUP("policy (for CI)"),
	GV_OPT_FLAG("strict", OPT_STRICT, "warnings fail too (exit 1)"),
	GV_OPT_ARG("require", OPT_REQUIRE, "EXPR", GV_VAL_FINDING,
		   "fail unless EXPR holds; repeatable. EXPR is KEY OP VALUE over facts (nvml.device_count>=8, "
		   "nvml.driver_version>=550.54), OP one of == != >= <= > <, versions compared part by part (12.10 > 12.4); "
		   "a fact KEY that must be true; or !ID for a finding id (or prefix ending in .) that must not appear. "
		   "A malformed EXPR is a usage error (exit 2)"),
	GV_OPT_GROUP("probing"),
	PROBE_OPTIONS,
	FACTS_OPTION("judge facts recorded earlier (a check --json document) instead of probing"),
	GV_OPT_ARG("memory-headroom", OPT_HEADROOM, "MIB", GV_VAL_NUMBER,
		   "warn (gpu.memory-held) when other processes leave less than MIB free on a GPU (default: warn above 90 % "
		   "of its memory held)"),
	GV_OPT_GROUP("history (see gpuvet history --help)"),
	NO_HISTORY_OPTION("do not store this run (also GPUVET_NO_HISTORY=1); --facts runs are never stored"),
	DB_OPTION,
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli check_cli = {
	.name = "check",
	.summary = "diagnose every layer of the GPU stack, with the fix for each problem",
	.head = "usage: gpuvet check [options]\n"
		"\n"
		"Diagnoses every layer of the GPU stack: hardware and kernel driver, device nodes, driver\n"
		"libraries, CUDA toolkits, the dynamic loader, environment variables, containers, Python and\n"
		"PyTorch. Each problem is a finding with its evidence and the exact fix.\n"
		"\n",
	.opts = check_options,
	.tail = "\n"
		"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: 0 no failure, 1 a fail finding (or a warning with --strict), 2 usage, 3 internal\n",
};

/* Keeps the run in the history; a failure is only a warning, never the exit code. */
static void record_check(const char *db, const facts *f, const findings *fs, int argc, char **argv)
{
	hist_run *r = history_run_begin(HIST_CHECK, argc, argv);
	history_run_context_from_facts(r, f);
	history_run_add_findings(r, fs);
	nvlink_history_add(r, f);
	history_record(db, r);
}

static void previous_nvlink(facts *f, void *db)
{
	nvlink_history_previous(f, db);
}

static void list_rules(void)
{
	for (const rule *r = rules_first(); r; r = rules_next(r))
		printf("%-28s %-5s %-10s %s\n", r->id, severity_name(r->sev), r->layer, r->summary ? r->summary : "");
}

int cmd_check(int argc, char **argv)
{
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&check_cli, longopts, shortopts);
	bool json = false, verbose = false, strict = false, no_history = false;
	const char *junit = NULL, *facts_file = NULL, *db = NULL;
	strlist requires = {0};
	long headroom_mib = -1;
	probe_opts po = {.python_timeout_ms = 20000};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int taken = probe_option(c, optarg, &po, &facts_file);
		if (taken) {
			if (taken < 0) {
				sl_free(&requires);
				return EXIT_USAGE;
			}
			continue;
		}
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_JUNIT: junit = optarg; break;
		case 'v': verbose = true; break;
		case OPT_STRICT: strict = true; break;
		case OPT_REQUIRE: {
			char *err = NULL;
			if (!policy_check_syntax(optarg, &err)) {
				int rc = usage_error(NULL, "--require: %s", err);
				free(err);
				sl_free(&requires);
				return rc;
			}
			sl_push(&requires, optarg);
			break;
		}
		case OPT_HEADROOM:
			if (!parse_int_opt("--memory-headroom", optarg, 0, 1L << 24, &headroom_mib)) {
				sl_free(&requires);
				return EXIT_USAGE;
			}
			break;
		case OPT_HIST_NO: no_history = true; break;
		case OPT_HIST_DB: db = optarg; break;
		case OPT_LIST: list_rules(); sl_free(&requires); return EXIT_OK;
		case 'h': fputs(gv_usage(&check_cli), stdout); sl_free(&requires); return EXIT_OK;
		case ':': sl_free(&requires); return usage_error(gv_usage(&check_cli), "option %s needs a value", argv[optind - 1]);
		default: sl_free(&requires); return usage_error(gv_usage(&check_cli), "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		sl_free(&requires);
		return usage_error(gv_usage(&check_cli), "unexpected argument '%s'", argv[optind]);
	}
	if (json && junit && strcmp(junit, "-") == 0) {
		sl_free(&requires);
		return usage_error(NULL, "--json and --junit - would both write to stdout: give --junit a file");
	}

	double t0 = now_seconds();
	facts *f;
	if (facts_file) {
		f = facts_load_file(facts_file);
		if (!f) {
			sl_free(&requires);
			return EXIT_USAGE;
		}
	} else {
		f = facts_new();
		/* ^C or SIGTERM end us at once, and take the library children along */
		gv_child_signals_install();
	}
	diagnose_opts dopts = {.probes = facts_file ? NULL : &po, .requires = &requires};
	if (!facts_file && history_wanted(no_history)) {
		/* nvlink.errors-grew compares with the last check: read while the probes run, not before
		 * them (SQLite's open and query delayed the NVML child's start by 2 ms) */
		dopts.beside = previous_nvlink;
		dopts.beside_arg = (void *)db;
	}
	if (headroom_mib >= 0) {
		dopts.memory_headroom_set = true;
		dopts.memory_headroom_bytes = (long long)headroom_mib << 20;
	}
	findings fs;
	findings_init(&fs);
	diagnose(f, &dopts, &fs);
	gv_trace("diagnosed");
	render_opts ro = {color_wanted(stdout, gopts.color), verbose, strict, now_seconds() - t0};

	int rc = EXIT_OK;
	if (junit) {
		if (strcmp(junit, "-") == 0) {
			render_check_junit(stdout, &fs, &requires, &ro);
		} else {
			char err[PATH_MAX + 256];
			atomic_file *a = atomic_file_open(junit, 0666, err, sizeof(err));
			if (a)
				render_check_junit(atomic_file_stream(a), &fs, &requires, &ro);
			if (!a || !atomic_file_commit(a, err, sizeof(err))) {
				gv_error("JUnit report: %s", err); /* "cannot write FILE: why" */
				rc = EXIT_INTERNAL;
			}
		}
	}
	if (json) {
		cJSON *doc = render_check_json(f, &fs, &ro);
		gv_trace("json built");
		json_print_doc(stdout, doc);
	} else if (!junit || strcmp(junit, "-") != 0) {
		render_check_text(stdout, f, &fs, &ro);
	}
	gv_trace("written");
	if (!facts_file && history_wanted(no_history))
		record_check(db, f, &fs, argc, argv);
	finding_counts cnt = findings_count(&fs);
	if (rc == EXIT_OK && (cnt.fail > 0 || (strict && cnt.warn > 0)))
		rc = EXIT_FINDING;
	if (GV_SANITIZED) { /* the process ends with this command */
		findings_free(&fs);
		facts_free(f);
	}
	sl_free(&requires);
	return rc;
}
