/*
 * The knowledge-base CSV reader (RFC 4180): a header line, quoted fields with doubled quotes,
 * LF or CRLF. Strict, because a file that does not parse must never quietly change the advice:
 * every departure from the format is an error naming the table, the line and the column.
 */
#include "kb/csv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

typedef struct cursor {
	const char *s;
	size_t len, pos;
	size_t line, line_start; /* 1-based line; offset where it starts */
} cursor;

static size_t column(const cursor *c, size_t at)
{
	return at - c->line_start + 1;
}

/* Length of the UTF-8 sequence at s[i] (1..4), or 0 when it is not valid UTF-8. */
static size_t utf8_len(const unsigned char *s, size_t i, size_t len)
{
	unsigned char b = s[i];
	size_t n = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 0;
	if (!n || i + n > len || (n == 2 && b < 0xc2) || (n == 4 && b > 0xf4))
		return 0;
	for (size_t k = 1; k < n; k++)
		if ((s[i + k] & 0xc0) != 0x80)
			return 0;
	if (n == 3 && ((b == 0xe0 && s[i + 1] < 0xa0) || (b == 0xed && s[i + 1] >= 0xa0)))
		return 0; /* overlong, surrogates */
	if (n == 4 && ((b == 0xf0 && s[i + 1] < 0x90) || (b == 0xf4 && s[i + 1] >= 0x90)))
		return 0;
	return n;
}

static char *error_at(const char *name, const cursor *c, size_t at, const char *what)
{
	return xasprintf("%s:%zu:%zu: %s", name, c->line, column(c, at), what);
}

/* A byte that is text of its field as it stands: ASCII, not NUL and, outside quotes, neither a
 * separator nor a quote. */
static bool plain_byte(unsigned char ch, bool quoted)
{
	if (ch == 0 || ch >= 0x80 || ch == '"' || ch == '\n')
		return false;
	return quoted || (ch != ',' && ch != '\r');
}

/* Reads one record at c->pos into fields. Returns 1 for a record, 0 at the end of input, -1 with
 * *err on a malformed one. */
static int read_record(const char *name, cursor *c, strlist *fields, char **err)
{
	if (c->pos >= c->len)
		return 0;
	const unsigned char *s = (const unsigned char *)c->s;
	strbuf cur;
	sb_init(&cur);
	bool quoted = false, field_started = false, after_quote = false;
	size_t quote_line = 0, quote_col = 0;
	size_t i = c->pos;
	for (; i < c->len;) {
		unsigned char ch = s[i];
		/* a run of plain ASCII text at once: the tables are read on the way to every check's
		 * verdict, and byte by byte their parse was most of the rules' time */
		size_t run = 0;
		while (i + run < c->len && plain_byte(s[i + run], quoted))
			run++;
		if (run) {
			if (after_quote && !quoted) {
				*err = error_at(name, c, i, "text after a closing quote (a field is either quoted whole or not at all)");
				goto fail;
			}
			sb_addn(&cur, (const char *)s + i, run);
			field_started = true;
			i += run;
			continue;
		}
		if (ch == '\0') {
			*err = error_at(name, c, i, "a NUL byte: not a text file");
			goto fail;
		}
		size_t n = utf8_len(s, i, c->len);
		if (!n) {
			char what[96];
			snprintf(what, sizeof(what), "byte 0x%02x is not UTF-8 text", ch);
			*err = error_at(name, c, i, what);
			goto fail;
		}
		if (quoted) {
			if (ch == '"') {
				if (i + 1 < c->len && s[i + 1] == '"') {
					sb_addc(&cur, '"');
					i += 2;
					continue;
				}
				quoted = false;
				after_quote = true;
				i++;
				continue;
			}
			if (ch == '\n') { /* a newline inside quotes belongs to the field */
				c->line++;
				c->line_start = i + 1;
			}
			sb_addn(&cur, (const char *)s + i, n);
			i += n;
			continue;
		}
		if (ch == ',') {
			sl_push_owned(fields, sb_steal(&cur));
			sb_init(&cur);
			field_started = after_quote = false;
			i++;
			continue;
		}
		if (ch == '\n' || ch == '\r') {
			if (ch == '\r' && i + 1 < c->len && s[i + 1] == '\n')
				i++;
			i++;
			c->line++;
			c->line_start = i;
			sl_push_owned(fields, sb_steal(&cur));
			c->pos = i;
			return 1;
		}
		if (after_quote) {
			*err = error_at(name, c, i, "text after a closing quote (a field is either quoted whole or not at all)");
			goto fail;
		}
		if (ch == '"') {
			if (field_started) {
				*err = error_at(name, c, i, "a quote inside an unquoted field (quote the whole field and double "
							    "the quote: \"a \"\"b\"\" c\")");
				goto fail;
			}
			quoted = true;
			field_started = true;
			quote_line = c->line;
			quote_col = column(c, i);
			i++;
			continue;
		}
		sb_addn(&cur, (const char *)s + i, n);
		field_started = true;
		i += n;
	}
	if (quoted) {
		*err = xasprintf("%s:%zu:%zu: unterminated quoted field: the quote opened here is never closed", name,
				 quote_line, quote_col);
		goto fail;
	}
	sl_push_owned(fields, sb_steal(&cur));
	c->pos = i;
	return 1;
fail:
	sb_free(&cur);
	return -1;
}

csv_table *csv_parse(const char *name, const char *text, size_t len, char **err)
{
	cursor c = {text, len, 0, 1, 0};
	strlist hdr = {0};
	*err = NULL;
	int rc = read_record(name, &c, &hdr, err);
	if (rc <= 0 || hdr.n == 0 || (hdr.n == 1 && !hdr.v[0][0])) {
		sl_free(&hdr);
		if (!*err)
			*err = xasprintf("%s:1:1: no header line", name);
		return NULL;
	}
	csv_table *t = xcalloc(1, sizeof(*t));
	t->name = xstrdup(name);
	t->ncols = hdr.n;
	t->header = hdr.v;
	for (size_t col = 0; col < t->ncols; col++) {
		char *trimmed = xstrdup(str_trim(t->header[col]));
		free(t->header[col]);
		t->header[col] = trimmed;
	}
	for (size_t col = 0; col < t->ncols && !*err; col++) {
		if (!t->header[col][0])
			*err = xasprintf("%s:1: header column %zu has no name", name, col + 1);
		for (size_t k = 0; k < col && !*err; k++)
			if (strcmp(t->header[k], t->header[col]) == 0)
				*err = xasprintf("%s:1: header column '%s' appears twice (columns %zu and %zu)", name,
						 t->header[col], k + 1, col + 1);
	}
	if (*err) {
		csv_free(t);
		return NULL;
	}
	size_t cap = 0;
	strlist row = {0};
	for (;;) {
		size_t line = c.line;
		rc = read_record(name, &c, &row, err);
		if (rc <= 0)
			break;
		bool blank = row.n == 1 && !row.v[0][0];
		if (!blank && row.n != t->ncols) {
			*err = xasprintf("%s:%zu: %zu field%s, the header has %zu", name, line, row.n, row.n == 1 ? "" : "s",
					 t->ncols);
			rc = -1;
			break;
		}
		if (!blank) {
			if (t->nrows == cap) {
				cap = cap ? cap * 2 : 32;
				t->cells = xrealloc(t->cells, cap * t->ncols * sizeof(char *));
			}
			for (size_t col = 0; col < t->ncols; col++)
				t->cells[t->nrows * t->ncols + col] = xstrdup(row.v[col]);
			t->nrows++;
		}
		sl_free(&row);
	}
	sl_free(&row);
	if (rc < 0) {
		csv_free(t);
		return NULL;
	}
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
