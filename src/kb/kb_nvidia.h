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
} kb_xid;
/* The catalogue row of an Xid code; false when the KB has none. */
bool kb_xid_lookup(const kb *k, int code, kb_xid *out);
#endif
