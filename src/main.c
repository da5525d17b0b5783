/* gpuvet: makes a GPU deep-learning machine work, fast, and keeps it healthy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/util.h"
#include "core/sysroot.h"
#include "kb/kb.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct command commands[] = {
	{"check", cmd_check, "diagnose every layer of the GPU stack, with the fix for each problem"},
	{"fix", cmd_fix, "the remediation plan: the PyTorch build that fits, environment lines, a Dockerfile"},
	{"env", cmd_env, "the CUDA installs on this machine; `env use X.Y` prints the lines to switch"},
	{"bench", cmd_bench, "micro-benchmarks against the hardware's peaks (GEMM, memory, PCIe, launch, NCCL, CPU)"},
	{"tune", cmd_tune, "PyTorch training steps: which settings (AMP, channels_last, ...) gain what here"},
	{"watch", cmd_watch, "live view of the GPUs and their health"},
	{"serve", cmd_serve, "Prometheus exporter (/metrics) for a fleet"},
	{"explain", cmd_explain, "from an error message or a log to its cause on this machine"},
	{"run", cmd_run, "run a command; on failure, explain its error (gpuvet run -- CMD ARGS)"},
	{"history", cmd_history, "stored check, bench and tune results: list, compare, regressions"},
	{"report", cmd_report, "one self-contained HTML page: diagnosis, benchmarks against peaks, trends, tune"},
};

static void usage(FILE *out)
{
	fprintf(out, "usage: gpuvet [--root DIR] [--kb DIR] [--color WHEN] <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].help);
	fprintf(out, "\n"
		     "With no command, gpuvet runs `check`. `gpuvet <command> --help` describes each one.\n"
		     "\n"
		     "common options (before or after the command)\n"
		     "  --root DIR     read every file below DIR instead of / (also GPUVET_ROOT)\n"
		     "  --kb DIR       use the knowledge-base CSV files in DIR over the built-in ones\n"
		     "  --color WHEN   auto (default: on a terminal), always or never; NO_COLOR is honoured\n"
		     "  --version      print the version\n"
		     "\n"
		     "environment: GPUVET_NVML_LIB, GPUVET_CUDA_LIB load these driver libraries instead of the\n"
		     "system's libnvidia-ml.so.1 and libcuda.so.1.\n"
		     "\nSee gpuvet(1) and docs/ for more.\n");
}

/* Takes the common options out of argv wherever they stand. */
static int extract_common(int *argc, char **argv)
{
	int out = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		const char **slot = NULL;
		const char *name = NULL;
		if (strcmp(a, "--") == 0) { /* leave the rest alone */
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		if (str_starts(a, "--root"))
			slot = &gopts.root, name = "--root";
		else if (str_starts(a, "--kb"))
			slot = &gopts.kb_dir, name = "--kb";
		else if (str_starts(a, "--color"))
			name = "--color";
		if (name && (a[strlen(name)] == '\0' || a[strlen(name)] == '=')) {
			const char *val = a[strlen(name)] == '=' ? a + strlen(name) + 1 : (i + 1 < *argc ? argv[++i] : NULL);
			if (!val || !*val) {
				gv_error("option %s needs a value", name);
				return EXIT_USAGE;
			}
			if (slot) {
				*slot = val;
			} else if (strcmp(val, "auto") == 0) {
				gopts.color = -1;
			} else if (strcmp(val, "always") == 0) {
				gopts.color = 1;
			} else if (strcmp(val, "never") == 0) {
				gopts.color = 0;
			} else {
				gv_error("--color: expected auto, always or never, got '%s'", val);
				return EXIT_USAGE;
			}
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

int main(int argc, char **argv)
{
	int rc = extract_common(&argc, argv);
	if (rc)
		return rc;
	if (!gopts.root) {
		const char *env = getenv("GPUVET_ROOT");
		if (env && *env)
			gopts.root = env;
	}
	if (gopts.root) {
		if (!sysroot_set_checked(gopts.root))
			return EXIT_USAGE;
	}
	char *err = NULL;
	int kb_rc = EXIT_USAGE;
	kb *k = kb_load_checked(gopts.kb_dir, &err, &kb_rc);
	if (!k) {
		gv_error("%s", err);
		free(err);
		return kb_rc;
	}
	kb_set_global(k);

	const char *name = argc > 1 ? argv[1] : "check";
	if (argc > 1 && (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0 || strcmp(name, "help") == 0)) {
		usage(stdout);
		kb_free(k);
		return EXIT_OK;
	}
	if (argc > 1 && strcmp(name, "--version") == 0) {
		printf("gpuvet %s\n", GPUVET_VERSION);
		kb_free(k);
		return EXIT_OK;
	}
	/* options without a command go to check: `gpuvet --json` */
	int sub_argc = argc > 1 ? argc - 1 : 1;
	char **sub_argv = argc > 1 ? argv + 1 : (char *[]){"check", NULL};
	if (argc > 1 && name[0] == '-') {
		name = "check";
		sub_argc = argc;
		sub_argv = argv;
		sub_argv[0] = "check";
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(commands[i].name, name) == 0) {
			rc = commands[i].fn(sub_argc, sub_argv);
			fflush(stdout);
			kb_free(k);
			return rc;
		}
	gv_error("'%s' is not a gpuvet command; see gpuvet --help", name);
	kb_free(k);
	return EXIT_USAGE;
}
