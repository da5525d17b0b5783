/* The probing options of the commands that diagnose (check, fix, explain, run): one table. */
#include "cmd/cmd.h"
#include "probes/probes.h"

int probe_option(int c, const char *arg, probe_opts *po, const char **facts_file)
{
	long v;
	switch (c) {
	case OPT_PROBE_FAST: po->fast = true; return 1;
	case OPT_PROBE_NO_PYTHON: po->no_python = true; return 1;
	case OPT_PROBE_PYTHON: po->python = arg; return 1;
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
