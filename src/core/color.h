/* Colour for terminal output (ANSI SGR): empty strings when colour is off, so callers format
 * unconditionally. Used by every text renderer and command. */
#ifndef GPUVET_CORE_COLOR_H
#define GPUVET_CORE_COLOR_H
#include <stdbool.h>
#include <stdio.h>

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
