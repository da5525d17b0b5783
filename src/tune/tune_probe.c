#include "tune/tune_probe.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/atomicfile.h"
#include "core/proc_stream.h"
#include "kb/kb.h"

enum {
	MAX_STDOUT = 16 << 20,    /* the probe's document: a few tens of KiB in practice */
	MAX_LINE = 256 << 10,     /* one stderr line */
	MAX_RESULTS = 4096,       /* RESULT lines kept */
	MAX_RESULT_BYTES = 16 << 20,
	TAIL_LINES = 40,
	GRACE_MS = 10000,         /* after SIGINT/SIGTERM: the probe writes what finished */
	STARTUP_SLACK_S = 30,     /* the probe stops itself at its budget; this is for the rest */
};

/* ---- utilization marks ---- */

void tune_util_init(tune_util_log *l)
{
	memset(l, 0, sizeof(*l));
	l->open = -1;
}

void tune_util_begin(tune_util_log *l, int id)
{
	if (l->n >= 100000)
		return;
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 32;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	tune_util_mark *m = &l->v[l->n];
	memset(m, 0, sizeof(*m));
	m->id = id;
	l->open = (long)l->n++;
}

void tune_util_end(tune_util_log *l, int id)
{
	if (l->open >= 0 && l->v[l->open].id == id)
		l->open = -1;
}

void tune_util_sample(tune_util_log *l, double pct)
{
	if (l->open < 0 || !isfinite(pct))
		return;
	tune_util_mark *m = &l->v[l->open];
	m->sum += pct;
	if (pct > m->max)
		m->max = pct;
	m->n++;
}

bool tune_util_mean(const tune_util_log *l, int id, double *mean)
{
	/* the last mark with this id counts (ids are unique in one run) */
	for (size_t i = l->n; i-- > 0;)
		if (l->v[i].id == id) {
			if (l->v[i].n == 0)
				return false;
			*mean = l->v[i].sum / l->v[i].n;
			return true;
		}
	return false;
}

void tune_util_apply(const tune_util_log *l, tune_report *r)
{
	double m;
	for (size_t i = 0; i < r->nruns; i++)
		if (r->runs[i].id > 0 && tune_util_mean(l, r->runs[i].id, &m))
			r->runs[i].gpu_util = m;
	for (size_t i = 0; i < r->npipes; i++)
		if (r->pipes[i].id > 0 && tune_util_mean(l, r->pipes[i].id, &m))
			r->pipes[i].gpu_util = m;
}

void tune_util_free(tune_util_log *l)
{
	free(l->v);
	tune_util_init(l);
}

/* ---- the stderr protocol ---- */

void tune_stream_init(tune_stream *s)
{
	memset(s, 0, sizeof(*s));
	tune_util_init(&s->util);
}

void tune_stream_free(tune_stream *s)
{
	sl_free(&s->results);
	sl_free(&s->tail);
	tune_util_free(&s->util);
}

static void keep_tail(tune_stream *s, const char *line)
{
	s->free_lines++;
	if (s->tail.n >= TAIL_LINES) {
		free(s->tail.v[0]);
		memmove(s->tail.v, s->tail.v + 1, (s->tail.n - 1) * sizeof(char *));
		s->tail.n--;
	}
	char *c = xstrndup(line, strnlen(line, 400));
	str_sanitize(c);
	sl_push_owned(&s->tail, c);
}

static bool parse_int(const char *p, int *out, const char **end)
{
	char *e;
	errno = 0;
	long v = strtol(p, &e, 10);
	if (e == p || errno || v < 0 || v > 1000000000)
		return false;
	*out = (int)v;
	if (end)
		*end = e;
	return true;
}

int tune_stream_line(tune_stream *s, const char *line)
{
	if (str_starts(line, "PROGRESS ")) {
		int i, n;
		const char *p = line + 9, *e;
		if (parse_int(p, &i, &e) && *e == '/' && parse_int(e + 1, &n, &e)) {
			s->step = i;
			s->steps = n;
			while (*e == ' ')
				e++;
			str_copy(s->label, sizeof(s->label), e);
			str_sanitize(s->label);
			return 1;
		}
	} else if (str_starts(line, "MARK begin ")) {
		int id;
		if (parse_int(line + 11, &id, NULL))
			tune_util_begin(&s->util, id);
		return 0;
	} else if (str_starts(line, "MARK end ")) {
		int id;
		if (parse_int(line + 9, &id, NULL))
			tune_util_end(&s->util, id);
		return 0;
	} else if (str_starts(line, "RESULT {")) {
		const char *json = line + 7;
		size_t len = strlen(json);
		if (s->results.n < MAX_RESULTS && s->results_bytes + len <= MAX_RESULT_BYTES) {
			sl_push(&s->results, json);
			s->results_bytes += len;
		}
		if (strstr(json, "\"type\": \"env\"") || strstr(json, "\"type\":\"env\"")) {
			cJSON *o = cJSON_Parse(json);
			const cJSON *u = cJSON_GetObjectItemCaseSensitive(o, "gpu_uuid");
			bool got = cJSON_IsString(u) && u->valuestring;
			if (got)
				str_copy(s->gpu_uuid, sizeof(s->gpu_uuid), u->valuestring);
			cJSON_Delete(o);
			return got ? 2 : 0;
		}
		return 0;
	}
	keep_tail(s, line);
	return 0;
}

char *tune_stream_tail(const tune_stream *s, size_t max_lines)
{
	strbuf sb;
	sb_init(&sb);
	size_t from = s->tail.n > max_lines ? s->tail.n - max_lines : 0;
	for (size_t i = from; i < s->tail.n; i++) {
		if (sb.len)
			sb_addc(&sb, '\n');
		sb_add(&sb, s->tail.v[i]);
	}
	return sb_steal(&sb);
}

/* ---- the run ---- */

typedef struct run_ctx {
	tune_stream st;
	const tune_probe_opts *o;
	double t0;
	bool drawn;
	int ticks;
} run_ctx;

static void draw_progress(run_ctx *c)
{
	if (!c->o->progress)
		return;
	int el = (int)(now_seconds() - c->t0);
	int bud = (int)c->o->budget_s;
	if (c->st.steps > 0)
		fprintf(stderr, "\r\033[Ktune [%d/%d] %.60s  %d:%02d of %d:%02d", c->st.step, c->st.steps, c->st.label, el / 60,
			el % 60, bud / 60, bud % 60);
	else
		fprintf(stderr, "\r\033[Ktune: starting Python and importing torch  %d:%02d", el / 60, el % 60);
	fflush(stderr);
	c->drawn = true;
}

static void clear_progress(run_ctx *c)
{
	if (c->drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		c->drawn = false;
	}
}

static void on_line(void *ctx, const char *line)
{
	run_ctx *c = ctx;
	size_t before = c->st.free_lines;
	int kind = tune_stream_line(&c->st, line);
	if (kind == 1)
		draw_progress(c);
	else if (kind == 2 && c->o->sampler)
		tune_sampler_select(c->o->sampler, c->st.gpu_uuid);
	if (c->o->echo && (c->st.free_lines != before || str_starts(line, "PROGRESS"))) {
		bool was = c->drawn;
		clear_progress(c);
		fprintf(stderr, "%s\n", line);
		if (was)
			draw_progress(c);
	}
}

static void on_tick(void *ctx)
{
	run_ctx *c = ctx;
	double pct;
	if (c->o->sampler && c->st.util.open >= 0 && tune_sampler_read(c->o->sampler, &pct))
		tune_util_sample(&c->st.util, pct);
	if (++c->ticks % 5 == 0) /* the clock on the progress line, once a second */
		draw_progress(c);
}

/* ---- the probe's temporary directory ---- */

/* TMPDIR/gpuvet-tune-XXXXXX holds the script and a lock file that the run holds (flock) as long
 * as it lives: a directory whose lock nobody holds belongs to a run that died (SIGKILL, a power
 * cut) and is removed by the next run. */
#define TUNE_DIR_PREFIX "gpuvet-tune-"
#define TUNE_SCRIPT "tune_torch.py"
#define TUNE_LOCK "lock"
/* a directory without a lock file (made by a gpuvet before the lock, or by a run this instant
 * between mkdtemp and its lock) is stale only when older than this */
#define TUNE_UNLOCKED_STALE_S (24 * 3600)

static const char *tmp_dir(void)
{
	const char *tmp = getenv("TMPDIR");
	return tmp && tmp[0] == '/' ? tmp : "/tmp";
}

/* True when the directory holds only what a run writes: the script, the lock, a __pycache__. */
static bool only_run_files(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	bool ok = true;
	struct dirent *e;
	while (ok && (e = readdir(d)) != NULL)
		ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, TUNE_SCRIPT) ||
		     !strcmp(e->d_name, TUNE_LOCK) || !strcmp(e->d_name, "__pycache__");
	closedir(d);
	return ok;
}

/* Removes what a run writes in its directory (the script, the lock, a __pycache__ of files),
 * then the directory; touches nothing when it holds anything else. */
static bool remove_run_dir(int parent, const char *name, int dfd)
{
	static const char *const files[] = {TUNE_SCRIPT, TUNE_LOCK};
	if (!only_run_files(dfd))
		return false;
	int cache = openat(dfd, "__pycache__", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cache >= 0) {
		DIR *cd = fdopendir(cache);
		if (!cd) {
			close(cache);
			return false;
		}
		struct dirent *e;
		while ((e = readdir(cd)) != NULL)
			if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
				unlinkat(dirfd(cd), e->d_name, 0); /* a directory in there stays: so does all */
		closedir(cd);
		unlinkat(dfd, "__pycache__", AT_REMOVEDIR);
	}
	for (size_t i = 0; i < GV_ARRAY_LEN(files); i++)
		unlinkat(dfd, files[i], 0);
	return unlinkat(parent, name, AT_REMOVEDIR) == 0;
}

int tune_remove_stale_dirs(const char *tmp)
{
	DIR *d = opendir(tmp);
	if (!d)
		return 0;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (!str_starts(e->d_name, TUNE_DIR_PREFIX))
			continue;
		int dfd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		struct stat st;
		bool stale = false;
		int lock = -1;
		if (fstat(dfd, &st) == 0 && st.st_uid == geteuid()) {
			lock = openat(dfd, TUNE_LOCK, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
			if (lock >= 0)
				stale = flock(lock, LOCK_EX | LOCK_NB) == 0; /* nobody holds it: its run is gone */
			else if (errno == ENOENT)
				stale = difftime(time(NULL), st.st_mtime) > TUNE_UNLOCKED_STALE_S;
		}
		if (stale && remove_run_dir(dirfd(d), e->d_name, dfd))
			removed++;
		if (lock >= 0)
			close(lock);
		close(dfd);
	}
	closedir(d);
	return removed;
}

/* Writes the embedded script into a new private directory, locked for as long as this run
 * lives (*lock_out); returns the script's path. */
static char *write_script(char **dir_out, int *lock_out)
{
	size_t len = 0;
	const char *text = kb_blob(TUNE_SCRIPT, &len);
	if (!text)
		return NULL;
	char *dir = xasprintf("%s/" TUNE_DIR_PREFIX "XXXXXX", tmp_dir());
	if (!mkdtemp(dir)) {
		free(dir);
		return NULL;
	}
	char *lockpath = xasprintf("%s/" TUNE_LOCK, dir);
	int lock = open(lockpath, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	free(lockpath);
	if (lock >= 0 && flock(lock, LOCK_EX) != 0) {
		close(lock);
		lock = -1;
	}
	char *path = xasprintf("%s/" TUNE_SCRIPT, dir);
	int fd = lock >= 0 ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600) : -1;
	bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
	if (fd >= 0 && close(fd) != 0)
		ok = false;
	if (!ok) {
		int e = errno;
		unlink(path);
		char *lp = xasprintf("%s/" TUNE_LOCK, dir);
		unlink(lp);
		free(lp);
		if (lock >= 0)
			close(lock);
		rmdir(dir);
		free(path);
		free(dir);
		errno = e;
		return NULL;
	}
	*dir_out = dir;
	*lock_out = lock;
	return path;
}

static void remove_script(char *dir, char *path, int lock)
{
	if (path)
		unlink(path);
	if (dir) {
		/* Python keeps no bytecode of a script it runs, but be tidy about a stray cache */
		char *cache = xasprintf("%s/__pycache__", dir);
		rmdir(cache);
		free(cache);
		char *lp = xasprintf("%s/" TUNE_LOCK, dir);
		unlink(lp);
		free(lp);
		rmdir(dir);
	}
	if (lock >= 0)
		close(lock);
	free(path);
	free(dir);
}

/* The child's environment: ours, plus what keeps the probe well-behaved. */
static char **child_env(void)
{
	extern char **environ;
	static const char *const extra[] = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONUNBUFFERED=1", "NCCL_NVLS_ENABLE=0"};
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = xcalloc(n + GV_ARRAY_LEN(extra) + 1, sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		bool replaced = false;
		for (size_t j = 0; j < GV_ARRAY_LEN(extra); j++) {
			size_t eq = (size_t)(strchr(extra[j], '=') - extra[j]);
			if (strncmp(environ[i], extra[j], eq + 1) == 0)
				replaced = true;
		}
		if (!replaced)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < GV_ARRAY_LEN(extra); j++)
		env[k++] = (char *)extra[j];
	return env;
}

static void save_raw(const char *path, const proc_stream_result *pr)
{
	char err[PATH_MAX + 256];
	if (!atomic_file_write(path, pr->out, pr->out_len, 0666, err, sizeof(err)))
		fprintf(stderr, "gpuvet: %s\n", err);
}

tune_report *tune_probe_run(const tune_probe_opts *o)
{
	char *dir = NULL;
	int lock = -1;
	tune_remove_stale_dirs(tmp_dir()); /* of runs killed before they could clean up */
	char *script = write_script(&dir, &lock);
	if (!script) {
		tune_report *r = tune_report_parse(NULL, 0, NULL);
		tune_report_set_status(r, "crashed", "cannot write the probe script to a temporary directory: %s",
				       strerror(errno));
		return r;
	}
	strlist argv = {0};
	sl_push(&argv, o->python);
	sl_push(&argv, script);
	sl_pushf(&argv, "--budget=%g", o->budget_s);
	for (size_t i = 0; o->args && i < o->args->n; i++)
		sl_push(&argv, o->args->v[i]);
	char **av = xcalloc(argv.n + 1, sizeof(char *));
	for (size_t i = 0; i < argv.n; i++)
		av[i] = argv.v[i];
	char **env = child_env();

	run_ctx c;
	memset(&c, 0, sizeof(c));
	tune_stream_init(&c.st);
	c.o = o;
	c.t0 = now_seconds();
	draw_progress(&c);
	proc_stream_opts po = {
		.argv = av,
		.env = env,
		.timeout_ms = (int)((o->budget_s + STARTUP_SLACK_S) * 1000),
		.grace_ms = GRACE_MS,
		.max_stdout = MAX_STDOUT,
		.max_line = MAX_LINE,
		.tick_ms = 200,
		.on_line = on_line,
		.on_tick = on_tick,
		.stop = o->stop,
		.ctx = &c,
	};
	proc_stream_result pr;
	int rc = proc_stream_run(&po, &pr);
	clear_progress(&c);
	if (o->save_raw && rc == 0)
		save_raw(o->save_raw, &pr);

	tune_report *r = tune_report_parse(pr.out, pr.out_len, &c.st.results);
	tune_util_apply(&c.st.util, r);
	char *tail = tune_stream_tail(&c.st, 6);
	if (rc != 0) {
		tune_report_set_status(r, "no-python", "cannot run %s: %s%s", o->python, strerror(pr.spawn_errno),
				       pr.spawn_errno == ENOENT ? " (give the interpreter with --python PATH)" : "");
	} else if (pr.status == 2 && !r->env.torch && r->from_lines) {
		tune_report_set_status(r, "usage", "the probe rejected its arguments: %s", tail);
	} else if (r->from_lines) {
		/* no document: say why, and keep what the RESULT lines told */
		const char *how = pr.interrupted ? "interrupted" : pr.timed_out ? "timeout" : "crashed";
		char what[96];
		if (pr.signal)
			snprintf(what, sizeof(what), "killed by signal %d", pr.signal);
		else
			snprintf(what, sizeof(what), "exit status %d", pr.status);
		tune_report_set_status(r, how, "%s %s without its report (%s)%s%s%s", o->python,
				       pr.interrupted ? "was stopped" : pr.timed_out ? "ran past its time limit" : "ended",
				       what, r->nruns ? "; the steps it finished are shown" : "", *tail ? ": " : "", tail);
	} else if (pr.truncated) {
		tune_report_set_status(r, "unreadable", "the probe's output went over %d MiB", MAX_STDOUT >> 20);
	}
	free(tail);
	proc_stream_result_free(&pr);
	tune_stream_free(&c.st);
	free(env);
	free(av);
	sl_free(&argv);
	remove_script(dir, script, lock);
	return r;
}

/* ---- the interpreter ---- */

static char *env_python(const char *var)
{
	const char *dir = getenv(var);
	if (!dir || !*dir)
		return NULL;
	static const char *const names[] = {"python", "python3"};
	for (size_t i = 0; i < GV_ARRAY_LEN(names); i++) {
		char *p = xasprintf("%s/bin/%s", dir, names[i]);
		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

char *tune_pick_python(const char *opt, const char **why)
{
	if (opt && *opt) {
		*why = "--python";
		return xstrdup(opt);
	}
	char *p = env_python("VIRTUAL_ENV");
	if (p) {
		*why = "the active virtualenv (VIRTUAL_ENV)";
		return p;
	}
	p = env_python("CONDA_PREFIX");
	if (p) {
		*why = "the active conda environment (CONDA_PREFIX)";
		return p;
	}
	*why = "python3 on PATH";
	return xstrdup("python3");
}
