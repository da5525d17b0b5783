#include "bench/dtype.h"

#include <strings.h>

#include "core/util.h"

/*
 * Unit roundoffs: fp64 2^-53, fp32 2^-24, fp16 2^-11, bf16 2^-8. tf32 keeps 10 mantissa bits of
 * each fp32 input (the GPU may truncate: 2^-10). fp8 e4m3 products are accumulated by Hopper's
 * tensor cores with fewer bits than fp32 between promotions: 2^-14 is used for them. Outputs:
 * fp8 GEMMs write bf16 (as torch._scaled_mm does), int8 GEMMs int32 (exact).
 */
static const dtype_info table[DT_COUNT] = {
	{DT_FP64, "fp64", "FP64 in and out", 8, 8, false, 52, 1020, 0, 0x1p-53, 0x1p-53, 0},
	{DT_FP32, "fp32", "FP32 in and out, fp32 math", 4, 4, false, 23, 124, 0, 0x1p-24, 0x1p-24, 0},
	{DT_TF32, "tf32", "FP32 in and out, TF32 tensor cores", 4, 4, false, 23, 124, 0x1p-10, 0x1p-24, 0x1p-24, 80},
	{DT_FP16, "fp16", "FP16 in and out, fp32 accumulate", 2, 2, false, 10, 12, 0, 0x1p-24, 0x1p-11, 60},
	{DT_BF16, "bf16", "BF16 in and out, fp32 accumulate", 2, 2, false, 7, 124, 0, 0x1p-24, 0x1p-8, 80},
	{DT_FP8, "fp8", "FP8 e4m3 in, BF16 out, fp32 accumulate", 1, 2, false, 3, 4, 0, 0x1p-14, 0x1p-8, 89},
	{DT_INT8, "int8", "INT8 in, INT32 out", 1, 4, true, 0, 0, 0, 0, 0, 80},
};

const dtype_info *dtype_get(bench_dtype d)
{
	return d >= 0 && d < DT_COUNT ? &table[d] : NULL;
}

bool dtype_parse(const char *name, bench_dtype *out)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (name && strcasecmp(name, table[i].name) == 0) {
			*out = (bench_dtype)i;
			return true;
		}
	return false;
}

const char *dtype_all_names(void)
{
	return "fp64,fp32,tf32,fp16,bf16,fp8,int8";
}
