/*
 * The one text sanitizer: every string that comes from the machine (a file, a directory name, a
 * library's answer, a process's command line) passes through it before a text renderer prints
 * it, so none can move the cursor, clear the screen, set the window title or forge a line.
 *
 * Printable ASCII and valid UTF-8 stay as they are; the rest is written as C escapes: \n \t \r
 * \e, \xHH for other control bytes, DEL and bytes that are not UTF-8, \uHHHH for the C1 controls,
 * the line and paragraph separators and the bidirectional-text controls (which reorder what a
 * terminal shows). JSON output escapes the same characters as JSON (json_text_safe).
 */
#ifndef GPUVET_CORE_TEXT_H
#define GPUVET_CORE_TEXT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/util.h"

/* utf8_decode: core/util.h */
/* A code point a terminal must not receive raw: C0, DEL, C1, U+2028/9, bidi controls. */
bool text_unsafe_cp(uint32_t cp);

/* Appends s to sb with the escapes above. */
void sb_add_text(strbuf *sb, const char *s);
/* The escaped text in buf (truncated with "..." past size); returns buf. */
const char *text_safe(char *buf, size_t size, const char *s);
/* text_safe into a buffer of the enclosing block, for printf arguments: printf("%s", TEXT(path)). */
#define TEXT(s) text_safe((char[4096]){0}, 4096, (s))
/* The escaped text, malloc'd. */
char *text_safe_dup(const char *s);
/* True when s would print unchanged. */
bool text_is_safe(const char *s);

/* A printed JSON document (cJSON_Print) made safe: bytes that are not UTF-8 become U+FFFD, and
 * DEL, the C1 controls, U+2028/9 and the bidi controls become \u escapes (cJSON escapes C0 only).
 * Outside strings JSON is ASCII, so this rewrites string contents only. Returns malloc'd text. */
char *json_text_safe(const char *json);
/* Prints a cJSON document made safe, followed by a newline, and deletes it. */
struct cJSON;
void json_print_doc(FILE *out, struct cJSON *doc);
#endif
