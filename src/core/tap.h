/*
 * A tap: a bounded ring of bytes between one writer that must never wait (gpuvet run's copy of
 * its command's output) and one reader that may be slow (the error-signature matcher, on a thread
 * of its own). A write keeps what fits and drops the rest, counting it; the reader is told where
 * bytes were dropped and how many (a gap), so that it never takes the bytes on either side of a
 * hole for one text.
 *
 * One writer thread and one reader thread, lock-free (C11 atomics). The bytes are kept as records
 * (a header, then the bytes of one write or the part of it that fitted); the reader sleeps on an
 * eventfd that the writer signals only while the reader sleeps, so a write is a copy into the
 * ring and, at most once per sleep of the reader, one non-blocking write(2).
 */
#ifndef GPUVET_TAP_H
#define GPUVET_TAP_H
#include <stdbool.h>
#include <stddef.h>

typedef struct gv_tap gv_tap;

/* Bytes dropped just before the bytes a read returned (or, at the end, after the last ones). */
typedef struct gv_tap_gap {
	unsigned long long bytes;
	unsigned long long lines; /* the '\n' among them: line numbers after a gap stay the text's */
} gv_tap_gap;

typedef enum {
	GV_TAP_DATA,  /* bytes were returned */
	GV_TAP_EMPTY, /* none within the time given */
	GV_TAP_END,   /* closed and every record read */
} gv_tap_status;

/* A tap of capacity bytes (headers included; at least 64). */
gv_tap *gv_tap_new(size_t capacity);
/* After the writer closed it and the reader is done with it. */
void gv_tap_free(gv_tap *t);

/* Writer: copies what fits of p[0..n), drops the rest; never waits. Returns the bytes kept. */
size_t gv_tap_write(gv_tap *t, const void *p, size_t n);
/* Writer: no more bytes. The reader gets what is left, then GV_TAP_END. */
void gv_tap_close(gv_tap *t);

/* Reader: at most cap bytes of the next record into buf (*n), with the gap before them (zero when
 * none; a record longer than cap comes in several reads, its gap with the first). Waits at most
 * timeout_ms for a record (-1: until one comes or the tap is closed). GV_TAP_END fills *gap with
 * the bytes dropped after the last record. */
gv_tap_status gv_tap_read(gv_tap *t, void *buf, size_t cap, size_t *n, gv_tap_gap *gap, int timeout_ms);

/* Any thread: bytes given to gv_tap_write so far, and of them the ones dropped. */
unsigned long long gv_tap_offered(const gv_tap *t);
unsigned long long gv_tap_dropped(const gv_tap *t);
#endif
