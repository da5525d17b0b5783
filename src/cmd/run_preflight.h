/*
 * gpuvet run's pre-flight: the probes of check --fast in a supervised child (core/child.h)
 * started just before the command, waited for and judged by a thread of its own, so that the
 * command starts at once whatever the driver does (a hung nvmlInit holds the child, never the
 * command). Its fail findings are ready to print when it ends; its facts say whether the driver
 * hung, so that gpuvet run's follower and explanation do not wait for it again.
 *
 *	run_preflight *pf = run_preflight_start();   // forks: before this process has any thread
 *	... fork the command ...
 *	run_preflight_follow(pf);                    // its waiting thread
 *	... poll run_preflight_fd(pf); run_preflight_take_text(pf) once readable ...
 *	run_preflight_wait(pf);                      // after the command: bounded (gv_deadline_set)
 *	probe_opts.driver_hung = run_preflight_hung_facts(pf);
 *	run_preflight_free(pf);
 */
#ifndef GPUVET_CMD_RUN_PREFLIGHT_H
#define GPUVET_CMD_RUN_PREFLIGHT_H
#include <stdbool.h>

#include "core/facts.h"

typedef struct run_preflight run_preflight;

run_preflight *run_preflight_start(void);
/* Starts the thread that waits for it and judges its facts (without one, run_preflight_wait does). */
void run_preflight_follow(run_preflight *p);
/* Readable once the pre-flight has ended (-1 when it could not be watched: run_preflight_done). */
int run_preflight_fd(const run_preflight *p);
/* Any thread: the pre-flight has ended, its text and facts are there. */
bool run_preflight_done(run_preflight *p);
/* Waits for the end: the pre-flight's own limit (the NVML driver timeout and a margin) or the
 * deadline of gv_deadline_set, whichever comes first. */
void run_preflight_wait(run_preflight *p);
/* After the end: what to print on stderr (its fail findings, or how it failed; "" when nothing),
 * handed over once (the caller frees it; NULL the second time or before the end). */
char *run_preflight_take_text(run_preflight *p);
/* Any thread, after run_preflight_follow: false while NVML may not be called (the pre-flight has
 * not ended, it found NVML hung, or it did not finish); true without a waiting thread. */
bool run_preflight_nvml_usable(run_preflight *p);
/* After the end: the pre-flight's facts when the driver hung in it (probes_driver_hung), else NULL. */
const facts *run_preflight_hung_facts(run_preflight *p);
void run_preflight_free(run_preflight *p);
#endif
