/*
 * Building blocks of the PTX text shared by ptx.c and ptx_memtest.h: string-literal macros that
 * expand to PTX instructions (one per line, tab-indented), concatenated into ptx_bench_module at
 * compile time.
 */
#ifndef GPUVET_BENCH_PTX_ASM_H
#define GPUVET_BENCH_PTX_ASM_H

/* %rd5 = blockIdx.x * blockDim.x + threadIdx.x, %rd6 = gridDim.x * blockDim.x */
#define PTX_GRID_STRIDE                                                                                                \
	"\tmov.u32 %r1, %ctaid.x;\n"                                                                                   \
	"\tmov.u32 %r2, %ntid.x;\n"                                                                                    \
	"\tmov.u32 %r3, %tid.x;\n"                                                                                     \
	"\tmov.u32 %r4, %nctaid.x;\n"                                                                                  \
	"\tmul.wide.u32 %rd5, %r1, %r2;\n"                                                                             \
	"\tcvt.u64.u32 %rd9, %r3;\n"                                                                                   \
	"\tadd.s64 %rd5, %rd5, %rd9;\n"                                                                                \
	"\tmul.wide.u32 %rd6, %r4, %r2;\n"

/* x = lowbias32(x), t a scratch register (gen.c: gen_hash32) */
#define PTX_HASH(x, t)                                                                                                 \
	"\tshr.u32 " t ", " x ", 16;\n"                                                                                \
	"\txor.b32 " x ", " x ", " t ";\n"                                                                             \
	"\tmul.lo.u32 " x ", " x ", 0x7feb352d;\n"                                                                     \
	"\tshr.u32 " t ", " x ", 15;\n"                                                                                \
	"\txor.b32 " x ", " x ", " t ";\n"                                                                             \
	"\tmul.lo.u32 " x ", " x ", 0x846ca68b;\n"                                                                     \
	"\tshr.u32 " t ", " x ", 16;\n"                                                                                \
	"\txor.b32 " x ", " x ", " t ";\n"

/* reg = the global address of the u64 parameter param */
#define PTX_PTR(reg, param) "\tld.param.u64 " reg ", [" param "];\n\tcvta.to.global.u64 " reg ", " reg ";\n"
#endif
