/* gpuvet explain: from the error a user pastes (or a whole log) to its cause on this machine. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "diagnose/diagnose.h"
#include "explain/decide.h"
#include "explain/explain.h"
#include "kb/kb.h"
#include "render/render.h"
#include "rules/rules.h"

enum { OPT_FILE = 256, OPT_JSON, OPT_LIST };

static const gv_option explain_options[] = {
	GV_OPT_ARG("file", OPT_FILE, "FILE", GV_VAL_FILE, "read the text from FILE (- for standard input)"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.explain/1, see docs/explain.md)"),
	GV_OPT_FLAG("list", OPT_LIST, "list the error signatures and exit (with --json: the whole catalogue)"),
	GV_OPT_FLAG("verbose", 'v', "also list the facts collected"),
	GV_OPT_GROUP("probing, as for check (by default the live Python probe runs only when a cause needs it)"),
	PROBE_OPTIONS,
	FACTS_OPTION("judge facts recorded earlier (a check --json document) instead of probing"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli explain_cli = {
	.name = "explain",
	.summary = "from an error message or a log to its cause on this machine",
	.head = "usage: gpuvet explain [options] TEXT...\n"
		"       gpuvet explain [options] -            (the text on standard input: a log, a traceback)\n"
		"       gpuvet explain [options] --file LOG\n"
		"\n"
		"Finds every known error signature in the text (data/errors.csv, the CUDA and NVML codes of\n"
		"data/error_codes.csv, the Xids of data/xid.csv: CUDA, PyTorch, NCCL, NVML, containers, builds,\n"
		"the libraries around them), runs the probes that decide between\n"
		"each signature's candidate causes, and prints the cause that holds here with its evidence and\n"
		"fix, and the causes ruled out. When no candidate holds, or nothing is recognised, the whole\n"
		"check runs. ANSI colours, line wraps, traceback framing and repeated lines are tolerated.\n"
		"\n",
	.opts = explain_options,
	.tail = "\n"
		"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: as check's: 0 no failure, 1 a fail finding, 2 usage, 3 internal\n",
	.operands = GV_VAL_TEXT,
	.getopt_prefix = "+",
};

sig_catalogue *explain_catalogue(void)
{
	char *err = NULL;
	sig_catalogue *c = sig_catalogue_new(kb_global(), &err);
	if (!c) {
		gv_error("error catalogue: %s", err);
		free(err);
	}
	return c;
}

static void print_finding(FILE *out, const finding *x, bool on, const char *indent)
{
	fprintf(out, "%s%s%s %s[%s]%s\n", col_bold(on), x->title, col_reset(on), col_dim(on), x->id, col_reset(on));
	for (size_t e = 0; e < x->evidence.n; e++)
		fprintf(out, "%s  %s%s%s\n", indent, col_dim(on), x->evidence.v[e], col_reset(on));
	for (size_t e = 0; e < x->fix.n; e++)
		fprintf(out, "%s  %s %s\n", indent, e == 0 ? "fix:" : "    ", x->fix.v[e]);
}

/* The tier of probes the hits need: the live Python probe only when a cause needs it. */
static probe_opts probes_for(const sig_catalogue *c, const sig_hit *hits, size_t n, const probe_opts *user)
{
	probe_opts po = *user;
	bool python = false;
	for (size_t i = 0; i < n; i++)
		python |= sig_needs_python(sig_at(c, hits[i].sig));
	if (!python)
		po.no_python = true;
	return po;
}

int explain_report(const sig_catalogue *c, const sig_hit *hits, size_t nhits, unsigned long lines,
		   const explain_opts *o)
{
	FILE *out = o->out;
	bool on = !o->json && color_wanted(out, gopts.color);
	double t0 = now_seconds();
	facts *f;
	probe_opts po = probes_for(c, hits, nhits, &o->po);
	if (o->facts_file) {
		f = facts_load_file(o->facts_file);
		if (!f)
			return EXIT_USAGE;
	} else {
		f = facts_new();
	}
	findings fs;
	findings_init(&fs);
	diagnose_opts dopts = {.probes = o->facts_file ? NULL : &po};
	diagnose(f, &dopts, &fs);

	cause_verdict **cv = xcalloc(nhits ? nhits : 1, sizeof(*cv));
	bool any_holds = false;
	for (size_t i = 0; i < nhits; i++) {
		const signature *s = sig_at(c, hits[i].sig);
		cv[i] = xcalloc(s->ncauses ? s->ncauses : 1, sizeof(**cv));
		sig_decide(s, f, &fs, cv[i]);
		for (size_t k = 0; k < s->ncauses; k++)
			any_holds |= cv[i][k].state == CAUSE_HOLDS;
	}
	/* nothing holds (or nothing recognised): the whole check, unless it already ran */
	bool fallback = !any_holds && !(nhits == 0 && o->no_fallback);
	bool reran = false;
	if (fallback && !o->facts_file && po.no_python && !o->po.no_python && !o->po.fast) {
		facts *f2 = facts_new();
		findings fs2;
		findings_init(&fs2);
		probe_opts full_po = o->po;
		if (!full_po.driver_hung && probes_driver_hung(f))
			full_po.driver_hung = f; /* it hung a moment ago: not waited for twice */
		diagnose_opts full = {.probes = &full_po};
		diagnose(f2, &full, &fs2);
		/* the verdicts point into fs: decide again on the full facts */
		for (size_t i = 0; i < nhits; i++) {
			const signature *s = sig_at(c, hits[i].sig);
			cause_verdicts_free(cv[i], s->ncauses);
			sig_decide(s, f2, &fs2, cv[i]);
		}
		findings_free(&fs);
		facts_free(f);
		f = f2;
		fs = fs2;
		reran = true;
	}
	render_opts ro = {on, o->verbose, false, now_seconds() - t0};

	if (o->json) {
		cJSON *doc = render_check_json(f, &fs, &ro);
		cJSON_ReplaceItemInObject(doc, "schema", cJSON_CreateString("gpuvet.explain/1"));
		cJSON *in = cJSON_AddObjectToObject(doc, "input");
		cJSON_AddNumberToObject(in, "lines", (double)lines);
		cJSON *errs = cJSON_AddArrayToObject(doc, "errors");
		for (size_t i = 0; i < nhits; i++) {
			const signature *s = sig_at(c, hits[i].sig);
			cJSON *e = cJSON_CreateObject();
			cJSON_AddStringToObject(e, "signature", s->id);
			cJSON_AddStringToObject(e, "library", s->library);
			cJSON_AddStringToObject(e, "title", s->title);
			cJSON_AddStringToObject(e, "versions", s->versions);
			cJSON_AddStringToObject(e, "source", s->source);
			cJSON_AddNumberToObject(e, "line", (double)hits[i].line);
			cJSON_AddNumberToObject(e, "count", (double)hits[i].count);
			if (s->code >= 0) {
				cJSON_AddStringToObject(e, "api", s->api);
				cJSON_AddNumberToObject(e, "code", (double)s->code);
			}
			cJSON *ranks = cJSON_AddArrayToObject(e, "ranks");
			for (int r = 0; r < SIG_RANKS; r++)
				if (hits[i].ranks[r / 8] & (1u << (r % 8)))
					cJSON_AddItemToArray(ranks, cJSON_CreateNumber(r));
			cJSON_AddStringToObject(e, "text", hits[i].excerpt);
			cJSON *holds = cJSON_AddArrayToObject(e, "holds");
			cJSON *causes = cJSON_AddArrayToObject(e, "causes");
			for (size_t k = 0; k < s->ncauses; k++) {
				cJSON *x = cJSON_CreateObject();
				cJSON_AddStringToObject(x, "id", cv[i][k].id);
				cJSON_AddStringToObject(x, "state", cause_state_name(cv[i][k].state));
				if (cv[i][k].finding) {
					cJSON_AddItemToObject(x, "finding", render_finding_json(cv[i][k].finding));
					cJSON_AddItemToArray(holds, cJSON_CreateString(cv[i][k].id));
				}
				if (cv[i][k].why)
					cJSON_AddStringToObject(x, "why", cv[i][k].why);
				cJSON_AddItemToArray(causes, x);
			}
			cJSON_AddStringToObject(e, "advice", s->advice);
			cJSON_AddItemToArray(errs, e);
		}
		cJSON_AddBoolToObject(doc, "check_ran", fallback);
		char *txt = cJSON_Print(doc);
		fprintf(out, "%s\n", txt);
		free(txt);
		cJSON_Delete(doc);
	} else {
		if (nhits == 0)
			fprintf(out, "gpuvet %s: no known error signature in the text (%lu lines)%s\n", o->command, lines,
				fallback ? "; running gpuvet check" : "");
		else
			fprintf(out, "gpuvet %s: %zu error%s recognised%s\n", o->command, nhits, nhits == 1 ? "" : "s",
				nhits > 1 ? ", in the order they appear" : "");
		/* a cause explained for an earlier error is named again, not printed again: many ranks or
		 * many signatures that one fault produced read as one explanation */
		strlist printed = {0};
		for (size_t i = 0; i < nhits; i++) {
			const signature *s = sig_at(c, hits[i].sig);
			char times[160] = "", rk[96];
			size_t tl = 0;
			if (hits[i].count > 1)
				tl += (size_t)snprintf(times + tl, sizeof(times) - tl, ", on %lu lines", hits[i].count);
			if (hits[i].nranks > 1)
				snprintf(times + tl, sizeof(times) - tl, ", by %lu ranks (%s)", hits[i].nranks,
					 sig_hit_ranks(&hits[i], rk, sizeof(rk)));
			else if (hits[i].nranks == 1)
				snprintf(times + tl, sizeof(times) - tl, ", by rank %s", sig_hit_ranks(&hits[i], rk, sizeof(rk)));
			fprintf(out, "\n%s%zu. %s%s  %s[%s; %s, line %lu%s]%s\n", col_bold(on), i + 1, s->title, col_reset(on),
				col_dim(on), s->id, s->library, hits[i].line, times, col_reset(on));
			fprintf(out, "   \"%s\"\n", hits[i].excerpt);
			if (*s->versions)
				fprintf(out, "   %sprinted by %s: %s%s\n", col_dim(on), s->library, s->versions, col_reset(on));
			bool held = false;
			for (size_t k = 0; k < s->ncauses; k++)
				if (cv[i][k].state == CAUSE_HOLDS) {
					fprintf(out, "   %s%s:%s ", col_fail(on), held ? "also holds" : "the cause here", col_reset(on));
					size_t before = 0;
					for (size_t j = 0; j < printed.n && !before; j++)
						if (strcmp(printed.v[j] + 4, cv[i][k].id) == 0)
							before = (size_t)atoi(printed.v[j]);
					if (before)
						fprintf(out, "%s%s%s %s[%s]%s, as for error %zu above\n", col_bold(on),
							cv[i][k].finding->title, col_reset(on), col_dim(on), cv[i][k].id, col_reset(on), before);
					else
						print_finding(out, cv[i][k].finding, on, "     ");
					if (!before)
						sl_pushf(&printed, "%03zu %s", i + 1, cv[i][k].id);
					held = true;
				}
			if (!held)
				fprintf(out, "   %sno candidate cause holds on this machine%s%s%s\n", col_warn(on), col_reset(on),
					*s->advice ? ": " : "", s->advice);
			else if (*s->advice)
				fprintf(out, "   %sif the fix does not help: %s%s\n", col_dim(on), s->advice, col_reset(on));
			bool hdr = false;
			for (size_t k = 0; k < s->ncauses; k++)
				if (cv[i][k].state == CAUSE_RULED_OUT) {
					if (!hdr)
						fprintf(out, "   ruled out:\n");
					hdr = true;
					fprintf(out, "     %s %s%s%s\n", cv[i][k].id, col_dim(on), cv[i][k].why, col_reset(on));
				}
			hdr = false;
			for (size_t k = 0; k < s->ncauses; k++)
				if (cv[i][k].state == CAUSE_UNDECIDED) {
					if (!hdr)
						fprintf(out, "   not decided here:\n");
					hdr = true;
					fprintf(out, "     %s %s%s%s\n", cv[i][k].id, col_dim(on), cv[i][k].why, col_reset(on));
				}
			fprintf(out, "   %ssource: %s%s\n", col_dim(on), s->source, col_reset(on));
		}
		sl_free(&printed);
		if (fallback) {
			fprintf(out, "\n%s%s%s\n\n", col_bold(on),
				nhits ? (reran ? "no candidate cause holds: the whole check" : "no candidate cause holds: the check")
				      : "gpuvet check",
				col_reset(on));
			render_check_text(out, f, &fs, &ro);
		}
	}
	for (size_t i = 0; i < nhits; i++) {
		cause_verdicts_free(cv[i], sig_at(c, hits[i].sig)->ncauses);
		free(cv[i]);
	}
	free(cv);
	finding_counts cnt = findings_count(&fs);
	findings_free(&fs);
	facts_free(f);
	return cnt.fail > 0 ? EXIT_FINDING : EXIT_OK;
}

static bool feed_file(sig_scan *s, const char *path)
{
	FILE *fp = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
	if (!fp) {
		gv_error("cannot open %s: %s", path, strerror(errno));
		return false;
	}
	char buf[65536];
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), fp)) > 0)
		sig_scan_feed(s, buf, n);
	bool ok = !ferror(fp);
	if (!ok)
		gv_error("cannot read %s: %s", path, strerror(errno));
	if (fp != stdin)
		fclose(fp);
	return ok;
}

static void list_signatures(const sig_catalogue *c, bool json)
{
	if (!json) {
		for (size_t i = 0; i < sig_count(c); i++) {
			const signature *s = sig_at(c, i);
			printf("%-34s %-14s %s\n", s->id, s->library, s->title);
		}
		return;
	}
	/* the whole catalogue, generated signatures included: docs/explain.md and the tests read it */
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "schema", "gpuvet.explain-catalogue/1");
	cJSON *arr = cJSON_AddArrayToObject(doc, "signatures");
	for (size_t i = 0; i < sig_count(c); i++) {
		const signature *s = sig_at(c, i);
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "id", s->id);
		cJSON_AddStringToObject(e, "table", s->table);
		cJSON_AddStringToObject(e, "library", s->library);
		cJSON_AddStringToObject(e, "versions", s->versions);
		cJSON_AddStringToObject(e, "title", s->title);
		cJSON_AddStringToObject(e, "pattern", s->pattern);
		cJSON *causes = cJSON_AddArrayToObject(e, "causes");
		for (size_t k = 0; k < s->ncauses; k++)
			cJSON_AddItemToArray(causes, cJSON_CreateString(s->causes[k]));
		cJSON_AddStringToObject(e, "advice", s->advice);
		cJSON_AddStringToObject(e, "example", s->example);
		cJSON_AddStringToObject(e, "source", s->source);
		if (s->code >= 0) {
			cJSON_AddStringToObject(e, "api", s->api);
			cJSON_AddNumberToObject(e, "code", (double)s->code);
		}
		if (*s->codes)
			cJSON_AddStringToObject(e, "codes", s->codes);
		cJSON_AddItemToArray(arr, e);
	}
	cJSON_AddNumberToObject(doc, "patterns", (double)sig_pattern_count(c));
	cJSON_AddNumberToObject(doc, "literal_words", (double)sig_anchor_count(c));
	char *txt = cJSON_Print(doc);
	printf("%s\n", txt);
	free(txt);
	cJSON_Delete(doc);
}

int cmd_explain(int argc, char **argv)
{
	const char *explain_usage = gv_usage(&explain_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&explain_cli, longopts, shortopts);
	explain_opts o = {.po = {.python_timeout_ms = 20000}, .out = stdout, .command = "explain"};
	const char *file = NULL;
	bool list = false;
	int c;
	optind = 1;
	opterr = 0;
	/* "+": options stop at the first word of the text, which may start with '-' only as "-" */
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int taken = probe_option(c, optarg, &o.po, &o.facts_file);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		switch (c) {
		case OPT_FILE: file = optarg; break;
		case OPT_JSON: o.json = true; break;
		case OPT_LIST: list = true; break;
		case 'v': o.verbose = true; break;
		case 'h': fputs(explain_usage, stdout); return EXIT_OK;
		case ':': return usage_error(explain_usage, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(explain_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	sig_catalogue *cat = explain_catalogue();
	if (!cat)
		return gopts.kb_dir ? EXIT_USAGE : EXIT_INTERNAL; /* --kb DIR/errors.csv that does not load */
	if (list) {
		list_signatures(cat, o.json);
		sig_catalogue_free(cat);
		return EXIT_OK;
	}
	if (!file && optind >= argc) {
		sig_catalogue_free(cat);
		return usage_error(explain_usage, "no text to explain: give it as arguments, - for standard input, or --file LOG");
	}
	if (file && optind < argc) {
		sig_catalogue_free(cat);
		return usage_error(explain_usage, "--file and a text on the command line: give one");
	}
	sig_scan *s = sig_scan_new(cat);
	bool ok = true;
	if (file) {
		ok = feed_file(s, file);
	} else if (optind + 1 == argc && strcmp(argv[optind], "-") == 0) {
		if (isatty(STDIN_FILENO))
			fprintf(stderr, "gpuvet explain: paste the error or the log, then Ctrl-D\n");
		ok = feed_file(s, "-");
	} else {
		for (int i = optind; i < argc; i++) {
			if (i > optind)
				sig_scan_feed(s, " ", 1);
			sig_scan_feed(s, argv[i], strlen(argv[i]));
		}
	}
	int rc = EXIT_USAGE;
	if (ok) {
		size_t n;
		const sig_hit *h = sig_scan_finish(s, &n);
		rc = explain_report(cat, h, n, sig_scan_lines(s), &o);
	}
	sig_scan_free(s);
	sig_catalogue_free(cat);
	return rc;
}
