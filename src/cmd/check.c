/* gpuvet check: run the probes, apply the rules, render the findings. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/history_record.h"
#include "cmd/nvlink_history.h"
#include "core/sysroot.h"
#include "diagnose/diagnose.h"
#include "render/render.h"
#include "core/text.h"
#include "rules/policy.h"
#include "rules/rules.h"

static const char check_usage[] =
	"usage: gpuvet check [options]\n"
	"\n"
	"Diagnoses every layer of the GPU stack: hardware and kernel driver, device nodes, driver\n"
	"libraries, CUDA toolkits, the dynamic loader, environment variables, containers, Python and\n"
	"PyTorch. Each problem is a finding with its evidence and the exact fix.\n"
	"\n"
	"output\n"
	"  --json               one JSON document (schema gpuvet.check/1, see docs/json.md)\n"
	"  --junit FILE         also write a JUnit XML report: one test case per rule and per\n"
	"                       --require (docs/json.md); - for stdout\n"
	"  -v, --verbose        list every fact collected and the rules skipped\n"
	"  --list-rules         list the rules (finding ids) and exit\n"
	"\n"
	"policy (for CI)\n"
	"  --strict             warnings fail too (exit 1)\n"
	"  --require EXPR       fail unless EXPR holds; repeatable. EXPR is KEY OP VALUE over facts\n"
	"                       (nvml.device_count>=8, nvml.driver_version>=550.54), OP one of\n"
	"                       == != >= <= > <, versions compared part by part (12.10 > 12.4); a fact\n"
	"                       KEY that must be true; or !ID for a finding id (or prefix ending in .)\n"
	"                       that must not appear. A malformed EXPR is a usage error (exit 2)\n"
	"\n"
	"probing\n"
	"  --fast               NVML and files only: no cuInit, no Python (about 0.1 s)\n"
	"  --no-python          skip the live Python/PyTorch probe\n"
	"  --python PATH        the interpreter to examine (default: the active venv/conda, then PATH)\n"
	"  --python-timeout S   seconds the Python probe may take (default 20)\n"
	"  --facts FILE         judge facts recorded earlier (a check --json document) instead of probing\n"
	"  --memory-headroom MIB  warn (gpu.memory-held) when other processes leave less than MIB free\n"
	"                       on a GPU (default: warn above 90 % of its memory held)\n"
	"\n"
	"history (see gpuvet history --help)\n"
	"  --no-history         do not store this run (also GPUVET_NO_HISTORY=1); --facts runs are never stored\n"
	"  --db PATH            the history database (default ~/.local/share/gpuvet/history.db)\n"
	"\n"
	"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
	"\n"
	"exit status: 0 no failure, 1 a fail finding (or a warning with --strict), 2 usage, 3 internal\n";


/* Keeps the run in the history; a failure is only a warning, never the exit code. */
static void record_check(const char *db, const facts *f, const findings *fs, int argc, char **argv)
{
	hist_run *r = history_run_begin(HIST_CHECK, argc, argv);
	history_run_context_from_facts(r, f);
	history_run_add_findings(r, fs);
	nvlink_history_add(r, f);
	history_record(db, r);
}

static void list_rules(void)
{
	for (const rule *r = rules_first(); r; r = rules_next(r))
		printf("%-28s %-5s %-10s %s\n", r->id, severity_name(r->sev), r->layer, r->summary ? r->summary : "");
}

int cmd_check(int argc, char **argv)
{
	enum { OPT_JUNIT = 256, OPT_STRICT, OPT_REQUIRE, OPT_LIST, OPT_JSON, OPT_NO_HISTORY, OPT_DB, OPT_HEADROOM };
	static const struct option longopts[] = {
		{"json", no_argument, NULL, OPT_JSON},
		{"junit", required_argument, NULL, OPT_JUNIT},
		{"verbose", no_argument, NULL, 'v'},
		{"strict", no_argument, NULL, OPT_STRICT},
		{"require", required_argument, NULL, OPT_REQUIRE},
		PROBE_LONGOPTS,
		FACTS_LONGOPT,
		{"memory-headroom", required_argument, NULL, OPT_HEADROOM},
		{"list-rules", no_argument, NULL, OPT_LIST},
		{"no-history", no_argument, NULL, OPT_NO_HISTORY},
		{"db", required_argument, NULL, OPT_DB},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false, verbose = false, strict = false, no_history = false;
	const char *junit = NULL, *facts_file = NULL, *db = NULL;
	strlist requires = {0};
	long headroom_mib = -1;
	probe_opts po = {false, false, NULL, 20000};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
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
		case OPT_NO_HISTORY: no_history = true; break;
		case OPT_DB: db = optarg; break;
		case OPT_LIST: list_rules(); sl_free(&requires); return EXIT_OK;
		case 'h': fputs(check_usage, stdout); sl_free(&requires); return EXIT_OK;
		case ':': sl_free(&requires); return usage_error(check_usage, "option %s needs a value", argv[optind - 1]);
		default: sl_free(&requires); return usage_error(check_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		sl_free(&requires);
		return usage_error(check_usage, "unexpected argument '%s'", argv[optind]);
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
		if (history_wanted(no_history))
			nvlink_history_previous(f, db); /* nvlink.errors-grew compares with the last check */
	}
	diagnose_opts dopts = {.probes = facts_file ? NULL : &po, .requires = &requires};
	if (headroom_mib >= 0) {
		dopts.memory_headroom_set = true;
		dopts.memory_headroom_bytes = (long long)headroom_mib << 20;
	}
	findings fs;
	findings_init(&fs);
	diagnose(f, &dopts, &fs);
	render_opts ro = {color_wanted(stdout, gopts.color), verbose, strict, now_seconds() - t0};

	int rc = EXIT_OK;
	if (junit) {
		FILE *jf = strcmp(junit, "-") == 0 ? stdout : fopen(junit, "w");
		if (!jf) {
			gv_error("cannot write JUnit report %s: %m", junit);
			rc = EXIT_INTERNAL;
		} else {
			render_check_junit(jf, &fs, &requires, &ro);
			if (jf != stdout && fclose(jf) != 0) {
				gv_error("cannot write JUnit report %s: %m", junit);
				rc = EXIT_INTERNAL;
			}
		}
	}
	if (json) {
		json_print_doc(stdout, render_check_json(f, &fs, &ro));
	} else if (!junit || strcmp(junit, "-") != 0) {
		render_check_text(stdout, f, &fs, &ro);
	}
	if (!facts_file && history_wanted(no_history))
		record_check(db, f, &fs, argc, argv);
	finding_counts cnt = findings_count(&fs);
	if (rc == EXIT_OK && (cnt.fail > 0 || (strict && cnt.warn > 0)))
		rc = EXIT_FINDING;
	findings_free(&fs);
	facts_free(f);
	sl_free(&requires);
	return rc;
}
