/*
 * Writing HTML safely: every string that comes from the machine (paths, process command lines,
 * GPU names, library strings, finding text) goes through html_text(), never
 * straight into the page.
 */
#ifndef GPUVET_REPORT_HTML_H
#define GPUVET_REPORT_HTML_H
#include <stdio.h>

#include "core/util.h"

/* Text content and double-quoted attribute values alike: & < > " ' escaped; control characters
 * other than tab and newline, and bytes that are not valid UTF-8, become U+FFFD, so no byte of
 * the input can open a tag, end an attribute or smuggle an escape sequence. NULL writes nothing. */
void html_text(FILE *out, const char *s);
/* printf, then html_text() of the result. */
void html_textf(FILE *out, const char *fmt, ...) GV_PRINTF(2, 3);
/* A figure with up to 4 significant digits and no trailing zeros ("756.2", "0.5031", "1494"). */
void html_number(FILE *out, double v);
/* The same into buf. */
const char *fmt_number(char *buf, size_t size, double v);
#endif
