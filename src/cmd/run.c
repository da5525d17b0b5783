/* gpuvet run: runs a command unchanged; on failure, explains its error. (stub, next commit) */
#include "cmd/cmd.h"
int cmd_run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return EXIT_INTERNAL;
}
