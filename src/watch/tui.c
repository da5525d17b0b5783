#include "watch/tui.h"

#include "doctor/doctor.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/child.h"
#include "core/util.h"
#include "watch/frame.h"
#include "watch/layout.h"

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
	snapshot *snap, *prev; /* the last sample and the one before (%CPU) */
	gpu_ring *rings;       /* per GPU index */
	int nrings;
	char error[256];
	bool utf8, color;
	watch_ui ui;
} tui;

/* The frame's styles as curses attributes: a colour pair per FS_ colour (pair n is FS_ n). */
static attr_t style_attr(const tui *t, int style)
{
	attr_t a = A_NORMAL;
	if (t->color && FS_COLOR(style))
		a |= COLOR_PAIR(FS_COLOR(style));
	if (style & FS_BOLD)
		a |= A_BOLD;
	if (style & FS_REVERSE)
		a |= A_REVERSE;
	return a;
}

/* Paints the frame: each run of cells of one style as one string. The last column stays empty
 * (watch/frame.h); ncurses sends only what changed since the last frame. */
static void paint(const tui *t, const frame *f)
{
	char run[4096];
	erase(); /* the last column too: after a resize to fewer columns it holds the old frame's */
	for (int y = 0; y < f->rows; y++) {
		move(y, 0);
		int x = 0;
		while (x < f->cols - 1) {
			int style = f->cell[(size_t)y * (size_t)f->cols + (size_t)x].style;
			size_t len = 0;
			while (x < f->cols - 1 && f->cell[(size_t)y * (size_t)f->cols + (size_t)x].style == style &&
			       len + 4 < sizeof(run)) {
				uint32_t c = f->cell[(size_t)y * (size_t)f->cols + (size_t)x].ch;
				if (!t->utf8 && c >= 0x80)
					c = '?'; /* the layout writes ASCII then; a stray code point stays one cell */
				if (c < 0x80) {
					run[len++] = (char)c;
				} else if (c < 0x800) {
					run[len++] = (char)(0xc0 | c >> 6);
					run[len++] = (char)(0x80 | (c & 0x3f));
				} else {
					run[len++] = (char)(0xe0 | (c >> 12 & 0x0f));
					run[len++] = (char)(0x80 | (c >> 6 & 0x3f));
					run[len++] = (char)(0x80 | (c & 0x3f));
				}
				x++;
			}
			run[len] = '\0';
			attr_t a = style_attr(t, style);
			attron(a);
			addstr(run);
			attroff(a);
		}
	}
}

static void draw(tui *t)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	char when[16] = "", doctor[512] = "";
	time_t wt = time(NULL);
	struct tm tm;
	if (localtime_r(&wt, &tm))
		strftime(when, sizeof(when), "%H:%M:%S", &tm);
	const doctor_result *dr = doctor_live_last(t->o->doctor);
	if (dr)
		snprintf(doctor, sizeof(doctor), "%s [%s]", dr->v.title, dr->v.id);
	watch_model m = {
		.snap = t->snap,
		.prev = t->prev,
		.rings = t->rings,
		.nrings = t->nrings,
		.health = t->o->health,
		.job = t->o->job,
		.error = t->error,
		.doctor = dr ? doctor : NULL,
		.doctor_fix = dr && dr->v.nfix ? dr->v.fix[0] : NULL,
		.doctor_warn = dr && dr->v.level == DOCTOR_WARN,
		.interval = t->o->interval,
		.now = now_seconds(),
		.clock = when,
		.utf8 = t->utf8,
	};
	frame f;
	frame_init(&f, rows, cols);
	watch_layout(&f, &m, &t->ui);
	paint(t, &f);
	frame_free(&f);
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
	snapshot_free(t->prev);
	t->prev = t->snap;
	t->snap = s;
}

int tui_run(const tui_opts *o)
{
	tui t = {.o = o};
	watch_ui_init(&t.ui);
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
		static const short fg[FS_NCOLORS] = {[FS_OK] = COLOR_GREEN, [FS_WARN] = COLOR_YELLOW, [FS_BAD] = COLOR_RED,
						      [FS_DIM] = COLOR_BLUE, [FS_HEAD] = COLOR_CYAN, [FS_SEL] = COLOR_BLACK};
		for (short i = 1; i < FS_NCOLORS; i++)
			init_pair(i, fg[i], i == FS_SEL ? COLOR_CYAN : -1);
	}
	double start = now_seconds();
	double next = start;
	bool dirty = true;
	while (!quit_signal && !t.ui.quit) {
		double now = now_seconds();
		if (o->max_seconds > 0 && now - start >= o->max_seconds)
			break;
		if (!t.ui.paused && now >= next) {
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
		if (ch == KEY_RESIZE) {
			clearok(stdscr, TRUE); /* a full repaint for the new size */
			continue;
		}
		if (watch_press(&t.ui, ch, t.snap, o->job) == WA_PAUSE && !t.ui.paused)
			next = now_seconds(); /* going on: a fresh sample now */
	}
	endwin();
	snapshot_free(t.snap);
	snapshot_free(t.prev);
	free(t.rings);
	return 0;
}
