/* The live view's screen, laid out without a terminal (watch/layout.h). */
#include "watch/layout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"
#include "nvidia/nvml.h"

static int clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int state_style(health_state s)
{
	return s == HEALTH_HEALTHY ? FS_OK : s == HEALTH_DEGRADED ? FS_WARN : FS_BAD;
}

static bool gpu_visible(const watch_model *m, const gpu_sample *g)
{
	return !m->job || job_on_gpu(m->job, g, NULL);
}

/* A bar of width cells for a fraction: blocks in UTF-8, '|' otherwise (as htop does). */
static void draw_bar(frame *f, const watch_model *m, int y, int x, int width, double frac, bool known)
{
	if (width <= 0)
		return;
	if (!known) {
		frame_put(f, y, x, FS_DIM, "?");
		return;
	}
	frac = frac < 0 ? 0 : frac > 1 ? 1 : frac;
	int style = frac >= 0.9 ? FS_BAD : frac >= 0.7 ? FS_WARN : FS_OK;
	int full = (int)(frac * width + 0.5);
	frame_fill(f, y, x, full, style, m->utf8 ? 0x2588 : '|');
	frame_fill(f, y, x + full, width - full, FS_DIM, m->utf8 ? 0xb7 : ' ');
}

/* A graph of height rows over width columns: each column a value 0..1 (NAN: no sample), in
 * eighths of a row (one block character per eighth). A known value shows at least one eighth,
 * so an idle GPU's line reads apart from the time before the first sample. */
static void draw_graph(frame *f, const watch_model *m, int y, int x, int height, const float *v, int width)
{
	static const char ascii[] = "_.,:-=+*#";
	int levels = height * 8;
	for (int i = 0; i < width; i++) {
		if (isnan(v[i]))
			continue;
		double fr = v[i] < 0 ? 0 : v[i] > 1 ? 1 : v[i];
		int e = (int)(fr * (levels - 1) + 0.5) + 1; /* 1..levels */
		for (int r = 0; r < height; r++) {
			int c = e - (height - 1 - r) * 8; /* the eighths that fall in this row */
			if (c <= 0)
				continue;
			c = c > 8 ? 8 : c;
			uint32_t ch = m->utf8 ? 0x2580 + (uint32_t)c : (uint32_t)ascii[c];
			frame_fill(f, y + r, x + i, 1, FS_PLAIN, ch);
		}
	}
}

/* The GPU row: index, name, utilization and memory bars, temperature, power, clock, link. */
static void draw_gpu_row(frame *f, const watch_model *m, int y, const gpu_sample *g, bool selected, int namew)
{
	int cols = f->cols;
	health_state hs = health_gpu(m->health, g->index);
	char name[64];
	view_gpu_name(name, sizeof(name), g->lost ? "(lost)" : g->name, namew);
	int sel = selected ? FS_SEL | FS_BOLD : FS_PLAIN;
	frame_putf(f, y, 0, sel, "%c%-2d %-*s", selected ? '>' : ' ', g->index, namew, name);
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
	int barw = (rest - right) / 2 - 12;
	int x = x0;
	if (barw >= 4) {
		double u = sv_has(g->util_gpu) ? g->util_gpu.v / 100 : 0;
		frame_put(f, y, x, FS_PLAIN, "UTIL");
		draw_bar(f, m, y, x + 5, barw, u, sv_has(g->util_gpu));
		if (sv_has(g->util_gpu))
			frame_putf(f, y, x + 5 + barw, FS_PLAIN, "%3.0f%%", g->util_gpu.v);
		x += 5 + barw + 5;
		bool mk = sv_has(g->mem_used) && sv_has(g->mem_total) && g->mem_total.v > 0;
		frame_put(f, y, x, FS_PLAIN, "MEM");
		draw_bar(f, m, y, x + 4, barw, mk ? g->mem_used.v / g->mem_total.v : 0, mk);
		if (mk)
			frame_putf(f, y, x + 4 + barw, FS_PLAIN, "%4.0fG", g->mem_used.v / (1024.0 * 1024 * 1024));
		x += 4 + barw + 6;
	} else {
		char u[16], mem[32];
		fmt_val(u, sizeof(u), g->util_gpu, "%");
		fmt_bytes(mem, sizeof(mem), g->mem_used);
		frame_putf(f, y, x, FS_PLAIN, "%5s %9s ", u, mem);
		x += 16;
	}
	if (x + 34 < cols) {
		bool hot = sv_has(g->temp) && g->temp.v >= m->health->cfg.hot_c;
		frame_put(f, y, x, hot ? FS_BAD | FS_BOLD : FS_PLAIN, temp);
		frame_putf(f, y, x + 5, FS_PLAIN, " %-11s %-8s %-5s ", power, clk, link);
		x += 5 + 12 + 9 + 6;
	}
	if (x + 9 < cols)
		frame_put(f, y, x, state_style(hs) | FS_BOLD, health_state_name(hs));
}

/* The graphs' width at this terminal width (0: too narrow for them), and whether the GPM
 * activity fits at the end of their first row. */
static int graph_width(int cols, const gpu_sample *g, bool *act)
{
	*act = g && g->gpm_support == GV_GPM_ON && (cols - 28 - 27) / 2 >= 8;
	int w = (cols - 28 - (*act ? 27 : 0)) / 2;
	return w < 8 ? 0 : w;
}

static void draw_graphs(frame *f, const watch_model *m, const watch_ui *ui, int y, int height, const gpu_sample *g)
{
	if (height <= 0 || g->index < 0 || g->index >= m->nrings)
		return;
	bool act;
	int w = graph_width(f->cols, g, &act);
	if (!w)
		return;
	float *v = xmalloc((size_t)w * sizeof(*v));
	if (ui->span >= 60)
		frame_putf(f, y, 4, FS_DIM, "util %2.0fm", ui->span / 60);
	else
		frame_putf(f, y, 4, FS_DIM, "util %2.0fs", ui->span);
	ring_series(&m->rings[g->index], m->now, ui->span, w, 0, v);
	draw_graph(f, m, y, 14, height, v, w);
	frame_put(f, y, 15 + w, FS_DIM, "mem");
	ring_series(&m->rings[g->index], m->now, ui->span, w, 1, v);
	draw_graph(f, m, y, 19 + w, height, v, w);
	free(v);
	if (act) {
		char a[3][8];
		static const int k[3] = {GV_GPM_SM_ACTIVE, GV_GPM_TENSOR_ACTIVE, GV_GPM_DRAM_ACTIVE};
		for (int i = 0; i < 3; i++)
			fmt_val(a[i], sizeof(a[i]), sv_has(g->gpm[k[i]]) ? sv_ok(g->gpm[k[i]].v * 100) : g->gpm[k[i]], "%");
		frame_putf(f, y, 20 + 2 * w, FS_DIM, "SM %4s TENS %4s DRAM %4s", a[0], a[1], a[2]);
	}
}

static void draw_header(frame *f, const watch_model *m, const watch_ui *ui)
{
	const snapshot *s = m->snap;
	int x = frame_putf(f, 0, 0, FS_HEAD | FS_BOLD, "gpuvet watch  %s", m->clock ? m->clock : "");
	if (s) {
		health_state hs = health_overall(m->health);
		x = frame_putf(f, 0, x, FS_PLAIN, "  driver %s  %d GPU%s  every %gs  ",
			       s->driver_version[0] ? s->driver_version : "n/a", s->ngpus, s->ngpus == 1 ? "" : "s", m->interval);
		x = frame_put(f, 0, x, state_style(hs) | FS_BOLD, health_state_name(hs));
	}
	if (ui->paused)
		x = frame_put(f, 0, x, FS_PLAIN, "  [paused]");
	if (m->job)
		frame_putf(f, 0, x, FS_PLAIN, "  pid %u%s (+%zu)", m->job->root, m->job->alive ? "" : " ended",
			   m->job->n ? m->job->n - 1 : 0);
}

/* The process table from row y to row end (exclusive): a title naming the sort, the header,
 * the rows. */
static void draw_processes(frame *f, const watch_model *m, const watch_ui *ui, int y, int end, proc_row *pr, size_t n)
{
	const proc_col *sc = &proc_cols[ui->sort];
	int x = frame_put(f, y, 0, FS_HEAD | FS_BOLD, "PROCESSES");
	x = frame_putf(f, y, x, FS_PLAIN, "  sort: %s, %s", sc->head, ui->descending ? "descending" : "ascending");
	if (ui->sel >= 0)
		x = frame_putf(f, y, x, FS_PLAIN, "  GPU %d only", ui->sel);
	int room = end - y - 2; /* rows for processes */
	size_t shown = n <= (size_t)(room > 0 ? room : 0) ? n : (size_t)(room > 1 ? room - 1 : 0);
	if (shown < n)
		frame_putf(f, y, x, FS_DIM, "  (%zu of %zu shown)", shown, n);
	if (++y >= end)
		return;
	int width[PC_N];
	proc_fit(pr, n, f->cols, width);
	/* the header: each column's name, the sorted one marked with its direction */
	x = 0;
	for (int c = 0; c < PC_N; c++) {
		if (!width[c])
			continue;
		char head[32];
		const char *arrow = m->utf8 ? (ui->descending ? "\xe2\x96\xbc" : "\xe2\x96\xb2") : (ui->descending ? "v" : "^");
		snprintf(head, sizeof(head), "%s%s", proc_cols[c].head, c == (int)ui->sort ? arrow : "");
		int hw = frame_width(head);
		int at = proc_cols[c].right && hw < width[c] ? x + width[c] - hw : x;
		frame_fill(f, y, x, width[c], FS_HEAD | FS_BOLD, ' ');
		frame_put(f, y, at, FS_HEAD | FS_BOLD, head);
		if (c == (int)ui->sort)
			frame_style(f, y, x, width[c], FS_SEL | FS_BOLD);
		x += width[c] + 1;
	}
	y++;
	for (size_t i = 0; i < shown && y < end; i++, y++) {
		x = 0;
		for (int c = 0; c < PC_N; c++) {
			if (!width[c])
				continue;
			char cell[320];
			proc_cell((proc_col_id)c, &pr[i], cell, sizeof(cell));
			int cw = frame_width(cell);
			if (cw > width[c])
				cell[width[c]] = '\0'; /* the cells are ASCII: a byte is a column */
			int at = proc_cols[c].right && cw < width[c] ? x + width[c] - cw : x;
			frame_put(f, y, at, FS_PLAIN, cell);
			x += width[c] + 1;
		}
	}
	if (shown < n && y < end)
		frame_putf(f, y, 0, FS_DIM, "(+%zu more)", n - shown);
	else if (n == 0 && y < end)
		frame_put(f, y, 0, FS_DIM, "(no processes)");
}

/* The help over the middle of the screen: every key of the table. */
static void draw_help(frame *f, const watch_model *m)
{
	char lines[32][160];
	size_t nl = 0;
	snprintf(lines[nl++], sizeof(lines[0]), "gpuvet watch keys (any key closes this)");
	snprintf(lines[nl++], sizeof(lines[0]), "%s", "");
	for (size_t i = 0; i < watch_nkeys && nl < GV_ARRAY_LEN(lines); i++) {
		char names[64];
		snprintf(lines[nl++], sizeof(lines[0]), "%-14s %s", watch_key_names(&watch_keys[i], names, sizeof(names)),
			 watch_keys[i].what);
	}
	int w = 0;
	for (size_t i = 0; i < nl; i++)
		w = (int)strlen(lines[i]) > w ? (int)strlen(lines[i]) : w;
	/* between the header and the footer, which stay readable */
	int bw = clampi(w + 4, 4, f->cols - 1), bh = clampi((int)nl + 2, 3, f->rows - 2);
	int x0 = (f->cols - 1 - bw) / 2, y0 = 1 + (f->rows - 2 - bh) / 2;
	uint32_t h = m->utf8 ? 0x2500 : '-', v = m->utf8 ? 0x2502 : '|';
	for (int y = y0; y < y0 + bh; y++) {
		bool edge = y == y0 || y == y0 + bh - 1;
		frame_fill(f, y, x0, bw, FS_HEAD, edge ? h : ' ');
		frame_fill(f, y, x0, 1, FS_HEAD, edge ? (m->utf8 ? (y == y0 ? 0x250c : 0x2514) : '+') : v);
		frame_fill(f, y, x0 + bw - 1, 1, FS_HEAD, edge ? (m->utf8 ? (y == y0 ? 0x2510 : 0x2518) : '+') : v);
	}
	for (int i = 0; i < (int)nl && i < bh - 2; i++) {
		char *t = lines[i];
		if ((int)strlen(t) > bw - 4)
			t[bw - 4 > 0 ? bw - 4 : 0] = '\0';
		frame_put(f, y0 + 1 + i, x0 + 2, i == 0 ? FS_HEAD | FS_BOLD : FS_PLAIN, t);
	}
}

void watch_layout(frame *f, const watch_model *m, watch_ui *ui)
{
	int rows = f->rows, cols = f->cols;
	if (rows <= 0 || cols <= 0)
		return;
	const snapshot *s = m->snap;
	draw_header(f, m, ui);
	int y = 1;
	if (m->error && m->error[0])
		frame_put(f, y++, 0, FS_BAD | FS_BOLD, m->error);
	if (s) {
		int visible[HEALTH_MAX_GPUS], nvis = 0;
		for (int i = 0; i < s->ngpus && nvis < HEALTH_MAX_GPUS; i++)
			if (gpu_visible(m, &s->gpus[i]))
				visible[nvis++] = i;
		/* health messages, most severe first, at most 3 rows above the footer */
		int nh = 0;
		const health_msg *hm[3];
		for (int st = HEALTH_UNHEALTHY; st >= HEALTH_DEGRADED && nh < 3; st--)
			for (size_t k = 0; k < m->health->nmsg && nh < 3; k++) {
				const health_msg *msg = &m->health->msgs[k];
				const gpu_sample *g = snapshot_gpu(s, msg->gpu);
				if ((int)msg->state == st && (!g || gpu_visible(m, g)))
					hm[nh++] = msg;
			}
		proc_row *pr;
		size_t n = proc_rows(s, m->prev, ui->sel, m->job, &pr);
		proc_sort(pr, n, ui->sort, ui->descending);

		/* the rows shared out (watch/layout.h) */
		int top = y + 1, bottom = rows - 1 - nh; /* a blank row under the header; health and footer below */
		int notes = (m->doctor ? 1 + (m->doctor_fix != NULL) : 0) + (m->job && nvis == 0);
		int avail = bottom - top - notes;
		int want = (int)(n ? n : 1);
		/* the title and the header, and at least 3 process rows beside every GPU row, 6 beside the
		 * graphs */
		int proc_min = 2 + (want < 3 ? want : 3), proc_graph = 2 + (want < 6 ? want : 6), proc_need = 2 + want;
		int fit = nvis;
		if (fit > avail - proc_min)
			fit = avail - proc_min - 1; /* and a row saying how many are hidden */
		fit = clampi(fit, nvis ? 1 : 0, nvis);
		int graph = 0;
		bool act;
		if (fit == nvis && nvis && graph_width(cols, NULL, &act)) {
			int left = avail - fit - proc_need;
			if (left >= fit)
				graph = left / fit < LAYOUT_GRAPH_MAX ? left / fit : LAYOUT_GRAPH_MAX;
			else if (avail - fit - proc_graph >= fit)
				graph = 1;
		}
		int selpos = 0;
		for (int k = 0; k < nvis; k++)
			if (s->gpus[visible[k]].index == ui->sel)
				selpos = k;
		if (selpos < ui->scroll)
			ui->scroll = selpos;
		if (selpos >= ui->scroll + fit)
			ui->scroll = selpos - fit + 1;
		ui->scroll = clampi(ui->scroll, 0, nvis > fit ? nvis - fit : 0);

		/* the name column: as wide as the longest name, within what the terminal can spare */
		int cap = cols >= 140 ? 30 : cols >= 100 ? 22 : 14, namew = 6;
		for (int k = 0; k < nvis; k++) {
			const gpu_sample *g = &s->gpus[visible[k]];
			int l = (int)strlen(g->lost ? "(lost)" : g->name);
			namew = l > namew ? l : namew;
		}
		namew = namew > cap ? cap : namew;
		y = top;
		for (int k = ui->scroll; k < nvis && k < ui->scroll + fit && y < bottom; k++) {
			const gpu_sample *g = &s->gpus[visible[k]];
			draw_gpu_row(f, m, y++, g, g->index == ui->sel, namew);
			int h = graph < bottom - y ? graph : bottom - y;
			draw_graphs(f, m, ui, y, h, g);
			y += h;
		}
		if (fit < nvis && y < bottom)
			frame_putf(f, y++, 2, FS_DIM, "(%d of %d GPUs shown; up/down scrolls)", fit, nvis);
		if (m->job && nvis == 0 && y < bottom)
			frame_putf(f, y++, 2, FS_PLAIN, "process %u and its descendants hold no GPU", m->job->root);
		if (m->doctor && y < bottom) {
			frame_putf(f, y++, 2, m->doctor_warn ? FS_WARN : FS_DIM, "job doctor: %s", m->doctor);
			if (m->doctor_fix && y < bottom)
				frame_putf(f, y++, 4, FS_PLAIN, "-> %s", m->doctor_fix);
		}
		if (y < bottom)
			draw_processes(f, m, ui, y, bottom, pr, n);
		free(pr);
		for (int i = 0; i < nh; i++) {
			int hy = rows - 1 - nh + i;
			if (hy <= 0)
				continue;
			int x = frame_putf(f, hy, 0, state_style(hm[i]->state) | FS_BOLD, "GPU%d %s", hm[i]->gpu, hm[i]->id);
			frame_putf(f, hy, x, FS_PLAIN, " %s -> %s", hm[i]->text, hm[i]->action);
		}
	} else {
		frame_put(f, y + 1, 2, FS_PLAIN, "waiting for the first sample...");
	}
	char foot[256];
	frame_put(f, rows - 1, 0, FS_DIM, watch_footer(foot, sizeof(foot)));
	if (ui->help)
		draw_help(f, m);
}
