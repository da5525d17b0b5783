/* History runs as CSV (one row per result) and JSON (schema gpuvet.history/1, docs/history.md). */
#ifndef GPUVET_STORE_HISTORY_EXPORT_H
#define GPUVET_STORE_HISTORY_EXPORT_H
#include <stdio.h>

#include "store/history.h"

struct cJSON;

/* "higher", "lower" or "neutral". */
const char *hist_direction_name(hist_direction d);

/* Writes a header and one row per result of each run (a run without results gets one row with the
 * result columns empty). Fields are quoted as RFC 4180 says when they hold a comma, quote, CR or LF. */
void history_export_csv(FILE *out, const hist_run_row *runs, size_t n);
/* Writes one CSV field, quoted when needed. */
void csv_field(FILE *out, const char *s);

/* One run as a JSON object; unknown numbers are null. */
struct cJSON *history_run_json(const hist_run_row *r);
/* {"schema": "gpuvet.history/1", "runs": [...]}. Caller frees with cJSON_Delete. */
struct cJSON *history_export_json(const hist_run_row *runs, size_t n);
/* Compact JSON text; free with free(). */
char *history_json_print(const struct cJSON *j);
#endif
