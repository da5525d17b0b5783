/*
 * The error-signature matcher beside a copy (gpuvet run): the copy path hands each chunk of the
 * command's output to tapscan_feed, which only copies it into a tap (core/tap.h) and never waits;
 * a thread of its own feeds the tap's bytes to a sig_scan. When the command writes faster than
 * the matcher reads and the tap is full, the bytes that do not fit are not scanned: counted, and
 * no match spans the hole (sig_scan_gap). The output itself is never held back.
 */
#ifndef GPUVET_EXPLAIN_TAPSCAN_H
#define GPUVET_EXPLAIN_TAPSCAN_H
#include <stddef.h>

#include "explain/match.h"

typedef struct tapscan tapscan;

/* A scan of the catalogue c behind a tap of tap_bytes. Never NULL: without a thread it scans
 * inline (slower, nothing lost). */
tapscan *tapscan_start(const sig_catalogue *c, size_t tap_bytes);
/* The copy path: never waits for the matcher. */
void tapscan_feed(tapscan *t, const char *p, size_t n);
/* The end of the output: waits at most seconds for the thread to scan what the tap still holds
 * (what is left then goes unscanned) and returns the scan (owned by t; sig_scan_finish it). */
sig_scan *tapscan_finish(tapscan *t, double seconds);
/* Bytes fed, and of them the ones not scanned (complete after tapscan_finish). */
unsigned long long tapscan_fed(const tapscan *t);
unsigned long long tapscan_unscanned(const tapscan *t);
void tapscan_free(tapscan *t);
#endif
