/* gpuvet report: one self-contained HTML page from the history and/or JSON documents. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/atomicfile.h"
#include "cmd/history_record.h"
#include "core/util.h"
#include "report/report.h"
#include "store/history.h"

enum { O_DB = 256, O_JSON, O_LIMIT, O_THRESHOLD, O_TITLE };

static const gv_option report_options[] = {
	GV_OPT_ARG("output", 'o', "FILE", GV_VAL_FILE,
		   "where to write the page (default gpuvet-report.html; - for stdout); written to a new temporary file "
		   "beside it first, then renamed, so a failure never leaves half a page"),
	GV_OPT_ARG("db", O_DB, "PATH", GV_VAL_FILE,
		   "the history database (default $GPUVET_DB, else $XDG_DATA_HOME/gpuvet/history.db, else "
		   "~/.local/share/gpuvet/history.db)"),
	GV_OPT_ARG("json", O_JSON, "FILE", GV_VAL_FILE, "a gpuvet JSON document to include (repeatable; - for stdin)"),
	GV_OPT_ARG("limit", O_LIMIT, "N", GV_VAL_NUMBER,
		   "the newest N runs of the history (default 500; 0 for all). Whatever N, the page draws the newest "
		   "2000 runs of all it reads at most, and says how many it left out (they are still counted)"),
	GV_OPT_ARG("threshold", O_THRESHOLD, "PCT", GV_VAL_NUMBER,
		   "a change worse than this between consecutive runs is marked as a regression, as `gpuvet history "
		   "compare` counts it (default 5)"),
	GV_OPT_ARG("title", O_TITLE, "TEXT", GV_VAL_TEXT, "the page's title (default \"gpuvet report: HOST\")"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli report_cli = {
	.name = "report",
	.summary = "one self-contained HTML page: diagnosis, benchmarks against peaks, trends, tune",
	.head = "usage: gpuvet report [-o FILE] [--db PATH] [--json FILE ...] [options]\n"
		"\n"
		"Writes one HTML page that a person would rather look at than read: the latest diagnosis\n"
		"(findings by layer, with evidence and the fix to copy), the benchmark figures as bars against\n"
		"the hardware's peaks, trends of the figures over time with regressions and the machine's\n"
		"changes (driver, CUDA, PyTorch) marked, tune's settings ranked by measured gain with the code\n"
		"for each, and watch --record samples. The page is self-contained: inline CSS and SVG charts,\n"
		"no script and nothing fetched, so it opens offline, prints, and can be attached to a ticket.\n"
		"\n"
		"Input: this machine's history (the default), or the JSON documents given with --json (then\n"
		"the history only when --db is also given): gpuvet check --json, bench --json, tune --json,\n"
		"history export --format json and history samples --json documents. A history export is read\n"
		"run by run, whatever its size; any other document must be under 256 MiB.\n"
		"\n",
	.opts = report_options,
	.tail = "\n"
		"examples\n"
		"  gpuvet report && xdg-open gpuvet-report.html\n"
		"  gpuvet check --json > check.json; gpuvet bench --json > bench.json\n"
		"  gpuvet report --json check.json --json bench.json -o ci-report.html   # one page per CI run\n"
		"\n"
		"exit status: 0 the page was written, 2 usage error or a document that cannot be read,\n"
		"3 the page cannot be written, or the history database cannot be read (the page is then\n"
		"written without it, and says so)\n",
};

/* Documents larger than this are refused: a report input is a gpuvet document, not a log. A
 * history export is read run by run, whatever its size (report/runstream.h). */
#define REPORT_DOC_MAX (256u << 20)

static int write_page(const char *output, const report_data *d, const report_opts *ro)
{
	if (strcmp(output, "-") == 0) {
		report_write_html(stdout, d, ro);
		return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_INTERNAL;
	}
	char err[PATH_MAX + 256];
	atomic_file *a = atomic_file_open(output, 0666, err, sizeof(err));
	if (a)
		report_write_html(atomic_file_stream(a), d, ro);
	if (!a || !atomic_file_commit(a, err, sizeof(err))) {
		gv_error("%s", err);
		return EXIT_INTERNAL;
	}
	size_t kept = report_run_count(d), read = report_runs_read(d);
	if (read > kept)
		fprintf(stderr, "gpuvet: report written to %s (%zu runs read, the newest %zu drawn: the page keeps %d at most)\n",
			output, read, kept, REPORT_RUNS_MAX);
	else
		fprintf(stderr, "gpuvet: report written to %s (%zu run%s)\n", output, kept, kept == 1 ? "" : "s");
	return EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
	const char *report_usage = gv_usage(&report_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&report_cli, longopts, shortopts);
	const char *output = "gpuvet-report.html", *db = NULL;
	strlist docs = {0};
	long limit = 500;
	report_opts ro = {.threshold_pct = 5};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		switch (c) {
		case 'o': output = optarg; break;
		case O_DB: db = optarg; break;
		case O_JSON: sl_push(&docs, optarg); break;
		case O_LIMIT:
			if (!parse_int_opt("--limit", optarg, 0, 1000000000, &limit)) {
				sl_free(&docs);
				return EXIT_USAGE;
			}
			break;
		case O_THRESHOLD:
			if (!parse_double_opt("--threshold", optarg, 0, 1000, &ro.threshold_pct)) {
				sl_free(&docs);
				return EXIT_USAGE;
			}
			break;
		case O_TITLE: ro.title = optarg; break;
		default:
			sl_free(&docs);
			return usage_getopt_rest(c, report_usage, argv);
		}
	}
	if (optind < argc) {
		sl_free(&docs);
		return usage_error(report_usage, "unexpected argument %s", argv[optind]);
	}
	if (!*output) {
		sl_free(&docs);
		return usage_error(report_usage, "--output needs a file name");
	}
	ro.generated_utc = getenv("GPUVET_REPORT_TIME"); /* tests: a fixed time, pages that compare */
	report_data *d = report_data_new();
	int rc = EXIT_OK;
	bool history_failed = false;
	for (size_t i = 0; i < docs.n && rc == EXIT_OK; i++) {
		bool is_stdin = strcmp(docs.v[i], "-") == 0;
		FILE *fp = is_stdin ? stdin : fopen(docs.v[i], "rb");
		char *err = NULL;
		if (!fp) {
			gv_error("cannot open document %s: %s", docs.v[i], strerror(errno));
			rc = EXIT_USAGE;
		} else if (!report_add_file(d, is_stdin ? "stdin" : docs.v[i], fp, REPORT_DOC_MAX, &err)) {
			gv_error("%s", err);
			rc = EXIT_USAGE;
		}
		if (fp && !is_stdin)
			fclose(fp);
		free(err);
	}
	if (rc == EXIT_OK && (db || docs.n == 0)) {
		char *path = history_default_path(db);
		struct stat st;
		if (path && stat(path, &st) != 0 && errno == ENOENT) {
			if (db) {
				gv_error("no history database at %s", path);
				rc = EXIT_USAGE;
			} else {
				gv_warning("no history database at %s yet: the page shows nothing recorded (gpuvet check, "
					   "bench and tune record their runs there)",
					   path);
			}
		} else {
			/* a history that cannot be read (not ours, damaged, another schema) is left as it is
			 * and the page is still written, without it and saying so; the exit status says it */
			char *err = NULL;
			history *h = history_open(path, HISTORY_READ, &err);
			if (!h || !report_add_history(d, h, limit, &err)) {
				char hint[96];
				const char *why = err ? err : "cannot read the history database";
				gv_error("the page is written without the history: %s%s", why, history_limit_hint(hint, sizeof(hint)));
				report_history_unread(d, why);
				history_failed = true;
			}
			free(err);
			history_close(h);
		}
		free(path);
	}
	if (rc == EXIT_OK)
		rc = write_page(output, d, &ro);
	if (rc == EXIT_OK && history_failed)
		rc = EXIT_INTERNAL;
	report_data_free(d);
	sl_free(&docs);
	return rc;
}
