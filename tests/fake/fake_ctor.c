/*
 * What a fake library does while it is being loaded, before any call: the faults of broken
 * driver installs that hit a program inside dlopen. `constructor.LIB = ACTION` in the
 * configuration, LIB being FAKE_LIB_NAME ("nvml", "cuda" or "cublaslt"):
 *   hang MS        sleeps MS milliseconds (a stuck driver)
 *   exit N         calls exit(N) (a CI gate reads 0 as success)
 *   print TEXT     prints TEXT and a newline on stdout with printf (the stub cuBLASLt's
 *                  "You are running using the stub version of cublasLt")
 *   crash SIG      raises signal number SIG (11: SIGSEGV)
 * `constructor.pidfile = PATH` writes the loading process's pid to PATH first (a test then checks
 * that the process is gone after gpuvet ended).
 * The truncated library (CMake target fake_nvml_truncated) needs no key: dlopen dies of SIGBUS.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_config.h"

#ifndef FAKE_LIB_NAME
#define FAKE_LIB_NAME "nvml"
#endif

__attribute__((constructor)) static void fake_constructor(void)
{
	const char *v = fake_raw("constructor." FAKE_LIB_NAME);
	if (!v)
		return;
	const char *pidfile = fake_raw("constructor.pidfile");
	if (pidfile) {
		FILE *f = fopen(pidfile, "w");
		if (f) {
			fprintf(f, "%d\n", (int)getpid());
			fclose(f);
		}
	}
	if (strncmp(v, "hang ", 5) == 0)
		fake_sleep_ms(atoll(v + 5));
	else if (strncmp(v, "exit ", 5) == 0)
		exit(atoi(v + 5));
	else if (strncmp(v, "print ", 6) == 0)
		printf("%s\n", v + 6);
	else if (strncmp(v, "crash ", 6) == 0)
		raise(atoi(v + 6));
}
