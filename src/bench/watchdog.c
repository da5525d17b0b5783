#include "bench/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/cli.h"
#include "core/util.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool started;
static bool armed;
static double soft_deadline, hard_deadline; /* now_seconds() clock */
static char what_buf[128];
static double armed_seconds;
static void (*exit_hook)(int);
static double grace_override;

static struct timespec abs_time(double monotonic_deadline)
{
	/* the condition variable uses CLOCK_MONOTONIC, like now_seconds() */
	struct timespec ts;
	double t = monotonic_deadline;
	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static void *run(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		if (!armed) {
			pthread_cond_wait(&cv, &mu);
			continue;
		}
		double now = now_seconds();
		if (now >= hard_deadline) {
			char msg[320];
			int n = snprintf(msg, sizeof(msg),
					 "gpuvet: bench: %s did not finish within %.0f s and was stopped; the GPU or a "
					 "library call is hung (check `nvidia-smi` and `dmesg` for Xid errors)\n",
					 what_buf, hard_deadline - (soft_deadline - armed_seconds));
			if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0) {
				/* nothing more to do */
			}
			armed = false;
			void (*hook)(int) = exit_hook;
			pthread_mutex_unlock(&mu);
			if (hook) {
				hook(EXIT_INTERNAL);
				pthread_mutex_lock(&mu);
				continue;
			}
			_exit(EXIT_INTERNAL);
		}
		struct timespec ts = abs_time(hard_deadline);
		int rc = pthread_cond_timedwait(&cv, &mu, &ts);
		if (rc != 0 && rc != ETIMEDOUT && rc != EINTR)
			pthread_cond_wait(&cv, &mu);
	}
	return NULL;
}

void watchdog_start(void)
{
	pthread_mutex_lock(&mu);
	if (!started) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_destroy(&cv);
		pthread_cond_init(&cv, &ca);
		pthread_condattr_destroy(&ca);
		pthread_t t;
		pthread_attr_t a;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, run, NULL) == 0)
			started = true;
		pthread_attr_destroy(&a);
	}
	pthread_mutex_unlock(&mu);
}

void watchdog_arm(const char *what, double seconds)
{
	pthread_mutex_lock(&mu);
	double now = now_seconds();
	double grace = grace_override > 0 ? grace_override : (seconds > 10 ? seconds : 10);
	armed = true;
	armed_seconds = seconds;
	soft_deadline = now + seconds;
	hard_deadline = soft_deadline + grace;
	str_copy(what_buf, sizeof(what_buf), what ? what : "a benchmark");
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

void watchdog_disarm(void)
{
	pthread_mutex_lock(&mu);
	armed = false;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
}

bool watchdog_expired(void)
{
	pthread_mutex_lock(&mu);
	bool e = armed && now_seconds() >= soft_deadline;
	pthread_mutex_unlock(&mu);
	return e;
}

double watchdog_left(void)
{
	pthread_mutex_lock(&mu);
	double left = armed ? soft_deadline - now_seconds() : 1e9;
	pthread_mutex_unlock(&mu);
	return left;
}

void watchdog_set_exit_hook(void (*hook)(int status))
{
	pthread_mutex_lock(&mu);
	exit_hook = hook;
	pthread_mutex_unlock(&mu);
}

void watchdog_set_grace(double seconds)
{
	pthread_mutex_lock(&mu);
	grace_override = seconds;
	pthread_mutex_unlock(&mu);
}
