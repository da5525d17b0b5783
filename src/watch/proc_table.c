/* The live view's process table (watch/proc_table.h). */
#include "watch/proc_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "watch/view.h"

static double num_unknown(sval v)
{
	return sv_has(v) ? v.v : NAN;
}

static double gpu_num(const proc_row *r)
{
	return r->gpu;
}

static double pid_num(const proc_row *r)
{
	return r->p->pid;
}

static double sm_num(const proc_row *r)
{
	return num_unknown(r->p->sm_util);
}

static double cpu_num(const proc_row *r)
{
	return r->cpu;
}

static double mem_num(const proc_row *r)
{
	return num_unknown(r->p->used_bytes);
}

static const char *user_text(const proc_row *r, char *buf, size_t size)
{
	(void)buf;
	(void)size;
	return r->p->user;
}

static const char *type_text(const proc_row *r, char *buf, size_t size)
{
	(void)buf;
	(void)size;
	return r->p->type;
}

static const char *owner_cell(const proc_row *r, char *buf, size_t size)
{
	if (r->p->owner.kind == OWNER_NONE)
		return "";
	return owner_text(&r->p->owner, buf, size);
}

/* The command line; the name where /proc gave none (another PID namespace: NVML's name). */
static const char *command_text(const proc_row *r, char *buf, size_t size)
{
	(void)buf;
	(void)size;
	return r->p->cmdline[0] ? r->p->cmdline : r->p->name;
}

const proc_col proc_cols[PC_N] = {
	[PC_GPU] = {.head = "GPU", .what = "GPU index", .width = 4, .priority = 6, .right = true, .num = gpu_num},
	[PC_PID] = {.head = "PID", .what = "process id", .width = 7, .priority = 9, .right = true, .num = pid_num},
	[PC_USER] = {.head = "USER", .what = "the process's user", .width = 9, .priority = 4, .text = user_text},
	[PC_TYPE] = {.head = "TYPE", .what = "compute or graphics", .width = 8, .priority = 1, .text = type_text},
	[PC_SM] = {.head = "%SM",
		   .what = "its share of the GPU's SM time",
		   .width = 4,
		   .priority = 5,
		   .right = true,
		   .descending = true,
		   .num = sm_num},
	[PC_CPU] = {.head = "%CPU",
		    .what = "CPU use, 100 a core",
		    .width = 5,
		    .priority = 3,
		    .right = true,
		    .descending = true,
		    .num = cpu_num},
	[PC_MEM] = {.head = "GPU-MEM",
		    .what = "GPU memory it holds",
		    .width = 9,
		    .priority = 8,
		    .right = true,
		    .descending = true,
		    .num = mem_num},
	[PC_OWNER] = {.head = "POD / JOB",
		      .what = "the pod, Slurm job or container",
		      .width = 24,
		      .priority = 2,
		      .when_any = true,
		      .text = owner_cell},
	[PC_COMMAND] = {.head = "COMMAND", .what = "command line", .width = 12, .priority = 7, .flex = true, .text = command_text},
};

double proc_cpu_percent(const snapshot *prev, const snapshot *cur, unsigned pid, sval cpu_seconds)
{
	if (!prev || !cur || !sv_has(cpu_seconds) || cur->time <= prev->time)
		return NAN;
	for (int i = 0; i < prev->ngpus; i++) {
		const gpu_sample *g = &prev->gpus[i];
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			if (p->pid != pid || !sv_has(p->cpu_seconds))
				continue;
			double d = cpu_seconds.v - p->cpu_seconds.v;
			/* less CPU time than before: the pid is another process now */
			return d < 0 ? NAN : d / (cur->time - prev->time) * 100;
		}
	}
	return NAN;
}

size_t proc_rows(const snapshot *s, const snapshot *prev, int gpu, const job *j, proc_row **out)
{
	size_t np = 0, n = 0;
	for (int i = 0; s && i < s->ngpus; i++)
		np += s->gpus[i].nproc;
	*out = np ? xmalloc(np * sizeof(**out)) : NULL;
	for (int i = 0; s && i < s->ngpus; i++) {
		const gpu_sample *g = &s->gpus[i];
		if (gpu >= 0 && g->index != gpu)
			continue;
		for (size_t k = 0; k < g->nproc; k++) {
			const gpu_process *p = &g->procs[k];
			if (j && !job_has(j, p->pid))
				continue;
			(*out)[n++] = (proc_row){.gpu = g->index, .p = p, .cpu = proc_cpu_percent(prev, s, p->pid, p->cpu_seconds)};
		}
	}
	return n;
}

/* <0, 0, >0 for a against b in column col's ascending order; unknown after known, whatever the
 * direction (dir flips the known ones only). */
static int cmp_rows(const proc_row *a, const proc_row *b, proc_col_id col, int dir)
{
	const proc_col *c = &proc_cols[col];
	int r = 0;
	if (c->num) {
		double x = c->num(a), y = c->num(b);
		if (isnan(x) || isnan(y))
			r = isnan(x) - isnan(y);
		else if (x != y)
			r = dir * (x < y ? -1 : 1);
	} else {
		char bx[320], by[320];
		const char *x = c->text(a, bx, sizeof(bx)), *y = c->text(b, by, sizeof(by));
		if (!x[0] || !y[0])
			r = !x[0] - !y[0];
		else
			r = dir * strcmp(x, y);
	}
	if (r)
		return r;
	if (a->gpu != b->gpu)
		return a->gpu < b->gpu ? -1 : 1;
	return a->p->pid < b->p->pid ? -1 : a->p->pid > b->p->pid;
}

void proc_sort(proc_row *rows, size_t n, proc_col_id col, bool descending)
{
	/* insertion sort: stable, and the comparison needs the column (C11's qsort has no context
	 * argument); a snapshot holds at most SNAP_MAX_PROCS per GPU */
	int dir = descending ? -1 : 1;
	for (size_t i = 1; i < n; i++) {
		proc_row v = rows[i];
		size_t k = i;
		while (k > 0 && cmp_rows(&v, &rows[k - 1], col, dir) < 0) {
			rows[k] = rows[k - 1];
			k--;
		}
		rows[k] = v;
	}
}

static bool has_value(proc_col_id col, const proc_row *r)
{
	const proc_col *c = &proc_cols[col];
	if (c->num)
		return !isnan(c->num(r));
	char buf[320];
	return c->text(r, buf, sizeof(buf))[0] != '\0';
}

int proc_fit(const proc_row *rows, size_t n, int cols, int width[PC_N])
{
	int room = cols - 1; /* the last column stays empty (watch/frame.h) */
	int total = -1;      /* n columns have n - 1 gaps */
	for (int i = 0; i < PC_N; i++) {
		bool shown = !proc_cols[i].when_any;
		for (size_t k = 0; k < n && !shown; k++)
			shown = has_value((proc_col_id)i, &rows[k]);
		width[i] = shown ? proc_cols[i].width : 0;
		total += shown ? width[i] + 1 : 0;
	}
	while (total > room) {
		int low = -1;
		for (int i = 0; i < PC_N; i++)
			if (width[i] && (low < 0 || proc_cols[i].priority < proc_cols[low].priority))
				low = i;
		if (low < 0 || low == PC_PID)
			break; /* the pid alone, cut at the edge */
		total -= width[low] + 1;
		width[low] = 0;
	}
	for (int i = 0; i < PC_N; i++)
		if (proc_cols[i].flex && width[i] && total < room) {
			width[i] += room - total;
			total = room;
		}
	return total;
}

const char *proc_cell(proc_col_id col, const proc_row *r, char *buf, size_t size)
{
	const proc_col *c = &proc_cols[col];
	if (col == PC_MEM)
		return fmt_bytes(buf, size, r->p->used_bytes);
	if (c->num) {
		double v = c->num(r);
		if (isnan(v))
			str_copy(buf, size, "n/a");
		else
			snprintf(buf, size, "%.0f", v);
		return buf;
	}
	const char *t = c->text(r, buf, size);
	if (t != buf)
		str_copy(buf, size, t[0] ? t : "-");
	else if (!buf[0])
		str_copy(buf, size, "-");
	return buf;
}
