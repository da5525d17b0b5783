/*
 * The per-boot cache of each GPU's fixed limits (GV_NVML_LIMITS: the max PCIe link, the
 * temperature thresholds, the max clocks, the default power limit). On an H200 (driver 580) these
 * eight NVML calls take 15 ms of `check --fast`'s 50 ms in NVML, and they answer the same until the
 * machine reboots or the driver changes. The full `check` asks NVML and writes the cache;
 * `check --fast` reads it and asks NVML only for a GPU it has no entry for.
 *
 * The file: $XDG_CACHE_HOME/gpuvet/nvml-limits (else ~/.cache/gpuvet/nvml-limits), keyed by the
 * kernel's boot id (/proc/sys/kernel/random/boot_id), the driver version and each GPU's UUID. No
 * boot id or no home: nothing is cached. A file that does not parse is ignored and rewritten.
 */
#ifndef GPUVET_PROBES_NVML_LIMITS_H
#define GPUVET_PROBES_NVML_LIMITS_H

#include <stdbool.h>

#include "nvidia/nvml.h"

typedef struct nvml_limits nvml_limits;

/* The cache for this boot and driver (read now); NULL when nothing can be cached. */
nvml_limits *nvml_limits_open(const char *driver_version);
/* The limit fields of d from the entry of uuid; false (d untouched) without one. Thread-safe. */
bool nvml_limits_get(nvml_limits *c, const char *uuid, gv_nvml_device *d);
/* Records d's limit fields as uuid's entry. Thread-safe. */
void nvml_limits_put(nvml_limits *c, const char *uuid, const gv_nvml_device *d);
/* The cache file's path (for a fact's source). */
const char *nvml_limits_path(const nvml_limits *c);
/* Writes the file when an entry changed (a new file, renamed into place), and frees c. */
void nvml_limits_close(nvml_limits *c);

#endif
