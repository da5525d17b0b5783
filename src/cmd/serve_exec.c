/* `gpuvet serve` in gpuvet: runs gpuvet-serve, the program with the exporter (cmd/serve_run.c),
 * in this process (exec: the same pid for systemd, Kubernetes and a shell's `kill`), with the
 * command line as given. The exporter is a program of its own so that libmicrohttpd and the TLS
 * libraries it links (gnutls, nettle, p11-kit ...: ten shared libraries) are loaded by it alone,
 * not at every start of every other command (docs/benchmarks.md). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/helper.h"
#include "core/trace.h"

int cmd_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv; /* gv_main_argv: with the common options main took out (--root, --kb, --color) */
	char path[4096], tried[4096];
	if (!gv_helper_find("gpuvet-serve", path, sizeof(path), tried, sizeof(tried))) {
		gv_error("cannot find gpuvet-serve, the program that runs gpuvet serve (looked for %s); reinstall "
			 "gpuvet, or put gpuvet-serve beside the gpuvet binary",
			 tried);
		return EXIT_INTERNAL;
	}
	gv_trace("exec gpuvet-serve");
	fflush(stdout);
	fflush(stderr);
	execv(path, gv_main_argv);
	gv_error("cannot run %s: %s", path, strerror(errno));
	return EXIT_INTERNAL;
}
