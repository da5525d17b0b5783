/*
 * What every command and every long-running module shares with the user: exit codes, the
 * global options, and messages on stderr ("gpuvet: <what failed>", lower case, no full stop,
 * through the text sanitizer since they name paths and values of the machine). Kept in core so
 * that serve, bench and the rest report errors without reaching up into the command layer.
 */
#ifndef GPUVET_CORE_CLI_H
#define GPUVET_CORE_CLI_H
#include <stdbool.h>

/* Exit codes (DESIGN.md): */
enum {
	EXIT_OK = 0,       /* no failure */
	EXIT_FINDING = 1,  /* a fail finding (or --strict and a warn); a regression */
	EXIT_USAGE = 2,    /* bad command line */
	EXIT_INTERNAL = 3, /* internal error */
	EXIT_SKIP = 77,    /* tests only: nothing to test here */
};

typedef struct global_opts {
	const char *root; /* --root / GPUVET_ROOT */
	const char *kb_dir;
	int color; /* -1 auto, 0 never, 1 always */
} global_opts;

extern global_opts gopts;

/* Error and usage helpers: "gpuvet: <what failed>" on stderr, lower case, no full stop. */
void gv_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void gv_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int usage_error(const char *usage, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The cases a command's getopt_long(":h", ...) switch ends with, for any c it does not handle:
 * -h/--help prints usage to stdout (EXIT_OK); ':' (an option without its value) and any other c
 * (an unknown option) are usage errors naming argv[optind - 1]. */
int usage_getopt_rest(int c, const char *usage, char *const argv[]);
/* Parses a non-negative integer/number option; prints an error naming the option on failure. */
bool parse_int_opt(const char *opt, const char *s, long min, long max, long *out);
bool parse_double_opt(const char *opt, const char *s, double min, double max, double *out);
#endif
