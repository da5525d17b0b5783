/*
 * A watchdog that bounds every benchmark. Each benchmark arms it with its time limit:
 *  - past the limit, watchdog_expired() turns true and measurement loops stop early, keeping
 *    the repeats they have (soft stop);
 *  - past the limit plus a grace period (the limit again, at least 10 s), the call stuck in a
 *    library or on the GPU will not return: the watchdog prints which benchmark hung and ends
 *    the process with exit status 3 (hard stop). A hung GPU cannot be recovered in-process.
 */
#ifndef GPUVET_BENCH_WATCHDOG_H
#define GPUVET_BENCH_WATCHDOG_H
#include <stdbool.h>

/* Starts the watchdog thread (once). */
void watchdog_start(void);
/* Arms for `what` ("GEMM bf16") for `seconds` from now; replaces the previous arming. */
void watchdog_arm(const char *what, double seconds);
void watchdog_disarm(void);
/* The soft limit has passed. */
bool watchdog_expired(void);
/* Seconds left before the soft limit (negative when past; large when disarmed). */
double watchdog_left(void);
/* Tests: the hard stop calls this instead of _exit (NULL restores _exit). */
void watchdog_set_exit_hook(void (*hook)(int status));
/* Tests: grace period override (seconds; <= 0 restores the default). */
void watchdog_set_grace(double seconds);
#endif
