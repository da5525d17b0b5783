/* gpuvet watch: the live view (docs/watch.md). */
#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/child.h"
#include "nvidia/nvml.h"
#include "render/render.h"
#include "sampler/fields.h"
#include "sampler/sampler.h"
#include "store/history.h"
#include "watch/tui.h"
#include "watch/view.h"

/* the job doctor (--diagnose, the running verdict of --pid) */
#include "doctor/doctor.h"

static const char watch_usage[] =
	"usage: gpuvet watch [options]\n"
	"\n"
	"Live view of every GPU through NVML: utilization and memory bars, sparklines of the last\n"
	"minutes, temperature and its margin to the slowdown threshold, power, clocks and what holds\n"
	"them back, PCIe link, GPM activity counters (SM, tensor, DRAM, FP32 pipes: Hopper and newer),\n"
	"processes with their command lines and the pod or Slurm job each belongs to, and health over time (input-bound, launch-bound, hot,\n"
	"throttled, degraded link, new ECC errors, Xid events) with the action for each.\n"
	"\n"
	"  --interval S          seconds between samples (default 1)\n"
	"  --pid PID             follow one job: the process and its descendants, their GPUs and memory,\n"
	"                        and the job doctor's running verdict (what holds the job back)\n"
	"  --pod NAME            the same for every process of a Kubernetes pod on this node (its name,\n"
	"                        NAMESPACE/NAME or UID; from /proc/PID/cgroup and /var/log/pods)\n"
	"  --job ID              the same for a Slurm job (ID, or ID.STEP for one step)\n"
	"  --diagnose S          with --pid, --pod or --job: watch the job S seconds, print one verdict (GPU-bound on\n"
	"                        tensor cores, DRAM or FP32, fp32 math on a tensor-core GPU, input-bound,\n"
	"                        launch/sync-bound, memory pressure, multi-GPU imbalance, slowdown) with\n"
	"                        the figures and the fix, and exit; --json for one JSON document\n"
	"  --once                print one snapshot as text and exit\n"
	"  --json                with --once: one JSON document (schema gpuvet.watch/1, docs/watch.md);\n"
	"                        with --diagnose: the verdict (schema gpuvet.diagnose/1)\n"
	"  --count N             without a terminal: print N snapshots, then exit (default: until ^C)\n"
	"  --record              append the samples to the history database (gpuvet history)\n"
	"  --db PATH             the history database (default: see gpuvet history --help); --diagnose\n"
	"                        reads the gains gpuvet tune measured there\n"
	"  --low-util-seconds S  utilization under 70% this long while a process holds the GPU makes it\n"
	"                        degraded (default 60)\n"
	"  --kmsg PATH           the kernel log to follow for Xid lines (default /dev/kmsg)\n"
	"\n"
	"keys: q quit, s sort processes, up/down (k/j) select a GPU, a all GPUs, p pause,\n"
	"+/- sparkline span. Without a terminal, watch prints a text snapshot every interval.\n"
	"\n"
	"exit status: 0, or 1 when a GPU is unhealthy (--once), the verdict is a warning (--diagnose)\n"
	"or NVML cannot be read\n";

static volatile sig_atomic_t stop_stream;
static void on_stop(int sig)
{
	stop_stream = 1;
	gv_child_kill_all(); /* a first contact with NVML in progress ends now (nvidia/contact.h) */
	gv_stop_watchdog(sig, NULL); /* a sample stuck in an NVML call does not hold us */
}

static snapshot *lazy_take(void *ctx, char *err, size_t errsize)
{
	return sampler_lazy_take(ctx, err, errsize);
}

/* watch --record: samples into a history run, conditions per GPU at the end. */
typedef struct rec_gpu {
	bool seen;
	double temp_max, power_sum, sm, mem;
	int power_n;
	unsigned long long reasons;
	strlist owners; /* the pods and Slurm jobs seen holding it, in order (owner_text) */
} rec_gpu;

/* At most this many distinct owners are kept per GPU for one recording. */
#define REC_OWNERS_MAX 32

typedef struct recorder {
	history *h;
	hist_run *r;
	double last_flush;
	rec_gpu g[HEALTH_MAX_GPUS];
} recorder;

static void record_sample(void *ctx, const snapshot *s)
{
	recorder *rec = ctx;
	if (!rec->r)
		return;
	for (int i = 0; i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (g->index < 0 || g->index >= HEALTH_MAX_GPUS || g->lost)
			continue;
		if (!rec->g[g->index].seen) {
			history_run_add_gpu(rec->r, g->index, g->name, g->uuid, g->pci_bus_id);
			rec->g[g->index].seen = true;
			rec->g[g->index].temp_max = NAN;
		}
		/* the recorded readings are those sampler/fields.h names a record metric for */
		for (size_t k = 0; k < n_snap_fields; k++) {
			if (!snap_fields[k].record)
				continue;
			sval v;
			memcpy(&v, (const char *)g + snap_fields[k].off, sizeof(v));
			if (sv_has(v))
				history_run_add_sample(rec->r, s->wall_time, g->index, snap_fields[k].record, v.v);
		}
		rec_gpu *c = &rec->g[g->index];
		if (sv_has(g->temp) && (isnan(c->temp_max) || g->temp.v > c->temp_max))
			c->temp_max = g->temp.v;
		if (sv_has(g->power))
			c->power_sum += g->power.v, c->power_n++;
		c->sm = sv_has(g->sm_clock) ? g->sm_clock.v : NAN;
		c->mem = sv_has(g->mem_clock) ? g->mem_clock.v : NAN;
		if (sv_has(g->clock_reasons))
			c->reasons |= (unsigned long long)g->clock_reasons.v & ~(unsigned long long)CLK_GPU_IDLE;
		for (size_t k = 0; k < g->nproc; k++) {
			char own[320];
			if (g->procs[k].owner.kind == OWNER_NONE || c->owners.n >= REC_OWNERS_MAX)
				continue;
			owner_text(&g->procs[k].owner, own, sizeof(own));
			if (!sl_contains(&c->owners, own))
				sl_push(&c->owners, own);
		}
	}
	/* a long recording goes to disk every minute instead of growing in memory */
	if (s->time - rec->last_flush >= 60) {
		char *err = NULL;
		if (!history_run_flush(rec->h, rec->r, &err)) {
			gv_warning("history: %s", err);
			free(err);
		}
		rec->last_flush = s->time;
	}
}

static int record_finish(recorder *rec, const snapshot *last)
{
	if (!rec->r)
		return 0;
	for (int i = 0; i < HEALTH_MAX_GPUS; i++) {
		if (!rec->g[i].seen)
			continue;
		char words[256];
		history_run_gpu_conditions(rec->r, i, rec->g[i].sm, rec->g[i].mem, rec->g[i].temp_max,
					   rec->g[i].power_n ? rec->g[i].power_sum / rec->g[i].power_n : NAN,
					   rec->g[i].reasons ? gv_nvml_clock_reasons_text(rec->g[i].reasons, words, sizeof(words))
							     : NULL);
		/* whose jobs held the GPU during the recording: meta gpu.N.owners ("ns/pod/ctr; slurm 42.0 (alice)") */
		if (rec->g[i].owners.n) {
			strbuf b;
			sb_init(&b);
			for (size_t k = 0; k < rec->g[i].owners.n; k++)
				sb_addf(&b, "%s%s", k ? "; " : "", rec->g[i].owners.v[k]);
			char key[32];
			snprintf(key, sizeof(key), "gpu.%d.owners", i);
			history_run_set(rec->r, key, b.buf);
			sb_free(&b);
		}
		sl_free(&rec->g[i].owners);
	}
	if (last && last->driver_version[0])
		history_run_set(rec->r, HIST_META_DRIVER, last->driver_version);
	char *err = NULL;
	long long id = 0;
	int rc = 0;
	if (!history_run_finish(rec->h, rec->r, &id, &err)) {
		gv_warning("watch run not stored: %s", err);
		free(err);
		rc = -1;
	} else {
		fprintf(stderr, "gpuvet: recorded as run %lld in %s\n", id, history_path(rec->h));
	}
	rec->r = NULL;
	history_close(rec->h);
	rec->h = NULL;
	return rc;
}

static void print_json(cJSON *doc)
{
	char *s = cJSON_Print(doc);
	puts(s);
	free(s);
	cJSON_Delete(doc);
}

/* Every good snapshot of the live view: --record and the job doctor's running verdict. */
typedef struct sample_hooks {
	recorder *rec;
	doctor_running *doctor;
	job *job;
} sample_hooks;

static void on_sample(void *ctx, const snapshot *s)
{
	sample_hooks *h = ctx;
	if (h->rec && h->rec->r)
		record_sample(h->rec, s);
	if (h->doctor && h->job)
		doctor_running_feed(h->doctor, s, h->job);
}

static void print_verdict(FILE *out, const doctor_evidence *ev, const doctor_verdict *v)
{
	char *t = doctor_text(ev, v, "  ");
	fputs(t, out);
	free(t);
}

/* watch --pid PID --diagnose S: samples the job for S seconds, prints one verdict. */
static int diagnose_job(sample_source *src, job *jb, double seconds, double interval, bool json, const char *db)
{
	if (interval > 1)
		interval = 1;
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	char err[256] = "";
	/* the first take opens NVML and starts the GPM counters; the window starts after it */
	snapshot *s = src->take(src->ctx, err, sizeof(err));
	if (!s) {
		gv_error("cannot read the GPUs: %s (gpuvet check says why)", err);
		return EXIT_FINDING;
	}
	snapshot_free(s);
	doctor_acc *acc = doctor_acc_new(jb);
	double t_end = now_seconds() + seconds;
	int good = 0;
	while (!stop_stream) {
		double left = t_end - now_seconds();
		double nap = left < interval ? left : interval;
		sleep_seconds(nap);
		job_rescan(jb);
		s = src->take(src->ctx, err, sizeof(err));
		if (s) {
			doctor_acc_add(acc, s, jb);
			good++;
			snapshot_free(s);
		}
		if (now_seconds() >= t_end - 1e-3 || !jb->alive)
			break;
	}
	doctor_evidence *ev = xcalloc(1, sizeof(*ev));
	doctor_acc_finish(acc, jb, ev);
	doctor_acc_free(acc);
	doctor_verdict v;
	doctor_diagnose(ev, NULL, &v);
	/* fp32 math on a tensor-core GPU: quote what `gpuvet tune` measured on this GPU class (the
	 * history database: --db, or the default one unless GPUVET_NO_HISTORY) */
	const char *nohist = getenv("GPUVET_NO_HISTORY");
	if (v.id && strcmp(v.id, "job.fp32-math") == 0 && ev->ngpus > 0 && (db || !nohist || !*nohist) &&
	    doctor_tune_gain(db, ev->gpus[0].name, &ev->tune_tf32_gain, ev->tune_source, sizeof(ev->tune_source)))
		doctor_diagnose(ev, NULL, &v);
	if (json)
		print_json(doctor_json(ev, &v));
	else
		print_verdict(stdout, ev, &v);
	int rc = v.level == DOCTOR_WARN ? EXIT_FINDING : EXIT_OK;
	if (!good) {
		gv_error("no GPU sample during the window: %s", err);
		rc = EXIT_FINDING;
	}
	free(ev);
	return rc;
}

int cmd_watch(int argc, char **argv)
{
	enum { OPT_INTERVAL = 256, OPT_PID, OPT_POD, OPT_JOB, OPT_ONCE, OPT_JSON, OPT_COUNT, OPT_RECORD, OPT_DB, OPT_LOWUTIL, OPT_KMSG,
	       OPT_DIAGNOSE };
	static const struct option longopts[] = {
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"pid", required_argument, NULL, OPT_PID},
		{"pod", required_argument, NULL, OPT_POD},
		{"job", required_argument, NULL, OPT_JOB},
		{"once", no_argument, NULL, OPT_ONCE},
		{"json", no_argument, NULL, OPT_JSON},
		{"count", required_argument, NULL, OPT_COUNT},
		{"record", no_argument, NULL, OPT_RECORD},
		{"db", required_argument, NULL, OPT_DB},
		{"low-util-seconds", required_argument, NULL, OPT_LOWUTIL},
		{"kmsg", required_argument, NULL, OPT_KMSG},
		{"diagnose", required_argument, NULL, OPT_DIAGNOSE},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double interval = 1, diagnose_s = 0;
	long pid = -1, count = 0;
	const char *pod = NULL, *slurm_job = NULL;
	bool once = false, json = false, record = false;
	const char *db = NULL, *kmsg = NULL;
	health_cfg hc;
	health_cfg_default(&hc);
	int c;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_INTERVAL:
			if (!parse_double_opt("--interval", optarg, 0.05, 3600, &interval))
				return EXIT_USAGE;
			break;
		case OPT_PID:
			if (!parse_int_opt("--pid", optarg, 1, 0x7fffffff, &pid))
				return EXIT_USAGE;
			break;
		case OPT_POD: pod = optarg; break;
		case OPT_JOB: slurm_job = optarg; break;
		case OPT_ONCE: once = true; break;
		case OPT_JSON: json = true; break;
		case OPT_COUNT:
			if (!parse_int_opt("--count", optarg, 1, 100000000, &count))
				return EXIT_USAGE;
			break;
		case OPT_RECORD: record = true; break;
		case OPT_DB: db = optarg; break;
		case OPT_LOWUTIL:
			if (!parse_double_opt("--low-util-seconds", optarg, 0, 86400, &hc.util_low_seconds))
				return EXIT_USAGE;
			break;
		case OPT_KMSG: kmsg = optarg; break;
		case OPT_DIAGNOSE:
			if (!parse_double_opt("--diagnose", optarg, 0.5, 3600, &diagnose_s))
				return EXIT_USAGE;
			break;
		default: return usage_getopt_rest(c, watch_usage, argv);
		}
	}
	if (optind < argc)
		return usage_error(watch_usage, "unexpected argument '%s'", argv[optind]);
	if ((pid > 0) + (pod != NULL) + (slurm_job != NULL) > 1)
		return usage_error(watch_usage, "--pid, --pod and --job follow one job: give one of them");
	if ((pod && !*pod) || (slurm_job && !*slurm_job))
		return usage_error(watch_usage, "%s needs a name", pod ? "--pod" : "--job");
	bool follow = pid > 0 || pod || slurm_job;
	if (diagnose_s > 0 && !follow)
		return usage_error(watch_usage, "--diagnose goes with --pid, --pod or --job");
	if (diagnose_s > 0 && (once || record))
		return usage_error(watch_usage, "--diagnose does not go with --once or --record");
	if (json && !once && diagnose_s <= 0)
		return usage_error(watch_usage, "--json goes with --once or --diagnose");

	job jb;
	if (pid > 0) {
		job_scan(&jb, (unsigned)pid);
		if (!jb.alive) {
			gv_error("--pid %ld: no such process", pid);
			return EXIT_USAGE;
		}
	} else if (pod || slurm_job) {
		job_scan_owner(&jb, pod, slurm_job);
		if (!jb.alive) {
			if (pod)
				gv_error("--pod %s: no process of that pod on this node (read from /proc/PID/cgroup and "
					 "/var/log/pods: docs/fleet.md)",
					 pod);
			else
				gv_error("--job %s: no process of that Slurm job on this node (read from /proc/PID/cgroup and "
					 "the SLURM_* environment: docs/fleet.md)",
					 slurm_job);
			return EXIT_USAGE;
		}
	}
	health_tracker *health = xcalloc(1, sizeof(*health));
	health_init(health, &hc);
	sampler_lazy lazy = {0};
	lazy.o.no_events = once;
	lazy.o.kmsg = kmsg;
	lazy.o.health_every = 1; /* a person watching wants ECC counters as they change */
	sample_source src = {&lazy, lazy_take};
	recorder rec = {0};
	if (record) {
		char *err = NULL;
		signal(SIGXFSZ, SIG_IGN); /* a file-size limit fails a flush (a warning), never kills the watch */
		rec.h = history_open(db, HISTORY_WRITE, &err);
		if (rec.h && history_notice(rec.h))
			gv_warning("%s", history_notice(rec.h));
		if (!rec.h) {
			gv_error("--record: %s", err);
			free(err);
			free(health);
			return EXIT_USAGE;
		}
		rec.r = history_run_begin(HIST_WATCH, argc, argv);
		rec.last_flush = now_seconds();
	}
	view_opts vo = {follow ? &jb : NULL, false};
	int rc = EXIT_OK;
	doctor_running running = {0};
	running.window = interval * 10 > 2 ? interval * 10 : 2; /* the last 10 samples, at least 2 s */
	sample_hooks hooks = {record ? &rec : NULL, follow ? &running : NULL, follow ? &jb : NULL};
	if (diagnose_s > 0) {
		lazy.o.no_events = true;
		rc = diagnose_job(&src, &jb, diagnose_s, interval, json, db);
		sampler_lazy_close(&lazy);
		free(health);
		return rc;
	}

	if (once || !isatty(STDOUT_FILENO)) {
		/* text (or JSON) snapshots: --once, or a pipe, a log file, a service */
		signal(SIGINT, on_stop);
		signal(SIGTERM, on_stop);
		long n = once ? 1 : count;
		snapshot *last = NULL;
		for (long i = 0; (n == 0 || i < n) && !stop_stream; i++) {
			double t0 = now_seconds();
			char err[256] = "";
			snapshot *s = src.take(src.ctx, err, sizeof(err));
			if (!s && stop_stream) /* interrupted in the first contact: nothing to report */
				break;
			if (!s) {
				if (json) {
					cJSON *doc = cJSON_CreateObject();
					cJSON_AddStringToObject(doc, "schema", "gpuvet.watch/1");
					cJSON_AddStringToObject(doc, "error", err);
					print_json(doc);
				}
				gv_error("cannot read the GPUs: %s (gpuvet check says why)", err);
				rc = EXIT_FINDING;
				if (once)
					break;
			} else {
				health_update(health, s, s->time);
				if (follow)
					job_rescan(&jb);
				on_sample(&hooks, s);
				if (json)
					print_json(view_json(s, health, &vo));
				else
					view_text(stdout, s, health, &vo);
				if (!json && running.have)
					fprintf(stdout, "\njob doctor (last %.0f s): %s [%s]\n      -> %s\n", running.ev.seconds,
						running.v.title, running.v.id, running.v.nfix ? running.v.fix[0] : "");
				fflush(stdout);
				if (once && health_overall(health) == HEALTH_UNHEALTHY)
					rc = EXIT_FINDING;
				snapshot_free(last);
				last = s;
			}
			if (n != 0 && i + 1 >= n)
				break;
			if (!json)
				fputc('\n', stdout);
			sleep_seconds(interval - (now_seconds() - t0));
		}
		if (record)
			record_finish(&rec, last);
		snapshot_free(last);
	} else {
		tui_opts to = {0};
		to.src = src;
		to.interval = interval;
		to.health = health;
		to.job = follow ? &jb : NULL;
		to.color = color_wanted(stdout, gopts.color);
		to.on_sample = on_sample;
		to.on_sample_ctx = &hooks;
		to.doctor = follow ? &running : NULL;
		const char *max = getenv("GPUVET_WATCH_SECONDS"); /* tests: a TUI that ends by itself */
		if (max && *max)
			to.max_seconds = atof(max);
		if (tui_run(&to) != 0) {
			gv_error("cannot set up the terminal (TERM=%s); try --once", getenv("TERM") ? getenv("TERM") : "");
			rc = EXIT_INTERNAL;
		}
		if (record)
			record_finish(&rec, NULL);
	}
	doctor_running_free(&running);
	sampler_lazy_close(&lazy);
	free(health);
	return rc;
}
