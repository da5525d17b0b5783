/*
 * The job a consumer follows (watch --pid/--pod/--job, run, the job doctor): a process and its
 * descendants (a torchrun and its workers), or every process of a Kubernetes pod or a Slurm job
 * (fleet/attrib.h), read from /proc through --root; and the GPUs it holds, from NVML's process
 * lists or, where NVML does not name the job (a container with its own PID namespace: NVML
 * reports host pids), from the /dev/nvidiaN its processes hold open (/proc/PID/fd).
 */
#ifndef GPUVET_SAMPLER_JOB_H
#define GPUVET_SAMPLER_JOB_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/snapshot.h"

#define JOB_MAX_PIDS 256
typedef struct job {
	unsigned root;  /* the process followed; for a pod or Slurm job its lowest pid */
	bool alive;     /* the root process exists (a pod or job: one of its processes does) */
	size_t n;
	unsigned pids[JOB_MAX_PIDS];
	char pod[256];  /* --pod: name, namespace/name or UID; "" */
	char slurm[48]; /* --job: ID or ID.STEP; "" */
	/* the device files: bit N of dev_minors[i] is /dev/nvidiaN (N < 64) open in pids[i]; read on
	 * demand (job_gpu), again after each scan */
	bool devs_read;
	unsigned long long dev_minors[JOB_MAX_PIDS];
} job;
void job_scan(job *j, unsigned root);
/* Every process whose owner matches pod (or, when pod is NULL or "", the Slurm job slurm). */
void job_scan_owner(job *j, const char *pod, const char *slurm);
/* The same job again: its processes now (after job_scan or job_scan_owner). */
void job_rescan(job *j);
/* "process 4242", "pod research/trainer", "Slurm job 4242" */
const char *job_text(const job *j, char *buf, size_t size);
bool job_has(const job *j, unsigned pid);
/* Whether NVML's process list of the GPU names a process of the job; the job's memory on it
 * (bytes, NAN when unknown). */
bool job_on_gpu(const job *j, const gpu_sample *g, double *mem_bytes);

/* How the job holds a GPU: named in NVML's process list, or only through an open device file. */
typedef enum { JOB_GPU_NONE = 0, JOB_GPU_NVML, JOB_GPU_DEVICE } job_gpu_hold;
/* job_on_gpu, else the device files (read once after a scan). Adds the job's processes that hold
 * the GPU to holders (*n of cap, no duplicates); holders may be NULL. */
job_gpu_hold job_gpu(job *j, const gpu_sample *g, double *mem_bytes, unsigned *holders, size_t *n, size_t cap);
#endif
