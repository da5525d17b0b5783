/* Knowledge-base lookups of the NVIDIA layer: GPU market segment (gpu_cc.csv) and Xid codes (xid.csv). */
#ifndef GPUVET_KB_NVIDIA_H
#define GPUVET_KB_NVIDIA_H
#include <stdbool.h>

#include "kb/kb.h"

/* The segment column of gpu_cc.csv for a GPU name as NVML reports it ("datacenter",
 * "workstation", "consumer", "laptop", "embedded", ...); NULL when the name is unknown. */
const char *kb_gpu_segment(const kb *k, const char *gpu_name);
/* Datacenter GPU: by the KB segment; for names the KB does not know, by the families NVIDIA
 * sells only for servers (Tesla, A100, H100, H200, B200, L40, ...). */
bool kb_gpu_is_datacenter(const kb *k, const char *gpu_name);

typedef struct kb_xid {
	int code;
	const char *name;     /* NVIDIA's mnemonic */
	const char *meaning;  /* one line */
	const char *action;   /* what to do */
	const char *severity; /* "fail", "warn", "info" or "" */
	const char *source;   /* documentation URL */
	const char *resolution; /* NVIDIA's resolution bucket in words ("reset the GPU"); "" when none */
	const char *causes;   /* the finding ids that may explain it on a machine (gpuvet explain) */
	const char *message;  /* NVIDIA's short Xid message ("GPU has fallen off the bus"): serve's err_msg label; "" when none */
} kb_xid;
/* NVIDIA's resolution bucket of the Xid catalogue (nvidia_immediate_action: RESTART_APP, RESET_GPU,
 * RESTART_BM, WORKFLOW_XID_48, ...) in words; NULL for a bucket it does not know. */
const char *kb_xid_resolution(const char *bucket);
/* The catalogue row of an Xid code; false when the KB has none. */
bool kb_xid_lookup(const kb *k, int code, kb_xid *out);

/* The driver range that drives a GPU of a compute capability (gpu_arch_driver.csv). */
typedef struct kb_arch_driver {
	char architecture[24]; /* "Hopper" */
	char cc[8];            /* "9.0" */
	char min_driver[32];   /* "520.61.05"; "" when the KB leaves it empty */
	int last_branch;       /* 470: drivers after R470 do not drive it; 0 while supported */
} kb_arch_driver;
bool kb_arch_driver_lookup(const kb *k, int major, int minor, kb_arch_driver *out);
/* Can this driver ("470.82.01") drive that GPU? 1 yes, 0 no (*why: "Hopper GPUs (compute
 * capability 9.0) need driver >= 520.61.05"), -1 the KB cannot say. */
int kb_driver_drives(const kb *k, const char *driver, int major, int minor, char *why, size_t n);
#endif
