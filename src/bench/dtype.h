/*
 * The GEMM data types gpuvet benchmarks, with what each needs: storage, the random-input
 * generator's parameters, the error model used to verify results, and the oldest GPU that has
 * the instructions.
 */
#ifndef GPUVET_BENCH_DTYPE_H
#define GPUVET_BENCH_DTYPE_H
#include <stdbool.h>

typedef enum { DT_FP64, DT_FP32, DT_TF32, DT_FP16, DT_BF16, DT_FP8, DT_INT8, DT_COUNT } bench_dtype;

typedef struct dtype_info {
	bench_dtype id;
	const char *name;  /* "bf16": command line, JSON, knowledge base */
	const char *title; /* "BF16 in and out, fp32 accumulate" */
	int in_bytes;      /* storage of one element of A and B */
	int out_bytes;     /* storage of one element of C and D */
	bool integer;      /* int8: exact integer arithmetic, TOP/s */
	/* Generator: floating-point elements are sign | exponent | mantissa with mant_bits random
	 * mantissa bits and a biased exponent from exp_base to exp_base+3, i.e. values of magnitude
	 * in [1/8, 2); never zero, never subnormal, never NaN. */
	int mant_bits, exp_base;
	/* Error model (unit roundoffs): inputs rounded by the GPU (tf32), accumulation, output. */
	double u_in, u_acc, u_out;
	int min_cc; /* major*10+minor of the first architecture with these instructions */
} dtype_info;

const dtype_info *dtype_get(bench_dtype d);
/* By name ("fp16", case-insensitive); false when unknown. */
bool dtype_parse(const char *name, bench_dtype *out);
/* "fp64,fp32,tf32,fp16,bf16,fp8,int8" */
const char *dtype_all_names(void);
#endif
