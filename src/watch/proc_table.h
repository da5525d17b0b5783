/*
 * The live view's process table: one table of columns (header, width, priority, sort key, cell)
 * drives the header, the widths that fit the terminal, the sort and every row.
 *
 * Columns have a priority: on a narrow terminal the lowest go first, and the command takes
 * the width that is left. A column whose every row is empty (POD / JOB on a machine without
 * pods, Slurm or containers) is left out. %CPU is the process's CPU time between the last two
 * snapshots over the time between them (100 is one core), as top and nvitop show it.
 */
#ifndef GPUVET_WATCH_PROC_TABLE_H
#define GPUVET_WATCH_PROC_TABLE_H
#include <stdbool.h>
#include <stddef.h>

#include "sampler/job.h"
#include "sampler/snapshot.h"

typedef enum {
	PC_GPU,
	PC_PID,
	PC_USER,
	PC_TYPE,
	PC_SM,
	PC_CPU,
	PC_MEM,
	PC_OWNER,
	PC_COMMAND,
	PC_N
} proc_col_id;

typedef struct proc_row {
	int gpu;
	const gpu_process *p;
	double cpu; /* percent of one core; NAN unknown */
} proc_row;

typedef struct proc_col {
	const char *head;   /* "GPU-MEM" */
	const char *what;   /* "GPU memory", for the help and the docs */
	int width;          /* cells; the command's least width (it takes the rest) */
	int priority;       /* higher stays longer on a narrow terminal */
	bool right;         /* numbers: right-aligned */
	bool descending;    /* the order the column sorts in first: amounts biggest first, names A-Z */
	bool flex;          /* takes the width the others leave (the command) */
	bool when_any;      /* shown only when some row has a value */
	/* the sort key: a number (NAN: unknown, always last) or, where num is NULL, text */
	double (*num)(const proc_row *r);
	const char *(*text)(const proc_row *r, char *buf, size_t size);
} proc_col;

extern const proc_col proc_cols[PC_N];

/* The rows of a snapshot: every process of every GPU (of GPU gpu alone when gpu >= 0, of the
 * job alone when j), its %CPU from prev (NULL: unknown). Returns the count; *out is malloc'd. */
size_t proc_rows(const snapshot *s, const snapshot *prev, int gpu, const job *j, proc_row **out);
/* The CPU percent of process pid between two snapshots; NAN when either lacks it. Pure. */
double proc_cpu_percent(const snapshot *prev, const snapshot *cur, unsigned pid, sval cpu_seconds);
/* Sorts rows by column col (descending or not); ties by GPU, then pid. Unknown values last. */
void proc_sort(proc_row *rows, size_t n, proc_col_id col, bool descending);
/* The width of each column for a terminal of cols cells (0: left out), the command the rest.
 * Returns the total width used. */
int proc_fit(const proc_row *rows, size_t n, int cols, int width[PC_N]);
/* A column's cell text for a row (not padded). */
const char *proc_cell(proc_col_id col, const proc_row *r, char *buf, size_t size);
#endif
