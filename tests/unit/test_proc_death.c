/* Children of gpuvet die with it: a process running proc_run or proc_stream_run is killed by
 * SIGKILL, and the program it started must be gone soon after (PR_SET_PDEATHSIG), instead of
 * running on as an orphan (a hung Python probe, a tune probe holding the GPU). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/proc.h"
#include "core/proc_stream.h"
#include "core/util.h"
#include "../tools/test_tmp.h"

/* true while pid runs; a zombie (its new parent has not reaped it yet) does not count */
static bool running(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z';
}

static void sleep_s(double s)
{
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	nanosleep(&ts, NULL);
}

/* Starts a helper process that runs `sh -c 'echo $$ > FILE; exec sleep 60'` through the runner,
 * kills the helper with SIGKILL once the grandchild wrote its pid, and returns whether the
 * grandchild was gone within 10 s. */
static bool dies_with_runner(bool stream)
{
	char file[4096];
	snprintf(file, sizeof(file), "%s/gpuvet-pdeath-%d-%d", test_tmpdir(), (int)getpid(), stream);
	unlink(file);
	char *script = xasprintf("echo $$ > '%s.tmp' && mv '%s.tmp' '%s' && exec sleep 60", file, file, file);
	pid_t helper = fork();
	assert_true(helper >= 0);
	if (helper == 0) {
		char *argv[] = {"sh", "-c", script, NULL};
		if (stream) {
			proc_stream_opts o = {.argv = argv, .timeout_ms = 60000, .max_stdout = 1024};
			proc_stream_result r;
			proc_stream_run(&o, &r);
		} else {
			proc_result r;
			proc_run(argv, NULL, NULL, 60000, 1024, &r);
		}
		_exit(0);
	}
	pid_t grandchild = 0;
	for (int i = 0; i < 200 && !grandchild; i++) {
		FILE *f = fopen(file, "r");
		if (f) {
			int v = 0;
			if (fscanf(f, "%d", &v) == 1)
				grandchild = v;
			fclose(f);
		}
		if (!grandchild)
			sleep_s(0.05);
	}
	assert_true(grandchild > 0);
	kill(helper, SIGKILL);
	waitpid(helper, NULL, 0);
	bool gone = false;
	for (int i = 0; i < 200 && !gone; i++) {
		gone = !running(grandchild);
		if (!gone)
			sleep_s(0.05);
	}
	if (!gone)
		kill(grandchild, SIGKILL);
	unlink(file);
	free(script);
	return gone;
}

static void test_proc_run_child_dies(void **state)
{
	(void)state;
	assert_true(dies_with_runner(false));
}

static void test_proc_stream_child_dies(void **state)
{
	(void)state;
	assert_true(dies_with_runner(true));
}

static void test_spawn_errors(void **state)
{
	(void)state;
	/* the exec errno comes back: a missing program is ENOENT, not a child that exits 127 */
	proc_result r;
	char *argv[] = {"/nonexistent/gpuvet-no-such-program", NULL};
	assert_int_equal(proc_run(argv, NULL, NULL, 5000, 1024, &r), -1);
	assert_true(r.spawn_failed);
	assert_int_equal(r.spawn_errno, ENOENT);
	proc_result_free(&r);
	proc_stream_opts o = {.argv = argv, .timeout_ms = 5000, .max_stdout = 1024};
	proc_stream_result sr;
	assert_int_equal(proc_stream_run(&o, &sr), -1);
	assert_true(sr.spawn_failed);
	assert_int_equal(sr.spawn_errno, ENOENT);
	proc_stream_result_free(&sr);
	/* and a program that runs: its output, its status, stdin given */
	char *cat[] = {"sh", "-c", "cat; exit 3", NULL};
	assert_int_equal(proc_run(cat, NULL, "hello", 5000, 1024, &r), 0);
	assert_string_equal(r.out, "hello");
	assert_int_equal(r.status, 3);
	proc_result_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_proc_run_child_dies),
		cmocka_unit_test(test_proc_stream_child_dies),
		cmocka_unit_test(test_spawn_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
