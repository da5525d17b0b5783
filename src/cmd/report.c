/* gpuvet report: one self-contained HTML page from the history and/or JSON documents. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "report/report.h"
#include "store/history.h"

static const char report_usage[] =
	"usage: gpuvet report [-o FILE] [--db PATH] [--json FILE ...] [options]\n"
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
	"history export --format json and history samples --json documents.\n"
	"\n"
	"options\n"
	"  -o, --output FILE   where to write the page (default gpuvet-report.html; - for stdout);\n"
	"                      written to FILE.tmp first, then renamed, so a failure never leaves half a page\n"
	"  --db PATH           the history database (default $GPUVET_DB, else\n"
	"                      $XDG_DATA_HOME/gpuvet/history.db, else ~/.local/share/gpuvet/history.db)\n"
	"  --json FILE         a gpuvet JSON document to include (repeatable; - for stdin)\n"
	"  --limit N           the newest N runs of the history (default 500; 0 for all)\n"
	"  --threshold PCT     a change worse than this between consecutive runs is marked as a\n"
	"                      regression, as `gpuvet history compare` counts it (default 5)\n"
	"  --title TEXT        the page's title (default \"gpuvet report: HOST\")\n"
	"  -h, --help          this text\n"
	"\n"
	"examples\n"
	"  gpuvet report && xdg-open gpuvet-report.html\n"
	"  gpuvet check --json > check.json; gpuvet bench --json > bench.json\n"
	"  gpuvet report --json check.json --json bench.json -o ci-report.html   # one page per CI run\n"
	"\n"
	"exit status: 0 the page was written, 2 usage error or a document that cannot be read,\n"
	"3 the history database cannot be read or the page cannot be written\n";

/* Documents larger than this are refused: a report input is a gpuvet document, not a log. */
#define REPORT_DOC_MAX (256u << 20)

static int write_page(const char *output, const report_data *d, const report_opts *ro)
{
	if (strcmp(output, "-") == 0) {
		report_write_html(stdout, d, ro);
		return fflush(stdout) == 0 && !ferror(stdout) ? EXIT_OK : EXIT_INTERNAL;
	}
	char *tmp = xasprintf("%s.tmp", output);
	FILE *fp = fopen(tmp, "w");
	if (!fp) {
		gv_error("cannot write %s: %s", tmp, strerror(errno));
		free(tmp);
		return EXIT_INTERNAL;
	}
	report_write_html(fp, d, ro);
	bool ok = fflush(fp) == 0 && !ferror(fp);
	int saved = errno;
	ok = fclose(fp) == 0 && ok;
	if (!ok || rename(tmp, output) != 0) {
		gv_error("cannot write %s: %s", ok ? output : tmp, strerror(ok ? errno : saved));
		unlink(tmp);
		free(tmp);
		return EXIT_INTERNAL;
	}
	free(tmp);
	fprintf(stderr, "gpuvet: report written to %s (%zu run%s)\n", output, report_run_count(d),
		report_run_count(d) == 1 ? "" : "s");
	return EXIT_OK;
}

int cmd_report(int argc, char **argv)
{
	enum { O_DB = 256, O_JSON, O_LIMIT, O_THRESHOLD, O_TITLE };
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},  {"db", required_argument, NULL, O_DB},
		{"json", required_argument, NULL, O_JSON}, {"limit", required_argument, NULL, O_LIMIT},
		{"threshold", required_argument, NULL, O_THRESHOLD},
		{"title", required_argument, NULL, O_TITLE}, {"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *output = "gpuvet-report.html", *db = NULL;
	strlist docs = {0};
	long limit = 500;
	report_opts ro = {.threshold_pct = 5};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":ho:", longopts, NULL)) != -1) {
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
	for (size_t i = 0; i < docs.n && rc == EXIT_OK; i++) {
		size_t len;
		char *text = read_input_file("document", docs.v[i], REPORT_DOC_MAX, &len);
		char *err = NULL;
		if (!text)
			rc = EXIT_USAGE;
		else if (!report_add_document(d, strcmp(docs.v[i], "-") == 0 ? "stdin" : docs.v[i], text, len, &err)) {
			gv_error("%s", err);
			rc = EXIT_USAGE;
		}
		free(err);
		free(text);
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
			char *err = NULL;
			history *h = history_open(path, HISTORY_READ, &err);
			if (!h || !report_add_history(d, h, limit, &err)) {
				gv_error("%s", err ? err : "cannot read the history database");
				rc = EXIT_INTERNAL;
			}
			free(err);
			history_close(h);
		}
		free(path);
	}
	if (rc == EXIT_OK)
		rc = write_page(output, d, &ro);
	report_data_free(d);
	sl_free(&docs);
	return rc;
}
