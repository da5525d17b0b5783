/* Whether NVML's queries of one GPU run side by side in separate processes (issue 24 item 7:
 * check --fast against nvidia-smi's query). nvml_order.c showed that one process pays about 1 ms
 * per kind of value after nvmlInit and the first handle, and that threads of one process
 * serialize. Here N forked processes each make nvmlInit, the handle and every Nth kind of the
 * list: if the driver lets them run at once, the wall time falls toward init + handle + 1/N of
 * the queries. Also nvmlInitWithFlags(NO_ATTACH) against nvmlInit_v2. Built on the GPU machine
 * against its nvml.h:
 *   nvml_par serial | nvml_par split N | nvml_par noattach
 * Prints one line per process (init, handle, queries in ms) and the wall time. */
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The kinds check --fast asks beyond the handle (src/nvidia/nvml.c, GV_NVML_FAST). */
static int query(int k, nvmlDevice_t d)
{
	unsigned u = 0;
	unsigned long long ull = 0;
	char s[96];
	switch (k) {
	case 0: return nvmlDeviceGetName(d, s, sizeof s);
	case 1: return nvmlDeviceGetUUID(d, s, sizeof s);
	case 2: { nvmlPciInfo_t p; return nvmlDeviceGetPciInfo_v3(d, &p); }
	case 3: { nvmlMemory_t m; return nvmlDeviceGetMemoryInfo(d, &m); }
	case 4: { nvmlUtilization_t x; return nvmlDeviceGetUtilizationRates(d, &x); }
	case 5: return nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u);
	case 6: return nvmlDeviceGetPowerUsage(d, &u);
	case 7: return nvmlDeviceGetEnforcedPowerLimit(d, &u);
	case 8: { nvmlEnableState_t a, b; return nvmlDeviceGetEccMode(d, &a, &b); }
	case 9: return nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &ull);
	case 10: { unsigned a, b; return nvmlDeviceGetMigMode(d, &a, &b); }
	case 11: { unsigned c = 0; return nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &c, NULL); }
	case 12: { unsigned a, b, c, e; return nvmlDeviceGetRemappedRows(d, &a, &b, &c, &e); }
	case 13: return nvmlDeviceGetPcieReplayCounter(d, &u);
	case 14: return nvmlDeviceGetCurrentClocksEventReasons(d, &ull);
	case 15: { unsigned c = 0; return nvmlDeviceGetComputeRunningProcesses_v3(d, &c, NULL); }
	case 16: { nvmlEnableState_t a; return nvmlDeviceGetPersistenceMode(d, &a); }
	case 17: { nvmlComputeMode_t m; return nvmlDeviceGetComputeMode(d, &m); }
	case 18: { int a, b; return nvmlDeviceGetCudaComputeCapability(d, &a, &b); }
	case 19: return nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &u);
	case 20: return nvmlDeviceGetCurrPcieLinkGeneration(d, &u);
	case 21: return nvmlDeviceGetCurrPcieLinkWidth(d, &u);
	case 22: return nvmlDeviceGetFanSpeed(d, &u);
	case 23: { nvmlPstates_t p; return nvmlDeviceGetPerformanceState(d, &p); }
	}
	return -1;
}
#define KINDS 24

/* nvmlInit, the handle, kinds first, first + step, ...; one line. */
static void run(int first, int step, int noattach, double t_start)
{
	double t0 = now();
	nvmlReturn_t rc = noattach ? nvmlInitWithFlags(NVML_INIT_FLAG_NO_ATTACH) : nvmlInit_v2();
	double t1 = now();
	if (rc != NVML_SUCCESS) {
		printf("init rc=%d\n", rc);
		return;
	}
	nvmlDevice_t d;
	rc = nvmlDeviceGetHandleByIndex_v2(0, &d);
	double t2 = now();
	if (rc != NVML_SUCCESS) {
		printf("handle rc=%d\n", rc);
		return;
	}
	char each[1024] = "";
	size_t n = 0;
	for (int k = first; k < KINDS; k += step) {
		double a = now();
		int r = query(k, d);
		n += (size_t)snprintf(each + n, sizeof each - n, " %d:%.2f%s", k, (now() - a) * 1e3, r ? "!" : "");
		if (n >= sizeof each)
			n = sizeof each - 1;
	}
	double t3 = now();
	nvmlShutdown();
	printf("proc %d: started +%.2f, init %.2f, handle %.2f, queries %.2f, done +%.2f ms;%s\n", first,
	       (t0 - t_start) * 1e3, (t1 - t0) * 1e3, (t2 - t1) * 1e3, (t3 - t2) * 1e3, (now() - t_start) * 1e3, each);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	double t = now();
	if (!strcmp(argv[1], "serial") || !strcmp(argv[1], "noattach")) {
		run(0, 1, !strcmp(argv[1], "noattach"), t);
	} else if (!strcmp(argv[1], "split") && argc > 2) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++)
			if (fork() == 0) {
				run(i, n, 0, t);
				_exit(0);
			}
		while (wait(NULL) > 0)
			;
	} else
		return 2;
	printf("wall %.2f ms\n", (now() - t) * 1e3);
	return 0;
}
