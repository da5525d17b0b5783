/*
 * A GEMM made once and run at will, outside bench's timing loop (gpuvet diag: a short verified
 * GEMM, a sustained one whose every output is compared with a golden copy, one that holds the
 * board at its power limit). The same path as bench's figures (gemm_run.h): inputs generated on
 * the GPU from fixed seeds, the heuristic's algorithm, sampled verification against the CPU.
 *
 * Every run of a plan computes the same D bit for bit (the golden compare needs it): the plan
 * keeps one algorithm and asks the heuristic only for algorithms whose split-K reduction, if any,
 * sums in a fixed order (gemm_plan.c says which). A plan has its own cuBLASLt handle, stream,
 * events, buffers and workspace, so two plans (on one device or on several) run side by side;
 * plans are used from one thread, and freed before bench_gemm_cleanup unloads cuBLASLt.
 */
#ifndef GPUVET_BENCH_GEMM_PLAN_H
#define GPUVET_BENCH_GEMM_PLAN_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/bench.h"
#include "bench/verify.h"
#include "nvidia/cuda.h"

typedef struct gemm_plan gemm_plan;

/* n x n GEMM of dtype on CUDA device `ordinal` of c->gpu: allocates and fills A and B from fixed
 * seeds (gen.h), D and the workspace; makes the descriptors; picks the first heuristic algorithm
 * that runs (it ran once: D holds a result). n is reduced to fit the free memory as bench does
 * (gemm_plan_n says the n used). NULL with why. c->r may be NULL (no facts about cuBLASLt). */
gemm_plan *gemm_plan_new(bench_ctx *c, int ordinal, bench_dtype dt, int n, char *why, size_t whyn);
/* Optional, before any golden copy is taken (another algorithm may round differently): times the
 * plan's algorithm and the next few heuristic answers and keeps the fastest, as bench does. False
 * with why when the GEMMs failed. */
bool gemm_plan_pick_fastest(gemm_plan *p, char *why, size_t whyn);
/* Enqueues `iters` GEMMs on the plan's stream, no wait. False with why. */
bool gemm_plan_enqueue(gemm_plan *p, int iters, char *why, size_t whyn);
/* Waits for everything enqueued on the plan's stream. False with why (a failed GEMM shows here). */
bool gemm_plan_sync(gemm_plan *p, char *why, size_t whyn);
/* Event-timed: runs `iters` GEMMs back to back and returns milliseconds per GEMM (< 0 with why). */
double gemm_plan_time(gemm_plan *p, int iters, char *why, size_t whyn);
/* Sampled CPU verification of the current D, as bench's: waits for the stream, checks that A and B
 * still hold the generated inputs, then judges `rows` x `cols` sampled elements (rows and columns
 * 0 and n-1 always among them) into vr. True when every sampled element matched. text says the
 * result (verify_describe), or why nothing was checked (vr->checked is 0 then). */
bool gemm_plan_verify(gemm_plan *p, size_t rows, size_t cols, verify_result *vr, char *text, size_t textn);
/* The CPU reference and allowed error of element (i, j) of D, for evidence when an element
 * differs (row i, column j; D is column-major: element (i, j) is at byte (i + j n) x elem_bytes). */
void gemm_plan_reference(const gemm_plan *p, int64_t i, int64_t j, double *ref, double *allowed);
/* D decoded: element (i, j) of a copy of D's bytes (host memory), as the GEMM's output type. */
double gemm_plan_decode(const gemm_plan *p, const void *d_bytes, int64_t i, int64_t j);

CUdeviceptr gemm_plan_d(const gemm_plan *p);       /* D on the device */
size_t gemm_plan_d_bytes(const gemm_plan *p);      /* n x n x elem_bytes */
int gemm_plan_elem_bytes(const gemm_plan *p);      /* of one element of D (the output type) */
int gemm_plan_n(const gemm_plan *p);
bench_dtype gemm_plan_dtype(const gemm_plan *p);
int gemm_plan_ordinal(const gemm_plan *p);
double gemm_plan_tflop(const gemm_plan *p);        /* 2 n^3 / 1e12: TFLOP (TOP for int8) per GEMM */
CUstream gemm_plan_stream(const gemm_plan *p);
/* fp8: the way of calling cuBLASLt that ran (gemm_fp8_variants); NULL for other types */
const char *gemm_plan_call(const gemm_plan *p);

/* Frees what the plan holds (NULL is fine). */
void gemm_plan_free(gemm_plan *p);
#endif
