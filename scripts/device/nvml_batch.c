/* Whether one nvmlDeviceGetFieldValues batch costs less than the calls check --fast makes one by
 * one for the same values (issue 24 item 7). In a fresh process: nvmlInit, the handle and the
 * utilization (the first query after the handle pays a first touch of about 2 ms whichever it is),
 * then either the calls (ECC mode, the four ECC totals, retired pages and their pending state,
 * remapped rows, PCIe replays, power, enforced limit) or one batch of the fields that carry the same
 * values. Prints the time and every value, so the two can be compared. Built on the GPU machine
 * against its nvml.h:   nvml_batch calls | nvml_batch batch */
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

static const struct {
	const char *name;
	int id;
} fields[] = {
#define F(x) {#x, x},
#ifdef NVML_FI_DEV_ECC_CURRENT
	F(NVML_FI_DEV_ECC_CURRENT) F(NVML_FI_DEV_ECC_PENDING)
#endif
#ifdef NVML_FI_DEV_ECC_SBE_VOL_TOTAL
	F(NVML_FI_DEV_ECC_SBE_VOL_TOTAL) F(NVML_FI_DEV_ECC_DBE_VOL_TOTAL) F(NVML_FI_DEV_ECC_SBE_AGG_TOTAL)
	F(NVML_FI_DEV_ECC_DBE_AGG_TOTAL)
#endif
#ifdef NVML_FI_DEV_RETIRED_SBE
	F(NVML_FI_DEV_RETIRED_SBE) F(NVML_FI_DEV_RETIRED_DBE) F(NVML_FI_DEV_RETIRED_PENDING)
#endif
#ifdef NVML_FI_DEV_REMAPPED_COR
	F(NVML_FI_DEV_REMAPPED_COR) F(NVML_FI_DEV_REMAPPED_UNC) F(NVML_FI_DEV_REMAPPED_PENDING)
	F(NVML_FI_DEV_REMAPPED_FAILURE)
#endif
#ifdef NVML_FI_DEV_PCIE_REPLAY_COUNTER
	F(NVML_FI_DEV_PCIE_REPLAY_COUNTER)
#endif
#ifdef NVML_FI_DEV_POWER_INSTANT
	F(NVML_FI_DEV_POWER_INSTANT)
#endif
#ifdef NVML_FI_DEV_POWER_AVERAGE
	F(NVML_FI_DEV_POWER_AVERAGE)
#endif
#ifdef NVML_FI_DEV_POWER_CURRENT_LIMIT
	F(NVML_FI_DEV_POWER_CURRENT_LIMIT)
#endif
#ifdef NVML_FI_DEV_MIG_MODE
	F(NVML_FI_DEV_MIG_MODE)
#endif
#undef F
};
#define NF (sizeof(fields) / sizeof(fields[0]))

static void print_value(const nvmlFieldValue_t *v)
{
	switch (v->valueType) {
	case NVML_VALUE_TYPE_DOUBLE: printf("%g", v->value.dVal); break;
	case NVML_VALUE_TYPE_UNSIGNED_INT: printf("%u", v->value.uiVal); break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG: printf("%lu", v->value.ulVal); break;
	case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: printf("%llu", v->value.ullVal); break;
	case NVML_VALUE_TYPE_SIGNED_LONG_LONG: printf("%lld", v->value.sllVal); break;
	default: printf("type%d:%llu", (int)v->valueType, v->value.ullVal);
	}
}

int main(int argc, char **argv)
{
	if (argc < 2 || nvmlInit_v2() != NVML_SUCCESS)
		return 2;
	nvmlDevice_t d;
	double t0 = now();
	if (nvmlDeviceGetHandleByIndex_v2(0, &d) != NVML_SUCCESS)
		return 3;
	double t1 = now();
	nvmlUtilization_t u;
	nvmlDeviceGetUtilizationRates(d, &u);
	double t2 = now();
	printf("%s: handle %.2f ms, utilization %.2f ms", argv[1], (t1 - t0) * 1e3, (t2 - t1) * 1e3);
	if (!strcmp(argv[1], "batch")) {
		nvmlFieldValue_t fv[NF];
		memset(fv, 0, sizeof(fv));
		for (size_t i = 0; i < NF; i++)
			fv[i].fieldId = (unsigned)fields[i].id;
		nvmlReturn_t rc = nvmlDeviceGetFieldValues(d, (int)NF, fv);
		printf(", batch of %zu rc=%d %.2f ms\n", NF, rc, (now() - t2) * 1e3);
		for (size_t i = 0; i < NF; i++) {
			printf("  %s (%d) rc=%d ", fields[i].name, fields[i].id, fv[i].nvmlReturn);
			print_value(&fv[i]);
			printf("\n");
		}
		return 0;
	}
	nvmlEnableState_t cur = 0, pend = 0;
	nvmlReturn_t r_mode = nvmlDeviceGetEccMode(d, &cur, &pend);
	unsigned long long e[4] = {0};
	nvmlReturn_t r_e = nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &e[0]);
	nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &e[1]);
	nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &e[2]);
	nvmlDeviceGetTotalEccErrors(d, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &e[3]);
	unsigned rs = 0, rd = 0;
	nvmlReturn_t r_rs = nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &rs, NULL);
	nvmlDeviceGetRetiredPages(d, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &rd, NULL);
	nvmlEnableState_t rp = 0;
	nvmlReturn_t r_rp = nvmlDeviceGetRetiredPagesPendingStatus(d, &rp);
	unsigned a = 0, b = 0, c = 0, f = 0;
	nvmlReturn_t r_rr = nvmlDeviceGetRemappedRows(d, &a, &b, &c, &f);
	unsigned replay = 0, power = 0, limit = 0;
	nvmlReturn_t r_re = nvmlDeviceGetPcieReplayCounter(d, &replay);
	nvmlReturn_t r_p = nvmlDeviceGetPowerUsage(d, &power);
	nvmlReturn_t r_l = nvmlDeviceGetEnforcedPowerLimit(d, &limit);
	printf(", 13 calls %.2f ms\n", (now() - t2) * 1e3);
	printf("  ecc mode rc=%d %d/%d; totals rc=%d corr vol %llu unc vol %llu corr agg %llu unc agg %llu\n", r_mode, cur, pend,
	       r_e, e[0], e[1], e[2], e[3]);
	printf("  retired rc=%d sbe %u dbe %u, pending rc=%d %d; remapped rc=%d cor %u unc %u pending %u failure %u\n", r_rs, rs,
	       rd, r_rp, rp, r_rr, a, b, c, f);
	printf("  replay rc=%d %u; power rc=%d %u mW; limit rc=%d %u mW\n", r_re, replay, r_p, power, r_l, limit);
	return 0;
}
