/* gpuvet serve: the Prometheus exporter (docs/serve.md), the body of gpuvet-serve. gpuvet itself
 * runs that program for `gpuvet serve` (cmd/serve_exec.c), so that no other command pays for
 * loading libmicrohttpd and its TLS chain (1.3 ms at every start on the build machine). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "cmd/serve.h"
#include "core/child.h"
#include "core/reaper.h"
#include "nvidia/contact.h"
#include "sampler/sampler.h"
#include "serve/conn_budget.h"
#include "serve/exporter.h"
#include "serve/http.h"
#include "serve/textfile.h"

static snapshot *lazy_take(void *ctx, char *err, size_t errsize)
{
	return sampler_lazy_take(ctx, err, errsize);
}

static void default_hostname(char *buf, size_t size)
{
	const char *node = getenv("NODE_NAME");
	if (node && *node) {
		str_copy(buf, size, node);
		return;
	}
	if (gethostname(buf, size) != 0)
		str_copy(buf, size, "localhost");
	buf[size - 1] = '\0';
}

/* Waits up to seconds for SIGINT/SIGTERM (blocked in every thread); true when one came. */
static bool wait_signal(const sigset_t *set, double seconds)
{
	if (seconds < 0) {
		int sig;
		sigwait(set, &sig);
		return true;
	}
	struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
	for (;;) {
		int r = sigtimedwait(set, NULL, &ts);
		if (r > 0)
			return true;
		if (r < 0 && errno == EINTR)
			continue;
		return false;
	}
}

/* --textfile samples in this thread, in NVML's calls: SIGINT/SIGTERM are taken by a handler
 * there (not sigwait), and a watchdog ends the process when a call does not return. */
static volatile sig_atomic_t textfile_stop;
static void on_textfile_stop(int sig)
{
	textfile_stop = 1;
	gv_child_kill_all();
	gv_stop_watchdog(sig, NULL);
}

/* Sleeps up to seconds; true when a stop signal came. */
static bool textfile_nap(double seconds)
{
	double until = now_seconds() + seconds;
	while (!textfile_stop) {
		double left = until - now_seconds();
		if (left <= 0)
			return false;
		if (left > 0.1)
			left = 0.1;
		sleep_seconds(left);
	}
	return true;
}

static int run_textfile(const char *dir, bool once, const exporter_opts *eo, sample_source src, const sigset_t *set)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_textfile_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	pthread_sigmask(SIG_UNBLOCK, set, NULL);
	exporter *ex = exporter_new_unthreaded(eo, src);
	int rc = EXIT_OK;
	double next_check = now_seconds() + eo->check_interval;
	for (;;) {
		double t0 = now_seconds();
		exporter_tick(ex);
		if (eo->check_interval > 0 && t0 >= next_check) {
			exporter_run_check(ex);
			next_check = t0 + eo->check_interval;
		}
		size_t len;
		char *data = exporter_render_all(ex, EXPO_TEXT, &len);
		char err[512];
		if (textfile_write(dir, TEXTFILE_NAME, data, len, err, sizeof(err)) != 0) {
			gv_error("%s", err);
			rc = EXIT_INTERNAL;
		}
		free(data);
		if (once || rc != EXIT_OK)
			break;
		double left = eo->interval - (now_seconds() - t0);
		if (textfile_nap(left > 0 ? left : 0))
			break;
	}
	exporter_stop(ex); /* no threads here: always stops */
	return rc;
}


int cmd_serve(int argc, char **argv)
{
	const char *serve_usage = gv_usage(&serve_cli);
	struct option longopts[GV_OPTIONS_MAX + 1];
	char shortopts[3 * GV_OPTIONS_MAX + 4];
	gv_getopt_arrays(&serve_cli, longopts, shortopts);
	http_opts ho;
	http_opts_default(&ho);
	exporter_opts eo = {0};
	eo.interval = 1;
	eo.check_interval = 300;
	health_cfg hc;
	health_cfg_default(&hc);
	eo.health = &hc;
	const char *textfile = NULL, *hostname = NULL;
	const char *allow[64];
	size_t nallow = 0;
	bool once = false;
	int c;
	bool no_gpm = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		long v;
		double d;
		switch (c) {
		case OPT_LISTEN: ho.listen = optarg; break;
		case OPT_ALLOW: {
			conn_net net;
			char why[256];
			if (!conn_net_parse(optarg, &net, why, sizeof(why)))
				return usage_error(serve_usage, "--allow %s", why);
			if (nallow == GV_ARRAY_LEN(allow))
				return usage_error(serve_usage, "--allow: at most %zu networks", GV_ARRAY_LEN(allow));
			allow[nallow++] = optarg;
			break;
		}
		case OPT_INTERVAL:
			if (!parse_double_opt("--interval", optarg, 0.05, 3600, &eo.interval))
				return EXIT_USAGE;
			break;
		case OPT_DCGM: eo.dcgm = true; break;
		case OPT_DCGM_MODEL: eo.dcgm_model_name = true; break;
		case OPT_PROCS: eo.processes = true; break;
		case OPT_PROC_SERIES: {
			long n;
			if (!parse_int_opt("--process-series", optarg, 1, 100000, &n))
				return EXIT_USAGE;
			eo.process_series_max = (size_t)n;
			break;
		}
		case OPT_NO_GPM: no_gpm = true; break;
		case OPT_HOST: hostname = optarg; break;
		case OPT_CHECK_INTERVAL:
			if (!parse_double_opt("--check-interval", optarg, 0, 86400 * 7, &eo.check_interval))
				return EXIT_USAGE;
			break;
		case OPT_CHECK_FULL: eo.check_full = true; break;
		case OPT_LOWUTIL:
			if (!parse_double_opt("--low-util-seconds", optarg, 0, 86400, &d))
				return EXIT_USAGE;
			hc.util_low_seconds = d;
			break;
		case OPT_TEXTFILE: textfile = optarg; break;
		case OPT_ONCE: once = true; break;
		case OPT_MAXCONN:
			if (!parse_int_opt("--max-connections", optarg, 1, 100000, &v))
				return EXIT_USAGE;
			ho.max_connections = (unsigned)v;
			break;
		case OPT_MAXIP:
			if (!parse_int_opt("--max-connections-per-ip", optarg, 0, 100000, &v))
				return EXIT_USAGE;
			ho.max_per_ip = (unsigned)v;
			break;
		case OPT_TIMEOUT:
			if (!parse_int_opt("--timeout", optarg, 1, 3600, &v))
				return EXIT_USAGE;
			ho.timeout_seconds = (unsigned)v;
			break;
		case OPT_CONNMEM:
			if (!parse_int_opt("--connection-memory", optarg, 4096, 16 << 20, &v))
				return EXIT_USAGE;
			ho.connection_memory = (size_t)v;
			break;
		case 'v': eo.verbose = true; break;
		default: return usage_getopt_rest(c, serve_usage, argv);
		}
	}
	if (optind < argc)
		return usage_error(serve_usage, "unexpected argument '%s'", argv[optind]);
	if (eo.dcgm_model_name && !eo.dcgm)
		return usage_error(serve_usage, "--dcgm-model-name goes with --dcgm-compat");
	ho.allow = allow;
	ho.nallow = nallow;
	if (nallow && textfile)
		return usage_error(serve_usage, "--allow goes with serving, not with --textfile");
	if (once && !textfile)
		return usage_error(serve_usage, "--once goes with --textfile DIR");
	char hostbuf[256];
	if (!hostname) {
		default_hostname(hostbuf, sizeof(hostbuf));
		hostname = hostbuf;
	}
	eo.hostname = hostname;
	if (textfile && access(textfile, W_OK) != 0) {
		gv_error("--textfile %s: %s", textfile, strerror(errno));
		return EXIT_USAGE;
	}

	/* signals are taken by sigwait in this thread; every thread started below inherits the mask */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	/* the first contact's child before any thread of ours runs (nvidia/contact.h) */
	gv_nvml_first_contact_start();
	sampler_lazy lazy = {0};
	lazy.o.no_events = once;
	lazy.o.no_gpm = no_gpm;
	sample_source src = {&lazy, lazy_take};
	int rc = EXIT_OK;
	if (textfile) {
		rc = run_textfile(textfile, once, &eo, src, &set);
	} else {
		exporter *ex = exporter_start(&eo, src);
		char err[512];
		http_server *h = http_start(&ho, ex, err, sizeof(err));
		if (!h) {
			gv_error("%s", err);
			exporter_stop(ex);
			sampler_lazy_close(&lazy);
			return EXIT_USAGE;
		}
		fprintf(stderr, "gpuvet: serving http://%s/metrics (interval %g s%s)\n", http_address(h), eo.interval,
			eo.dcgm ? ", DCGM names too" : "");
		/* what a check or a probe left running and gpuvet adopted (core/reaper.h) is reaped when it
		 * ends, so that a server running for months collects no zombies */
		while (!wait_signal(&set, 5))
			gv_child_collect_orphans(0);
		/* stopping first: a check whose child this kill ends must not run again in-process (it
		 * did, under ASan in CI, and was still in the rules when the exit freed the knowledge base) */
		exporter_request_stop(ex);
		gv_child_kill_all(); /* a first contact or a check's library child in progress */
		http_stop(h);
		if (!exporter_stop(ex)) {
			/* a thread is left in the driver call: exit now, before anything it may still read
			 * (the knowledge base, the sampler) is freed under it; what gpuvet started dies first */
			gv_warning("the sampler is stuck in a driver call; exiting without waiting for it");
			reaper_end();
			fflush(NULL);
			_exit(EXIT_OK);
		}
	}
	sampler_lazy_close(&lazy);
	return rc;
}
