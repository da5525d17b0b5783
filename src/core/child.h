/*
 * A supervised child for code we do not trust: the vendor libraries (libnvidia-ml, libcuda,
 * cuBLASLt, NCCL, ...) that a broken machine's driver install provides. gv_child_start forks
 * (before the caller starts threads, where it can), the child runs the body with its fd 1 and 2
 * captured, and reports the facts it collected over a pipe; gv_child_wait gives it a deadline.
 * A hang (killed at the deadline), a crash (SIGSEGV, SIGBUS in dlopen of a truncated file), an
 * exit() from a library's constructor, or output on fd 1 all end up in the report, with the
 * library, the file and the call it was in, which the child marks with gv_child_stage.
 *
 * docs/architecture.md ("Which process loads what") has the design.
 */
#ifndef GPUVET_CHILD_H
#define GPUVET_CHILD_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/facts.h"

typedef enum {
	GV_CHILD_OK,        /* reported its facts and exited */
	GV_CHILD_HUNG,      /* still running at the deadline: killed */
	GV_CHILD_CRASHED,   /* died of a signal */
	GV_CHILD_EXITED,    /* ended (exit(), _exit()) without reporting */
	GV_CHILD_NO_START,  /* fork or pipe failed: the body did not run */
	GV_CHILD_STOPPED,   /* killed because gpuvet itself was told to stop (SIGINT, SIGTERM) */
} gv_child_outcome;

typedef struct gv_child_report {
	gv_child_outcome outcome;
	int signal;      /* GV_CHILD_CRASHED */
	int exit_status; /* GV_CHILD_EXITED */
	double seconds, limit;
	/* the stage it was in at the end (in_call), or the last one it finished; "" when none */
	bool in_call;
	char lib[64], file[PATH_MAX], call[96];
	/* what it wrote to fd 1 and fd 2 (the first bytes kept), and the stage of the first fd 1 bytes */
	size_t out_bytes, err_bytes;
	char out_text[256], err_text[256];
	char out_lib[64], out_file[PATH_MAX], out_call[96];
	char error[160]; /* GV_CHILD_NO_START: why */
} gv_child_report;

typedef struct gv_child gv_child;
typedef void (*gv_child_body)(facts *f, void *arg);

/* Around a dlopen in this process (serve's and watch's NVML after the first contact, bench's
 * libraries): no child is forked meanwhile, so none inherits the loader's lock held. */
void gv_child_dlopen_begin(void);
void gv_child_dlopen_end(void);
/* Forks a child that runs body(its own facts, arg) and reports them. Never NULL: a child that
 * could not start reports GV_CHILD_NO_START from gv_child_wait. */
gv_child *gv_child_start(const char *name, gv_child_body body, void *arg);
/* A shorter bound for the time the child spends inside one call (by its stage name, "dlopen"):
 * loading is quick or hangs, while cuInit may legitimately take a minute. */
void gv_child_set_call_limit(gv_child *c, const char *call, double seconds);
/* Waits at most limit seconds for it; merges what it reported into f (when not NULL), fills r
 * and frees c. Returns r->outcome. */
gv_child_outcome gv_child_wait(gv_child *c, double limit, facts *f, gv_child_report *r);

/* In the child: about to call into a library (lib "libnvidia-ml.so.1", its file, the call
 * "dlopen" or "nvmlInit_v2"), and done with it. No-ops outside a supervised child. */
void gv_child_stage(const char *lib, const char *file, const char *call);
void gv_child_stage_end(void);
/* True inside a supervised child. */
bool gv_child_inside(void);

/* The isolation.NAME.* facts of a report (docs/facts/isolation.md). */
void gv_child_put_facts(facts *f, const char *name, const gv_child_report *r);
const char *gv_child_outcome_name(gv_child_outcome o);
/* One line: "crashed with SIGBUS (Bus error) in dlopen (/usr/lib/.../libnvidia-ml.so.1)". */
const char *gv_child_describe(const gv_child_report *r, char *buf, size_t size);

/* SIGINT and SIGTERM kill every supervised child (and its process group) before the default
 * action ends gpuvet: commands without their own handlers install this at start. */
void gv_child_signals_install(void);
/* For commands with their own handlers (watch, serve): kills the live children now. Async-signal-safe. */
void gv_child_kill_all(void);
/* From a SIGINT/SIGTERM handler that only sets a flag (watch): if the process has not ended a
 * second later (its main loop is stuck in a library call), SIGALRM writes reset (the terminal's,
 * may be NULL) to fd 1, kills the children and ends it with status 128 + sig. Async-signal-safe. */
void gv_stop_watchdog(int sig, const char *reset);
/* Other children (core/proc.c's programs: the Python probe, serve's check) killed along. */
#include <sys/types.h>
void gv_child_track(pid_t pid);
void gv_child_untrack(pid_t pid);
/* Whether pid is a supervised or tracked child (one that its starter waits for). */
bool gv_child_tracked(pid_t pid);
/* For long-running commands (serve, run): reaps the processes gpuvet adopted (core/reaper.h) that
 * have ended, never a tracked child nor also_keep (run's command, which run waits for). */
void gv_child_collect_orphans(pid_t also_keep);
/* SIGINT or SIGTERM pending while blocked (serve takes them with sigwait): waits give up, so the
 * caller gets to them within a fraction of a second. */
bool gv_child_stop_pending(void);
/* Seconds a driver call may take: GPUVET_DRIVER_TIMEOUT when set (0.1 to 3600), else dflt; under
 * a deadline (below), no more than a second before it (the child's own report comes first). */
double gv_driver_timeout(double dflt);

/* One deadline for everything this process still waits for (gpuvet run, once its command has
 * ended: one bound for all of its own work after the command). From then on every gv_child_wait
 * ends by it, those already waiting included (within 0.1 s), and gv_driver_timeout and the
 * programs core/proc runs are held to the time left. until is now_seconds()'s clock; 0 clears
 * it. Any thread; inherited by the children forked after it. */
void gv_deadline_set(double until);
/* Seconds left before it (0 or less once it passed); a huge number when none is set. */
double gv_deadline_left(void);
#endif
