/*
 * The NVML and libcuda wrappers against the fake libraries (tests/fake): missing libraries,
 * missing symbols (the basic fake), failing calls, errors from init, cycling values, Xid events.
 * The paths of the fakes come from CMake (FAKE_NVML, FAKE_NVML_BASIC, FAKE_CUDA).
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/sysroot.h"
#include "core/util.h"
#include "nvidia/cuda.h"
#include "nvidia/nvml.h"
#include "../tools/test_tmp.h"

#ifndef FAKE_NVML
#define FAKE_NVML ""
#define FAKE_NVML_BASIC ""
#define FAKE_CUDA ""
#endif

static char conf_path[4096];

/* Writes the fake configuration and makes the next load read it, with the given libraries. */
static void use_fakes(const char *nvml_lib, const char *config)
{
	FILE *f = fopen(conf_path, "w");
	assert_non_null(f);
	fputs(config, f);
	fclose(f);
	setenv("GPUVET_FAKE_CONFIG", conf_path, 1);
	if (nvml_lib)
		setenv("GPUVET_NVML_LIB", nvml_lib, 1);
	else
		unsetenv("GPUVET_NVML_LIB");
	setenv("GPUVET_CUDA_LIB", FAKE_CUDA, 1);
	gv_nvml_unload();
	gv_cuda_unload();
}

static int setup(void **s)
{
	(void)s;
	if (!*FAKE_NVML)
		return -1;
	snprintf(conf_path, sizeof(conf_path), "%s/gpuvet-test-nvidia-%d.conf", test_tmpdir(), (int)getpid());
	return 0;
}

static int teardown(void **s)
{
	(void)s;
	gv_nvml_unload();
	gv_cuda_unload();
	sysroot_set(NULL);
	unlink(conf_path);
	return 0;
}

static void test_library_missing(void **s)
{
	(void)s;
	use_fakes("/nonexistent/libnvidia-ml.so.1", "");
	assert_false(gv_nvml_load());
	assert_int_equal(gv_nvml_init(), NVML_ERROR_LIBRARY_NOT_FOUND);
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	assert_true(st.attempted);
	assert_false(st.loaded);
	assert_true(st.from_env);
	assert_non_null(strstr(st.error, "nonexistent"));
	unsigned n = 99;
	assert_int_not_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 0);
	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	assert_int_equal(sys.driver_version.st, GV_V_ERROR);
	/* our own table answers without the library */
	assert_string_equal(gv_nvml_return_name(18), "NVML_ERROR_LIB_RM_VERSION_MISMATCH");
	assert_non_null(strstr(gv_nvml_error_string(9), "driver"));
}

static void test_library_without_basic_symbols(void **s)
{
	(void)s;
	/* libcuda is a real shared library but not NVML */
	use_fakes(FAKE_CUDA, "");
	assert_false(gv_nvml_load());
	assert_int_equal(gv_nvml_init(), NVML_ERROR_FUNCTION_NOT_FOUND);
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	assert_non_null(strstr(st.error, "nvmlInit"));
}

static void test_full_fake(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\n"
			     "driver_version = 580.159.04\n"
			     "gpu.*.name = NVIDIA H200\n"
			     "gpu.1.name = NVIDIA A100-SXM4-80GB\n"
			     "gpu.1.cc = 8.0\n"
			     "gpu.0.uuid = GPU-11111111-2222-3333-4444-555555555555\n"
			     "gpu.1.pci_bus_id = 00000000:9A:00.0\n"
			     "gpu.0.memory_used = 1GiB\n"
			     "gpu.0.processes = 4242:python3:2GiB;77:Xorg:n/a:graphics\n"
			     "gpu.1.mig_mode = 1\n"
			     "gpu.1.mig.count = 2\n"
			     "gpu.1.mig.1.uuid = MIG-aaaa\n"
			     "gpu.0.clock_reasons = 0x4c\n"
			     "gpu.0.compute_mode = exclusive_process\n"
			     "gpu.1.fabric_state = in_progress\n"
			     "gpu.0.pcie_width = 8\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS); /* once */
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	assert_true(st.loaded && st.init_called);
	unsigned n = 0;
	assert_int_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 2);

	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	assert_true(GV_OK(sys.driver_version));
	assert_string_equal(sys.driver_version.v, "580.159.04");
	assert_int_equal(sys.cuda_driver_version.v, 13000);

	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	assert_int_equal(gv_nvml_device_snapshot(0, GV_NVML_ALL, &d), NVML_SUCCESS);
	assert_string_equal(d.name.v, "NVIDIA H200");
	assert_string_equal(d.uuid.v, "GPU-11111111-2222-3333-4444-555555555555");
	assert_string_equal(d.pci_bus_id.v, "00000000:18:00.0");
	assert_int_equal(d.cc_major.v, 9);
	assert_int_equal(d.memory_total.v, 143771ULL << 20);
	assert_int_equal(d.memory_used.v, 1ULL << 30);
	assert_int_equal(d.pcie_width.v, 8);
	assert_int_equal(d.pcie_width_max.v, 16);
	assert_int_equal(d.compute_mode.v, NVML_COMPUTEMODE_EXCLUSIVE_PROCESS);
	assert_string_equal(gv_nvml_compute_mode_name(d.compute_mode.v), "exclusive_process");
	assert_int_equal(d.clock_event_reasons.v, 0x4c);
	char buf[256];
	assert_string_equal(gv_nvml_clock_reasons_text(d.clock_event_reasons.v, buf, sizeof(buf)),
			    "sw_power_cap,hw_slowdown,hw_thermal_slowdown");
	assert_true(GV_OK(d.ecc_uncorrected_volatile));
	assert_int_equal(d.retired_sbe.st, GV_V_UNSUPPORTED); /* Hopper: no page retirement */
	assert_true(GV_OK(d.remap_pending));
	assert_int_equal(d.fan_percent.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.fabric_state.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.procs_st, GV_V_OK);
	assert_int_equal(d.nprocs, 2);
	assert_int_equal(d.procs[0].pid, 4242);
	assert_string_equal(d.procs[0].name, "python3");
	assert_int_equal(d.procs[0].used_bytes, 2ULL << 30);
	assert_true(d.procs[1].graphics);
	assert_int_equal(d.procs[1].used_bytes, NVML_VALUE_NOT_AVAILABLE_ULL);

	gv_nvml_device_clear(&d);
	assert_int_equal(gv_nvml_device_snapshot(1, GV_NVML_IDENTITY | GV_NVML_MODES, &d), NVML_SUCCESS);
	assert_string_equal(d.name.v, "NVIDIA A100-SXM4-80GB");
	assert_int_equal(d.cc_major.v, 8);
	assert_string_equal(d.pci_bus_id.v, "00000000:9A:00.0");
	assert_int_equal(d.mig_mode.v, 1);
	assert_int_equal(d.mig_count, 2);
	assert_string_equal(d.mig_uuid[1].v, "MIG-aaaa");
	assert_int_equal(d.fabric_state.v, NVML_GPU_FABRIC_STATE_IN_PROGRESS);
	assert_int_equal(d.temperature_c.st, GV_V_UNSET); /* not asked for */

	/* an index beyond the count: the handle fails, nothing else is touched */
	assert_int_not_equal(gv_nvml_device_snapshot(5, GV_NVML_ALL, &d), NVML_SUCCESS);
}

static void test_basic_fake_old_driver(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML_BASIC, "device_count = 1\ngpu.0.pci_bus_id = 00000000:3B:00.0\n");
	assert_false(gv_nvml_has_symbol("nvmlInit_v2"));
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	unsigned n = 0;
	assert_int_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 1);
	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	assert_int_equal(sys.driver_version.st, GV_V_UNSUPPORTED);
	assert_int_equal(sys.cuda_driver_version.st, GV_V_UNSUPPORTED);
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	assert_int_equal(gv_nvml_device_snapshot(0, GV_NVML_ALL, &d), NVML_SUCCESS);
	assert_string_equal(d.name.v, "NVIDIA H200");
	/* v1 PCI layout: the id comes from the 16-byte field */
	assert_true(GV_OK(d.pci_bus_id));
	assert_string_equal(d.pci_bus_id.v, "00000000:3B:00.0");
	assert_int_equal(d.pci_device_id.v, 0x233510de);
	assert_true(GV_OK(d.memory_total));
	assert_int_equal(d.memory_reserved.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.cc_major.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.temperature_c.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.clock_event_reasons.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.procs_st, GV_V_UNSUPPORTED);
	assert_int_equal(d.ecc_uncorrected_volatile.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.mig_mode.st, GV_V_UNSUPPORTED);
	nvmlReturn_t rc;
	assert_null(gv_nvml_events_open(&rc));
	assert_int_equal(rc, NVML_ERROR_NOT_SUPPORTED);
	/* every symbol probed above that the old library lacks left no dlerror block in this thread
	 * (a worker thread ending with one is a leak to LeakSanitizer) */
	assert_null(dlerror());
}

static void test_init_error(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "error.nvmlInit = 9\n");
	assert_true(gv_nvml_load());
	assert_int_equal(gv_nvml_init(), NVML_ERROR_DRIVER_NOT_LOADED);
	assert_string_equal(gv_nvml_error_string(NVML_ERROR_DRIVER_NOT_LOADED), "Driver Not Loaded");
	unsigned n = 5;
	assert_int_equal(gv_nvml_device_count(&n), NVML_ERROR_DRIVER_NOT_LOADED);
	assert_int_equal(n, 0);

	use_fakes(FAKE_NVML, "error.nvmlInit_v2 = 18\n");
	assert_int_equal(gv_nvml_init(), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
}

/* The fake counts nvmlInit and nvmlShutdown as NVML does (a shutdown that brings the count to
 * zero makes every later call NVML_ERROR_UNINITIALIZED), and NVML's state does not survive fork:
 * a forked child starts uninitialised, whatever its parent did. */
static void test_fake_reference_counting(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\n");
	assert_true(gv_nvml_load());
	nvmlReturn_t (*init)(void) = (nvmlReturn_t (*)(void))gv_nvml_symbol("nvmlInit_v2");
	nvmlReturn_t (*shutdown)(void) = (nvmlReturn_t (*)(void))gv_nvml_symbol("nvmlShutdown");
	nvmlReturn_t (*count)(unsigned *) = (nvmlReturn_t (*)(unsigned *))gv_nvml_symbol("nvmlDeviceGetCount_v2");
	assert_non_null(init);
	assert_non_null(shutdown);
	assert_non_null(count);
	unsigned n = 0;
	assert_int_equal(count(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(init(), NVML_SUCCESS);
	assert_int_equal(init(), NVML_SUCCESS);
	assert_int_equal(shutdown(), NVML_SUCCESS);
	assert_int_equal(count(&n), NVML_SUCCESS); /* one initialisation left */
	assert_int_equal(n, 2);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned c = 0;
		bool uninit = count(&c) == NVML_ERROR_UNINITIALIZED;
		bool own = init() == NVML_SUCCESS && count(&c) == NVML_SUCCESS && c == 2 && shutdown() == NVML_SUCCESS;
		_exit(uninit && own ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(count(&n), NVML_SUCCESS); /* the child's shutdown was its own */
	assert_int_equal(shutdown(), NVML_SUCCESS);
	assert_int_equal(count(&n), NVML_ERROR_UNINITIALIZED);
	assert_int_equal(shutdown(), NVML_ERROR_UNINITIALIZED);
}

/* gpuvet run: the job follower initialises NVML in this process, then the explanation's check
 * probes it in a forked child. The child must initialise NVML itself (the parent's init does not
 * carry over fork), and its end must not shut down the parent's. */
static void test_init_in_forked_child(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	unsigned n = 0;
	assert_int_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned c = 0;
		gv_nvml_status st;
		bool ok = gv_nvml_init_staged(&st) == NVML_SUCCESS && gv_nvml_device_count(&c) == NVML_SUCCESS && c == 2;
		gv_nvml_shutdown();
		_exit(ok ? 0 : 1);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		fail_msg("a forked child could not query NVML after its parent initialised it (status 0x%x)", status);
	n = 0;
	assert_int_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 2);
}

static void test_failing_calls(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\n"
			     "error.nvmlDeviceGetTemperature = 3\n"
			     "gpu.1.error.nvmlDeviceGetPowerUsage = 15\n"
			     "error.nvmlDeviceGetMemoryInfo = 999\n"
			     "error.nvmlDeviceGetComputeRunningProcesses = 4\n"
			     "error.nvmlDeviceGetGraphicsRunningProcesses = 4\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	gv_nvml_device_snapshot(1, GV_NVML_ALL, &d);
	assert_int_equal(d.temperature_c.st, GV_V_UNSUPPORTED);
	assert_int_equal(d.power_mw.st, GV_V_ERROR);
	assert_int_equal(d.power_mw.rc, NVML_ERROR_GPU_IS_LOST);
	assert_string_equal(gv_nvml_error_string(d.power_mw.rc), "GPU is lost");
	/* _v2 and the plain memory call both fail */
	assert_int_equal(d.memory_total.st, GV_V_ERROR);
	assert_int_equal(d.memory_total.rc, 999);
	assert_int_equal(d.procs_st, GV_V_ERROR);
	assert_int_equal(d.procs_rc, NVML_ERROR_NO_PERMISSION);
	gv_nvml_device_clear(&d);
	gv_nvml_device_snapshot(0, GV_NVML_DYNAMIC, &d);
	assert_true(GV_OK(d.power_mw)); /* only GPU 1 fails */
}

static void test_sampler_failure_after_n(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "gpu.0.temperature = 40,60,85\n"
			     "error.nvmlDeviceGetTemperature = 15\n"
			     "error.nvmlDeviceGetTemperature.after = 3\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	unsigned long long want[] = {40, 60, 85};
	unsigned long long last_energy = 0;
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	for (int i = 0; i < 3; i++) {
		gv_nvml_device_snapshot(0, GV_NVML_DYNAMIC, &d);
		assert_true(GV_OK(d.temperature_c));
		assert_int_equal(d.temperature_c.v, want[i]);
		assert_true(GV_OK(d.energy_mj));
		assert_true(d.energy_mj.v > last_energy); /* monotonic */
		last_energy = d.energy_mj.v;
	}
	gv_nvml_device_snapshot(0, GV_NVML_DYNAMIC, &d);
	assert_int_equal(d.temperature_c.st, GV_V_ERROR);
	assert_int_equal(d.temperature_c.rc, NVML_ERROR_GPU_IS_LOST);
}

/* GPM: per GPU support, the counters between two samples in base units, each metric's own
 * status, and every way it is missing (old driver, pre-Hopper GPU, MIG, a failing sample). */
static void test_gpm(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 3\n"
			     "gpu.0.gpm = 1\ngpu.0.gpm.sm_active = 50,94\ngpu.0.gpm.tensor_active = 91\n"
			     "gpu.0.gpm.pcie_rx = 1024\ngpu.0.gpm.nvlink_rx = unsupported\n"
			     "gpu.1.gpm = 0\n"
			     "gpu.2.gpm = 1\ngpu.2.mig_mode = 1\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_gpm_support sup;
	nvmlReturn_t rc;
	gv_gpm *g = gv_gpm_open(0, &sup, &rc);
	assert_non_null(g);
	assert_int_equal(sup, GV_GPM_ON);
	gv_nv_dbl v[GV_GPM_N];
	/* the first sample has nothing to compare with */
	assert_int_equal(gv_gpm_take(g, v), NVML_SUCCESS);
	assert_int_equal(v[GV_GPM_SM_ACTIVE].st, GV_V_UNSET);
	/* the second: the later sample's values (94, not the first's 50), as ratios and bytes/s */
	assert_int_equal(gv_gpm_take(g, v), NVML_SUCCESS);
	assert_int_equal(v[GV_GPM_SM_ACTIVE].st, GV_V_OK);
	assert_true(fabs(v[GV_GPM_SM_ACTIVE].v - 0.94) < 1e-9);
	assert_true(fabs(v[GV_GPM_TENSOR_ACTIVE].v - 0.91) < 1e-9);
	assert_true(fabs(v[GV_GPM_PCIE_RX].v - 1024.0 * 1048576) < 1e-3);
	assert_int_equal(v[GV_GPM_NVLINK_RX].st, GV_V_UNSUPPORTED);
	assert_int_equal(v[GV_GPM_DRAM_ACTIVE].st, GV_V_OK); /* unset in the fake: 0 */
	/* a failing sample is an error for every metric, and starts the interval over */
	gv_gpm_close(g);
	assert_null(gv_gpm_open(1, &sup, &rc));
	assert_int_equal(sup, GV_GPM_UNSUPPORTED);
	assert_null(gv_gpm_open(2, &sup, &rc));
	assert_int_equal(sup, GV_GPM_MIG);
	gv_nvml_unload();

	use_fakes(FAKE_NVML, "gpu.0.gpm = 1\ngpu.0.gpm.sm_active = 10\n"
			     "error.nvmlGpmSampleGet = 999\nerror.nvmlGpmSampleGet.after = 2\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	g = gv_gpm_open(0, &sup, &rc);
	assert_non_null(g);
	gv_gpm_take(g, v);
	assert_int_equal(gv_gpm_take(g, v), NVML_SUCCESS);
	assert_int_equal(v[GV_GPM_SM_ACTIVE].st, GV_V_OK);
	assert_int_equal(gv_gpm_take(g, v), NVML_ERROR_UNKNOWN);
	assert_int_equal(v[GV_GPM_SM_ACTIVE].st, GV_V_ERROR);
	gv_gpm_close(g);
	gv_nvml_unload();

	/* where GPM is not: NVML's per-process SM utilization, the newest sample per pid; no
	 * sample since the last call reads 0 (idle), a driver without the call n/a */
	use_fakes(FAKE_NVML, "gpu.0.processes = 10:a:1GiB;11:b:2GiB\ngpu.0.process_sm_util = 10:40;11:7,10:5\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	gv_nvml_device_snapshot(0, GV_NVML_PROCESSES, &d);
	assert_int_equal(d.nprocs, 2);
	assert_int_equal(d.proc_util_st, GV_V_OK);
	assert_int_equal(d.procs[0].sm_util, 40);
	assert_int_equal(d.procs[1].sm_util, 7);
	gv_nvml_device_snapshot(0, GV_NVML_PROCESSES, &d);
	assert_int_equal(d.procs[0].sm_util, 5);
	assert_int_equal(d.procs[1].sm_util, 0);
	gv_nvml_unload();

	/* a driver without the GPM symbols */
	use_fakes(FAKE_NVML_BASIC, "gpu.0.gpm = 1\ngpu.0.processes = 10:a:1GiB\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_nvml_device_snapshot(0, GV_NVML_PROCESSES, &d);
	assert_int_equal(d.nprocs, 0); /* the basic library has no process calls either */
	assert_null(gv_gpm_open(0, &sup, &rc));
	assert_int_equal(sup, GV_GPM_NO_SYMBOLS);
	assert_int_equal(rc, NVML_ERROR_FUNCTION_NOT_FOUND);
}

static void test_hang(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "hang.nvmlDeviceGetFanSpeed = 120\ngpu.0.fan = 30\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	double t0 = now_seconds();
	gv_nvml_device_snapshot(0, GV_NVML_DYNAMIC, &d);
	assert_true(now_seconds() - t0 >= 0.1);
	assert_int_equal(d.fan_percent.v, 30);
}

static void test_fabric_plain_call(void **s)
{
	(void)s;
	/* a driver without nvmlDeviceGetGpuFabricInfoV: the plain call answers */
	use_fakes(FAKE_NVML, "gpu.0.fabric_state = completed\ngpu.0.fabric_status = 27\nfabric_info_v = 0\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	gv_nvml_device d;
	gv_nvml_device_clear(&d);
	gv_nvml_device_snapshot(0, GV_NVML_MODES, &d);
	assert_true(GV_OK(d.fabric_state));
	assert_int_equal(d.fabric_state.v, NVML_GPU_FABRIC_STATE_COMPLETED);
	assert_int_equal(d.fabric_status.v, NVML_ERROR_NOT_READY);
	assert_string_equal(gv_nvml_fabric_state_name(d.fabric_state.v), "completed");
}

static void test_xid_events(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\ngpu.1.xid = 79,48\nxid_wait_max_ms = 10\n");
	assert_int_equal(gv_nvml_init(), NVML_SUCCESS);
	nvmlReturn_t rc;
	gv_nvml_events *ev = gv_nvml_events_open(&rc);
	assert_non_null(ev);
	gv_nvml_xid x;
	assert_int_equal(gv_nvml_events_wait(ev, 1000, &x), NVML_SUCCESS);
	assert_int_equal(x.gpu_index, 1);
	assert_int_equal(x.xid, 79);
	assert_int_equal(gv_nvml_events_wait(ev, 1000, &x), NVML_SUCCESS);
	assert_int_equal(x.xid, 48);
	assert_int_equal(gv_nvml_events_wait(ev, 1000, &x), NVML_ERROR_TIMEOUT);
	gv_nvml_events_close(ev);
}

static void test_root_lookup(void **s)
{
	(void)s;
	char dir[4096];
	test_tmp_path(dir, sizeof(dir), "gpuvet-test-root-XXXXXX");
	assert_non_null(mkdtemp(dir));
	use_fakes(NULL, "device_count = 3\n");
	unsetenv("GPUVET_NVML_LIB");
	sysroot_set(dir);
	/* a root tree without the library: absent, never this machine's driver */
	assert_false(gv_nvml_load());
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	assert_non_null(strstr(st.error, "root tree"));

	char *libdir = xasprintf("%s/usr/lib64", dir);
	char *usr = xasprintf("%s/usr", dir);
	mkdir(usr, 0755);
	mkdir(libdir, 0755);
	char *link = xasprintf("%s/libnvidia-ml.so.1", libdir);
	/* a copy: a link to the host's file would resolve inside the root (--root is a jail) */
	char *cp = xasprintf("cp '%s' '%s'", FAKE_NVML, link);
	assert_int_equal(system(cp), 0);
	free(cp);
	gv_nvml_unload();
	assert_true(gv_nvml_load());
	unsigned n = 0;
	assert_int_equal(gv_nvml_device_count(&n), NVML_SUCCESS);
	assert_int_equal(n, 3);
	gv_nvml_unload();
	sysroot_set(NULL);
	unlink(link);
	rmdir(libdir);
	rmdir(usr);
	rmdir(dir);
	free(link);
	free(libdir);
	free(usr);
}

static void test_cuda_fake(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "device_count = 2\n"
			     "gpu.0.name = NVIDIA H200\n"
			     "gpu.1.name = NVIDIA L40S\n"
			     "gpu.1.cc = 8.9\n"
			     "gpu.1.pci_bus_id = 00000000:9A:00.0\n"
			     "cuda.order = 1,0\n"
			     "cuda.peer.0.1 = 0\n");
	const gv_cuda_api *cu = gv_cuda_api_get();
	assert_non_null(cu);
	assert_non_null(cu->cuMemAlloc);
	assert_int_equal(gv_cuda_init(), CUDA_SUCCESS);
	gv_cuda_status st;
	gv_cuda_status_get(&st);
	assert_true(st.init_called);
	assert_true(st.init_seconds >= 0);
	int v = 0, n = 0;
	assert_int_equal(cu->cuDriverGetVersion(&v), CUDA_SUCCESS);
	assert_int_equal(v, 13000);
	assert_int_equal(cu->cuDeviceGetCount(&n), CUDA_SUCCESS);
	assert_int_equal(n, 2);
	char name[128], bus[32];
	assert_int_equal(cu->cuDeviceGetName(name, sizeof(name), 0), CUDA_SUCCESS);
	assert_string_equal(name, "NVIDIA L40S"); /* CUDA order 1,0 */
	assert_int_equal(cu->cuDeviceGetPCIBusId(bus, sizeof(bus), 0), CUDA_SUCCESS);
	assert_string_equal(bus, "0000:9a:00.0");
	int major = 0;
	assert_int_equal(cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0), CUDA_SUCCESS);
	assert_int_equal(major, 8);
	int can = -1;
	assert_int_equal(cu->cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
	assert_int_equal(can, 0);
	assert_int_equal(cu->cuDeviceCanAccessPeer(&can, 1, 0), CUDA_SUCCESS);
	assert_int_equal(can, 1);

	/* memory on the fake works on host memory */
	CUcontext ctx;
	assert_int_equal(cu->cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	assert_int_equal(cu->cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CUdeviceptr p = 0;
	assert_int_equal(cu->cuMemAlloc(&p, 4096), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemsetD32(p, 0x01020304u, 1024), CUDA_SUCCESS);
	unsigned host[4];
	assert_int_equal(cu->cuMemcpyDtoH(host, p, sizeof(host)), CUDA_SUCCESS);
	assert_int_equal(host[3], 0x01020304u);
	assert_int_equal(cu->cuMemFree(p), CUDA_SUCCESS);
	assert_int_equal(cu->cuMemAlloc(&p, 1ULL << 40), CUDA_ERROR_OUT_OF_MEMORY);
}

static void test_cuda_errors(void **s)
{
	(void)s;
	use_fakes(FAKE_NVML, "cuda.init = 999\n");
	assert_int_equal(gv_cuda_init(), CUDA_ERROR_UNKNOWN);
	assert_string_equal(gv_cuda_result_name(999), "CUDA_ERROR_UNKNOWN");
	assert_non_null(strstr(gv_cuda_result_cause(999), "nvidia_uvm"));

	use_fakes(FAKE_NVML, "device_count = 0\n");
	assert_int_equal(gv_cuda_init(), CUDA_ERROR_NO_DEVICE);

	use_fakes(FAKE_NVML, "error.cuMemAlloc = 100\n");
	const gv_cuda_api *cu = gv_cuda_api_get();
	assert_int_equal(gv_cuda_init(), CUDA_SUCCESS);
	CUdeviceptr p;
	assert_int_equal(cu->cuMemAlloc(&p, 16), CUDA_ERROR_NO_DEVICE);

	/* no library: names and causes still known */
	setenv("GPUVET_CUDA_LIB", "/nonexistent/libcuda.so.1", 1);
	gv_cuda_unload();
	assert_null(gv_cuda_api_get());
	assert_int_equal(gv_cuda_init(), CUDA_ERROR_SHARED_OBJECT_INIT_FAILED);
	assert_string_equal(gv_cuda_result_name(34), "CUDA_ERROR_STUB_LIBRARY");
	assert_string_equal(gv_cuda_result_name(35), "CUDA_ERROR_INSUFFICIENT_DRIVER");
	assert_string_equal(gv_cuda_result_name(12345), "CUDA_ERROR_12345");
	assert_non_null(gv_cuda_result_cause(803));
	assert_string_equal(gv_cuda_result_text(100), "no CUDA-capable device is detected");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_library_missing, teardown),
		cmocka_unit_test_teardown(test_library_without_basic_symbols, teardown),
		cmocka_unit_test_teardown(test_full_fake, teardown),
		cmocka_unit_test_teardown(test_basic_fake_old_driver, teardown),
		cmocka_unit_test_teardown(test_init_error, teardown),
		cmocka_unit_test_teardown(test_fake_reference_counting, teardown),
		cmocka_unit_test_teardown(test_init_in_forked_child, teardown),
		cmocka_unit_test_teardown(test_failing_calls, teardown),
		cmocka_unit_test_teardown(test_sampler_failure_after_n, teardown),
		cmocka_unit_test_teardown(test_hang, teardown),
		cmocka_unit_test_teardown(test_gpm, teardown),
		cmocka_unit_test_teardown(test_fabric_plain_call, teardown),
		cmocka_unit_test_teardown(test_xid_events, teardown),
		cmocka_unit_test_teardown(test_root_lookup, teardown),
		cmocka_unit_test_teardown(test_cuda_fake, teardown),
		cmocka_unit_test_teardown(test_cuda_errors, teardown),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
