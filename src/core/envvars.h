/*
 * The environment variables gpuvet reads, declared once: name, the commands it matters to and
 * what it does. --help lists a command's variables from it (core/options.c), the generator
 * (tools/gen_cli.c) writes the man page's ENVIRONMENT from it, and the `cli/environment` test
 * fails on a variable that src/ reads (getenv, a library's override) and the table lacks, or
 * the reverse. The variables `gpuvet check` examines (CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH,
 * NCCL_*, ...) are part of the diagnosis, not of gpuvet's configuration: docs/env.md and the
 * findings say what each does; they are kind GV_ENV_EXAMINED here.
 */
#ifndef GPUVET_CORE_ENVVARS_H
#define GPUVET_CORE_ENVVARS_H
#include <stdbool.h>
#include <stddef.h>

typedef enum {
	GV_ENV_CONFIG,   /* configures gpuvet */
	GV_ENV_TEST,     /* for the test suite: deterministic output, bounded runs */
	GV_ENV_EXAMINED, /* read as a fact of the machine (check's diagnosis, the loader model) */
} gv_env_kind;

typedef struct gv_envvar {
	const char *name;
	gv_env_kind kind;
	const char *commands; /* space-separated command names, "gpuvet" for every command */
	const char *help;
} gv_envvar;

extern const gv_envvar gv_envvars[];
extern const size_t gv_nenvvars;

/* Whether the variable matters to the command (its name in v->commands). */
bool gv_envvar_for(const gv_envvar *v, const char *command);
#endif
