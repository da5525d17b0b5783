/* What each NVML call check --fast makes costs, and whether the cost moves with the order (issue
 * 24, item 7). A fresh process per run: nvmlInit_v2, the handle, then the operations named on the
 * command line, in that order, each timed alone; prints "OP MS" per operation and the value or
 * the error. Operations: util temp limit power reasons smclk memclk fan mig pciegen pciewidth
 * eccmode persist compute name mem, f:ID (one field value), b:ID,ID,... (one batch), and
 * health (the 14 fields of check --fast's batch). Built on the GPU machine against its nvml.h:
 *   nvml_cost health limit util temp ...          (scripts/device/nvmlcost.sh runs the orders) */
#include <nvml.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static const unsigned health[] = {NVML_FI_DEV_ECC_CURRENT,       NVML_FI_DEV_ECC_PENDING,
				  NVML_FI_DEV_ECC_SBE_VOL_TOTAL, NVML_FI_DEV_ECC_SBE_AGG_TOTAL,
				  NVML_FI_DEV_ECC_DBE_VOL_TOTAL, NVML_FI_DEV_ECC_DBE_AGG_TOTAL,
				  NVML_FI_DEV_RETIRED_SBE,       NVML_FI_DEV_RETIRED_DBE,
				  NVML_FI_DEV_RETIRED_PENDING,   NVML_FI_DEV_REMAPPED_COR,
				  NVML_FI_DEV_REMAPPED_UNC,      NVML_FI_DEV_REMAPPED_PENDING,
				  NVML_FI_DEV_REMAPPED_FAILURE,  NVML_FI_DEV_PCIE_REPLAY_COUNTER};

static nvmlReturn_t batch(nvmlDevice_t d, const unsigned *ids, int n, char *out, size_t size)
{
	nvmlFieldValue_t fv[64];
	memset(fv, 0, sizeof(fv));
	for (int i = 0; i < n; i++)
		fv[i].fieldId = ids[i];
	nvmlReturn_t rc = nvmlDeviceGetFieldValues(d, n, fv);
	size_t len = 0;
	for (int i = 0; i < n && len < size; i++)
		len += (size_t)snprintf(out + len, size - len, "%u=%s%llu ", ids[i], fv[i].nvmlReturn ? "err" : "",
					fv[i].nvmlReturn ? (unsigned long long)fv[i].nvmlReturn : fv[i].value.ullVal);
	return rc;
}

int main(int argc, char **argv)
{
	double t = now();
	if (nvmlInit_v2() != NVML_SUCCESS)
		return 2;
	printf("init %.3f\n", (now() - t) * 1e3);
	nvmlDevice_t d;
	t = now();
	if (nvmlDeviceGetHandleByIndex_v2(0, &d) != NVML_SUCCESS)
		return 3;
	printf("handle %.3f\n", (now() - t) * 1e3);
	for (int a = 1; a < argc; a++) {
		const char *op = argv[a];
		char val[1024] = "";
		unsigned u = 0;
		nvmlReturn_t rc = NVML_SUCCESS;
		t = now();
		if (!strcmp(op, "util")) {
			nvmlUtilization_t x;
			rc = nvmlDeviceGetUtilizationRates(d, &x);
			u = x.gpu;
		} else if (!strcmp(op, "temp")) {
			rc = nvmlDeviceGetTemperature(d, NVML_TEMPERATURE_GPU, &u);
		} else if (!strcmp(op, "limit")) {
			rc = nvmlDeviceGetEnforcedPowerLimit(d, &u);
		} else if (!strcmp(op, "power")) {
			rc = nvmlDeviceGetPowerUsage(d, &u);
		} else if (!strcmp(op, "reasons")) {
			unsigned long long r = 0;
			rc = nvmlDeviceGetCurrentClocksEventReasons(d, &r);
			u = (unsigned)r;
		} else if (!strcmp(op, "smclk")) {
			rc = nvmlDeviceGetClockInfo(d, NVML_CLOCK_SM, &u);
		} else if (!strcmp(op, "memclk")) {
			rc = nvmlDeviceGetClockInfo(d, NVML_CLOCK_MEM, &u);
		} else if (!strcmp(op, "fan")) {
			rc = nvmlDeviceGetFanSpeed(d, &u);
		} else if (!strcmp(op, "mig")) {
			unsigned p = 0;
			rc = nvmlDeviceGetMigMode(d, &u, &p);
		} else if (!strcmp(op, "pciegen")) {
			rc = nvmlDeviceGetCurrPcieLinkGeneration(d, &u);
		} else if (!strcmp(op, "pciewidth")) {
			rc = nvmlDeviceGetCurrPcieLinkWidth(d, &u);
		} else if (!strcmp(op, "eccmode")) {
			nvmlEnableState_t c, p;
			rc = nvmlDeviceGetEccMode(d, &c, &p);
			u = c;
		} else if (!strcmp(op, "persist")) {
			nvmlEnableState_t s;
			rc = nvmlDeviceGetPersistenceMode(d, &s);
			u = s;
		} else if (!strcmp(op, "compute")) {
			nvmlComputeMode_t m;
			rc = nvmlDeviceGetComputeMode(d, &m);
			u = m;
		} else if (!strcmp(op, "name")) {
			rc = nvmlDeviceGetName(d, val, sizeof(val));
		} else if (!strcmp(op, "mem")) {
			nvmlMemory_t m;
			rc = nvmlDeviceGetMemoryInfo(d, &m);
			u = (unsigned)(m.used >> 20);
		} else if (!strcmp(op, "health")) {
			rc = batch(d, health, (int)(sizeof(health) / sizeof(health[0])), val, sizeof(val));
		} else if (!strncmp(op, "f:", 2) || !strncmp(op, "b:", 2)) {
			unsigned ids[64];
			int n = 0;
			for (char *p = (char *)op + 2; *p && n < 64;) {
				ids[n++] = (unsigned)strtoul(p, &p, 10);
				if (*p == ',')
					p++;
				else if (*p)
					break;
			}
			rc = batch(d, ids, n, val, sizeof(val));
		} else {
			fprintf(stderr, "unknown operation %s\n", op);
			return 4;
		}
		double ms = (now() - t) * 1e3;
		printf("%s %.3f rc=%d %u %s\n", op, ms, rc, u, val);
	}
	return 0;
}
