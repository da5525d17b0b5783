/*
 * /etc/ld.so.conf as ldconfig reads it (elf/ldconfig.c parse_conf): one directory a line, '#'
 * starts a comment, `include PATTERN...` reads the files a glob matches (sorted, as glob(3)
 * returns them; a relative pattern is relative to the including file's directory), `hwcap`
 * lines are obsolete and ignored.
 */
#include <ctype.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/sysroot.h"
#include "loader/loader.h"

#define MAX_DEPTH 8
#define MAX_FILES 1024
#define MAX_DIRS 4096
#define MAX_CONF_BYTES (1u << 20)

/* Strips trailing slashes ("/usr/lib/" -> "/usr/lib"), keeping "/". */
static void strip_slashes(char *s)
{
	size_t n = strlen(s);
	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

static void add_dir(strlist *dirs, const char *d)
{
	if (dirs->n >= MAX_DIRS)
		return;
	char *c = xstrdup(d);
	strip_slashes(c);
	if (sl_contains(dirs, c))
		free(c);
	else
		sl_push_owned(dirs, c);
}

typedef void (*include_fn)(void *arg, const char *pattern);

/* Parses lines; directories go to dirs, each include pattern to on_include at its place, so that
 * included directories keep ldconfig's order. */
static void parse_lines(const char *text, size_t len, strlist *dirs, include_fn on_include, void *arg)
{
	size_t i = 0;
	while (i < len) {
		size_t e = i;
		while (e < len && text[e] != '\n')
			e++;
		/* embedded NULs end the line early (xstrndup copies up to the first one) */
		char *line = xstrndup(text + i, e - i);
		i = e + 1;
		char *hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		char *t = str_trim(line);
		if (!*t) {
			free(line);
			continue;
		}
		if (strncmp(t, "include", 7) == 0 && isblank((unsigned char)t[7])) {
			strlist pats = {0};
			sl_split(&pats, t + 8, " \t", false);
			for (size_t k = 0; k < pats.n && on_include; k++)
				on_include(arg, pats.v[k]);
			sl_free(&pats);
		} else if (strncasecmp(t, "hwcap", 5) == 0 && isblank((unsigned char)t[5])) {
			/* obsolete, ignored by ldconfig since glibc 2.26's hwcaps rework */
		} else if (t[0] == '/') {
			/* "dir=TYPE" (libc5 era) carries a type suffix: keep the directory */
			char *eq = strchr(t, '=');
			if (eq)
				*eq = '\0';
			char *sp = t + strcspn(t, " \t");
			*sp = '\0';
			add_dir(dirs, t);
		}
		/* relative directories: ldconfig warns and ignores them */
		free(line);
	}
}

static void collect_include(void *arg, const char *pattern)
{
	sl_push((strlist *)arg, pattern);
}

void ldconf_parse_text(const char *text, size_t len, strlist *dirs, strlist *includes)
{
	parse_lines(text, len, dirs, includes ? collect_include : NULL, includes);
}

typedef struct conf_walk {
	strlist *dirs;
	strlist *problems;
	strlist visited;
	int files;
} conf_walk;

static void note(conf_walk *w, char *msg)
{
	if (w->problems)
		sl_push_owned(w->problems, msg);
	else
		free(msg);
}

static int glob_err(const char *epath, int eerrno)
{
	(void)epath;
	(void)eerrno;
	return 0; /* keep going */
}

static int read_conf(conf_walk *w, const char *abs, int depth);

struct include_ctx {
	conf_walk *w;
	int depth;
	char base[PATH_MAX];
};

static void follow_include(void *arg, const char *inc)
{
	struct include_ctx *ic = arg;
	char pattern[PATH_MAX], hostpat[PATH_MAX];
	/* an include too long for a path matches nothing (glob gets ENAMETOOLONG): never a cut one */
	if (!str_fmt_whole(pattern, sizeof(pattern), "%s%s%s", inc[0] == '/' ? "" : strcmp(ic->base, "/") == 0 ? "" : ic->base,
			   inc[0] == '/' ? "" : "/", inc))
		return;
	sysroot_path(hostpat, sizeof(hostpat), pattern);
	glob_t g;
	memset(&g, 0, sizeof(g));
	/* GLOB_NOMATCH: an include of an empty directory is normal (ldconfig says nothing) */
	if (glob(hostpat, 0, glob_err, &g) == 0)
		for (size_t k = 0; k < g.gl_pathc; k++)
			read_conf(ic->w, sysroot_strip(g.gl_pathv[k]), ic->depth + 1);
	globfree(&g);
}

static int read_conf(conf_walk *w, const char *abs, int depth)
{
	if (depth > MAX_DEPTH) {
		note(w, xasprintf("%s: includes nested deeper than %d levels, not followed", abs, MAX_DEPTH));
		return 0;
	}
	if (sl_contains(&w->visited, abs)) {
		note(w, xasprintf("%s: included twice (an include loop), read once", abs));
		return 0;
	}
	if (++w->files > MAX_FILES) {
		if (w->files == MAX_FILES + 1)
			note(w, xasprintf("more than %d ld.so.conf files, the rest not read", MAX_FILES));
		return 0;
	}
	sl_push(&w->visited, abs);
	char *buf;
	size_t len;
	bool truncated;
	int rc = sysroot_read(abs, MAX_CONF_BYTES, &buf, &len, &truncated);
	if (rc < 0) {
		note(w, xasprintf("%s: %s", abs, strerror(-rc)));
		return -1;
	}
	if (truncated)
		note(w, xasprintf("%s: larger than 1 MiB, the rest not read", abs));
	/* the including file's directory, for relative patterns */
	struct include_ctx ic = {w, depth, ""};
	str_copy(ic.base, sizeof(ic.base), abs);
	char *slash = strrchr(ic.base, '/');
	if (slash)
		slash[slash == ic.base ? 1 : 0] = '\0';
	parse_lines(buf, len, w->dirs, follow_include, &ic);
	free(buf);
	return 0;
}

int ldconf_load(const char *abs_path, strlist *dirs, strlist *problems)
{
	conf_walk w = {dirs, problems, {0}, 0};
	int rc = read_conf(&w, abs_path ? abs_path : "/etc/ld.so.conf", 0);
	sl_free(&w.visited);
	return rc < 0 ? -1 : (int)dirs->n;
}
