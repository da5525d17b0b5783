/* Commands not built yet answer honestly instead of pretending. Each moves to its own file. */
#include "cmd/cmd.h"

#define NOT_YET(fn, name)                                                                                              \
	int fn(int argc, char **argv)                                                                                  \
	{                                                                                                              \
		(void)argc;                                                                                            \
		(void)argv;                                                                                            \
		gv_error("'%s' is not implemented in this build yet", name);                                          \
		return EXIT_INTERNAL;                                                                                  \
	}

NOT_YET(cmd_fix, "fix")
NOT_YET(cmd_bench, "bench")
NOT_YET(cmd_tune, "tune")
