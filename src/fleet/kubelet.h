/*
 * Which pod the kubelet gave each GPU to, whether or not the pod runs anything on it yet: the
 * device manager's checkpoint, /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint, a
 * JSON document the kubelet rewrites at every allocation:
 *
 *   {"Data": {"PodDeviceEntries": [{"PodUID": "5f1c...", "ContainerName": "trainer",
 *             "ResourceName": "nvidia.com/gpu", "DeviceIDs": {"0": ["GPU-8a1b..."]},
 *             "AllocResp": "<base64 of the device plugin's ContainerAllocateResponse>"}],
 *             "RegisteredDevices": {...}},
 *    "Checksum": 1234}
 *
 * DeviceIDs maps NUMA nodes to device ids since Kubernetes 1.20 and is a plain list before. The
 * ids are the device plugin's own: GPU or MIG UUIDs (NVIDIA's plugin by default), with "::N" per
 * replica when GPUs are shared (time-slicing), NVML indexes (its deviceIDStrategy=index),
 * "nvidiaN" (GKE's plugin). Where they name no GPU, the allocation response's
 * NVIDIA_VISIBLE_DEVICES environment variable and CDI device names ("nvidia.com/gpu=GPU-...")
 * do (from_env).
 *
 * The kubelet's pod-resources gRPC API (podresources/v1 on /var/lib/kubelet/pod-resources/
 * kubelet.sock) answers the same question, but needs a gRPC and protobuf client that gpuvet does
 * not link; the checkpoint is the state that API serves, on every kubelet since 1.10.
 *
 * The checkpoint keeps a finished pod's devices until the next allocation on the node:
 * kubelet_pod_alive tells a pod that still exists from one that has gone. Every file is read
 * through core/sysroot (--root trees test it).
 */
#ifndef GPUVET_FLEET_KUBELET_H
#define GPUVET_FLEET_KUBELET_H
#include <stdbool.h>
#include <stddef.h>

#define KUBELET_CHECKPOINT "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"

/* One device of one allocation. */
typedef struct kubelet_device {
	size_t entry;       /* the PodDeviceEntries index it came from */
	char pod_uid[40];   /* as the API writes it: 8-4-4-4-12 lower-case hex */
	char container[64];
	char resource[64];  /* "nvidia.com/gpu", "nvidia.com/mig-1g.18gb", "nvidia.com/gpu.shared" */
	char id[128];       /* the device id, without a "::N" replica suffix */
	bool from_env;      /* from the allocation response, not DeviceIDs */
} kubelet_device;

/* Parses the checkpoint's text into out (at most max devices). Returns how many devices it names
 * (more than max when some did not fit), or -1 when the text is not a device-manager checkpoint.
 * Entries without a valid pod UID are left out. Pure: no I/O. */
long kubelet_checkpoint_parse(const char *text, size_t len, kubelet_device *out, size_t max);

/* The NVIDIA_VISIBLE_DEVICES value and the CDI device names of a ContainerAllocateResponse
 * (protobuf, as AllocResp holds it once base64-decoded): calls fn for each device id they name
 * (UUIDs and indexes; "all", "none" and "void" are not ids). Pure. */
void kubelet_alloc_resp_ids(const unsigned char *pb, size_t len, void (*fn)(void *ctx, const char *id), void *ctx);

/* Reads and parses the checkpoint: 0 and *out (malloc'd, *n devices); -ENOENT when the node has
 * none (not a Kubernetes node, or no device plugin); another -errno when it cannot be read, and
 * -EINVAL when it is not a checkpoint. */
int kubelet_checkpoint_read(kubelet_device **out, size_t *n);

/* Whether the pod of this UID still exists on the node: its cgroup when the node's pod cgroups
 * are visible (/sys/fs/cgroup, systemd or cgroupfs driver, v1 or v2), else its log directory
 * (/var/log/pods/<namespace>_<name>_<uid>); true when the node shows neither tree (nothing to
 * tell a gone pod by). */
bool kubelet_pod_alive(const char *pod_uid);
#endif
