/*
 * PTX of the bench kernels (see ptx.h). Register conventions in every kernel: %rd5 is the
 * element index of this thread, %rd6 the grid stride (threads in the grid), %rd4 the count.
 * The stream kernels issue four 16-byte loads per array before their stores so each thread keeps
 * several requests in flight; a tail loop takes the rest one vector at a time.
 */
#include "bench/ptx.h"

#include "bench/ptx_asm.h"
#include "bench/ptx_memtest.h"

#include <stddef.h>

/* The stream kernels' shape (copy, scale, add, triad, read): registers; pointer parameters;
 * the loop four vectors deep (L_LOOP4, exits to L_TAIL) with %rd12 the thread's byte offset;
 * four addresses a stride apart; 16-byte loads and stores; the tail one vector at a time
 * (L_TAIL, exits to L_DONE). Quads of registers are lists ("%f1", "%f2", "%f3", "%f4"). */
#define PTX_STREAM_REGS                                                                                                \
	"\t.reg .pred %p<3>;\n"                                                                                        \
	"\t.reg .b32 %r<5>;\n"                                                                                         \
	"\t.reg .f32 %f<50>;\n"                                                                                        \
	"\t.reg .b64 %rd<48>;\n"
#define PTX_LOOP4(L)                                                                                                   \
	"\tshl.b64 %rd7, %rd6, 4;\n"                                                                                   \
	"\tshl.b64 %rd8, %rd6, 2;\n"                                                                                   \
	"\tmul.lo.s64 %rd10, %rd6, 3;\n" L "_LOOP4:\n"                                                                 \
	"\tadd.s64 %rd11, %rd5, %rd10;\n"                                                                              \
	"\tsetp.ge.u64 %p1, %rd11, %rd4;\n"                                                                            \
	"\t@%p1 bra " L "_TAIL;\n"                                                                                     \
	"\tshl.b64 %rd12, %rd5, 4;\n"
#define PTX_TAIL(L)                                                                                                    \
	"\tadd.s64 %rd5, %rd5, %rd8;\n"                                                                                \
	"\tbra.uni " L "_LOOP4;\n" L "_TAIL:\n"                                                                        \
	"\tsetp.ge.u64 %p1, %rd5, %rd4;\n"                                                                             \
	"\t@%p1 bra " L "_DONE;\n"                                                                                     \
	"\tshl.b64 %rd12, %rd5, 4;\n"
#define PTX_TAIL_END(L) "\tadd.s64 %rd5, %rd5, %rd6;\n\tbra.uni " L "_TAIL;\n" L "_DONE:\n"
/* the addresses of one vector (base + %rd12), and of four vectors a grid stride apart */
#define PTX_ADDR(a, base) "\tadd.s64 " a ", " base ", %rd12;\n"
#define PTX_ADDR4(base, a0, a1, a2, a3) PTX_ADDR(a0, base) PTX_NEXT(a1, a0) PTX_NEXT(a2, a1) PTX_NEXT(a3, a2)
#define PTX_NEXT(a, prev) "\tadd.s64 " a ", " prev ", %rd7;\n"
#define PTX_Q_(a, b, c, d) a ", " b ", " c ", " d
#define PTX_Q(...) PTX_Q_(__VA_ARGS__)
#define PTX_LD(quad, addr) "\tld.global.v4.f32 {" PTX_Q(quad) "}, [" addr "];\n"
#define PTX_ST(addr, ...) "\tst.global.v4.f32 [" addr "], {" PTX_Q(__VA_ARGS__) "};\n"
/* %f33-%f36 = op of each lane of a quad (pre x post: "%f49, " "%f1" ""); stored by the caller */
#define PTX_LANES_(op, pre, post, x0, x1, x2, x3)                                                                    \
	"\t" op " %f33, " pre x0 post ";\n\t" op " %f34, " pre x1 post ";\n\t" op " %f35, " pre x2 post ";\n\t" op  \
	" %f36, " pre x3 post ";\n"
#define PTX_LANES(op, pre, post, ...) PTX_LANES_(op, pre, post, __VA_ARGS__)
#define PTX_OUT "%f33", "%f34", "%f35", "%f36"
#define PTX_SCALE(x, addr) PTX_LANES("mul.rn.f32", "%f49, ", "", x) PTX_ST(addr, PTX_OUT)
/* the two-operand lanes: %f33 = op(a, b) */
#define PTX_LANES2_(op, a0, a1, a2, a3, b0, b1, b2, b3)                                                            \
	"\t" op " %f33, " a0 ", " b0 ";\n\t" op " %f34, " a1 ", " b1 ";\n\t" op " %f35, " a2 ", " b2 ";\n\t" op       \
	" %f36, " a3 ", " b3 ";\n"
#define PTX_LANES2(...) PTX_LANES2_(__VA_ARGS__)
#define PTX_ADDV(qa, qb, addr) PTX_LANES2("add.rn.f32", qa, qb) PTX_ST(addr, PTX_OUT)
#define PTX_FMA_(b0, b1, b2, b3, a0, a1, a2, a3)                                                                    \
	"\tfma.rn.f32 %f33, %f49, " b0 ", " a0 ";\n\tfma.rn.f32 %f34, %f49, " b1 ", " a1 ";\n\tfma.rn.f32 %f35, %f49, " \
	b2 ", " a2 ";\n\tfma.rn.f32 %f36, %f49, " b3 ", " a3 ";\n"
/* the read kernel's four sums %f40-%f43 += a quad */
#define PTX_SUM_(x0, x1, x2, x3)                                                                                       \
	"\tadd.f32 %f40, %f40, " x0 ";\n\tadd.f32 %f41, %f41, " x1 ";\n\tadd.f32 %f42, %f42, " x2 ";\n\tadd.f32 %f43, %f43, " x3 ";\n"
#define PTX_SUM(quad) PTX_SUM_(quad)
#define F1 "%f1", "%f2", "%f3", "%f4"
#define F5 "%f5", "%f6", "%f7", "%f8"
#define F9 "%f9", "%f10", "%f11", "%f12"
#define F13 "%f13", "%f14", "%f15", "%f16"
#define F17 "%f17", "%f18", "%f19", "%f20"
#define F21 "%f21", "%f22", "%f23", "%f24"
#define F25 "%f25", "%f26", "%f27", "%f28"
#define F29 "%f29", "%f30", "%f31", "%f32"
/* loads of the first array's four vectors (%rd30-%rd33) into F1..F13 */
#define PTX_LD_A4 PTX_LD(F1, "%rd30") PTX_LD(F5, "%rd31") PTX_LD(F9, "%rd32") PTX_LD(F13, "%rd33")
/* and of the second's (%rd34-%rd37) into F17..F29 */
#define PTX_LD_B4 PTX_LD(F17, "%rd34") PTX_LD(F21, "%rd35") PTX_LD(F25, "%rd36") PTX_LD(F29, "%rd37")

/* The body of a kernel over two arrays (%rd20 in, %rd21 out: copy and scale): four vectors per
 * loop, then the tail; OP(in, out address) computes and stores a quad. */
#define PTX_STREAM2(L, OP)                                                                                             \
	PTX_LOOP4(L)                                                                                                   \
	PTX_ADDR4("%rd20", "%rd30", "%rd31", "%rd32", "%rd33")                                                        \
	PTX_ADDR4("%rd21", "%rd34", "%rd35", "%rd36", "%rd37")                                                        \
	PTX_LD_A4 OP(F1, "%rd34") OP(F5, "%rd35") OP(F9, "%rd36") OP(F13, "%rd37")                                    \
	PTX_TAIL(L) PTX_ADDR("%rd30", "%rd20") PTX_ADDR("%rd34", "%rd21")                                             \
	PTX_LD(F1, "%rd30") OP(F1, "%rd34") PTX_TAIL_END(L)
/* copy's quad: stored as loaded (the quad comes expanded, four registers, then the address) */
#define PTX_COPY(...) PTX_COPY_(__VA_ARGS__)
#define PTX_COPY_(x0, x1, x2, x3, addr) PTX_ST(addr, x0, x1, x2, x3)

/* The body of a kernel over three arrays (%rd20 and %rd21 in, %rd22 out, add and triad): four
 * vectors of each per loop, then the tail; OP(in1, in2, out address) computes and stores a quad. */
#define PTX_STREAM3(L, OP)                                                                                             \
	PTX_LOOP4(L)                                                                                                   \
	PTX_ADDR4("%rd20", "%rd30", "%rd31", "%rd32", "%rd33")                                                        \
	PTX_ADDR4("%rd21", "%rd34", "%rd35", "%rd36", "%rd37")                                                        \
	PTX_ADDR4("%rd22", "%rd38", "%rd39", "%rd40", "%rd41")                                                        \
	PTX_LD_A4 PTX_LD_B4 OP(F1, F17, "%rd38") OP(F5, F21, "%rd39") OP(F9, F25, "%rd40") OP(F13, F29, "%rd41")      \
	PTX_TAIL(L) PTX_ADDR("%rd30", "%rd20") PTX_ADDR("%rd34", "%rd21") PTX_ADDR("%rd38", "%rd22")                 \
	PTX_LD(F1, "%rd30") PTX_LD(F17, "%rd34") OP(F1, F17, "%rd38") PTX_TAIL_END(L)
/* triad's quad: s x the second array + the first */
#define PTX_TRIAD(qa, qb, addr) PTX_TRIAD_(addr, qb, qa)
#define PTX_TRIAD_(addr, ...) PTX_FMA_(__VA_ARGS__) PTX_ST(addr, PTX_OUT)

/* The fill kernels' shape (gen.h): registers and the common parameters; the five-parameter entry
 * of the float fills with the mantissa mask %r13 = (1 << mbits) - 1; the loop over elements with
 * %r15 the element's hash; the float's mantissa and exponent bits into %r17; the loop's end. */
#define PTX_FILL_HEAD(n)                                                                                               \
	"\t.reg .pred %p<3>;\n"                                                                                        \
	"\t.reg .b16 %rs<2>;\n"                                                                                        \
	"\t.reg .b32 %r<24>;\n"                                                                                        \
	"\t.reg .b64 %rd<16>;\n" PTX_PTR("%rd1", "fill_" n "_p") "\tld.param.u64 %rd4, [fill_" n "_n];\n"              \
	"\tld.param.u32 %r10, [fill_" n "_seed];\n"
#define PTX_FILL_ENTRY(n)                                                                                              \
	".visible .entry gv_fill_" n "(\n"                                                                             \
	"\t.param .u64 fill_" n "_p,\n"                                                                                \
	"\t.param .u64 fill_" n "_n,\n"                                                                                \
	"\t.param .u32 fill_" n "_seed,\n"                                                                             \
	"\t.param .u32 fill_" n "_mbits,\n"                                                                            \
	"\t.param .u32 fill_" n "_ebase\n"                                                                             \
	")\n"                                                                                                          \
	"{\n" PTX_FILL_HEAD(n) "\tld.param.u32 %r11, [fill_" n "_mbits];\n"                                            \
	"\tld.param.u32 %r12, [fill_" n "_ebase];\n"                                                                   \
	"\tmov.u32 %r13, 1;\n"                                                                                         \
	"\tshl.b32 %r13, %r13, %r11;\n"                                                                                \
	"\tsub.u32 %r13, %r13, 1;\n"
#define PTX_FILL_LOOP(L)                                                                                               \
	PTX_GRID_STRIDE L "_LOOP:\n"                                                                                   \
	"\tsetp.ge.u64 %p1, %rd5, %rd4;\n"                                                                             \
	"\t@%p1 bra " L "_DONE;\n"                                                                                     \
	"\tcvt.u32.u64 %r14, %rd5;\n"                                                                                  \
	"\tmad.lo.u32 %r15, %r14, -1640531535, %r10;\n" PTX_HASH("%r15", "%r16")
#define PTX_FILL_FLOAT                                                                                                 \
	"\tand.b32 %r17, %r15, %r13;\n"                                                                                \
	"\tshr.u32 %r18, %r15, 24;\n"                                                                                  \
	"\tand.b32 %r18, %r18, 3;\n"                                                                                   \
	"\tadd.u32 %r18, %r18, %r12;\n"                                                                                \
	"\tshl.b32 %r18, %r18, %r11;\n"                                                                                \
	"\tor.b32 %r17, %r17, %r18;\n"
#define PTX_FILL_END(L) "\tadd.s64 %rd5, %rd5, %rd6;\n\tbra.uni " L "_LOOP;\n" L "_DONE:\n\tret;\n}\n\n"

const char ptx_bench_module[] =
	".version 7.0\n"
	".target sm_70\n"
	".address_size 64\n"
	"\n"
	".visible .entry gv_empty()\n"
	"{\n"
	"\tret;\n"
	"}\n"
	"\n"
	".visible .entry gv_set_f32x4(\n"
	"\t.param .u64 set_p,\n"
	"\t.param .u64 set_n,\n"
	"\t.param .f32 set_v\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b32 %r<5>;\n"
	"\t.reg .f32 %f<2>;\n"
	"\t.reg .b64 %rd<12>;\n"
	PTX_PTR("%rd1", "set_p")
	"\tld.param.u64 %rd4, [set_n];\n"
	"\tld.param.f32 %f1, [set_v];\n"
	PTX_GRID_STRIDE
	"\tshl.b64 %rd7, %rd6, 4;\n"
	"\tshl.b64 %rd10, %rd5, 4;\n"
	"\tadd.s64 %rd10, %rd1, %rd10;\n"
	"SET_LOOP:\n"
	"\tsetp.ge.u64 %p1, %rd5, %rd4;\n"
	"\t@%p1 bra SET_DONE;\n"
	"\tst.global.v4.f32 [%rd10], {%f1, %f1, %f1, %f1};\n"
	"\tadd.s64 %rd5, %rd5, %rd6;\n"
	"\tadd.s64 %rd10, %rd10, %rd7;\n"
	"\tbra.uni SET_LOOP;\n"
	"SET_DONE:\n"
	"\tret;\n"
	"}\n"
	"\n"
	".visible .entry gv_copy(\n"
	"\t.param .u64 copy_a,\n"
	"\t.param .u64 copy_c,\n"
	"\t.param .u64 copy_n\n"
	")\n"
	"{\n"
	PTX_STREAM_REGS
	PTX_PTR("%rd20", "copy_a")
	PTX_PTR("%rd21", "copy_c")
	"\tld.param.u64 %rd4, [copy_n];\n"
	PTX_GRID_STRIDE
	PTX_STREAM2("COPY", PTX_COPY)
	"\tret;\n"
	"}\n"
	".visible .entry gv_scale(\n"
	"\t.param .u64 scale_c,\n"
	"\t.param .u64 scale_b,\n"
	"\t.param .u64 scale_n,\n"
	"\t.param .f32 scale_s\n"
	")\n"
	"{\n"
	PTX_STREAM_REGS
	PTX_PTR("%rd20", "scale_c")
	PTX_PTR("%rd21", "scale_b")
	"\tld.param.u64 %rd4, [scale_n];\n"
	"\tld.param.f32 %f49, [scale_s];\n"
	PTX_GRID_STRIDE
	PTX_STREAM2("SCALE", PTX_SCALE)
	"\tret;\n"
	"}\n"
	".visible .entry gv_add(\n"
	"\t.param .u64 add_a,\n"
	"\t.param .u64 add_b,\n"
	"\t.param .u64 add_c,\n"
	"\t.param .u64 add_n\n"
	")\n"
	"{\n"
	PTX_STREAM_REGS
	PTX_PTR("%rd20", "add_a")
	PTX_PTR("%rd21", "add_b")
	PTX_PTR("%rd22", "add_c")
	"\tld.param.u64 %rd4, [add_n];\n"
	PTX_GRID_STRIDE
	PTX_STREAM3("ADD", PTX_ADDV)
	"\tret;\n"
	"}\n"
	".visible .entry gv_triad(\n"
	"\t.param .u64 triad_b,\n"
	"\t.param .u64 triad_c,\n"
	"\t.param .u64 triad_a,\n"
	"\t.param .u64 triad_n,\n"
	"\t.param .f32 triad_s\n"
	")\n"
	"{\n"
	PTX_STREAM_REGS
	PTX_PTR("%rd20", "triad_b")
	PTX_PTR("%rd21", "triad_c")
	PTX_PTR("%rd22", "triad_a")
	"\tld.param.u64 %rd4, [triad_n];\n"
	"\tld.param.f32 %f49, [triad_s];\n"
	PTX_GRID_STRIDE
	PTX_STREAM3("TRIAD", PTX_TRIAD)
	"\tret;\n"
	"}\n"
	".visible .entry gv_read(\n"
	"\t.param .u64 read_a,\n"
	"\t.param .u64 read_out,\n"
	"\t.param .u64 read_n\n"
	")\n"
	"{\n"
	PTX_STREAM_REGS
	PTX_PTR("%rd20", "read_a")
	PTX_PTR("%rd21", "read_out")
	"\tld.param.u64 %rd4, [read_n];\n"
	PTX_GRID_STRIDE
	"\tmov.u64 %rd19, %rd5;\n"
	"\tmov.f32 %f40, 0f00000000;\n"
	"\tmov.f32 %f41, 0f00000000;\n"
	"\tmov.f32 %f42, 0f00000000;\n"
	"\tmov.f32 %f43, 0f00000000;\n"
	PTX_LOOP4("READ")
	PTX_ADDR4("%rd20", "%rd30", "%rd31", "%rd32", "%rd33")
	PTX_LD_A4
	PTX_SUM(F1) PTX_SUM(F5) PTX_SUM(F9) PTX_SUM(F13)
	PTX_TAIL("READ")
	PTX_ADDR("%rd30", "%rd20")
	PTX_LD(F1, "%rd30")
	PTX_SUM(F1)
	PTX_TAIL_END("READ")
	"\tadd.f32 %f40, %f40, %f41;\n"
	"\tadd.f32 %f42, %f42, %f43;\n"
	"\tadd.f32 %f40, %f40, %f42;\n"
	"\tshl.b64 %rd12, %rd19, 2;\n"
	"\tadd.s64 %rd13, %rd21, %rd12;\n"
	"\tst.global.f32 [%rd13], %f40;\n"
	"\tret;\n"
	"}\n"
	"\n"
	PTX_FILL_ENTRY("b8")
	PTX_FILL_LOOP("FILL_B8")
	PTX_FILL_FLOAT
	"\tshr.u32 %r19, %r15, 24;\n"
	"\tand.b32 %r19, %r19, 128;\n"
	"\tor.b32 %r17, %r17, %r19;\n"
	"\tadd.s64 %rd10, %rd1, %rd5;\n"
	"\tcvt.u16.u32 %rs1, %r17;\n"
	"\tst.global.u8 [%rd10], %rs1;\n"
	PTX_FILL_END("FILL_B8")
	".visible .entry gv_fill_i8(\n"
	"\t.param .u64 fill_i8_p,\n"
	"\t.param .u64 fill_i8_n,\n"
	"\t.param .u32 fill_i8_seed\n"
	")\n"
	"{\n"
	PTX_FILL_HEAD("i8")
	PTX_FILL_LOOP("FILL_I8")
	"\tand.b32 %r17, %r15, 63;\n"
	"\tadd.u32 %r17, %r17, 1;\n"
	"\tneg.s32 %r18, %r17;\n"
	"\tsetp.lt.s32 %p2, %r15, 0;\n"
	"\tselp.b32 %r17, %r18, %r17, %p2;\n"
	"\tadd.s64 %rd10, %rd1, %rd5;\n"
	"\tcvt.u16.u32 %rs1, %r17;\n"
	"\tst.global.u8 [%rd10], %rs1;\n"
	PTX_FILL_END("FILL_I8")
	PTX_FILL_ENTRY("b16")
	PTX_FILL_LOOP("FILL_B16")
	PTX_FILL_FLOAT
	"\tshr.u32 %r19, %r15, 16;\n"
	"\tand.b32 %r19, %r19, 32768;\n"
	"\tor.b32 %r17, %r17, %r19;\n"
	"\tshl.b64 %rd10, %rd5, 1;\n"
	"\tadd.s64 %rd10, %rd1, %rd10;\n"
	"\tcvt.u16.u32 %rs1, %r17;\n"
	"\tst.global.u16 [%rd10], %rs1;\n"
	PTX_FILL_END("FILL_B16")
	PTX_FILL_ENTRY("b32")
	PTX_FILL_LOOP("FILL_B32")
	PTX_FILL_FLOAT
	"\tand.b32 %r19, %r15, -2147483648;\n"
	"\tor.b32 %r17, %r17, %r19;\n"
	"\tshl.b64 %rd10, %rd5, 2;\n"
	"\tadd.s64 %rd10, %rd1, %rd10;\n"
	"\tst.global.u32 [%rd10], %r17;\n"
	PTX_FILL_END("FILL_B32")
	PTX_FILL_ENTRY("b64")
	PTX_FILL_LOOP("FILL_B64")
	"\tshr.u32 %r18, %r15, 24;\n"
	"\tand.b32 %r18, %r18, 3;\n"
	"\tadd.u32 %r18, %r18, %r12;\n"
	"\tshl.b32 %r18, %r18, 20;\n"
	"\tand.b32 %r17, %r15, 1048575;\n"
	"\tor.b32 %r17, %r17, %r18;\n"
	"\tand.b32 %r19, %r15, -2147483648;\n"
	"\tor.b32 %r17, %r17, %r19;\n"
	"\txor.b32 %r20, %r15, 1540483477;\n"
	PTX_HASH("%r20", "%r16")
	"\tmov.b64 %rd11, {%r20, %r17};\n"
	"\tshl.b64 %rd10, %rd5, 3;\n"
	"\tadd.s64 %rd10, %rd1, %rd10;\n"
	"\tst.global.u64 [%rd10], %rd11;\n"
	PTX_FILL_END("FILL_B64")
	/* spins until spin_ns nanoseconds of %globaltimer have passed: queued ahead of a timed
	 * region, it keeps the GPU busy while the host enqueues the start event and the work, so the
	 * host's launch overhead (or a host thread that stalls) does not land between the events */
	".visible .entry gv_spin(\n"
	"\t.param .u64 spin_ns\n"
	")\n"
	"{\n"
	"\t.reg .pred %p<2>;\n"
	"\t.reg .b64 %rd<5>;\n"
	"\tld.param.u64 %rd1, [spin_ns];\n"
	"\tmov.u64 %rd2, %globaltimer;\n"
	"SPIN_LOOP:\n"
	"\tmov.u64 %rd3, %globaltimer;\n"
	"\tsub.s64 %rd4, %rd3, %rd2;\n"
	"\tsetp.lt.u64 %p1, %rd4, %rd1;\n"
	"\t@%p1 bra SPIN_LOOP;\n"
	"\tret;\n"
	"}\n"
	"\n"
	/* the memory test's fill, check and compare (ptx_memtest.h) */
	PTX_MEMTEST_KERNELS;

const ptx_kernel ptx_bench_kernels[] = {
	{"gv_empty", ""},
	{"gv_set_f32x4", "u64 u64 f32"},
	{"gv_copy", "u64 u64 u64"},
	{"gv_scale", "u64 u64 u64 f32"},
	{"gv_add", "u64 u64 u64 u64"},
	{"gv_triad", "u64 u64 u64 u64 f32"},
	{"gv_read", "u64 u64 u64"},
	{"gv_fill_b8", "u64 u64 u32 u32 u32"},
	{"gv_fill_i8", "u64 u64 u32"},
	{"gv_fill_b16", "u64 u64 u32 u32 u32"},
	{"gv_fill_b32", "u64 u64 u32 u32 u32"},
	{"gv_fill_b64", "u64 u64 u32 u32 u32"},
	{"gv_spin", "u64"},
	PTX_MEMTEST_TABLE
	{NULL, NULL},
};
