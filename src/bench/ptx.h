/*
 * The device code of gpuvet bench, as PTX text loaded at run time with cuModuleLoadData (the
 * driver compiles it for the GPU at hand), so no CUDA toolkit is needed to build gpuvet.
 *
 * One module, .version 7.0 / .target sm_70 (drivers from R450 on load it; any GPU from Volta on
 * runs it). Every kernel uses a grid-stride loop, so any launch shape covers any size.
 *
 *	gv_empty()                                   launch latency
 *	gv_set_f32x4(p, n4, v)                       p[0..4*n4) = v
 *	gv_copy(a, c, n4)                            c = a           streams of n4 16-byte vectors
 *	gv_scale(c, b, n4, s)                        b = s * c       (ld/st.global.v4.f32,
 *	gv_add(a, b, c, n4)                          c = a + b        unrolled 4 deep)
 *	gv_triad(b, c, a, n4, s)                     a = b + s * c
 *	gv_read(a, out, n4)                          out[thread] = sum of the thread's elements of a
 *	gv_fill_b8/b16/b32(p, n, seed, mbits, ebase) random floats of 1, 2, 4 bytes (gen.h)
 *	gv_fill_b64(p, n, seed, mbits, ebase)        random fp64 (mbits unused: always 52)
 *	gv_fill_i8(p, n, seed)                       random non-zero int8 in [-64, 64]
 *	gv_spin(ns)                                  one thread busy for ns nanoseconds (a guard
 *	                                             ahead of an event-timed region)
 *	gv_mt_fill(p, n, mode, a, b)                 the memory test's patterns, their check (with
 *	gv_mt_check(p, n, mode, a, b, err, rw, rev)  moving inversions' rewrite, either direction)
 *	gv_cmp_b32(x, y, n, err)                     and a buffer compare (ptx_memtest.h)
 */
#ifndef GPUVET_BENCH_PTX_H
#define GPUVET_BENCH_PTX_H

typedef struct ptx_kernel {
	const char *entry;  /* "gv_copy" */
	const char *params; /* parameter types in order, space separated: "u64 u64 u64 f32" */
} ptx_kernel;

extern const char ptx_bench_module[];
/* Every entry of ptx_bench_module, NULL-terminated. */
extern const ptx_kernel ptx_bench_kernels[];
#endif
