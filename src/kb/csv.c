#include "kb/csv.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* Reads one record starting at *pos; returns false at the end of input. */
static bool read_record(const char *s, size_t len, size_t *pos, strlist *fields)
{
	if (*pos >= len)
		return false;
	strbuf cur;
	sb_init(&cur);
	bool quoted = false, field_started = false;
	size_t i = *pos;
	for (; i < len; i++) {
		char c = s[i];
		if (quoted) {
			if (c == '"') {
				if (i + 1 < len && s[i + 1] == '"') {
					sb_addc(&cur, '"');
					i++;
				} else {
					quoted = false;
				}
			} else {
				sb_addc(&cur, c);
			}
			continue;
		}
		if (c == '"' && !field_started) {
			quoted = true;
			field_started = true;
		} else if (c == ',') {
			sl_push_owned(fields, sb_steal(&cur));
			field_started = false;
		} else if (c == '\n' || c == '\r') {
			if (c == '\r' && i + 1 < len && s[i + 1] == '\n')
				i++;
			i++;
			break;
		} else if (c == '\0') {
			continue;
		} else {
			sb_addc(&cur, c);
			field_started = true;
		}
	}
	sl_push_owned(fields, sb_steal(&cur));
	*pos = i;
	return true;
}

csv_table *csv_parse(const char *name, const char *text, size_t len, char **err)
{
	size_t pos = 0;
	strlist hdr = {0};
	if (!read_record(text, len, &pos, &hdr) || hdr.n == 0 || (hdr.n == 1 && !hdr.v[0][0])) {
		sl_free(&hdr);
		*err = xasprintf("%s: no header line", name);
		return NULL;
	}
	csv_table *t = xcalloc(1, sizeof(*t));
	t->name = xstrdup(name);
	t->ncols = hdr.n;
	t->header = hdr.v;
	for (size_t c = 0; c < t->ncols; c++) {
		char *trimmed = xstrdup(str_trim(t->header[c]));
		free(t->header[c]);
		t->header[c] = trimmed;
	}
	size_t cap = 0;
	strlist row = {0};
	while (read_record(text, len, &pos, &row)) {
		bool blank = row.n == 1 && !row.v[0][0];
		if (!blank) {
			if (t->nrows == cap) {
				cap = cap ? cap * 2 : 32;
				t->cells = xrealloc(t->cells, cap * t->ncols * sizeof(char *));
			}
			for (size_t c = 0; c < t->ncols; c++)
				t->cells[t->nrows * t->ncols + c] = xstrdup(c < row.n ? row.v[c] : "");
			t->nrows++;
		}
		sl_free(&row);
	}
	sl_free(&row);
	return t;
}

void csv_free(csv_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	for (size_t c = 0; c < t->ncols; c++)
		free(t->header[c]);
	free(t->cells);
	free(t->header);
	free(t->name);
	free(t);
}

int csv_col(const csv_table *t, const char *column)
{
	for (size_t c = 0; c < t->ncols; c++)
		if (strcmp(t->header[c], column) == 0)
			return (int)c;
	return -1;
}

const char *csv_cell(const csv_table *t, size_t row, const char *column)
{
	int c = csv_col(t, column);
	if (c < 0 || row >= t->nrows)
		return "";
	return t->cells[row * t->ncols + (size_t)c];
}
