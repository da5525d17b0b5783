/*
 * core/reaper.h: nothing gpuvet starts outlives it. A shell that starts a helper with setsid (out
 * of its process group) stands for a probe: its tree is killed whole; a helper whose parent ended
 * is adopted by the subreaper and ended by reaper_end, and reaped (no zombie left); an adopted
 * helper that ends on its own is collected, a child its starter waits for is not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/reaper.h"

/* sh -c script, whose first line of output is a pid ($!): the shell's pid in *sh, that one in
 * the return value. */
static pid_t start(const char *script, pid_t *sh)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execl("/bin/sh", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	char buf[64] = "";
	size_t n = 0;
	ssize_t r;
	while (n < sizeof(buf) - 1 && (r = read(p[0], buf + n, 1)) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
	close(p[0]);
	*sh = pid;
	return (pid_t)atoi(buf);
}

/* The parent of pid and whether it is a zombie; false when pid is gone. */
static bool proc_of(pid_t pid, pid_t *ppid, bool *zombie)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *fp = fopen(path, "r");
	if (!fp)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	char st;
	int pp;
	if (!p || sscanf(p + 1, " %c %d", &st, &pp) != 2)
		return false;
	*ppid = pp;
	*zombie = st == 'Z';
	return true;
}

static bool alive(pid_t pid)
{
	pid_t pp;
	bool z;
	return proc_of(pid, &pp, &z) && !z;
}

static void nap(void)
{
	struct timespec ts = {0, 10 * 1000 * 1000};
	nanosleep(&ts, NULL);
}

static void test_kill_tree(void **s)
{
	(void)s;
	pid_t sh;
	pid_t helper = start("setsid sleep 1000 & echo $!; sleep 1000", &sh);
	assert_true(helper > 0);
	assert_true(alive(helper));
	reaper_kill_tree(sh);
	int st;
	assert_int_equal(waitpid(sh, &st, 0), sh); /* the root is left to its waiter */
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	for (int i = 0; i < 100 && alive(helper); i++)
		nap();
	assert_false(alive(helper));
}

static void test_adopted_and_ended(void **s)
{
	(void)s;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid_t sh;
	pid_t helper = start("setsid sleep 1000 & echo $!", &sh);
	assert_int_equal(waitpid(sh, NULL, 0), sh);
	pid_t ppid = 0;
	bool zombie = true;
	for (int i = 0; i < 100 && !(proc_of(helper, &ppid, &zombie) && ppid == getpid()); i++)
		nap();
	assert_int_equal(ppid, getpid()); /* adopted: its parent ended, the subreaper took it */
	reaper_end();
	assert_false(proc_of(helper, &ppid, &zombie)); /* killed and reaped: not even a zombie */
}

static bool keep_this(pid_t pid, void *ctx)
{
	return pid == *(pid_t *)ctx;
}

static void test_collect(void **s)
{
	(void)s;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid_t sh;
	pid_t helper = start("setsid sleep 0.2 & echo $!", &sh);
	assert_int_equal(waitpid(sh, NULL, 0), sh);
	pid_t waited = fork(); /* a child its starter waits for: ends at once, must stay unreaped */
	if (waited == 0)
		_exit(7);
	pid_t ppid;
	bool zombie = false;
	for (int i = 0; i < 200 && !(proc_of(helper, &ppid, &zombie) && zombie); i++)
		nap();
	assert_true(zombie);
	for (int i = 0; i < 200 && !(proc_of(waited, &ppid, &zombie) && zombie); i++)
		nap();
	reaper_collect(keep_this, &waited);
	assert_false(proc_of(helper, &ppid, &zombie));
	int st;
	assert_int_equal(waitpid(waited, &st, 0), waited);
	assert_int_equal(WEXITSTATUS(st), 7);
}

/* A supervised child that reported has only its exit left (reaper_note_ending): gpuvet's end does
 * not wait for it (the NVML child's teardown of the device files took 2 ms after check --fast's
 * output on an H100), but what it started still goes. A paused child stands for the exiting one. */
static void test_ending_child(void **s)
{
	(void)s;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid_t ending = fork();
	assert_true(ending >= 0);
	if (ending == 0) {
		pause();
		_exit(0);
	}
	reaper_note_ending(ending);
	reaper_end();
	assert_true(alive(ending)); /* neither killed nor waited for */
	reaper_ending_reaped(ending);
	kill(ending, SIGKILL);
	assert_int_equal(waitpid(ending, NULL, 0), ending);

	/* one that started a helper: the helper is ended all the same */
	pid_t sh;
	pid_t helper = start("setsid sleep 1000 & echo $!; sleep 1000", &sh);
	assert_true(alive(helper));
	reaper_note_ending(sh);
	reaper_end();
	pid_t ppid;
	bool zombie;
	assert_false(proc_of(helper, &ppid, &zombie) && !zombie);
	reaper_ending_reaped(sh);
	waitpid(sh, NULL, 0); /* killed with its tree, maybe reaped there already */

	/* the notes gone: a child is waited for again */
	pid_t plain = fork();
	if (plain == 0) {
		pause();
		_exit(0);
	}
	reaper_end();
	assert_false(proc_of(plain, &ppid, &zombie)); /* killed and reaped */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kill_tree),
		cmocka_unit_test(test_adopted_and_ended),
		cmocka_unit_test(test_collect),
		cmocka_unit_test(test_ending_child),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
