#include <pthread.h>
#include <stdlib.h>

#include "core/sysroot.h"
#include "probes/probes.h"

const probe probe_table[] = {
	/* the slowest first, so its thread starts first: cuInit takes ~0.4 s on an H200 machine */
	{"cuda", PROBE_USES_CUINIT, probe_cuda},
	{"hardware", 0, probe_hardware},
	{"devices", 0, probe_devices},
	{"env", 0, probe_env},
	{"container", 0, probe_container},
	{"nvml", 0, probe_nvml},
	{"cudalib", 0, probe_cudalib},
	{"kmsg", 0, probe_kmsg},
	{"python", 0, probe_python},
	{"python_live", PROBE_PYTHON_LIVE, probe_python_live},
	{"toolkit", 0, probe_toolkit},
	{"loader", 0, probe_loader},
	{NULL, 0, NULL},
};

struct job {
	const probe *p;
	facts *f;
	const probe_opts *o;
	pthread_t tid;
	bool started;
};

static void *run_job(void *arg)
{
	struct job *j = arg;
	double t0 = now_seconds();
	j->p->run(j->f, j->o);
	facts_put_real(j->f, NULL, now_seconds() - t0, "meta.probe_seconds.%s", j->p->name);
	return NULL;
}

/* Every path the probes found but could not read (sysroot notes them), as facts: an unreadable
 * tree is reported as such, never taken for an empty one. */
static void put_unreadable(facts *f)
{
	sysroot_problem *v = xcalloc(SYSROOT_PROBLEMS_MAX, sizeof(*v));
	size_t total = sysroot_problems(v, SYSROOT_PROBLEMS_MAX);
	for (size_t i = 0; i < total && i < SYSROOT_PROBLEMS_MAX; i++)
		facts_put_read_error(f, v[i].path, -v[i].err, NULL, "files.unreadable.%zu", i);
	facts_put_int(f, NULL, (long long)total, "files.unreadable.count");
	free(v);
}

void probes_run(facts *f, const probe_opts *o)
{
	sysroot_problems_clear();
	size_t n = 0;
	while (probe_table[n].name)
		n++;
	struct job *jobs = xcalloc(n, sizeof(*jobs));
	for (size_t i = 0; i < n; i++) {
		const probe *p = &probe_table[i];
		if ((o->fast && (p->flags & (PROBE_USES_CUINIT | PROBE_PYTHON_LIVE))) ||
		    (o->no_python && (p->flags & PROBE_PYTHON_LIVE))) {
			facts_put_state(f, FACT_ABSENT, NULL, o->fast ? "skipped by --fast" : "skipped by --no-python",
					"meta.probe_skipped.%s", p->name);
			continue;
		}
		jobs[i] = (struct job){p, f, o, 0, false};
		/* a thread that cannot start runs inline: slower, never lost */
		if (pthread_create(&jobs[i].tid, NULL, run_job, &jobs[i]) == 0)
			jobs[i].started = true;
		else
			run_job(&jobs[i]);
	}
	for (size_t i = 0; i < n; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].tid, NULL);
	free(jobs);
	put_unreadable(f);
}
