#include "core/proc.h"

#include <stdlib.h>

#include "core/child.h"
#include "core/proc_stream.h"

/* proc_stream_run (the one runner) with stderr kept and the time limit killing at once. */
int proc_run(char *const argv[], char *const env[], const char *stdin_data, int timeout_ms, size_t max_output,
	     proc_result *res)
{
	double left = gv_deadline_left(); /* gpuvet run's one deadline after its command */
	if (left * 1000 < timeout_ms)
		timeout_ms = left > 0.001 ? (int)(left * 1000) : 1;
	proc_stream_opts o = {
		.argv = argv,
		.env = env,
		.stdin_data = stdin_data,
		.timeout_ms = timeout_ms > 0 ? timeout_ms : 1,
		.kill_at_limit = true,
		.max_stdout = max_output,
		.max_stderr = max_output,
	};
	proc_stream_result r;
	int rc = proc_stream_run(&o, &r);
	*res = (proc_result){
		.status = r.status,
		.signal = r.signal,
		.timed_out = r.timed_out,
		.truncated = r.truncated || r.err_truncated,
		.spawn_failed = r.spawn_failed,
		.spawn_errno = r.spawn_errno,
		.out = r.out,
		.out_len = r.out_len,
		.err = r.err,
		.err_len = r.err_len,
		.seconds = r.seconds,
	};
	return rc;
}

void proc_result_free(proc_result *res)
{
	free(res->out);
	free(res->err);
	res->out = res->err = NULL;
}
