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
#include "nvidia/nvml.h"
#include "render/render.h"
#include "sampler/sampler.h"
#include "store/history.h"
#include "watch/tui.h"
#include "watch/view.h"

static const char watch_usage[] =
	"usage: gpuvet watch [options]\n"
	"\n"
	"Live view of every GPU through NVML: utilization and memory bars, sparklines of the last\n"
	"minutes, temperature and its margin to the slowdown threshold, power, clocks and what holds\n"
	"them back, PCIe link, processes with their command lines, and health over time (input-bound,\n"
	"hot, throttled, degraded link, new ECC errors, Xid events) with the action for each.\n"
	"\n"
	"  --interval S          seconds between samples (default 1)\n"
	"  --pid PID             follow one job: the process and its descendants, their GPUs and memory\n"
	"  --once                print one snapshot as text and exit\n"
	"  --json                with --once: one JSON document (schema gpuvet.watch/1, docs/watch.md)\n"
	"  --count N             without a terminal: print N snapshots, then exit (default: until ^C)\n"
	"  --record              append the samples to the history database (gpuvet history)\n"
	"  --db PATH             the history database (default: see gpuvet history --help)\n"
	"  --low-util-seconds S  utilization under 70% this long while a process holds the GPU makes it\n"
	"                        degraded (default 60)\n"
	"  --kmsg PATH           the kernel log to follow for Xid lines (default /dev/kmsg)\n"
	"\n"
	"keys: q quit, s sort processes, up/down (k/j) select a GPU, a all GPUs, p pause,\n"
	"+/- sparkline span. Without a terminal, watch prints a text snapshot every interval.\n"
	"\n"
	"exit status: 0, or 1 when a GPU is unhealthy (--once) or NVML cannot be read\n";

static volatile sig_atomic_t stop_stream;
static void on_stop(int sig)
{
	(void)sig;
	stop_stream = 1;
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
} rec_gpu;

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
		static const struct {
			const char *metric;
			size_t off;
		} m[] = {
			{"utilization_gpu", offsetof(gpu_sample, util_gpu)},
			{"utilization_memory", offsetof(gpu_sample, util_mem)},
			{"memory_used_bytes", offsetof(gpu_sample, mem_used)},
			{"temperature_c", offsetof(gpu_sample, temp)},
			{"power_w", offsetof(gpu_sample, power)},
			{"sm_clock_mhz", offsetof(gpu_sample, sm_clock)},
			{"mem_clock_mhz", offsetof(gpu_sample, mem_clock)},
		};
		for (size_t k = 0; k < GV_ARRAY_LEN(m); k++) {
			sval v;
			memcpy(&v, (const char *)g + m[k].off, sizeof(v));
			if (sv_has(v))
				history_run_add_sample(rec->r, s->wall_time, g->index, m[k].metric, v.v);
		}
		if (sv_has(g->nprocs))
			history_run_add_sample(rec->r, s->wall_time, g->index, "processes", g->nprocs.v);
		rec_gpu *c = &rec->g[g->index];
		if (sv_has(g->temp) && (isnan(c->temp_max) || g->temp.v > c->temp_max))
			c->temp_max = g->temp.v;
		if (sv_has(g->power))
			c->power_sum += g->power.v, c->power_n++;
		c->sm = sv_has(g->sm_clock) ? g->sm_clock.v : NAN;
		c->mem = sv_has(g->mem_clock) ? g->mem_clock.v : NAN;
		if (sv_has(g->clock_reasons))
			c->reasons |= (unsigned long long)g->clock_reasons.v & ~(unsigned long long)CLK_GPU_IDLE;
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

int cmd_watch(int argc, char **argv)
{
	enum { OPT_INTERVAL = 256, OPT_PID, OPT_ONCE, OPT_JSON, OPT_COUNT, OPT_RECORD, OPT_DB, OPT_LOWUTIL, OPT_KMSG };
	static const struct option longopts[] = {
		{"interval", required_argument, NULL, OPT_INTERVAL},
		{"pid", required_argument, NULL, OPT_PID},
		{"once", no_argument, NULL, OPT_ONCE},
		{"json", no_argument, NULL, OPT_JSON},
		{"count", required_argument, NULL, OPT_COUNT},
		{"record", no_argument, NULL, OPT_RECORD},
		{"db", required_argument, NULL, OPT_DB},
		{"low-util-seconds", required_argument, NULL, OPT_LOWUTIL},
		{"kmsg", required_argument, NULL, OPT_KMSG},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	double interval = 1;
	long pid = -1, count = 0;
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
		case 'h': fputs(watch_usage, stdout); return EXIT_OK;
		case ':': return usage_error(watch_usage, "option %s needs a value", argv[optind - 1]);
		default: return usage_error(watch_usage, "unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return usage_error(watch_usage, "unexpected argument '%s'", argv[optind]);
	if (json && !once)
		return usage_error(watch_usage, "--json goes with --once");

	job jb;
	if (pid > 0) {
		job_scan(&jb, (unsigned)pid);
		if (!jb.alive) {
			gv_error("--pid %ld: no such process", pid);
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
	view_opts vo = {pid > 0 ? &jb : NULL, false};
	int rc = EXIT_OK;

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
				if (pid > 0)
					job_scan(&jb, (unsigned)pid);
				if (record)
					record_sample(&rec, s);
				if (json)
					print_json(view_json(s, health, &vo));
				else
					view_text(stdout, s, health, &vo);
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
			double left = interval - (now_seconds() - t0);
			if (left > 0) {
				struct timespec ts = {(time_t)left, (long)((left - (double)(time_t)left) * 1e9)};
				nanosleep(&ts, NULL);
			}
		}
		if (record)
			record_finish(&rec, last);
		snapshot_free(last);
	} else {
		tui_opts to = {0};
		to.src = src;
		to.interval = interval;
		to.health = health;
		to.job = pid > 0 ? &jb : NULL;
		to.color = color_wanted(stdout, gopts.color);
		if (record) {
			to.on_sample = record_sample;
			to.on_sample_ctx = &rec;
		}
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
	sampler_lazy_close(&lazy);
	free(health);
	return rc;
}
