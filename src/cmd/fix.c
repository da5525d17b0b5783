/*
 * gpuvet fix: the remediation plan, from the same facts and rules as `check` plus the knowledge
 * base. It prints the exact commands (pip line for the PyTorch build that fits, the conda
 * alternative, the driver upgrade when nothing fits, export/unset lines, a Dockerfile) and never
 * runs any of them.
 */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "diagnose/diagnose.h"
#include "core/factkeys.h"
#include "core/sysroot.h"
#include "kb/kb.h"
#include "kb/kb_torch.h"
#include "probes/probes.h"
#include "python/fixplan.h"
#include "core/shell.h"
#include "core/text.h"
#include "rules/rules.h"

enum { OPT_JSON = 256, OPT_SHELL, OPT_DOCKERFILE };

static const gv_option fix_options[] = {
	GV_OPT_GROUP("output"),
	GV_OPT_FLAG("json", OPT_JSON, "one JSON document (schema gpuvet.fix/1)"),
	GV_OPT_FLAG("shell", OPT_SHELL, "a shell script to review and run (source it for the export lines to last)"),
	GV_OPT_FLAG("dockerfile", OPT_DOCKERFILE, "only the Dockerfile"),
	GV_OPT_GROUP("probing (as for check)"),
	PROBE_OPTIONS,
	FACTS_OPTION("plan from facts recorded earlier (a check --json document)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli fix_cli = {
	.name = "fix",
	.summary = "the remediation plan: the PyTorch build that fits, environment lines, a Dockerfile",
	.head = "usage: gpuvet fix [options]\n"
		"\n"
		"Prints what to run to make PyTorch work on this machine: the pip command for the newest PyTorch\n"
		"build this driver runs whose architecture list covers every GPU here, the conda alternative,\n"
		"the driver upgrade when no build fits, the export/unset lines for library shadowing and GPU\n"
		"visibility problems, and a Dockerfile on a CUDA base image this driver runs. gpuvet never runs\n"
		"any of it: review it, then run it yourself.\n"
		"\n",
	.opts = fix_options,
	.tail = "\n"
		"common options: --root DIR, --kb DIR, --color WHEN (see gpuvet --help)\n"
		"\n"
		"exit status: 0 a plan was printed (even an empty one), 1 --dockerfile and no build fits, 2 usage,\n"
		"3 internal\n",
};

typedef struct plan_step {
	const char *id;       /* "torch", "driver", "environment" */
	char *title;
	char *why;
	strlist commands;     /* to run, in order */
	strlist alternatives; /* other ways, not to run as well */
	bool needs_root;
} plan_step;

/* One line of the environment step: a variable's export or unset, from one or more findings. */
typedef struct env_line {
	bool unset;
	char *var;
	char *value;     /* the export's value, one shell word; NULL for unset */
	strlist ids;     /* the findings it comes from, the first one's purpose with it */
	char *purpose;   /* the first finding's, or NULL */
} env_line;

typedef struct plan {
	fix_machine m;
	fix_choice choice;
	char python[512];
	fix_pyenv pyenv;   /* where the pip line installs: python, or a venv the plan makes first */
	char python_word[4608]; /* python as a word of a command: quoted, or a comment that refuses it */
	char current[128]; /* "torch 2.11.0+cu130" or "" */
	char status[512];  /* one line on the current torch */
	bool torch_ok;     /* nothing to change for torch */
	plan_step steps[8];
	int nsteps;
	strlist notes;
	char *dockerfile;
	env_line *env; /* the environment step's lines as data (--json environment_fixes) */
	size_t nenv;
} plan;

static plan_step *add_step(plan *p, const char *id, const char *title)
{
	plan_step *s = &p->steps[p->nsteps++];
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->title = xstrdup(title);
	return s;
}

/* The environment step: the export/unset fixes of every finding (fix_item), merged per variable.
 * Several findings rewrite the same search path (lib.stubs-on-path drops the stubs,
 * lib.ld-path-stale the vanished entries, lib.shadowed other cuDNN directories): sourced one
 * after the other the last would undo the others, so they become one line keeping only the
 * entries every rewrite keeps (an unset keeps none). */
static bool is_search_path(const char *var)
{
	return strcmp(var, "LD_LIBRARY_PATH") == 0 || strcmp(var, "PATH") == 0;
}

/* The entries of both values, in a's order; NULL when none is left. */
static char *path_intersection(const char *a, const char *b)
{
	strlist mine = {0}, theirs = {0};
	sl_split(&mine, a, ":", false);
	sl_split(&theirs, b, ":", false);
	strbuf keep;
	sb_init(&keep);
	for (size_t i = 0; i < mine.n; i++)
		if (sl_contains(&theirs, mine.v[i]))
			sb_addf(&keep, "%s%s", keep.len ? ":" : "", mine.v[i]);
	sl_free(&mine);
	sl_free(&theirs);
	if (!keep.len) {
		sb_free(&keep);
		return NULL;
	}
	return sb_steal(&keep);
}

static void env_add(plan *p, const fix_item *it, const char *id)
{
	bool unset = it->kind == FIX_ENV_UNSET;
	for (size_t k = 0; k < p->nenv; k++) {
		env_line *l = &p->env[k];
		if (strcmp(l->var, it->var) != 0)
			continue;
		if (l->unset == unset && (unset || strcmp(l->value, it->value) == 0))
			return; /* the same line again */
		if (!is_search_path(it->var))
			continue;
		char *keep = !l->unset && !unset ? path_intersection(l->value, it->value) : NULL;
		free(l->value);
		l->value = keep;
		l->unset = !keep;
		if (!sl_contains(&l->ids, id))
			sl_push(&l->ids, id);
		return;
	}
	p->env = xrealloc(p->env, (p->nenv + 1) * sizeof(*p->env));
	env_line *l = &p->env[p->nenv++];
	memset(l, 0, sizeof(*l));
	l->unset = unset;
	l->var = xstrdup(it->var);
	l->value = unset ? NULL : xstrdup(it->value);
	sl_push(&l->ids, id);
	l->purpose = it->purpose ? xstrdup(it->purpose) : NULL;
}

static void env_step(plan *p, const findings *fs)
{
	for (size_t i = 0; i < fs->n; i++)
		for (size_t j = 0; j < fs->v[i].fix.n; j++) {
			const fix_item *it = finding_fix_item(&fs->v[i], j);
			if (it && (it->kind == FIX_ENV_SET || it->kind == FIX_ENV_UNSET))
				env_add(p, it, fs->v[i].id);
		}
	if (!p->nenv)
		return;
	plan_step *env = add_step(p, "environment", "Environment");
	env->why = xstrdup("set in the shell that starts your program (and in ~/.bashrc or the job script, where "
			   "the old values come from)");
	for (size_t k = 0; k < p->nenv; k++) {
		const env_line *l = &p->env[k];
		/* "# id: purpose, id2, id3": the first finding's purpose, then the others merged in */
		strbuf why;
		sb_init(&why);
		sb_addf(&why, "%s%s%s", l->ids.v[0], l->purpose ? ": " : "", l->purpose ? l->purpose : "");
		for (size_t i = 1; i < l->ids.n; i++)
			sb_addf(&why, ", %s", l->ids.v[i]);
		if (l->unset)
			sl_pushf(&env->commands, "unset %s   # %s", l->var, why.buf);
		else
			sl_pushf(&env->commands, "export %s=%s   # %s", l->var, l->value, why.buf);
		sb_free(&why);
	}
}

static void build_plan(const facts *f, const findings *fs, const kb *k, plan *p)
{
	memset(p, 0, sizeof(*p));
	fix_machine_read(f, k, &p->m);
	fix_choose(k, &p->m, &p->choice);
	const char *py = facts_str(f, FK_PYTHON_SELECTED);
	str_copy(p->python, sizeof(p->python), py ? py : "python3");
	shell_word_or_comment(p->python_word, sizeof(p->python_word), "the interpreter", p->python);
	fix_pyenv_plan(f, &p->choice, &p->pyenv);
	bool live = facts_str(f, FK_PYTHON_LIVE_STATUS) && strcmp(facts_str(f, FK_PYTHON_LIVE_STATUS), "ok") == 0;
	const char *tv = live && facts_true(f, FK_PYTHON_LIVE_TORCH_INSTALLED) ? facts_str(f, FK_PYTHON_LIVE_TORCH_VERSION)
									       : NULL;
	if (!tv)
		tv = facts_str(f, FK_PYTHON_TORCH_VERSION);
	if (tv)
		snprintf(p->current, sizeof(p->current), "torch %s", tv);

	/* 1. PyTorch */
	static const char *const torch_problems[] = {"torch.not-installed", "torch.cpu-build", "torch.driver-too-old",
						     "torch.arch-unsupported", "torch.import-failed", NULL};
	const finding *problem = NULL;
	for (size_t i = 0; torch_problems[i] && !problem; i++) {
		const finding *x = findings_find(fs, torch_problems[i]);
		if (x && (x->sev == SEV_FAIL || strcmp(x->id, "torch.not-installed") == 0))
			problem = x;
	}
	if (!tv)
		snprintf(p->status, sizeof(p->status), "no torch in %s", p->python);
	else if (problem)
		snprintf(p->status, sizeof(p->status), "%s in %s: %s [%s]", p->current, p->python, problem->title, problem->id);
	else
		snprintf(p->status, sizeof(p->status), "%s in %s fits this driver and these GPUs", p->current, p->python);
	p->torch_ok = tv && !problem;
	char release[16] = "";
	if (tv)
		torch_version_release(tv, release, sizeof(release));
	if (p->choice.found) {
		bool newer = !tv || version_cmp(p->choice.build.version, release) > 0;
		if (!p->torch_ok || newer) {
			plan_step *s = add_step(p, "torch", p->torch_ok ? "PyTorch (optional: a newer release fits too)" : "PyTorch");
			s->why = p->pyenv.why[0] ? xasprintf("%s; %s", p->choice.why, p->pyenv.why) : xstrdup(p->choice.why);
			/* a torch in the interpreter pip installs into goes first (a new venv has none) */
			if (tv && !p->torch_ok && !p->pyenv.switched)
				sl_pushf(&s->commands, "%s -m pip uninstall -y torch torchvision torchaudio", p->python_word);
			for (size_t i = 0; i < p->pyenv.prep.n; i++)
				sl_push(&s->commands, p->pyenv.prep.v[i]);
			char line[1024];
			fix_pip_line(&p->choice, p->pyenv.python, line, sizeof(line));
			sl_push(&s->commands, line);
			fix_conda_line(&p->choice, line, sizeof(line));
			const char *cn = fix_conda_note(&p->choice);
			sl_pushf(&s->alternatives, "conda: %s%s%s%s", line, cn ? "   (" : "", cn ? cn : "", cn ? ")" : "");
			if (facts_true(f, FK_PYTHON_CONDA_ENV) && facts_str(f, FK_PYTHON_CONDA_VERSION, "cpuonly"))
				sl_push(&s->commands, "conda remove -y cpuonly   # it pins CPU builds of pytorch in this env");
		}
	} else if (!p->choice.need_driver) {
		plan_step *s = add_step(p, "torch", "PyTorch");
		s->why = xstrdup(p->choice.why);
	}
	/* 2. the driver, when no build runs on the installed one */
	if (p->choice.need_driver) {
		plan_step *s = add_step(p, "driver", "NVIDIA driver");
		s->why = xstrdup(p->choice.why);
		s->needs_root = true;
		if (p->choice.driver_branch_max) {
			sl_pushf(&s->commands, "# install the R%d NVIDIA driver (the last branch that drives this GPU), then reboot",
				 p->choice.driver_branch_max);
			sl_pushf(&s->alternatives, "Ubuntu: sudo apt install nvidia-driver-%d", p->choice.driver_branch_max);
		} else if (p->choice.driver_need[0]) {
			sl_pushf(&s->commands, "# upgrade the NVIDIA driver to >= %s (branch %.3s or newer), then reboot",
				 p->choice.driver_need, p->choice.driver_need);
			sl_pushf(&s->alternatives, "Ubuntu: sudo ubuntu-drivers install   (or sudo apt install nvidia-driver-%.3s)",
				 p->choice.driver_need);
			sl_push(&s->alternatives, "NVIDIA's CUDA repository: sudo apt install cuda-drivers");
		} else {
			sl_push(&s->commands, "# upgrade the NVIDIA driver (the KB does not know the minimum for this build)");
		}
		/* then the build that driver runs (installing it first does no harm: it works after the reboot) */
		fix_choice after;
		fix_choice_of(k, &p->choice.newest, &after);
		plan_step *t = add_step(p, "torch", "PyTorch (works once the driver is upgraded)");
		t->why = xasprintf("torch %s %s: the newest release in the KB whose architecture list covers the GPUs here",
				   after.build.version, after.build.variant);
		if (p->pyenv.why[0]) {
			char *w = xasprintf("%s; %s", t->why, p->pyenv.why);
			free(t->why);
			t->why = w;
		}
		if (tv && !p->pyenv.switched)
			sl_pushf(&t->commands, "%s -m pip uninstall -y torch torchvision torchaudio", p->python_word);
		for (size_t i = 0; i < p->pyenv.prep.n; i++)
			sl_push(&t->commands, p->pyenv.prep.v[i]);
		char line[1024];
		fix_pip_line(&after, p->pyenv.python, line, sizeof(line));
		sl_push(&t->commands, line);
	}
	/* 3. the environment fixes of every finding (shadowed libraries, visibility, debugging variables) */
	env_step(p, fs);
	/* notes: where the KB is thin */
	if (p->choice.found && !p->choice.cpu_only) {
		if (!p->choice.build.arch_verified)
			sl_pushf(&p->notes, "the architecture list of torch %s %s comes from a secondary source in the KB",
				 p->choice.build.version, p->choice.build.variant);
		if (p->choice.torchvision[0] && !p->choice.torchvision_verified)
			sl_pushf(&p->notes, "torchvision %s for torch %s follows the release pattern (unverified in the KB); "
					    "pip refuses a mismatched pair, so an error there means: drop the torchvision pin",
				 p->choice.torchvision, p->choice.build.version);
		if (!p->choice.torchvision[0])
			sl_push(&p->notes, "the KB has no torchvision pairing for this release: it is left unpinned, pip picks "
					   "the matching one");
		if (p->choice.fit == DRV_FIT_MVC)
			sl_pushf(&p->notes, "CUDA %s runs on this driver through minor-version compatibility: PTX JIT of newer "
					    "PTX is not available; a driver >= the toolkit's own removes that limit",
				 p->choice.build.cuda);
		if (p->choice.ptx_only)
			sl_push(&p->notes, "a GPU here is covered only through PTX: the first use of each kernel compiles it");
		if (!p->choice.build.cudnn[0])
			sl_pushf(&p->notes, "the cuDNN version torch %s %s pins is not in the KB", p->choice.build.version,
				 p->choice.build.variant);
	}
	if (!p->m.driver[0] && p->m.gpu_present)
		sl_push(&p->notes, "the driver version is unknown (NVML did not answer): the choice assumes nothing about it");
	p->dockerfile = fix_dockerfile(k, &p->m, &p->choice);
}

static void free_plan(plan *p)
{
	for (int i = 0; i < p->nsteps; i++) {
		free(p->steps[i].title);
		free(p->steps[i].why);
		sl_free(&p->steps[i].commands);
		sl_free(&p->steps[i].alternatives);
	}
	sl_free(&p->notes);
	free(p->dockerfile);
	for (size_t i = 0; i < p->nenv; i++) {
		free(p->env[i].var);
		free(p->env[i].value);
		free(p->env[i].purpose);
		sl_free(&p->env[i].ids);
	}
	free(p->env);
	fix_pyenv_free(&p->pyenv);
}

static void machine_line(FILE *out, const plan *p)
{
	fprintf(out, "machine: ");
	if (!p->m.ngpus)
		fprintf(out, p->m.gpu_present ? "an NVIDIA GPU (details unknown)" : "no NVIDIA GPU");
	for (int i = 0; i < p->m.ngpus; i++) {
		int same = 1;
		while (i + same < p->m.ngpus && strcmp(p->m.gpus[i + same].name, p->m.gpus[i].name) == 0)
			same++;
		fprintf(out, "%s%d x %s%s%s%s", i ? ", " : "", same, TEXT(p->m.gpus[i].name),
			p->m.gpus[i].cc[0] ? " (compute capability " : "", TEXT(p->m.gpus[i].cc), p->m.gpus[i].cc[0] ? ")" : "");
		i += same - 1;
	}
	if (p->m.driver[0] || p->m.driver_cuda_text[0])
		fprintf(out, "; driver %s%s%s%s", TEXT(p->m.driver), p->m.driver_cuda_text[0] ? " (CUDA " : "",
			TEXT(p->m.driver_cuda_text), p->m.driver_cuda_text[0] ? ")" : "");
	fputc('\n', out);
}

static void render_text(FILE *out, const plan *p)
{
	fprintf(out, "gpuvet fix: what to run on this machine (gpuvet runs none of it)\n\n");
	machine_line(out, p);
	fprintf(out, "now: %s\n", TEXT(p->status));
	if (!p->nsteps)
		fprintf(out, "\nnothing to change.\n");
	for (int i = 0; i < p->nsteps; i++) {
		const plan_step *s = &p->steps[i];
		fprintf(out, "\n%d. %s%s\n", i + 1, TEXT(s->title), s->needs_root ? " (needs root)" : "");
		if (s->why)
			fprintf(out, "   %s\n", TEXT(s->why));
		for (size_t j = 0; j < s->commands.n; j++)
			fprintf(out, "     %s\n", TEXT(s->commands.v[j]));
		for (size_t j = 0; j < s->alternatives.n; j++)
			fprintf(out, "   or %s\n", TEXT(s->alternatives.v[j]));
	}
	if (p->dockerfile) {
		fprintf(out, "\nDockerfile (gpuvet fix --dockerfile > Dockerfile):\n");
		const char *l = p->dockerfile;
		while (*l) {
			const char *nl = strchr(l, '\n');
			size_t n = nl ? (size_t)(nl - l) : strlen(l);
			fprintf(out, "   %.*s\n", (int)n, l);
			l += n + (nl ? 1 : 0);
		}
	}
	if (p->notes.n) {
		fprintf(out, "\nnotes:\n");
		for (size_t i = 0; i < p->notes.n; i++)
			fprintf(out, "   - %s\n", TEXT(p->notes.v[i]));
	}
}

static void render_shell(FILE *out, const plan *p)
{
	fprintf(out, "#!/bin/sh\n# Written by gpuvet fix --shell. Review it before running: gpuvet runs nothing itself.\n");
	fprintf(out, "# Source it (. ./fix.sh) for the export/unset lines to stay in your shell.\n");
	/* a script to source: comments and commands through the sanitizer, so no name starts a line */
	fprintf(out, "# now: %s\n", TEXT(p->status));
	fprintf(out, "set -e\n");
	if (!p->nsteps)
		fprintf(out, "# nothing to change\n");
	for (int i = 0; i < p->nsteps; i++) {
		const plan_step *s = &p->steps[i];
		fprintf(out, "\n# %d. %s%s\n", i + 1, TEXT(s->title), s->needs_root ? " (needs root; left for you to run)" : "");
		if (s->why)
			fprintf(out, "# %s\n", TEXT(s->why));
		for (size_t j = 0; j < s->commands.n; j++)
			fprintf(out, "%s%s\n", s->needs_root && s->commands.v[j][0] != '#' ? "# " : "", TEXT(s->commands.v[j]));
		for (size_t j = 0; j < s->alternatives.n; j++)
			fprintf(out, "# or %s\n", TEXT(s->alternatives.v[j]));
	}
	for (size_t i = 0; i < p->notes.n; i++)
		fprintf(out, "%s# note: %s\n", i ? "" : "\n", TEXT(p->notes.v[i]));
}

static cJSON *build_json(const plan *p)
{
	cJSON *doc = cJSON_CreateObject();
	cJSON_AddStringToObject(doc, "schema", "gpuvet.fix/1");
	cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
	cJSON_AddStringToObject(tool, "name", "gpuvet");
	cJSON_AddStringToObject(tool, "version", GPUVET_VERSION);
	cJSON *m = cJSON_AddObjectToObject(doc, "machine");
	cJSON *gpus = cJSON_AddArrayToObject(m, "gpus");
	for (int i = 0; i < p->m.ngpus; i++) {
		cJSON *g = cJSON_CreateObject();
		cJSON_AddStringToObject(g, "name", p->m.gpus[i].name);
		if (p->m.gpus[i].cc[0])
			cJSON_AddStringToObject(g, "cc", p->m.gpus[i].cc);
		else
			cJSON_AddNullToObject(g, "cc");
		cJSON_AddItemToArray(gpus, g);
	}
	if (p->m.driver[0])
		cJSON_AddStringToObject(m, "driver", p->m.driver);
	else
		cJSON_AddNullToObject(m, "driver");
	if (p->m.driver_cuda_text[0])
		cJSON_AddStringToObject(m, "driver_cuda", p->m.driver_cuda_text);
	else
		cJSON_AddNullToObject(m, "driver_cuda");
	cJSON *t = cJSON_AddObjectToObject(doc, "torch");
	cJSON_AddStringToObject(t, "python", p->python);
	if (p->current[0])
		cJSON_AddStringToObject(t, "current", p->current + 6);
	else
		cJSON_AddNullToObject(t, "current");
	cJSON_AddStringToObject(t, "status", p->status);
	cJSON_AddBoolToObject(t, "ok", p->torch_ok);
	const fix_choice *c = &p->choice;
	if (c->found) {
		cJSON *r = cJSON_AddObjectToObject(t, "recommended");
		cJSON_AddStringToObject(r, "version", c->build.version);
		cJSON_AddStringToObject(r, "variant", c->build.variant);
		if (c->build.cuda[0])
			cJSON_AddStringToObject(r, "cuda", c->build.cuda);
		else
			cJSON_AddNullToObject(r, "cuda");
		if (c->torchvision[0])
			cJSON_AddStringToObject(r, "torchvision", c->torchvision);
		else
			cJSON_AddNullToObject(r, "torchvision");
		if (c->build.cudnn[0])
			cJSON_AddStringToObject(r, "cudnn", c->build.cudnn);
		else
			cJSON_AddNullToObject(r, "cudnn");
		cJSON_AddStringToObject(r, "arch", c->build.arch);
		cJSON_AddStringToObject(r, "driver_fit", c->cpu_only ? "cpu" : drv_fit_name(c->fit));
		cJSON_AddStringToObject(r, "index_url", c->index_url);
		char line[1024];
		fix_pip_line(c, p->pyenv.python, line, sizeof(line));
		cJSON_AddStringToObject(r, "pip", line);
		cJSON *prep = cJSON_AddArrayToObject(r, "pip_prepare");
		for (size_t i = 0; i < p->pyenv.prep.n; i++)
			cJSON_AddItemToArray(prep, cJSON_CreateString(p->pyenv.prep.v[i]));
		fix_conda_line(c, line, sizeof(line));
		cJSON_AddStringToObject(r, "conda", line);
		if (fix_conda_note(c))
			cJSON_AddStringToObject(r, "conda_note", fix_conda_note(c));
		else
			cJSON_AddNullToObject(r, "conda_note");
		cJSON_AddStringToObject(r, "why", c->why);
	} else {
		cJSON_AddNullToObject(t, "recommended");
		cJSON_AddStringToObject(t, "why", c->why);
	}
	if (c->need_driver) {
		cJSON *d = cJSON_AddObjectToObject(doc, "driver_upgrade");
		if (c->driver_need[0])
			cJSON_AddStringToObject(d, "minimum", c->driver_need);
		else
			cJSON_AddNullToObject(d, "minimum");
		cJSON_AddStringToObject(d, "for_torch", c->newest.version);
		cJSON_AddStringToObject(d, "variant", c->newest.variant);
		cJSON_AddStringToObject(d, "why", c->why);
	} else {
		cJSON_AddNullToObject(doc, "driver_upgrade");
	}
	cJSON *steps = cJSON_AddArrayToObject(doc, "steps");
	cJSON *envl = cJSON_AddArrayToObject(doc, "environment");
	for (int i = 0; i < p->nsteps; i++) {
		const plan_step *s = &p->steps[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "id", s->id);
		cJSON_AddStringToObject(o, "title", s->title);
		if (s->why)
			cJSON_AddStringToObject(o, "why", s->why);
		cJSON_AddBoolToObject(o, "needs_root", s->needs_root);
		cJSON *cmds = cJSON_AddArrayToObject(o, "commands");
		for (size_t j = 0; j < s->commands.n; j++) {
			cJSON_AddItemToArray(cmds, cJSON_CreateString(s->commands.v[j]));
			if (strcmp(s->id, "environment") == 0) {
				char *l = xstrdup(s->commands.v[j]);
				char *hash = strstr(l, "   # ");
				if (hash)
					*hash = '\0';
				cJSON_AddItemToArray(envl, cJSON_CreateString(l));
				free(l);
			}
		}
		cJSON *alts = cJSON_AddArrayToObject(o, "alternatives");
		for (size_t j = 0; j < s->alternatives.n; j++)
			cJSON_AddItemToArray(alts, cJSON_CreateString(s->alternatives.v[j]));
		cJSON_AddItemToArray(steps, o);
	}
	cJSON *envf = cJSON_AddArrayToObject(doc, "environment_fixes");
	for (size_t i = 0; i < p->nenv; i++) {
		const env_line *l = &p->env[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "variable", l->var);
		cJSON_AddBoolToObject(o, "unset", l->unset);
		if (l->value)
			cJSON_AddStringToObject(o, "value", l->value);
		else
			cJSON_AddNullToObject(o, "value");
		if (l->purpose)
			cJSON_AddStringToObject(o, "purpose", l->purpose);
		else
			cJSON_AddNullToObject(o, "purpose");
		cJSON *ids = cJSON_AddArrayToObject(o, "findings");
		for (size_t k = 0; k < l->ids.n; k++)
			cJSON_AddItemToArray(ids, cJSON_CreateString(l->ids.v[k]));
		cJSON_AddItemToArray(envf, o);
	}
	if (p->dockerfile)
		cJSON_AddStringToObject(doc, "dockerfile", p->dockerfile);
	else
		cJSON_AddNullToObject(doc, "dockerfile");
	cJSON *notes = cJSON_AddArrayToObject(doc, "notes");
	for (size_t i = 0; i < p->notes.n; i++)
		cJSON_AddItemToArray(notes, cJSON_CreateString(p->notes.v[i]));
	return doc;
}


int cmd_fix(int argc, char **argv)
{
	const char *fix_usage = gv_usage(&fix_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&fix_cli, longopts, shortopts);
	enum { OUT_TEXT, OUT_JSON, OUT_SHELL, OUT_DOCKER } mode = OUT_TEXT;
	int modes = 0;
	const char *facts_file = NULL;
	probe_opts po = {.python_timeout_ms = 20000};
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		int taken = probe_option(c, optarg, &po, &facts_file);
		if (taken < 0)
			return EXIT_USAGE;
		if (taken)
			continue;
		switch (c) {
		case OPT_JSON: mode = OUT_JSON; modes++; break;
		case OPT_SHELL: mode = OUT_SHELL; modes++; break;
		case OPT_DOCKERFILE: mode = OUT_DOCKER; modes++; break;
		case 'h': fputs(fix_usage, stdout); return EXIT_OK;
		case ':': return usage_error(fix_usage, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(fix_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(fix_usage, "unexpected argument '%s'", argv[optind]);
	if (modes > 1)
		return usage_error(fix_usage, "choose one of --json, --shell and --dockerfile");
	facts *f;
	if (facts_file) {
		f = facts_load_file(facts_file);
		if (!f)
			return EXIT_USAGE;
	} else {
		f = facts_new();
		gv_child_signals_install();
	}
	diagnose_opts dopts = {.probes = facts_file ? NULL : &po};
	findings fs;
	findings_init(&fs);
	diagnose(f, &dopts, &fs);
	plan p;
	build_plan(f, &fs, kb_global(), &p);
	int rc = EXIT_OK;
	switch (mode) {
	case OUT_JSON: {
		json_print_doc(stdout, build_json(&p));
		break;
	}
	case OUT_SHELL: render_shell(stdout, &p); break;
	case OUT_DOCKER:
		if (p.dockerfile)
			fputs(p.dockerfile, stdout);
		else {
			gv_error("no PyTorch build fits this machine, so no Dockerfile: %s", p.choice.why);
			rc = EXIT_FINDING;
		}
		break;
	default: render_text(stdout, &p); break;
	}
	free_plan(&p);
	findings_free(&fs);
	facts_free(f);
	return rc;
}
