/* Renderers turn facts and findings into text, JSON or JUnit; they compute nothing. */
#ifndef GPUVET_RENDER_H
#define GPUVET_RENDER_H
#include <stdbool.h>
#include <stdio.h>

#include "core/facts.h"
#include "core/findings.h"

typedef struct render_opts {
	bool color;
	bool verbose; /* list every fact */
	bool strict;  /* warn counts as failure in the verdict */
	double seconds;
} render_opts;

void render_check_text(FILE *out, const facts *f, const findings *fs, const render_opts *o);
/* The gpuvet.check/1 document; caller frees with cJSON_Delete. */
struct cJSON *render_check_json(const facts *f, const findings *fs, const render_opts *o);
/* requires: the --require expressions (one test case each), may be NULL. */
void render_check_junit(FILE *out, const findings *fs, const strlist *requires, const render_opts *o);

/* Colour helpers shared by text renderers: empty strings when colour is off. */
const char *col_fail(bool on);
const char *col_warn(bool on);
const char *col_ok(bool on);
const char *col_dim(bool on);
const char *col_bold(bool on);
const char *col_reset(bool on);
/* Should output to this stream use colour: a terminal, NO_COLOR unset, TERM not dumb. */
bool color_wanted(FILE *stream, int force /* -1 auto, 0 never, 1 always */);
#endif
