#include "bench/gen.h"

#include <math.h>
#include <string.h>

uint32_t gen_hash32(uint32_t x)
{
	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return x;
}

uint32_t gen_elem_hash(uint32_t seed, uint64_t i)
{
	return gen_hash32((uint32_t)i * GEN_MUL + seed);
}

uint64_t gen_int8_bits(uint32_t seed, uint64_t i)
{
	uint32_t h = gen_elem_hash(seed, i);
	int32_t v = (int32_t)(h & 63) + 1;
	if (h >> 31)
		v = -v;
	return (uint8_t)(int8_t)v;
}

uint64_t gen_float_bits(int width, int mant_bits, int exp_base, uint32_t seed, uint64_t i)
{
	uint32_t h = gen_elem_hash(seed, i);
	if (width == 64)
		mant_bits = 52;
	uint64_t sign = h >> 31;
	uint64_t exp = (uint64_t)exp_base + ((h >> 24) & 3);
	uint64_t mant;
	if (width == 64)
		mant = ((uint64_t)(h & 0xFFFFFu) << 32) | gen_hash32(h ^ GEN_H2_XOR);
	else
		mant = h & ((1ull << mant_bits) - 1);
	return sign << (width - 1) | exp << mant_bits | mant;
}

uint64_t gen_bits(bench_dtype d, uint32_t seed, uint64_t i)
{
	const dtype_info *t = dtype_get(d);
	if (!t)
		return 0;
	if (t->integer)
		return gen_int8_bits(seed, i);
	return gen_float_bits(t->in_bytes * 8, t->mant_bits, t->exp_base, seed, i);
}

double gen_decode_fp16(uint16_t b)
{
	int s = b >> 15, e = (b >> 10) & 31, m = b & 1023;
	double v;
	if (e == 31)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1024 + m, e - 25);
	return s ? -v : v;
}

double gen_decode_bf16(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, sizeof(f));
	return f;
}

double gen_decode_e4m3(uint8_t b)
{
	/* e4m3 "fn": bias 7, no infinities, only S.1111.111 is NaN */
	int s = b >> 7, e = (b >> 3) & 15, m = b & 7;
	double v;
	if (e == 15 && m == 7)
		return NAN;
	if (e == 0)
		v = ldexp(m, -9);
	else
		v = ldexp(8 + m, e - 10);
	return s ? -v : v;
}

double gen_decode(bench_dtype d, const void *p, int out)
{
	if (out && d == DT_FP8) { /* fp8 GEMMs write bf16 */
		uint16_t b;
		memcpy(&b, p, 2);
		return gen_decode_bf16(b);
	}
	if (out && d == DT_INT8) { /* int8 GEMMs write int32 */
		int32_t v;
		memcpy(&v, p, 4);
		return v;
	}
	switch (d) {
	case DT_FP64: {
		double v;
		memcpy(&v, p, 8);
		return v;
	}
	case DT_FP32:
	case DT_TF32: {
		float v;
		memcpy(&v, p, 4);
		return v;
	}
	case DT_FP16: {
		uint16_t b;
		memcpy(&b, p, 2);
		return gen_decode_fp16(b);
	}
	case DT_BF16: {
		uint16_t b;
		memcpy(&b, p, 2);
		return gen_decode_bf16(b);
	}
	case DT_FP8: return gen_decode_e4m3(*(const uint8_t *)p);
	case DT_INT8: return *(const int8_t *)p;
	default: return NAN;
	}
}

double gen_value(bench_dtype d, uint32_t seed, uint64_t i)
{
	uint64_t bits = gen_bits(d, seed, i);
	const dtype_info *t = dtype_get(d);
	if (!t)
		return NAN;
	unsigned char buf[8];
	memcpy(buf, &bits, sizeof(buf)); /* little-endian: the low bytes hold the element */
	return gen_decode(d, buf, 0);
}
