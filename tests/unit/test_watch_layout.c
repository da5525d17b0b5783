/* Unit tests of the live view without a terminal: the layout at 80x24, 200x60 and 60x20 (rows of
 * text from the terminal size and the samples), the process table's columns, widths and sort,
 * the key table behind the keys, the help and the footer, and %CPU between two snapshots. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <curses.h> /* key codes */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "health/health.h"
#include "sampler/jobcpu.h"
#include "sampler/snapshot.h"
#include "watch/frame.h"
#include "watch/keys.h"
#include "watch/layout.h"
#include "watch/proc_table.h"
#include "watch/view.h"

/* n GPUs; GPU i holds processes pid 1000*(i+1)+k, k < per, each with its own memory, SM share,
 * user and CPU time, so that every sort gives another order. */
static snapshot *machine(int n, int per, double t, double cpu_scale)
{
	snapshot *s = snapshot_new(n);
	s->time = t;
	s->wall_time = 1.7e9 + t;
	str_copy(s->driver_version, sizeof(s->driver_version), "580.159.04");
	static const char *const users[] = {"alice", "bob", "carol", "dave"};
	for (int i = 0; i < n; i++) {
		gpu_sample *g = &s->gpus[i];
		g->index = i;
		str_copy(g->name, sizeof(g->name), "NVIDIA H200");
		g->util_gpu = sv_ok(10 * i + 5);
		g->mem_total = sv_ok(150754820096.0);
		g->mem_used = sv_ok(1073741824.0 * (i + 1));
		g->temp = sv_ok(40);
		g->power = sv_ok(300);
		g->power_limit = sv_ok(700);
		g->sm_clock = sv_ok(1980);
		g->pcie_gen = sv_ok(5);
		g->pcie_width = sv_ok(16);
		g->nproc = (size_t)per;
		g->nprocs = sv_ok(per);
		for (int k = 0; k < per; k++) {
			gpu_process *p = &g->procs[k];
			p->pid = (unsigned)(1000 * (i + 1) + k);
			str_copy(p->type, sizeof(p->type), "compute");
			snprintf(p->name, sizeof(p->name), "proc%d", k);
			snprintf(p->cmdline, sizeof(p->cmdline), "python train_%c.py --rank %d", 'a' + (7 * i + 3 * k) % 26, k);
			p->used_bytes = sv_ok(1048576.0 * (100 + 37 * ((i * per + k) % 11)));
			p->sm_util = sv_ok((i * 13 + k * 29) % 100);
			str_copy(p->user, sizeof(p->user), users[(i + k) % 4]);
			p->cpu_seconds = sv_ok(cpu_scale * (1 + (i * 7 + k * 3) % 5));
		}
	}
	return s;
}

typedef struct world {
	snapshot *s, *prev;
	health_tracker h;
	gpu_ring *rings;
	watch_ui ui;
	watch_model m;
} world;

static void world_init(world *w, int ngpus, int per)
{
	memset(w, 0, sizeof(*w));
	health_cfg c;
	health_cfg_default(&c);
	health_init(&w->h, &c);
	w->prev = machine(ngpus, per, 100, 10);
	w->s = machine(ngpus, per, 102, 11); /* 2 s later, CPU time grown by a tenth */
	health_update(&w->h, w->s, w->s->time);
	w->rings = xcalloc((size_t)ngpus, sizeof(*w->rings));
	for (int i = 0; i < ngpus; i++)
		for (int k = 0; k < 60; k++)
			ring_push(&w->rings[i], 100 - 300 + 5.0 * k, &w->s->gpus[i]);
	watch_ui_init(&w->ui);
	w->m = (watch_model){.snap = w->s,
			     .prev = w->prev,
			     .rings = w->rings,
			     .nrings = ngpus,
			     .health = &w->h,
			     .interval = 1,
			     .now = 102,
			     .clock = "12:34:56",
			     .utf8 = true};
}

static void world_free(world *w)
{
	snapshot_free(w->s);
	snapshot_free(w->prev);
	free(w->rings);
}

/* The screen as text rows. */
typedef struct screen {
	int rows, cols;
	char row[80][1024];
} screen;

static void lay(world *w, int rows, int cols, screen *out)
{
	frame f;
	frame_init(&f, rows, cols);
	watch_layout(&f, &w->m, &w->ui);
	out->rows = rows;
	out->cols = cols;
	for (int y = 0; y < rows; y++)
		frame_row(&f, y, out->row[y], sizeof(out->row[y]));
	frame_free(&f);
}

static int find_row(const screen *sc, const char *text)
{
	for (int y = 0; y < sc->rows; y++)
		if (strstr(sc->row[y], text))
			return y;
	return -1;
}

static void dump(const screen *sc)
{
	for (int y = 0; y < sc->rows; y++)
		print_message("%2d|%s\n", y, sc->row[y]);
}

/* The pids of the process rows, in screen order. */
static int pids_shown(const screen *sc, unsigned *pids, int max)
{
	int head = find_row(sc, "COMMAND"), n = 0;
	for (int y = head + 1; head >= 0 && y < sc->rows && n < max; y++) {
		unsigned gpu, pid;
		if (sscanf(sc->row[y], "%u %u", &gpu, &pid) != 2)
			break;
		pids[n++] = pid;
	}
	return n;
}

static void common_checks(const screen *sc)
{
	for (int y = 0; y < sc->rows; y++)
		if (frame_width(sc->row[y]) > sc->cols - 1) {
			dump(sc);
			fail_msg("row %d is %d cells wide at %d columns", y, frame_width(sc->row[y]), sc->cols);
		}
	assert_non_null(strstr(sc->row[0], "gpuvet watch  12:34:56"));
	char foot[256];
	watch_footer(foot, sizeof(foot));
	if ((int)strlen(foot) > sc->cols - 1)
		foot[sc->cols - 1] = '\0';
	for (size_t n = strlen(foot); n && foot[n - 1] == ' '; n--)
		foot[n - 1] = '\0';
	assert_string_equal(sc->row[sc->rows - 1], foot);
}

/* 80x24 with 8 GPUs, 3 processes each: every GPU row, the process table under its title with
 * every column but the type, as many processes as fit, biggest GPU memory first. */
static void test_layout_80x24(void **st)
{
	(void)st;
	world w;
	world_init(&w, 8, 3);
	screen sc;
	lay(&w, 24, 80, &sc);
	common_checks(&sc);
	int gpus = 0;
	for (int y = 0; y < sc.rows; y++)
		gpus += strstr(sc.row[y], "NVIDIA H200") != NULL;
	assert_int_equal(gpus, 8);
	int title = find_row(&sc, "PROCESSES");
	assert_true(title > 0);
	assert_non_null(strstr(sc.row[title], "sort: GPU-MEM, descending"));
	const char *head = sc.row[title + 1];
	for (const char *col = "GPU\0PID\0USER\0%SM\0%CPU\0GPU-MEM\xe2\x96\xbc\0COMMAND\0"; *col; col += strlen(col) + 1)
		if (!strstr(head, col)) {
			dump(&sc);
			fail_msg("column %s missing at 80 columns: %s", col, head);
		}
	assert_null(strstr(head, "POD / JOB")); /* no process has a pod or job */
	unsigned pids[64];
	int n = pids_shown(&sc, pids, 64);
	if (n < 6) {
		dump(&sc);
		fail_msg("%d process rows at 80x24 with 8 GPUs", n);
	}
	/* memory descending: 1048576 * (100 + 37 * ((i * 3 + k) % 11)) */
	for (int i = 1; i < n; i++) {
		double a = 100 + 37 * (((pids[i - 1] / 1000 - 1) * 3 + pids[i - 1] % 1000) % 11);
		double b = 100 + 37 * (((pids[i] / 1000 - 1) * 3 + pids[i] % 1000) % 11);
		assert_true(a >= b);
	}
	assert_true(find_row(&sc, "of 24 shown") > 0); /* more processes than rows: it says so */
	assert_int_equal(find_row(&sc, "util  5m"), -1);  /* no graphs: the processes get the rows */
	world_free(&w);
	/* two GPUs, four processes: the rows the processes leave go to the graphs (docs/watch.md) */
	world_init(&w, 2, 2);
	lay(&w, 24, 80, &sc);
	common_checks(&sc);
	int g0 = find_row(&sc, " 0  NVIDIA H200"), g1 = find_row(&sc, " 1  NVIDIA H200");
	assert_int_equal(g1 - g0 - 1, 6);
	assert_int_equal(pids_shown(&sc, pids, 64), 4);
	world_free(&w);
}

/* 200x60 with 2 GPUs and 4 processes each: the rows left over make the graphs taller than one
 * row, every process is listed, and a pod's column appears once a process has one. */
static void test_layout_200x60_tall(void **st)
{
	(void)st;
	world w;
	world_init(&w, 2, 4);
	w.s->gpus[1].procs[2].owner.kind = OWNER_SLURM;
	str_copy(w.s->gpus[1].procs[2].owner.job, sizeof(w.s->gpus[1].procs[2].owner.job), "4242");
	screen sc;
	lay(&w, 60, 200, &sc);
	common_checks(&sc);
	int g0 = find_row(&sc, " 0  NVIDIA H200"), g1 = find_row(&sc, " 1  NVIDIA H200");
	assert_true(g0 > 0 && g1 > g0);
	int graph = g1 - g0 - 1; /* the graph rows under GPU 0 */
	if (graph < 4) {
		dump(&sc);
		fail_msg("%d graph rows at 60 rows, want the spare rows used", graph);
	}
	assert_true(graph <= LAYOUT_GRAPH_MAX);
	assert_non_null(strstr(sc.row[g0 + 1], "util  5m"));
	unsigned pids[64];
	assert_int_equal(pids_shown(&sc, pids, 64), 8);
	int head = find_row(&sc, "COMMAND");
	assert_non_null(strstr(sc.row[head], "POD / JOB"));
	assert_non_null(strstr(sc.row[head], "TYPE"));
	assert_true(find_row(&sc, "slurm 4242") > head);
	assert_true(find_row(&sc, "python train_") > head);
	/* used rows: the same machine at 24 rows leaves fewer graph rows, never more */
	screen small;
	lay(&w, 24, 200, &small);
	int s0 = find_row(&small, " 0  NVIDIA H200"), s1 = find_row(&small, " 1  NVIDIA H200");
	assert_true(s1 - s0 - 1 < graph);
	world_free(&w);
}

/* One GPU and two processes on a 120x60 terminal (a laptop's full-screen window): the graph
 * takes the height the processes leave, rather than stopping at 16 rows over 35 empty ones. */
static void test_layout_one_gpu_tall(void **st)
{
	(void)st;
	world w;
	world_init(&w, 1, 2);
	screen sc;
	lay(&w, 60, 120, &sc);
	common_checks(&sc);
	/* the graph spans from under the GPU row to the process table's title */
	int g0 = find_row(&sc, " 0  NVIDIA H200"), title = find_row(&sc, "PROCESSES");
	assert_true(g0 > 0 && title > g0);
	if (title - g0 - 1 < 40) {
		dump(&sc);
		fail_msg("a graph of %d rows on a 60-row terminal with one GPU and two processes", title - g0 - 1);
	}
	unsigned pids[8];
	assert_int_equal(pids_shown(&sc, pids, 8), 2);
	world_free(&w);
}

/* 60x20 with 16 GPUs: as many GPU rows as fit and the count hidden, the lowest column gone, the
 * command and the memory kept. */
static void test_layout_60x20(void **st)
{
	(void)st;
	world w;
	world_init(&w, 16, 1);
	screen sc;
	lay(&w, 20, 60, &sc);
	common_checks(&sc);
	if (find_row(&sc, "of 16 GPUs shown; up/down scrolls") < 0) {
		dump(&sc);
		fail_msg("no note of the GPUs hidden at 60x20");
	}
	int head = find_row(&sc, "COMMAND");
	assert_true(head > 0);
	assert_non_null(strstr(sc.row[head], "GPU-MEM"));
	assert_non_null(strstr(sc.row[head], "PID"));
	assert_null(strstr(sc.row[head], "TYPE"));
	unsigned pids[64];
	assert_true(pids_shown(&sc, pids, 64) >= 1);
	/* the selection scrolls: the last GPU selected is shown */
	assert_int_equal(find_row(&sc, "15 NVIDIA H200"), -1);
	w.ui.sel = 15;
	lay(&w, 20, 60, &sc);
	assert_true(find_row(&sc, ">15 NVIDIA H200") > 0);
	assert_true(find_row(&sc, "GPU 15 only") > 0);
	world_free(&w);
}

/* The keys change the sort, and the screen shows it: the title, the marked column, the order. */
static void test_sort_keys_on_screen(void **st)
{
	(void)st;
	world w;
	world_init(&w, 2, 3);
	screen sc;
	lay(&w, 30, 120, &sc);
	unsigned before[16], after[16];
	int n = pids_shown(&sc, before, 16);
	assert_int_equal(n, 6);
	assert_int_equal(watch_press(&w.ui, '/', w.s, NULL), WA_SORT_REVERSE);
	lay(&w, 30, 120, &sc);
	assert_true(find_row(&sc, "sort: GPU-MEM, ascending") > 0);
	assert_true(find_row(&sc, "GPU-MEM\xe2\x96\xb2") > 0);
	assert_int_equal(pids_shown(&sc, after, 16), 6);
	for (int i = 0; i < n; i++)
		assert_int_equal(after[i], before[n - 1 - i]); /* no ties in the memory of this machine */
	/* , from GPU-MEM: %CPU, biggest first */
	assert_int_equal(watch_press(&w.ui, ',', w.s, NULL), WA_SORT_PREV);
	assert_int_equal(w.ui.sort, PC_CPU);
	lay(&w, 30, 120, &sc);
	assert_true(find_row(&sc, "sort: %CPU, descending") > 0);
	n = pids_shown(&sc, after, 16);
	for (int i = 1; i < n; i++) {
		double a = proc_cpu_percent(w.prev, w.s, after[i - 1], w.s->gpus[after[i - 1] / 1000 - 1].procs[after[i - 1] % 1000].cpu_seconds);
		double b = proc_cpu_percent(w.prev, w.s, after[i], w.s->gpus[after[i] / 1000 - 1].procs[after[i] % 1000].cpu_seconds);
		assert_true(a >= b);
	}
	/* + ascending, - descending (nvtop's keys); . three times from %CPU: GPU-MEM, POD / JOB, then
	 * COMMAND, A-Z */
	watch_press(&w.ui, '+', w.s, NULL);
	assert_false(w.ui.descending);
	watch_press(&w.ui, '-', w.s, NULL);
	assert_true(w.ui.descending);
	watch_press(&w.ui, '.', w.s, NULL);
	watch_press(&w.ui, '.', w.s, NULL);
	watch_press(&w.ui, '.', w.s, NULL);
	assert_int_equal(w.ui.sort, PC_COMMAND);
	assert_false(w.ui.descending);
	lay(&w, 30, 120, &sc);
	assert_true(find_row(&sc, "sort: COMMAND, ascending") > 0);
	int head = find_row(&sc, "COMMAND\xe2\x96\xb2");
	assert_true(head > 0);
	for (int y = head + 2; y < head + 7; y++) {
		const char *a = strstr(sc.row[y - 1], "python"), *b = strstr(sc.row[y], "python");
		assert_non_null(a);
		assert_non_null(b);
		assert_true(strcmp(a, b) <= 0);
	}
	world_free(&w);
}

/* ? opens the help over the view: every key of the table with its text; any key closes it. */
static void test_help_overlay(void **st)
{
	(void)st;
	world w;
	world_init(&w, 2, 2);
	assert_int_equal(watch_press(&w.ui, '?', w.s, NULL), WA_HELP);
	assert_true(w.ui.help);
	screen sc;
	lay(&w, 24, 80, &sc);
	common_checks(&sc);
	assert_true(find_row(&sc, "gpuvet watch keys") > 0);
	for (size_t i = 0; i < watch_nkeys; i++) {
		char names[64];
		watch_key_names(&watch_keys[i], names, sizeof(names));
		int y = find_row(&sc, watch_keys[i].what);
		if (y < 0 || !strstr(sc.row[y], names)) {
			dump(&sc);
			fail_msg("the help lacks '%s  %s'", names, watch_keys[i].what);
		}
	}
	assert_true(find_row(&sc, "h ? F1") > 0);
	assert_true(find_row(&sc, "q Q Esc F10") > 0);
	/* smaller: the box still fits the screen */
	lay(&w, 20, 60, &sc);
	common_checks(&sc);
	assert_true(find_row(&sc, "gpuvet watch keys") > 0);
	assert_int_equal(find_row(&sc, "h help  q quit"), 19);
	/* q while the help is up closes the help, it does not quit */
	assert_int_equal(watch_press(&w.ui, 'q', w.s, NULL), WA_CLOSE_HELP);
	assert_false(w.ui.help);
	assert_false(w.ui.quit);
	lay(&w, 24, 80, &sc);
	assert_int_equal(find_row(&sc, "gpuvet watch keys"), -1);
	/* h opens it as well, a resize does not close it */
	watch_press(&w.ui, 'h', w.s, NULL);
	assert_int_equal(watch_press(&w.ui, KEY_RESIZE, w.s, NULL), WA_NONE);
	assert_true(w.ui.help);
	world_free(&w);
}

/* The rest of the table: quit, the GPU selection, pause, the graphs' span; unbound keys. */
static void test_keys(void **st)
{
	(void)st;
	world w;
	world_init(&w, 3, 1);
	assert_int_equal(watch_press(&w.ui, 'x', w.s, NULL), WA_NONE);
	assert_int_equal(watch_press(&w.ui, 'j', w.s, NULL), WA_DOWN);
	assert_int_equal(w.ui.sel, 0);
	watch_press(&w.ui, KEY_DOWN, w.s, NULL);
	watch_press(&w.ui, KEY_DOWN, w.s, NULL);
	watch_press(&w.ui, KEY_DOWN, w.s, NULL);
	assert_int_equal(w.ui.sel, 2);
	watch_press(&w.ui, 'k', w.s, NULL);
	assert_int_equal(w.ui.sel, 1);
	watch_press(&w.ui, 'a', w.s, NULL);
	assert_int_equal(w.ui.sel, -1);
	watch_press(&w.ui, 'p', w.s, NULL);
	assert_true(w.ui.paused);
	watch_press(&w.ui, '}', w.s, NULL);
	assert_true(w.ui.span == 600);
	watch_press(&w.ui, '}', w.s, NULL);
	assert_true(w.ui.span == RING_LEN);
	for (int i = 0; i < 8; i++)
		watch_press(&w.ui, '{', w.s, NULL);
	assert_true(w.ui.span == 30);
	/* + and - sort now (nvtop), they no longer change the span */
	watch_press(&w.ui, '-', w.s, NULL);
	assert_true(w.ui.span == 30);
	assert_int_equal(watch_press(&w.ui, KEY_F(10), w.s, NULL), WA_QUIT);
	assert_true(w.ui.quit);
	/* every key is in one entry only */
	for (size_t i = 0; i < watch_nkeys; i++)
		for (size_t a = 0; a < 4 && watch_keys[i].keys[a]; a++)
			for (size_t j = 0; j < watch_nkeys; j++)
				for (size_t b = 0; b < 4 && watch_keys[j].keys[b]; b++)
					if (i != j || a != b)
						assert_int_not_equal(watch_keys[i].keys[a], watch_keys[j].keys[b]);
	/* --help and the man page list the same */
	char *text = NULL;
	size_t len = 0;
	FILE *mf = open_memstream(&text, &len);
	watch_keys_print(mf);
	fclose(mf);
	for (size_t i = 0; i < watch_nkeys; i++)
		assert_non_null(strstr(text, watch_keys[i].what));
	assert_non_null(strstr(text, "%CPU"));
	free(text);
	world_free(&w);
}

/* Columns leave from the lowest priority; the command takes the rest; nothing is wider than the
 * terminal. */
static void test_proc_fit(void **st)
{
	(void)st;
	world w;
	world_init(&w, 1, 2);
	proc_row *pr;
	size_t n = proc_rows(w.s, w.prev, -1, NULL, &pr);
	assert_int_equal(n, 2);
	int width[PC_N];
	for (int cols = 20; cols <= 240; cols++) {
		int used = proc_fit(pr, n, cols, width);
		int sum = -1;
		for (int c = 0; c < PC_N; c++)
			sum += width[c] ? width[c] + 1 : 0;
		assert_int_equal(sum, used);
		if (width[PC_COMMAND])
			assert_true(used == cols - 1);
		assert_true(width[PC_PID] > 0);
		assert_int_equal(width[PC_OWNER], 0); /* nobody's pod */
		/* a column shown means every column of a higher priority is shown */
		for (int a = 0; a < PC_N; a++)
			for (int b = 0; b < PC_N; b++)
				if (width[a] && proc_cols[b].priority > proc_cols[a].priority && b != PC_OWNER)
					assert_true(width[b] > 0);
	}
	proc_fit(pr, n, 80, width);
	assert_true(width[PC_TYPE] && width[PC_USER] && width[PC_SM] && width[PC_CPU] && width[PC_MEM] && width[PC_GPU]);
	assert_true(width[PC_COMMAND] > proc_cols[PC_COMMAND].width);
	proc_fit(pr, n, 60, width);
	assert_int_equal(width[PC_TYPE], 0);
	assert_true(width[PC_USER] && width[PC_SM] && width[PC_CPU] && width[PC_MEM] && width[PC_GPU]);
	assert_true(width[PC_COMMAND] >= proc_cols[PC_COMMAND].width);
	free(pr);
	world_free(&w);
}

/* %CPU: the CPU time between two snapshots over the time between them; unknown without the
 * earlier one and for a pid that is another process now. */
static void test_cpu_percent(void **st)
{
	(void)st;
	snapshot *a = machine(1, 1, 10, 1), *b = machine(1, 1, 14, 1);
	a->gpus[0].procs[0].cpu_seconds = sv_ok(5);
	b->gpus[0].procs[0].cpu_seconds = sv_ok(11);
	unsigned pid = b->gpus[0].procs[0].pid;
	assert_true(fabs(proc_cpu_percent(a, b, pid, b->gpus[0].procs[0].cpu_seconds) - 150) < 1e-9);
	assert_true(isnan(proc_cpu_percent(NULL, b, pid, b->gpus[0].procs[0].cpu_seconds)));
	assert_true(isnan(proc_cpu_percent(a, b, pid + 1, b->gpus[0].procs[0].cpu_seconds)));
	assert_true(isnan(proc_cpu_percent(a, b, pid, sv_ok(4)))); /* less than before: reused pid */
	assert_true(isnan(proc_cpu_percent(a, b, pid, (sval){0, SV_NA})));
	proc_row *pr;
	assert_int_equal(proc_rows(b, a, -1, NULL, &pr), 1);
	char cell[32];
	assert_string_equal(proc_cell(PC_CPU, &pr[0], cell, sizeof(cell)), "150");
	free(pr);
	snapshot_free(a);
	snapshot_free(b);
}

/* /proc/PID/stat: utime + stime after the command's closing parenthesis, which may hold spaces
 * and parentheses of its own. */
static void test_proc_stat_ticks(void **st)
{
	(void)st;
	unsigned long long t = 0;
	assert_true(proc_stat_ticks("4242 (py (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 1 0", &t));
	assert_int_equal(t, 300);
	assert_false(proc_stat_ticks("4242 (python) S 1 2", &t));
	assert_false(proc_stat_ticks("", &t));
	assert_false(proc_stat_ticks(NULL, &t));
}

/* The frame: text stops before the last column, code points take one cell each. */
static void test_frame(void **st)
{
	(void)st;
	frame f;
	frame_init(&f, 2, 10);
	assert_int_equal(frame_put(&f, 0, 0, FS_PLAIN, "abcdefghijkl"), 12);
	char row[64];
	assert_string_equal(frame_row(&f, 0, row, sizeof(row)), "abcdefghi");
	frame_put(&f, 1, 2, FS_OK, "\xe2\x96\x88\xe2\x96\x81x\n");
	assert_string_equal(frame_row(&f, 1, row, sizeof(row)), "  \xe2\x96\x88\xe2\x96\x81x?");
	assert_int_equal(f.cell[1 * 10 + 2].style, FS_OK);
	frame_put(&f, 5, 0, FS_PLAIN, "outside");
	assert_string_equal(frame_row(&f, 5, row, sizeof(row)), "");
	assert_int_equal(frame_width("\xe2\x96\x88" "ab"), 3);
	frame_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layout_80x24),
		cmocka_unit_test(test_layout_200x60_tall),
		cmocka_unit_test(test_layout_one_gpu_tall),
		cmocka_unit_test(test_layout_60x20),
		cmocka_unit_test(test_sort_keys_on_screen),
		cmocka_unit_test(test_help_overlay),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_proc_fit),
		cmocka_unit_test(test_cpu_percent),
		cmocka_unit_test(test_proc_stat_ticks),
		cmocka_unit_test(test_frame),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
