#include "cmd/run_preflight.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/child.h"
#include "core/color.h"
#include "core/factkeys.h"
#include "diagnose/diagnose.h"
#include "probes/probes.h"

struct run_preflight {
	gv_child *child;
	double limit;
	pthread_t tid;
	bool threaded, joined;
	int note[2]; /* the waiter writes a byte when done */
	pthread_mutex_t mu;
	bool done; /* under mu; what follows is the waiter's until then, read-only after */
	bool reported;
	facts *f;
	char *text;
	bool text_taken;
};

/* In the child: check --fast's probes (the isolated ones in children of their own). */
static void body(facts *f, void *arg)
{
	(void)arg;
	probe_opts po = {.fast = true, .no_python = true, .python_timeout_ms = 20000};
	probes_run(f, &po);
}

static void judge(run_preflight *p)
{
	gv_child_report r;
	p->reported = gv_child_wait(p->child, p->limit, p->f, &r) == GV_CHILD_OK;
	p->child = NULL;
	strbuf b;
	sb_init(&b);
	if (!p->reported) {
		char what[PATH_MAX + 300];
		sb_addf(&b, "gpuvet run: pre-flight: the quick check %s\n", gv_child_describe(&r, what, sizeof(what)));
	} else {
		findings fs;
		findings_init(&fs);
		diagnose_opts o = {.probes = NULL};
		diagnose(p->f, &o, &fs);
		bool on = color_wanted(stderr, gopts.color);
		for (size_t i = 0; i < fs.n; i++) {
			const finding *x = &fs.v[i];
			if (x->sev != SEV_FAIL)
				continue;
			sb_addf(&b, "gpuvet run: pre-flight: %sFAIL%s %s [%s]\n", col_fail(on), col_reset(on), x->title, x->id);
			if (x->fix.n)
				sb_addf(&b, "gpuvet run:   fix: %s\n", x->fix.v[0]);
		}
		findings_free(&fs);
	}
	p->text = sb_steal(&b);
}

static void *waiter(void *arg)
{
	run_preflight *p = arg;
	judge(p);
	pthread_mutex_lock(&p->mu);
	p->done = true;
	pthread_mutex_unlock(&p->mu);
	if (p->note[1] >= 0) {
		ssize_t w = write(p->note[1], "", 1);
		(void)w;
	}
	return NULL;
}

run_preflight *run_preflight_start(void)
{
	run_preflight *p = xcalloc(1, sizeof(*p));
	pthread_mutex_init(&p->mu, NULL);
	p->f = facts_new();
	/* the NVML probe's child has its driver timeout and 2 s; a margin over that */
	p->limit = gv_driver_timeout(30) + 5;
	if (pipe2(p->note, O_CLOEXEC | O_NONBLOCK) != 0)
		p->note[0] = p->note[1] = -1;
	p->child = gv_child_start("preflight", body, NULL);
	return p;
}

void run_preflight_follow(run_preflight *p)
{
	if (!p->threaded && !p->joined)
		p->threaded = pthread_create(&p->tid, NULL, waiter, p) == 0;
}

int run_preflight_fd(const run_preflight *p)
{
	return p->threaded ? p->note[0] : -1;
}

bool run_preflight_done(run_preflight *p)
{
	pthread_mutex_lock(&p->mu);
	bool d = p->done;
	pthread_mutex_unlock(&p->mu);
	return d;
}

void run_preflight_wait(run_preflight *p)
{
	if (p->joined)
		return;
	p->joined = true;
	if (p->threaded) {
		pthread_join(p->tid, NULL); /* its wait ends by the deadline */
	} else { /* no thread: waited for now, under the same bounds */
		judge(p);
		pthread_mutex_lock(&p->mu);
		p->done = true;
		pthread_mutex_unlock(&p->mu);
	}
}

char *run_preflight_take_text(run_preflight *p)
{
	if (!run_preflight_done(p) || p->text_taken)
		return NULL;
	p->text_taken = true;
	char *t = p->text;
	p->text = NULL;
	return t;
}

bool run_preflight_nvml_usable(run_preflight *p)
{
	if (!p->threaded)
		return true; /* nobody waits for it before the end: nothing known, as without a pre-flight */
	return run_preflight_done(p) && p->reported && !facts_true(p->f, FK_NVML_TIMEOUT);
}

const facts *run_preflight_hung_facts(run_preflight *p)
{
	return run_preflight_done(p) && p->reported && probes_driver_hung(p->f) ? p->f : NULL;
}

void run_preflight_free(run_preflight *p)
{
	if (!p)
		return;
	run_preflight_wait(p);
	for (int k = 0; k < 2; k++)
		if (p->note[k] >= 0)
			close(p->note[k]);
	facts_free(p->f);
	free(p->text);
	pthread_mutex_destroy(&p->mu);
	free(p);
}
