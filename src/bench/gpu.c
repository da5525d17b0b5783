#include "bench/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/gen.h"
#include "bench/ptx.h"
#include "core/util.h"
#include "nvidia/contact.h"

static bool is_sticky(CUresult rc)
{
	switch (rc) {
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_NVLINK_UNCORRECTABLE:
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case 716: /* CUDA_ERROR_MISALIGNED_ADDRESS */
	case 717: /* CUDA_ERROR_INVALID_ADDRESS_SPACE */
	case 718: /* CUDA_ERROR_INVALID_PC */
	case CUDA_ERROR_LAUNCH_FAILED: return true;
	default: return false;
	}
}

const char *gpu_errtext(gpu_session *s, const char *call, CUresult rc, char *buf, size_t n)
{
	snprintf(buf, n, "%s failed: %s (%d): %s", call, gv_cuda_result_name(rc), rc, gv_cuda_result_text(rc));
	if (s && is_sticky(rc) && !s->sticky) {
		s->sticky = rc;
		str_copy(s->sticky_text, sizeof(s->sticky_text), buf);
	}
	return buf;
}

bool gpu_broken(const gpu_session *s)
{
	return s->sticky != 0;
}

static int attr(const gv_cuda_api *cu, CUdevice d, int a)
{
	int v = 0;
	if (cu->cuDeviceGetAttribute && cu->cuDeviceGetAttribute(&v, a, d) != CUDA_SUCCESS)
		v = 0;
	return v;
}

bool gpu_open(gpu_session *s)
{
	memset(s, 0, sizeof(*s));
	/* a libcuda that hangs, crashes or exits while loading is met in a child first */
	if (!gv_cuda_first_contact(s->error, sizeof(s->error)))
		return false;
	if (!gv_cuda_load()) {
		gv_cuda_status st;
		gv_cuda_status_get(&st);
		snprintf(s->error, sizeof(s->error), "the CUDA driver library does not load (%s): %s",
			 st.path[0] ? st.path : "libcuda.so.1", st.error[0] ? st.error : "not found");
		return false;
	}
	s->cu = gv_cuda_api_get();
	CUresult rc = gv_cuda_init();
	if (rc != CUDA_SUCCESS) {
		const char *cause = gv_cuda_result_cause(rc);
		snprintf(s->error, sizeof(s->error), "cuInit failed: %s (%d)%s%s", gv_cuda_result_name(rc), rc,
			 cause ? ": " : "", cause ? cause : "");
		return false;
	}
	const gv_cuda_api *cu = s->cu;
	const struct {
		const char *name;
		const void *fn;
	} need[] = {
		{"cuDevicePrimaryCtxRetain", (const void *)cu->cuDevicePrimaryCtxRetain},
		{"cuCtxSetCurrent", (const void *)cu->cuCtxSetCurrent},
		{"cuMemAlloc_v2", (const void *)cu->cuMemAlloc},
		{"cuMemFree_v2", (const void *)cu->cuMemFree},
		{"cuMemGetInfo_v2", (const void *)cu->cuMemGetInfo},
		{"cuMemcpyDtoH_v2", (const void *)cu->cuMemcpyDtoH},
		{"cuModuleLoadData", (const void *)cu->cuModuleLoadData},
		{"cuModuleGetFunction", (const void *)cu->cuModuleGetFunction},
		{"cuLaunchKernel", (const void *)cu->cuLaunchKernel},
		{"cuStreamCreate", (const void *)cu->cuStreamCreate},
		{"cuStreamSynchronize", (const void *)cu->cuStreamSynchronize},
		{"cuEventCreate", (const void *)cu->cuEventCreate},
		{"cuEventRecord", (const void *)cu->cuEventRecord},
		{"cuEventSynchronize", (const void *)cu->cuEventSynchronize},
		{"cuEventElapsedTime", (const void *)cu->cuEventElapsedTime},
	};
	for (size_t i = 0; i < GV_ARRAY_LEN(need); i++)
		if (!need[i].fn) {
			gv_cuda_status st;
			gv_cuda_status_get(&st);
			snprintf(s->error, sizeof(s->error), "%s lacks %s (a driver too old or a stub library)", st.path,
				 need[i].name);
			return false;
		}
	if (cu->cuDriverGetVersion)
		cu->cuDriverGetVersion(&s->driver_version);
	int count = 0;
	rc = cu->cuDeviceGetCount(&count);
	if (rc != CUDA_SUCCESS || count <= 0) {
		snprintf(s->error, sizeof(s->error), "no CUDA device is visible (cuDeviceGetCount: %s, %d devices)",
			 gv_cuda_result_name(rc), count);
		return false;
	}
	if (count > 64)
		count = 64;
	s->count = count;
	s->dev = xcalloc((size_t)count, sizeof(*s->dev));
	for (int i = 0; i < count; i++) {
		gpu_dev *d = &s->dev[i];
		d->ordinal = i;
		d->nvml_index = -1;
		if (cu->cuDeviceGet(&d->dev, i) != CUDA_SUCCESS)
			d->dev = i;
		if (!cu->cuDeviceGetName || cu->cuDeviceGetName(d->name, (int)sizeof(d->name), d->dev) != CUDA_SUCCESS)
			snprintf(d->name, sizeof(d->name), "CUDA device %d", i);
		if (cu->cuDeviceGetPCIBusId)
			cu->cuDeviceGetPCIBusId(d->bus_id, (int)sizeof(d->bus_id), d->dev);
		d->cc_major = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
		d->cc_minor = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
		d->sms = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
		d->l2_bytes = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
		d->bus_width_bits = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
		d->mem_clock_khz = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
		d->max_threads_per_sm = attr(cu, d->dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
		if (cu->cuDeviceTotalMem)
			cu->cuDeviceTotalMem(&d->total_mem, d->dev);
	}
	return true;
}

static bool load_module(gpu_session *s, gpu_dev *d, char *err, size_t n)
{
	const gv_cuda_api *cu = s->cu;
	char log[4096] = "";
	CUresult rc;
	char buf[256];
	if (cu->cuModuleLoadDataEx) {
		CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
		void *vals[] = {log, (void *)(uintptr_t)sizeof(log)};
		rc = cu->cuModuleLoadDataEx(&d->mod, ptx_bench_module, 2, opts, vals);
	} else {
		rc = cu->cuModuleLoadData(&d->mod, ptx_bench_module);
	}
	if (rc != CUDA_SUCCESS) {
		log[sizeof(log) - 1] = 0;
		str_sanitize(log);
		snprintf(err, n, "%s%s%s", gpu_errtext(s, "loading the PTX kernels (cuModuleLoadData)", rc, buf, sizeof(buf)),
			 log[0] ? ": " : "", log);
		return false;
	}
	for (int k = 0; k < K_COUNT; k++) {
		rc = cu->cuModuleGetFunction(&d->k[k], d->mod, ptx_bench_kernels[k].entry);
		if (rc != CUDA_SUCCESS) {
			char what[96];
			snprintf(what, sizeof(what), "cuModuleGetFunction(%s)", ptx_bench_kernels[k].entry);
			gpu_errtext(s, what, rc, err, n);
			return false;
		}
	}
	d->module_loaded = true;
	return true;
}

bool gpu_use(gpu_session *s, int ordinal, char *err, size_t n)
{
	if (ordinal < 0 || ordinal >= s->count) {
		snprintf(err, n, "no CUDA device %d (this machine has %d)", ordinal, s->count);
		return false;
	}
	if (gpu_broken(s)) {
		snprintf(err, n, "skipped after an earlier GPU error: %s", s->sticky_text);
		return false;
	}
	const gv_cuda_api *cu = s->cu;
	gpu_dev *d = &s->dev[ordinal];
	CUresult rc;
	if (!d->ctx_retained) {
		rc = cu->cuDevicePrimaryCtxRetain(&d->ctx, d->dev);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "cuDevicePrimaryCtxRetain", rc, err, n);
			return false;
		}
		d->ctx_retained = true;
	}
	rc = cu->cuCtxSetCurrent(d->ctx);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(s, "cuCtxSetCurrent", rc, err, n);
		return false;
	}
	if (!d->stream) {
		if ((rc = cu->cuStreamCreate(&d->stream, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS ||
		    (rc = cu->cuStreamCreate(&d->stream2, CU_STREAM_NON_BLOCKING)) != CUDA_SUCCESS) {
			gpu_errtext(s, "cuStreamCreate", rc, err, n);
			return false;
		}
	}
	if (!d->ev_start) {
		if ((rc = cu->cuEventCreate(&d->ev_start, CU_EVENT_DEFAULT)) != CUDA_SUCCESS ||
		    (rc = cu->cuEventCreate(&d->ev_end, CU_EVENT_DEFAULT)) != CUDA_SUCCESS) {
			gpu_errtext(s, "cuEventCreate", rc, err, n);
			return false;
		}
	}
	if (!d->module_loaded && !load_module(s, d, err, n))
		return false;
	return true;
}

void gpu_close(gpu_session *s)
{
	const gv_cuda_api *cu = s->cu;
	for (int i = 0; cu && i < s->count; i++) {
		gpu_dev *d = &s->dev[i];
		if (!d->ctx_retained)
			continue;
		/* after a sticky error every call fails; releasing the context is still right */
		if (cu->cuCtxSetCurrent(d->ctx) == CUDA_SUCCESS && !gpu_broken(s)) {
			if (d->stream && cu->cuStreamDestroy)
				cu->cuStreamDestroy(d->stream);
			if (d->stream2 && cu->cuStreamDestroy)
				cu->cuStreamDestroy(d->stream2);
			if (d->ev_start && cu->cuEventDestroy)
				cu->cuEventDestroy(d->ev_start);
			if (d->ev_end && cu->cuEventDestroy)
				cu->cuEventDestroy(d->ev_end);
			if (d->module_loaded && cu->cuModuleUnload)
				cu->cuModuleUnload(d->mod);
		}
		if (cu->cuDevicePrimaryCtxRelease)
			cu->cuDevicePrimaryCtxRelease(d->dev);
	}
	free(s->dev);
	s->dev = NULL;
	s->count = 0;
}

CUresult gpu_launch(gpu_session *s, gpu_dev *d, gpu_kernel k, unsigned grid, unsigned block, CUstream stream,
		    void **args)
{
	(void)s;
	return s->cu->cuLaunchKernel(d->k[k], grid ? grid : 1, 1, 1, block, 1, 1, 0, stream ? stream : d->stream, args,
				     NULL);
}

CUresult gpu_guard(gpu_session *s, gpu_dev *d, CUstream stream, uint64_t ns)
{
	void *args[] = {&ns};
	return gpu_launch(s, d, K_SPIN, 1, 1, stream, args);
}

CUresult gpu_events_elapsed(gpu_session *s, CUstream stream, CUevent start, CUevent end, float *ms)
{
	const gv_cuda_api *cu = s->cu;
	*ms = 0;
	CUresult rc = cu->cuEventRecord(end, stream);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuEventSynchronize(end);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuEventElapsedTime(ms, start, end);
	return rc;
}

CUresult gpu_event_elapsed(gpu_session *s, gpu_dev *d, float *ms)
{
	return gpu_events_elapsed(s, d->stream, d->ev_start, d->ev_end, ms);
}

unsigned gpu_grid(const gpu_dev *d, unsigned blocks_per_sm)
{
	unsigned sms = d->sms > 0 ? (unsigned)d->sms : 1;
	return sms * (blocks_per_sm ? blocks_per_sm : 1);
}

CUresult gpu_fill(gpu_session *s, gpu_dev *d, bench_dtype dt, CUdeviceptr p, uint64_t n, uint32_t seed)
{
	const dtype_info *t = dtype_get(dt);
	unsigned mbits = (unsigned)t->mant_bits, ebase = (unsigned)t->exp_base;
	void *args[] = {&p, &n, &seed, &mbits, &ebase};
	gpu_kernel k;
	if (t->integer)
		k = K_FILL_I8;
	else if (t->in_bytes == 1)
		k = K_FILL_B8;
	else if (t->in_bytes == 2)
		k = K_FILL_B16;
	else if (t->in_bytes == 4)
		k = K_FILL_B32;
	else
		k = K_FILL_B64;
	return gpu_launch(s, d, k, gpu_grid(d, 8), 256, NULL, args);
}

bool gpu_check_fill(gpu_session *s, gpu_dev *d, bench_dtype dt, CUdeviceptr p, uint64_t n, uint32_t seed, char *why,
		    size_t why_n)
{
	const dtype_info *t = dtype_get(dt);
	const uint64_t chunk = 4096;
	uint64_t starts[3] = {0, n / 2, n > chunk ? n - chunk : 0};
	unsigned char *buf = xmalloc(chunk * 8);
	bool ok = true;
	CUresult rc = s->cu->cuStreamSynchronize(d->stream);
	if (rc != CUDA_SUCCESS) {
		gpu_errtext(s, "cuStreamSynchronize after the input generator", rc, why, why_n);
		free(buf);
		return false;
	}
	for (int c = 0; c < 3 && ok; c++) {
		uint64_t from = starts[c], len = from + chunk <= n ? chunk : n - from;
		rc = s->cu->cuMemcpyDtoH(buf, p + from * (uint64_t)t->in_bytes, len * (uint64_t)t->in_bytes);
		if (rc != CUDA_SUCCESS) {
			gpu_errtext(s, "cuMemcpyDtoH of the generated input", rc, why, why_n);
			ok = false;
			break;
		}
		for (uint64_t i = 0; i < len; i++) {
			uint64_t want = gen_bits(dt, seed, from + i), got = 0;
			memcpy(&got, buf + i * (uint64_t)t->in_bytes, (size_t)t->in_bytes);
			if (got != want) {
				snprintf(why, why_n,
					 "the %s input generator on the GPU disagrees with its CPU model at element %llu "
					 "(GPU 0x%llx, CPU 0x%llx): the inputs cannot be checked",
					 t->name, (unsigned long long)(from + i), (unsigned long long)got,
					 (unsigned long long)want);
				ok = false;
				break;
			}
		}
	}
	free(buf);
	return ok;
}

bool gpu_mem_info(gpu_session *s, size_t *free_b, size_t *total_b)
{
	return s->cu->cuMemGetInfo(free_b, total_b) == CUDA_SUCCESS;
}

/* "0000:18:00.0" or "00000000:18:00.0" -> domain, bus, device, function */
static bool parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *dev, unsigned *fn)
{
	return s && sscanf(s, "%x:%x:%x.%x", dom, bus, dev, fn) == 4;
}

bool gpu_same_bus_id(const char *a, const char *b)
{
	unsigned d1, b1, v1, f1, d2, b2, v2, f2;
	if (!parse_bus_id(a, &d1, &b1, &v1, &f1) || !parse_bus_id(b, &d2, &b2, &v2, &f2))
		return false;
	return d1 == d2 && b1 == b2 && v1 == v2 && f1 == f2;
}
