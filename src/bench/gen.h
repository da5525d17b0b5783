/*
 * Random GEMM inputs, generated on the GPU by a PTX kernel (ptx.c, gv_fill_*) and modelled here
 * bit for bit, so that the CPU can recompute any output element from (seed, index) without
 * copying the matrices back. Element i of a matrix with seed s:
 *
 *	h  = hash32(i * 0x9E3779B1 + s)        (32-bit arithmetic; i < 2^32)
 *	float types: sign = h bit 31, biased exponent = exp_base + (h >> 24 & 3),
 *	             mantissa = low mant_bits of h (fp64: h & 0xFFFFF, then 32 bits of hash32(h ^ 0x5BD1E995))
 *	int8:        (h & 63) + 1, negated when h bit 31 is set
 *
 * so every value is non-zero, finite and normal. hash32 is the "lowbias32" integer mixer.
 */
#ifndef GPUVET_BENCH_GEN_H
#define GPUVET_BENCH_GEN_H
#include <stdint.h>

#include "bench/dtype.h"

#define GEN_MUL 0x9E3779B1u
#define GEN_H2_XOR 0x5BD1E995u

uint32_t gen_hash32(uint32_t x);
uint32_t gen_elem_hash(uint32_t seed, uint64_t i);
/* What the kernels write, from their own parameters (the fake libcuda computes its model of them
 * with these): gv_fill_b<width> (8, 16, 32; 64 always has 52 mantissa bits) and gv_fill_i8. */
uint64_t gen_float_bits(int width, int mant_bits, int exp_base, uint32_t seed, uint64_t i);
uint64_t gen_int8_bits(uint32_t seed, uint64_t i);
/* The element's bits as stored on the device (in the low in_bytes bytes). */
uint64_t gen_bits(bench_dtype d, uint32_t seed, uint64_t i);
/* The element's exact value. */
double gen_value(bench_dtype d, uint32_t seed, uint64_t i);

/* Decoders of stored bits to their exact value (also used for downloaded results). */
double gen_decode_fp16(uint16_t bits);
double gen_decode_bf16(uint16_t bits);
double gen_decode_e4m3(uint8_t bits); /* NaN for the NaN encodings */
/* Decodes an element of type d (output types: fp8 results are bf16, int8 results int32) from
 * memory at p. out=true reads the output type. */
double gen_decode(bench_dtype d, const void *p, int out);
#endif
