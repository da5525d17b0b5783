/*
 * The device memory test behind `gpuvet diag` (DCGM's memtest, cuda_memtest, memtest86 on the
 * GPU): memtest86-style patterns over most of the free device memory with the PTX kernels
 * gv_mt_fill / gv_mt_check (ptx_memtest.h, values of mtpattern.h), and a buffer compare
 * (gv_cmp_b32) for a GEMM's output against its golden copy.
 *
 *   memtest_alloc   takes a fraction of the free memory in chunks (at most 4 GiB each, halved
 *                   when an allocation fails); memtest_free gives every chunk back
 *   memtest_run     one pattern over every chunk, in slices (at most 1 GiB a launch), polling a
 *                   stop flag between launches; the errors, the first one's device address, what
 *                   was read and expected, the step that found it, bytes and seconds
 *   memtest_cmp_*   a compare that accumulates over many launches, read back when wanted
 *
 * Every kernel and copy is queued on one stream (the device's unless given), so its order with
 * the kernels is the stream's; the host waits on that stream at the end of every step and
 * whenever about launch_s seconds of work are queued, so that a stop is seen within that.
 */
#ifndef GPUVET_BENCH_MEMTEST_H
#define GPUVET_BENCH_MEMTEST_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/gpu.h"

/* The patterns, in the order diag runs them: X(ID, name, the memtest86(+) / cuda_memtest test it
 * corresponds to, a one-line description, the function that lays out its steps). The steps are
 * the "passes" an error names: a fill writes a pattern, a check reads it (a moving-inversions
 * check also writes its complement, bottom-up or top-down). memtest86+ numbers are those of
 * its 5.x releases, cuda_memtest's those of its README. */
#define MEMTEST_PATTERNS(X)                                                                                            \
	X(WALKING_ONES, "walking_ones",                                                                                \
	  "cuda_memtest test 0, memtest86+ test 0 (walking ones; there on address lines)",                             \
	  "one set bit per word, written then checked at each of 8 spread bit positions (all 64 with long)",           \
	  plan_walking_ones)                                                                                           \
	X(OWN_ADDRESS, "own_address", "cuda_memtest test 1, memtest86+ tests 1-2 (own address)",                       \
	  "every word holds its own device address, then the address's complement", plan_own_address)                  \
	X(MOVING_INV_01, "moving_inv_01",                                                                              \
	  "cuda_memtest test 2, memtest86+ test 3 (moving inversions, ones and zeros)",                                \
	  "all zeros; check zeros and write ones bottom-up; check ones and write zeros top-down; check zeros",         \
	  plan_moving_inv_01)                                                                                          \
	X(MOVING_INV_8BIT, "moving_inv_8bit",                                                                          \
	  "cuda_memtest test 3, memtest86+ test 4 (moving inversions, 8-bit pattern)",                                 \
	  "moving inversions of 0x0101010101010101 << k for k = 0..7", plan_moving_inv_8bit)                           \
	X(MOVING_INV_RANDOM, "moving_inv_random",                                                                      \
	  "cuda_memtest test 4, memtest86+ test 5 (moving inversions, random pattern)",                                \
	  "moving inversions of a random word per address (from the seed) and its complement", plan_moving_inv_random) \
	X(BLOCK_MOVE, "block_move", "cuda_memtest test 5, memtest86+ test 6 (block move)",                             \
	  "a random pattern; each slice's first half copied onto its second half by the copy engine (cuMemcpyDtoD); "  \
	  "both halves checked against the first half's pattern",                                                      \
	  plan_block_move)

#define MEMTEST_ENUM_(ID, ...) MEMTEST_##ID,
typedef enum { MEMTEST_PATTERNS(MEMTEST_ENUM_) MEMTEST_N_PATTERNS } memtest_pattern;
#undef MEMTEST_ENUM_

typedef struct memtest_pattern_info {
	const char *name;   /* "moving_inv_01" */
	const char *origin; /* "cuda_memtest test 2, memtest86+ test 3 (...)" */
	const char *description;
} memtest_pattern_info;
const memtest_pattern_info *memtest_pattern_get(memtest_pattern p);
bool memtest_pattern_parse(const char *name, memtest_pattern *out);

/* ---- memory ---- */

#define MEMTEST_CHUNK_MAX (4ull << 30) /* one cuMemAlloc at most */
#define MEMTEST_CHUNK_MIN (2ull << 20) /* the smallest chunk tried after failures */
#define MEMTEST_SLICE_MAX (1ull << 30) /* one launch at most: well under a second on any GPU */
#define MEMTEST_MAX_SLICES 4096        /* error records allocated up front (128 KiB) */

typedef struct memtest_chunk {
	CUdeviceptr base;
	uint64_t bytes;
} memtest_chunk;

/* What one launch covers: part of a chunk, with its own error record (4 u64 at err + 32 i). */
typedef struct memtest_slice {
	CUdeviceptr base;
	uint64_t words;
	unsigned chunk;
} memtest_slice;

typedef struct memtest_mem {
	memtest_chunk *chunk;
	size_t nchunks;
	uint64_t bytes;       /* in all chunks */
	uint64_t free_before; /* cuMemGetInfo's free and total when it was taken */
	uint64_t total;
	memtest_slice *slice; /* in address order of chunks, nslices of them */
	size_t nslices;
	CUdeviceptr err; /* MEMTEST_MAX_SLICES error records */
} memtest_mem;

/* Takes `fraction` (0.95) of the free memory of the current device (gpu_use), at most max_bytes when that is not
 * 0, in chunks of at most MEMTEST_CHUNK_MAX (multiples of MEMTEST_CHUNK_MIN), halving the size
 * after a failed allocation down to MEMTEST_CHUNK_MIN; slices of at most slice_bytes (0:
 * MEMTEST_SLICE_MAX; tests use less to have many). False with why when not even one chunk could
 * be had (then nothing is held). */
bool memtest_alloc(gpu_session *s, double fraction, uint64_t max_bytes, uint64_t slice_bytes, memtest_mem *m, char *why,
		   size_t n);
/* Gives every chunk and the error records back (m may be zeroed or already freed). */
void memtest_free(gpu_session *s, memtest_mem *m);

/* ---- one pattern ---- */

#define MEMTEST_DERIVE UINT64_MAX /* an injection offset derived from the seed */

typedef struct memtest_opts {
	bool long_run; /* walking_ones over all 64 bits (else 8: 0, 9, ..., 63) */
	uint64_t seed; /* the random patterns' (and a derived injection's) */
	/* diag --inject memory: after the pattern's fill and before its first check, one bit of one
	 * word is flipped through the host (cuMemcpyDtoH / HtoD of that word), so the check must
	 * find exactly that address (memtest_result says where it went) */
	bool inject;
	uint64_t inject_offset;            /* byte offset into the tested memory, chunks in order (rounded down to
					    * a word); MEMTEST_DERIVE: from the seed */
	int inject_bit;                    /* 0-63; -1: from the seed */
	const volatile sig_atomic_t *stop; /* the run ends between launches once it is set (SIGINT) */
	/* > 0: memtest_run arms the bench watchdog (watchdog.h) for this many seconds, so a hung
	 * kernel ends the process, and disarms it at the end (the watchdog has one arming: the
	 * caller's is gone then); 0: the caller's arming holds (its soft limit also ends the run
	 * early) */
	double deadline_s;
	double launch_s; /* the most work (estimated) queued before the host waits; 0: 0.25 s */
	CUstream stream; /* NULL: the device's */
} memtest_opts;

#define MEMTEST_MAX_STEPS 160 /* walking_ones over 64 bits: 128 */

typedef struct memtest_step_result {
	char what[80];  /* "check 0x0000000000000001, write its complement, top-down" */
	uint64_t bytes; /* read + written */
	double gpu_s;   /* between CUDA events around the step's launches */
	uint64_t errors;
} memtest_step_result;

typedef struct memtest_result {
	memtest_pattern pattern;
	uint64_t errors; /* in every check of the run */
	/* the first error of the earliest step that found any */
	int step;         /* 1-based; 0 when no error */
	CUdeviceptr addr; /* slice base + 8 x the word index */
	uint64_t read, expected, xor_bits;
	/* the injection, when one was made */
	bool injected;
	CUdeviceptr inject_addr;
	int inject_bit;
	int inject_step; /* the check it came before */
	uint64_t inject_was, inject_now;
	uint64_t bytes;     /* read + written by the kernels and copies */
	double seconds;     /* wall clock, launch to last wait */
	double gpu_seconds; /* sum of the steps' event times */
	bool stopped;       /* by the stop flag or the watchdog's soft limit, before the end */
	int planned_steps;  /* the pattern's */
	int nsteps;         /* run (the last one partly when stopped) */
	memtest_step_result steps[MEMTEST_MAX_STEPS];
	char error[512]; /* why the run failed (a CUDA error) */
} memtest_result;

/* Runs pattern p over every slice of m on device d (made current by gpu_use). False with r->error
 * on a CUDA error; true otherwise, errors or not (r->errors), stopped or not (r->stopped). */
bool memtest_run(gpu_session *s, gpu_dev *d, memtest_mem *m, memtest_pattern p, const memtest_opts *o,
		 memtest_result *r);
/* The random mode's a for the slice at base: the seed mixed with the slice's address, so that
 * no two slices hold the same data and a write that lands in the wrong one is seen. Its word i
 * holds mt_value(MT_MODE_RANDOM, i, base, memtest_slice_seed(base, a), b); block_move's a is
 * the seed ^ 0xB10C, each half of a slice indexed from its own start. */
uint64_t memtest_slice_seed(CUdeviceptr base, uint64_t a);
/* "walking_ones pass 3: 1 error at 0x7f2a40001238: read 0x0000000000000008 expected
 * 0x0000000000000000 (bit 3)"; "own_address: no error in 3 passes over 1024 MiB (2987 GB/s)". */
void memtest_describe(const memtest_result *r, char *buf, size_t n);
/* "bit 3", "bits 3, 17, 40", "33 bits" */
void memtest_bits_text(uint64_t xor_bits, char *buf, size_t n);

/* ---- comparing two buffers (a GEMM's output against its golden copy) ---- */

/* One device record (gv_cmp_b32's err) that the compares accumulate into until reset. */
typedef struct memtest_cmp {
	CUdeviceptr err;
	uint64_t launches; /* since the last reset */
} memtest_cmp;

typedef struct memtest_cmp_result {
	uint64_t mismatches; /* 32-bit words, over every launch since the reset */
	uint64_t launches;
	bool any;
	uint64_t index; /* the first claimed word's index into its launch's x and y */
	uint32_t x, y;  /* that word in x and in y */
} memtest_cmp_result;

/* Allocates the record and clears it. */
bool memtest_cmp_init(gpu_session *s, memtest_cmp *c, char *why, size_t n);
/* Queues gv_cmp_b32 of n 32-bit words of x and y on `stream` (NULL: the device's); returns at
 * once. */
CUresult memtest_cmp_launch(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUdeviceptr x, CUdeviceptr y, uint64_t n,
			    CUstream stream);
/* Waits for `stream` and reads the record (every ~100 ms in diag). */
CUresult memtest_cmp_read(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUstream stream, memtest_cmp_result *out);
/* Clears the record, in the stream's order. */
CUresult memtest_cmp_reset(gpu_session *s, gpu_dev *d, memtest_cmp *c, CUstream stream);
void memtest_cmp_free(gpu_session *s, memtest_cmp *c);
/* The three together: one compare, its result, the record left clear. False with why on a CUDA
 * error. */
bool memtest_compare(gpu_session *s, gpu_dev *d, CUdeviceptr x, CUdeviceptr y, uint64_t n, memtest_cmp_result *out,
		     char *why, size_t why_n);
#endif
