/* gpuvet env: the CUDA installs and what points at them; `env use X.Y` prints the lines to switch;
 * `env --scan` finds copies of the CUDA libraries on disk. Never edits a file or a link. */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/sysroot.h"
#include "loader/loader.h"
#include "render/render.h"
#include "core/shell.h"
#include "core/text.h"
#include "toolkit/cuda_version.h"
#include "toolkit/cudalibs.h"
#include "toolkit/libscan.h"
#include "toolkit/toolkits.h"

enum { OPT_JSON = 256, OPT_SCAN, OPT_DEPTH, OPT_ENTRIES, OPT_TIME };

static const gv_subcommand env_subs[] = {
	{"use", "VERSION|DIR",
	 "print the export lines (PATH, LD_LIBRARY_PATH without other CUDA installs' entries, CUDA_HOME) that switch "
	 "this shell to one install:\n    eval \"$(gpuvet env use 12.4)\"\nVERSION is X.Y (or X.Y.Z, or just X when only "
	 "one install matches); put the same line in ~/.bashrc to keep it",
	 GV_VAL_DIR, NULL},
	{NULL, NULL, NULL, GV_VAL_NONE, NULL},
};

static const gv_option env_options[] = {
	{"scan", OPT_SCAN, "[DIR...]", GV_VAL_DIR, NULL, NULL,
	 "look through DIR (default /usr, /opt, /home, /root, /srv and HOME; / for the whole disk) for copies of the "
	 "CUDA libraries (cudart, cuBLAS, cuDNN, NCCL, nvrtc, nvJitLink, cuSPARSE, libcuda, NVML) and say which are in "
	 "use: in a toolkit, on the loader's search path, in a Python environment; the rest are leftovers to review. "
	 "Skips /proc, /sys, /dev, /run, container storage and network file systems; does not follow symlinked "
	 "directories",
	 GV_OPT_OPERANDS},
	GV_OPT_ARG("max-depth", OPT_DEPTH, "N", GV_VAL_NUMBER, "directory levels below each DIR (default 16)"),
	GV_OPT_ARG("max-entries", OPT_ENTRIES, "N", GV_VAL_NUMBER, "directory entries to read in all (default 2000000)"),
	GV_OPT_ARG("time-limit", OPT_TIME, "S", GV_VAL_NUMBER, "seconds the scan may take (default 30)"),
	GV_OPT_FLAG("json", OPT_JSON, "JSON instead of text (schemas gpuvet.env/1, gpuvet.env.use/1, gpuvet.env.scan/1)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli env_cli = {
	.name = "env",
	.summary = "the CUDA installs on this machine; `env use X.Y` prints the lines to switch",
	.head = "usage: gpuvet env [--json]\n"
		"       gpuvet env use VERSION|DIR [--json]\n"
		"       gpuvet env --scan [DIR...] [--max-depth N] [--max-entries N] [--time-limit S] [--json]\n"
		"\n"
		"The CUDA installs on this machine (/usr/local/cuda-*, /opt/cuda*, the NVIDIA HPC SDK, conda\n"
		"environments), each with its version, and which one PATH's nvcc, CUDA_HOME and the\n"
		"/usr/local/cuda link point to. gpuvet only prints: it never edits files or links.\n"
		"\n",
	.subs = env_subs,
	.opts = env_options,
	.tail = "\n"
		"examples\n"
		"  gpuvet env                       what is installed, and what is in use\n"
		"  eval \"$(gpuvet env use 12.4)\"    switch this shell to CUDA 12.4\n"
		"  gpuvet env --scan /opt /home     find stray cuDNN and CUDA copies there\n"
		"\n"
		"common options: --root DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: 0 done, 2 usage (an unknown version: the installed ones are listed; an install\n"
		"or PATH entry whose path no shell quoting makes safe), 3 internal\n",
};

/* ---- helpers ---- */

static bool under(const char *path, const char *root)
{
	size_t n = strlen(root);
	return strncmp(path, root, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* The install a path belongs to (by its real path, or the name it was found under); -1. */
static int install_of(const cuda_env *e, const char *path)
{
	char *real = sysroot_realpath(path);
	int hit = -1;
	for (size_t i = 0; i < e->n && hit < 0; i++)
		if ((real && under(real, e->v[i].root)) || under(path, e->v[i].root) || under(path, e->v[i].found_as))
			hit = (int)i;
	free(real);
	if (hit < 0 && under(path, "/usr/local/cuda") && e->usr_local_cuda_install >= 0)
		hit = e->usr_local_cuda_install;
	return hit;
}

/* A path entry that names a CUDA directory that is gone ("/usr/local/cuda-10.2/lib64"). */
static bool stale_cuda_entry(const char *entry)
{
	return (strstr(entry, "/cuda") != NULL || strstr(entry, "/cudnn") != NULL) && !sysroot_is_dir(entry);
}

static const char *pointers_text(const cuda_env *e, int i, char *buf, size_t n)
{
	strbuf sb;
	sb_init(&sb);
	if (e->path_nvcc_install == i)
		sb_add(&sb, "PATH's nvcc");
	if (e->cuda_home_install == i)
		sb_addf(&sb, "%s%s", sb.len ? ", " : "", e->cuda_home_var);
	if (e->cuda_path_install == i)
		sb_addf(&sb, "%sCUDA_PATH", sb.len ? ", " : "");
	if (e->usr_local_cuda_install == i)
		sb_addf(&sb, "%s/usr/local/cuda", sb.len ? ", " : "");
	str_copy(buf, n, sb.buf ? sb.buf : "");
	sb_free(&sb);
	return buf;
}

static void print_json(cJSON *doc)
{
	json_print_doc(stdout, doc);
}

/* The first entry of a PATH-like value that no shell line can carry, or NULL. */
static char *unquotable_entry(const char *value)
{
	strlist parts = {0};
	sl_split(&parts, value, ":", false);
	char *bad = NULL;
	for (size_t i = 0; i < parts.n && !bad; i++)
		if (shell_unquotable(parts.v[i]))
			bad = xstrdup(parts.v[i]);
	sl_free(&parts);
	return bad ? bad : shell_unquotable(value) ? xstrdup(value) : NULL;
}

/* A ':' is quoted fine, but PATH and LD_LIBRARY_PATH split at it: the lines would name two
 * directories that do not exist. */
static int refuse_colon(const char *root)
{
	gv_error("env use: the install %s holds ':', where PATH and LD_LIBRARY_PATH split; rename it", TEXT(root));
	return EXIT_USAGE;
}

/* env use refuses to print lines it cannot quote: the message says which path and why. */
static int refuse(const char *what, const char *s)
{
	char *r = shell_refusal(what, s);
	gv_error("env use: %s", r);
	free(r);
	return EXIT_USAGE;
}

/* ---- gpuvet env ---- */

static int env_list(bool json)
{
	cuda_env e;
	cuda_env_scan(&e, true);
	int active = cuda_env_active(&e);
	if (json) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "schema", "gpuvet.env/1");
		cJSON *arr = cJSON_AddArrayToObject(doc, "installs");
		for (size_t i = 0; i < e.n; i++) {
			const cuda_install *ci = &e.v[i];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "root", ci->root);
			cJSON_AddStringToObject(o, "found_as", ci->found_as);
			cJSON_AddStringToObject(o, "origin", ci->origin);
			if (ci->version)
				cJSON_AddStringToObject(o, "version", ci->version);
			else
				cJSON_AddNullToObject(o, "version");
			if (ci->version_source)
				cJSON_AddStringToObject(o, "version_source", ci->version_source);
			if (ci->version_error)
				cJSON_AddStringToObject(o, "version_error", ci->version_error);
			if (ci->nvcc)
				cJSON_AddStringToObject(o, "nvcc", ci->nvcc);
			if (ci->lib_dir)
				cJSON_AddStringToObject(o, "lib_dir", ci->lib_dir);
			if (ci->cudnn_version)
				cJSON_AddStringToObject(o, "cudnn_version", ci->cudnn_version);
			cJSON_AddBoolToObject(o, "compat", ci->compat);
			cJSON_AddBoolToObject(o, "active", (int)i == active);
			cJSON *pb = cJSON_AddArrayToObject(o, "pointed_by");
			if (e.path_nvcc_install == (int)i)
				cJSON_AddItemToArray(pb, cJSON_CreateString("PATH"));
			if (e.cuda_home_install == (int)i)
				cJSON_AddItemToArray(pb, cJSON_CreateString(e.cuda_home_var));
			if (e.cuda_path_install == (int)i)
				cJSON_AddItemToArray(pb, cJSON_CreateString("CUDA_PATH"));
			if (e.usr_local_cuda_install == (int)i)
				cJSON_AddItemToArray(pb, cJSON_CreateString("/usr/local/cuda"));
			cJSON_AddItemToArray(arr, o);
		}
		if (e.path_nvcc)
			cJSON_AddStringToObject(doc, "path_nvcc", e.path_nvcc);
		else
			cJSON_AddNullToObject(doc, "path_nvcc");
		if (e.cuda_home) {
			cJSON_AddStringToObject(doc, "cuda_home", e.cuda_home);
			cJSON_AddStringToObject(doc, "cuda_home_var", e.cuda_home_var);
			cJSON_AddBoolToObject(doc, "cuda_home_exists", e.cuda_home_exists);
		} else {
			cJSON_AddNullToObject(doc, "cuda_home");
		}
		cJSON *ulc = cJSON_AddObjectToObject(doc, "usr_local_cuda");
		cJSON_AddStringToObject(ulc, "state", cuda_link_state_name(e.usr_local_cuda));
		if (e.usr_local_cuda_target)
			cJSON_AddStringToObject(ulc, "target", e.usr_local_cuda_target);
		const char *llp = getenv("LD_LIBRARY_PATH");
		if (llp)
			cJSON_AddStringToObject(doc, "ld_library_path", llp);
		else
			cJSON_AddNullToObject(doc, "ld_library_path");
		print_json(doc);
		cuda_env_free(&e);
		return EXIT_OK;
	}
	bool on = color_wanted(stdout, gopts.color);
	printf("%sCUDA installs%s\n", col_bold(on), col_reset(on));
	if (e.n == 0)
		printf("  none (no nvcc on PATH; nothing under /usr/local/cuda*, /opt/cuda*, /opt/nvidia/hpc_sdk, conda)\n"
		       "  PyTorch wheels bring their own CUDA runtime; a toolkit is needed only to build CUDA code\n");
	for (size_t i = 0; i < e.n; i++) {
		const cuda_install *ci = &e.v[i];
		char ptr[256], extra[256] = "";
		if (!ci->nvcc)
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "  libraries only, no nvcc");
		if (ci->cudnn_version)
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "  cuDNN %s", ci->cudnn_version);
		if (ci->compat)
			snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra), "  cuda-compat");
		pointers_text(&e, (int)i, ptr, sizeof(ptr));
		printf("  %s %-10s %s%s%s%s%s%s\n", (int)i == active ? "*" : " ", ci->version ? TEXT(ci->version) : "unknown",
		       TEXT(ci->root), TEXT(extra), *ptr ? "  " : "", *ptr ? col_dim(on) : "", *ptr ? "<- " : "", ptr);
		if (*ptr)
			printf("%s", col_reset(on));
		if (!ci->version)
			printf("      %sversion unknown: %s%s\n", col_dim(on), TEXT(ci->version_error), col_reset(on));
		else if (ci->version_source && strcmp(ci->version_source, "version.json") != 0)
			printf("      %sversion from %s%s\n", col_dim(on), ci->version_source, col_reset(on));
	}
	printf("\n%sWhat points where%s\n", col_bold(on), col_reset(on));
	if (e.path_nvcc)
		printf("  PATH's nvcc      %s -> %s\n", TEXT(e.path_nvcc),
		       e.path_nvcc_install >= 0 ? TEXT(e.v[e.path_nvcc_install].root) : "?");
	else
		printf("  PATH's nvcc      none\n");
	if (e.cuda_home)
		printf("  %-16s %s -> %s\n", e.cuda_home_var, TEXT(e.cuda_home),
		       e.cuda_home_install >= 0 ? TEXT(e.v[e.cuda_home_install].root) : "does not exist");
	else
		printf("  CUDA_HOME        not set\n");
	if (e.usr_local_cuda == LINK_ABSENT)
		printf("  /usr/local/cuda  does not exist\n");
	else if (e.usr_local_cuda_install >= 0)
		printf("  /usr/local/cuda  -> %s\n", TEXT(e.v[e.usr_local_cuda_install].root));
	else
		printf("  /usr/local/cuda  %s link to %s\n", cuda_link_state_name(e.usr_local_cuda),
		       e.usr_local_cuda_target ? TEXT(e.usr_local_cuda_target) : "?");
	const char *llp = getenv("LD_LIBRARY_PATH");
	printf("  LD_LIBRARY_PATH  %s\n", llp ? TEXT(llp) : "not set");
	if (e.n) {
		printf("\n");
		if (active >= 0 && e.v[active].version)
			printf("  * in use. ");
		else
			printf("  ");
		char mm[32];
		const cuda_install *pick = &e.v[active >= 0 ? active : (int)e.n - 1];
		char w[4096];
		if (pick->version && version_major_minor(pick->version, mm, sizeof(mm)) && shell_word(w, sizeof(w), mm))
			printf("Switch this shell: eval \"$(gpuvet env use %s)\"\n", w);
		else if (shell_word(w, sizeof(w), pick->root))
			printf("Switch this shell: eval \"$(gpuvet env use %s)\"\n", w);
		else
			printf("Switch this shell: gpuvet env use VERSION (the path of this install cannot be quoted)\n");
		printf("  Check what else loads: gpuvet check; find leftovers: gpuvet env --scan\n");
	}
	cuda_env_free(&e);
	return EXIT_OK;
}

/* ---- gpuvet env use ---- */

/* PATH-like value with the other installs' (and vanished CUDA) entries removed and dir first. */
static char *switch_path(const cuda_env *e, int chosen, const char *value, const char *first, bool loader_sep)
{
	strlist entries = {0};
	if (value) {
		if (loader_sep)
			loader_split_path(value, &entries);
		else
			sl_split(&entries, value, ":", false);
	}
	strbuf sb;
	sb_init(&sb);
	strlist seen = {0};
	if (first) {
		sb_add(&sb, first);
		sl_push(&seen, first);
	}
	for (size_t i = 0; i < entries.n; i++) {
		const char *en = entries.v[i];
		if (strcmp(en, ".") == 0 && loader_sep)
			continue; /* an empty LD_LIBRARY_PATH entry: the current directory, never wanted */
		const char *m = sysroot_strip(en);
		if (loader_sep && loader_is_stubs_dir(m))
			continue; /* link-time placeholders: never on a run-time search path */
		int owner = m[0] == '/' ? install_of(e, m) : -1;
		if ((owner >= 0 && owner != chosen) || (m[0] == '/' && stale_cuda_entry(m)) || sl_contains(&seen, en))
			continue;
		if (owner == chosen && first)
			continue; /* the chosen install's entries: already first */
		sl_push(&seen, en);
		sb_addf(&sb, "%s%s", sb.len ? ":" : "", en);
	}
	sl_free(&entries);
	sl_free(&seen);
	return sb_steal(&sb);
}

static int list_installed(const cuda_env *e, const char *what, const char *why)
{
	strbuf sb;
	sb_init(&sb);
	for (size_t i = 0; i < e->n; i++)
		sb_addf(&sb, "%s%s (%s)", i ? ", " : "", e->v[i].version ? e->v[i].version : "version unknown", e->v[i].root);
	if (e->n)
		gv_error("%s: %s; installed: %s", what, why, sb.buf);
	else
		gv_error("%s: %s; no CUDA install was found (see gpuvet env)", what, why);
	sb_free(&sb);
	return EXIT_USAGE;
}

static int env_use(const char *want, bool json)
{
	cuda_env e;
	cuda_env_scan(&e, true);
	int chosen = -1;
	if (want[0] == '/') {
		chosen = install_of(&e, want);
		if (chosen < 0) {
			int rc = list_installed(&e, want, "not a CUDA install");
			cuda_env_free(&e);
			return rc;
		}
	} else {
		int a;
		if (version_parse(want, &a, NULL, NULL) < 1 || want[strspn(want, "0123456789.")] != '\0') {
			cuda_env_free(&e);
			return usage_error(gv_usage(&env_cli), "env use: '%s' is not a version (X.Y) or a directory", want);
		}
		/* several installs of the same X.Y (or of the same X when only X is given): ambiguous */
		strlist mms = {0};
		size_t k = strlen(want);
		for (size_t i = 0; i < e.n; i++) {
			const char *v = e.v[i].version;
			char mm[32];
			if (v && strncmp(v, want, k) == 0 && (v[k] == '\0' || v[k] == '.') &&
			    version_major_minor(v, mm, sizeof(mm)) && !sl_contains(&mms, mm))
				sl_push(&mms, mm);
		}
		if (mms.n > 1) {
			sl_free(&mms);
			int rc = list_installed(&e, want, "more than one install matches, give X.Y");
			cuda_env_free(&e);
			return rc;
		}
		sl_free(&mms);
		chosen = cuda_env_find_version(&e, want);
		if (chosen < 0) {
			int rc = list_installed(&e, want, "no such CUDA version here");
			cuda_env_free(&e);
			return rc;
		}
	}
	const cuda_install *ci = &e.v[chosen];
	char *bin = xasprintf("%s/bin", ci->root);
	bool have_bin = sysroot_is_dir(bin);
	char *path = switch_path(&e, chosen, getenv("PATH"), have_bin ? bin : NULL, false);
	char *ldp = NULL;
	const char *llp = getenv("LD_LIBRARY_PATH");
	if (ci->lib_dir || llp)
		ldp = switch_path(&e, chosen, llp, ci->lib_dir, true);
	const char *cpath = getenv("CUDA_PATH");
	if (json) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "schema", "gpuvet.env.use/1");
		cJSON_AddStringToObject(doc, "root", ci->root);
		if (ci->version)
			cJSON_AddStringToObject(doc, "version", ci->version);
		cJSON *ex = cJSON_AddObjectToObject(doc, "exports");
		cJSON_AddStringToObject(ex, "PATH", path);
		if (ldp && *ldp)
			cJSON_AddStringToObject(ex, "LD_LIBRARY_PATH", ldp);
		cJSON_AddStringToObject(ex, "CUDA_HOME", ci->root);
		if (cpath)
			cJSON_AddStringToObject(ex, "CUDA_PATH", ci->root);
		if (ldp && !*ldp)
			cJSON_AddItemToObject(doc, "unset", cJSON_CreateStringArray((const char *[]){"LD_LIBRARY_PATH"}, 1));
		print_json(doc);
	} else {
		/* every line is for eval: each word quoted, nothing printed when one cannot be */
		char *bad_path = unquotable_entry(path), *bad_ldp = ldp ? unquotable_entry(ldp) : NULL;
		int refused = shell_unquotable(ci->root) ? refuse("the install", ci->root)
			      : strchr(ci->root, ':')	 ? refuse_colon(ci->root)
			      : bad_path		 ? refuse("the PATH entry", bad_path)
			      : bad_ldp			 ? refuse("the LD_LIBRARY_PATH entry", bad_ldp)
							 : 0;
		free(bad_path);
		free(bad_ldp);
		if (refused) {
			free(bin);
			free(path);
			free(ldp);
			cuda_env_free(&e);
			return refused;
		}
		strbuf sb;
		sb_init(&sb);
		sb_add(&sb, "# CUDA ");
		sb_add_text(&sb, ci->version ? ci->version : "(version unknown)");
		sb_add(&sb, " at ");
		sb_add_text(&sb, ci->root);
		sb_addf(&sb, "%s\n", ci->nvcc ? "" : " (libraries only: no nvcc)");
		sb_add(&sb, "export PATH=");
		sb_add_shell_word(&sb, path);
		sb_addc(&sb, '\n');
		if (ldp && *ldp) {
			sb_add(&sb, "export LD_LIBRARY_PATH=");
			sb_add_shell_word(&sb, ldp);
			sb_addc(&sb, '\n');
		} else if (ldp) {
			sb_add(&sb, "unset LD_LIBRARY_PATH\n");
		}
		sb_add(&sb, "export CUDA_HOME=");
		sb_add_shell_word(&sb, ci->root);
		sb_addc(&sb, '\n');
		if (cpath) {
			sb_add(&sb, "export CUDA_PATH=");
			sb_add_shell_word(&sb, ci->root);
			sb_addc(&sb, '\n');
		}
		fputs(sb.buf, stdout);
		sb_free(&sb);
		char w[1024];
		if (isatty(STDOUT_FILENO))
			fprintf(stderr, "gpuvet: these lines only print; to apply them: eval \"$(gpuvet env use %s)\"\n",
				shell_word(w, sizeof(w), want) ? w : "VERSION");
	}
	free(bin);
	free(path);
	free(ldp);
	cuda_env_free(&e);
	return EXIT_OK;
}

/* ---- gpuvet env --scan ---- */

static const char *family(const char *lib)
{
	return str_starts(lib, "cudnn") ? "cudnn" : lib;
}

typedef struct tags {
	char text[512];
	bool stray;
} tags;

static void tag_copy(const cuda_lib_copy *c, const cuda_env *e, const strlist *loader_dirs, const strlist *picked,
		     tags *t)
{
	strbuf sb;
	sb_init(&sb);
	int inst = -1;
	for (size_t i = 0; i < e->n && inst < 0; i++)
		if (under(c->real, e->v[i].root))
			inst = (int)i;
	if (inst >= 0)
		sb_addf(&sb, "toolkit %s", e->v[inst].root);
	bool on_path = false;
	for (size_t k = 0; k < c->names.n && !on_path; k++) {
		char *d = xstrdup(c->names.v[k]);
		char *slash = strrchr(d, '/');
		if (slash)
			slash[slash == d ? 1 : 0] = '\0';
		on_path = sl_contains(loader_dirs, d);
		free(d);
	}
	if (on_path)
		sb_addf(&sb, "%sloader search path", sb.len ? ", " : "");
	if (sl_contains(picked, c->real))
		sb_addf(&sb, "%spicked by dlopen", sb.len ? ", " : "");
	bool python = strstr(c->real, "/site-packages/") || strstr(c->real, "/dist-packages/");
	bool conda_pkgs = strstr(c->real, "/pkgs/") != NULL;
	if (python)
		sb_addf(&sb, "%sPython environment", sb.len ? ", " : "");
	else if (conda_pkgs)
		sb_addf(&sb, "%sconda package cache", sb.len ? ", " : "");
	if (c->stub)
		sb_addf(&sb, "%slink-time stub", sb.len ? ", " : "");
	t->stray = inst < 0 && !on_path && !python && !conda_pkgs && !c->stub;
	if (t->stray)
		sb_add(&sb, "stray: outside every toolkit, the loader's path and Python environments");
	str_copy(t->text, sizeof(t->text), sb.buf ? sb.buf : "");
	sb_free(&sb);
}

static long long file_size(const char *abs)
{
	struct stat st;
	return sysroot_stat(abs, &st) == 0 ? (long long)st.st_size : 0;
}

static int env_scan(const strlist *dirs, libscan_opts *so, bool json)
{
	if (!json && isatty(STDERR_FILENO))
		so->progress = stderr;
	libscan_result r;
	libscan_run(dirs, so, &r);
	/* what is in use: toolkits, the loader's directories, what a plain dlopen picks */
	cuda_env e;
	cuda_env_scan(&e, false);
	cuda_libs_toolkit_versions(&r.libs, &e);
	loader_system sys;
	loader_system_load(&sys);
	strlist loader_dirs = {0}, picked = {0};
	const char *llp = getenv("LD_LIBRARY_PATH");
	char *llp_m = loader_split_path_machine(llp, &loader_dirs);
	for (size_t i = 0; i < sys.conf_dirs.n; i++)
		sl_push(&loader_dirs, sys.conf_dirs.v[i]);
	for (size_t i = 0; i < sys.default_dirs.n; i++)
		sl_push(&loader_dirs, sys.default_dirs.v[i]);
	loader_ctx ctx = {.sys = &sys, .ld_library_path = llp_m};
	for (size_t i = 0; i < r.libs.n; i++) {
		const cuda_lib_copy *c = &r.libs.v[i];
		if (c->major < 0)
			continue;
		char *soname = cuda_lib_soname(c->lib, c->major);
		loader_result lr;
		if (loader_resolve(soname, &ctx, &lr) && lr.real[0] && !sl_contains(&picked, lr.real))
			sl_push(&picked, lr.real);
		free(soname);
	}
	int stray = 0;
	long long total = 0, stray_bytes = 0;
	tags *tg = xcalloc(r.libs.n ? r.libs.n : 1, sizeof(*tg));
	for (size_t i = 0; i < r.libs.n; i++) {
		tag_copy(&r.libs.v[i], &e, &loader_dirs, &picked, &tg[i]);
		long long sz = file_size(r.libs.v[i].real);
		total += sz;
		if (tg[i].stray) {
			stray++;
			stray_bytes += sz;
		}
	}
	if (json) {
		cJSON *doc = cJSON_CreateObject();
		cJSON_AddStringToObject(doc, "schema", "gpuvet.env.scan/1");
		cJSON *arr = cJSON_AddArrayToObject(doc, "copies");
		for (size_t i = 0; i < r.libs.n; i++) {
			const cuda_lib_copy *c = &r.libs.v[i];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "lib", c->lib);
			cJSON_AddStringToObject(o, "path", c->real);
			if (c->version)
				cJSON_AddStringToObject(o, "version", c->version);
			else
				cJSON_AddNullToObject(o, "version");
			if (c->cuda_major > 0)
				cJSON_AddNumberToObject(o, "cuda_major", c->cuda_major);
			cJSON_AddNumberToObject(o, "size_bytes", (double)file_size(c->real));
			cJSON *names = cJSON_AddArrayToObject(o, "names");
			for (size_t k = 0; k < c->names.n; k++)
				cJSON_AddItemToArray(names, cJSON_CreateString(c->names.v[k]));
			cJSON_AddStringToObject(o, "where", tg[i].text);
			cJSON_AddBoolToObject(o, "stray", tg[i].stray);
			cJSON_AddItemToArray(arr, o);
		}
		cJSON_AddNumberToObject(doc, "entries_read", (double)r.entries);
		cJSON_AddNumberToObject(doc, "seconds", r.seconds);
		cJSON_AddBoolToObject(doc, "truncated", r.truncated);
		if (r.limit_hit)
			cJSON_AddStringToObject(doc, "limit_hit", r.limit_hit);
		cJSON *sk = cJSON_AddArrayToObject(doc, "skipped");
		for (size_t i = 0; i < r.skipped.n; i++)
			cJSON_AddItemToArray(sk, cJSON_CreateString(r.skipped.v[i]));
		print_json(doc);
	} else {
		bool on = color_wanted(stdout, gopts.color);
		/* one line per library family and directory: cuDNN's sub-libraries go with libcudnn */
		strlist shown = {0};
		for (size_t i = 0; i < r.libs.n; i++) {
			const cuda_lib_copy *c = &r.libs.v[i];
			char *dir = xstrdup(c->real);
			char *slash = strrchr(dir, '/');
			if (slash)
				slash[slash == dir ? 1 : 0] = '\0';
			char *key = xasprintf("%s|%s|%s", family(c->lib), dir, c->version ? c->version : "");
			if (sl_contains(&shown, key)) {
				free(key);
				free(dir);
				continue;
			}
			sl_push_owned(&shown, key);
			int subs = 0;
			long long bytes = 0;
			for (size_t k = i; k < r.libs.n; k++) {
				const cuda_lib_copy *d = &r.libs.v[k];
				char *dd = xstrdup(d->real);
				char *s2 = strrchr(dd, '/');
				if (s2)
					s2[s2 == dd ? 1 : 0] = '\0';
				if (strcmp(family(d->lib), family(c->lib)) == 0 && strcmp(dd, dir) == 0 &&
				    strcmp(d->version ? d->version : "", c->version ? c->version : "") == 0) {
					subs++;
					bytes += file_size(d->real);
				}
				free(dd);
			}
			printf("%s%-10s %-12s %s%s\n", tg[i].stray ? col_warn(on) : "", family(c->lib),
			       c->version ? TEXT(c->version) : "unknown", TEXT(subs > 1 ? dir : c->real),
			       tg[i].stray ? col_reset(on) : "");
			char nlibs[32] = "";
			if (subs > 1)
				snprintf(nlibs, sizeof(nlibs), "%d libraries, ", subs);
			printf("           %s%s%s, %.1f MiB%s\n", col_dim(on), nlibs, TEXT(tg[i].text), (double)bytes / 1048576.0,
			       col_reset(on));
			free(dir);
		}
		sl_free(&shown);
		if (r.libs.n == 0)
			printf("no copies of the CUDA libraries found\n");
		printf("\n%zu copies, %.1f GiB, found in %.1f s (%ld directory entries read)\n", r.libs.n,
		       (double)total / (1 << 30), r.seconds, r.entries);
		if (r.truncated)
			printf("%sthe scan stopped at its %s limit: results are partial (see --max-entries, --time-limit)%s\n",
			       col_warn(on), r.limit_hit, col_reset(on));
		else if (r.limit_hit)
			printf("%sdirectories deeper than --max-depth %d were not entered%s\n", col_dim(on), so->max_depth,
			       col_reset(on));
		if (stray)
			printf("%d stray cop%s (%.1f MiB): review, then remove the ones no program uses (dpkg -S PATH names "
			       "a package's files; gpuvet never deletes anything)\n",
			       stray, stray == 1 ? "y" : "ies", (double)stray_bytes / 1048576.0);
		else if (r.libs.n)
			printf("no stray copies: each is in a toolkit, on the loader's search path or in a Python environment\n");
	}
	free(tg);
	free(llp_m);
	sl_free(&loader_dirs);
	sl_free(&picked);
	loader_system_free(&sys);
	cuda_env_free(&e);
	libscan_free(&r);
	return EXIT_OK;
}

int cmd_env(int argc, char **argv)
{
	const char *env_usage = gv_usage(&env_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&env_cli, longopts, shortopts);
	bool json = false, scan = false;
	libscan_opts so;
	libscan_defaults(&so);
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		long v;
		double d;
		switch (c) {
		case OPT_JSON: json = true; break;
		case OPT_SCAN: scan = true; break;
		case OPT_DEPTH:
			if (!parse_int_opt("--max-depth", optarg, 0, 64, &v))
				return EXIT_USAGE;
			so.max_depth = (int)v;
			break;
		case OPT_ENTRIES:
			if (!parse_int_opt("--max-entries", optarg, 1, 1000000000, &v))
				return EXIT_USAGE;
			so.max_entries = v;
			break;
		case OPT_TIME:
			if (!parse_double_opt("--time-limit", optarg, 0.1, 86400, &d))
				return EXIT_USAGE;
			so.time_limit_s = d;
			break;
		default: return usage_getopt_rest(c, env_usage, argv);
		}
	}
	if (scan) {
		strlist dirs = {0};
		for (int i = optind; i < argc; i++) {
			if (argv[i][0] != '/') {
				sl_free(&dirs);
				return usage_error(env_usage, "env --scan: '%s' is not an absolute directory", argv[i]);
			}
			if (!sysroot_is_dir(argv[i])) {
				gv_error("env --scan: %s is not a directory", argv[i]);
				sl_free(&dirs);
				return EXIT_USAGE;
			}
			sl_push(&dirs, argv[i]);
		}
		int rc = env_scan(&dirs, &so, json);
		sl_free(&dirs);
		return rc;
	}
	if (optind < argc && strcmp(argv[optind], env_subs[0].name) == 0) {
		if (optind + 1 >= argc)
			return usage_error(env_usage, "env use: which install? give a version (12.4) or a directory");
		if (optind + 2 < argc)
			return usage_error(env_usage, "env use: unexpected argument '%s'", argv[optind + 2]);
		return env_use(argv[optind + 1], json);
	}
	if (optind < argc)
		return usage_error(env_usage, "env: unknown argument '%s' (did you mean `gpuvet env use %s`?)", argv[optind],
				   argv[optind]);
	return env_list(json);
}
