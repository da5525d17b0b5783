/* The environment variables gpuvet reads (core/envvars.h). */
#include "core/envvars.h"

#include <string.h>

#include "core/util.h"

#define DIAGNOSE "check fix explain run"

const gv_envvar gv_envvars[] = {
	{"GPUVET_ROOT", GV_ENV_CONFIG, "gpuvet", "as --root: read every file below this directory instead of /"},
	{"NO_COLOR", GV_ENV_CONFIG, "gpuvet", "set and not empty: no colour unless --color always"},
	{"GPUVET_NVML_LIB", GV_ENV_CONFIG, DIAGNOSE " bench diag watch serve",
	 "the NVML library to load instead of libnvidia-ml.so.1 (an absolute path: a test double, a specific driver)"},
	{"GPUVET_CUDA_LIB", GV_ENV_CONFIG, DIAGNOSE " bench diag",
	 "the libcuda to load instead of libcuda.so.1 (an absolute path)"},
	{"GPUVET_CUBLASLT_LIB", GV_ENV_CONFIG, "bench diag",
	 "the cuBLASLt to load instead of the one the loader or a Python wheel provides"},
	{"GPUVET_NCCL_LIB", GV_ENV_CONFIG, "bench", "the NCCL to load instead of the one the loader or a Python wheel provides"},
	{"GPUVET_BLAS_LIB", GV_ENV_CONFIG, "bench", "the BLAS library of the CPU baseline instead of OpenBLAS"},
	{"GPUVET_DRIVER_TIMEOUT", GV_ENV_CONFIG, DIAGNOSE " watch serve",
	 "seconds a driver call may take before it counts as hung (default 30 for NVML, 60 for cuInit); also the bound "
	 "of the supervised child that loads each vendor library (plus 2 s), of the first contact of watch and serve "
	 "with NVML, and (plus 5 s) the default of run's --explain-timeout"},
	{"GPUVET_DB", GV_ENV_CONFIG, "check bench diag tune watch history report", "the history database, as --db"},
	{"XDG_DATA_HOME", GV_ENV_CONFIG, "check bench diag tune watch history report",
	 "the history database is $XDG_DATA_HOME/gpuvet/history.db unless GPUVET_DB or --db says otherwise"},
	{"HOME", GV_ENV_CONFIG, "check bench diag tune watch history report env",
	 "the home directory: the history database is ~/.local/share/gpuvet/history.db without XDG_DATA_HOME, and env --scan looks through it"},
	{"XDG_CACHE_HOME", GV_ENV_CONFIG, "check",
	 "the per-boot cache of each GPU's fixed limits that check --fast reads is $XDG_CACHE_HOME/gpuvet/nvml-limits (else ~/.cache/gpuvet/nvml-limits)"},
	{"GPUVET_TRACE", GV_ENV_CONFIG, "gpuvet",
	 "a file: append where the command's time goes, one line per phase ('gvt PID EVENT MS'; docs/architecture.md)"},
	{"GPUVET_TRACE_T0", GV_ENV_CONFIG, "gpuvet",
	 "with GPUVET_TRACE: the CLOCK_MONOTONIC seconds the MS count from (the time the caller started gpuvet)"},
	{"GPUVET_NO_HISTORY", GV_ENV_CONFIG, "check bench diag tune", "set and not 0: do not store runs (as --no-history)"},
	{"NODE_NAME", GV_ENV_CONFIG, "serve", "the Hostname label of --dcgm-compat before the host name (Kubernetes's downward API)"},
	{"NCCL_NVLS_ENABLE", GV_ENV_CONFIG, "bench diag",
	 "set to 0 unless already set: the NCCL collectives run without NVLink SHARP multicast"},
	{"TERM", GV_ENV_CONFIG, "gpuvet", "dumb: no colour; watch's terminal view needs a terminal that curses knows"},
	{"TMPDIR", GV_ENV_CONFIG, "tune", "where tune's probe keeps its scratch files (default /tmp)"},
	{"GPUVET_FACT_KEYS_LOG", GV_ENV_TEST, DIAGNOSE,
	 "a file: every fact put or read under a key the fact-key registry lacks, or put with a value of another type "
	 "than the registry's, is appended to it, one line each (the test suite's check; the keys are in docs/facts.md)"},
	{"GPUVET_REPORT_TIME", GV_ENV_TEST, "report", "the page's generation time, fixed (pages that compare byte for byte)"},
	{"GPUVET_WATCH_SECONDS", GV_ENV_TEST, "watch", "the terminal view ends by itself after this many seconds"},
	{"CUDA_VISIBLE_DEVICES", GV_ENV_EXAMINED, DIAGNOSE " diag",
	 "judged by check (env.visible-devices); diag and bench test only the GPUs it leaves visible"},
	{"CUDA_PATH", GV_ENV_EXAMINED, DIAGNOSE " env", "a CUDA install the toolkit model considers"},
	{"LD_LIBRARY_PATH", GV_ENV_EXAMINED, DIAGNOSE " env", "the loader model's search path (lib.* findings); env use rewrites it"},
	{"PATH", GV_ENV_EXAMINED, DIAGNOSE " env tune", "where nvcc and the Python interpreters are found"},
	{"PYTHONPATH", GV_ENV_EXAMINED, DIAGNOSE, "passed to the live Python probe and shown in its facts"},
	{"VIRTUAL_ENV", GV_ENV_EXAMINED, DIAGNOSE " tune", "the active virtual environment: its python is examined first"},
	{"CONDA_PREFIX", GV_ENV_EXAMINED, DIAGNOSE " tune", "the active conda environment: its python is examined next"},
	{"PYENV_VERSION", GV_ENV_EXAMINED, DIAGNOSE, "the pyenv version whose interpreter is examined"},
	{"PYENV_ROOT", GV_ENV_EXAMINED, DIAGNOSE, "where pyenv's interpreters are looked for"},
	{"TORCH_EXTENSIONS_DIR", GV_ENV_EXAMINED, DIAGNOSE, "where the CUDA extensions built by torch are looked for (ext.*)"},
	{"KUBERNETES_SERVICE_HOST", GV_ENV_EXAMINED, DIAGNOSE, "a sign of running inside a Kubernetes pod (container.*)"},
};
const size_t gv_nenvvars = GV_ARRAY_LEN(gv_envvars);

bool gv_envvar_for(const gv_envvar *v, const char *command)
{
	size_t n = strlen(command);
	for (const char *p = v->commands; (p = strstr(p, command)); p += n)
		if ((p == v->commands || p[-1] == ' ') && (p[n] == '\0' || p[n] == ' '))
			return true;
	return false;
}
