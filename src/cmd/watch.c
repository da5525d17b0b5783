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
#include "sampler/bounded.h"
#include "sampler/sampler.h"
#include "sampler/summary.h"
#include "store/history.h"
#include "watch/keys.h"
#include "watch/tui.h"
#include "watch/view.h"

/* the job doctor (--diagnose, the running verdict of --pid) */
#include "doctor/doctor.h"

enum { OPT_INTERVAL = 256, OPT_PID, OPT_POD, OPT_JOB, OPT_ONCE, OPT_JSON, OPT_COUNT, OPT_RECORD, OPT_LOWUTIL, OPT_KMSG,
       OPT_DIAGNOSE };

static const gv_option watch_options[] = {
	GV_OPT_ARG("interval", OPT_INTERVAL, "S", GV_VAL_NUMBER, "seconds between samples (default 1)"),
	GV_OPT_ARG("pid", OPT_PID, "PID", GV_VAL_NUMBER,
		   "follow one job: the process and its descendants, their GPUs and memory, and the job doctor's running "
		   "verdict (what holds the job back)"),
	GV_OPT_ARG("pod", OPT_POD, "NAME", GV_VAL_TEXT,
		   "the same for every process of a Kubernetes pod on this node (its name, NAMESPACE/NAME or UID; from "
		   "/proc/PID/cgroup and /var/log/pods)"),
	GV_OPT_ARG("job", OPT_JOB, "ID", GV_VAL_TEXT, "the same for a Slurm job (ID, or ID.STEP for one step)"),
	GV_OPT_ARG("diagnose", OPT_DIAGNOSE, "S", GV_VAL_NUMBER,
		   "with --pid, --pod or --job: watch the job S seconds, print one verdict (GPU-bound on tensor cores, DRAM "
		   "or FP32, fp32 math on a tensor-core GPU, input-bound (too few DataLoader workers), launch/sync-bound, "
		   "memory that grows, memory pressure, multi-GPU imbalance, slowdown; for an idle job, what it waits on: "
		   "a file, a socket, a pipe, the GPU driver) with the figures and the fix, and exit; --json for one JSON "
		   "document"),
	GV_OPT_FLAG("once", OPT_ONCE, "print one snapshot as text and exit"),
	GV_OPT_FLAG("json", OPT_JSON,
		    "with --once: one JSON document (schema gpuvet.watch/1, docs/watch.md); with --diagnose: the verdict "
		    "(schema gpuvet.diagnose/1)"),
	GV_OPT_ARG("count", OPT_COUNT, "N", GV_VAL_NUMBER, "without a terminal: print N snapshots, then exit (default: until ^C)"),
	GV_OPT_FLAG("record", OPT_RECORD, "append the samples to the history database (gpuvet history)"),
	GV_OPT_ARG("db", OPT_HIST_DB, "PATH", GV_VAL_FILE,
		   "the history database (default: see gpuvet history --help); --diagnose reads the gains gpuvet tune "
		   "measured there"),
	GV_OPT_ARG("low-util-seconds", OPT_LOWUTIL, "S", GV_VAL_NUMBER,
		   "utilization under 70% this long while a process holds the GPU makes it degraded (default 60)"),
	GV_OPT_ARG("kmsg", OPT_KMSG, "PATH", GV_VAL_FILE, "the kernel log to follow for Xid lines (default /dev/kmsg)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli watch_cli = {
	.name = "watch",
	.summary = "live view of the GPUs and their health",
	.head = "usage: gpuvet watch [options]\n"
		"\n"
		"Live view of every GPU through NVML: utilization and memory bars, sparklines of the last\n"
		"minutes, temperature and its margin to the slowdown threshold, power, clocks and what holds\n"
		"them back, PCIe link, GPM activity counters (SM, tensor, DRAM, FP32 pipes: Hopper and newer),\n"
		"processes with their command lines and the pod or Slurm job each belongs to, and health over\n"
		"time (input-bound, launch-bound, hot, throttled, degraded link, new ECC errors, Xid events)\n"
		"with the action for each.\n"
		"\n",
	.opts = watch_options,
	.tail = "\n"
		"Without a terminal, watch prints a text snapshot every interval.\n"
		"\n"
		"exit status: 0, or 1 when a GPU is unhealthy (--once), the verdict is a warning (--diagnose)\n"
		"or NVML cannot be read (--once: within the driver deadline, 30 s); 128 + N when signal N\n"
		"stopped it before it printed anything\n",
	.help_more = watch_keys_print, /* the key table of the live view (watch/keys.h) */
};

static volatile sig_atomic_t stop_stream;
static volatile sig_atomic_t stop_signal; /* the signal that stopped it */
static void on_stop(int sig)
{
	stop_stream = 1;
	stop_signal = sig;
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
	gpu_window w;   /* its conditions over the recording (sampler/summary.h) */
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
			gpu_window_init(&rec->g[g->index].w, g->index, g->name);
			rec->g[g->index].w.sums_only = true; /* a recording may last days */
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
		gpu_window_add(&c->w, g, s->time, NULL, JOB_GPU_NONE, NAN);
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
		gpu_summary gs;
		gpu_window_summary(&rec->g[i].w, &gs);
		gpu_window_free(&rec->g[i].w);
		unsigned long long reasons = gs.reasons & ~(unsigned long long)CLK_GPU_IDLE;
		history_run_gpu_conditions(rec->r, i, gs.sm_clock_last, gs.mem_clock_last, gs.temp_max, gs.power,
					   reasons ? gv_nvml_clock_reasons_text(reasons, words, sizeof(words)) : NULL);
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
	doctor_live *doctor;
	job *job;
} sample_hooks;

static void on_sample(void *ctx, const snapshot *s)
{
	sample_hooks *h = ctx;
	if (h->rec && h->rec->r)
		record_sample(h->rec, s);
	if (h->doctor && h->job)
		doctor_live_feed(h->doctor, s, h->job);
}

/* watch --pid PID --diagnose S: samples the job for S seconds, prints one verdict. */
static int diagnose_job(sample_source *src, job *jb, double seconds, double interval, bool json, const char *db)
{
	if (interval > 1)
		interval = 1;
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	char err[256] = "";
	/* the first take opens NVML and starts the GPM counters; it starts the window */
	snapshot *s = src->take(src->ctx, err, sizeof(err));
	if (!s) {
		gv_error("cannot read the GPUs: %s (gpuvet check says why)", err);
		return EXIT_FINDING;
	}
	doctor_live_opts o = {.window = 0, .db = db, .stacks = true};
	doctor_live *doc = doctor_live_new(&o);
	doctor_live_feed(doc, s, jb);
	snapshot_free(s);
	double t_end = now_seconds() + seconds;
	int good = 0;
	while (!stop_stream) {
		double left = t_end - now_seconds();
		sleep_seconds(left < interval ? left : interval);
		job_rescan(jb);
		s = src->take(src->ctx, err, sizeof(err));
		if (s) {
			doctor_live_feed(doc, s, jb);
			good++;
			snapshot_free(s);
		}
		if (now_seconds() >= t_end - 1e-3 || !jb->alive)
			break;
	}
	const doctor_result *r = doctor_live_finish(doc, jb);
	int rc = EXIT_FINDING;
	if (r) {
		if (json)
			print_json(doctor_json(&r->ev, &r->v));
		else {
			char *t = doctor_text(&r->ev, &r->v, "  ");
			fputs(t, stdout);
			free(t);
		}
		rc = r->v.level == DOCTOR_WARN ? EXIT_FINDING : EXIT_OK;
	}
	if (!good) {
		gv_error("no GPU sample during the window: %s", err[0] ? err : "the job ended");
		rc = EXIT_FINDING;
	}
	doctor_live_free(doc);
	return rc;
}

int cmd_watch(int argc, char **argv)
{
	const char *watch_usage = gv_usage(&watch_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&watch_cli, longopts, shortopts);
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
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
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
		case OPT_HIST_DB: db = optarg; break;
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
	/* the running verdict: the last 10 samples, at least 2 s */
	doctor_live_opts dopts = {.window = interval * 10 > 2 ? interval * 10 : 2, .db = db};
	doctor_live *running = follow ? doctor_live_new(&dopts) : NULL;
	sample_hooks hooks = {record ? &rec : NULL, running, follow ? &jb : NULL};
	if (diagnose_s > 0) {
		lazy.o.no_events = true;
		rc = diagnose_job(&src, &jb, diagnose_s, interval, json, db);
		doctor_live_free(running);
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
		bool printed = false, stuck = false;
		for (long i = 0; (n == 0 || i < n) && !stop_stream; i++) {
			double t0 = now_seconds();
			char err[256] = "";
			/* --once ends by itself: NVML gets the deadline check gives it (+2 s, as check's
			 * child: a hung nvmlInit is named by the first contact's own deadline first) */
			snapshot *s = once ? sample_take_within(&src, gv_driver_timeout(30) + 2, err, sizeof(err), &stuck)
					   : src.take(src.ctx, err, sizeof(err));
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
				printed = true;
				health_update(health, s, s->time);
				if (follow)
					job_rescan(&jb);
				on_sample(&hooks, s);
				if (json)
					print_json(view_json(s, health, &vo));
				else
					view_text(stdout, s, health, &vo);
				const doctor_result *dr = doctor_live_last(running);
				if (!json && dr)
					fprintf(stdout, "\njob doctor (last %.0f s): %s [%s]\n      -> %s\n", dr->ev.seconds, dr->v.title,
						dr->v.id, dr->v.nfix ? dr->v.fix[0] : "");
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
		if (stop_signal && !printed)
			rc = 128 + stop_signal; /* interrupted before it said anything: not a success */
		if (stuck) { /* a thread inside NVML: nothing may wait for its locks (sampler/bounded.h) */
			fflush(stdout);
			fflush(stderr);
			_exit(rc);
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
		to.doctor = running;
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
	doctor_live_free(running);
	sampler_lazy_close(&lazy);
	free(health);
	return rc;
}
