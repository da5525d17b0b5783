/*
 * libcuda: two probes. "cudalib" loads the library and asks cuDriverGetVersion (no cuInit, so
 * it runs under --fast too); "cuda" calls cuInit (about 0.4 s on an H200 machine, the floor of
 * `gpuvet check`), then lists devices in CUDA order and the peer-access matrix.
 *
 * Facts: cuda.*  (core/factkeys.def, docs/facts.md; how: docs/facts/nvidia.md)
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/child.h"
#include "core/factkeys.h"
#include "core/sysroot.h"
#include "nvidia/cuda.h"
#include "nvidia/libfile.h"
#include "probes/deadline.h"
#include "probes/probes.h"

/* An error fact: "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected". */
static void put_cuda_error(facts *f, const char *source, CUresult rc, const char *keyfmt, ...) GV_PRINTF(4, 5);
static void put_cuda_error(facts *f, const char *source, CUresult rc, const char *keyfmt, ...)
{
	char why[256];
	snprintf(why, sizeof(why), "%s (%d): %s", gv_cuda_result_name(rc), rc, gv_cuda_result_text(rc));
	char key[128];
	va_list ap;
	va_start(ap, keyfmt);
	vsnprintf(key, sizeof(key), keyfmt, ap);
	va_end(ap);
	facts_put_state(f, FACT_ERROR, source, why, "%s", key);
}

void probe_cudalib(facts *f, const probe_opts *o)
{
	(void)o;
	/* what cuInit will see: the finding for CUDA_ERROR_NO_DEVICE needs it */
	const char *cvd = getenv("CUDA_VISIBLE_DEVICES");
	if (cvd)
		facts_put_str(f, "environment", cvd, FK_CUDA_VISIBLE_DEVICES);
	else
		facts_put_state(f, FACT_ABSENT, "environment", "not set", FK_CUDA_VISIBLE_DEVICES);
	gv_cuda_load();
	gv_cuda_status st;
	gv_cuda_status_get(&st);
	const char *src = st.from_env ? "GPUVET_CUDA_LIB" : "dlopen";
	if (!st.loaded) {
		bool missing = strstr(st.error, "No such file") || strstr(st.error, "not found in the root tree") ||
			       strstr(st.error, "cannot open shared object file");
		facts_put_state(f, missing ? FACT_ABSENT : FACT_ERROR, src, st.error, FK_CUDA_LIBRARY);
		char path[PATH_MAX], ver[64];
		if (gv_driver_lib_find("libcuda.so.", path, sizeof(path), ver, sizeof(ver)))
			facts_put_str(f, path, ver, FK_CUDA_LIBRARY_FILE_VERSION);
		return;
	}
	facts_put_str(f, src, sysroot_strip(st.path), FK_CUDA_LIBRARY);
	char ver[64], path[PATH_MAX];
	if (gv_driver_lib_file_version(st.path, "libcuda.so.", ver, sizeof(ver)))
		facts_put_str(f, sysroot_strip(st.path), ver, FK_CUDA_LIBRARY_FILE_VERSION);
	else if (gv_driver_lib_find("libcuda.so.", path, sizeof(path), ver, sizeof(ver)))
		facts_put_str(f, path, ver, FK_CUDA_LIBRARY_FILE_VERSION);
	else
		facts_put_state(f, FACT_ABSENT, st.path, "no version in the file name", FK_CUDA_LIBRARY_FILE_VERSION);
	const gv_cuda_api *cu = gv_cuda_api_get();
	int v = 0;
	gv_child_stage("libcuda.so.1", st.path, "cuDriverGetVersion");
	CUresult rc = cu->cuDriverGetVersion(&v);
	gv_child_stage_end();
	if (rc == CUDA_SUCCESS)
		facts_put_int(f, "cuDriverGetVersion", v, FK_CUDA_DRIVER_VERSION);
	else
		put_cuda_error(f, "cuDriverGetVersion", rc, FK_CUDA_DRIVER_VERSION);
}

static void probe_device(facts *f, const gv_cuda_api *cu, int i)
{
	CUdevice dev = 0;
	CUresult rc = cu->cuDeviceGet(&dev, i);
	if (rc != CUDA_SUCCESS) {
		put_cuda_error(f, "cuDeviceGet", rc, FK_CUDA_DEV_NAME(d), i);
		return;
	}
	char buf[256];
	if (cu->cuDeviceGetName) {
		rc = cu->cuDeviceGetName(buf, sizeof(buf), dev);
		buf[sizeof(buf) - 1] = '\0';
		str_sanitize(buf);
		if (rc == CUDA_SUCCESS)
			facts_put_str(f, "cuDeviceGetName", buf, FK_CUDA_DEV_NAME(d), i);
		else
			put_cuda_error(f, "cuDeviceGetName", rc, FK_CUDA_DEV_NAME(d), i);
	}
	if (cu->cuDeviceGetPCIBusId) {
		rc = cu->cuDeviceGetPCIBusId(buf, 64, dev);
		buf[63] = '\0';
		str_sanitize(buf);
		if (rc == CUDA_SUCCESS)
			facts_put_str(f, "cuDeviceGetPCIBusId", buf, FK_CUDA_DEV_PCI_BUS_ID(d), i);
		else
			put_cuda_error(f, "cuDeviceGetPCIBusId", rc, FK_CUDA_DEV_PCI_BUS_ID(d), i);
	}
	if (cu->cuDeviceGetAttribute) {
		int major = 0, minor = 0, sms = 0;
		rc = cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
		if (rc == CUDA_SUCCESS)
			rc = cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
		if (rc == CUDA_SUCCESS) {
			snprintf(buf, sizeof(buf), "%d.%d", major, minor);
			facts_put_str(f, "cuDeviceGetAttribute", buf, FK_CUDA_DEV_CC(d), i);
		} else {
			put_cuda_error(f, "cuDeviceGetAttribute", rc, FK_CUDA_DEV_CC(d), i);
		}
		if (cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) == CUDA_SUCCESS)
			facts_put_int(f, "cuDeviceGetAttribute", sms, FK_CUDA_DEV_SM_COUNT(d), i);
		int timeout = 0;
		if (cu->cuDeviceGetAttribute(&timeout, CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, dev) == CUDA_SUCCESS)
			facts_put_bool(f, "cuDeviceGetAttribute", timeout != 0, FK_CUDA_DEV_KERNEL_EXEC_TIMEOUT(d), i);
	}
	if (cu->cuDeviceTotalMem) {
		size_t bytes = 0;
		rc = cu->cuDeviceTotalMem(&bytes, dev);
		if (rc == CUDA_SUCCESS)
			facts_put_int(f, "cuDeviceTotalMem_v2", (long long)bytes, FK_CUDA_DEV_MEMORY_TOTAL_BYTES(d), i);
	}
}

static void cuda_body(facts *f, const probe_opts *o)
{
	(void)o;
	gv_cuda_status st;
	CUresult rc = gv_cuda_init_staged(&st);
	facts_put_int(f, "cuInit", rc, FK_CUDA_INIT_CODE);
	facts_put_real(f, "cuInit", st.init_seconds, FK_CUDA_INIT_SECONDS);
	if (rc != CUDA_SUCCESS) {
		put_cuda_error(f, "cuInit", rc, FK_CUDA_INIT);
		return;
	}
	facts_put_str(f, "cuInit", "ok", FK_CUDA_INIT);
	const gv_cuda_api *cu = gv_cuda_api_get();
	int n = 0;
	rc = cu->cuDeviceGetCount(&n);
	if (rc != CUDA_SUCCESS) {
		put_cuda_error(f, "cuDeviceGetCount", rc, FK_CUDA_DEVICE_COUNT);
		return;
	}
	if (n < 0 || n > 1024)
		n = 0;
	facts_put_int(f, "cuDeviceGetCount", n, FK_CUDA_DEVICE_COUNT);
	gv_child_stage("libcuda.so.1", st.path, "cuDevice* queries");
	for (int i = 0; i < n; i++)
		probe_device(f, cu, i);
	gv_child_stage_end();
	if (!cu->cuDeviceCanAccessPeer)
		return;
	gv_child_stage("libcuda.so.1", st.path, "cuDeviceCanAccessPeer");
	for (int i = 0; i < n && i < 16; i++)
		for (int j = 0; j < n && j < 16; j++) {
			if (i == j)
				continue;
			int can = 0;
			rc = cu->cuDeviceCanAccessPeer(&can, i, j);
			if (rc == CUDA_SUCCESS)
				facts_put_bool(f, "cuDeviceCanAccessPeer", can != 0, FK_CUDA_PEER(d, d), i, j);
			else
				put_cuda_error(f, "cuDeviceCanAccessPeer", rc, FK_CUDA_PEER(d, d), i, j);
		}
	gv_child_stage_end();
}

void probe_cuda(facts *f, const probe_opts *o)
{
	gv_cuda_load();
	gv_cuda_status st;
	gv_cuda_status_get(&st);
	if (!st.loaded) {
		facts_put_state(f, FACT_ABSENT, "dlopen", "libcuda not loaded", FK_CUDA_INIT);
		return;
	}
	/* cuInit takes seconds on big machines without persistence mode; minutes means it hangs */
	probe_run_driver_body(f, cuda_body, o, gv_driver_timeout(60), "cuInit", "cuInit", "", FK_CUDA_INIT,
			      FK_CUDA_TIMEOUT);
}

/* The cudalib child (dlopen, cuDriverGetVersion) hung, crashed or exited. */
void probe_cudalib_failed(facts *f, const probe_opts *o, const gv_child_report *r)
{
	(void)o;
	char what[PATH_MAX + 300];
	bool loading = probe_put_library_failed(f, r, "GPUVET_CUDA_LIB", "libcuda.so.", FK_CUDA_LIBRARY,
						FK_CUDA_LIBRARY_FILE_VERSION, what, sizeof(what));
	if (!loading && r->call[0])
		facts_put_state(f, FACT_ERROR, r->call, what, FK_CUDA_DRIVER_VERSION);
}

/* The cuInit child hung, crashed or exited: cuda.init carries it. */
void probe_cuda_failed(facts *f, const probe_opts *o, const gv_child_report *r)
{
	(void)o;
	char what[PATH_MAX + 300];
	gv_child_describe(r, what, sizeof(what));
	facts_put_state(f, FACT_ERROR, "cuInit", what, FK_CUDA_INIT);
	if (r->outcome == GV_CHILD_HUNG)
		facts_put_bool(f, "cuInit (GPUVET_DRIVER_TIMEOUT)", true, FK_CUDA_TIMEOUT);
}
