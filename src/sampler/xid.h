/*
 * Xid events from the kernel log: the driver prints "NVRM: Xid (PCI:0000:18:00): 79, pid=...,
 * GPU has fallen off the bus." The reader follows /dev/kmsg where this user may read it and
 * hands each line to the parser of nvidia/xidlog.h.
 *
 * And a per-GPU tally of Xid codes, shared by the NVML event thread and the kernel log reader,
 * that merges the two reports of one event.
 */
#ifndef GPUVET_SAMPLER_XID_H
#define GPUVET_SAMPLER_XID_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "nvidia/xidlog.h"
#include "sampler/snapshot.h"

/* Whether the device of an Xid line ("0000:18:00", nvidia/xidlog.h) is the GPU whose bus id
 * NVML prints as "00000000:18:00.0". */
bool xid_pci_matches(const char *xid_pci, const char *pci_bus_id);

/* Follows the kernel log. Opening a character device (/dev/kmsg) starts at its end: only
 * what is logged from now on; a regular file (a test's --root tree) is read from its start. */
typedef struct kmsg_reader {
	int fd;
	char partial[1024];
	size_t plen;
	char error[128]; /* why it could not open, when fd < 0 */
} kmsg_reader;
void kmsg_open(kmsg_reader *r, const char *path); /* path of the examined machine, through --root */
/* Reads what is available without blocking; calls fn for each Xid line. Returns lines read. */
size_t kmsg_poll(kmsg_reader *r, void (*fn)(void *ctx, const xid_line *x), void *ctx);
void kmsg_close(kmsg_reader *r);

/* The tally. Events of the same GPU and code from the other source within this many seconds
 * are one event reported twice. */
#define XID_MERGE_SECONDS 5.0
enum { XID_SRC_NVML = 1, XID_SRC_KMSG = 2 };

typedef struct xid_tally_gpu {
	xid_count counts[SNAP_MAX_XID_CODES];
	size_t n;
	unsigned long long total;
	unsigned last_code;
	double last_time;
	int last_src;
} xid_tally_gpu;

typedef struct xid_tally {
	pthread_mutex_t mu;
	int ngpus;
	xid_tally_gpu *gpus;
} xid_tally;

void xid_tally_init(xid_tally *t, int ngpus);
void xid_tally_free(xid_tally *t);
/* Records an event of GPU index gpu at clock value now. */
void xid_tally_add(xid_tally *t, int gpu, unsigned code, int src, double now);
/* Copies the counts of GPU gpu into the sample. */
void xid_tally_copy(xid_tally *t, int gpu, gpu_sample *g);
#endif
