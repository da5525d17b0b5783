/* Commands: one file each (cmd/<name>.c), a table in main.c, usage text next to the options. */
#ifndef GPUVET_CMD_H
#define GPUVET_CMD_H
#include <stdbool.h>
#include <stddef.h>

#include "core/cli.h"

/* argv[0] is the command name; getopt-style parsing from argv[1]. */
int cmd_check(int argc, char **argv);
int cmd_fix(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tune(int argc, char **argv);
/* `gpuvet bench --torch ...`: tune under bench's name (argv[0] "bench"; --torch is accepted and ignored). */
int cmd_bench_torch(int argc, char **argv);
int cmd_watch(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_history(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_run(int argc, char **argv);

struct facts;
/* Reads a --facts FILE (a check --json document or a bare facts object); prints the error and
 * returns NULL when it cannot. */
struct facts *facts_load_file(const char *path);
/* The whole of a file ("-": standard input), at most max bytes; prints the error naming what
 * ("facts file") and the path and returns NULL when it cannot. malloc'd, NUL-terminated. */
char *read_input_file(const char *what, const char *path, size_t max, size_t *len);
/* The probing options of check, fix, explain and run, one table: PROBE_LONGOPTS in a command's
 * struct option array (FACTS_LONGOPT where --facts FILE is accepted), probe_option() in its
 * getopt switch. */
enum { OPT_PROBE_FAST = 0x1000, OPT_PROBE_NO_PYTHON, OPT_PROBE_PYTHON, OPT_PROBE_PYTHON_TIMEOUT, OPT_PROBE_FACTS };
#define PROBE_LONGOPTS                                                                                       \
	{"fast", no_argument, NULL, OPT_PROBE_FAST}, {"no-python", no_argument, NULL, OPT_PROBE_NO_PYTHON},  \
		{"python", required_argument, NULL, OPT_PROBE_PYTHON},                                        \
		{"python-timeout", required_argument, NULL, OPT_PROBE_PYTHON_TIMEOUT}
#define FACTS_LONGOPT {"facts", required_argument, NULL, OPT_PROBE_FACTS}
struct probe_opts;
/* Takes getopt's c when it is a probing option: 1 taken, 0 not one of them (facts_file NULL:
 * --facts is not), -1 a usage error (printed). */
int probe_option(int c, const char *arg, struct probe_opts *po, const char **facts_file);
#endif
