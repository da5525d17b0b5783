/* Option tables into getopt_long's arrays and --help's text (core/options.h). */
#include "core/options.h"

#include <stdlib.h>
#include <string.h>

#include "core/cli.h"
#include "core/envvars.h"
#include "core/util.h"

static bool is_heading(const gv_option *o)
{
	return o->name[0] == '\0';
}

static bool has_short(const gv_option *o)
{
	return o->id > 0 && o->id < 128 && ((o->id >= 'a' && o->id <= 'z') || (o->id >= 'A' && o->id <= 'Z'));
}

static bool takes_value(const gv_option *o)
{
	return o->arg && !(o->flags & GV_OPT_OPERANDS);
}

void gv_getopt_arrays(const gv_command_cli *c, struct option *longopts, char *shortopts)
{
	size_t n = 0, s = 0;
	for (const char *p = c->getopt_prefix ? c->getopt_prefix : ""; *p; p++)
		shortopts[s++] = *p;
	shortopts[s++] = ':';
	for (const gv_option *o = c->opts; o->name && n < GV_OPTIONS_MAX; o++) {
		if (is_heading(o))
			continue;
		longopts[n++] = (struct option){o->name, takes_value(o) ? required_argument : no_argument, NULL, o->id};
		/* among the s characters written so far: shortopts is not terminated until the end, and
		 * what lies beyond them is whatever the caller's stack held (an 'o' there once made
		 * `report -o` an unknown option under ASan) */
		if (has_short(o) && !memchr(shortopts, o->id, s)) {
			shortopts[s++] = (char)o->id;
			if (takes_value(o))
				shortopts[s++] = ':';
		}
	}
	longopts[n] = (struct option){NULL, 0, NULL, 0};
	shortopts[s] = '\0';
}

const gv_option *gv_option_by_id(const gv_command_cli *c, int id)
{
	for (const gv_option *o = c->opts; o->name; o++)
		if (!is_heading(o) && o->id == id)
			return o;
	return NULL;
}

const gv_subcommand *gv_subcommand_find(const gv_command_cli *c, const char *name)
{
	for (const gv_subcommand *s = c->subs; s && s->name; s++)
		if (s->run && name && strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

const char *gv_option_word(const gv_option *o, size_t i)
{
	if (o->word_at)
		return o->word_at(i);
	if (!o->words)
		return NULL;
	for (size_t k = 0; k <= i; k++)
		if (!o->words[k])
			return NULL;
	return o->words[i];
}

static bool is_word(const gv_option *o, const char *w, size_t len)
{
	const char *x;
	for (size_t i = 0; (x = gv_option_word(o, i)); i++)
		if (strlen(x) == len && strncmp(x, w, len) == 0)
			return true;
	return false;
}

const char *gv_option_words_text(const gv_option *o, const char *sep, char *buf, size_t size)
{
	strbuf sb;
	sb_init(&sb);
	const char *x;
	for (size_t i = 0; (x = gv_option_word(o, i)); i++)
		sb_addf(&sb, "%s%s", i ? sep : "", x);
	str_copy(buf, size, sb.len ? sb.buf : "");
	sb_free(&sb);
	return buf;
}

bool gv_option_check(const gv_option *o, const char *value)
{
	const char *v = value ? value : "";
	bool list = o->kind == GV_VAL_LIST;
	bool ok = *v != '\0';
	const char *bad = v;
	size_t badlen = strlen(v);
	while (ok && *v) {
		size_t len = list ? strcspn(v, ",") : strlen(v);
		if (!is_word(o, v, len)) {
			ok = false;
			bad = v;
			badlen = len;
			break;
		}
		v += len;
		if (*v == ',')
			v++;
	}
	if (!ok) {
		/* "a, b or c" */
		strbuf w;
		sb_init(&w);
		const char *x;
		size_t n = 0;
		while (gv_option_word(o, n))
			n++;
		for (size_t i = 0; (x = gv_option_word(o, i)); i++)
			sb_addf(&w, "%s%s", i == 0 ? "" : i + 1 == n ? " or " : ", ", x);
		gv_error("--%s: expected %s%s, got '%.*s'", o->name, list ? "a comma-separated list of " : "", w.buf ? w.buf : "",
			 (int)badlen, bad);
		sb_free(&w);
	}
	return ok;
}

const char *gv_option_left(const gv_option *o, char *buf, size_t size)
{
	if (has_short(o))
		snprintf(buf, size, "-%c, --%s%s%s", o->id, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	else
		snprintf(buf, size, "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
	return buf;
}

const char *gv_option_help(const gv_option *o, char *buf, size_t size)
{
	const char *h = o->help ? o->help : "";
	const char *at = strstr(h, "{values}");
	if (!at) {
		str_copy(buf, size, h);
		return buf;
	}
	char words[1024];
	gv_option_words_text(o, ", ", words, sizeof(words));
	snprintf(buf, size, "%.*s%s%s", (int)(at - h), h, words, at + strlen("{values}"));
	return buf;
}

/* One entry: left column, then the help wrapped at GV_HELP_WIDTH, continuation lines at col. A
 * paragraph of the help (after a newline) that starts with spaces is kept as it is (an example
 * line); the others are filled. */
static void put_entry(strbuf *sb, const char *left, const char *help, size_t col)
{
	size_t pos = 2 + strlen(left);
	sb_addf(sb, "  %s", left);
	if (!*help) {
		sb_addc(sb, '\n');
		return;
	}
	bool first = true;
	const char *p = help;
	for (;;) {
		size_t plen = strcspn(p, "\n");
		if (!first || pos + 2 > col) { /* a new line at col */
			sb_addc(sb, '\n');
			pos = 0;
		}
		while (pos < col) {
			sb_addc(sb, ' ');
			pos++;
		}
		if (p[0] == ' ') { /* verbatim */
			sb_addn(sb, p, plen);
		} else {
			size_t i = 0, linelen = 0;
			while (i < plen) {
				while (i < plen && p[i] == ' ')
					i++;
				size_t w = i;
				while (w < plen && p[w] != ' ')
					w++;
				if (w == i)
					break;
				if (linelen && col + linelen + 1 + (w - i) > GV_HELP_WIDTH) {
					sb_addc(sb, '\n');
					for (size_t k = 0; k < col; k++)
						sb_addc(sb, ' ');
					linelen = 0;
				}
				if (linelen) {
					sb_addc(sb, ' ');
					linelen++;
				}
				sb_addn(sb, p + i, w - i);
				linelen += w - i;
				i = w;
			}
		}
		first = false;
		p += plen;
		if (*p == '\n')
			p++;
		else
			break;
	}
	sb_addc(sb, '\n');
}

/* The column the help texts start at: past the widest left column that is not too wide. */
#define LEFT_MAX 26
static size_t help_column(const gv_command_cli *c)
{
	size_t w = 12;
	char left[256];
	for (const gv_option *o = c->opts; o->name; o++) {
		if (is_heading(o) || (o->flags & GV_OPT_HIDDEN))
			continue;
		size_t l = strlen(gv_option_left(o, left, sizeof(left)));
		if (l <= LEFT_MAX && l > w)
			w = l;
	}
	for (const gv_subcommand *s = c->subs; s && s->name; s++) {
		size_t l = strlen(s->name) + (s->args ? 1 + strlen(s->args) : 0);
		if (l <= LEFT_MAX && l > w)
			w = l;
	}
	return 2 + w + 2;
}

static char *build_usage(const gv_command_cli *c)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, c->head);
	size_t col = help_column(c);
	bool any = false;
	char left[256];
	static char help[4096];
	if (c->subs) {
		if (c->subs_title) {
			sb_addf(&sb, "%s\n", c->subs_title);
		}
		for (const gv_subcommand *s = c->subs; s->name; s++) {
			snprintf(left, sizeof(left), "%s%s%s", s->name, s->args ? " " : "", s->args ? s->args : "");
			put_entry(&sb, left, s->help ? s->help : "", col);
		}
		any = true;
	}
	for (const gv_option *o = c->opts; o->name; o++) {
		if (o->flags & GV_OPT_HIDDEN)
			continue;
		if (is_heading(o)) {
			sb_addf(&sb, "%s%s\n", any ? "\n" : "", o->help);
			any = true;
			continue;
		}
		put_entry(&sb, gv_option_left(o, left, sizeof(left)), gv_option_help(o, help, sizeof(help)), col);
		any = true;
	}
	/* the environment variables that configure this command */
	size_t ecol = 0;
	for (size_t i = 0; i < gv_nenvvars; i++)
		if (gv_envvars[i].kind == GV_ENV_CONFIG && gv_envvar_for(&gv_envvars[i], c->name) && strlen(gv_envvars[i].name) + 4 > ecol)
			ecol = strlen(gv_envvars[i].name) + 4;
	if (ecol) {
		sb_add(&sb, "\nenvironment\n");
		for (size_t i = 0; i < gv_nenvvars; i++)
			if (gv_envvars[i].kind == GV_ENV_CONFIG && gv_envvar_for(&gv_envvars[i], c->name))
				put_entry(&sb, gv_envvars[i].name, gv_envvars[i].help, ecol);
	}
	sb_add(&sb, c->tail ? c->tail : "");
	if (c->help_more) {
		char *more = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&more, &len);
		if (mf) {
			c->help_more(mf);
			fclose(mf);
			sb_addn(&sb, more, len);
			free(more);
		}
	}
	return sb_steal(&sb);
}

const char *gv_usage(const gv_command_cli *c)
{
	static struct {
		const gv_command_cli *c;
		char *text;
	} cache[32];
	size_t i = 0;
	for (; i < GV_ARRAY_LEN(cache) && cache[i].c; i++)
		if (cache[i].c == c)
			return cache[i].text;
	char *t = build_usage(c);
	if (i < GV_ARRAY_LEN(cache)) {
		cache[i].c = c;
		cache[i].text = t;
	}
	return t; /* kept until exit (a table past the cache's room leaks one text per call) */
}
