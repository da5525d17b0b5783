/*
 * diag's run: the deployment check, the CUDA session and NVML's monitor (following Xid events),
 * the GPUs chosen and the busy ones set aside, every test of the level on every GPU, then the
 * health counters compared with the start, the peers judged and the findings made.
 *
 * GPUs are tested one after the other. A hang is bounded by the watchdog: past a part's deadline
 * and its grace, diag_set_hang_hook's function prints what was found, with the hung test as a
 * fail, and ends the process (a GPU that does not answer cannot be recovered in-process).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/gpu.h"
#include "bench/monitor.h"
#include "bench/watchdog.h"
#include "core/cli.h"
#include "diag/diag_internal.h"
#include "nvidia/nvml.h"
#include "sampler/snapshot.h"

/* The run the watchdog's hook reports on; one diag run per process. */
static diag_ctx *hang_ctx;
static int armed_test = -1, armed_gpu = -1;
static char armed_what[128];
static void (*hang_emit)(diag_run *r);

void diag_set_hang_hook(void (*emit)(diag_run *r))
{
	hang_emit = emit;
}

static void on_hang(int status)
{
	(void)status;
	diag_ctx *c = hang_ctx;
	if (c) {
		diag_result *x = diag_result_add(c->r, armed_test >= 0 ? armed_test : DIAG_T_DEPLOYMENT, armed_gpu);
		diag_result_set(x, DIAG_FAIL, "%s did not finish within its deadline: the GPU or its driver stopped answering",
				armed_what);
		sl_pushf(&x->evidence, "the watchdog's deadline for %s passed, and its grace after it", armed_what);
		diag_result_finding(x, DIAG_F_HUNG, -1);
		diag_collect_findings(c->r);
		c->r->seconds = 0;
		if (hang_emit)
			hang_emit(c->r);
	}
	fflush(NULL);
	_exit(1);
}

void diag_arm(diag_ctx *c, int test, int gpu, const char *what, double seconds)
{
	armed_test = test;
	armed_gpu = gpu;
	str_copy(armed_what, sizeof(armed_what), what);
	watchdog_arm(what, seconds * (c->o->limit_scale > 0 ? c->o->limit_scale : 1));
}

void diag_disarm(void)
{
	watchdog_disarm();
	armed_test = armed_gpu = -1;
}

void diag_bench_reset(diag_ctx *c)
{
	report_free(&c->rep);
	report_init(&c->rep);
	c->bc.r = &c->rep;
}

void diag_progress(diag_ctx *c, const char *fmt, ...)
{
	if (!c->o->progress)
		return;
	char text[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(stderr, "\r\033[K[%d/%d] %s", c->step, c->steps, text);
	fflush(stderr);
}

diag_gpu *diag_gpu_of(diag_ctx *c, int ordinal)
{
	for (int i = 0; i < c->r->ngpus; i++)
		if (c->r->gpus[i].ordinal == ordinal)
			return &c->r->gpus[i];
	return NULL;
}

bool diag_phase_evidence(diag_ctx *c, diag_result *x, const char *phase, int ordinal, monitor_summary *out)
{
	monitor_summary ms;
	diag_gpu *g = diag_gpu_of(c, ordinal);
	if (!g || g->nvml < 0 || !monitor_summary_get(c->bc.mon, phase, g->nvml, &ms))
		return false;
	const monitor_gpu_info *gi = monitor_gpu(c->bc.mon, g->nvml);
	if (isfinite(ms.sm_clock_median)) {
		if (gi && gi->max_sm_clock_mhz)
			sl_pushf(&x->evidence, "SM clock %.0f MHz (%.0f-%.0f) of its %u MHz maximum", ms.sm_clock_median,
				 ms.sm_clock_min, ms.sm_clock_max, gi->max_sm_clock_mhz);
		else
			sl_pushf(&x->evidence, "SM clock %.0f MHz (%.0f-%.0f)", ms.sm_clock_median, ms.sm_clock_min, ms.sm_clock_max);
	}
	if (isfinite(ms.power_mean_w)) {
		if (gi && gi->power_limit_w > 0)
			sl_pushf(&x->evidence, "power %.0f W mean, %.0f W at most, of its %.0f W enforced limit", ms.power_mean_w,
				 ms.power_max_w, gi->power_limit_w);
		else
			sl_pushf(&x->evidence, "power %.0f W mean, %.0f W at most", ms.power_mean_w, ms.power_max_w);
	}
	if (isfinite(ms.temp_max_c)) {
		if (gi && gi->temp_slowdown_c)
			sl_pushf(&x->evidence, "temperature at most %.0f C (slowdown at %u C)", ms.temp_max_c, gi->temp_slowdown_c);
		else
			sl_pushf(&x->evidence, "temperature at most %.0f C", ms.temp_max_c);
	}
	char reasons[256];
	gv_nvml_clock_reasons_text(ms.reasons, reasons, sizeof(reasons));
	sl_pushf(&x->evidence, "clock event reasons seen: %s (%zu NVML samples)", ms.reasons ? reasons : "none", ms.samples);
	if (out)
		*out = ms;
	return true;
}

/* "0,2" or "all" against the count of CUDA devices: which ordinals to test. False with why. */
static bool parse_gpus(const char *list, int count, bool *want, char *why, size_t n)
{
	for (int i = 0; i < count; i++)
		want[i] = !list || strcmp(list, "all") == 0;
	if (!list || strcmp(list, "all") == 0)
		return true;
	strlist parts = {0};
	sl_split(&parts, list, ", ", false);
	bool ok = parts.n > 0;
	if (!ok)
		snprintf(why, n, "--gpus: expected a list of GPU numbers such as 0,1");
	for (size_t i = 0; ok && i < parts.n; i++) {
		char *end;
		long v = strtol(parts.v[i], &end, 10);
		if (*end || end == parts.v[i] || v < 0) {
			snprintf(why, n, "--gpus: '%s' is not a GPU number", parts.v[i]);
			ok = false;
		} else if (v >= count) {
			snprintf(why, n, "--gpus: there is no GPU %ld: CUDA sees %d (CUDA_VISIBLE_DEVICES numbers them)", v, count);
			ok = false;
		} else {
			want[v] = true;
		}
	}
	sl_free(&parts);
	return ok;
}

static void utc_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* Every GPU test is skipped on g, saying why (busy, no session, deployment failed). */
static void skip_gpu_tests(diag_ctx *c, int ordinal, const char *why)
{
	for (int t = 0; t < DIAG_NTESTS; t++)
		if (c->o->tests[t] && diag_tests[t].scope == DIAG_SCOPE_GPU) {
			diag_result *x = diag_result_add(c->r, t, ordinal);
			diag_result_set(x, DIAG_SKIP, "%s", why);
		}
}

static void open_session(diag_ctx *c)
{
	diag_run *r = c->r;
	diag_arm(c, DIAG_T_DEPLOYMENT, -1, "cuInit and the GPUs' properties", 60);
	bench_open_gpus(&c->bc, true);
	diag_disarm();
	if (!c->bc.gpu) {
		snprintf(r->error, sizeof(r->error), "%s", c->bc.gpu_error[0] ? c->bc.gpu_error : "no GPU can be used");
		return;
	}
	gpu_session *s = c->bc.gpu;
	bool want[64] = {0};
	int count = s->count > 64 ? 64 : s->count;
	if (!parse_gpus(c->o->gpus, count, want, r->error, sizeof(r->error))) {
		r->usage_error = true;
		return;
	}
	r->gpus = xcalloc((size_t)count, sizeof(*r->gpus));
	for (int i = 0; i < count; i++) {
		if (!want[i])
			continue;
		diag_gpu *g = &r->gpus[r->ngpus++];
		const gpu_dev *d = &s->dev[i];
		g->ordinal = i;
		g->nvml = d->nvml_index;
		g->tested = true;
		str_copy(g->name, sizeof(g->name), d->name);
		g->mig = strstr(d->name, " MIG ") != NULL;
		str_copy(g->bus_id, sizeof(g->bus_id), d->bus_id);
		const monitor_gpu_info *gi = monitor_gpu(c->bc.mon, d->nvml_index);
		if (gi) {
			str_copy(g->uuid, sizeof(g->uuid), gi->uuid);
			str_copy(g->serial, sizeof(g->serial), gi->serial);
			if (gi->nprocs_other > 0) {
				diag_result *x = diag_result_add(r, DIAG_T_DEPLOYMENT, i);
				str_copy(x->metric, sizeof(x->metric), "processes");
				x->value = gi->nprocs_other;
				if (c->o->force) {
					diag_result_set(x, DIAG_PASS, "other processes use the GPU (%s): tested anyway (--force), in the "
							 "memory they leave free",
							 gi->procs_other);
				} else {
					g->tested = false;
					snprintf(g->skip_reason, sizeof(g->skip_reason),
						 "other processes use the GPU (%s): not tested (--force tests what is free)", gi->procs_other);
					diag_result_set(x, DIAG_SKIP, "%s", g->skip_reason);
					sl_pushf(&x->evidence, "processes on the GPU: %s", gi->procs_other);
					diag_result_finding(x, DIAG_F_BUSY, -1);
				}
			}
		}
	}
	if (c->bc.mon) {
		char err[256];
		c->before = monitor_health_snapshot(c->bc.mon, err, sizeof(err));
	}
	gv_nvml_status ns;
	gv_nvml_status_get(&ns);
	if (ns.init_called && ns.init_rc == NVML_SUCCESS) {
		gv_nvml_system sys;
		gv_nvml_system_info(&sys);
		if (GV_OK(sys.driver_version))
			str_copy(r->driver, sizeof(r->driver), sys.driver_version.v);
	}
	if (s->driver_version > 0)
		snprintf(r->cuda_driver, sizeof(r->cuda_driver), "%d.%d", s->driver_version / 1000, s->driver_version % 1000 / 10);
}

typedef void (*gpu_test_fn)(diag_ctx *c, diag_gpu *g);
static const gpu_test_fn gpu_tests[DIAG_NTESTS] = {
	[DIAG_T_GEMM] = diag_t_gemm,
	[DIAG_T_MEMORY] = diag_t_memory,
	[DIAG_T_PCIE] = diag_t_pcie,
	[DIAG_T_BANDWIDTH] = diag_t_bandwidth,
	[DIAG_T_POWER] = diag_t_power,
	[DIAG_T_HEALTH] = diag_t_health,
};

diag_run *diag_run_all(const diag_opts *o, int argc, char **argv, volatile sig_atomic_t *stop)
{
	diag_run *r = xcalloc(1, sizeof(*r));
	r->o = o;
	r->argc = argc;
	r->argv = argv;
	findings_init(&r->fs);
	if (gethostname(r->host, sizeof(r->host) - 1) != 0)
		str_copy(r->host, sizeof(r->host), "unknown");
	utc_now(r->started_utc, sizeof(r->started_utc));
	double t0 = now_seconds();

	diag_ctx *c = xcalloc(1, sizeof(*c));
	c->r = r;
	c->o = o;
	c->lv = o->level;
	c->stop = stop;
	c->gemm_seconds = o->duration > 0 ? o->duration : o->level->gemm_seconds;
	c->power_seconds = o->duration > 0 ? o->duration : o->level->power_seconds;
	bench_opts *bo = &c->bo;
	bo->quick = true;
	bo->force = true; /* diag sets busy GPUs aside itself, per GPU */
	bo->size = 8192;
	bo->transfer_bytes = o->level->pcie_bytes;
	bo->limit_scale = o->limit_scale > 0 ? o->limit_scale : 1;
	bo->no_evidence = true;
	bo->transfer_basic = true;
	report_init(&c->rep);
	c->bc.o = bo;
	c->bc.r = &c->rep;
	/* the deployment check first, before the watchdog's thread: its probes fork children, and a
	 * fork beside a running thread can leave the child a lock that thread held (probes/registry.c);
	 * the probes bound themselves (NVML 30 s, each child killed 2 s after its own deadline) */
	if (o->tests[DIAG_T_DEPLOYMENT])
		diag_t_deployment(c);
	watchdog_start();
	hang_ctx = c;
	watchdog_set_exit_hook(on_hang);
	if (c->driver_hung[0])
		str_copy(r->error, sizeof(r->error), c->driver_hung); /* cuInit would hang too: no session */
	else
		open_session(c);
	if (r->usage_error)
		goto out;
	int tested = 0;
	for (int i = 0; i < r->ngpus; i++)
		tested += r->gpus[i].tested;
	for (int t = 0; t < DIAG_NTESTS; t++)
		if (o->tests[t] && t != DIAG_T_DEPLOYMENT)
			c->steps += diag_tests[t].scope == DIAG_SCOPE_GPU ? tested : 1;
	if (!c->bc.gpu) {
		/* no CUDA session: the GPU tests cannot run; deployment says why */
		diag_result *x = NULL;
		for (size_t i = 0; i < r->nres; i++)
			if (r->res[i].test == DIAG_T_DEPLOYMENT && r->res[i].gpu < 0)
				x = &r->res[i];
		if (!x && o->tests[DIAG_T_DEPLOYMENT])
			x = diag_result_add(r, DIAG_T_DEPLOYMENT, -1);
		if (x && c->driver_hung[0]) {
			diag_result_set(x, DIAG_FAIL, "the driver hangs: no GPU test can run (cuInit was not tried)");
			sl_pushf(&x->evidence, "%s", r->error);
			diag_result_finding(x, DIAG_F_DEPLOYMENT, -1);
		} else if (x) {
			diag_result_set(x, DIAG_FAIL, "cuInit failed: no GPU test can run");
			sl_pushf(&x->evidence, "cuInit: %s", r->error);
			diag_result_finding(x, DIAG_F_DEPLOYMENT, -1);
		}
		for (int t = 0; t < DIAG_NTESTS; t++)
			if (o->tests[t] && t != DIAG_T_DEPLOYMENT) {
				diag_result *y = diag_result_add(r, t, -1);
				diag_result_set(y, DIAG_SKIP, "no GPU can be used: %s", r->error);
			}
		goto out;
	}
	for (int i = 0; i < r->ngpus; i++)
		if (!r->gpus[i].tested)
			skip_gpu_tests(c, r->gpus[i].ordinal, r->gpus[i].skip_reason);
	for (int t = 0; t < DIAG_NTESTS && !diag_stopping(c); t++) {
		if (!o->tests[t] || t == DIAG_T_DEPLOYMENT)
			continue;
		if (diag_tests[t].scope == DIAG_SCOPE_NODE) {
			c->step++;
			if (t == DIAG_T_P2P)
				diag_t_p2p(c);
			else if (t == DIAG_T_NCCL)
				diag_t_nccl(c);
			continue;
		}
		for (int i = 0; i < r->ngpus && !diag_stopping(c); i++) {
			diag_gpu *g = &r->gpus[i];
			if (!g->tested)
				continue;
			c->step++;
			diag_progress(c, "GPU %d: %s", g->ordinal, diag_tests[t].name);
			double ts = now_seconds();
			size_t before = r->nres;
			gpu_tests[t](c, g);
			for (size_t k = before; k < r->nres; k++)
				if (r->res[k].seconds == 0)
					r->res[k].seconds = now_seconds() - ts;
			if (gpu_broken(c->bc.gpu))
				break; /* a broken context: every later test would only repeat its error */
		}
	}
	if (o->progress)
		fprintf(stderr, "\r\033[K");
	if (diag_stopping(c)) {
		r->interrupted = true;
		r->signal = (int)*c->stop;
	}
	diag_judge_peers(r);
	if (!o->no_history)
		diag_judge_history(r, o->db);
out:
	if (c->bc.gpu || c->bc.mon)
		bench_close_gpus(&c->bc);
	snapshot_free(c->before);
	report_free(&c->rep);
	watchdog_set_exit_hook(NULL);
	hang_ctx = NULL;
	free(c);
	for (int i = 0; i < r->ngpus; i++) {
		diag_gpu *g = &r->gpus[i];
		g->st = DIAG_PASS;
		for (size_t k = 0; k < r->nres; k++)
			if (r->res[k].gpu == g->ordinal && r->res[k].st > g->st)
				g->st = r->res[k].st;
	}
	diag_collect_findings(r);
	r->seconds = now_seconds() - t0;
	return r;
}

void diag_run_free(diag_run *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nres; i++)
		sl_free(&r->res[i].evidence);
	free(r->res);
	free(r->gpus);
	findings_free(&r->fs);
	free(r);
}

int diag_exit_code(const diag_run *r)
{
	if (r->usage_error)
		return EXIT_USAGE;
	if (r->interrupted)
		return 128 + r->signal;
	finding_counts n = findings_count(&r->fs);
	if (n.fail > 0)
		return 1;
	if (r->internal_error)
		return 3;
	/* nothing could be tested (no driver, no usable GPU): a gate must not read it as a pass */
	int tested = 0;
	for (int i = 0; i < r->ngpus; i++)
		tested += r->gpus[i].tested;
	if (r->error[0] && tested == 0)
		return 1;
	return 0;
}
