/*
 * The GPUs as gpuvet bench uses them, over the driver API wrapper (nvidia/cuda.h): one primary
 * context, two streams, the PTX module (ptx.h) and two timing events per device; CUDA errors as
 * text; the device's properties; a sticky-error latch (after an illegal address or a failed
 * launch the context is unusable, so every later GPU benchmark is skipped with that reason).
 */
#ifndef GPUVET_BENCH_GPU_H
#define GPUVET_BENCH_GPU_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/dtype.h"
#include "nvidia/cuda.h"

/* Kernels of ptx_bench_module, in the order of ptx_bench_kernels. */
typedef enum {
	K_EMPTY,
	K_SET,
	K_COPY,
	K_SCALE,
	K_ADD,
	K_TRIAD,
	K_READ,
	K_FILL_B8,
	K_FILL_I8,
	K_FILL_B16,
	K_FILL_B32,
	K_FILL_B64,
	K_SPIN,
	K_MT_FILL,
	K_MT_CHECK,
	K_CMP_B32,
	K_COUNT
} gpu_kernel;

typedef struct gpu_dev {
	int ordinal;
	CUdevice dev;
	CUcontext ctx;
	bool ctx_retained;
	CUstream stream, stream2;
	CUevent ev_start, ev_end;
	CUmodule mod;
	bool module_loaded;
	CUfunction k[K_COUNT];
	char name[128];
	char bus_id[32]; /* "0000:18:00.0" as CUDA writes it */
	int cc_major, cc_minor;
	int sms;
	int l2_bytes;
	int bus_width_bits;
	int mem_clock_khz;
	int max_threads_per_sm;
	size_t total_mem;
	int nvml_index; /* the same GPU in NVML's order (by PCI bus id); -1 unknown */
} gpu_dev;

typedef struct gpu_session {
	const gv_cuda_api *cu;
	int count;
	gpu_dev *dev;
	int driver_version;
	char error[512];  /* why the GPUs cannot be used (gpu_open failed) */
	CUresult sticky;  /* an error that broke a context; 0 while none */
	char sticky_text[256];
} gpu_session;

/* Loads libcuda, cuInit, lists the devices and their properties. False with s->error set when
 * no GPU benchmark can run. Contexts are made by gpu_use. */
bool gpu_open(gpu_session *s);
/* Makes device `ordinal` current: retains its primary context, creates its streams and events,
 * loads the PTX module. False with err filled. */
bool gpu_use(gpu_session *s, int ordinal, char *err, size_t n);
void gpu_close(gpu_session *s);

/* "cuMemAlloc: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; latches sticky errors. */
const char *gpu_errtext(gpu_session *s, const char *call, CUresult rc, char *buf, size_t n);
/* True when an earlier error broke the contexts; why in s->sticky_text. */
bool gpu_broken(const gpu_session *s);

/* Kernel launch on the device's stream (or `stream` when not NULL). */
CUresult gpu_launch(gpu_session *s, gpu_dev *d, gpu_kernel k, unsigned grid, unsigned block, CUstream stream,
		    void **args);
/* Random input of dtype into n elements at p (the generator of gen.h), on the device's stream. */
CUresult gpu_fill(gpu_session *s, gpu_dev *d, bench_dtype dt, CUdeviceptr p, uint64_t n, uint32_t seed);
/* Copies back a few stretches of a filled buffer and compares them bit for bit with gen.h's
 * model. False with why filled when they differ (or the copy fails). */
bool gpu_check_fill(gpu_session *s, gpu_dev *d, bench_dtype dt, CUdeviceptr p, uint64_t n, uint32_t seed, char *why,
		    size_t why_n);
/* Queues gv_spin (one thread busy for `ns` nanoseconds) on `stream` (the device's stream when
 * NULL): put ahead of an event-timed region, the GPU is still busy when the start event and the
 * work arrive, so what the events measure is the work alone, not the host's time to enqueue it. */
CUresult gpu_guard(gpu_session *s, gpu_dev *d, CUstream stream, uint64_t ns);
/* Ends an event-timed region: records the device's end event on its stream, waits for it and
 * puts the milliseconds since the start event (recorded by the caller) in *ms. */
CUresult gpu_event_elapsed(gpu_session *s, gpu_dev *d, float *ms);
/* The same on a stream and events of the caller's own (a GEMM plan's). */
CUresult gpu_events_elapsed(gpu_session *s, CUstream stream, CUevent start, CUevent end, float *ms);
/* Launch shape of the grid-stride kernels: blocks per SM x SMs (at least 1). */
unsigned gpu_grid(const gpu_dev *d, unsigned blocks_per_sm);

/* Free and total device memory of the current context. */
bool gpu_mem_info(gpu_session *s, size_t *free_b, size_t *total_b);

/* Matches CUDA's and NVML's bus ids ("0000:18:00.0" vs "00000000:18:00.0"). */
bool gpu_same_bus_id(const char *a, const char *b);
#endif
