/*
 * gpuvet_gen: the man page's generated sections and the bash, zsh and fish completions, from the
 * tables the program itself parses with: the command table and each command's option table
 * (cmd/commands.c, core/options.h), the environment table (core/envvars.c), the rules and diag's
 * findings.
 *
 *   gpuvet_gen --write SRCDIR   rewrite man/gpuvet.1's generated sections and the completions
 *   gpuvet_gen --check SRCDIR   exit 1, naming the file, when a checked-in one differs
 *   gpuvet_gen --list-env       the environment table's names, one a line
 *   gpuvet_gen --list-options   every command's options, "COMMAND --NAME" one a line
 *
 * `make generate` runs --write; the cli/generated test runs --check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/envvars.h"
#include "core/options.h"
#include "core/util.h"
#include "diag/diag.h"
#include "rules/rules.h"

/* ---- text helpers ---- */

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

/* roff: backslashes, minus signs, a leading dot or quote */
static void roff_add(strbuf *sb, const char *s, size_t n, bool line_start)
{
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (i == 0 && line_start && (c == '.' || c == '\''))
			sb_add(sb, "\\&");
		if (c == '\\')
			sb_add(sb, "\\e");
		else if (c == '-')
			sb_add(sb, "\\-");
		else
			sb_addc(sb, c);
	}
}

/* Help-style text (lines; blank lines part paragraphs; indented lines are kept as they are)
 * into roff. */
static void roff_text(strbuf *sb, const char *text)
{
	bool verbatim = false, para_open = false;
	const char *p = text;
	while (*p) {
		size_t n = strcspn(p, "\n");
		bool blank = n == 0;
		bool indented = n > 0 && p[0] == ' ';
		if (blank) {
			if (verbatim) {
				sb_add(sb, ".fi\n.RE\n");
				verbatim = false;
			}
			para_open = false;
		} else if (indented) {
			if (!verbatim) {
				sb_add(sb, para_open ? ".RS\n.nf\n" : ".PP\n.RS\n.nf\n");
				verbatim = true;
				para_open = true;
			}
			size_t skip = 0;
			while (skip < 2 && p[skip] == ' ')
				skip++;
			roff_add(sb, p + skip, n - skip, true);
			sb_addc(sb, '\n');
		} else {
			if (verbatim) {
				sb_add(sb, ".fi\n.RE\n");
				verbatim = false;
			}
			if (!para_open) {
				sb_add(sb, ".PP\n");
				para_open = true;
			}
			roff_add(sb, p, n, true);
			sb_addc(sb, '\n');
		}
		p += n;
		if (*p == '\n')
			p++;
	}
	if (verbatim)
		sb_add(sb, ".fi\n.RE\n");
}

/* A one-line description for the completions: the help up to its first clause, at most 70
 * characters, without brackets. */
static void short_desc(const char *help, char *out, size_t size)
{
	size_t n = 0;
	const char *h = help ? help : "";
	char buf[4096];
	h = h == NULL ? "" : h;
	str_copy(buf, sizeof(buf), h);
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	for (const char *p = buf; *p && n + 1 < size; p++) {
		if ((*p == ';' || *p == ':' || (*p == ' ' && p[1] == '(')) && n > 12)
			break;
		if (*p == '[' || *p == ']' || *p == '`')
			continue;
		out[n++] = *p;
	}
	out[n] = '\0';
	if (n > 70) {
		char *cut = out + 67;
		while (cut > out && *cut != ' ')
			cut--;
		strcpy(cut, "...");
	}
}

static void help_of(const gv_option *o, char *buf, size_t size)
{
	gv_option_help(o, buf, size);
}

/* the words of a fixed set, joined by sep */
static void words_of(const gv_option *o, const char *sep, char *buf, size_t size)
{
	gv_option_words_text(o, sep, buf, size);
}

static const char *kind_name(gv_value_kind k)
{
	switch (k) {
	case GV_VAL_FILE: return "file";
	case GV_VAL_DIR: return "dir";
	case GV_VAL_WORD: return "word";
	case GV_VAL_LIST: return "list";
	case GV_VAL_FINDING: return "finding";
	case GV_VAL_COMMAND: return "command";
	default: return "none";
	}
}

/* ---- the man page ---- */

static void man_option(strbuf *sb, const gv_option *o)
{
	sb_add(sb, ".TP\n");
	if (has_short(o))
		sb_addf(sb, "\\fB\\-%c\\fR, ", o->id);
	sb_add(sb, "\\fB");
	roff_add(sb, "--", 2, false);
	roff_add(sb, o->name, strlen(o->name), false);
	sb_add(sb, "\\fR");
	if (o->arg) {
		sb_add(sb, " \\fI");
		roff_add(sb, o->arg, strlen(o->arg), false);
		sb_add(sb, "\\fR");
	}
	sb_addc(sb, '\n');
	char help[4096];
	help_of(o, help, sizeof(help));
	const char *p = help;
	bool first = true;
	while (*p) {
		size_t n = strcspn(p, "\n");
		if (!first)
			sb_add(sb, ".br\n");
		roff_add(sb, p, n, true);
		sb_addc(sb, '\n');
		first = false;
		p += n;
		if (*p)
			p++;
	}
}

static void man_command(strbuf *sb, const gv_command_cli *c)
{
	sb_addf(sb, ".SS %s\n", c->name);
	/* the usage lines, then the prose */
	const char *head = c->head;
	const char *body = strstr(head, "\n\n");
	size_t ulen = body ? (size_t)(body - head) : strlen(head);
	sb_add(sb, ".nf\n");
	const char *p = head;
	while (p < head + ulen) {
		size_t n = strcspn(p, "\n");
		if (n > ulen - (size_t)(p - head))
			n = ulen - (size_t)(p - head);
		const char *line = p;
		if (str_starts(line, "usage: "))
			line += 7, n -= 7;
		else if (str_starts(line, "       "))
			line += 7, n -= 7;
		roff_add(sb, line, n, true);
		sb_addc(sb, '\n');
		p += (line - p) + n;
		if (*p == '\n')
			p++;
	}
	sb_add(sb, ".fi\n");
	if (body)
		roff_text(sb, body + 2);
	if (c->subs) {
		if (c->subs_title) {
			sb_add(sb, ".PP\n\\fI");
			roff_add(sb, c->subs_title, strlen(c->subs_title), false);
			sb_add(sb, "\\fR\n");
		}
		for (const gv_subcommand *s = c->subs; s->name; s++) {
			sb_add(sb, ".TP\n\\fB");
			roff_add(sb, s->name, strlen(s->name), false);
			sb_add(sb, "\\fR");
			if (s->args) {
				sb_add(sb, " \\fI");
				roff_add(sb, s->args, strlen(s->args), false);
				sb_add(sb, "\\fR");
			}
			sb_addc(sb, '\n');
			const char *h = s->help ? s->help : "";
			bool first = true;
			while (*h) {
				size_t n = strcspn(h, "\n");
				if (!first)
					sb_add(sb, ".br\n");
				roff_add(sb, h, n, true);
				sb_addc(sb, '\n');
				first = false;
				h += n;
				if (*h)
					h++;
			}
		}
	}
	for (const gv_option *o = c->opts; o->name; o++) {
		if (o->flags & GV_OPT_HIDDEN)
			continue;
		if (is_heading(o)) {
			sb_add(sb, ".PP\n\\fI");
			roff_add(sb, o->help, strlen(o->help), false);
			sb_add(sb, "\\fR\n");
			continue;
		}
		man_option(sb, o);
	}
	if (c->tail)
		roff_text(sb, c->tail);
	if (c->help_more) {
		char *more = NULL;
		size_t len = 0;
		FILE *mf = open_memstream(&more, &len);
		if (mf) {
			c->help_more(mf);
			fclose(mf);
			roff_text(sb, more);
			free(more);
		}
	}
}

static char *man_commands(void)
{
	strbuf sb;
	sb_init(&sb);
	for (size_t i = 0; i < gv_ncommands; i++)
		man_command(&sb, gv_commands[i].cli);
	return sb_steal(&sb);
}

static char *man_common(void)
{
	strbuf sb;
	sb_init(&sb);
	for (const gv_option *o = gpuvet_cli.opts; o->name; o++)
		if (!is_heading(o) && !(o->flags & GV_OPT_HIDDEN))
			man_option(&sb, o);
	return sb_steal(&sb);
}

static void man_env_list(strbuf *sb, gv_env_kind kind)
{
	for (size_t i = 0; i < gv_nenvvars; i++) {
		const gv_envvar *v = &gv_envvars[i];
		if (v->kind != kind)
			continue;
		sb_add(sb, ".TP\n.B ");
		roff_add(sb, v->name, strlen(v->name), false);
		sb_addc(sb, '\n');
		roff_add(sb, v->help, strlen(v->help), true);
		if (strcmp(v->commands, "gpuvet") == 0) {
			sb_add(sb, " (every command)\n");
		} else {
			sb_add(sb, " (");
			roff_add(sb, v->commands, strlen(v->commands), false);
			sb_add(sb, ")\n");
		}
	}
}

static char *man_environment(void)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "What configures gpuvet (the commands each one matters to in parentheses):\n");
	man_env_list(&sb, GV_ENV_CONFIG);
	sb_add(&sb, ".PP\nFor the test suite:\n");
	man_env_list(&sb, GV_ENV_TEST);
	sb_add(&sb, ".PP\nRead as facts of the machine (gpuvet check examines many more, docs/env.md):\n");
	man_env_list(&sb, GV_ENV_EXAMINED);
	return sb_steal(&sb);
}

static void man_finding(strbuf *sb, const char *id, const char *sev, const char *summary)
{
	sb_add(sb, ".TP\n.BR ");
	roff_add(sb, id, strlen(id), false);
	sb_addf(sb, " \" (%s)\"\n", sev);
	roff_add(sb, summary, strlen(summary), true);
	sb_addc(sb, '\n');
}

static char *man_findings(void)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "Every id that gpuvet check can report (gpuvet check \\-\\-list\\-rules; docs/findings.md explains each).\n");
	for (const rule *r = rules_first(); r; r = rules_next(r))
		man_finding(&sb, r->id, severity_name(r->sev), r->summary ? r->summary : "");
	sb_add(&sb, ".PP\nThe ids gpuvet diag can report (gpuvet diag \\-\\-list\\-findings; docs/diag.md):\n");
	for (int i = 0; i < DIAG_NFINDINGS; i++)
		man_finding(&sb, diag_findings[i].id, severity_name(diag_findings[i].sev), diag_findings[i].title);
	return sb_steal(&sb);
}

/* man/gpuvet.1 with every generated section replaced: the lines between
 * `.\" BEGIN GENERATED NAME` and `.\" END GENERATED NAME`. */
static char *man_page(const char *old, char **err)
{
	static const struct {
		const char *name;
		char *(*gen)(void);
	} sections[] = {
		{"commands", man_commands},
		{"findings", man_findings},
		{"common-options", man_common},
		{"environment", man_environment},
	};
	strbuf sb;
	sb_init(&sb);
	const char *p = old;
	for (size_t i = 0; i < GV_ARRAY_LEN(sections); i++) {
		char begin[128], end[128];
		snprintf(begin, sizeof(begin), ".\\\" BEGIN GENERATED %s", sections[i].name);
		snprintf(end, sizeof(end), ".\\\" END GENERATED %s", sections[i].name);
		const char *b = strstr(p, begin);
		const char *e = b ? strstr(b, end) : NULL;
		if (!b || !e) {
			*err = xasprintf("man/gpuvet.1 lacks the markers of the generated section %s (%s ... %s)", sections[i].name,
					 begin, end);
			sb_free(&sb);
			return NULL;
		}
		const char *after_begin = strchr(b, '\n');
		sb_addn(&sb, p, (size_t)(after_begin + 1 - p));
		sb_addf(&sb, ".\\\" (tools/gen_cli.c writes this section from the program's tables: make generate)\n");
		char *gen = sections[i].gen();
		sb_add(&sb, gen);
		free(gen);
		p = e;
	}
	sb_add(&sb, p);
	return sb_steal(&sb);
}

/* ---- bash ---- */

static void bash_value_case(strbuf *sb, const gv_command_cli *c, const char *indent)
{
	/* one case arm per kind of value, the option names joined */
	static const gv_value_kind kinds[] = {GV_VAL_FILE, GV_VAL_DIR, GV_VAL_FINDING, GV_VAL_TEXT};
	bool any = false;
	strbuf arms;
	sb_init(&arms);
	for (size_t k = 0; k < GV_ARRAY_LEN(kinds); k++) {
		strbuf names;
		sb_init(&names);
		for (const gv_option *o = c->opts; o->name; o++) {
			gv_value_kind kind = o->kind == GV_VAL_NUMBER ? GV_VAL_TEXT : o->kind;
			if (is_heading(o) || !takes_value(o) || kind != kinds[k] || (o->flags & GV_OPT_HIDDEN))
				continue;
			sb_addf(&names, "%s--%s", names.len ? " | " : "", o->name);
			if (has_short(o))
				sb_addf(&names, " | -%c", o->id);
		}
		if (names.len) {
			const char *action = kinds[k] == GV_VAL_FILE ? "_gpuvet_value file"
					     : kinds[k] == GV_VAL_DIR ? "_gpuvet_value dir"
					     : kinds[k] == GV_VAL_FINDING ? "_gpuvet_value finding"
									  : "COMPREPLY=()";
			sb_addf(&arms, "%s%s)\n%s\t%s\n%s\treturn\n%s\t;;\n", indent, names.buf, indent, action, indent, indent);
			any = true;
		}
		sb_free(&names);
	}
	for (const gv_option *o = c->opts; o->name; o++) {
		if (is_heading(o) || !takes_value(o) || (o->kind != GV_VAL_WORD && o->kind != GV_VAL_LIST))
			continue;
		char words[1024];
		words_of(o, " ", words, sizeof(words));
		sb_addf(&arms, "%s--%s", indent, o->name);
		if (has_short(o))
			sb_addf(&arms, " | -%c", o->id);
		sb_addf(&arms, ")\n%s\t_gpuvet_value %s %s\n%s\treturn\n%s\t;;\n", indent, kind_name(o->kind), words, indent, indent);
		any = true;
	}
	if (any)
		sb_addf(sb, "%scase $prev in\n%s%sesac\n", indent, arms.buf, indent);
	sb_free(&arms);
}

static void bash_opts_words(strbuf *sb, const gv_command_cli *c, bool with_values, const char *sep)
{
	bool first = true;
	for (const gv_option *o = c->opts; o->name; o++) {
		if (is_heading(o) || (o->flags & GV_OPT_HIDDEN))
			continue;
		if (with_values && !takes_value(o))
			continue;
		if (has_short(o)) {
			sb_addf(sb, "%s-%c", first ? "" : sep, o->id);
			first = false;
		}
		sb_addf(sb, "%s--%s", first ? "" : sep, o->name);
		first = false;
	}
}

static char *bash_completion(void)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "# bash completion for gpuvet                                  -*- shell-script -*-\n"
		    "# Generated by tools/gen_cli.c from the program's option tables (make generate): do not edit.\n"
		    "\n"
		    "# _gpuvet_value KIND [WORDS...]: the value of an option (cur is the word being completed)\n"
		    "_gpuvet_value()\n"
		    "{\n"
		    "\tlocal kind=$1 prefix=\"\"\n"
		    "\tshift\n"
		    "\tcase $kind in\n"
		    "\tfile) COMPREPLY=($(compgen -f -- \"$cur\")) ;;\n"
		    "\tdir) COMPREPLY=($(compgen -d -- \"$cur\")) ;;\n"
		    "\tword) COMPREPLY=($(compgen -W \"$*\" -- \"$cur\")) ;;\n"
		    "\tlist)\n"
		    "\t\t# comma-separated: complete the last item\n"
		    "\t\t[[ $cur == *,* ]] && prefix=${cur%,*},\n"
		    "\t\tCOMPREPLY=($(compgen -P \"$prefix\" -W \"$*\" -- \"${cur##*,}\"))\n"
		    "\t\t;;\n"
		    "\tfinding)\n"
		    "\t\t# !ID for a finding that must not appear: the ids come from --list-rules\n"
		    "\t\tlocal ids\n"
		    "\t\tids=$(\"${words[0]}\" check --list-rules 2>/dev/null | awk '{print \"!\" $1}')\n"
		    "\t\tCOMPREPLY=($(compgen -W \"$ids\" -- \"$cur\"))\n"
		    "\t\t;;\n"
		    "\t*) COMPREPLY=() ;;\n"
		    "\tesac\n"
		    "}\n"
		    "\n"
		    "_gpuvet()\n"
		    "{\n"
		    "\tlocal cur prev words cword split\n"
		    "\tif declare -F _init_completion >/dev/null 2>&1; then\n"
		    "\t\t_init_completion -s || return\n"
		    "\telse\n"
		    "\t\tcur=${COMP_WORDS[COMP_CWORD]}\n"
		    "\t\tprev=${COMP_WORDS[COMP_CWORD - 1]}\n"
		    "\t\twords=(\"${COMP_WORDS[@]}\")\n"
		    "\t\tcword=$COMP_CWORD\n"
		    "\t\t# --opt=value (readline splits at '=')\n"
		    "\t\tif [[ $prev == = && $cword -ge 2 ]]; then\n"
		    "\t\t\tprev=${COMP_WORDS[COMP_CWORD - 2]}\n"
		    "\t\telif [[ $cur == = ]]; then\n"
		    "\t\t\tcur=\"\"\n"
		    "\t\telif [[ $cur == --*=* ]]; then\n"
		    "\t\t\tprev=${cur%%=*}\n"
		    "\t\t\tcur=${cur#*=}\n"
		    "\t\tfi\n"
		    "\tfi\n");
	/* gpuvet's own options */
	sb_add(&sb, "\t# gpuvet's own options, before or after the command\n");
	bash_value_case(&sb, &gpuvet_cli, "\t");
	strbuf global_values, global_pattern, global_all;
	sb_init(&global_values);
	bash_opts_words(&global_values, &gpuvet_cli, true, " ");
	sb_init(&global_pattern);
	bash_opts_words(&global_pattern, &gpuvet_cli, true, " | ");
	sb_init(&global_all);
	bash_opts_words(&global_all, &gpuvet_cli, false, " ");
	sb_add(&sb, "\tlocal commands=\"");
	for (size_t i = 0; i < gv_ncommands; i++)
		sb_addf(&sb, "%s%s", i ? " " : "", gv_commands[i].cli->name);
	sb_add(&sb, "\"\n");
	sb_addf(&sb,
		"\tlocal cmd=\"\" at=0 i\n"
		"\tfor ((i = 1; i < cword; i++)); do\n"
		"\t\tcase ${words[i]} in\n"
		"\t\t%s) ((i++)) ;;\n"
		"\t\t-*) ;;\n"
		"\t\t*)\n"
		"\t\t\tcmd=${words[i]}\n"
		"\t\t\tat=$i\n"
		"\t\t\tbreak\n"
		"\t\t\t;;\n"
		"\t\tesac\n"
		"\tdone\n"
		"\tif [[ -z $cmd ]]; then\n"
		"\t\tif [[ $cur == -* ]]; then\n"
		"\t\t\tCOMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
		"\t\telse\n"
		"\t\t\tCOMPREPLY=($(compgen -W \"$commands\" -- \"$cur\"))\n"
		"\t\tfi\n"
		"\t\treturn\n"
		"\tfi\n",
		global_pattern.buf, global_all.buf);
	sb_add(&sb, "\t# the command's options, the options that take a value, its subcommands, its operands\n"
		    "\tlocal opts=\"\" valued=\"\" subs=\"\" operands=none\n"
		    "\tcase $cmd in\n");
	for (size_t i = 0; i < gv_ncommands; i++) {
		const gv_command_cli *c = gv_commands[i].cli;
		sb_addf(&sb, "\t%s)\n", c->name);
		bash_value_case(&sb, c, "\t\t");
		sb_add(&sb, "\t\topts=\"");
		bash_opts_words(&sb, c, false, " ");
		sb_add(&sb, "\"\n\t\tvalued=\"");
		bash_opts_words(&sb, c, true, " ");
		sb_add(&sb, "\"\n");
		if (c->subs) {
			sb_add(&sb, "\t\tsubs=\"");
			const char *last = NULL;
			bool first = true;
			for (const gv_subcommand *s = c->subs; s->name; s++) {
				bool dup = false;
				for (const gv_subcommand *t = c->subs; t < s; t++)
					dup |= strcmp(t->name, s->name) == 0;
				if (dup)
					continue;
				sb_addf(&sb, "%s%s", first ? "" : " ", s->name);
				first = false;
				last = s->name;
			}
			(void)last;
			sb_add(&sb, "\"\n");
		}
		/* operands: of the command, or after an option that takes operands */
		for (const gv_option *o = c->opts; o->name; o++)
			if (!is_heading(o) && (o->flags & GV_OPT_OPERANDS))
				sb_addf(&sb, "\t\t[[ \" ${words[*]:0:cword} \" == *\" --%s \"* ]] && operands=%s\n", o->name,
					kind_name(o->kind));
		if (c->operands != GV_VAL_NONE && c->operands != GV_VAL_TEXT)
			sb_addf(&sb, "\t\toperands=%s\n", kind_name(c->operands));
		sb_add(&sb, "\t\t;;\n");
	}
	sb_add(&sb, "\tesac\n");
	sb_addf(&sb,
		"\t# after `--`: the command to run and its arguments (gpuvet run -- CMD ARGS)\n"
		"\tif [[ $operands == command ]]; then\n"
		"\t\tfor ((i = at + 1; i < cword; i++)); do\n"
		"\t\t\tif [[ ${words[i]} == -- ]]; then\n"
		"\t\t\t\tif ((i + 1 == cword)); then\n"
		"\t\t\t\t\tCOMPREPLY=($(compgen -c -- \"$cur\"))\n"
		"\t\t\t\telse\n"
		"\t\t\t\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
		"\t\t\t\tfi\n"
		"\t\t\t\treturn\n"
		"\t\t\tfi\n"
		"\t\tdone\n"
		"\tfi\n"
		"\tif [[ $cur == -* ]]; then\n"
		"\t\tCOMPREPLY=($(compgen -W \"$opts %s\" -- \"$cur\"))\n"
		"\t\treturn\n"
		"\tfi\n"
		"\t# a subcommand where no word but options (and their values) follows the command yet\n"
		"\tif [[ -n $subs ]]; then\n"
		"\t\tlocal seen=\"\"\n"
		"\t\tfor ((i = at + 1; i < cword; i++)); do\n"
		"\t\t\tcase \" $valued %s \" in\n"
		"\t\t\t*\" ${words[i]} \"*) ((i++)) ;;\n"
		"\t\t\t*) [[ ${words[i]} == -* ]] || seen=${words[i]} ;;\n"
		"\t\t\tesac\n"
		"\t\t\t[[ -n $seen ]] && break\n"
		"\t\tdone\n"
		"\t\tif [[ -z $seen ]]; then\n"
		"\t\t\tCOMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
		"\t\t\treturn\n"
		"\t\tfi\n"
		"\tfi\n"
		"\tcase $operands in\n"
		"\tfile | dir) _gpuvet_value $operands ;;\n"
		"\tesac\n"
		"} && complete -F _gpuvet gpuvet\n",
		global_values.buf, global_values.buf);
	sb_free(&global_values);
	sb_free(&global_pattern);
	sb_free(&global_all);
	return sb_steal(&sb);
}

/* ---- zsh ---- */

/* text inside a single-quoted zsh word, for an _arguments description: no brackets, no quotes */
static void zsh_desc(strbuf *sb, const char *help)
{
	char d[256];
	short_desc(help, d, sizeof(d));
	for (const char *p = d; *p; p++) {
		if (*p == '\'')
			sb_add(sb, "'\\''");
		else if (*p == ':')
			sb_add(sb, "\\:");
		else if (*p == '\\')
			sb_add(sb, "\\\\");
		else
			sb_addc(sb, *p);
	}
}

static void zsh_action(strbuf *sb, const gv_option *o)
{
	char words[1024];
	switch (o->kind) {
	case GV_VAL_FILE: sb_add(sb, "_files"); break;
	case GV_VAL_DIR: sb_add(sb, "_files -/"); break;
	case GV_VAL_WORD:
		words_of(o, " ", words, sizeof(words));
		sb_addf(sb, "(%s)", words);
		break;
	case GV_VAL_LIST:
		words_of(o, " ", words, sizeof(words));
		sb_addf(sb, "_sequence compadd - %s", words);
		break;
	case GV_VAL_FINDING: sb_add(sb, "_gpuvet_findings"); break;
	default: sb_add(sb, " "); break;
	}
}

/* valued_only: gpuvet's own options after a command; in_array: lines of an array, not of a command */
static void zsh_option_specs(strbuf *sb, const gv_command_cli *c, bool valued_only, bool in_array)
{
	for (const gv_option *o = c->opts; o->name; o++) {
		if (is_heading(o) || (o->flags & GV_OPT_HIDDEN) || (valued_only && !takes_value(o)))
			continue;
		char help[4096];
		help_of(o, help, sizeof(help));
		bool repeat = o->help && strstr(o->help, "repeat");
		sb_add(sb, "\t\t");
		if (has_short(o))
			sb_addf(sb, "%s'(-%c --%s)'{-%c,--%s}'", repeat ? "'*'" : "", o->id, o->name, o->id, o->name);
		else
			sb_addf(sb, "'%s--%s", repeat ? "*" : "", o->name);
		if (takes_value(o))
			sb_add(sb, has_short(o) ? "" : "=");
		sb_add(sb, "[");
		zsh_desc(sb, help);
		sb_add(sb, "]");
		if (takes_value(o)) {
			sb_addf(sb, ":%s:", o->arg);
			zsh_action(sb, o);
		}
		sb_add(sb, in_array ? "'\n" : "' \\\n");
	}
}

static char *zsh_completion(void)
{
	strbuf sb;
	sb_init(&sb);
	sb_add(&sb, "#compdef gpuvet\n"
		    "# zsh completion for gpuvet. Generated by tools/gen_cli.c from the program's option tables\n"
		    "# (make generate): do not edit.\n"
		    "\n"
		    "# !ID for a finding that must not appear (gpuvet check --require)\n"
		    "_gpuvet_findings() {\n"
		    "\tlocal -a ids\n"
		    "\tids=(${${(f)\"$(_call_program findings gpuvet check --list-rules 2>/dev/null)\"}%% *})\n"
		    "\tcompadd - ${ids/#/!}\n"
		    "}\n"
		    "\n"
		    "# gpuvet's own options that take a value: before or after the command\n"
		    "_gpuvet_common=(\n");
	zsh_option_specs(&sb, &gpuvet_cli, true, true);
	sb_add(&sb, ")\n\n");
	for (size_t i = 0; i < gv_ncommands; i++) {
		const gv_command_cli *c = gv_commands[i].cli;
		if (c->subs) {
			sb_addf(&sb, "_gpuvet_%s_subcommands() {\n\tlocal -a subs\n\tsubs=(\n", c->name);
			for (const gv_subcommand *s = c->subs; s->name; s++) {
				bool dup = false;
				for (const gv_subcommand *t = c->subs; t < s; t++)
					dup |= strcmp(t->name, s->name) == 0;
				if (dup)
					continue;
				sb_addf(&sb, "\t\t'%s:", s->name);
				zsh_desc(&sb, s->help);
				sb_add(&sb, "'\n");
			}
			sb_addf(&sb, "\t)\n\t_describe -t subcommands 'gpuvet %s subcommand' subs\n}\n\n", c->name);
		}
		sb_addf(&sb, "_gpuvet_%s() {\n\t_arguments -s -S \\\n", c->name);
		sb_add(&sb, "\t\t$_gpuvet_common \\\n");
		zsh_option_specs(&sb, c, false, false);
		if (c->subs)
			sb_addf(&sb, "\t\t'1: :_gpuvet_%s_subcommands' \\\n\t\t'*:argument: '\n", c->name);
		else if (c->operands == GV_VAL_COMMAND)
			sb_add(&sb, "\t\t'*::command:_normal'\n");
		else {
			bool files = false, dirs = false;
			for (const gv_option *o = c->opts; o->name; o++)
				if (!is_heading(o) && (o->flags & GV_OPT_OPERANDS))
					files |= o->kind == GV_VAL_FILE, dirs |= o->kind == GV_VAL_DIR;
			sb_addf(&sb, "\t\t'*:argument:%s'\n", dirs ? "_files -/" : files ? "_files" : " ");
		}
		sb_add(&sb, "}\n\n");
	}
	sb_add(&sb, "_gpuvet() {\n"
		    "\tlocal curcontext=\"$curcontext\" state line\n"
		    "\tlocal -a cmds\n"
		    "\tcmds=(\n");
	for (size_t i = 0; i < gv_ncommands; i++) {
		sb_addf(&sb, "\t\t'%s:", gv_commands[i].cli->name);
		zsh_desc(&sb, gv_commands[i].cli->summary);
		sb_add(&sb, "'\n");
	}
	sb_add(&sb, "\t)\n"
		    "\t_arguments -C \\\n");
	zsh_option_specs(&sb, &gpuvet_cli, false, false);
	sb_add(&sb, "\t\t'1: :->command' \\\n"
		    "\t\t'*:: :->args'\n"
		    "\tcase $state in\n"
		    "\tcommand) _describe -t commands 'gpuvet command' cmds ;;\n"
		    "\targs)\n"
		    "\t\tcurcontext=\"${curcontext%:*:*}:gpuvet-$words[1]:\"\n"
		    "\t\tcase $words[1] in\n");
	for (size_t i = 0; i < gv_ncommands; i++)
		sb_addf(&sb, "\t\t%s) _gpuvet_%s ;;\n", gv_commands[i].cli->name, gv_commands[i].cli->name);
	sb_add(&sb, "\t\tesac\n"
		    "\t\t;;\n"
		    "\tesac\n"
		    "}\n"
		    "\n"
		    "_gpuvet \"$@\"\n");
	return sb_steal(&sb);
}

/* ---- fish ---- */

static void fish_quoted(strbuf *sb, const char *s)
{
	sb_addc(sb, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'' || *p == '\\')
			sb_addc(sb, '\\');
		sb_addc(sb, *p);
	}
	sb_addc(sb, '\'');
}

static void fish_option(strbuf *sb, const char *cond, const gv_option *o)
{
	char help[4096], d[256], words[1024];
	help_of(o, help, sizeof(help));
	short_desc(help, d, sizeof(d));
	sb_add(sb, "complete -c gpuvet");
	if (cond) {
		sb_add(sb, " -n ");
		fish_quoted(sb, cond);
	}
	if (has_short(o))
		sb_addf(sb, " -s %c", o->id);
	sb_addf(sb, " -l %s", o->name);
	if (takes_value(o)) {
		switch (o->kind) {
		case GV_VAL_FILE: sb_add(sb, " -r -F"); break;
		case GV_VAL_DIR: sb_add(sb, " -x -a '(__fish_complete_directories (commandline -ct))'"); break;
		case GV_VAL_WORD:
			words_of(o, " ", words, sizeof(words));
			sb_add(sb, " -x -a ");
			fish_quoted(sb, words);
			break;
		case GV_VAL_LIST:
			words_of(o, " ", words, sizeof(words));
			sb_addf(sb, " -x -a '(__gpuvet_list %s)'", words);
			break;
		case GV_VAL_FINDING: sb_add(sb, " -x -a '(__gpuvet_findings)'"); break;
		default: sb_add(sb, " -x"); break;
		}
	}
	sb_add(sb, " -d ");
	fish_quoted(sb, d);
	sb_addc(sb, '\n');
}

static char *fish_completion(void)
{
	strbuf sb;
	sb_init(&sb);
	strbuf valued;
	sb_init(&valued);
	for (const gv_option *o = gpuvet_cli.opts; o->name; o++)
		if (!is_heading(o) && takes_value(o))
			sb_addf(&valued, " --%s", o->name);
	sb_addf(&sb,
		"# fish completion for gpuvet. Generated by tools/gen_cli.c from the program's option tables\n"
		"# (make generate): do not edit.\n"
		"\n"
		"# The words of the command line after gpuvet's own options: the command first.\n"
		"function __gpuvet_args\n"
		"    set -l args (commandline -opc)\n"
		"    set -e args[1]\n"
		"    while set -q args[1]\n"
		"        switch $args[1]\n"
		"            case%s\n"
		"                set -e args[1]\n"
		"                set -q args[1]; and set -e args[1]\n"
		"            case '--*=*'\n"
		"                set -e args[1]\n"
		"            case '-*'\n"
		"                set -e args[1]\n"
		"            case '*'\n"
		"                break\n"
		"        end\n"
		"    end\n"
		"    string join \\n -- $args\n"
		"end\n"
		"\n"
		"function __gpuvet_needs_command\n"
		"    set -l args (__gpuvet_args)\n"
		"    not set -q args[1]\n"
		"end\n"
		"\n"
		"function __gpuvet_using_command\n"
		"    set -l args (__gpuvet_args)\n"
		"    test \"$args[1]\" = \"$argv[1]\"\n"
		"end\n"
		"\n"
		"# the command given, and no subcommand after it yet\n"
		"function __gpuvet_needs_subcommand\n"
		"    set -l args (__gpuvet_args)\n"
		"    test \"$args[1]\" = \"$argv[1]\"; or return 1\n"
		"    for a in $args[2..-1]\n"
		"        string match -q -- '-*' $a; or return 1\n"
		"    end\n"
		"end\n"
		"\n"
		"# an item of a comma-separated list: the items typed so far stay\n"
		"function __gpuvet_list\n"
		"    set -l tok (string replace -r -- '^--[^=]*=' '' (commandline -ct))\n"
		"    set -l prefix (string match -r -- '^.*,' $tok)\n"
		"    for w in $argv\n"
		"        printf '%%s%%s\\n' \"$prefix\" $w\n"
		"    end\n"
		"end\n"
		"\n"
		"# !ID for a finding that must not appear (gpuvet check --require)\n"
		"function __gpuvet_findings\n"
		"    gpuvet check --list-rules 2>/dev/null | string replace -r -- '^(\\S+).*' '!$1'\n"
		"end\n"
		"\n"
		"complete -c gpuvet -f\n",
		valued.buf);
	sb_free(&valued);
	for (size_t i = 0; i < gv_ncommands; i++) {
		char d[256];
		short_desc(gv_commands[i].cli->summary, d, sizeof(d));
		sb_addf(&sb, "complete -c gpuvet -n __gpuvet_needs_command -a %s -d ", gv_commands[i].cli->name);
		fish_quoted(&sb, d);
		sb_addc(&sb, '\n');
	}
	/* gpuvet's own options: those with a value anywhere, --version and --help before a command */
	for (const gv_option *o = gpuvet_cli.opts; o->name; o++)
		if (!is_heading(o) && !(o->flags & GV_OPT_HIDDEN))
			fish_option(&sb, takes_value(o) ? NULL : "__gpuvet_needs_command", o);
	for (size_t i = 0; i < gv_ncommands; i++) {
		const gv_command_cli *c = gv_commands[i].cli;
		char cond[128];
		snprintf(cond, sizeof(cond), "__gpuvet_using_command %s", c->name);
		sb_addf(&sb, "\n# gpuvet %s\n", c->name);
		if (c->subs) {
			char scond[128];
			snprintf(scond, sizeof(scond), "__gpuvet_needs_subcommand %s", c->name);
			for (const gv_subcommand *s = c->subs; s->name; s++) {
				bool dup = false;
				for (const gv_subcommand *t = c->subs; t < s; t++)
					dup |= strcmp(t->name, s->name) == 0;
				if (dup)
					continue;
				char d[256];
				short_desc(s->help, d, sizeof(d));
				sb_add(&sb, "complete -c gpuvet -n ");
				fish_quoted(&sb, scond);
				sb_addf(&sb, " -a %s -d ", s->name);
				fish_quoted(&sb, d);
				sb_addc(&sb, '\n');
			}
		}
		for (const gv_option *o = c->opts; o->name; o++)
			if (!is_heading(o) && !(o->flags & GV_OPT_HIDDEN))
				fish_option(&sb, cond, o);
		for (const gv_option *o = c->opts; o->name; o++)
			if (!is_heading(o) && (o->flags & GV_OPT_OPERANDS)) {
				char ocond[256];
				snprintf(ocond, sizeof(ocond), "%s; and contains -- --%s (commandline -opc)", cond, o->name);
				sb_add(&sb, "complete -c gpuvet -n ");
				fish_quoted(&sb, ocond);
				sb_add(&sb, o->kind == GV_VAL_DIR ? " -a '(__fish_complete_directories (commandline -ct))'\n" : " -F\n");
			}
		if (c->operands == GV_VAL_COMMAND) {
			char ocond[256];
			snprintf(ocond, sizeof(ocond), "%s; and contains -- -- (commandline -opc)", cond);
			sb_add(&sb, "complete -c gpuvet -n ");
			fish_quoted(&sb, ocond);
			sb_add(&sb, " -a '(__fish_complete_subcommand --fcs-skip=(contains -i -- -- (commandline -opc)))'\n");
		}
	}
	return sb_steal(&sb);
}

/* ---- files ---- */

static char *read_all(const char *path)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	strbuf sb;
	sb_init(&sb);
	char buf[65536];
	size_t r;
	while ((r = fread(buf, 1, sizeof(buf), fp)) > 0)
		sb_addn(&sb, buf, r);
	fclose(fp);
	return sb_steal(&sb);
}

static bool write_all(const char *path, const char *text)
{
	char *tmp = xasprintf("%s.tmp", path);
	FILE *fp = fopen(tmp, "wb");
	bool ok = fp && fputs(text, fp) >= 0;
	if (fp)
		ok = fclose(fp) == 0 && ok;
	ok = ok && rename(tmp, path) == 0;
	if (!ok) {
		fprintf(stderr, "gpuvet_gen: cannot write %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	free(tmp);
	return ok;
}

/* The first line that differs, for the message. */
static void first_difference(const char *a, const char *b, int *line)
{
	*line = 1;
	while (*a && *a == *b) {
		if (*a == '\n')
			(*line)++;
		a++, b++;
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list-env") == 0) {
		for (size_t i = 0; i < gv_nenvvars; i++)
			printf("%s\n", gv_envvars[i].name);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--list-options") == 0) {
		for (size_t i = 0; i <= gv_ncommands; i++) {
			const gv_command_cli *c = i < gv_ncommands ? gv_commands[i].cli : &gpuvet_cli;
			for (const gv_option *o = c->opts; o->name; o++)
				if (!is_heading(o) && !(o->flags & GV_OPT_HIDDEN))
					printf("%s --%s\n", c->name, o->name);
		}
		return 0;
	}
	if (argc != 3 || (strcmp(argv[1], "--write") != 0 && strcmp(argv[1], "--check") != 0)) {
		fprintf(stderr, "usage: gpuvet_gen --write|--check SRCDIR | --list-env | --list-options\n");
		return 2;
	}
	bool write = strcmp(argv[1], "--write") == 0;
	const char *src = argv[2];
	char *man_path = xasprintf("%s/man/gpuvet.1", src);
	char *man_old = read_all(man_path);
	if (!man_old) {
		fprintf(stderr, "gpuvet_gen: cannot read %s: %s\n", man_path, strerror(errno));
		return 2;
	}
	char *err = NULL;
	char *man_new = man_page(man_old, &err);
	if (!man_new) {
		fprintf(stderr, "gpuvet_gen: %s\n", err);
		return 2;
	}
	struct {
		const char *path;
		char *text;
	} out[] = {
		{"man/gpuvet.1", man_new},
		{"contrib/bash-completion/gpuvet", bash_completion()},
		{"contrib/zsh/_gpuvet", zsh_completion()},
		{"contrib/fish/gpuvet.fish", fish_completion()},
	};
	int rc = 0;
	for (size_t i = 0; i < GV_ARRAY_LEN(out); i++) {
		char *path = xasprintf("%s/%s", src, out[i].path);
		char *old = i == 0 ? xstrdup(man_old) : read_all(path);
		if (!old || strcmp(old, out[i].text) != 0) {
			if (write) {
				if (!write_all(path, out[i].text))
					rc = 2;
				else
					printf("gpuvet_gen: wrote %s\n", out[i].path);
			} else {
				int line = 0;
				if (old) {
					first_difference(old, out[i].text, &line);
					fprintf(stderr,
						"gpuvet_gen: %s differs from what the program's tables generate, from line %d (run "
						"`make generate` and commit the result)\n",
						out[i].path, line);
				} else {
					fprintf(stderr, "gpuvet_gen: %s is missing (run `make generate` and commit the result)\n",
						out[i].path);
				}
				rc = 1;
			}
		}
		free(old);
		free(path);
		free(out[i].text);
	}
	free(man_old);
	free(man_path);
	return rc;
}
