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
struct probe_opts;
struct findings;
/* The pipeline of check, explain and run: the probes (none when po is NULL: facts loaded with
 * --facts), then the rules, into fs (initialised by the caller), sorted. */
void diagnose(struct facts *f, const struct probe_opts *po, struct findings *fs);
#endif
