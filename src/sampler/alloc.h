/*
 * The pods the kubelet allocated each GPU to (fleet/kubelet.h), matched to the GPUs of a
 * snapshot: by GPU or MIG UUID, by NVML index or "nvidiaN" minor for an NVIDIA resource, and
 * by the allocation response's NVIDIA_VISIBLE_DEVICES where the device ids name no GPU. Pods that
 * have gone (kubelet_pod_alive) are left out; the names of the others come from the node's log
 * directories, as for a process's pod (fleet/attrib.h).
 *
 * The checkpoint is read again when it changes (its size, time or inode) and at least every
 * ALLOC_RECHECK_SECONDS, when the pods' liveness and names are looked up again.
 */
#ifndef GPUVET_SAMPLER_ALLOC_H
#define GPUVET_SAMPLER_ALLOC_H
#include "fleet/kubelet.h"
#include "sampler/snapshot.h"

#define ALLOC_RECHECK_SECONDS 10.0

typedef struct alloc_cache alloc_cache;
alloc_cache *alloc_cache_new(void);
void alloc_cache_free(alloc_cache *c);
/* Fills every GPU's alloc list and the snapshot's kubelet_checkpoint state; now is a monotonic clock. */
void alloc_fill(alloc_cache *c, snapshot *s, double now);

/* Which GPU of s (its array index) a device id names, and the MIG device's GPU instance (-1 for
 * the GPU); -1 when none. Pure. */
int alloc_match(const kubelet_device *d, const snapshot *s, int *gpu_instance);
/* The allocations of devices (alive[i]: its pod is still there; owners[i]: its pod's owner) into
 * the GPUs of s. Pure. */
void alloc_assign(snapshot *s, const kubelet_device *dev, const owner *owners, const bool *alive, size_t n);
#endif
