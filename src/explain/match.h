/*
 * The error-signature matcher behind `gpuvet explain` and `gpuvet run`: finds every signature of
 * the catalogue (data/errors.csv) in a text of any size, pasted or piped, whatever its framing.
 *
 * The text is normalised first, one line at a time: ANSI escape sequences are dropped, control
 * bytes and NULs become spaces, CR ends a line, leading blanks and bracketed log prefixes
 * ("[rank0]:", "[2024-11-14 05:49:02,242]", "> ") are taken off, and a line repeated in a row is
 * kept once. The lines are then joined without a separator, so a message that a terminal wrapped
 * in the middle of a word reads whole; a space in a pattern matches any run of blanks, none
 * included, so a message wrapped between two words matches too.
 *
 * Bounds: the text is read in blocks and scanned in windows of 256 KiB that overlap by 4 KiB (a
 * signature matches at most 2 KiB); a line is cut at 64 KiB. Memory stays under 1 MiB whatever
 * the input's size; time is linear in it (each window is searched for each pattern's longest
 * literal word before its regular expression runs).
 */
#ifndef GPUVET_EXPLAIN_MATCH_H
#define GPUVET_EXPLAIN_MATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kb/csv.h"

/* One row of data/errors.csv. */
typedef struct signature {
	const char *id, *library, *versions, *pattern, *title, *advice, *example, *source;
	char **causes; /* finding ids, NULL terminated */
	size_t ncauses;
} signature;

typedef struct sig_catalogue sig_catalogue;

/* Builds the catalogue from the errors table; NULL and *err (allocated) when a row is malformed
 * (an empty id, pattern or source, a pattern that does not compile, a duplicate id). */
sig_catalogue *sig_catalogue_new(const csv_table *t, char **err);
void sig_catalogue_free(sig_catalogue *c);
size_t sig_count(const sig_catalogue *c);
const signature *sig_at(const sig_catalogue *c, size_t i);
const signature *sig_find(const sig_catalogue *c, const char *id);
/* The literal word every match must contain (lower case), "" when the pattern has none. */
const char *sig_anchor(const sig_catalogue *c, size_t i);

/* A signature found in a text. */
typedef struct sig_hit {
	size_t sig;           /* index in the catalogue */
	unsigned long long at; /* offset of the first match in the normalised text */
	unsigned long line;   /* input line (1-based) where the first match starts */
	unsigned long count;  /* matches in the whole text */
	char excerpt[256];    /* the first match, normalised, cut at 255 bytes */
} sig_hit;

typedef struct sig_scan sig_scan;

sig_scan *sig_scan_new(const sig_catalogue *c);
/* Feeds bytes, in as many calls as wanted. */
void sig_scan_feed(sig_scan *s, const char *data, size_t len);
/* Ends the text; the hits, first match first. */
const sig_hit *sig_scan_finish(sig_scan *s, size_t *n);
/* Input bytes and lines seen. */
unsigned long long sig_scan_bytes(const sig_scan *s);
unsigned long sig_scan_lines(const sig_scan *s);
void sig_scan_free(sig_scan *s);

/* Whether the signature's pattern matches text (normalised like a scan). */
bool sig_matches(const sig_catalogue *c, size_t i, const char *text, size_t len);
#endif
