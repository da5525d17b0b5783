/* gpuvet serve's options, shared by its command line (cmd/serve.c, in every gpuvet) and the
 * exporter that parses them (cmd/serve_run.c, in gpuvet-serve alone). */
#ifndef GPUVET_CMD_SERVE_H
#define GPUVET_CMD_SERVE_H
enum { OPT_LISTEN = 256, OPT_INTERVAL, OPT_DCGM, OPT_PROCS, OPT_HOST, OPT_CHECK_INTERVAL, OPT_CHECK_FULL, OPT_LOWUTIL,
       OPT_TEXTFILE, OPT_ONCE, OPT_MAXCONN, OPT_MAXIP, OPT_TIMEOUT, OPT_CONNMEM, OPT_DCGM_MODEL, OPT_ALLOW, OPT_NO_GPM,
       OPT_PROC_SERIES };

#endif
