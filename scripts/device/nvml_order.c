/* Which of check --fast's slow NVML calls cost in themselves and which pay for a first touch
 * (scripts/device/fastprof.sh, issue 24 item 7): a fresh process per order, after nvmlInit and the
 * first handle, times the same calls in the order given on the command line, and the same values
 * as one nvmlDeviceGetFieldValues batch. Built on the GPU machine against its nvml.h.
 *   nvml_order power,ecc_mode,ecc_total,util,mig   |   nvml_order batch */
#include <dlfcn.h>
#include <nvml.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (nvmlInit_v2() != NVML_SUCCESS)
		return 3;
	nvmlDevice_t d;
	double t0 = now();
	if (nvmlDeviceGetHandleByIndex_v2(0, &d) != NVML_SUCCESS)
		return 4;
	printf("handle %.3f ms\n", (now() - t0) * 1e3);
	if (strcmp(argv[1], "batch") == 0) {
		nvmlFieldValue_t fv[8];
		memset(fv, 0, sizeof(fv));
		int ids[] = {NVML_FI_DEV_ECC_CURRENT, NVML_FI_DEV_ECC_PENDING, NVML_FI_DEV_ECC_SBE_VOL_TOTAL,
			     NVML_FI_DEV_ECC_DBE_VOL_TOTAL, NVML_FI_DEV_ECC_SBE_AGG_TOTAL, NVML_FI_DEV_ECC_DBE_AGG_TOTAL,
			     NVML_FI_DEV_POWER_INSTANT, NVML_FI_DEV_MEMORY_TEMP};
		for (int i = 0; i < 8; i++)
			fv[i].fieldId = (unsigned)ids[i];
		double t = now();
		nvmlReturn_t rc = nvmlDeviceGetFieldValues(d, 8, fv);
		printf("batch(8) rc=%d %.3f ms:", rc, (now() - t) * 1e3);
		for (int i = 0; i < 8; i++)
			printf(" %d:%d=%llu", ids[i], fv[i].nvmlReturn, fv[i].value.ullVal);
		printf("\n");
		unsigned lim = 0;
		t = now();
		rc = nvmlDeviceGetEnforcedPowerLimit(d, &lim);
		printf("power limit after the batch rc=%d %.3f ms (%u mW)\n", rc, (now() - t) * 1e3, lim);
		return 0;
	}
	char list[256];
	snprintf(list, sizeof(list), "%s", argv[1]);
	for (char *k = strtok(list, ","); k; k = strtok(NULL, ",")) {
		double t = now();
		nvmlReturn_t rc = NVML_SUCCESS;
		if (!strcmp(k, "power")) {
			unsigned v;
			rc = nvmlDeviceGetEnforcedPowerLimit(d, &v);
		} else if (!strcmp(k, "usage")) {
			unsigned v;
			rc = nvmlDeviceGetPowerUsage(d, &v);
		} else if (!strcmp(k, "plimit")) {
			unsigned v;
			rc = nvmlDeviceGetPowerManagementLimit(d, &v);
		} else if (!strcmp(k, "ecc_mode")) {
			nvmlEnableState_t a, b;
			rc = nvmlDeviceGetEccMode(d, &a, &b);
		} else if (!strcmp(k, "ecc_total")) {
			unsigned long long v;
			rc = nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &v);
		} else if (!strcmp(k, "util")) {
			nvmlUtilization_t u;
			rc = nvmlDeviceGetUtilizationRates(d, &u);
		} else if (!strcmp(k, "mig")) {
			unsigned a, b;
			rc = nvmlDeviceGetMigMode(d, &a, &b);
		} else if (!strcmp(k, "temp")) {
			unsigned v;
			rc = nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &v);
		} else if (!strcmp(k, "mem")) {
			nvmlMemory_t m;
			rc = nvmlDeviceGetMemoryInfo(d, &m);
		} else {
			printf("%s: unknown\n", k);
			continue;
		}
		printf("%s rc=%d %.3f ms\n", k, rc, (now() - t) * 1e3);
	}
	return 0;
}
