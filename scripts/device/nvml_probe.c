/*
 * GPU-machine check of the NVIDIA wrappers (src/nvidia), built there by scripts/device/nvidia.sh
 * with gcc from the sources (no toolkit headers needed):
 *
 *   nvml_probe            every snapshot field of every GPU with its state, as "key state value"
 *                         lines; the cost of nvmlInit, of a full snapshot and of the sampler's
 *                         per-second GV_NVML_DYNAMIC snapshot; Xid event registration; cuInit
 *                         through gv_cuda_init, devices and the peer matrix.
 */
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/cuda.h"
#include "nvidia/nvml.h"

static const char *st_name(gv_vstate s)
{
	switch (s) {
	case GV_V_OK: return "ok";
	case GV_V_UNSUPPORTED: return "unsupported";
	case GV_V_ERROR: return "error";
	default: return "unset";
	}
}

static void pu(int g, const char *k, const gv_nv_u64 *v)
{
	printf("gpu.%d.%s %s %llu", g, k, st_name(v->st), v->v);
	if (v->st == GV_V_ERROR || v->st == GV_V_UNSUPPORTED)
		printf(" (%s: %s)", gv_nvml_return_name(v->rc), gv_nvml_error_string(v->rc));
	putchar('\n');
}

static void ps(int g, const char *k, const gv_nv_str *v)
{
	printf("gpu.%d.%s %s %s", g, k, st_name(v->st), v->v);
	if (v->st == GV_V_ERROR || v->st == GV_V_UNSUPPORTED)
		printf(" (%s)", gv_nvml_return_name(v->rc));
	putchar('\n');
}

int main(void)
{
	double t0 = now_seconds();
	nvmlReturn_t rc = gv_nvml_init();
	double t_init = now_seconds() - t0;
	gv_nvml_status st;
	gv_nvml_status_get(&st);
	printf("nvml.library %s\nnvml.loaded %d\nnvml.error %s\nnvml.init %d %s\n", st.path, st.loaded, st.error, rc,
	       gv_nvml_return_name(rc));
	printf("timing.nvml_load_and_init_s %.6f\n", t_init);
	if (rc != NVML_SUCCESS)
		return 1;
	gv_nvml_system sys;
	gv_nvml_system_info(&sys);
	printf("nvml.driver_version %s\nnvml.nvml_version %s\nnvml.cuda_driver_version %llu\n", sys.driver_version.v,
	       sys.nvml_version.v, sys.cuda_driver_version.v);
	unsigned n = 0;
	gv_nvml_device_count(&n);
	printf("nvml.device_count %u\n", n);
	const char *syms[] = {"nvmlInit_v2", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo_v2",
			      "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetCurrentClocksEventReasons",
			      "nvmlDeviceGetGpuFabricInfo", "nvmlEventSetWait_v2", "nvmlSystemGetCudaDriverVersion_v2"};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		printf("nvml.has.%s %d\n", syms[i], gv_nvml_has_symbol(syms[i]));
	for (unsigned i = 0; i < n; i++) {
		gv_nvml_device d;
		gv_nvml_device_clear(&d);
		t0 = now_seconds();
		gv_nvml_device_snapshot(i, GV_NVML_ALL, &d);
		printf("timing.gpu.%u.snapshot_all_s %.6f\n", i, now_seconds() - t0);
		int g = (int)i;
		ps(g, "name", &d.name);
		ps(g, "uuid", &d.uuid);
		ps(g, "pci_bus_id", &d.pci_bus_id);
		pu(g, "pci_device_id", &d.pci_device_id);
		pu(g, "minor_number", &d.minor_number);
		pu(g, "cc_major", &d.cc_major);
		pu(g, "cc_minor", &d.cc_minor);
		pu(g, "memory_total", &d.memory_total);
		pu(g, "memory_reserved", &d.memory_reserved);
		pu(g, "memory_used", &d.memory_used);
		pu(g, "pcie_gen", &d.pcie_gen);
		pu(g, "pcie_gen_max", &d.pcie_gen_max);
		pu(g, "pcie_width", &d.pcie_width);
		pu(g, "pcie_width_max", &d.pcie_width_max);
		pu(g, "pcie_tx_kbps", &d.pcie_tx_kbps);
		pu(g, "pcie_rx_kbps", &d.pcie_rx_kbps);
		pu(g, "temp_slowdown_c", &d.temp_slowdown_c);
		pu(g, "temp_shutdown_c", &d.temp_shutdown_c);
		pu(g, "temp_gpu_max_c", &d.temp_gpu_max_c);
		pu(g, "temperature_c", &d.temperature_c);
		pu(g, "max_sm_clock_mhz", &d.max_sm_clock_mhz);
		pu(g, "max_mem_clock_mhz", &d.max_mem_clock_mhz);
		pu(g, "sm_clock_mhz", &d.sm_clock_mhz);
		pu(g, "mem_clock_mhz", &d.mem_clock_mhz);
		pu(g, "power_limit_mw", &d.power_limit_mw);
		pu(g, "power_mw", &d.power_mw);
		pu(g, "energy_mj", &d.energy_mj);
		pu(g, "util_gpu", &d.util_gpu);
		pu(g, "util_memory", &d.util_memory);
		pu(g, "clock_event_reasons", &d.clock_event_reasons);
		char text[256];
		printf("gpu.%d.clock_event_reasons_text %s\n", g,
		       gv_nvml_clock_reasons_text(d.clock_event_reasons.v, text, sizeof(text)));
		pu(g, "fan_percent", &d.fan_percent);
		pu(g, "persistence", &d.persistence);
		pu(g, "compute_mode", &d.compute_mode);
		pu(g, "mig_mode", &d.mig_mode);
		printf("gpu.%d.mig_count %u\n", g, d.mig_count);
		pu(g, "ecc_mode", &d.ecc_mode);
		pu(g, "ecc_corrected_volatile", &d.ecc_corrected_volatile);
		pu(g, "ecc_uncorrected_volatile", &d.ecc_uncorrected_volatile);
		pu(g, "ecc_uncorrected_aggregate", &d.ecc_uncorrected_aggregate);
		pu(g, "retired_sbe", &d.retired_sbe);
		pu(g, "retired_pending", &d.retired_pending);
		pu(g, "remapped_correctable", &d.remapped_correctable);
		pu(g, "remapped_uncorrectable", &d.remapped_uncorrectable);
		pu(g, "remap_pending", &d.remap_pending);
		pu(g, "remap_failure", &d.remap_failure);
		pu(g, "fabric_state", &d.fabric_state);
		pu(g, "fabric_status", &d.fabric_status);
		printf("gpu.%d.procs %s %u\n", g, st_name(d.procs_st), d.nprocs);
		for (unsigned k = 0; k < d.nprocs; k++)
			printf("gpu.%d.proc.%u %u %s %llu %s\n", g, k, d.procs[k].pid, d.procs[k].name,
			       d.procs[k].used_bytes, d.procs[k].graphics ? "graphics" : "compute");
		/* the sampler's tick: what changes, every second */
		const int reps = 50;
		t0 = now_seconds();
		for (int r = 0; r < reps; r++)
			gv_nvml_device_snapshot(i, GV_NVML_DYNAMIC, &d);
		printf("timing.gpu.%u.snapshot_dynamic_s %.6f\n", i, (now_seconds() - t0) / reps);
		t0 = now_seconds();
		for (int r = 0; r < reps; r++)
			gv_nvml_device_snapshot(i, GV_NVML_DYNAMIC | GV_NVML_HEALTH | GV_NVML_PROCESSES, &d);
		printf("timing.gpu.%u.snapshot_dynamic_health_procs_s %.6f\n", i, (now_seconds() - t0) / reps);
	}
	nvmlReturn_t erc;
	t0 = now_seconds();
	gv_nvml_events *ev = gv_nvml_events_open(&erc);
	printf("events.open %d %s %.6f\n", erc, gv_nvml_return_name(erc), now_seconds() - t0);
	if (ev) {
		gv_nvml_xid x;
		nvmlReturn_t wrc = gv_nvml_events_wait(ev, 200, &x);
		printf("events.wait %d %s xid=%llu gpu=%d\n", wrc, gv_nvml_return_name(wrc), x.xid, x.gpu_index);
		gv_nvml_events_close(ev);
	}

	t0 = now_seconds();
	CUresult crc = gv_cuda_init();
	printf("cuda.init %d %s %.6f\n", crc, gv_cuda_result_name(crc), now_seconds() - t0);
	const gv_cuda_api *cu = gv_cuda_api_get();
	if (cu && crc == CUDA_SUCCESS) {
		int v = 0, cnt = 0;
		cu->cuDriverGetVersion(&v);
		cu->cuDeviceGetCount(&cnt);
		printf("cuda.driver_version %d\ncuda.device_count %d\n", v, cnt);
		for (int i = 0; i < cnt; i++) {
			char name[128] = "", bus[32] = "";
			int major = 0, minor = 0, sms = 0;
			cu->cuDeviceGetName(name, sizeof(name), i);
			cu->cuDeviceGetPCIBusId(bus, sizeof(bus), i);
			cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, i);
			cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, i);
			cu->cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, i);
			printf("cuda.dev.%d %s %s cc=%d.%d sms=%d\n", i, name, bus, major, minor, sms);
			for (int j = 0; j < cnt; j++)
				if (i != j) {
					int can = -1;
					CUresult prc = cu->cuDeviceCanAccessPeer(&can, i, j);
					printf("cuda.peer.%d.%d %d rc=%d\n", i, j, can, prc);
				}
		}
		/* every symbol of the table: which ones this driver exports */
		const void *const *p = (const void *const *)cu;
		size_t nptr = sizeof(*cu) / sizeof(void *), have = 0;
		for (size_t i = 0; i < nptr; i++)
			have += p[i] != NULL;
		printf("cuda.table %zu of %zu symbols\n", have, nptr);
	}
	return 0;
}
