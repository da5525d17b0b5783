/*
 * The fake libcuda's models of the PTX kernels (src/bench/ptx.c, ptx_memtest.h): what each
 * writes, computed with gpuvet's own models of them (src/bench/gen.c for the GEMM inputs,
 * src/bench/mtpattern.c for the memory test's patterns), reading device memory through
 * fake_dev_read so that a bad cell reads bad. A claim about the real kernels: the GPU tests
 * (tests/gpu) hold the PTX to the same models. Kernels not listed here do nothing.
 */
#include <string.h>

#include "bench/gen.h"
#include "bench/mtpattern.h"
#include "fake_cuda.h"

#define U64(k) (*(const uint64_t *)params[k])
#define U32(k) (*(const uint32_t *)params[k])
#define CUDA_ERROR_MISALIGNED_ADDRESS 716

static CUresult check_range(uint64_t p, uint64_t n, uint64_t size)
{
	if (n && (n > UINT64_MAX / size || !fake_dev_range((uintptr_t)p, (size_t)(n * size))))
		return CUDA_ERROR_ILLEGAL_ADDRESS;
	return CUDA_SUCCESS;
}

static void put(uint64_t p, uint64_t i, uint64_t v, int bytes)
{
	memcpy((unsigned char *)(uintptr_t)p + i * (uint64_t)bytes, &v, (size_t)bytes); /* little-endian */
}

/* gv_fill_b8/b16/b32/b64(p, n, seed, mbits, ebase) */
static CUresult fill_float(void **params, int width)
{
	uint64_t p = U64(0), n = U64(1);
	CUresult rc = check_range(p, n, (uint64_t)width / 8);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		put(p, i, gen_float_bits(width, (int)U32(3), (int)U32(4), U32(2), i), width / 8);
	return CUDA_SUCCESS;
}
static CUresult fill_b8(void **params)
{
	return fill_float(params, 8);
}
static CUresult fill_b16(void **params)
{
	return fill_float(params, 16);
}
static CUresult fill_b32(void **params)
{
	return fill_float(params, 32);
}
static CUresult fill_b64(void **params)
{
	return fill_float(params, 64);
}

/* gv_fill_i8(p, n, seed) */
static CUresult fill_i8(void **params)
{
	uint64_t p = U64(0), n = U64(1);
	CUresult rc = check_range(p, n, 1);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		put(p, i, gen_int8_bits(U32(2), i), 1);
	return CUDA_SUCCESS;
}

/* gv_mt_fill(p, n, mode, a, b): word i = V(mode, i, p, a, b); an unknown mode writes nothing */
static CUresult mt_fill(void **params)
{
	uint64_t p = U64(0), n = U64(1), a = U64(3), b = U64(4);
	unsigned mode = U32(2);
	if (p % 8)
		return CUDA_ERROR_MISALIGNED_ADDRESS;
	CUresult rc = check_range(p, n, 8);
	if (rc || mode >= MT_MODE_COUNT)
		return rc;
	for (uint64_t i = 0; i < n; i++)
		put(p, i, mt_value(mode, i, p, a, b), 8);
	return CUDA_SUCCESS;
}

/* the error record of gv_mt_check and gv_cmp_b32: count, first index (claimed from all ones),
 * value read (x), expected (y) */
static void record(uint64_t *err, uint64_t i, uint64_t got, uint64_t want)
{
	err[0]++;
	if (err[1] == UINT64_MAX) {
		err[1] = i;
		err[2] = got;
		err[3] = want;
	}
}

/* gv_mt_check(p, n, mode, a, b, err, rewrite, reverse) */
static CUresult mt_check(void **params)
{
	uint64_t p = U64(0), n = U64(1), a = U64(3), b = U64(4), e = U64(5);
	unsigned mode = U32(2), rewrite = U32(6), reverse = U32(7);
	if (p % 8 || e % 8)
		return CUDA_ERROR_MISALIGNED_ADDRESS;
	CUresult rc = check_range(p, n, 8);
	if (!rc)
		rc = check_range(e, 4, 8);
	if (rc || mode >= MT_MODE_COUNT)
		return rc;
	uint64_t *err = (uint64_t *)(uintptr_t)e;
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = reverse ? n - 1 - k : k;
		uint64_t want = mt_value(mode, i, p, a, b), got = fake_dev_read64((uintptr_t)(p + 8 * i));
		if (got != want)
			record(err, i, got, want);
		if (rewrite)
			put(p, i, ~want, 8);
	}
	return CUDA_SUCCESS;
}

/* gv_set_f32x4(p, n4, v): p[0..4 n4) = v (the P2P and memory benchmarks' fill) */
static CUresult set_f32x4(void **params)
{
	uint64_t p = U64(0), n4 = U64(1);
	float v = *(const float *)params[2];
	uint32_t bits;
	memcpy(&bits, &v, 4);
	CUresult rc = check_range(p, n4, 16);
	if (rc)
		return rc;
	for (uint64_t i = 0; i < 4 * n4; i++)
		put(p, i, bits, 4);
	return CUDA_SUCCESS;
}

/* gv_cmp_b32(x, y, n, err) */
static CUresult cmp_b32(void **params)
{
	uint64_t x = U64(0), y = U64(1), n = U64(2), e = U64(3);
	if (x % 4 || y % 4 || e % 8)
		return CUDA_ERROR_MISALIGNED_ADDRESS;
	CUresult rc = check_range(x, n, 4);
	if (!rc)
		rc = check_range(y, n, 4);
	if (!rc)
		rc = check_range(e, 4, 8);
	if (rc)
		return rc;
	uint64_t *err = (uint64_t *)(uintptr_t)e;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t vx = fake_dev_read32((uintptr_t)(x + 4 * i)), vy = fake_dev_read32((uintptr_t)(y + 4 * i));
		if (vx != vy)
			record(err, i, vx, vy);
	}
	return CUDA_SUCCESS;
}

static const struct {
	const char *name;
	fake_kernel_fn run;
} models[] = {
	{"gv_fill_b8", fill_b8},   {"gv_fill_i8", fill_i8}, {"gv_fill_b16", fill_b16}, {"gv_fill_b32", fill_b32},
	{"gv_fill_b64", fill_b64}, {"gv_mt_fill", mt_fill}, {"gv_mt_check", mt_check}, {"gv_cmp_b32", cmp_b32},
	{"gv_set_f32x4", set_f32x4},
};

fake_kernel_fn fake_kernel_model(const char *name)
{
	for (size_t i = 0; i < sizeof(models) / sizeof(models[0]); i++)
		if (strcmp(models[i].name, name) == 0)
			return models[i].run;
	return NULL;
}
