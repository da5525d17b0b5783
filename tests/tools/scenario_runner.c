/*
 * Runs one declarative scenario: a machine built as a directory tree, a fake NVML/libcuda
 * configuration, an environment, and the findings expected. See tests/scenarios/README.md.
 *
 *   scenario_runner GPUVET_BINARY SCENARIO_DIR [FAKE_NVML_LIB FAKE_CUDA_LIB [FAKE_NVML_BASIC_LIB
 *                   [FAKE_NVML_TRUNCATED [FAKE_CUBLASLT_LIB]]]]
 *
 * Exit 0 when every expectation holds, 1 otherwise (each failed expectation printed).
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/util.h"
#include "test_tmp.h"

#define RUN_LIMIT_S 150

static int failures;

static void fail(const char *fmt, ...) GV_PRINTF(1, 2);
static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("  not ok: ", stdout);
	vprintf(fmt, ap);
	fputc('\n', stdout);
	va_end(ap);
	failures++;
}

/* GPUVET_SCENARIO_DOCS=DIR keeps the scenario's JSON document as DIR/NAME.json, for the schema
 * test (tests/tools/check_schemas.py); a scenario without one leaves none there. */
static void keep_document(const char *scenario_dir, const char *out)
{
	const char *docs = getenv("GPUVET_SCENARIO_DOCS");
	if (!docs || !*docs)
		return;
	mkdir(docs, 0777);
	const char *name = strrchr(scenario_dir, '/');
	name = name && name[1] ? name + 1 : scenario_dir;
	char *path = xasprintf("%s/%s.json", docs, name);
	unlink(path);
	if (out) {
		FILE *fp = fopen(path, "w");
		if (fp) {
			fputs(out, fp);
			fclose(fp);
		}
	}
	free(path);
}

static int run_simple(char *const argv[])
{
	proc_result r;
	proc_run(argv, NULL, NULL, 60000, 1 << 20, &r);
	int st = r.status;
	if (st != 0)
		fprintf(stderr, "%s failed: %s\n", argv[0], r.err);
	proc_result_free(&r);
	return st;
}

/* A copy of file in dir, readable and executable by every user; the original path when the copy
 * fails (the run then says what it could not open). */
static const char *copy_for_other_user(const char *file, const char *dir, const char *name)
{
	char *to = xasprintf("%s/%s", dir, name);
	char *cp[] = {"cp", (char *)file, to, NULL};
	if (run_simple(cp) != 0 || chmod(to, 0755) != 0) {
		free(to);
		return file;
	}
	return to;
}

/* left-running: none. The scenario's fake programs work in a folder of the copied tree, so every
 * process they started has its working directory there (it inherits it): once gpuvet has
 * returned, none may be left. Those found fail the scenario and are killed (the run leaves
 * nothing either way). */
static void check_none_left(const char *root)
{
	DIR *d = opendir("/proc");
	size_t rlen = strlen(root);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid == getpid())
			continue;
		char link[64], cwd[4096];
		snprintf(link, sizeof(link), "/proc/%ld/cwd", pid);
		ssize_t n = readlink(link, cwd, sizeof(cwd) - 1);
		if (n <= 0)
			continue; /* gone, a zombie, or another user's */
		cwd[n] = '\0';
		if (strncmp(cwd, root, rlen) != 0 || (cwd[rlen] != '/' && cwd[rlen] != '\0'))
			continue;
		char cmd[256] = "";
		snprintf(link, sizeof(link), "/proc/%ld/cmdline", pid);
		FILE *fp = fopen(link, "rb");
		size_t m = fp ? fread(cmd, 1, sizeof(cmd) - 1, fp) : 0;
		if (fp)
			fclose(fp);
		for (size_t i = 0; i < m; i++)
			if (cmd[i] == '\0')
				cmd[i] = ' ';
		cmd[m] = '\0';
		fail("process %ld (%s) that gpuvet started is still running after it returned", pid, cmd);
		kill((pid_t)pid, SIGKILL);
	}
	if (d)
		closedir(d);
}

static char *after_colon(char *line)
{
	char *c = strchr(line, ':');
	return c ? str_trim(c + 1) : NULL;
}

/* C escapes in directive text (\n, \t, \e, \s for a blank, \\, \xHH), so a scenario can hold names
 * with the bytes that hostile trees use; @ROOT@ and @HOST@ expand to the root tree and to the
 * folder beside it that stands for the host's own files. */
static char *unescape(const char *s, const char *root, const char *host)
{
	strbuf sb;
	sb_init(&sb);
	while (*s) {
		if (str_starts(s, "@ROOT@")) {
			sb_add(&sb, root);
			s += 6;
		} else if (str_starts(s, "@HOST@")) {
			sb_add(&sb, host);
			s += 6;
		} else if (*s == '\\' && s[1]) {
			char c = s[1];
			s += 2;
			if (c == 'n')
				sb_addc(&sb, '\n');
			else if (c == 't')
				sb_addc(&sb, '\t');
			else if (c == 'e')
				sb_addc(&sb, '\033');
			else if (c == 's')
				sb_addc(&sb, ' ');
			else if (c == 'x' && s[0] && s[1]) {
				char hex[3] = {s[0], s[1], 0};
				sb_addc(&sb, (char)strtol(hex, NULL, 16));
				s += 2;
			} else
				sb_addc(&sb, c);
		} else {
			sb_addc(&sb, *s++);
		}
	}
	return sb_steal(&sb);
}

/* "PATH REST": PATH is the first word (blanks in it written \s), REST the rest of the line. */
static char *first_word(char *v, char **rest)
{
	char *sp = strchr(v, ' ');
	*rest = sp ? str_trim(sp + 1) : v + strlen(v);
	if (sp)
		*sp = '\0';
	return v;
}

static void mkdirs(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
	free(p);
}

static void put_file(const char *path, const char *content)
{
	char *dir = xstrdup(path);
	char *slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		mkdirs(dir);
	}
	free(dir);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		return;
	}
	fputs(content, f);
	fclose(f);
}

static const cJSON *find_finding(const cJSON *doc, const char *id)
{
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(doc, "findings"), *x;
	cJSON_ArrayForEach(x, arr)
	{
		const cJSON *i = cJSON_GetObjectItemCaseSensitive(x, "id");
		if (cJSON_IsString(i) && strcmp(i->valuestring, id) == 0)
			return x;
	}
	return NULL;
}

/* A finding that tells the user to "see ID" must not point at a finding this run does not show
 * (the id a user sees must be the one that describes the case: scripts match on ids). */
static void check_see_refs(const cJSON *doc)
{
	const cJSON *fs = cJSON_GetObjectItemCaseSensitive(doc, "findings"), *x;
	cJSON_ArrayForEach(x, fs) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(x, "id");
		char *text = cJSON_PrintUnformatted(x);
		for (const char *p = text; (p = strstr(p, "see ")) != NULL;) {
			p += 4;
			size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789.-");
			while (n && (p[n - 1] == '.' || p[n - 1] == '-'))
				n--;
			const char *dot = memchr(p, '.', n);
			if (!dot || dot == p || n > 60 || (n < strlen(p) && p[n] == '/'))
				continue;
			char ref[64];
			memcpy(ref, p, n);
			ref[n] = '\0';
			if (!find_finding(doc, ref))
				fail("finding %s says 'see %s', which is not among the findings",
				     cJSON_IsString(id) ? id->valuestring : "?", ref);
		}
		free(text);
	}
}

static const cJSON *find_fact(const cJSON *doc, const char *key)
{
	const cJSON *facts = cJSON_GetObjectItemCaseSensitive(doc, "facts");
	const char *dot = strchr(key, '.');
	if (!dot)
		return NULL;
	char layer[64];
	str_copy(layer, sizeof(layer), key);
	if ((size_t)(dot - key) < sizeof(layer))
		layer[dot - key] = '\0';
	const cJSON *g = cJSON_GetObjectItemCaseSensitive(facts, layer);
	return cJSON_GetObjectItemCaseSensitive(g, dot + 1);
}

/* gpuvet explain --json: the error recognised as signature id */
static const cJSON *explain_error(const cJSON *doc, const char *id)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "errors"))
	{
		const cJSON *sig = cJSON_GetObjectItemCaseSensitive(e, "signature");
		if (cJSON_IsString(sig) && strcmp(sig->valuestring, id) == 0)
			return e;
	}
	return NULL;
}

/* The state ("holds", "ruled-out", "undecided") of cause id in the errors recognised; "holds"
 * when it holds for one of them. "SIG/ID" restricts to the error SIG. */
static const char *explain_cause_state(const cJSON *doc, const char *want)
{
	const char *slash = strchr(want, '/');
	const char *id = slash ? slash + 1 : want, *state = NULL;
	const cJSON *e, *c;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(doc, "errors"))
	{
		const cJSON *sig = cJSON_GetObjectItemCaseSensitive(e, "signature");
		if (slash && (!cJSON_IsString(sig) || strncmp(sig->valuestring, want, (size_t)(slash - want)) != 0 ||
			      sig->valuestring[slash - want] != '\0'))
			continue;
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "causes"))
		{
			const cJSON *i = cJSON_GetObjectItemCaseSensitive(c, "id"), *s = cJSON_GetObjectItemCaseSensitive(c, "state");
			if (cJSON_IsString(i) && cJSON_IsString(s) && strcmp(i->valuestring, id) == 0)
				if (!state || strcmp(s->valuestring, "holds") == 0)
					state = s->valuestring;
		}
	}
	return state;
}

/* Whether every directory above path (the template's parent) lets other users through (o+x). */
static bool reachable_by_others(const char *path)
{
	char p[4096];
	str_copy(p, sizeof(p), path);
	char *slash;
	while ((slash = strrchr(p, '/')) && slash != p) {
		*slash = '\0';
		struct stat st;
		if (stat(p, &st) != 0 || !(st.st_mode & S_IXOTH))
			return false;
	}
	struct stat st;
	return stat("/", &st) == 0 && (st.st_mode & S_IXOTH);
}

/* Whether the scenario (or the machine it borrows with "machine: NAME") runs gpuvet as nobody. */
static bool wants_nobody(const char *dir)
{
	for (int depth = 0; depth < 2 && dir; depth++) {
		char *path = xasprintf("%s/scenario", dir);
		FILE *f = fopen(path, "r");
		free(path);
		if (!f)
			return false;
		char line[4096], *machine = NULL;
		bool nobody = false;
		while (fgets(line, sizeof(line), f)) {
			char *l = str_trim(line);
			l[strcspn(l, "\r\n")] = '\0';
			if (str_starts(l, "user:") && strstr(l, "nobody"))
				nobody = true;
			else if (str_starts(l, "machine:") && !machine)
				machine = xstrdup(str_trim(l + strlen("machine:")));
		}
		fclose(f);
		if (nobody || !machine) {
			free(machine);
			return nobody;
		}
		/* machine: NAME is a sibling scenario's folder, as the runner reads it below */
		static char next[4096];
		snprintf(next, sizeof(next), "%s/../%s", dir, machine);
		free(machine);
		dir = next;
	}
	return false;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: scenario_runner GPUVET SCENARIO_DIR [FAKE_NVML FAKE_CUDA [FAKE_NVML_BASIC "
				"[FAKE_NVML_TRUNCATED [FAKE_CUBLASLT]]]]\n");
		return 2;
	}
	const char *gpuvet = argv[1], *dir = argv[2];
	const char *fake_nvml = argc > 3 ? argv[3] : NULL, *fake_cuda = argc > 4 ? argv[4] : NULL;
	const char *fake_basic = argc > 5 ? argv[5] : NULL, *fake_truncated = argc > 6 ? argv[6] : NULL;
	const char *fake_cublaslt = argc > 7 ? argv[7] : NULL;
	char *spath = xasprintf("%s/scenario", dir);
	FILE *sf = fopen(spath, "r");
	if (!sf) {
		fprintf(stderr, "cannot open %s: %s\n", spath, strerror(errno));
		return 2;
	}
	char tmpl[4096];
	test_tmp_path(tmpl, sizeof(tmpl), "gpuvet-scenario-XXXXXX");
	/* a scenario run as uid 65534 needs a tree that user can reach: under a build tree in root's
	 * 0700 home the test's own TMPDIR is not, and /tmp is used instead (removed at the end) */
	if (wants_nobody(dir) && !reachable_by_others(tmpl))
		snprintf(tmpl, sizeof(tmpl), "/tmp/gpuvet-scenario-XXXXXX");
	if (!mkdtemp(tmpl)) {
		perror("mkdtemp");
		return 2;
	}
	chmod(tmpl, 0755);
	char *root = xasprintf("%s/root", tmpl);
	/* "machine: NAME": the machine of scenario NAME (its root tree, environment, fakes, modes and
	 * user) under this scenario's own arguments and expectations */
	strlist lines = {0};
	char *machine = NULL;
	{
		char l0[4096];
		strlist own = {0};
		while (fgets(l0, sizeof(l0), sf)) {
			char *l = str_trim(l0);
			if (str_starts(l, "machine:"))
				machine = xstrdup(str_trim(l + 8));
			else
				sl_push(&own, l);
		}
		if (machine) {
			char *mpath = xasprintf("%s/../%s/scenario", dir, machine);
			FILE *mf = fopen(mpath, "r");
			if (!mf) {
				fprintf(stderr, "machine: cannot open %s: %s\n", mpath, strerror(errno));
				return 2;
			}
			while (fgets(l0, sizeof(l0), mf)) {
				char *l = str_trim(l0);
				if (str_starts(l, "env:") || str_starts(l, "fake:") || str_starts(l, "fake-lib:") ||
				    str_starts(l, "chmod:") || str_starts(l, "user:"))
					sl_push(&lines, l);
			}
			fclose(mf);
			free(mpath);
		}
		for (size_t i = 0; i < own.n; i++)
			sl_push(&lines, own.v[i]);
		sl_free(&own);
	}
	char *src_root = machine ? xasprintf("%s/../%s/root", dir, machine) : xasprintf("%s/root", dir);
	struct stat st;
	if (stat(src_root, &st) == 0) {
		char *cp[] = {"cp", "-a", src_root, root, NULL};
		if (run_simple(cp) != 0)
			return 2;
	} else {
		mkdir(root, 0755);
	}
	char *host_dir = xasprintf("%s/host", tmpl); /* stands for the host's own files, outside the root */
	mkdir(host_dir, 0755);
	char *fake_conf = xasprintf("%s/fake.conf", tmpl);
	FILE *fc = fopen(fake_conf, "w");

	strlist env = {0}, args = {0}, expects = {0}, absents = {0}, facts_exp = {0}, contains = {0}, lacks = {0};
	strlist holds = {0}, ruled_out = {0}, signatures = {0}, err_contains = {0}; /* gpuvet explain/run */
	bool use_fake = false, basic = false, truncated = false, cublaslt = false, as_nobody = false, json = true;
	bool none_left = false; /* left-running: none */
	int want_exit = -1;
	sl_push(&env, "PATH=/usr/bin:/bin");
	sl_push(&env, "LC_ALL=C");
	sl_pushf(&env, "HOME=%s/home/user", root);
	char line[4096];
	for (size_t li = 0; li < lines.n; li++) {
		str_copy(line, sizeof(line), lines.v[li]);
		char *l = str_trim(line);
		if (!*l || *l == '#')
			continue;
		char *v = after_colon(l);
		if (!v) {
			fprintf(stderr, "%s: line without ':': %s\n", spath, l);
			return 2;
		}
		if (str_starts(l, "args:")) {
			sl_free(&args);
			sl_split(&args, v, " ", false);
		} else if (str_starts(l, "env:")) {
			char *val = v;
			/* a variable given again (PATH, HOME) replaces the default: getenv sees the first */
			size_t klen = strcspn(val, "=");
			for (size_t k = 0; k < env.n; k++)
				if (strncmp(env.v[k], val, klen) == 0 && env.v[k][klen] == '=') {
					free(env.v[k]);
					memmove(&env.v[k], &env.v[k + 1], (env.n - k - 1) * sizeof(char *));
					env.n--;
					break;
				}
			/* @ROOT@ stands for the scenario's root directory (for paths in PATH) */
			char *at = strstr(val, "@ROOT@");
			if (at) {
				*at = '\0';
				sl_pushf(&env, "%s%s%s", val, root, at + 6);
			} else {
				sl_push(&env, val);
			}
		} else if (str_starts(l, "fake:")) {
			use_fake = true;
			if (fc)
				fprintf(fc, "%s\n", v);
		} else if (str_starts(l, "fake-lib:") && strcmp(v, "cublaslt") == 0) {
			use_fake = cublaslt = true; /* beside the fake NVML of another fake-lib: line */
		} else if (str_starts(l, "fake-lib:")) {
			use_fake = true;
			basic = strcmp(v, "basic") == 0;
			truncated = strcmp(v, "truncated") == 0;
		} else if (str_starts(l, "chmod:")) {
			unsigned mode;
			char p[1024];
			if (sscanf(v, "%o %1023s", &mode, p) == 2) {
				char *name = unescape(p, root, host_dir); /* \n, \s ... as in mkdir: */
				char *full = xasprintf("%s%s", root, name);
				free(name);
				if (chmod(full, mode) != 0)
					fprintf(stderr, "chmod %s: %s\n", full, strerror(errno));
				free(full);
			}
		} else if (str_starts(l, "mknod:")) {
			/* mknod: c MAJOR MINOR /dev/PATH   replaces the tree's file with a real device node
			 * (never opened: probes only stat it); needs CAP_MKNOD, so the scenario skips without */
			char type, p[1024];
			unsigned ma, mi;
			if (sscanf(v, " %c %u %u %1023s", &type, &ma, &mi, p) == 4 && (type == 'c' || type == 'b')) {
				char *full = xasprintf("%s%s", root, p);
				unlink(full);
				if (mknod(full, (type == 'c' ? S_IFCHR : S_IFBLK) | 0666, makedev(ma, mi)) != 0) {
					printf("cannot create the device node %s (%s): needs root\n", p, strerror(errno));
					char *rm1[] = {"rm", "-rf", tmpl, NULL}; /* a skip leaves no trace either */
					run_simple(rm1);
					return 77;
				}
				free(full);
			} else {
				fprintf(stderr, "%s: bad mknod directive: %s\n", spath, v);
				return 2;
			}
		} else if (str_starts(l, "mkfifo:")) {
			/* what git cannot keep: a FIFO (a directory: mkdir: below) */
			char *full = xasprintf("%s%s", root, v);
			if (mkfifo(full, 0644) != 0) {
				fprintf(stderr, "mkfifo %s: %s\n", full, strerror(errno));
				return 2;
			}
			free(full);
		} else if (str_starts(l, "user:")) {
			as_nobody = strcmp(v, "nobody") == 0;
		} else if (str_starts(l, "expect:")) {
			sl_push(&expects, v);
		} else if (str_starts(l, "absent:")) {
			sl_push(&absents, v);
		} else if (str_starts(l, "fact:")) {
			sl_push(&facts_exp, v);
		} else if (str_starts(l, "stdout-contains:")) {
			sl_push(&contains, v);
		} else if (str_starts(l, "stdout-lacks:")) {
			sl_push_owned(&lacks, unescape(v, root, host_dir));
		} else if (str_starts(l, "stderr-contains:")) {
			sl_push_owned(&err_contains, unescape(v, root, host_dir));
		} else if (str_starts(l, "mkdir:") || str_starts(l, "file:") || str_starts(l, "host-file:") ||
			   str_starts(l, "link:")) {
			/* built at run time: names git should not carry (newlines, escapes, bytes that are not UTF-8),
			 * a directory where a file belongs */
			char *rest, *name = unescape(first_word(v, &rest), root, host_dir);
			char *arg = unescape(rest, root, host_dir);
			char *full = xasprintf("%s%s", str_starts(l, "host-file:") ? host_dir : root, name);
			if (str_starts(l, "mkdir:")) {
				mkdirs(full);
				struct stat dst;
				if (stat(full, &dst) != 0 || !S_ISDIR(dst.st_mode)) {
					fprintf(stderr, "mkdir %s: %s\n", full, strerror(errno ? errno : EEXIST));
					return 2;
				}
			} else if (str_starts(l, "link:")) {
				char *parent = xstrdup(full);
				*strrchr(parent, '/') = '\0';
				mkdirs(parent);
				free(parent);
				if (symlink(arg, full) != 0)
					fprintf(stderr, "symlink %s: %s\n", full, strerror(errno));
			} else {
				put_file(full, arg);
			}
			free(full);
			free(name);
			free(arg);
		} else if (str_starts(l, "holds:")) {
			sl_push(&holds, v);
		} else if (str_starts(l, "ruled-out:")) {
			sl_push(&ruled_out, v);
		} else if (str_starts(l, "signature:")) {
			sl_push(&signatures, v);
		} else if (str_starts(l, "left-running:") && strcmp(v, "none") == 0) {
			none_left = true;
		} else if (str_starts(l, "exit:")) {
			want_exit = atoi(v);
		} else {
			fprintf(stderr, "%s: unknown directive: %s\n", spath, l);
			return 2;
		}
	}
	fclose(sf);
	if (fc)
		fclose(fc);
	if (!args.n)
		sl_split(&args, "check --json --no-python", " ", false);
	json = sl_contains(&args, "--json");
	if (as_nobody && geteuid() != 0) {
		/* as the owner of the copied tree every mode is moot: the expectations would not hold */
		printf("skip: the scenario runs gpuvet as uid 65534, which needs the tests to run as root\n");
		char *rm0[] = {"rm", "-rf", tmpl, NULL};
		run_simple(rm0);
		return 77;
	}
	if (as_nobody) {
		/* uid 65534 may not reach the build tree (a checkout under root's 0700 home): copies of
		 * gpuvet and the fakes in the scenario's own 0755 directory */
		gpuvet = copy_for_other_user(gpuvet, tmpl, "gpuvet");
		if (fake_nvml)
			fake_nvml = copy_for_other_user(fake_nvml, tmpl, "libfake_nvml.so");
		if (fake_cuda)
			fake_cuda = copy_for_other_user(fake_cuda, tmpl, "libfake_cuda.so");
		if (fake_basic)
			fake_basic = copy_for_other_user(fake_basic, tmpl, "libfake_nvml_basic.so");
		if (fake_cublaslt)
			fake_cublaslt = copy_for_other_user(fake_cublaslt, tmpl, "libfake_cublaslt.so");
	}
	if (use_fake) {
		if (!fake_nvml || !fake_cuda) {
			printf("scenario needs the fake libraries, which were not built\n");
			return 77;
		}
		if (truncated && !fake_truncated) {
			printf("scenario needs the truncated fake NVML, which was not built\n");
			return 77;
		}
		if (cublaslt && !fake_cublaslt) {
			printf("scenario needs the fake cuBLASLt, which was not built\n");
			return 77;
		}
		if (cublaslt)
			sl_pushf(&env, "GPUVET_CUBLASLT_LIB=%s", fake_cublaslt);
		sl_pushf(&env, "GPUVET_NVML_LIB=%s",
			 truncated ? fake_truncated : basic && fake_basic ? fake_basic : fake_nvml);
		sl_pushf(&env, "GPUVET_CUDA_LIB=%s", fake_cuda);
		sl_pushf(&env, "GPUVET_FAKE_CONFIG=%s", fake_conf);
	}
	/* every fact key the run writes or reads must be in the registry (core/factkeys.def), each
	 * value of the registered type: gpuvet notes any other in this file. A GPUVET_FACT_KEYS_LOG of our own environment is passed on
	 * instead, unchecked (to collect the keys of the whole suite). */
	const char *keys_log_env = getenv("GPUVET_FACT_KEYS_LOG");
	char *keys_log = keys_log_env && *keys_log_env ? xstrdup(keys_log_env) : xasprintf("%s/unknown-fact-keys", tmpl);
	bool check_keys = !(keys_log_env && *keys_log_env);
	if (check_keys) {
		FILE *kf = fopen(keys_log, "w");
		if (kf)
			fclose(kf);
		chmod(keys_log, 0666); /* the run may be another user's */
	}
	sl_pushf(&env, "GPUVET_FACT_KEYS_LOG=%s", keys_log);
	/* the environment probe must see only what the scenario sets */
	strlist av = {0};
	if (as_nobody && geteuid() == 0) {
		sl_push(&av, "setpriv");
		sl_push(&av, "--reuid=65534");
		sl_push(&av, "--regid=65534");
		sl_push(&av, "--clear-groups");
		sl_push(&av, "--");
	}
	sl_push(&av, gpuvet);
	sl_pushf(&av, "--root=%s", root);
	for (size_t i = 0; i < args.n; i++) {
		/* @ROOT@ is the copied root tree, @DIR@ the scenario's folder (for --facts files) */
		strbuf a;
		sb_init(&a);
		for (const char *p = args.v[i]; *p;) {
			if (str_starts(p, "@ROOT@")) {
				sb_add(&a, root);
				p += 6;
			} else if (str_starts(p, "@DIR@")) {
				sb_add(&a, dir);
				p += 5;
			} else {
				sb_addc(&a, *p++);
			}
		}
		sl_push_owned(&av, sb_steal(&a));
	}
	sl_push_owned(&av, NULL);
	sl_push_owned(&env, NULL);
	proc_result r;
	/* what a run may take: the slowest scenarios (the diag stress tests on the fake's host GEMMs)
	 * take about 22 s in the normal build and came to 56 s under ASan beside four fuzzers on two
	 * cores; a hung run is still caught, just later */
	proc_run(av.v, env.v, NULL, RUN_LIMIT_S * 1000, 64 << 20, &r);
	printf("scenario %s: exit %d%s\n", dir, r.status, r.timed_out ? " (timed out)" : "");
	if (r.spawn_failed)
		fail("could not start %s: %s", gpuvet, strerror(r.spawn_errno));
	if (r.signal)
		fail("gpuvet died of signal %d\nstderr: %s", r.signal, r.err);
	if (r.timed_out)
		fail("gpuvet did not finish within %d s", RUN_LIMIT_S);
	if (want_exit >= 0 && r.status != want_exit)
		fail("exit status %d, expected %d\nstderr: %s", r.status, want_exit, r.err);
	cJSON *doc = json ? cJSON_Parse(r.out) : NULL;
	if (json && !doc && want_exit != 2) /* a usage error prints no document */
		fail("output is not JSON: %.500s\nstderr: %.500s", r.out, r.err);
	keep_document(dir, doc ? r.out : NULL);
	for (size_t i = 0; i < expects.n; i++) {
		strlist w = {0};
		sl_split(&w, expects.v[i], " ", false);
		const cJSON *x = doc && w.n ? find_finding(doc, w.v[0]) : NULL;
		if (!x)
			fail("finding %s expected, not present", w.n ? w.v[0] : "?");
		else if (w.n > 1) {
			const cJSON *sev = cJSON_GetObjectItemCaseSensitive(x, "severity");
			if (!cJSON_IsString(sev) || strcmp(sev->valuestring, w.v[1]) != 0)
				fail("finding %s has severity %s, expected %s", w.v[0],
				     cJSON_IsString(sev) ? sev->valuestring : "?", w.v[1]);
		}
		if (x && w.n > 2) { /* expect: ID SEV text that must appear in evidence or fix */
			char *s = cJSON_PrintUnformatted(x);
			/* the text follows the severity word, searched after the id ("driver.init-failed fail X") */
			const char *needle = strstr(expects.v[i] + strlen(w.v[0]), w.v[1]) + strlen(w.v[1]);
			while (*needle == ' ')
				needle++;
			if (!strstr(s, needle))
				fail("finding %s does not mention '%s': %s", w.v[0], needle, s);
			free(s);
		}
		sl_free(&w);
	}
	if (doc)
		check_see_refs(doc);
	for (size_t i = 0; i < absents.n; i++)
		if (doc && find_finding(doc, absents.v[i]))
			fail("finding %s present, expected absent", absents.v[i]);
	for (size_t i = 0; i < facts_exp.n; i++) {
		char *eq = strchr(facts_exp.v[i], '=');
		if (!eq) {
			fail("bad fact expectation %s", facts_exp.v[i]);
			continue;
		}
		*eq = '\0';
		char *key = str_trim(facts_exp.v[i]), *want = str_trim(eq + 1);
		const cJSON *ft = doc ? find_fact(doc, key) : NULL;
		const cJSON *val = cJSON_GetObjectItemCaseSensitive(ft, "value");
		const cJSON *state = cJSON_GetObjectItemCaseSensitive(ft, "state");
		char have[512] = "";
		if (cJSON_IsString(val))
			str_copy(have, sizeof(have), val->valuestring);
		else if (cJSON_IsBool(val))
			str_copy(have, sizeof(have), cJSON_IsTrue(val) ? "true" : "false");
		else if (cJSON_IsNumber(val))
			snprintf(have, sizeof(have), "%.17g", val->valuedouble);
		else if (cJSON_IsString(state))
			snprintf(have, sizeof(have), "(%s)", state->valuestring);
		if (!ft)
			fail("fact %s expected, not collected", key);
		else if (strcmp(have, want) != 0)
			fail("fact %s = %s, expected %s", key, have, want);
	}
	for (size_t i = 0; i < contains.n; i++)
		if (!strstr(r.out, contains.v[i]))
			fail("output does not contain '%s'", contains.v[i]);
	for (size_t i = 0; i < lacks.n; i++)
		if (strstr(r.out, lacks.v[i]))
			fail("output contains '%s', which it must not", lacks.v[i]);
	for (size_t i = 0; i < err_contains.n; i++)
		if (!strstr(r.err, err_contains.v[i]))
			fail("stderr does not contain '%s'", err_contains.v[i]);
	for (size_t i = 0; i < signatures.n; i++)
		if (doc && !explain_error(doc, signatures.v[i]))
			fail("error signature %s not recognised", signatures.v[i]);
	for (size_t i = 0; i < holds.n; i++) {
		const char *cst = explain_cause_state(doc, holds.v[i]);
		if (!cst || strcmp(cst, "holds") != 0)
			fail("cause %s: %s, expected it to hold", holds.v[i], cst ? cst : "not a candidate of any error recognised");
	}
	for (size_t i = 0; i < ruled_out.n; i++) {
		const char *cst = explain_cause_state(doc, ruled_out.v[i]);
		if (!cst || strcmp(cst, "ruled-out") != 0)
			fail("cause %s: %s, expected it ruled out", ruled_out.v[i], cst ? cst : "not a candidate of any error recognised");
	}
	if (none_left)
		check_none_left(root);
	if (check_keys) {
		FILE *kf = fopen(keys_log, "r");
		char unknown[2048];
		size_t klen = kf ? fread(unknown, 1, sizeof(unknown) - 1, kf) : 0;
		unknown[klen] = '\0';
		if (kf)
			fclose(kf);
		if (klen)
			fail("fact keys the registry (src/core/factkeys.def) lacks, or values of another type than its:\n%s", unknown);
	}
	free(keys_log);
	if (failures) {
		printf("--- stdout (first 4000 bytes)\n%.4000s\n--- stderr\n%.2000s\n", r.out, r.err);
	}
	cJSON_Delete(doc);
	proc_result_free(&r);
	char *rm[] = {"rm", "-rf", tmpl, NULL};
	run_simple(rm);
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
