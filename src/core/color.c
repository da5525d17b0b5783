#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/color.h"

const char *col_fail(bool on) { return on ? "\033[1;31m" : ""; }
const char *col_warn(bool on) { return on ? "\033[1;33m" : ""; }
const char *col_ok(bool on) { return on ? "\033[1;32m" : ""; }
const char *col_dim(bool on) { return on ? "\033[2m" : ""; }
const char *col_bold(bool on) { return on ? "\033[1m" : ""; }
const char *col_reset(bool on) { return on ? "\033[0m" : ""; }

bool color_wanted(FILE *stream, int force)
{
	if (force >= 0)
		return force == 1;
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return false;
	const char *term = getenv("TERM");
	if (term && strcmp(term, "dumb") == 0)
		return false;
	return isatty(fileno(stream));
}
