/*
 * NVLink error counters across check runs: a check keeps each GPU's non-zero link counters as
 * results of its run (nvlink.L.COUNTER per GPU; zeros left out) and in the run's meta
 * nvlink.links ("0:18,1:18") which GPUs had theirs recorded, so a missing result reads as 0; the next check reads the previous check of this machine back as facts
 * (history.nvlink.*) for the rule nvlink.errors-grew. docs/facts/nvidia.md has the keys.
 */
#ifndef GPUVET_CMD_NVLINK_HISTORY_H
#define GPUVET_CMD_NVLINK_HISTORY_H
#include "core/facts.h"
#include "store/history.h"

/* Adds the NVLink counters of the facts f to the run r. */
void nvlink_history_add(hist_run *r, const facts *f);
/* Puts the previous check's counters of this host (and --root) into f, when the database at
 * db_path (NULL: the default) has one; says nothing when there is none or it cannot be read. */
void nvlink_history_previous(facts *f, const char *db_path);
#endif
