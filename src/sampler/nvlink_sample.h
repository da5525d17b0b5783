/* NVLink in the live sampler: state and error counters with the health counters, traffic every
 * sample (one nvmlDeviceGetFieldValues per GPU), rates from consecutive samples. */
#ifndef GPUVET_SAMPLER_NVLINK_SAMPLE_H
#define GPUVET_SAMPLER_NVLINK_SAMPLE_H
#include <stdbool.h>

#include "nvidia/nvlink.h"
#include "sampler/snapshot.h"

typedef struct nvlink_track {
	gv_nvlink_gpu g;       /* kept between samples: links found by the last state read */
	bool have_state;
	nvmlDevice_t dev;      /* the handle, looked up with the state (handles stay for an NVML session) */
	double last_time;      /* now_seconds() of the last traffic read; 0 before */
	double last_tx, last_rx; /* bytes over all links then */
} nvlink_track;

/* Reads GPU index into t (state and errors when full or never read, traffic always) and fills
 * the sample's NVLink part. */
void nvlink_sample(unsigned index, nvlink_track *t, bool full, double now, gpu_sample *out);
#endif
