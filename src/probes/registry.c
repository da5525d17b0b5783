#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/sysroot.h"
#include "core/trace.h"
#include "probes/deadline.h"
#include "probes/probes.h"
#include "probes/topology.h"

const probe probe_table[] = {
	/* the slowest first, so its thread starts first: cuInit takes ~0.4 s on an H200 machine */
	{"cuda", PROBE_USES_CUINIT | PROBE_ISOLATED | PROBE_DRIVER, probe_cuda, 60, probe_cuda_failed},
	{"hardware", 0, probe_hardware, 0, NULL},
	{"devices", 0, probe_devices, 0, NULL},
	{"env", 0, probe_env, 0, NULL},
	{"container", 0, probe_container, 0, NULL},
	{"nvml", PROBE_ISOLATED | PROBE_DRIVER, probe_nvml, 30, probe_nvml_failed},
	{"cudalib", PROBE_ISOLATED, probe_cudalib, 30, probe_cudalib_failed},
	{"kmsg", 0, probe_kmsg, 0, NULL},
	{"python", 0, probe_python, 0, NULL},
	{"python_live", PROBE_PYTHON_LIVE, probe_python_live, 0, NULL},
	{"toolkit", 0, probe_toolkit, 0, NULL},
	/* isolated for the version calls of cudart, NCCL and cuBLASLt (the stub cuBLASLt prints) */
	{"loader", PROBE_ISOLATED, probe_loader, 30, probe_loader_failed},
	{"topology", 0, probe_topology, 0, NULL},
	{NULL, 0, NULL, 0, NULL},
};

#define PROBE_STACK_BYTES (2u << 20)

struct job {
	const probe *p;
	facts *f;
	const probe_opts *o;
	pthread_t tid;
	bool started;
	gv_child *child; /* PROBE_ISOLATED: the child running it */
};

struct child_arg {
	const probe *p;
	const probe_opts *o;
};

/* "derived: NAME probe", the source of what a probe derives (core/facts.h) */
static const char *derived_source(const probe *p)
{
	static _Thread_local char buf[64];
	snprintf(buf, sizeof(buf), "derived: %s probe", p->name);
	return buf;
}

static void child_body(facts *f, void *arg)
{
	const struct child_arg *a = arg;
	gv_trace("child %s started", a->p->name);
	facts_set_thread_source(derived_source(a->p));
	a->p->run(f, a->o);
	/* what it could not read is noted in this process's sysroot: the parent notes it again */
	sysroot_problem *v = xcalloc(SYSROOT_PROBLEMS_MAX, sizeof(*v));
	size_t n = sysroot_problems(v, SYSROOT_PROBLEMS_MAX);
	for (size_t i = 0; i < n && i < SYSROOT_PROBLEMS_MAX; i++)
		facts_put_int(f, v[i].path, v[i].err, FK_ISOLATION_UNREADABLE(zu), a->p->name, i);
	free(v);
}

/* An isolated probe's thread: waits for its child; the parent puts what a failed child could not. */
static void wait_child(struct job *j)
{
	gv_child_report *r = xcalloc(1, sizeof(*r));
	/* +2 s: the probe's own deadline inside the child (nvmlInit, cuInit) reports first */
	double limit = gv_driver_timeout(j->p->child_timeout) + 2;
	/* loading is quick or hangs: a constructor gets the NVML bound even in cuInit's child */
	gv_child_set_call_limit(j->child, "dlopen", gv_driver_timeout(30) + 2);
	gv_child_wait(j->child, limit, j->f, r);
	gv_trace("child %s read", j->p->name);
	j->child = NULL;
	for (size_t i = 0; i < SYSROOT_PROBLEMS_MAX; i++) {
		const fact *u = facts_get(j->f, FK_ISOLATION_UNREADABLE(zu), j->p->name, i);
		if (!u)
			break;
		if (u->source && u->type == FV_INT)
			sysroot_problem_note(u->source, -(int)u->i);
	}
	gv_child_put_facts(j->f, j->p->name, r);
	if (r->outcome == GV_CHILD_NO_START)
		/* no process to spare (fork: EAGAIN under a process limit): a diagnosis without NVML
		 * would be worse than the library in this process, as before the children */
		j->p->run(j->f, j->o);
	else if (r->outcome != GV_CHILD_OK && j->p->child_failed)
		j->p->child_failed(j->f, j->o, r);
	free(r);
}

static void *run_job(void *arg)
{
	struct job *j = arg;
	double t0 = now_seconds();
	facts_set_thread_source(derived_source(j->p));
	if (j->child)
		wait_child(j);
	else
		j->p->run(j->f, j->o);
	facts_put_real(j->f, "gpuvet's clock: the probe's run time", now_seconds() - t0, FK_META_PROBE_SECONDS, j->p->name);
	gv_trace("probe %s done", j->p->name);
	facts_set_thread_source(NULL);
	return NULL;
}

/* a driver that hung once hangs again: waiting for it twice only delays the answer */
static bool hung_before(const probe *p, const probe_opts *o)
{
	return o->driver_hung && (p->flags & PROBE_DRIVER);
}

static bool out_of_time(const probe *p)
{
	return (p->flags & PROBE_ISOLATED) && gv_deadline_left() < PROBES_ISOLATED_MIN_SECONDS;
}

/* Why a probe does not run (NULL: it runs). A --root tree is read, never run: its interpreter
 * would run on this host as this user (often root), so only --run-tree-python starts it. */
static const char *skip_reason(const probe *p, const probe_opts *o)
{
	if (o->fast && (p->flags & (PROBE_USES_CUINIT | PROBE_PYTHON_LIVE)))
		return "skipped by --fast";
	if (o->no_python && (p->flags & PROBE_PYTHON_LIVE))
		return "skipped by --no-python";
	if (sysroot_active() && !o->run_tree_python && (p->flags & PROBE_PYTHON_LIVE))
		return "skipped under --root: the tree's interpreter is never run without --run-tree-python";
	if (hung_before(p, o))
		return "not run again: the driver hung in an earlier check of this run (gpuvet run's pre-flight, "
		       "explain's first pass); its facts are that check's";
	if (out_of_time(p))
		return "not started: gpuvet run's deadline for its work after the command has passed";
	return NULL;
}

/* The option (or the mode) that skipped it: the fact's source. */
static const char *skip_source(const probe *p, const probe_opts *o)
{
	if (o->fast && (p->flags & (PROBE_USES_CUINIT | PROBE_PYTHON_LIVE)))
		return "--fast";
	if (o->no_python && (p->flags & PROBE_PYTHON_LIVE))
		return "--no-python";
	if (hung_before(p, o))
		return "the earlier check";
	if (out_of_time(p))
		return "--explain-timeout";
	return "--root";
}

bool probes_driver_hung(const facts *f)
{
	return f && (facts_true(f, FK_NVML_TIMEOUT) || facts_true(f, FK_CUDA_TIMEOUT));
}

/* A probe not run again because the driver hung: the earlier check's facts of it, as they were. */
static void copy_earlier(facts *f, const probe *p, const facts *earlier)
{
	char own[64], iso[96];
	snprintf(own, sizeof(own), "%s.", p->name);
	/* its child's facts: the registry's isolation.NAME. keys, cut after NAME */
	snprintf(iso, sizeof(iso), FK_ISOLATION_OUTCOME, p->name);
	char *dot = strrchr(iso, '.');
	if (dot)
		dot[1] = '\0';
	facts_merge_prefix(f, earlier, own);
	facts_merge_prefix(f, earlier, iso);
}

static void *run_beside(void *arg)
{
	const probe_opts *o = arg;
	o->beside(o->beside_arg);
	return NULL;
}

static bool skipped(const probe *p, const probe_opts *o)
{
	return skip_reason(p, o) != NULL;
}

/* Every path the probes found but could not read (sysroot notes them), as facts: an unreadable
 * tree is reported as such, never taken for an empty one. */
static void put_unreadable(facts *f)
{
	sysroot_problem *v = xcalloc(SYSROOT_PROBLEMS_MAX, sizeof(*v));
	size_t total = sysroot_problems(v, SYSROOT_PROBLEMS_MAX);
	for (size_t i = 0; i < total && i < SYSROOT_PROBLEMS_MAX; i++)
		facts_put_read_error(f, v[i].path, -v[i].err, NULL, FK_FILES_UNREADABLE(zu), i);
	facts_put_int(f, "every path the probes read", (long long)total, FK_FILES_UNREADABLE_COUNT);
	free(v);
}

void probes_run(facts *f, const probe_opts *o)
{
	sysroot_problems_clear();
	size_t n = 0;
	while (probe_table[n].name)
		n++;
	struct job *jobs = xcalloc(n, sizeof(*jobs));
	struct child_arg *args = xcalloc(n, sizeof(*args));
	/* decided once: the deadline's clock moves while the children start */
	bool *skip = xcalloc(n, sizeof(*skip));
	for (size_t i = 0; i < n; i++)
		skip[i] = skipped(&probe_table[i], o);
	/* the children first, while this process has no probe threads: a fork beside a thread in
	 * dlopen or malloc could inherit a held lock */
	for (size_t i = 0; i < n; i++) {
		const probe *p = &probe_table[i];
		if ((p->flags & PROBE_ISOLATED) && !skip[i]) {
			args[i] = (struct child_arg){p, o};
			jobs[i].child = gv_child_start(p->name, child_body, &args[i]);
			gv_trace("child %s forked", p->name);
		}
	}
	/* Stacks of 2 MiB, not glibc's 8: the thirteen threads' stacks then fit glibc's cache of 40
	 * MiB, so that their joins cost no munmap (with 8 MiB each, the joins after the NVML probe's
	 * were 0.18 ms of check --fast's end on an H100); under the sanitizers, glibc's (core/util.h) */
	pthread_attr_t attr;
	pthread_attr_t *use = NULL;
	if (!GV_SANITIZED && pthread_attr_init(&attr) == 0) {
		if (pthread_attr_setstacksize(&attr, PROBE_STACK_BYTES) == 0)
			use = &attr;
		else
			pthread_attr_destroy(&attr);
	}
	for (size_t i = 0; i < n; i++) {
		const probe *p = &probe_table[i];
		if (skip[i]) {
			if (hung_before(p, o))
				copy_earlier(f, p, o->driver_hung);
			const char *why = skip_reason(p, o);
			facts_put_state(f, FACT_ABSENT, skip_source(p, o), why ? why : "skipped", FK_META_PROBE_SKIPPED, p->name);
			continue;
		}
		jobs[i] = (struct job){p, f, o, 0, false, jobs[i].child};
		/* a thread that cannot start runs inline: slower, never lost */
		if (pthread_create(&jobs[i].tid, use, run_job, &jobs[i]) == 0)
			jobs[i].started = true;
		else
			run_job(&jobs[i]);
	}
	pthread_t beside;
	bool beside_started = o->beside && pthread_create(&beside, use, run_beside, (void *)o) == 0;
	if (use)
		pthread_attr_destroy(use);
	if (o->beside && !beside_started)
		o->beside(o->beside_arg);
	/* the probes of this process first, the children's last: what is joined after the slowest
	 * (the NVML child) is then only the children's */
	for (size_t i = 0; i < n; i++)
		if (jobs[i].started && !(probe_table[i].flags & PROBE_ISOLATED))
			pthread_join(jobs[i].tid, NULL);
	if (beside_started)
		pthread_join(beside, NULL);
	for (size_t i = 0; i < n; i++)
		if (jobs[i].started && (probe_table[i].flags & PROBE_ISOLATED))
			pthread_join(jobs[i].tid, NULL);
	gv_trace("probes joined");
	free(jobs);
	free(skip);
	facts_set_thread_source("derived: topology probe");
	topology_derive(f); /* needs the facts of several probes */
	facts_set_thread_source(NULL);
	free(args);
	put_unreadable(f);
}
