/* The probing options of the commands that diagnose (check, fix, explain, run): one table. */
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/cli.h"
#include "core/sysroot.h"
#include "probes/probes.h"

int probe_option(int c, const char *arg, probe_opts *po, const char **facts_file)
{
	long v;
	switch (c) {
	case OPT_PROBE_FAST: po->fast = true; return 1;
	case OPT_PROBE_NO_PYTHON: po->no_python = true; return 1;
	case OPT_PROBE_PYTHON: po->python = arg; return 1;
	case OPT_PROBE_RUN_TREE_PYTHON:
		po->run_tree_python = true;
		/* the tree's code runs here with this user's rights: say so every time */
		if (sysroot_active())
			gv_warning("--run-tree-python: the Python interpreter of %s runs on this host as uid %u",
				   sysroot_get(), (unsigned)geteuid());
		return 1;
	case OPT_PROBE_PYTHON_TIMEOUT:
		if (!parse_int_opt("--python-timeout", arg, 1, 3600, &v))
			return -1;
		po->python_timeout_ms = (int)v * 1000;
		return 1;
	case OPT_PROBE_FACTS:
		if (!facts_file)
			return 0;
		*facts_file = arg;
		return 1;
	default: return 0;
	}
}
