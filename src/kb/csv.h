/* A small, strict RFC 4180 CSV reader: header line, quoted fields, doubled quotes, CRLF, UTF-8. */
#ifndef GPUVET_CSV_H
#define GPUVET_CSV_H
#include <stddef.h>

typedef struct csv_table {
	char *name;
	size_t ncols, nrows;
	char **header; /* ncols */
	char **cells;  /* nrows * ncols; missing cells are "" */
} csv_table;

/* Parses text (len bytes). Returns NULL and *err ("NAME:LINE:COLUMN: what", malloc'd) when the
 * text is not well-formed CSV: no header, an unnamed or repeated header column, an unterminated
 * quoted field, a quote inside an unquoted field, text after a closing quote, a NUL byte, bytes
 * that are not UTF-8, or a row whose field count differs from the header's. Blank lines are
 * skipped. */
csv_table *csv_parse(const char *name, const char *text, size_t len, char **err);
void csv_free(csv_table *t);
int csv_col(const csv_table *t, const char *column); /* -1 when absent */
const char *csv_cell(const csv_table *t, size_t row, const char *column); /* "" when absent */
#endif
