/* gpuvet: makes a GPU deep-learning machine work, fast, and keeps it healthy. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/reaper.h"
#include "core/util.h"
#include "core/sysroot.h"
#include "core/trace.h"
#include "kb/kb.h"

static void usage(FILE *out)
{
	const char *text = gv_usage(&gpuvet_cli);
	const char *body = strstr(text, "\n\n"); /* the commands go after the usage line */
	fprintf(out, "%.*s\n\ncommands:\n", (int)(body - text), text);
	for (size_t i = 0; i < gv_ncommands; i++)
		fprintf(out, "  %-8s %s\n", gv_commands[i].cli->name, gv_commands[i].cli->summary);
	fputs(body + 1, out);
}

/* Takes the common options (gpuvet_cli's that take a value) out of argv wherever they stand. */
static int extract_common(int *argc, char **argv)
{
	int out = 1;
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0) { /* leave the rest alone */
			while (i < *argc)
				argv[out++] = argv[i++];
			break;
		}
		const gv_option *opt = NULL;
		size_t len = 0;
		for (const gv_option *o = gpuvet_cli.opts; o->name && !opt; o++) {
			len = strlen(o->name);
			if (o->name[0] && o->arg && str_starts(a, "--") && strncmp(a + 2, o->name, len) == 0 &&
			    (a[2 + len] == '\0' || a[2 + len] == '='))
				opt = o;
		}
		if (!opt) {
			argv[out++] = argv[i];
			continue;
		}
		const char *eq = a + 2 + len;
		const char *val = *eq == '=' ? eq + 1 : (i + 1 < *argc ? argv[++i] : NULL);
		if (!val || !*val) {
			gv_error("option --%s needs a value", opt->name);
			return EXIT_USAGE;
		}
		switch (opt->id) {
		case OPT_GLOBAL_ROOT: gopts.root = val; break;
		case OPT_GLOBAL_KB: gopts.kb_dir = val; break;
		case OPT_GLOBAL_COLOR:
			if (!gv_option_check(opt, val))
				return EXIT_USAGE;
			gopts.color = strcmp(val, "auto") == 0 ? -1 : strcmp(val, "always") == 0;
			break;
		}
	}
	argv[out] = NULL;
	*argc = out;
	return 0;
}

char **gv_main_argv;

int main(int argc, char **argv)
{
	/* nothing gpuvet starts outlives it: what its children leave behind is adopted by gpuvet and
	 * killed when it ends (core/reaper.h) */
	gv_trace("main");
	reaper_init();
	/* a file-size limit (ulimit -f) is a write that fails with EFBIG, which each writer reports,
	 * never a command killed before its report: check reads the history (NVLink counters) before
	 * it prints, and SQLite writes even to read (its -shm file). Programs gpuvet starts get the
	 * default back (core/proc_stream.c, gpuvet run). */
	signal(SIGXFSZ, SIG_IGN);
	gv_main_argv = xcalloc((size_t)argc + 1, sizeof(*gv_main_argv));
	memcpy(gv_main_argv, argv, (size_t)argc * sizeof(*argv));
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
	gv_trace("knowledge base loaded");

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
	for (size_t i = 0; i < gv_ncommands; i++)
		if (strcmp(gv_commands[i].cli->name, name) == 0) {
			rc = gv_commands[i].fn(sub_argc, sub_argv);
			fflush(stdout);
			gv_trace("command done");
			if (GV_SANITIZED)
				kb_free(k);
			return rc;
		}
	gv_error("'%s' is not a gpuvet command; see gpuvet --help", name);
	kb_free(k);
	return EXIT_USAGE;
}
