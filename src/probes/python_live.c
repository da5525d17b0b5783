/*
 * The live PyTorch probe: data/probe_torch.py run by the selected interpreter as a child
 * (`python -I -c SOURCE`, argv, no shell) with a time limit and a bound on its output. It answers
 * what only a running torch knows: is_available() and torch's own warning, the devices, the arch
 * list, cuDNN and NCCL versions, a matmul and a conv checked against the CPU, and the library
 * files the process really mapped. A hang, a crash, a flood or garbage becomes a fact with the
 * reason (python.live.status error), never a failure of gpuvet.
 *
 * Facts: python.live.*  (see docs/facts/python.md)
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/factkeys.h"
#include "core/proc.h"
#include "core/sysroot.h"
#include "kb/kb.h"
#include "probes/probes.h"
#include "python/probe_out.h"
#include "python/pyenv.h"
#include "python/pysite.h"

#define MAX_OUTPUT (1u << 20)
#define STDERR_TAIL 1500

static void put_failure(facts *f, const char *kind, const char *why, const proc_result *r)
{
	facts_put_state(f, FACT_ERROR, "python probe", why, FK_PYTHON_LIVE_STATUS);
	facts_put_str(f, "python probe", kind, FK_PYTHON_LIVE_FAILURE);
	if (r && r->err_len) {
		const char *tail = r->err_len > STDERR_TAIL ? r->err + r->err_len - STDERR_TAIL : r->err;
		char *t = xstrdup(tail);
		str_sanitize(t);
		facts_put_str(f, "python probe", t, FK_PYTHON_LIVE_STDERR_TAIL);
		free(t);
	}
}

/* Versions and owning wheels of the mapped libraries, from the selected interpreter's site dirs. */
static void annotate_maps(facts *f, const py_env *env, const py_interp *py)
{
	long long n = facts_int_or(f, 0, FK_PYTHON_LIVE_MAPS_COUNT);
	if (n <= 0)
		return;
	strlist sites = {0};
	py_site_dirs(py, env, &sites, NULL);
	pip_owners owners = {0};
	static const char *const prefixes[] = {"nvidia-", "cuda-", NULL};
	for (size_t i = 0; i < sites.n; i++) {
		pip_dists d;
		pip_list(sites.v[i], &d);
		pip_owners_add(&owners, sites.v[i], &d, prefixes);
		pip_dists_free(&d);
	}
	for (long long i = 0; i < n; i++) {
		const char *real = facts_str(f, FK_PYTHON_LIVE_MAPS_REAL(lld), i);
		if (!real)
			continue;
		const char *base = strrchr(real, '/');
		facts_put_str(f, real, base ? base + 1 : real, FK_PYTHON_LIVE_MAPS_NAME(lld), i);
		const char *pv = NULL;
		const char *owner = pip_owner(&owners, real, &pv);
		if (owner) {
			facts_put_str(f, "dist-info RECORD", owner, FK_PYTHON_LIVE_MAPS_PACKAGE(lld), i);
			facts_put_str(f, "dist-info RECORD", pv, FK_PYTHON_LIVE_MAPS_VERSION(lld), i);
		} else {
			char v[64];
			const char *mapped = facts_str(f, FK_PYTHON_LIVE_MAPS_PATH(lld), i);
			lib_file_version(mapped ? mapped : real, v, sizeof(v), NULL);
			if (v[0])
				facts_put_str(f, "file name", v, FK_PYTHON_LIVE_MAPS_VERSION(lld), i);
		}
	}
	pip_owners_free(&owners);
	sl_free(&sites);
}

void probe_python_live(facts *f, const probe_opts *o)
{
	py_env env;
	py_list l;
	py_discover_process(o->python, &env, &l);
	if (l.selected < 0 || !l.v[l.selected].exists) {
		facts_put_state(f, FACT_ABSENT, "VIRTUAL_ENV, CONDA_PREFIX, pyenv, PATH",
				l.selected < 0 ? "no Python interpreter found" : "the selected interpreter does not exist",
				FK_PYTHON_LIVE_STATUS);
		py_list_free(&l);
		return;
	}
	const py_interp *py = &l.v[l.selected];
	size_t len = 0;
	const char *script = kb_blob("probe_torch.py", &len);
	if (!script) {
		facts_put_state(f, FACT_ERROR, "data/probe_torch.py", "probe script missing from this build", FK_PYTHON_LIVE_STATUS);
		py_list_free(&l);
		return;
	}
	char host[PATH_MAX];
	sysroot_path(host, sizeof(host), py->path);
	facts_put_str(f, py->path, py->path, FK_PYTHON_LIVE_INTERPRETER);
	char *argv[] = {host, "-I", "-c", (char *)script, NULL};
	int timeout = o->python_timeout_ms > 0 ? o->python_timeout_ms : 20000;
	double left = gv_deadline_left(); /* gpuvet run's deadline: said in the message below too */
	if (left * 1000 < timeout)
		timeout = left > 0.1 ? (int)(left * 1000) : 100;
	proc_result r;
	proc_run(argv, NULL, NULL, timeout, MAX_OUTPUT, &r);
	facts_put_real(f, "gpuvet's clock: the live probe's run time", r.seconds, FK_PYTHON_LIVE_SECONDS);
	char why[512];
	if (r.spawn_failed) {
		snprintf(why, sizeof(why), "could not start %s: %s", py->path, strerror(r.spawn_errno));
		put_failure(f, "spawn", why, &r);
	} else if (r.timed_out) {
		if (timeout % 1000 == 0)
			snprintf(why, sizeof(why), "%s did not answer within %d s (killed)", py->path, timeout / 1000);
		else
			snprintf(why, sizeof(why), "%s did not answer within %.1f s (killed)", py->path, timeout / 1000.0);
		put_failure(f, "timeout", why, &r);
	} else {
		char perr[160];
		int rc = probe_out_parse(r.out, r.out_len, f, perr, sizeof(perr));
		if (rc == PROBE_OUT_OK) {
			facts_put_str(f, "python probe", "ok", FK_PYTHON_LIVE_STATUS);
			annotate_maps(f, &env, py);
		} else if (r.signal) {
			snprintf(why, sizeof(why), "%s was killed by signal %d (%s) before answering", py->path, r.signal,
				 strsignal(r.signal));
			put_failure(f, "crash", why, &r);
		} else if (r.truncated) {
			snprintf(why, sizeof(why), "%s flooded its output (more than %u KiB) and gave no result", py->path,
				 MAX_OUTPUT >> 10);
			put_failure(f, "flood", why, &r);
		} else if (rc == PROBE_OUT_NO_MARKER) {
			snprintf(why, sizeof(why), "%s exited with status %d and %s", py->path, r.status, perr);
			put_failure(f, r.status != 0 ? "exit" : "garbage", why, &r);
		} else {
			snprintf(why, sizeof(why), "%s answered garbage: %s", py->path, perr);
			put_failure(f, "garbage", why, &r);
		}
	}
	proc_result_free(&r);
	py_list_free(&l);
}
