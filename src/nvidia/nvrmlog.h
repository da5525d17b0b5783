/*
 * The NVIDIA kernel driver refusing a GPU, as the kernel log has it: one message over several
 * "NVRM:" lines, with whatever prefix the log adds (as for Xid lines, nvidia/xidlog.h).
 *
 *   NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2330)
 *   NVRM: installed in this system is not supported by the
 *   NVRM: NVIDIA 470.82.01 driver release.
 *
 * (a driver older than the GPU), and for a GPU only a legacy branch still drives:
 *
 *   NVRM: The NVIDIA Tesla K80 GPU installed in this system is
 *   NVRM:  supported through the NVIDIA 470.xx Legacy drivers. Please
 *   NVRM:  visit http://www.nvidia.com/object/unix.html for more
 *   NVRM:  information.  The 535.183.01 NVIDIA driver will ignore
 *   NVRM:  this GPU.  Continuing probe...
 *
 * Parsing only: lines are fed in log order, no I/O, so it can be fuzzed.
 */
#ifndef GPUVET_NVIDIA_NVRMLOG_H
#define GPUVET_NVIDIA_NVRMLOG_H
#include <stdbool.h>
#include <stddef.h>

typedef struct nvrm_refusal {
	char pci[32];      /* "0000:01:00.0"; "" in the legacy message, which names the model */
	char pci_id[16];   /* "10de:2330"; "" in the legacy message */
	char gpu[96];      /* "Tesla K80" in the legacy message; "" otherwise */
	char driver[32];   /* the driver that refused: "470.82.01" (or "535.xx" as some print it) */
	int legacy_branch; /* 470: the legacy branch that drives the GPU; 0: the driver is too old */
} nvrm_refusal;

typedef struct nvrm_scan {
	char text[640]; /* the message so far, its NVRM lines joined by one space */
	int lines;      /* NVRM lines in it; 0: no message open */
} nvrm_scan;

/* Feeds one log line (len bytes, not necessarily NUL-terminated). Returns true when it completed
 * a refusal, written to *out. A message longer than 8 lines is dropped. */
bool nvrm_scan_line(nvrm_scan *s, const char *line, size_t len, nvrm_refusal *out);
#endif
