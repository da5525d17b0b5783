/*
 * The knowledge base: compatibility tables and GPU specs, as CSV files under data/, compiled
 * into the binary; `--kb DIR` replaces any table with DIR/<name>.csv.
 *
 * Tables (see data/SOURCES.md for columns and sources): cuda_driver, cuda_arch, cudnn_cuda,
 * gpu_cc, gpu_peaks, arch_rates, torch_cuda, torch_cudnn, plus tables added by modules.
 */
#ifndef GPUVET_KB_H
#define GPUVET_KB_H
#include <stdbool.h>
#include <stddef.h>

#include "kb/csv.h"

typedef struct kb kb;

/* Loads the embedded tables, then overrides from dir (may be NULL). Returns NULL and *err when
 * dir is given but unreadable, or one of its CSV files cannot be read, is over 64 MiB, does not
 * parse (the message names the file, line and column), has no rows, or lacks a column of the
 * built-in table it replaces. A built-in table is parsed when kb_table first asks for it; one
 * that does not parse (a broken build) ends the program with status 3 there. */
kb *kb_load(const char *dir, char **err);
/* Parses every built-in table not yet parsed; false with *err naming the first that does not
 * (what a broken build would meet later, for the tests). */
bool kb_verify(const kb *k, char **err);
/* Parses every built-in table not yet parsed, each under kb_table's lock alone: check runs it
 * beside the probes, so that the rules find their tables ready (diagnose/diagnose.c). */
void kb_warm(const kb *k);
/* What is derived from the tables and asked for by many rules, made once per knowledge base:
 * kb_memo returns it (made by `make` the first time, under a lock of its own; kb_warm makes each
 * beside the probes), kept until kb_free. *n is its count of elements. */
typedef enum { KB_MEMO_TORCH_BUILDS, KB_MEMO_COUNT } kb_memo_slot;
const void *kb_memo(const kb *k, kb_memo_slot slot, size_t *n);
/* kb_load, and on failure *exit_code: 2 (usage: the --kb files) or 3 (internal: built-in data). */
kb *kb_load_checked(const char *dir, char **err, int *exit_code);
void kb_free(kb *k);
/* name without ".csv"; NULL when the table is unknown */
const csv_table *kb_table(const kb *k, const char *name);
/* The process-wide knowledge base set by the command line (kb_load'ed once). */
void kb_set_global(kb *k);
const kb *kb_global(void);

/* Minimum Linux driver for a CUDA toolkit/runtime version "12.4" (the toolkit's own driver and
 * the minor-version-compatibility floor). Returns false when the KB does not know it. */
bool kb_cuda_min_driver(const kb *k, const char *cuda_version, char *toolkit_min, size_t n1, char *compat_min,
			size_t n2);
/* Maximum CUDA version a driver supports: from the driver version "580.95.05" -> "13.0". */
bool kb_driver_max_cuda(const kb *k, const char *driver_version, char *out, size_t n);
/* Compute capability "9.0" for a GPU name as NVML reports it; false when unknown. */
bool kb_gpu_cc(const kb *k, const char *gpu_name, char *out, size_t n);
/* A column of data/gpu_cc.csv for a GPU name: the row whose gpu_name_pattern is the longest
 * contained in the name (case-insensitive) and whose cell is not empty; NULL when none. */
const char *kb_gpu_column(const kb *k, const char *gpu_name, const char *column);
/* An embedded data file by name ("probe_torch.py"): its bytes (NUL-terminated) or NULL. */
const char *kb_blob(const char *filename, size_t *len);
#endif
