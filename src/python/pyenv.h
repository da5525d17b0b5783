/*
 * Python interpreters on the examined machine (below --root), found without starting any:
 * --python, the active virtualenv (VIRTUAL_ENV) and conda environment (CONDA_PREFIX), python3 and
 * python on PATH, conda installations and their environments, virtualenvs in the usual places.
 * For each: its environment prefix, kind, Python version (from pyvenv.cfg or the lib/pythonX.Y
 * layout) and the site-packages directories in sys.path order.
 */
#ifndef GPUVET_PYENV_H
#define GPUVET_PYENV_H
#include <stdbool.h>
#include <stddef.h>

#include "core/util.h"

/* The environment variables discovery depends on, as the examined process sees them. Paths may
 * be given inside the --root tree (tests); they are mapped back to the examined machine. */
typedef struct py_env {
	const char *path, *virtual_env, *conda_prefix, *home, *pythonpath, *pyenv_root, *pyenv_version;
	const char *explicit_python; /* --python */
} py_env;
/* Fills e from getenv(). */
void py_env_from_process(py_env *e, const char *explicit_python);

typedef struct py_interp {
	char *path;      /* the interpreter as found (examined-machine path): /home/u/venv/bin/python */
	char *prefix;    /* its environment: /home/u/venv, /opt/conda/envs/x, /usr */
	char *base_prefix; /* venv: the prefix of the Python it was made from; else = prefix */
	const char *kind;   /* "venv", "conda", "pyenv", "system" */
	const char *origin; /* how it was found: "--python", "VIRTUAL_ENV", "CONDA_PREFIX", "PATH", "conda", "virtualenv", "pyenv" */
	char version[16];   /* "3.11", "" when unknown */
	bool exists;        /* an executable file is there */
	bool system_site;   /* venv with include-system-site-packages = true */
	bool user_site;     /* the user site directory is on its sys.path */
} py_interp;

typedef struct py_list {
	py_interp *v;
	size_t n;
	int selected; /* index of the interpreter gpuvet examines fully; -1 when none */
	char *path_python; /* the first python3 (else python) on PATH, as found; NULL when none */
} py_list;

void py_discover(const py_env *e, py_list *out);
/* The interpreters this process would find: e from its environment (py_env_from_process, with
 * --python's explicit_python), then py_discover. */
void py_discover_process(const char *explicit_python, py_env *e, py_list *out);
void py_list_free(py_list *l);

/* The site directories of an interpreter in sys.path order: PYTHONPATH entries, the user site,
 * then site-packages/dist-packages. kinds gets "PYTHONPATH", "user", "site" for each. */
void py_site_dirs(const py_interp *py, const py_env *e, strlist *dirs, strlist *kinds);
/* The user's home on the examined machine ("" when unknown). */
const char *py_home(const py_env *e, char *buf, size_t n);
#endif
