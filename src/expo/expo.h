/*
 * The Prometheus exposition writer: metric families and samples into a buffer, in the text
 * format 0.0.4 or OpenMetrics 1.0.0. Pure (no I/O, no globals), so it is tested and fuzzed on
 * its own; serve and --textfile feed it.
 *
 * A family is declared once (expo_family) and its samples follow (expo_sample). Counter
 * families are named with their "_total" suffix, as they appear in the text format; for
 * OpenMetrics the metadata lines drop it, as that format wants.
 *
 * Label values are escaped (backslash, double quote, line feed) and made valid UTF-8 (every
 * invalid byte becomes U+FFFD), so anything read from a GPU name, /proc or a kernel log line
 * is safe to put in a label.
 */
#ifndef GPUVET_EXPO_H
#define GPUVET_EXPO_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

typedef enum { EXPO_TEXT, EXPO_OPENMETRICS } expo_format;
typedef enum { MT_GAUGE, MT_COUNTER, MT_UNTYPED } metric_type;

#define EXPO_CONTENT_TYPE_TEXT "text/plain; version=0.0.4; charset=utf-8"
#define EXPO_CONTENT_TYPE_OPENMETRICS "application/openmetrics-text; version=1.0.0; charset=utf-8"

typedef struct expo {
	strbuf *out;
	expo_format fmt;
	const char *family; /* current family name (borrowed) */
	metric_type type;
	size_t nfamilies, nsamples;
	bool bad; /* a name that is not a valid metric or label name was refused */
} expo;

void expo_init(expo *e, strbuf *out, expo_format fmt);
/* Declares a family: HELP and TYPE lines. Returns false (and writes nothing) for an invalid
 * name. help may be NULL. */
bool expo_family(expo *e, const char *name, metric_type type, const char *help);
/* One sample of the current family, labels as NULL-terminated name, value pairs. A pair whose
 * value is NULL is left out. Returns false for an invalid label name. */
bool expo_sample(expo *e, double value, ...);
/* Same, labels as arrays. */
bool expo_sample_v(expo *e, double value, size_t nlabels, const char *const *names, const char *const *values);
/* Ends the exposition ("# EOF" for OpenMetrics, nothing for text). */
void expo_finish(expo *e);

/* Appends value escaped for a label value (no surrounding quotes). */
void expo_escape_label(strbuf *sb, const char *value, size_t len);
/* Appends text escaped for a HELP line of the given format. */
void expo_escape_help(strbuf *sb, const char *text, expo_format fmt);
/* Formats a sample value: shortest text that reads back exactly; "NaN", "+Inf", "-Inf". */
void expo_format_value(char *buf, size_t size, double v);
bool expo_valid_metric_name(const char *name);
bool expo_valid_label_name(const char *name);

/* Each element of an HTTP header list ("gzip;q=0.5, *", "text/plain;version=0.0.4"): its token
 * (blanks trimmed, never empty) and its q, 1 without one, -1 for a q that does not parse. */
typedef void (*expo_header_fn)(const char *token, size_t len, double q, void *arg);
void expo_header_each(const char *list, expo_header_fn fn, void *arg);

/* Which format a scrape's Accept header asks for: OpenMetrics when it names
 * application/openmetrics-text with a q above the text format's (or without q). NULL: text. */
expo_format expo_negotiate(const char *accept);
#endif
