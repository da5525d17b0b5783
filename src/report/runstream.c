/*
 * The history document read run by run (runstream.h). A small scanner over a buffered stream:
 * the top-level object member by member, "schema" checked, "runs" element by element (each one's
 * text gathered and given to cJSON), anything else skipped. Strings are followed with their
 * escapes, so a brace inside one is text; the nesting of a skipped value is counted, and each run
 * is validated in full by cJSON.
 */
#include "report/runstream.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

#define BUF_SIZE 65536

typedef enum { RS_START, RS_MEMBERS, RS_RUNS, RS_TAIL, RS_DONE } rs_state;

struct runstream {
	FILE *in;
	char *name;
	unsigned char buf[BUF_SIZE];
	size_t pos, len;
	unsigned long long consumed; /* bytes taken before buf[pos], for messages */
	bool eof, read_error;
	bool history;
	rs_state state;
	size_t members, in_runs, runs;
	strbuf run;  /* the text of the run being read, reused */
	char *error; /* the first error; every later call returns it */
};

static void refill(runstream *rs)
{
	if (rs->eof)
		return;
	rs->len = fread(rs->buf, 1, sizeof(rs->buf), rs->in);
	rs->pos = 0;
	if (rs->len == 0) {
		rs->eof = true;
		rs->read_error = ferror(rs->in) != 0;
	}
}

/* The next byte without taking it; -1 at the end. */
static int peek(runstream *rs)
{
	if (rs->pos == rs->len)
		refill(rs);
	return rs->pos < rs->len ? rs->buf[rs->pos] : -1;
}

static int take(runstream *rs)
{
	int c = peek(rs);
	if (c >= 0) {
		rs->pos++;
		rs->consumed++;
	}
	return c;
}

static bool fail(runstream *rs, const char *what)
{
	if (!rs->error) {
		if (rs->read_error)
			rs->error = xasprintf("cannot read document %s", rs->name);
		else
			rs->error = xasprintf("%s: not a history document as gpuvet writes it: %s at byte %llu", rs->name, what,
					      rs->consumed);
	}
	return false;
}

static void skip_blanks(runstream *rs)
{
	int c;
	while ((c = peek(rs)) == ' ' || c == '\t' || c == '\r' || c == '\n')
		take(rs);
}

/* A string (at its opening quote), its bytes appended to sb when not NULL. */
static bool scan_string(runstream *rs, strbuf *sb, size_t max)
{
	take(rs);
	if (sb)
		sb_addc(sb, '"');
	for (;;) {
		int c = take(rs);
		if (c < 0)
			return fail(rs, "the end inside a string");
		if (sb) {
			if (sb->len >= max)
				return fail(rs, "a run larger than 64 MiB");
			sb_addc(sb, (char)c);
		}
		if (c == '"')
			return true;
		if (c == '\\') {
			c = take(rs);
			if (c < 0)
				return fail(rs, "the end inside a string");
			if (sb)
				sb_addc(sb, (char)c);
		}
	}
}

static bool is_delimiter(int c)
{
	return c < 0 || c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* An object or an array (at its opening bracket), appended to sb when not NULL: nesting counted
 * and strings followed over the buffer a span at a time (an export is hundreds of MiB). */
static bool scan_nested(runstream *rs, strbuf *sb, size_t max)
{
	size_t depth = 0;
	bool in_string = false, escaped = false;
	for (;;) {
		if (peek(rs) < 0)
			return fail(rs, "the end inside a value");
		const unsigned char *b = rs->buf;
		size_t i = rs->pos;
		bool done = false;
		for (; i < rs->len && !done; i++) {
			unsigned char c = b[i];
			if (in_string) {
				if (escaped)
					escaped = false;
				else if (c == '\\')
					escaped = true;
				else if (c == '"')
					in_string = false;
			} else if (c == '"') {
				in_string = true;
			} else if (c == '{' || c == '[') {
				depth++;
			} else if (c == '}' || c == ']') {
				done = --depth == 0;
			}
		}
		size_t n = i - rs->pos;
		if (sb) {
			if (sb->len + n > max)
				return fail(rs, "a run larger than 64 MiB");
			sb_addn(sb, (const char *)b + rs->pos, n);
		}
		rs->pos = i;
		rs->consumed += n;
		if (done)
			return true;
	}
}

/* One value (after any blanks), appended to sb when not NULL: a string, an object, an array, or a
 * number, true, false or null. */
static bool scan_value(runstream *rs, strbuf *sb, size_t max)
{
	skip_blanks(rs);
	int c = peek(rs);
	if (c == '"')
		return scan_string(rs, sb, max);
	if (c == '{' || c == '[')
		return scan_nested(rs, sb, max);
	/* a number, true, false or null: cJSON judges it in a run; a skipped one is only bounded */
	size_t n = 0;
	while (!is_delimiter(c = peek(rs)) && c != '{' && c != '[' && c != '"' && c != ':' && n < 4096) {
		take(rs);
		if (sb)
			sb_addc(sb, (char)c);
		n++;
	}
	return n > 0 && n < 4096 ? true : fail(rs, "no value");
}

/* Empties sb, keeping its buffer. */
static void sb_reset(strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

/* Whether the first member of the document is "schema": "gpuvet.history/1", from the buffered
 * bytes alone (nothing is taken). */
static bool sniff(const unsigned char *p, size_t n)
{
	size_t i = 0;
	const char *const parts[] = {"{", "\"schema\"", ":", "\"gpuvet.history/1\""};
	for (size_t k = 0; k < GV_ARRAY_LEN(parts); k++) {
		while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
			i++;
		size_t l = strlen(parts[k]);
		if (n - i < l || memcmp(p + i, parts[k], l) != 0)
			return false;
		i += l;
	}
	return true;
}

runstream *runstream_open(FILE *in, const char *name)
{
	runstream *rs = xcalloc(1, sizeof(*rs));
	rs->in = in;
	rs->name = xstrdup(name);
	sb_init(&rs->run);
	/* a pipe gives what it has: read until the buffer is full or the input ends */
	while (rs->len < sizeof(rs->buf)) {
		size_t r = fread(rs->buf + rs->len, 1, sizeof(rs->buf) - rs->len, in);
		if (r == 0)
			break;
		rs->len += r;
	}
	if (rs->len == 0) {
		rs->eof = true;
		rs->read_error = ferror(in) != 0;
	}
	rs->history = sniff(rs->buf, rs->len);
	return rs;
}

bool runstream_is_history(const runstream *rs)
{
	return rs->history;
}

/* The next member of the top-level object: "runs" opens the array, "schema" is checked, any other
 * is skipped. False on an error. */
static bool next_member(runstream *rs)
{
	skip_blanks(rs);
	int c = peek(rs);
	if (c == '}') {
		take(rs);
		rs->state = RS_TAIL;
		return true;
	}
	if (rs->members) {
		if (c != ',')
			return fail(rs, "no comma between members");
		take(rs);
		skip_blanks(rs);
	}
	if (peek(rs) != '"')
		return fail(rs, "no member name");
	strbuf key;
	sb_init(&key);
	bool ok = scan_string(rs, &key, 4096);
	skip_blanks(rs);
	if (ok && take(rs) != ':')
		ok = fail(rs, "no colon after a member name");
	rs->members++;
	if (ok && strcmp(key.buf, "\"runs\"") == 0) {
		skip_blanks(rs);
		if (take(rs) != '[')
			ok = fail(rs, "\"runs\" that is not an array");
		rs->state = RS_RUNS;
		rs->in_runs = 0;
	} else if (ok && strcmp(key.buf, "\"schema\"") == 0) {
		sb_reset(&key);
		ok = scan_value(rs, &key, 4096);
		if (ok && strcmp(key.buf, "\"gpuvet.history/1\"") != 0)
			ok = fail(rs, "a second schema that is not gpuvet.history/1");
	} else if (ok) {
		ok = scan_value(rs, NULL, 0);
	}
	sb_free(&key);
	return ok;
}

cJSON *runstream_next(runstream *rs, char **err)
{
	*err = NULL;
	while (!rs->error) {
		switch (rs->state) {
		case RS_START:
			skip_blanks(rs);
			if (take(rs) != '{')
				fail(rs, "no object");
			rs->state = RS_MEMBERS;
			break;
		case RS_MEMBERS:
			next_member(rs);
			break;
		case RS_RUNS: {
			skip_blanks(rs);
			int c = peek(rs);
			if (c == ']') {
				take(rs);
				rs->state = RS_MEMBERS;
				break;
			}
			if (rs->in_runs) {
				if (c != ',') {
					fail(rs, "no comma between runs");
					break;
				}
				take(rs);
			}
			sb_reset(&rs->run);
			if (!scan_value(rs, &rs->run, RUNSTREAM_RUN_MAX))
				break;
			rs->in_runs++;
			rs->runs++;
			cJSON *run = cJSON_ParseWithLength(rs->run.buf, rs->run.len);
			if (cJSON_IsObject(run))
				return run;
			cJSON_Delete(run);
			char what[64];
			snprintf(what, sizeof(what), "run %zu, which is not a JSON object,", rs->runs);
			fail(rs, what);
			break;
		}
		case RS_TAIL:
			skip_blanks(rs);
			if (peek(rs) >= 0) {
				fail(rs, "more after the end of the document");
				break;
			}
			if (rs->read_error) {
				fail(rs, "");
				break;
			}
			rs->state = RS_DONE;
			return NULL;
		case RS_DONE:
			return NULL;
		}
	}
	*err = xstrdup(rs->error);
	return NULL;
}

char *runstream_slurp(runstream *rs, size_t max, size_t *len, char **err)
{
	strbuf sb;
	sb_init(&sb);
	sb_addn(&sb, (const char *)rs->buf + rs->pos, rs->len - rs->pos);
	rs->pos = rs->len;
	char chunk[65536];
	size_t r;
	while (sb.len <= max && !rs->eof && (r = fread(chunk, 1, sizeof(chunk), rs->in)) > 0)
		sb_addn(&sb, chunk, r);
	if (sb.len > max || ferror(rs->in)) {
		*err = sb.len > max ? xasprintf("document %s is larger than %zu MiB", rs->name, max >> 20)
				    : xasprintf("cannot read document %s", rs->name);
		sb_free(&sb);
		return NULL;
	}
	*len = sb.len;
	return sb_steal(&sb);
}

void runstream_close(runstream *rs)
{
	if (!rs)
		return;
	sb_free(&rs->run);
	free(rs->error);
	free(rs->name);
	free(rs);
}
