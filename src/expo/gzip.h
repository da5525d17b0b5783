/*
 * gzip for the exporter's answers (Content-Encoding: gzip when the scraper's Accept-Encoding
 * allows it: a 8-GPU exposition of 139 KB goes over the wire in about a tenth of that). The body,
 * the same for every scrape until the next sample, is compressed once; each answer compresses only
 * its own small head (the sampler's status, the connection counts) and joins the two into one
 * gzip member: the head's deflate blocks end byte-aligned and not final (Z_SYNC_FLUSH), the body's
 * follow as they are (its back-references never reach before its own start), and the trailer
 * combines the two CRCs (crc32_combine). One member, so every gzip reader takes it.
 */
#ifndef GPUVET_EXPO_GZIP_H
#define GPUVET_EXPO_GZIP_H
#include <stdbool.h>
#include <stddef.h>

/* A buffer as raw deflate blocks ending in the final one, with what the gzip trailer needs. */
typedef struct expo_deflated {
	unsigned char *data;
	size_t len;
	unsigned long crc;   /* CRC-32 of the uncompressed bytes */
	size_t in_len;       /* their count */
} expo_deflated;

/* Compresses in (len bytes) into *out; false (out empty) when zlib fails. */
bool expo_deflate(const char *in, size_t len, expo_deflated *out);
void expo_deflated_free(expo_deflated *d);

/* A gzip member of head then tail, in three parts to send one after the other: *pre (malloc'd:
 * the gzip header and head's blocks, *pre_len bytes), tail->data unchanged, and trailer (8
 * bytes, filled in). tail NULL: head alone, its blocks final (*pre then the trailer). false when
 * zlib fails. */
bool expo_gzip_join(const char *head, size_t head_len, const expo_deflated *tail, unsigned char **pre, size_t *pre_len,
		    unsigned char trailer[8]);

/* Whether a request's Accept-Encoding lets the answer be gzip: "gzip" (or "x-gzip") with a q
 * above 0, or no gzip but "*" with a q above 0. NULL or anything else: no. */
bool expo_gzip_accepted(const char *accept_encoding);
#endif
