/*
 * The memory test's pattern values, the C model of what gv_mt_fill writes and gv_mt_check
 * expects (ptx_memtest.h): word i (the 64-bit word at byte p + 8i of a launch over p) holds
 * V(mode, i, p, a, b). Written once here; the fake libcuda's kernels (tests/fake) compute with
 * it, and the GPU test compares the PTX's words with it.
 *
 *	mode 0 constant   a
 *	mode 1 address    (p + 8i) ^ a                    the word's own device address
 *	mode 2 random     (hi << 32 | lo) ^ b, with       a 32-bit hash per 32-bit half (64-bit
 *	                  lo = hash32(i * GEN_MUL + a_lo)  multiplies are slow on GPUs); the low 32
 *	                  hi = hash32(lo ^ a_hi ^ GEN_H2_XOR)  bits of i, so it repeats every 32 GiB
 *
 * (hash32, GEN_MUL, GEN_H2_XOR: gen.h, the GEMM input generator's). Every mode is a value
 * XORed with a parameter, so the complement of a pattern is the same mode with that parameter
 * inverted (mt_complement): moving inversions check a pattern and write its complement.
 *
 * A new mode: a row in MT_MODES, its case in mt_value and mt_complement, and its value macro
 * and dispatch line in ptx_memtest.h (PTX_MT_MODES).
 */
#ifndef GPUVET_BENCH_MTPATTERN_H
#define GPUVET_BENCH_MTPATTERN_H
#include <stdint.h>

/* X(ID, number, name, formula) */
#define MT_MODES(X)                                                                                                    \
	X(CONST, 0, "constant", "a")                                                                                   \
	X(ADDRESS, 1, "address", "(p + 8i) ^ a")                                                                       \
	X(RANDOM, 2, "random", "hash32 pair of (i, a) ^ b")

#define MT_MODE_ENUM_(ID, num, ...) MT_MODE_##ID = num,
typedef enum { MT_MODES(MT_MODE_ENUM_) MT_MODE_COUNT } mt_mode;
#undef MT_MODE_ENUM_

/* V(mode, i, p, a, b); 0 for a mode that does not exist (the kernels then do nothing). */
uint64_t mt_value(unsigned mode, uint64_t i, uint64_t p, uint64_t a, uint64_t b);
/* Changes (a, b) so that V(mode, i, p, a, b) becomes ~V for every word. */
void mt_complement(unsigned mode, uint64_t *a, uint64_t *b);
/* "constant", "address", "random"; NULL for none. */
const char *mt_mode_name(unsigned mode);
#endif
