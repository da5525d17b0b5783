/* History runs as CSV (one row per result) and JSON (schema gpuvet.history/1, docs/history.md),
 * written run by run. */
#ifndef GPUVET_STORE_HISTORY_EXPORT_H
#define GPUVET_STORE_HISTORY_EXPORT_H
#include <stdio.h>

#include "store/history.h"

struct cJSON;

/* "higher", "lower" or "neutral". */
const char *hist_direction_name(hist_direction d);

/* CSV: the header, then each run's rows, one per result (a run without results gets one row with
 * the result columns empty). Fields are quoted as RFC 4180 says when they hold a comma, quote, CR
 * or LF. */
void history_export_csv_header(FILE *out);
void history_export_csv_run(FILE *out, const hist_run_row *r);
/* Writes one CSV field, quoted when needed. */
void csv_field(FILE *out, const char *s);

/* One run as a JSON object; unknown numbers are null. */
struct cJSON *history_run_json(const hist_run_row *r);

/* {"schema": "gpuvet.history/1", "runs": [...]} written run by run, so that the writer holds one
 * run whatever the history's size, and one run a line, so that a reader can take it run by run
 * (report/runstream.h reads any layout):
 *
 *	{"schema":"gpuvet.history/1","runs":[
 *	{"id":1,...},
 *	{"id":2,...}
 *	]}
 *
 * Text from the machine is made safe as json_print_doc makes it (core/text.h). */
typedef struct hist_json_writer {
	FILE *out;
	size_t runs;
} hist_json_writer;
void history_json_begin(hist_json_writer *w, FILE *out);
void history_json_run(hist_json_writer *w, const hist_run_row *r);
void history_json_end(hist_json_writer *w);
#endif
