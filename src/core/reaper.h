/*
 * Nothing gpuvet starts outlives it. A probe's child that left the probe's process group (setsid:
 * a hung nvcc's or Python's helper, a daemon a library or a job starts) is out of reach of the
 * group kill that ends a probe at its time limit, and used to go on running after gpuvet, adopted
 * by init. gpuvet makes itself a child subreaper (PR_SET_CHILD_SUBREAPER, Linux 3.4): a process
 * below it whose parent dies is adopted by gpuvet instead, so it stays below gpuvet and is found
 * by walking /proc for the processes whose parent chain leads to gpuvet.
 *
 * - When a supervised child or a program gpuvet runs is killed (its time limit, a stop), every
 *   process below it goes with it: reaper_kill_tree, before its own group is killed.
 * - When gpuvet ends (exit, or SIGINT/SIGTERM/SIGHUP through core/child.h's handlers), every
 *   process still below it is killed and reaped: reaper_end, run at exit by reaper_init's atexit.
 *   `gpuvet run -- CMD` too: what CMD left running when it ended is killed when gpuvet run ends.
 * - A long-running gpuvet (serve, run) reaps the adopted processes that end on their own
 *   (reaper_collect), so that they do not stay zombies.
 *
 * gpuvet killed by SIGKILL runs none of this: its direct children die with it (PR_SET_PDEATHSIG),
 * what they left behind is adopted by the next subreaper or init.
 *
 * Freezing first (SIGSTOP) makes the kill whole: a stopped process forks no more, so the walk
 * that finds the tree sees all of it before SIGKILL. The walk and the kill use only
 * async-signal-safe calls (open, read, getdents64, kill, waitpid, nanosleep): reaper_end runs
 * from signal handlers too.
 */
#ifndef GPUVET_CORE_REAPER_H
#define GPUVET_CORE_REAPER_H
#include <stdbool.h>
#include <sys/types.h>

/* Makes gpuvet a child subreaper and runs reaper_end at exit. main() calls it first. */
void reaper_init(void);
/* SIGKILLs every process below pid (pid too), frozen first; reaps those that became gpuvet's
 * children on the way (never pid itself: its parent's wait reaps it). Async-signal-safe. */
void reaper_kill_tree(pid_t pid);
/* Kills every process below gpuvet and reaps them, waiting up to a second for them to go (a
 * process in uninterruptible sleep in a driver call can outlast SIGKILL). Async-signal-safe. */
void reaper_end(void);
/* pid, a child of gpuvet, has only its exit left (a supervised child that reported: it calls
 * _exit and nothing else): gpuvet's end does not wait for it, though it still kills what pid
 * started. The kernel's teardown of what a vendor library opened (the NVML child's device files:
 * 2 ms on an H100) is then not on the path of the command the user waits for. Forgotten before
 * pid is reaped (reaper_ending_reaped), so a reused pid is never taken for it. */
void reaper_note_ending(pid_t pid);
void reaper_ending_reaped(pid_t pid);
/* Reaps the children of gpuvet that have ended, except those keep(pid) names (a child some code
 * waits for itself): adopted processes that ended on their own. */
void reaper_collect(bool (*keep)(pid_t pid, void *ctx), void *ctx);
#endif
