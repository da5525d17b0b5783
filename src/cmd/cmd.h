/* Commands: one file each (cmd/<name>.c), a table in main.c, usage text next to the options. */
#ifndef GPUVET_CMD_H
#define GPUVET_CMD_H
#include <stdbool.h>
#include <stddef.h>

#include "core/cli.h"
#include "core/options.h"

/* The command table (cmd/commands.c): gpuvet's own options and every command, with its option
 * table (core/options.h) and its function; main.c dispatches through it, the generator
 * (tools/gen_cli.c) writes the man page and the completions from it. */
typedef struct gv_command {
	const gv_command_cli *cli;
	int (*fn)(int argc, char **argv);
} gv_command;
extern const gv_command gv_commands[];
extern const size_t gv_ncommands;
/* gpuvet's own options (--root, --kb, --color, --version, --help), before or after the command */
enum { OPT_GLOBAL_ROOT = 0x2000, OPT_GLOBAL_KB, OPT_GLOBAL_COLOR, OPT_GLOBAL_VERSION };
extern const gv_command_cli gpuvet_cli;
extern const gv_command_cli check_cli, fix_cli, env_cli, bench_cli, diag_cli, tune_cli, watch_cli, serve_cli, explain_cli,
	run_cli, history_cli, report_cli;

/* gpuvet's command line as given, before main took the common options out: what a command that
 * runs another program passes on whole (cmd/serve_exec.c). Set by main.c. */
extern char **gv_main_argv;

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
int cmd_diag(int argc, char **argv);

struct facts;
/* Reads a --facts FILE (a check --json document or a bare facts object); prints the error and
 * returns NULL when it cannot. */
struct facts *facts_load_file(const char *path);
/* The whole of a file ("-": standard input), at most max bytes; prints the error naming what
 * ("facts file") and the path and returns NULL when it cannot. malloc'd, NUL-terminated. */
char *read_input_file(const char *what, const char *path, size_t max, size_t *len);
/* The probing options of check, fix, explain and run, one set of rows: PROBE_OPTIONS in a
 * command's option table (FACTS_OPTION where --facts FILE is accepted), probe_option() in its
 * getopt switch. */
enum {
	OPT_PROBE_FAST = 0x1000,
	OPT_PROBE_NO_PYTHON,
	OPT_PROBE_PYTHON,
	OPT_PROBE_PYTHON_TIMEOUT,
	OPT_PROBE_FACTS,
	OPT_PROBE_RUN_TREE_PYTHON,
};
#define PROBE_OPTIONS                                                                                               \
	GV_OPT_FLAG("fast", OPT_PROBE_FAST, "NVML and files only: no cuInit, no Python, no extension scan; the GPUs' fixed limits from this boot's cache (~/.cache/gpuvet/nvml-limits) once a check has asked; utilization, power draw and the enforced power limit only where a verdict needs them (the clocks power-capped, the PCIe link below its maximum), the current clocks only where their reasons show a slowdown or the power cap, no fan speed (tens of ms)"),             \
		GV_OPT_FLAG("no-python", OPT_PROBE_NO_PYTHON, "skip the live Python/PyTorch probe"),                 \
		GV_OPT_ARG("python", OPT_PROBE_PYTHON, "PATH", GV_VAL_FILE,                                          \
			   "the interpreter to examine (default: the active venv/conda, then PATH)"),                \
		GV_OPT_ARG("python-timeout", OPT_PROBE_PYTHON_TIMEOUT, "S", GV_VAL_NUMBER,                           \
			   "seconds the Python probe may take (default 20)"),                                        \
		GV_OPT_FLAG("run-tree-python", OPT_PROBE_RUN_TREE_PYTHON,                                            \
			    "with --root: run the tree's interpreter on this host (a warning); without it a --root " \
			    "tree is only read, nothing of it is run")
#define FACTS_OPTION(help) GV_OPT_ARG("facts", OPT_PROBE_FACTS, "FILE", GV_VAL_FILE, help)
/* The history options of the commands that store their runs */
#define NO_HISTORY_OPTION(help) GV_OPT_FLAG("no-history", OPT_HIST_NO, help)
#define DB_OPTION GV_OPT_ARG("db", OPT_HIST_DB, "PATH", GV_VAL_FILE, "the history database (default $GPUVET_DB, else $XDG_DATA_HOME/gpuvet/history.db, else ~/.local/share/gpuvet/history.db)")
enum { OPT_HIST_NO = 0x1100, OPT_HIST_DB };
struct probe_opts;
/* Takes getopt's c when it is a probing option: 1 taken, 0 not one of them (facts_file NULL:
 * --facts is not), -1 a usage error (printed). */
int probe_option(int c, const char *arg, struct probe_opts *po, const char **facts_file);
#endif
