#include "kb/kb_peaks.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

/* A cell as a positive number; false for "", garbage, or <= 0. */
static bool cell_num(const csv_table *t, size_t row, const char *col, double *out)
{
	const char *s = csv_cell(t, row, col);
	char *end;
	if (!s || !*s)
		return false;
	double v = strtod(s, &end);
	while (*end == ' ')
		end++;
	if (*end || !isfinite(v) || v <= 0)
		return false;
	*out = v;
	return true;
}

static long find_gpu(const kb *k, const char *gpu_name)
{
	const csv_table *t = kb_table(k, "gpu_peaks");
	if (!t || !gpu_name)
		return -1;
	for (size_t r = 0; r < t->nrows; r++)
		if (strcasecmp(csv_cell(t, r, "gpu"), gpu_name) == 0)
			return (long)r;
	return -1;
}

static long find_arch(const kb *k, const char *cc)
{
	const csv_table *t = kb_table(k, "arch_rates");
	if (!t || !cc || !*cc)
		return -1;
	for (size_t r = 0; r < t->nrows; r++)
		if (strcmp(csv_cell(t, r, "sm_major_minor"), cc) == 0)
			return (long)r;
	return -1;
}

/* The arch_rates columns for a dtype, in order of preference (tensor cores first). */
static const char *const *arch_columns(const char *dtype)
{
	static const char *const fp64[] = {"fp64_tc_fma_per_clk_per_sm", "fp64_fma_per_clk_per_sm", NULL};
	static const char *const fp32[] = {"fp32_fma_per_clk_per_sm", NULL};
	static const char *const tf32[] = {"tf32_tc_fma_per_clk_per_sm", NULL};
	static const char *const half[] = {"fp16_bf16_tc_fp32acc_fma_per_clk_per_sm", NULL};
	static const char *const fp8[] = {"fp8_tc_fma_per_clk_per_sm", NULL};
	static const char *const none[] = {NULL};
	if (strcmp(dtype, "fp64") == 0)
		return fp64;
	if (strcmp(dtype, "fp32") == 0)
		return fp32;
	if (strcmp(dtype, "tf32") == 0)
		return tf32;
	if (strcmp(dtype, "fp16") == 0 || strcmp(dtype, "bf16") == 0)
		return half;
	if (strcmp(dtype, "fp8") == 0)
		return fp8;
	return none; /* int8: not in arch_rates */
}

static const char *peaks_column(const char *dtype)
{
	if (strcmp(dtype, "fp64") == 0)
		return "fp64_tc_tflops"; /* falls back to fp64_tflops below */
	if (strcmp(dtype, "fp32") == 0)
		return "fp32_tflops";
	if (strcmp(dtype, "tf32") == 0)
		return "tf32_tc_tflops";
	if (strcmp(dtype, "fp16") == 0 || strcmp(dtype, "bf16") == 0)
		return "fp16_bf16_tc_tflops";
	if (strcmp(dtype, "fp8") == 0)
		return "fp8_tflops";
	if (strcmp(dtype, "int8") == 0)
		return "int8_tops";
	return NULL;
}

bool kb_compute_peak(const kb *k, const char *gpu_name, const char *cc, int sms, double clock_mhz,
		     const char *dtype, kb_peak *out)
{
	memset(out, 0, sizeof(*out));
	if (!k || !dtype || !peaks_column(dtype))
		return false;
	const csv_table *gp = kb_table(k, "gpu_peaks");
	long grow = find_gpu(k, gpu_name);
	double boost = 0, listed_sms = 0;
	if (grow >= 0) {
		cell_num(gp, (size_t)grow, "boost_mhz", &boost);
		cell_num(gp, (size_t)grow, "sms", &listed_sms);
		if (!cc || !*cc)
			cc = csv_cell(gp, (size_t)grow, "cc");
	}
	if (sms <= 0)
		sms = (int)listed_sms;
	double clock = clock_mhz > 0 ? clock_mhz : boost;

	long arow = find_arch(k, cc);
	if (arow >= 0 && sms > 0 && clock > 0) {
		const csv_table *ar = kb_table(k, "arch_rates");
		for (const char *const *col = arch_columns(dtype); *col; col++) {
			double rate;
			if (!cell_num(ar, (size_t)arow, *col, &rate))
				continue;
			out->value = (double)sms * rate * 2 * clock * 1e6 / 1e12;
			out->clock_mhz = clock;
			snprintf(out->how, sizeof(out->how), "%d SMs x %g FMA/clk/SM x 2 x %.0f MHz (arch_rates %s)", sms,
				 rate, clock, csv_cell(ar, (size_t)arow, "arch"));
			return true;
		}
	}
	if (grow >= 0) {
		const char *col = peaks_column(dtype);
		double v;
		bool ok = cell_num(gp, (size_t)grow, col, &v);
		if (!ok && strcmp(dtype, "fp64") == 0)
			ok = cell_num(gp, (size_t)grow, (col = "fp64_tflops"), &v);
		if (!ok)
			return false;
		if (boost > 0 && clock > 0) {
			out->value = v * clock / boost;
			out->clock_mhz = clock;
			snprintf(out->how, sizeof(out->how), "%g (gpu_peaks %s at %.0f MHz) x %.0f/%.0f MHz", v, col, boost,
				 clock, boost);
		} else {
			out->value = v;
			snprintf(out->how, sizeof(out->how), "%g (gpu_peaks %s)", v, col);
		}
		return true;
	}
	return false;
}

bool kb_memory_peak(const kb *k, const char *gpu_name, double max_mem_clock_mhz, int bus_width_bits, kb_peak *out)
{
	memset(out, 0, sizeof(*out));
	long grow = k ? find_gpu(k, gpu_name) : -1;
	double v;
	if (grow >= 0 && cell_num(kb_table(k, "gpu_peaks"), (size_t)grow, "mem_gbps", &v)) {
		out->value = v;
		snprintf(out->how, sizeof(out->how), "%g GB/s (gpu_peaks mem_gbps)", v);
		return true;
	}
	if (max_mem_clock_mhz > 0 && bus_width_bits > 0) {
		out->value = max_mem_clock_mhz * 1e6 * 2 * bus_width_bits / 8 / 1e9;
		snprintf(out->how, sizeof(out->how), "%.0f MHz x 2 x %d bit / 8 (NVML memory clock and bus width)",
			 max_mem_clock_mhz, bus_width_bits);
		return true;
	}
	return false;
}

double kb_pcie_rate_gbps(int gen, int width)
{
	/* GB/s per lane and direction after line coding: 8b/10b for Gen1-2, 128b/130b for Gen3-5
	 * (data/SOURCES.md: x16 Gen3 15.75, Gen4 31.5, Gen5 63.0), Gen6 FLIT mode 242/256. */
	static const double per_lane[] = {0, 0.25, 0.5, 15.75 / 16, 31.5 / 16, 63.0 / 16, 121.0 / 16};
	if (gen <= 0 || gen >= (int)GV_ARRAY_LEN(per_lane) || width <= 0 || width > 32)
		return 0;
	return per_lane[gen] * width;
}
