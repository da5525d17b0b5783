/*
 * A gpuvet.history/1 document (history export --format json, history list --json) read one run
 * at a time, so that an export of any size is read in the memory of its largest run: the members
 * of the top-level object are scanned (strings, nesting) without being built, and each element of
 * "runs" is parsed on its own and handed over.
 *
 *	runstream *rs = runstream_open(fp, "all.json");
 *	if (runstream_is_history(rs)) {
 *		char *err = NULL;
 *		cJSON *run;
 *		while ((run = runstream_next(rs, &err)))
 *			use(run);                                  // the caller owns it
 *		if (err) ...                                   // malformed, or a read error
 *	} else {
 *		char *text = runstream_slurp(rs, max, &len, &err); // any other document, whole
 *	}
 *	runstream_close(rs);                                   // does not close fp
 *
 * A history document is told by its first member, as gpuvet writes every one: "schema":
 * "gpuvet.history/1" (any layout: the one-run-a-line export, the indented one of older gpuvets).
 * One written otherwise (its schema last) is read whole, as any other document.
 */
#ifndef GPUVET_REPORT_RUNSTREAM_H
#define GPUVET_REPORT_RUNSTREAM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct cJSON;
typedef struct runstream runstream;

/* A run larger than this (its JSON text) is refused: a run is a few KiB, a check's findings
 * included. */
#define RUNSTREAM_RUN_MAX (64u << 20)

/* Reads the first bytes of in to tell what it holds; name is for messages. Never NULL. */
runstream *runstream_open(FILE *in, const char *name);
bool runstream_is_history(const runstream *rs);
/* The next run object, or NULL at the end (*err NULL) or on an error (*err malloc'd: the name,
 * what is wrong and the byte where). */
struct cJSON *runstream_next(runstream *rs, char **err);
/* The whole document (what was read to tell and the rest), NUL-terminated, at most max bytes;
 * NULL with *err when larger or unreadable. */
char *runstream_slurp(runstream *rs, size_t max, size_t *len, char **err);
void runstream_close(runstream *rs);
#endif
