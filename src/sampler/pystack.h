/*
 * The Python frames of a process's main thread, from py-spy (`py-spy dump --nonblocking`: it
 * reads the interpreter's memory without stopping the process or attaching to it), when py-spy is
 * on PATH; never with --root (the pid is not this machine's). A deadline bounds it.
 */
#ifndef GPUVET_SAMPLER_PYSTACK_H
#define GPUVET_SAMPLER_PYSTACK_H
#include <stdbool.h>
#include <stddef.h>

#define PYSTACK_MAX_FRAMES 5

typedef struct pystack {
	size_t n;
	char frames[PYSTACK_MAX_FRAMES][160]; /* innermost first: "read (tarfile.py:123)" */
	char why[200];                        /* when n is 0: why not ("py-spy is not on PATH", its error) */
	bool no_tool;                         /* py-spy is not on PATH */
} pystack;

/* Runs py-spy on pid within timeout_ms. False (why set) when there are no frames. */
bool pystack_dump(unsigned pid, int timeout_ms, pystack *out);
/* py-spy's dump text to the main thread's top frames (the first thread when none is named
 * "MainThread"). Pure. */
bool pystack_parse(const char *text, pystack *out);
#endif
