/*
 * Charts as inline SVG, drawn by gpuvet: no JavaScript, no fetch, text that stays selectable and
 * prints. Every label goes through html_text().
 */
#ifndef GPUVET_REPORT_CHART_H
#define GPUVET_REPORT_CHART_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Horizontal bars of a percentage (0-100; more is drawn to the edge and marked). */
typedef struct chart_bar {
	const char *label; /* "GEMM bf16 8192" */
	const char *value; /* the figure in words: "756.2 TFLOP/s" */
	double pct;        /* % of the limit; NAN: no bar, the value alone */
	bool bad;          /* drawn in the warning colour (a low figure, a failed check) */
} chart_bar;
void chart_bars(FILE *out, const char *title, const chart_bar *bars, size_t n);

typedef struct chart_point {
	double x, y;     /* x: Unix seconds */
	bool marked;     /* a regression: drawn as a ring with a label */
	const char *tip; /* tooltip (title element), may be NULL */
} chart_point;

typedef struct chart_series {
	const char *name; /* legend: "GPU 0", "utilization_gpu" */
	const chart_point *pts;
	size_t n;
} chart_series;

/* A vertical line on the time axis: a change of the machine (driver 580 -> 590). */
typedef struct chart_event {
	double x;
	const char *label;
} chart_event;

/* Lines over time. y starts at 0 unless a value is negative. */
void chart_lines(FILE *out, const char *title, const char *yunit, const chart_series *s, size_t ns,
		 const chart_event *ev, size_t nev);

/* The palette: colours with at least 4.5:1 contrast on white (WCAG AA for text). */
const char *chart_color(size_t i);
#endif
