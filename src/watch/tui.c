#include "watch/tui.h"

#include "doctor/doctor.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/child.h"
#include "core/util.h"
#include "nvidia/nvml.h"

enum { C_OK = 1, C_WARN, C_BAD, C_DIM, C_HEAD, C_SEL };
enum { SORT_MEMORY, SORT_PID, SORT_GPU, SORT_NAME, SORT_N };
static const char *const sort_names[] = {"memory", "pid", "gpu", "name"};

static volatile sig_atomic_t quit_signal;
static void on_signal(int sig)
{
	quit_signal = 1;
	gv_child_kill_all(); /* a first contact with NVML in progress ends now (nvidia/contact.h) */
	/* a sample stuck in an NVML call does not hold us: leave the alternate screen, show the cursor */
	gv_stop_watchdog(sig, "\033[0m\033[?1049l\033[?25h\r\n");
}

typedef struct tui {
	const tui_opts *o;
	snapshot *snap;
	gpu_ring *rings; /* per GPU index */
	int nrings;
	char error[256];
	bool utf8, color, paused;
	int sort;
	int sel;    /* selected GPU index in the snapshot, -1 none */
	int scroll; /* first GPU row shown */
	double span; /* sparkline seconds */
} tui;

static void style_on(tui *t, int pair, bool bold)
{
	if (t->color && pair)
		attron(COLOR_PAIR(pair));
	if (bold)
		attron(A_BOLD);
}

static void style_off(tui *t, int pair, bool bold)
{
	if (t->color && pair)
		attroff(COLOR_PAIR(pair));
	if (bold)
		attroff(A_BOLD);
}

/* printw that never writes past the right edge: a wrapped line would land on the next row
 * (or scroll the screen when it is the last one). */
static void vputf(const char *fmt, va_list ap) GV_PRINTF(1, 0);
static void vputf(const char *fmt, va_list ap)
{
	int y, x;
	getyx(stdscr, y, x);
	(void)y;
	int room = COLS - 1 - x; /* the last column stays empty: writing it moves the cursor to the next row */
	if (room <= 0)
		return;
	char buf[1024];
	vsnprintf(buf, sizeof(buf), fmt, ap);
	addnstr(buf, room);
}

static void addf(const char *fmt, ...) GV_PRINTF(1, 2);
static void addf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vputf(fmt, ap);
	va_end(ap);
}

static void putf(int y, int x, const char *fmt, ...) GV_PRINTF(3, 4);
static void putf(int y, int x, const char *fmt, ...)
{
	if (y < 0 || y >= LINES || x >= COLS)
		return;
	move(y, x);
	va_list ap;
	va_start(ap, fmt);
	vputf(fmt, ap);
	va_end(ap);
}

static int state_pair(health_state s)
{
	return s == HEALTH_HEALTHY ? C_OK : s == HEALTH_DEGRADED ? C_WARN : C_BAD;
}

/* A bar of width cells for a fraction: blocks in UTF-8, '|' otherwise (as htop does). */
static void draw_bar(tui *t, int y, int x, int width, double frac, bool known)
{
	if (width <= 0)
		return;
	move(y, x);
	if (!known) {
		style_on(t, C_DIM, false);
		for (int i = 0; i < width; i++)
			addch(i == 0 ? '?' : ' ');
		style_off(t, C_DIM, false);
		return;
	}
	if (frac < 0)
		frac = 0;
	if (frac > 1)
		frac = 1;
	int pair = frac >= 0.9 ? C_BAD : frac >= 0.7 ? C_WARN : C_OK;
	int full = (int)(frac * width + 0.5);
	style_on(t, pair, false);
	for (int i = 0; i < full; i++)
		addstr(t->utf8 ? "\xe2\x96\x88" : "|");
	style_off(t, pair, false);
	style_on(t, C_DIM, false);
	for (int i = full; i < width; i++)
		addstr(t->utf8 ? "\xc2\xb7" : " ");
	style_off(t, C_DIM, false);
}

static void draw_spark(tui *t, const float *v, int width)
{
	static const char *const blocks[] = {"\xe2\x96\x81", "\xe2\x96\x82", "\xe2\x96\x83", "\xe2\x96\x84",
					     "\xe2\x96\x85", "\xe2\x96\x86", "\xe2\x96\x87", "\xe2\x96\x88"};
	static const char ascii[] = "_.,:-=+*#";
	for (int i = 0; i < width; i++) {
		if (isnan(v[i])) {
			addch(' ');
			continue;
		}
		double f = v[i] < 0 ? 0 : v[i] > 1 ? 1 : v[i];
		if (t->utf8)
			addstr(blocks[(int)(f * 7.999)]);
		else
			addch((chtype)ascii[(int)(f * 8.999)]);
	}
}

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static bool gpu_visible(const tui *t, const gpu_sample *g)
{
	return !t->o->job || job_on_gpu(t->o->job, g, NULL);
}

/* The GPU row: index, name, utilization and memory bars, temperature, power, clock, link. */
static void draw_gpu_row(tui *t, int y, int cols, const gpu_sample *g, bool selected, int namew)
{
	health_state hs = health_gpu(t->o->health, g->index);
	move(y, 0);
	if (selected)
		style_on(t, C_SEL, true);
	char name[64];
	view_gpu_name(name, sizeof(name), g->lost ? "(lost)" : g->name, namew);
	addf("%c%-2d %-*s ", selected ? '>' : ' ', g->index, namew, name);
	if (selected)
		style_off(t, C_SEL, true);
	int x0 = 4 + namew + 1; /* the name column and its gap */
	int rest = cols - x0;
	/* fixed fields on the right: temp, power, clock, link, state (~50 columns) */
	char temp[24], power[24], clk[16], link[16];
	if (sv_has(g->temp))
		snprintf(temp, sizeof(temp), "%3.0fC", g->temp.v);
	else
		snprintf(temp, sizeof(temp), " n/a");
	if (sv_has(g->power) && sv_has(g->power_limit))
		snprintf(power, sizeof(power), "%4.0f/%.0fW", g->power.v, g->power_limit.v);
	else if (sv_has(g->power))
		snprintf(power, sizeof(power), "%4.0fW", g->power.v);
	else
		snprintf(power, sizeof(power), "n/a");
	if (sv_has(g->sm_clock))
		snprintf(clk, sizeof(clk), "%4.0fMHz", g->sm_clock.v);
	else
		snprintf(clk, sizeof(clk), "n/a");
	if (sv_has(g->pcie_gen) && sv_has(g->pcie_width))
		snprintf(link, sizeof(link), "%.0fx%.0f", g->pcie_gen.v, g->pcie_width.v);
	else
		snprintf(link, sizeof(link), "n/a");
	int right = 46;
	int bars = rest - right;
	int barw = bars / 2 - 12;
	if (barw < 4) {
		barw = 0;
		right = rest;
	}
	int x = x0;
	if (barw > 0) {
		double u = sv_has(g->util_gpu) ? g->util_gpu.v / 100 : 0;
		putf(y, x, "UTIL");
		draw_bar(t, y, x + 5, barw, u, sv_has(g->util_gpu));
		putf(y, x + 5 + barw, "%4s", "");
		if (sv_has(g->util_gpu))
			putf(y, x + 5 + barw, "%3.0f%%", g->util_gpu.v);
		x += 5 + barw + 5;
		bool mk = sv_has(g->mem_used) && sv_has(g->mem_total) && g->mem_total.v > 0;
		putf(y, x, "MEM");
		draw_bar(t, y, x + 4, barw, mk ? g->mem_used.v / g->mem_total.v : 0, mk);
		if (mk)
			putf(y, x + 4 + barw, "%4.0fG", g->mem_used.v / (1024.0 * 1024 * 1024));
		x += 4 + barw + 6;
	} else {
		char u[16], m[32];
		fmt_val(u, sizeof(u), g->util_gpu, "%");
		fmt_bytes(m, sizeof(m), g->mem_used);
		putf(y, x, "%5s %9s ", u, m);
		x += 16;
	}
	if (x + 34 < cols) {
		bool hot = sv_has(g->temp) && g->temp.v >= t->o->health->cfg.hot_c;
		move(y, x);
		style_on(t, hot ? C_BAD : 0, hot);
		addf("%s", temp);
		style_off(t, hot ? C_BAD : 0, hot);
		addf(" %-11s %-8s %-5s ", power, clk, link);
		x += 5 + 12 + 9 + 6;
	}
	if (x + 9 < cols) {
		move(y, x);
		style_on(t, state_pair(hs), true);
		addf("%s", health_state_name(hs));
		style_off(t, state_pair(hs), true);
	}
}

static void draw_spark_row(tui *t, int y, int cols, const gpu_sample *g, double now)
{
	if (g->index < 0 || g->index >= t->nrings)
		return;
	/* GPM activity at the end of the row, where the GPU has it and the terminal room */
	bool act = g->gpm_support == GV_GPM_ON && (cols - 28 - 27) / 2 >= 8;
	int w = (cols - 28 - (act ? 27 : 0)) / 2;
	if (w < 8)
		return;
	float *v = xmalloc((size_t)w * sizeof(*v));
	style_on(t, C_DIM, false);
	putf(y, 4, "util %2.0fm", t->span / 60);
	style_off(t, C_DIM, false);
	move(y, 14);
	ring_series(&t->rings[g->index], now, t->span, w, 0, v);
	draw_spark(t, v, w);
	style_on(t, C_DIM, false);
	putf(y, 15 + w, "mem");
	style_off(t, C_DIM, false);
	move(y, 19 + w);
	ring_series(&t->rings[g->index], now, t->span, w, 1, v);
	draw_spark(t, v, w);
	free(v);
	if (act) {
		char a[3][8];
		static const int k[3] = {GV_GPM_SM_ACTIVE, GV_GPM_TENSOR_ACTIVE, GV_GPM_DRAM_ACTIVE};
		for (int i = 0; i < 3; i++)
			fmt_val(a[i], sizeof(a[i]), sv_has(g->gpm[k[i]]) ? sv_ok(g->gpm[k[i]].v * 100) : g->gpm[k[i]], "%");
		style_on(t, C_DIM, false);
		putf(y, 20 + 2 * w, "SM %4s TENS %4s DRAM %4s", a[0], a[1], a[2]);
		style_off(t, C_DIM, false);
	}
}

typedef struct prow {
	int gpu;
	const gpu_process *p;
} prow;

static int sort_mode;
static int cmp_prow(const void *a, const void *b)
{
	const prow *x = a, *y = b;
	switch (sort_mode) {
	case SORT_MEMORY: {
		double mx = sv_has(x->p->used_bytes) ? x->p->used_bytes.v : -1;
		double my = sv_has(y->p->used_bytes) ? y->p->used_bytes.v : -1;
		if (mx != my)
			return mx < my ? 1 : -1;
		break;
	}
	case SORT_PID:
		if (x->p->pid != y->p->pid)
			return x->p->pid < y->p->pid ? -1 : 1;
		break;
	case SORT_NAME: {
		int c = strcmp(x->p->name, y->p->name);
		if (c)
			return c;
		break;
	}
	default: break;
	}
	if (x->gpu != y->gpu)
		return x->gpu < y->gpu ? -1 : 1;
	return x->p->pid < y->p->pid ? -1 : x->p->pid > y->p->pid;
}

static void draw(tui *t)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	erase();
	double now = now_seconds();
	const snapshot *s = t->snap;
	/* header */
	style_on(t, C_HEAD, true);
	char when[16] = "";
	time_t wt = time(NULL);
	struct tm tm;
	if (localtime_r(&wt, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	putf(0, 0, "gpuvet watch  %s", when);
	style_off(t, C_HEAD, true);
	if (s) {
		health_state hs = health_overall(t->o->health);
		addf("  driver %s  %d GPU%s  every %gs  ", s->driver_version[0] ? s->driver_version : "n/a", s->ngpus,
		       s->ngpus == 1 ? "" : "s", t->o->interval);
		style_on(t, state_pair(hs), true);
		addf("%s", health_state_name(hs));
		style_off(t, state_pair(hs), true);
	}
	if (t->paused)
		addf("  [paused]");
	if (t->o->job)
		addf("  pid %u%s (+%zu)", t->o->job->root, t->o->job->alive ? "" : " ended", t->o->job->n ? t->o->job->n - 1 : 0);
	int y = 1;
	if (t->error[0]) {
		style_on(t, C_BAD, true);
		putf(y++, 0, "%.*s", cols, t->error);
		style_off(t, C_BAD, true);
	}
	if (!s) {
		putf(y + 1, 2, "waiting for the first sample...");
		goto footer;
	}
	/* GPU rows: two per GPU when there is room, else one */
	int visible[HEALTH_MAX_GPUS];
	int nvis = 0;
	for (int i = 0; i < s->ngpus && nvis < HEALTH_MAX_GPUS; i++)
		if (gpu_visible(t, &s->gpus[i]))
			visible[nvis++] = i;
	int reserve = 8; /* processes, health, footer */
	int per = (rows - y - reserve >= nvis * 2) ? 2 : 1;
	int fit = (rows - y - reserve) / per;
	if (fit < 1)
		fit = 1;
	int selpos = 0;
	for (int k = 0; k < nvis; k++)
		if (s->gpus[visible[k]].index == t->sel)
			selpos = k;
	if (selpos < t->scroll)
		t->scroll = selpos;
	if (selpos >= t->scroll + fit)
		t->scroll = selpos - fit + 1;
	t->scroll = clampi(t->scroll, 0, nvis > fit ? nvis - fit : 0);
	y++;
	/* the name column: as wide as the longest name, within what the terminal can spare */
	int cap = cols >= 140 ? 30 : cols >= 100 ? 22 : 14, namew = 6;
	for (int k = 0; k < nvis; k++) {
		const gpu_sample *g = &s->gpus[visible[k]];
		int l = (int)strlen(g->lost ? "(lost)" : g->name);
		namew = l > namew ? l : namew;
	}
	namew = namew > cap ? cap : namew;
	for (int k = t->scroll; k < nvis && k < t->scroll + fit && y < rows - 2; k++) {
		const gpu_sample *g = &s->gpus[visible[k]];
		draw_gpu_row(t, y++, cols, g, g->index == t->sel, namew);
		if (per == 2 && y < rows - 2)
			draw_spark_row(t, y++, cols, g, now);
	}
	if (nvis > fit && y < rows - 2) {
		style_on(t, C_DIM, false);
		putf(y++, 2, "(%d of %d GPUs shown; up/down scrolls)", fit, nvis);
		style_off(t, C_DIM, false);
	}
	if (t->o->job && nvis == 0)
		putf(y++, 2, "process %u and its descendants hold no GPU", t->o->job->root);

	/* the job doctor's running verdict (watch --pid) */
	if (t->o->doctor && t->o->doctor->have && y < rows - 3) {
		style_on(t, t->o->doctor->v.level == DOCTOR_WARN ? C_WARN : C_DIM, false);
		putf(y++, 2, "job doctor: %s [%s]", t->o->doctor->v.title, t->o->doctor->v.id);
		style_off(t, t->o->doctor->v.level == DOCTOR_WARN ? C_WARN : C_DIM, false);
		if (t->o->doctor->v.nfix && y < rows - 3)
			putf(y++, 4, "-> %s", t->o->doctor->v.fix[0]);
	}

	/* health messages, most severe first, at most 3 rows */
	int nh = 0;
	const health_msg *hm[3];
	for (int st = HEALTH_UNHEALTHY; st >= HEALTH_DEGRADED && nh < 3; st--)
		for (size_t m = 0; m < t->o->health->nmsg && nh < 3; m++) {
			const health_msg *msg = &t->o->health->msgs[m];
			const gpu_sample *g = snapshot_gpu(s, msg->gpu);
			if ((int)msg->state == st && (!g || gpu_visible(t, g)))
				hm[nh++] = msg;
		}

	/* processes */
	if (y < rows - 2 - nh) {
		y++;
		style_on(t, C_HEAD, true);
		putf(y++, 0, "%-4s %-8s %-9s %-16s %10s  %-24s COMMAND   (sort: %s%s)", "GPU", "PID", "TYPE", "NAME", "MEMORY",
			 "POD / JOB", sort_names[t->sort], t->sel >= 0 ? ", one GPU" : "");
		style_off(t, C_HEAD, true);
		size_t np = 0;
		for (int i = 0; i < s->ngpus; i++)
			np += s->gpus[i].nproc;
		prow *pr = np ? xmalloc(np * sizeof(*pr)) : NULL;
		size_t n = 0;
		for (int i = 0; i < s->ngpus; i++) {
			const gpu_sample *g = &s->gpus[i];
			if (t->sel >= 0 && g->index != t->sel)
				continue;
			for (size_t k = 0; k < g->nproc; k++)
				if (!t->o->job || job_has(t->o->job, g->procs[k].pid))
					pr[n++] = (prow){g->index, &g->procs[k]};
		}
		sort_mode = t->sort;
		if (n)
			qsort(pr, n, sizeof(*pr), cmp_prow);
		for (size_t i = 0; i < n && y < rows - 1 - nh; i++) {
			char mem[16], own[320];
			putf(y++, 0, "%-4d %-8u %-9s %-16.16s %10s  %-24.24s %.*s", pr[i].gpu, pr[i].p->pid, pr[i].p->type,
				 pr[i].p->name[0] ? pr[i].p->name : "?", fmt_bytes(mem, sizeof(mem), pr[i].p->used_bytes),
				 owner_text(&pr[i].p->owner, own, sizeof(own)), cols > 80 ? cols - 80 : 0, pr[i].p->cmdline);
		}
		if (n == 0 && y < rows - 1 - nh) {
			style_on(t, C_DIM, false);
			putf(y++, 0, "(no processes)");
			style_off(t, C_DIM, false);
		}
		free(pr);
	}
	/* health at the bottom, above the footer */
	for (int i = 0; i < nh; i++) {
		int hy = rows - 1 - nh + i;
		if (hy <= 0)
			continue;
		move(hy, 0);
		style_on(t, state_pair(hm[i]->state), true);
		addf("GPU%d %s", hm[i]->gpu, hm[i]->id);
		style_off(t, state_pair(hm[i]->state), true);
		addf(" %s -> %s", hm[i]->text, hm[i]->action);
	}
footer:
	style_on(t, C_DIM, false);
	putf(rows - 1, 0, "%.*s", cols - 1, "q quit  s sort  up/down select GPU  a all GPUs  p pause  +/- span");
	style_off(t, C_DIM, false);
	wnoutrefresh(stdscr);
	doupdate();
}

static void take(tui *t)
{
	char err[256] = "";
	snapshot *s = t->o->src.take(t->o->src.ctx, err, sizeof(err));
	if (!s) {
		snprintf(t->error, sizeof(t->error), "sampler: %s (showing the last good sample)", err);
		return;
	}
	t->error[0] = '\0';
	health_update(t->o->health, s, s->time);
	if (t->o->job)
		job_rescan(t->o->job);
	if (t->o->on_sample)
		t->o->on_sample(t->o->on_sample_ctx, s);
	int maxidx = -1;
	for (int i = 0; i < s->ngpus; i++)
		if (s->gpus[i].index > maxidx)
			maxidx = s->gpus[i].index;
	if (maxidx + 1 > t->nrings && maxidx < HEALTH_MAX_GPUS) {
		t->rings = xrealloc(t->rings, (size_t)(maxidx + 1) * sizeof(*t->rings));
		memset(t->rings + t->nrings, 0, (size_t)(maxidx + 1 - t->nrings) * sizeof(*t->rings));
		t->nrings = maxidx + 1;
	}
	for (int i = 0; i < s->ngpus; i++)
		if (s->gpus[i].index >= 0 && s->gpus[i].index < t->nrings)
			ring_push(&t->rings[s->gpus[i].index], s->time, &s->gpus[i]);
	snapshot_free(t->snap);
	t->snap = s;
}

static void move_sel(tui *t, int dir)
{
	const snapshot *s = t->snap;
	if (!s || s->ngpus == 0)
		return;
	int pos = -1, vis[HEALTH_MAX_GPUS], n = 0;
	for (int i = 0; i < s->ngpus && n < HEALTH_MAX_GPUS; i++)
		if (gpu_visible(t, &s->gpus[i])) {
			if (s->gpus[i].index == t->sel)
				pos = n;
			vis[n++] = s->gpus[i].index;
		}
	if (n == 0)
		return;
	pos = pos < 0 ? (dir > 0 ? 0 : n - 1) : clampi(pos + dir, 0, n - 1);
	t->sel = vis[pos];
}

int tui_run(const tui_opts *o)
{
	tui t = {0};
	t.o = o;
	t.sel = -1;
	t.span = 300;
	setlocale(LC_ALL, "");
	const char *cs = nl_langinfo(CODESET);
	t.utf8 = cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
	quit_signal = 0;
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!initscr())
		return -1;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	timeout(100);
	t.color = o->color && has_colors();
	if (t.color) {
		start_color();
		use_default_colors();
		init_pair(C_OK, COLOR_GREEN, -1);
		init_pair(C_WARN, COLOR_YELLOW, -1);
		init_pair(C_BAD, COLOR_RED, -1);
		init_pair(C_DIM, COLOR_BLUE, -1);
		init_pair(C_HEAD, COLOR_CYAN, -1);
		init_pair(C_SEL, COLOR_BLACK, COLOR_CYAN);
	}
	double start = now_seconds();
	double next = start;
	bool dirty = true;
	while (!quit_signal) {
		double now = now_seconds();
		if (o->max_seconds > 0 && now - start >= o->max_seconds)
			break;
		if (!t.paused && now >= next) {
			take(&t);
			next += o->interval;
			if (next < now)
				next = now + o->interval;
			dirty = true;
		}
		if (dirty) {
			draw(&t);
			dirty = false;
		}
		int ch = getch();
		if (ch == ERR)
			continue;
		dirty = true;
		switch (ch) {
		case 'q': case 'Q': case 27: quit_signal = 1; break;
		case 's': case 'S': t.sort = (t.sort + 1) % SORT_N; break;
		case KEY_UP: case 'k': move_sel(&t, -1); break;
		case KEY_DOWN: case 'j': move_sel(&t, +1); break;
		case 'a': case 'A': t.sel = -1; break;
		case 'p': case 'P': t.paused = !t.paused; if (!t.paused) next = now_seconds(); break;
		case '+': t.span = t.span * 2 > RING_LEN ? RING_LEN : t.span * 2; break;
		case '-': t.span = t.span / 2 < 30 ? 30 : t.span / 2; break;
		case KEY_RESIZE: clearok(stdscr, TRUE); break; /* a full repaint for the new size */
		default: break;
		}
	}
	endwin();
	snapshot_free(t.snap);
	free(t.rings);
	return 0;
}
