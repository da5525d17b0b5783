/*
 * PTX of the memory test's kernels, appended to ptx_bench_module by ptx.c (same .version 7.0 /
 * .target sm_70, grid-stride loops):
 *
 *	gv_mt_fill(p, n, mode, a, b)              word i of p[0..n) = V(mode, i, p, a, b)
 *	gv_mt_check(p, n, mode, a, b, err,        compares word i with V; a mismatch adds 1 to
 *	            rewrite, reverse)             err[0] and the first thread to claim err[1]
 *	                                          (atom.cas from all ones) writes err[1] = i,
 *	                                          err[2] = the value read, err[3] = V; rewrite 1
 *	                                          then stores ~V (memtest86's moving inversions:
 *	                                          check a pattern and write its complement in one
 *	                                          pass); reverse 1 runs top-down
 *	gv_cmp_b32(x, y, n, err)                  compares 32-bit words x[i] and y[i]: err[0] the
 *	                                          mismatches, err[1] the first claimed i, err[2]
 *	                                          x[i], err[3] y[i] (u64 each)
 *
 * V is mtpattern.h's (the C model). Words are 64-bit, accessed as 16-byte vectors (v2.u64; the
 * compare as v4.u32), four vectors per thread per loop so that several loads are in flight, then
 * one vector at a time, then a scalar tail for an odd word; a base that is not 16-byte aligned
 * (x or y for the compare) takes the scalar loop for every word. The mode is the same for the
 * whole launch, so each mode has its own copy of the loops (PTX_MT_MODES) and the random mode's
 * hashes cost nothing in the others. A mode with no loop does nothing.
 *
 * Direction: the thread's first vector is v = t (reverse: nv - 1 - t) and it steps by S vectors
 * (reverse: -S), S the threads of the grid; f counts the forward position t, t + S, ... against
 * the vector count. Top-down is what the grid as a whole sweeps over time (threads run in any
 * order within it), as in every GPU memory test.
 *
 * Registers across the loops, kept few so that 4 blocks of 256 threads fit an SM: %rd2 p
 * (global), %rd11 the address of the thread's next vector, %rd12 the step between its vectors
 * in bytes (16 S, reverse -16 S), %rd10 f, %rd15 nv - 3 S (the four-deep loop runs while f is
 * below it), %rd4 nv, %rd6 S, %rd7 a, %rd8 b, %rd1 the generic minus the global address (V's
 * address is the pointer the host passed), %r10 a_lo, %r11 a_hi ^ GEN_H2_XOR, %p2 reverse, %p5
 * rewrite. A word's index, for the random mode and for an error record, is (its address - p) / 8.
 * Vector J (0-3) of a loop: %adJ its address, words a and b: read %gaJ/%gbJ, V %eaJ/%ebJ,
 * scratch %daJ %dbJ %naJ %nbJ and b32 %xaJ %yaJ %taJ (and b).
 */
#ifndef GPUVET_BENCH_PTX_MEMTEST_H
#define GPUVET_BENCH_PTX_MEMTEST_H

#include "bench/ptx_asm.h"

/* The value macros, one per mode: out = V of the word at global address ad + w (w "0" or "8");
 * x, y, t scratch b32 registers. */
#define PTX_MT_V0(ad, w, out, x, y, t) "\tmov.b64 " out ", %rd7;\n"
#define PTX_MT_V1(ad, w, out, x, y, t)                                                                                 \
	"\tadd.s64 " out ", " ad ", %rd1;\n"                                                                           \
	"\tadd.s64 " out ", " out ", " w ";\n"                                                                         \
	"\txor.b64 " out ", " out ", %rd7;\n"
#define PTX_MT_V2(ad, w, out, x, y, t)                                                                                 \
	"\tadd.s64 " out ", " ad ", " w ";\n"                                                                          \
	"\tsub.s64 " out ", " out ", %rd2;\n"                                                                          \
	"\tshr.u64 " out ", " out ", 3;\n"                                                                             \
	"\tcvt.u32.u64 " x ", " out ";\n"                                                                              \
	"\tmad.lo.u32 " x ", " x ", -1640531535, %r10;\n" PTX_HASH(x, t) "\txor.b32 " y ", " x ", %r11;\n"             \
		PTX_HASH(y, t) "\tmov.b64 " out ", {" x ", " y "};\n"                                                  \
				"\txor.b64 " out ", " out ", %rd8;\n"
/* X(kernel prefix, mode number, value macro): the modes that have loops (mtpattern.h's MT_MODES) */
#define PTX_MT_MODES(X, K) X(K, 0, PTX_MT_V0) X(K, 1, PTX_MT_V1) X(K, 2, PTX_MT_V2)
/* the dispatch: a branch to the mode's loops, none for an unknown mode */
#define PTX_MT_DISPATCH_(K, m, V) "\tsetp.eq.u32 %p3, %r12, " #m ";\n\t@%p3 bra " K #m "_LOOP4;\n"

#define PTX_MT_REGS_(set) "\t.reg .b64 %" set "<4>;\n"
#define PTX_MT_REGS32_(set) "\t.reg .b32 %" set "<4>;\n"
#define PTX_MT_REGS                                                                                                    \
	"\t.reg .pred %p<8>;\n"                                                                                        \
	"\t.reg .b32 %r<16>;\n"                                                                                        \
	"\t.reg .b64 %rd<24>;\n" PTX_MT_REGS_("ad") PTX_MT_REGS_("ga") PTX_MT_REGS_("gb") PTX_MT_REGS_("ea")         \
		PTX_MT_REGS_("eb") PTX_MT_REGS_("da") PTX_MT_REGS_("db") PTX_MT_REGS_("na") PTX_MT_REGS_("nb")        \
			PTX_MT_REGS32_("xa") PTX_MT_REGS32_("xb") PTX_MT_REGS32_("ya") PTX_MT_REGS32_("yb")            \
				PTX_MT_REGS32_("ta") PTX_MT_REGS32_("tb")

/* Parameters p, n, mode, a, b of kernel K; the grid stride; nv (0 unless p is 16-byte
 * aligned); the generic - global delta. */
#define PTX_MT_HEAD(K)                                                                                                 \
	"\tld.param.u64 %rd1, [" K "_p];\n"                                                                            \
	"\tcvta.to.global.u64 %rd2, %rd1;\n"                                                                           \
	"\tsub.s64 %rd1, %rd1, %rd2;\n"                                                                                \
	"\tld.param.u64 %rd3, [" K "_n];\n"                                                                            \
	"\tld.param.u32 %r12, [" K "_mode];\n"                                                                         \
	"\tld.param.u64 %rd7, [" K "_a];\n"                                                                            \
	"\tld.param.u64 %rd8, [" K "_b];\n"                                                                            \
	"\tmov.b64 {%r10, %r11}, %rd7;\n"                                                                              \
	"\txor.b32 %r11, %r11, 1540483477;\n" PTX_GRID_STRIDE "\tshr.u64 %rd4, %rd3, 1;\n"                             \
	"\tand.b64 %rd14, %rd2, 15;\n"                                                                                 \
	"\tsetp.ne.u64 %p1, %rd14, 0;\n"                                                                               \
	"\tselp.b64 %rd4, 0, %rd4, %p1;\n"
/* the direction from %r13 (0 forward): the first vector's address, the step, the counters */
#define PTX_MT_DIRECTION                                                                                               \
	"\tsetp.ne.u32 %p2, %r13, 0;\n"                                                                                \
	"\tsub.s64 %rd14, %rd4, 1;\n"                                                                                  \
	"\tsub.s64 %rd14, %rd14, %rd5;\n"                                                                              \
	"\tselp.b64 %rd14, %rd14, %rd5, %p2;\n"                                                                        \
	"\tshl.b64 %rd14, %rd14, 4;\n"                                                                                 \
	"\tadd.s64 %rd11, %rd2, %rd14;\n"                                                                              \
	"\tshl.b64 %rd12, %rd6, 4;\n"                                                                                  \
	"\tneg.s64 %rd14, %rd12;\n"                                                                                    \
	"\tselp.b64 %rd12, %rd14, %rd12, %p2;\n"                                                                       \
	"\tmul.lo.s64 %rd15, %rd6, 3;\n"                                                                               \
	"\tsub.s64 %rd15, %rd4, %rd15;\n"                                                                              \
	"\tmov.u64 %rd10, %rd5;\n"
/* After the vectors: the tail's word count %rd19 = n - 2 nv, the address of the thread's first
 * word %rd11 (word 2 nv + t; reverse n - 1 - t) and the step %rd12 (8 S, reverse -8 S), with t
 * and n taken again from their sources rather than kept live across the loops; %rd10 counts t,
 * t + S, ... against the count. */
#define PTX_MT_TAIL_START(K)                                                                                           \
	PTX_GRID_STRIDE "\tld.param.u64 %rd3, [" K "_n];\n"                                                             \
	"\tshl.b64 %rd14, %rd4, 1;\n"                                                                                  \
	"\tsub.s64 %rd19, %rd3, %rd14;\n"                                                                              \
	"\tadd.s64 %rd20, %rd14, %rd5;\n"                                                                              \
	"\tsub.s64 %rd14, %rd3, 1;\n"                                                                                  \
	"\tsub.s64 %rd14, %rd14, %rd5;\n"                                                                              \
	"\tselp.b64 %rd20, %rd14, %rd20, %p2;\n"                                                                       \
	"\tshl.b64 %rd20, %rd20, 3;\n"                                                                                 \
	"\tadd.s64 %rd11, %rd2, %rd20;\n"                                                                              \
	"\tshl.b64 %rd12, %rd6, 3;\n"                                                                                  \
	"\tneg.s64 %rd14, %rd12;\n"                                                                                    \
	"\tselp.b64 %rd12, %rd14, %rd12, %p2;\n"                                                                       \
	"\tmov.u64 %rd10, %rd5;\n"

#define PTX_MT_VALUES(V, J)                                                                                            \
	V("%ad" #J, "0", "%ea" #J, "%xa" #J, "%ya" #J, "%ta" #J)                                                       \
	V("%ad" #J, "8", "%eb" #J, "%xb" #J, "%yb" #J, "%tb" #J)
#define PTX_MT_LOAD(J) "\tld.global.v2.u64 {%ga" #J ", %gb" #J "}, [%ad" #J "];\n"
#define PTX_MT_STORE(J) "\tst.global.v2.u64 [%ad" #J "], {%ea" #J ", %eb" #J "};\n"

/* Loop skeleton of kernel K's mode m: LOOP4 (four vectors a step apart: BODY4), LOOP1 (one:
 * BODY1), TAIL (one word at %ad0: BODYT), then to K_RET; HANDLERS after it, out of the way. */
#define PTX_MT_LOOPS(K, m, BODY4, BODY1, BODYT, HANDLERS)                                                              \
	K #m "_LOOP4:\n"                                                                                               \
	"\tsetp.ge.s64 %p1, %rd10, %rd15;\n"                                                                           \
	"\t@%p1 bra " K #m "_LOOP1;\n"                                                                                 \
	"\tmov.u64 %ad0, %rd11;\n"                                                                                     \
	"\tadd.s64 %ad1, %ad0, %rd12;\n"                                                                               \
	"\tadd.s64 %ad2, %ad1, %rd12;\n"                                                                               \
	"\tadd.s64 %ad3, %ad2, %rd12;\n" BODY4 "\tadd.s64 %rd11, %ad3, %rd12;\n"                                       \
	"\tshl.b64 %rd14, %rd6, 2;\n"                                                                                  \
	"\tadd.s64 %rd10, %rd10, %rd14;\n"                                                                             \
	"\tbra.uni " K #m "_LOOP4;\n" K #m "_LOOP1:\n"                                                                 \
	"\tsetp.ge.s64 %p1, %rd10, %rd4;\n"                                                                            \
	"\t@%p1 bra " K #m "_TAIL0;\n"                                                                                 \
	"\tmov.u64 %ad0, %rd11;\n" BODY1 "\tadd.s64 %rd11, %rd11, %rd12;\n"                                             \
	"\tadd.s64 %rd10, %rd10, %rd6;\n"                                                                              \
	"\tbra.uni " K #m "_LOOP1;\n" K #m "_TAIL0:\n" PTX_MT_TAIL_START(K) K #m "_TAIL:\n"                            \
	"\tsetp.ge.s64 %p1, %rd10, %rd19;\n"                                                                           \
	"\t@%p1 bra " K "_RET;\n"                                                                                      \
	"\tmov.u64 %ad0, %rd11;\n" BODYT "\tadd.s64 %rd11, %rd11, %rd12;\n"                                             \
	"\tadd.s64 %rd10, %rd10, %rd6;\n"                                                                              \
	"\tbra.uni " K #m "_TAIL;\n" HANDLERS

/* ---- gv_mt_fill ---- */
#define PTX_MT_FILL_MODE(K, m, V)                                                                                      \
	PTX_MT_LOOPS(K, m,                                                                                             \
		     PTX_MT_VALUES(V, 0) PTX_MT_STORE(0) PTX_MT_VALUES(V, 1) PTX_MT_STORE(1) PTX_MT_VALUES(V, 2)       \
			     PTX_MT_STORE(2) PTX_MT_VALUES(V, 3) PTX_MT_STORE(3),                                      \
		     PTX_MT_VALUES(V, 0) PTX_MT_STORE(0),                                                              \
		     V("%ad0", "0", "%ea0", "%xa0", "%ya0", "%ta0") "\tst.global.u64 [%ad0], %ea0;\n", "")

/* ---- gv_mt_check ---- */
/* err[0] += 1; the first to swap err[1] from all ones to idx also writes got and want (label L
 * ends it). Rare, so err (the u64 parameter E) and all ones are loaded here rather than kept in
 * registers across the loops. */
#define PTX_MT_RECORD(E, idx, got, want, L)                                                                            \
	PTX_PTR("%rd17", E)                                                                                            \
	"\tmov.u64 %rd18, -1;\n"                                                                                       \
	"\tred.global.add.u64 [%rd17], 1;\n"                                                                           \
	"\tatom.global.cas.b64 %rd14, [%rd17+8], %rd18, " idx ";\n"                                                    \
	"\tsetp.ne.u64 %p7, %rd14, %rd18;\n"                                                                           \
	"\t@%p7 bra " L ";\n"                                                                                          \
	"\tst.global.u64 [%rd17+16], " got ";\n"                                                                       \
	"\tst.global.u64 [%rd17+24], " want ";\n" L ":\n"
/* vector J of a loop tagged T: compare both words with V (one branch, to the handler, when
 * either differs); then, with rewrite, store ~V */
#define PTX_MT_COMPARE(K, m, T, J)                                                                                     \
	"\txor.b64 %da" #J ", %ga" #J ", %ea" #J ";\n"                                                                 \
	"\txor.b64 %db" #J ", %gb" #J ", %eb" #J ";\n"                                                                 \
	"\tor.b64 %da" #J ", %da" #J ", %db" #J ";\n"                                                                  \
	"\tsetp.ne.u64 %p4, %da" #J ", 0;\n"                                                                           \
	"\t@%p4 bra " K #m "_BAD" T #J ";\n" K #m "_OK" T #J ":\n"                                                    \
	"\t@%p5 not.b64 %na" #J ", %ea" #J ";\n"                                                                       \
	"\t@%p5 not.b64 %nb" #J ", %eb" #J ";\n"                                                                       \
	"\t@%p5 st.global.v2.u64 [%ad" #J "], {%na" #J ", %nb" #J "};\n"
/* its handler: records the words that differ (index (address - p) / 8), back to the compare's
 * end */
#define PTX_MT_BAD(K, m, T, J)                                                                                         \
	K #m "_BAD" T #J ":\n"                                                                                         \
	"\tsub.s64 %rd21, %ad" #J ", %rd2;\n"                                                                          \
	"\tshr.u64 %rd21, %rd21, 3;\n"                                                                                 \
	"\tadd.s64 %rd22, %rd21, 1;\n"                                                                                 \
	"\tsetp.eq.u64 %p6, %ga" #J ", %ea" #J ";\n"                                                                   \
	"\t@%p6 bra " K #m "_BAD" T #J "B;\n" PTX_MT_RECORD("mtc_err", "%rd21", "%ga" #J, "%ea" #J, K #m "_BAD" T #J "A") \
		K #m "_BAD" T #J "B:\n"                                                                                \
	"\tsetp.eq.u64 %p6, %gb" #J ", %eb" #J ";\n"                                                                   \
	"\t@%p6 bra " K #m "_OK" T #J ";\n" PTX_MT_RECORD("mtc_err", "%rd22", "%gb" #J, "%eb" #J, K #m "_BAD" T #J "C") \
	"\tbra.uni " K #m "_OK" T #J ";\n"
#define PTX_MT_CHECK_TAIL(K, m, V)                                                                                     \
	"\tld.global.u64 %ga0, [%ad0];\n" V("%ad0", "0", "%ea0", "%xa0", "%ya0", "%ta0")                               \
	"\tsetp.ne.u64 %p4, %ga0, %ea0;\n"                                                                             \
	"\t@%p4 bra " K #m "_BADT;\n" K #m "_OKT:\n"                                                                   \
	"\t@%p5 not.b64 %na0, %ea0;\n"                                                                                 \
	"\t@%p5 st.global.u64 [%ad0], %na0;\n"
#define PTX_MT_BAD_TAIL(K, m)                                                                                          \
	K #m "_BADT:\n"                                                                                                \
	"\tsub.s64 %rd21, %ad0, %rd2;\n"                                                                               \
	"\tshr.u64 %rd21, %rd21, 3;\n" PTX_MT_RECORD("mtc_err", "%rd21", "%ga0", "%ea0", K #m "_BADTA")                \
	"\tbra.uni " K #m "_OKT;\n"
#define PTX_MT_CHECK_MODE(K, m, V)                                                                                     \
	PTX_MT_LOOPS(K, m,                                                                                             \
		     PTX_MT_LOAD(0) PTX_MT_LOAD(1) PTX_MT_LOAD(2) PTX_MT_LOAD(3) PTX_MT_VALUES(V, 0)                   \
			     PTX_MT_COMPARE(K, m, "4", 0) PTX_MT_VALUES(V, 1) PTX_MT_COMPARE(K, m, "4", 1)             \
				     PTX_MT_VALUES(V, 2) PTX_MT_COMPARE(K, m, "4", 2) PTX_MT_VALUES(V, 3)              \
					     PTX_MT_COMPARE(K, m, "4", 3),                                             \
		     PTX_MT_LOAD(0) PTX_MT_VALUES(V, 0) PTX_MT_COMPARE(K, m, "1", 0), PTX_MT_CHECK_TAIL(K, m, V),      \
		     PTX_MT_BAD(K, m, "4", 0) PTX_MT_BAD(K, m, "4", 1) PTX_MT_BAD(K, m, "4", 2)                        \
			     PTX_MT_BAD(K, m, "4", 3) PTX_MT_BAD(K, m, "1", 0) PTX_MT_BAD_TAIL(K, m))

/* ---- gv_cmp_b32 ---- */
/* Vector J: the four lanes of x (%cxJ_0..3) and y (%cyJ_), their XOR (%cdJ_); a lane's handler
 * records index 4 v + lane with both values widened to u64. */
#define PTX_CMP_REGS_(J)                                                                                               \
	"\t.reg .b32 %cx" #J "_<4>;\n"                                                                                 \
	"\t.reg .b32 %cy" #J "_<4>;\n"                                                                                 \
	"\t.reg .b32 %cd" #J "_<4>;\n"
#define PTX_CMP_REGS                                                                                                   \
	"\t.reg .pred %p<8>;\n"                                                                                        \
	"\t.reg .b32 %r<16>;\n"                                                                                        \
	"\t.reg .b64 %rd<32>;\n" PTX_MT_REGS_("vi") PTX_MT_REGS_("ax") PTX_MT_REGS_("ay")                            \
		PTX_CMP_REGS_(0) PTX_CMP_REGS_(1) PTX_CMP_REGS_(2) PTX_CMP_REGS_(3) "\t.reg .b32 %co<4>;\n"
#define PTX_CMP_LANES_(r, J) r #J "_0, " r #J "_1, " r #J "_2, " r #J "_3"
#define PTX_CMP_ADDR(J)                                                                                                \
	"\tshl.b64 %ax" #J ", %vi" #J ", 4;\n"                                                                         \
	"\tadd.s64 %ay" #J ", %rd2, %ax" #J ";\n"                                                                      \
	"\tadd.s64 %ax" #J ", %rd1, %ax" #J ";\n"
#define PTX_CMP_LOAD(J)                                                                                                \
	"\tld.global.v4.u32 {" PTX_CMP_LANES_("%cx", J) "}, [%ax" #J "];\n"                                           \
	"\tld.global.v4.u32 {" PTX_CMP_LANES_("%cy", J) "}, [%ay" #J "];\n"
#define PTX_CMP_XOR(J, k) "\txor.b32 %cd" #J "_" #k ", %cx" #J "_" #k ", %cy" #J "_" #k ";\n"
#define PTX_CMP_COMPARE(T, J)                                                                                          \
	PTX_CMP_XOR(J, 0) PTX_CMP_XOR(J, 1) PTX_CMP_XOR(J, 2) PTX_CMP_XOR(J, 3)                                       \
	"\tor.b32 %co" #J ", %cd" #J "_0, %cd" #J "_1;\n"                                                              \
	"\tor.b32 %co" #J ", %co" #J ", %cd" #J "_2;\n"                                                                \
	"\tor.b32 %co" #J ", %co" #J ", %cd" #J "_3;\n"                                                                \
	"\tsetp.ne.u32 %p4, %co" #J ", 0;\n"                                                                           \
	"\t@%p4 bra CMP_BAD" T #J ";\n"                                                                                \
	"CMP_OK" T #J ":\n"
/* lane k of vector J: when it differs, record 4 %viJ + k, x and y */
#define PTX_CMP_LANE(T, J, k)                                                                                          \
	"\tsetp.eq.u32 %p6, %cd" #J "_" #k ", 0;\n"                                                                    \
	"\t@%p6 bra CMP_BAD" T #J "_" #k ";\n"                                                                         \
	"\tshl.b64 %rd21, %vi" #J ", 2;\n"                                                                             \
	"\tadd.s64 %rd21, %rd21, " #k ";\n"                                                                            \
	"\tcvt.u64.u32 %rd22, %cx" #J "_" #k ";\n"                                                                     \
	"\tcvt.u64.u32 %rd23, %cy" #J "_" #k ";\n" PTX_MT_RECORD("cmp_err", "%rd21", "%rd22", "%rd23", "CMP_BAD" T #J "_" #k)
#define PTX_CMP_BAD(T, J)                                                                                              \
	"CMP_BAD" T #J ":\n" PTX_CMP_LANE(T, J, 0) PTX_CMP_LANE(T, J, 1) PTX_CMP_LANE(T, J, 2) PTX_CMP_LANE(T, J, 3)  \
	"\tbra.uni CMP_OK" T #J ";\n"

#define PTX_MEMTEST_KERNELS                                                                                            \
	".visible .entry gv_mt_fill(\n"                                                                                \
	"\t.param .u64 mtf_p,\n"                                                                                       \
	"\t.param .u64 mtf_n,\n"                                                                                       \
	"\t.param .u32 mtf_mode,\n"                                                                                    \
	"\t.param .u64 mtf_a,\n"                                                                                       \
	"\t.param .u64 mtf_b\n"                                                                                        \
	")\n"                                                                                                          \
	"{\n" PTX_MT_REGS PTX_MT_HEAD("mtf") "\tmov.u32 %r13, 0;\n" PTX_MT_DIRECTION                                   \
		PTX_MT_MODES(PTX_MT_DISPATCH_, "mtf") "\tbra.uni mtf_RET;\n" PTX_MT_MODES(PTX_MT_FILL_MODE, "mtf")     \
			"mtf_RET:\n"                                                                                   \
	"\tret;\n"                                                                                                     \
	"}\n"                                                                                                          \
	"\n"                                                                                                           \
	".visible .entry gv_mt_check(\n"                                                                               \
	"\t.param .u64 mtc_p,\n"                                                                                       \
	"\t.param .u64 mtc_n,\n"                                                                                       \
	"\t.param .u32 mtc_mode,\n"                                                                                    \
	"\t.param .u64 mtc_a,\n"                                                                                       \
	"\t.param .u64 mtc_b,\n"                                                                                       \
	"\t.param .u64 mtc_err,\n"                                                                                     \
	"\t.param .u32 mtc_rewrite,\n"                                                                                 \
	"\t.param .u32 mtc_reverse\n"                                                                                  \
	")\n"                                                                                                          \
	/* at most 256 threads a block and 4 blocks an SM: ptxas keeps it to 64 registers (no spill \
	 * on sm_75-sm_90 with CUDA 13's ptxas), so 1024 threads an SM keep their loads in flight */ \
	".maxntid 256, 1, 1\n"                                                                                         \
	".minnctapersm 4\n"                                                                                            \
	"{\n" PTX_MT_REGS PTX_MT_HEAD("mtc")                                                                            \
	"\tld.param.u32 %r14, [mtc_rewrite];\n"                                                                        \
	"\tsetp.ne.u32 %p5, %r14, 0;\n"                                                                                \
	"\tld.param.u32 %r13, [mtc_reverse];\n" PTX_MT_DIRECTION PTX_MT_MODES(PTX_MT_DISPATCH_, "mtc")                \
	"\tbra.uni mtc_RET;\n" PTX_MT_MODES(PTX_MT_CHECK_MODE, "mtc") "mtc_RET:\n"                                    \
	"\tret;\n"                                                                                                     \
	"}\n"                                                                                                          \
	"\n"                                                                                                           \
	".visible .entry gv_cmp_b32(\n"                                                                                \
	"\t.param .u64 cmp_x,\n"                                                                                       \
	"\t.param .u64 cmp_y,\n"                                                                                       \
	"\t.param .u64 cmp_n,\n"                                                                                       \
	"\t.param .u64 cmp_err\n"                                                                                      \
	")\n"                                                                                                          \
	"{\n" PTX_CMP_REGS PTX_PTR("%rd1", "cmp_x") PTX_PTR("%rd2", "cmp_y") "\tld.param.u64 %rd3, [cmp_n];\n"        \
		PTX_GRID_STRIDE                                                                                        \
	/* vectors of four words only when x and y are both 16-byte aligned */                                     \
	"\tshr.u64 %rd4, %rd3, 2;\n"                                                                                   \
	"\tor.b64 %rd14, %rd1, %rd2;\n"                                                                                \
	"\tand.b64 %rd14, %rd14, 15;\n"                                                                                \
	"\tsetp.ne.u64 %p1, %rd14, 0;\n"                                                                               \
	"\tselp.b64 %rd4, 0, %rd4, %p1;\n"                                                                             \
	"\tmul.lo.s64 %rd15, %rd6, 3;\n"                                                                               \
	"\tshl.b64 %rd16, %rd6, 2;\n"                                                                                  \
	"\tmov.u64 %rd10, %rd5;\n"                                                                                     \
	"CMP_LOOP4:\n"                                                                                                 \
	"\tadd.s64 %rd14, %rd10, %rd15;\n"                                                                             \
	"\tsetp.ge.u64 %p1, %rd14, %rd4;\n"                                                                            \
	"\t@%p1 bra CMP_LOOP1;\n"                                                                                      \
	"\tmov.u64 %vi0, %rd10;\n"                                                                                     \
	"\tadd.s64 %vi1, %vi0, %rd6;\n"                                                                                \
	"\tadd.s64 %vi2, %vi1, %rd6;\n"                                                                                \
	"\tadd.s64 %vi3, %vi2, %rd6;\n" PTX_CMP_ADDR(0) PTX_CMP_ADDR(1) PTX_CMP_ADDR(2) PTX_CMP_ADDR(3)                \
		PTX_CMP_LOAD(0) PTX_CMP_LOAD(1) PTX_CMP_LOAD(2) PTX_CMP_LOAD(3) PTX_CMP_COMPARE("4", 0)                \
			PTX_CMP_COMPARE("4", 1) PTX_CMP_COMPARE("4", 2) PTX_CMP_COMPARE("4", 3)                        \
	"\tadd.s64 %rd10, %rd10, %rd16;\n"                                                                             \
	"\tbra.uni CMP_LOOP4;\n"                                                                                       \
	"CMP_LOOP1:\n"                                                                                                 \
	"\tsetp.ge.u64 %p1, %rd10, %rd4;\n"                                                                            \
	"\t@%p1 bra CMP_TAIL0;\n"                                                                                      \
	"\tmov.u64 %vi0, %rd10;\n" PTX_CMP_ADDR(0) PTX_CMP_LOAD(0) PTX_CMP_COMPARE("1", 0)                             \
	"\tadd.s64 %rd10, %rd10, %rd6;\n"                                                                              \
	"\tbra.uni CMP_LOOP1;\n"                                                                                       \
	/* the words after the last vector, one at a time: word 4 nv + t, then S apart */                           \
	"CMP_TAIL0:\n"                                                                                                 \
	"\tshl.b64 %rd20, %rd4, 2;\n"                                                                                  \
	"\tadd.s64 %rd20, %rd20, %rd5;\n"                                                                              \
	"CMP_TAIL:\n"                                                                                                  \
	"\tsetp.ge.u64 %p1, %rd20, %rd3;\n"                                                                            \
	"\t@%p1 bra CMP_RET;\n"                                                                                        \
	"\tshl.b64 %rd21, %rd20, 2;\n"                                                                                 \
	"\tadd.s64 %ax0, %rd1, %rd21;\n"                                                                               \
	"\tadd.s64 %ay0, %rd2, %rd21;\n"                                                                               \
	"\tld.global.u32 %cx0_0, [%ax0];\n"                                                                            \
	"\tld.global.u32 %cy0_0, [%ay0];\n"                                                                            \
	"\tsetp.eq.u32 %p4, %cx0_0, %cy0_0;\n"                                                                         \
	"\t@%p4 bra CMP_OKT;\n"                                                                                        \
	"\tcvt.u64.u32 %rd22, %cx0_0;\n"                                                                               \
	"\tcvt.u64.u32 %rd23, %cy0_0;\n" PTX_MT_RECORD("cmp_err", "%rd20", "%rd22", "%rd23", "CMP_OKT")                          \
	"\tadd.s64 %rd20, %rd20, %rd6;\n"                                                                              \
	"\tbra.uni CMP_TAIL;\n" PTX_CMP_BAD("4", 0) PTX_CMP_BAD("4", 1) PTX_CMP_BAD("4", 2) PTX_CMP_BAD("4", 3)        \
		PTX_CMP_BAD("1", 0) "CMP_RET:\n"                                                                       \
	"\tret;\n"                                                                                                     \
	"}\n"

/* the rows of ptx_bench_kernels for them, in the order of the text */
#define PTX_MEMTEST_TABLE                                                                                              \
	{"gv_mt_fill", "u64 u64 u32 u64 u64"}, {"gv_mt_check", "u64 u64 u32 u64 u64 u64 u32 u32"},                    \
		{"gv_cmp_b32", "u64 u64 u64 u64"},
#endif
