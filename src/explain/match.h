/*
 * The error-signature matcher behind `gpuvet explain` and `gpuvet run`: finds every signature of
 * the catalogue in a text of any size, pasted or piped, whatever its framing.
 *
 * The catalogue is declared in three tables of the knowledge base:
 *   errors.csv       the hand-written signatures, each with its pattern and candidate causes;
 *   error_codes.csv  the CUDA runtime/driver and NVML return codes: number, enum names, message.
 *                    Every code is recognised in all the forms programs print it in (the message,
 *                    cudaErrorX, CUDA_ERROR_X, code=N(...), "CUDA error N", "cuInit returned N",
 *                    NVML_ERROR_X, NVMLError_X, "Failed to initialize NVML: message"); a code is
 *                    its own signature ("cuda.misaligned-address") unless a row of errors.csv
 *                    explains it (its `signature` column);
 *   xid.csv          the Xid codes of the NVIDIA driver: each is its own signature ("xid.48"),
 *                    recognised in kernel-log lines and in prose ("Xid 79").
 *
 * The text is normalised first, one line at a time: ANSI escape sequences are dropped, control
 * bytes and NULs become spaces, CR ends a line, leading blanks and bracketed log prefixes
 * ("[rank0]:", "[2024-11-14 05:49:02,242]", "[1,3]<stderr>:", "3: " of srun --label, "> ") are
 * taken off (the rank they name is kept), and a line repeated in a row by the same rank is kept
 * once. The lines are then joined without a separator, so a message that a terminal wrapped in
 * the middle of a word reads whole; a space in a pattern matches one blank or none (blanks are
 * collapsed), so a message wrapped between two words matches too.
 *
 * Matching is linear in the input whatever the text: every pattern is bounded (no *, + or {m,}:
 * a match is at most MATCH_MAX bytes) and has literal words one of which every match contains;
 * one Aho-Corasick pass over each window finds those words, and a pattern's regular expression
 * runs only on the bytes around them (REG_STARTEND), case folded beforehand. Where two
 * signatures' matches overlap and one contains the other, the longer (the more specific) wins.
 *
 * Bounds: the text is scanned in windows of 256 KiB that overlap by 4 KiB; a line is cut at
 * 64 KiB; at most 16384 matches are kept per window. The buffers do not grow with the input
 * (glibc's regular expressions cache the states they meet: the patterns bound them).
 */
#ifndef GPUVET_EXPLAIN_MATCH_H
#define GPUVET_EXPLAIN_MATCH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "kb/csv.h"
#include "kb/kb.h"

enum { SIG_MATCH_MAX = 2048, SIG_RANKS = 1024 };

/* One signature: a row of errors.csv, or one generated from error_codes.csv or xid.csv. */
typedef struct signature {
	const char *id, *library, *versions, *pattern, *title, *advice, *example, *source;
	char **causes; /* finding ids, NULL terminated */
	size_t ncauses;
	const char *table; /* "errors", "error_codes" or "xid": where it is declared */
	long code;         /* the error code or Xid of a generated signature; -1 for a row of errors.csv */
	const char *api;   /* "cuda", "nvml", "xid" for generated ones; "" otherwise */
	const char *codes; /* the codes a row of errors.csv explains ("cuda 700"), or "" */
} signature;

typedef struct sig_catalogue sig_catalogue;

/* Builds the catalogue from the knowledge base's errors, error_codes and xid tables; NULL and *err
 * (allocated) when a row is malformed (an empty id, pattern or source, a pattern that does not
 * compile, is unbounded or has no literal word, a duplicate id, a code row naming no signature). */
sig_catalogue *sig_catalogue_new(const kb *k, char **err);
/* The same from the tables themselves (codes and xid may be NULL). */
sig_catalogue *sig_catalogue_from(const csv_table *errors, const csv_table *codes, const csv_table *xid, char **err);
void sig_catalogue_free(sig_catalogue *c);
size_t sig_count(const sig_catalogue *c);
const signature *sig_at(const sig_catalogue *c, size_t i);
const signature *sig_find(const sig_catalogue *c, const char *id);
/* The literal words one of which every match of signature i's own pattern contains (lower case),
 * joined by '|'; "" for a generated signature (its forms have theirs). */
const char *sig_anchor(const sig_catalogue *c, size_t i);
/* Patterns compiled (rows, code messages and the generic forms) and literal words searched. */
size_t sig_pattern_count(const sig_catalogue *c);
size_t sig_anchor_count(const sig_catalogue *c);

/* A signature found in a text. */
typedef struct sig_hit {
	size_t sig;            /* index in the catalogue */
	unsigned long long at; /* offset of the first match in the normalised text */
	unsigned long line;    /* input line (1-based) where the first match starts */
	unsigned long count;   /* lines it was found on (two matches on one line count once) */
	unsigned long nranks;  /* distinct ranks that printed it (from their log prefixes); 0: none named */
	unsigned long last_line;
	unsigned char ranks[SIG_RANKS / 8]; /* which ranks, 0..SIG_RANKS-1 */
	char excerpt[256];     /* the first match, normalised, cut at 255 bytes */
} sig_hit;

/* Adds another scan's hit of the same signature (gpuvet run's stdout and stderr). */
void sig_hit_merge(sig_hit *into, const sig_hit *from);
/* "0-7", "0,3,5-6" (cut to fit n); "" when no rank was named. */
char *sig_hit_ranks(const sig_hit *h, char *buf, size_t n);

typedef struct sig_scan sig_scan;

sig_scan *sig_scan_new(const sig_catalogue *c);
/* Feeds bytes, in as many calls as wanted. */
void sig_scan_feed(sig_scan *s, const char *data, size_t len);
/* bytes of the text (lines of them newlines) were not fed here (gpuvet run's scanner fell
 * behind its command): what came before is searched to its end, no match spans the gap, and the
 * line numbers after it count its lines. */
void sig_scan_gap(sig_scan *s, unsigned long long bytes, unsigned long lines);
/* Ends the text; the hits, first match first. */
const sig_hit *sig_scan_finish(sig_scan *s, size_t *n);
/* Input bytes and lines seen (the lines of gaps included), and the bytes of the gaps. */
unsigned long long sig_scan_bytes(const sig_scan *s);
unsigned long long sig_scan_skipped(const sig_scan *s);
unsigned long sig_scan_lines(const sig_scan *s);
/* Work done: bytes the regular expressions were run over (each region counted once per pattern).
 * Bounded by the patterns near each literal word found, never by the window: the tests hold it to
 * a multiple of the input. */
unsigned long long sig_scan_work(const sig_scan *s);
void sig_scan_free(sig_scan *s);

/* Whether signature i is recognised in text (normalised like a scan). */
bool sig_matches(const sig_catalogue *c, size_t i, const char *text, size_t len);
#endif
