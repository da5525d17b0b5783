/* gpuvet serve's command line: its options and usage, which gpuvet's help, man page and
 * completions read. The exporter itself (cmd/serve_run.c, docs/serve.md) is linked into
 * gpuvet-serve, the program `gpuvet serve` runs (cmd/serve_exec.c): only it loads libmicrohttpd
 * and the TLS libraries under it. */
#include "cmd/cmd.h"
#include "cmd/serve.h"

static const gv_option serve_options[] = {
	GV_OPT_ARG("listen", OPT_LISTEN, "ADDR", GV_VAL_TEXT,
		   "HOST:PORT, [IPv6]:PORT, or :PORT for every interface (default 127.0.0.1:10134: loopback only)"),
	GV_OPT_ARG("allow", OPT_ALLOW, "NET", GV_VAL_TEXT,
		   "only clients in NET (ADDRESS or ADDRESS/PREFIX, IPv4 or IPv6) may connect; repeat for more (default: "
		   "every client that reaches --listen)"),
	GV_OPT_ARG("interval", OPT_INTERVAL, "S", GV_VAL_NUMBER, "seconds between samples (default 1)"),
	GV_OPT_FLAG("dcgm-compat", OPT_DCGM,
		    "also the DCGM exporter's names and labels (DCGM_FI_DEV_GPU_UTIL ...), for dashboards built on "
		    "dcgm-exporter (Grafana 12239); labels gpu, UUID, pci_bus_id, device, Hostname, DCGM_FI_DRIVER_VERSION; "
		    "the profiling fields (DCGM_FI_PROF_SM_ACTIVE, _PIPE_TENSOR_ACTIVE, _DRAM_ACTIVE ...) from NVML's GPM "
		    "counters where the GPU has them"),
	GV_OPT_FLAG("dcgm-model-name", OPT_DCGM_MODEL,
		    "with --dcgm-compat, DCGM's modelName label too (camelCase, which promtool's lint reports; Prometheus "
		    "accepts it)"),
	GV_OPT_FLAG("no-gpm", OPT_NO_GPM, "do not read the GPM activity counters (SM, tensor, DRAM ...)"),
	GV_OPT_FLAG("processes", OPT_PROCS,
		    "per-process series (pid, name, memory, SM time, and its owner: pod, namespace and container, or the "
		    "Slurm job_id and user); off by default: one series per process and GPU"),
	GV_OPT_ARG("process-series", OPT_PROC_SERIES, "N", GV_VAL_NUMBER,
		   "at most N per-process series (default 256); the rest of a GPU's processes are summed in one "
		   "pid=\"other\" series"),
	GV_OPT_ARG("hostname", OPT_HOST, "NAME", GV_VAL_TEXT, "the DCGM Hostname label (default: $NODE_NAME, else the host name)"),
	GV_OPT_ARG("check-interval", OPT_CHECK_INTERVAL, "S", GV_VAL_NUMBER,
		   "run the check's probes and rules every S seconds (default 300; 0: never); NVML and files only unless "
		   "--check-full"),
	GV_OPT_FLAG("check-full", OPT_CHECK_FULL, "the check's cuInit and Python probes too"),
	GV_OPT_ARG("low-util-seconds", OPT_LOWUTIL, "S", GV_VAL_NUMBER,
		   "utilization under 70% this long while a process holds the GPU makes it degraded (default 60)"),
	GV_OPT_ARG("textfile", OPT_TEXTFILE, "DIR", GV_VAL_DIR,
		   "write DIR/gpuvet.prom (node_exporter textfile collector) every interval instead of serving; atomically "
		   "(temporary file, rename)"),
	GV_OPT_FLAG("once", OPT_ONCE, "with --textfile: write once and exit"),
	GV_OPT_FLAG("verbose", 'v', "log sampler errors on stderr"),
	GV_OPT_GROUP("limits (a scrape is answered whatever other clients do: docs/serve.md)"),
	GV_OPT_ARG("max-connections", OPT_MAXCONN, "N", GV_VAL_NUMBER,
		   "connections at once (default 512); a new one over it closes the oldest idle one, then the oldest still "
		   "sending its request"),
	GV_OPT_ARG("max-connections-per-ip", OPT_MAXIP, "N", GV_VAL_NUMBER,
		   "the same budget for one address (an IPv6 /64) (default 64; 0: none); connections over it are closed at "
		   "once, not queued: a Prometheus holds one per scrape job (docs/serve.md)"),
	GV_OPT_ARG("timeout", OPT_TIMEOUT, "S", GV_VAL_NUMBER,
		   "a whole request must arrive, and a whole answer be taken, within S; an idle keep-alive connection is "
		   "closed after S (default 10)"),
	GV_OPT_ARG("connection-memory", OPT_CONNMEM, "BYTES", GV_VAL_NUMBER,
		   "request line and headers of one connection (default 16384)"),
	GV_OPT_HELP,
	GV_OPT_END,
};

const gv_command_cli serve_cli = {
	.name = "serve",
	.summary = "Prometheus exporter (/metrics) for a fleet",
	.head = "usage: gpuvet serve [options]\n"
		"\n"
		"Prometheus exporter: samples every GPU through NVML each --interval in a thread of its own\n"
		"and serves the last sample at /metrics, so a scrape never waits on the driver. Health states\n"
		"(gpuvet_gpu_health) and the findings of a periodic check (gpuvet_finding) come with it.\n"
		"Metric names and labels: docs/serve.md.\n"
		"\n",
	.opts = serve_options,
	.tail = "\n"
		"Endpoints: /metrics (text format 0.0.4, or OpenMetrics 1.0.0 when the Accept header asks;\n"
		"gzip when Accept-Encoding allows it),\n"
		"/healthz (200 while the sampler thread makes progress, 503 when it is stuck).\n"
		"Stops on SIGINT or SIGTERM.\n",
};
