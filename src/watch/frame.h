/*
 * One frame of the live view as a grid of styled cells: what the layout (watch/layout.h) writes
 * and the terminal side (watch/tui.c) paints, so that the whole screen is a value a test can
 * read without a terminal. Every cell holds one code point of one column's width (the view's
 * own text is ASCII after str_sanitize, its bars and graphs single-width block characters).
 */
#ifndef GPUVET_WATCH_FRAME_H
#define GPUVET_WATCH_FRAME_H
#include <stddef.h>
#include <stdint.h>

#include "core/util.h"

/* A cell's colour (the low bits) and boldness; the terminal side maps them to colour pairs. */
enum {
	FS_PLAIN = 0,
	FS_OK,
	FS_WARN,
	FS_BAD,
	FS_DIM,
	FS_HEAD,
	FS_SEL,
	FS_NCOLORS,
	FS_BOLD = 0x10,
	FS_REVERSE = 0x20,
};
#define FS_COLOR(style) ((style) & 0x0f)

typedef struct frame_cell {
	uint32_t ch; /* a Unicode code point */
	uint8_t style;
} frame_cell;

typedef struct frame {
	int rows, cols;
	frame_cell *cell; /* rows * cols, row by row */
} frame;

/* A blank frame (spaces, FS_PLAIN); rows or cols under 1 make an empty one. */
void frame_init(frame *f, int rows, int cols);
void frame_free(frame *f);

/* Writes UTF-8 text at (y, x) and returns the column after it. Text stops before the last
 * column: a terminal that writes there moves the cursor to the next row (or scrolls at the
 * bottom). Outside the frame nothing is written; a control character is written as '?'. */
int frame_put(frame *f, int y, int x, int style, const char *text);
int frame_putf(frame *f, int y, int x, int style, const char *fmt, ...) GV_PRINTF(5, 6);
/* n cells of one code point from (y, x), within the same limits. */
int frame_fill(frame *f, int y, int x, int n, int style, uint32_t ch);
/* Restyles n cells from (y, x) and keeps their text (a selected row, a sorted column). */
void frame_style(frame *f, int y, int x, int n, int style);

/* Row y as UTF-8 without its trailing blanks, into buf; "" outside the frame. */
const char *frame_row(const frame *f, int y, char *buf, size_t size);
/* The number of UTF-8 code points in text (its width in cells, for the view's text). */
int frame_width(const char *text);
#endif
