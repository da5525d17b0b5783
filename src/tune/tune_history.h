/*
 * A tune result as a history run (src/store/history.h), so that `gpuvet history` lists, shows
 * and compares it. Result names (stable; docs/tune.md):
 *   tune.<model>.<shape>.gpu.<setting>.ms        step time (lower is better), min/max, steps
 *   tune.<model>.<shape>.gpu.<setting>.peak_mib  peak memory of a step
 *   tune.<model>.<shape>.gpu.compile.compile_s   torch.compile's compile time
 *   tune.<model>.<shape>.cpu.fp32.ms             CPU step time
 *   tune.<model>.<shape>.tuned.ms                the fastest GPU step measured
 *   tune.<model>.<shape>.speedup / .tuned_speedup  CPU ms / GPU fp32 ms, CPU ms / fastest GPU ms
 *   tune.pipeline.<shape>.w<N>.pin<0|1>.samples_s, tune.pipeline.<shape>.gpu_samples_s
 *   tune.ddp.<N>gpu.<model>.<shape>.ms / .efficiency / .memory_balance
 * where <shape> is bs64.img224 (resnet50), bs32.seq128 (bert), bs256 (mlp).
 */
#ifndef GPUVET_TUNE_HISTORY_H
#define GPUVET_TUNE_HISTORY_H
#include <stdbool.h>
#include <stdio.h>

#include "store/history.h"
#include "tune/tune_advice.h"
#include "tune/tune_report.h"
#include "tune/tune_sampler.h"

/* cond may be NULL (no NVML). argv as the command got it (argv[0] "tune" or "bench"). */
hist_run *tune_history_run(const tune_report *r, const tune_advice *a, const tune_conditions *cond, int argc,
			   char *const *argv);

/* `gpuvet tune --list`: the table (date | model | batch | GPU ms | CPU ms | speedup | tuned ms |
 * speedup) over the stored tune runs, oldest first, at most limit runs (0: all); JSON with json.
 * Returns an exit status (0, or 1 with a message on stderr when the store cannot be read). */
int tune_history_table(const char *db, long long limit, bool json, FILE *out);
#endif
