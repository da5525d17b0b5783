/* The command table: gpuvet's own options and every command with its option table and function.
 * main.c dispatches through it; tools/gen_cli.c writes the man page and the completions from it. */
#include "cmd/cmd.h"
#include "core/util.h"

static const char *const color_words[] = {"auto", "always", "never", NULL};

static const gv_option gpuvet_options[] = {
	GV_OPT_GROUP("common options (before or after the command)"),
	GV_OPT_ARG("root", OPT_GLOBAL_ROOT, "DIR", GV_VAL_DIR,
		   "read every file below DIR instead of / (also GPUVET_ROOT): examine a machine image or a test tree"),
	GV_OPT_ARG("kb", OPT_GLOBAL_KB, "DIR", GV_VAL_DIR,
		   "use the knowledge-base CSV files in DIR over the built-in ones; a file that does not parse, has no "
		   "rows, lacks a column of the table it replaces or is over 64 MiB is a usage error (exit 2)"),
	GV_OPT_WORDS("color", OPT_GLOBAL_COLOR, "WHEN", GV_VAL_WORD, color_words,
		     "{values} (default auto: on a terminal); NO_COLOR is honoured"),
	GV_OPT_FLAG("version", OPT_GLOBAL_VERSION, "print the version"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli gpuvet_cli = {
	.name = "gpuvet",
	.summary = "makes a GPU deep-learning machine work, fast, and keeps it healthy",
	.head = "usage: gpuvet [--root DIR] [--kb DIR] [--color WHEN] <command> [options]\n"
		"\n"
		"With no command, gpuvet runs `check`. `gpuvet <command> --help` describes each one.\n"
		"\n",
	.opts = gpuvet_options,
	.tail = "\nSee gpuvet(1) and docs/ for more.\n",
};

const gv_command gv_commands[] = {
	{&check_cli, cmd_check},     {&fix_cli, cmd_fix},         {&env_cli, cmd_env},       {&bench_cli, cmd_bench},
	{&diag_cli, cmd_diag},       {&tune_cli, cmd_tune},       {&watch_cli, cmd_watch},   {&serve_cli, cmd_serve},
	{&explain_cli, cmd_explain}, {&run_cli, cmd_run},         {&history_cli, cmd_history}, {&report_cli, cmd_report},
};
const size_t gv_ncommands = GV_ARRAY_LEN(gv_commands);
