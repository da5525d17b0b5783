/* The live view's keys (watch/keys.h). */
#include "watch/keys.h"

#include <curses.h> /* the key codes only: nothing here draws */
#include <string.h>

#include "core/util.h"
#include "watch/view.h"

#define ESC 27

const watch_key watch_keys[] = {
	{.keys = {'h', '?', KEY_F(1)}, .action = WA_HELP, .what = "this help; any key closes it", .footer = "h help"},
	{.keys = {'q', 'Q', ESC, KEY_F(10)}, .action = WA_QUIT, .what = "quit", .footer = "q quit"},
	{.keys = {KEY_UP, 'k'}, .action = WA_UP, .what = "select the GPU above: its processes alone"},
	{.keys = {KEY_DOWN, 'j'}, .action = WA_DOWN, .what = "select the GPU below", .footer = "up/down GPU"},
	{.keys = {'a', 'A'}, .action = WA_ALL, .what = "all GPUs and their processes again", .footer = "a all"},
	{.keys = {'.', '>', 's', KEY_F(6)}, .action = WA_SORT_NEXT, .what = "sort the processes by the next column",
	 .footer = ", . sort"},
	{.keys = {',', '<', 'S'}, .action = WA_SORT_PREV, .what = "sort by the previous column"},
	{.keys = {'/'}, .action = WA_SORT_REVERSE, .what = "reverse the order", .footer = "/ reverse"},
	{.keys = {'+'}, .action = WA_SORT_ASC, .what = "sort ascending"},
	{.keys = {'-'}, .action = WA_SORT_DESC, .what = "sort descending"},
	{.keys = {'p', 'P'}, .action = WA_PAUSE, .what = "pause sampling, or go on", .footer = "p pause"},
	{.keys = {'}'}, .action = WA_SPAN_LONGER, .what = "twice the history in the graphs (up to 15 minutes)",
	 .footer = "{ } span"},
	{.keys = {'{'}, .action = WA_SPAN_SHORTER, .what = "half the history (down to 30 s)"},
};
const size_t watch_nkeys = GV_ARRAY_LEN(watch_keys);

void watch_ui_init(watch_ui *ui)
{
	*ui = (watch_ui){.sort = PC_MEM, .descending = proc_cols[PC_MEM].descending, .sel = -1, .span = 300};
}

static const char *key_label(int k, char *buf, size_t size)
{
	if (k == ESC)
		return "Esc";
	if (k == KEY_UP)
		return "up";
	if (k == KEY_DOWN)
		return "down";
	if (k >= KEY_F(1) && k <= KEY_F(12))
		snprintf(buf, size, "F%d", k - KEY_F0);
	else if (k > ' ' && k < 0x7f)
		snprintf(buf, size, "%c", k);
	else
		snprintf(buf, size, "#%d", k);
	return buf;
}

const char *watch_key_names(const watch_key *k, char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < GV_ARRAY_LEN(k->keys) && k->keys[i]; i++) {
		char one[16];
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0, "%s%s", i ? " " : "",
					key_label(k->keys[i], one, sizeof(one)));
		if (len >= size)
			break;
	}
	return buf;
}

const char *watch_footer(char *buf, size_t size)
{
	size_t len = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < watch_nkeys && len < size; i++)
		if (watch_keys[i].footer)
			len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? "  " : "", watch_keys[i].footer);
	return buf;
}

static bool gpu_visible(const job *j, const gpu_sample *g)
{
	return !j || job_on_gpu(j, g, NULL);
}

static void move_sel(watch_ui *ui, const snapshot *s, const job *j, int dir)
{
	if (!s || s->ngpus == 0)
		return;
	int pos = -1, vis[HEALTH_MAX_GPUS], n = 0;
	for (int i = 0; i < s->ngpus && n < HEALTH_MAX_GPUS; i++)
		if (gpu_visible(j, &s->gpus[i])) {
			if (s->gpus[i].index == ui->sel)
				pos = n;
			vis[n++] = s->gpus[i].index;
		}
	if (n == 0)
		return;
	pos = pos < 0 ? (dir > 0 ? 0 : n - 1) : pos + dir;
	pos = pos < 0 ? 0 : pos >= n ? n - 1 : pos;
	ui->sel = vis[pos];
}

static void sort_by(watch_ui *ui, int col)
{
	ui->sort = (proc_col_id)((col + PC_N) % PC_N);
	ui->descending = proc_cols[ui->sort].descending; /* a new column starts in its own order */
}

watch_action watch_press(watch_ui *ui, int key, const snapshot *s, const job *j)
{
	if (key == ERR || key == KEY_RESIZE)
		return WA_NONE;
	if (ui->help) {
		ui->help = false;
		return WA_CLOSE_HELP;
	}
	const watch_key *k = NULL;
	for (size_t i = 0; i < watch_nkeys && !k; i++)
		for (size_t n = 0; n < GV_ARRAY_LEN(watch_keys[i].keys) && watch_keys[i].keys[n]; n++)
			if (watch_keys[i].keys[n] == key)
				k = &watch_keys[i];
	if (!k)
		return WA_NONE;
	switch (k->action) {
	case WA_HELP: ui->help = true; break;
	case WA_QUIT: ui->quit = true; break;
	case WA_UP: move_sel(ui, s, j, -1); break;
	case WA_DOWN: move_sel(ui, s, j, +1); break;
	case WA_ALL: ui->sel = -1; break;
	case WA_SORT_NEXT: sort_by(ui, (int)ui->sort + 1); break;
	case WA_SORT_PREV: sort_by(ui, (int)ui->sort - 1); break;
	case WA_SORT_REVERSE: ui->descending = !ui->descending; break;
	case WA_SORT_ASC: ui->descending = false; break;
	case WA_SORT_DESC: ui->descending = true; break;
	case WA_PAUSE: ui->paused = !ui->paused; break;
	case WA_SPAN_LONGER: ui->span = ui->span * 2 > RING_LEN ? RING_LEN : ui->span * 2; break;
	case WA_SPAN_SHORTER: ui->span = ui->span / 2 < 30 ? 30 : ui->span / 2; break;
	case WA_NONE:
	case WA_CLOSE_HELP: break;
	}
	return k->action;
}

void watch_keys_print(FILE *out)
{
	fputs("\nkeys of the live view (h or ? shows them there too):\n", out);
	for (size_t i = 0; i < watch_nkeys; i++) {
		char names[64];
		fprintf(out, "  %-14s %s\n", watch_key_names(&watch_keys[i], names, sizeof(names)), watch_keys[i].what);
	}
	fputs("the processes sort by the columns", out);
	for (int c = 0; c < PC_N; c++)
		fprintf(out, "%s %s", c ? "," : "", proc_cols[c].head);
	fputs("\n", out);
}
