#include "report/chart.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "report/html.h"

static const char *const palette[] = {"#1f5fa8", "#b35900", "#2e7d32", "#8e24aa", "#c62828", "#00695c", "#5d4037", "#37474f"};

const char *chart_color(size_t i)
{
	return palette[i % (sizeof(palette) / sizeof(palette[0]))];
}

#define BAR_LABEL_W 330
/* longer labels are cut with an ellipsis; the whole label stays in the bar's tooltip */
#define BAR_LABEL_CHARS 52
#define BAR_W 360
#define BAR_ROW 24

void chart_bars(FILE *out, const char *title, const chart_bar *bars, size_t n)
{
	int h = (int)n * BAR_ROW + 36;
	int w = BAR_LABEL_W + BAR_W + 190;
	fprintf(out, "<svg class=\"chart bars\" role=\"img\" viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" aria-label=\"", w, h,
		w, h);
	html_text(out, title);
	fputs("\"><title>", out);
	html_text(out, title);
	fputs("</title>\n", out);
	/* the 100% line and quarter marks */
	for (int q = 0; q <= 4; q++) {
		int x = BAR_LABEL_W + BAR_W * q / 4;
		fprintf(out, "<line x1=\"%d\" y1=\"4\" x2=\"%d\" y2=\"%d\" class=\"grid%s\"/>", x, x, h - 22, q == 4 ? " full" : "");
		fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">%d%%</text>\n", x, h - 8, q * 25);
	}
	for (size_t i = 0; i < n; i++) {
		const chart_bar *b = &bars[i];
		int y = 6 + (int)i * BAR_ROW;
		fprintf(out, "<g class=\"bar%s\"><text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"label\">", b->bad ? " bad" : "",
			BAR_LABEL_W - 8, y + 15);
		if (b->label && strlen(b->label) > BAR_LABEL_CHARS) {
			char cut[BAR_LABEL_CHARS + 1];
			size_t k = BAR_LABEL_CHARS - 1;
			while (k > 0 && ((unsigned char)b->label[k] & 0xc0) == 0x80)
				k--; /* not inside a UTF-8 sequence */
			memcpy(cut, b->label, k);
			cut[k] = '\0';
			html_text(out, cut);
			fputs("\xe2\x80\xa6", out);
		} else {
			html_text(out, b->label);
		}
		fputs("</text>", out);
		if (isfinite(b->pct)) {
			double p = b->pct < 0 ? 0 : b->pct > 100 ? 100 : b->pct;
			fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" rx=\"2\"><title>", BAR_LABEL_W, y + 3,
				BAR_W * p / 100.0, BAR_ROW - 8);
			html_text(out, b->label);
			fprintf(out, ": %.1f%% of peak</title></rect>", b->pct);
		}
		fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"value\">", BAR_LABEL_W + BAR_W + 8, y + 15);
		html_text(out, b->value);
		if (isfinite(b->pct))
			fprintf(out, " (%.1f%%%s)", b->pct, b->pct > 100 ? ", above the listed peak" : "");
		fputs("</text></g>\n", out);
	}
	fputs("</svg>\n", out);
}

/* A round step (1, 2 or 5 times a power of ten) for about n ticks over span. */
static double nice_step(double span, int n)
{
	if (!(span > 0))
		return 1;
	double raw = span / n, p = pow(10, floor(log10(raw)));
	double m = raw / p;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

static void time_label(char *buf, size_t size, double t, double span)
{
	long long secs;
	struct tm tm;
	time_t s;
	if (!seconds_to_time(t, &secs) || (s = (time_t)secs, !gmtime_r(&s, &tm))) {
		str_copy(buf, size, "?"); /* no time: a document's NaN or 1e300 */
		return;
	}
	if (span > 2 * 86400)
		strftime(buf, size, "%Y-%m-%d", &tm);
	else if (span > 2 * 3600)
		strftime(buf, size, "%m-%d %H:%M", &tm);
	else
		strftime(buf, size, "%H:%M:%S", &tm);
}

#define L_W 760
#define L_H 260
#define L_LEFT 70
#define L_RIGHT 20
#define L_TOP 40
#define L_BOTTOM 44

void chart_lines(FILE *out, const char *title, const char *yunit, const chart_series *s, size_t ns,
		 const chart_event *ev, size_t nev)
{
	double x0 = INFINITY, x1 = -INFINITY, y0 = 0, y1 = -INFINITY;
	for (size_t i = 0; i < ns; i++)
		for (size_t j = 0; j < s[i].n; j++) {
			const chart_point *p = &s[i].pts[j];
			if (!isfinite(p->x) || !isfinite(p->y))
				continue;
			x0 = fmin(x0, p->x), x1 = fmax(x1, p->x);
			y0 = fmin(y0, p->y), y1 = fmax(y1, p->y);
		}
	for (size_t i = 0; i < nev; i++)
		if (isfinite(ev[i].x) && isfinite(x0))
			x0 = fmin(x0, ev[i].x), x1 = fmax(x1, ev[i].x);
	if (!isfinite(x0)) {
		fputs("<p class=\"empty\">no values to draw</p>\n", out);
		return;
	}
	if (x1 - x0 < 1)
		x0 -= 1, x1 += 1;
	if (!(y1 > y0))
		y1 = y0 + 1;
	double ystep = nice_step(y1 - y0, 4);
	y1 = ceil(y1 / ystep) * ystep;
	y0 = floor(y0 / ystep) * ystep;
	double pw = L_W - L_LEFT - L_RIGHT, ph = L_H - L_TOP - L_BOTTOM;
#define PX(x) (L_LEFT + ((x)-x0) / (x1 - x0) * pw)
#define PY(y) (L_TOP + ph - ((y)-y0) / (y1 - y0) * ph)
	fprintf(out, "<svg class=\"chart lines\" role=\"img\" viewBox=\"0 0 %d %d\" width=\"%d\" aria-label=\"", L_W,
		L_H, L_W);
	html_text(out, title);
	fputs("\"><title>", out);
	html_text(out, title);
	fputs("</title>\n", out);
	/* legend */
	double lx = L_LEFT;
	for (size_t i = 0; i < ns; i++) {
		fprintf(out, "<rect x=\"%.0f\" y=\"8\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.0f\" y=\"18\" class=\"legend\">",
			lx, chart_color(i), lx + 16);
		html_text(out, s[i].name);
		fputs("</text>", out);
		lx += 28 + 7.5 * (double)strlen(s[i].name ? s[i].name : "");
	}
	fputc('\n', out);
	/* y grid and labels */
	for (double y = y0; y <= y1 + ystep / 2; y += ystep) {
		char b[64];
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"grid\"/>", L_LEFT, PY(y), L_W - L_RIGHT, PY(y));
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" class=\"tick\">%s</text>\n", L_LEFT - 6, PY(y) + 4,
			fmt_number(b, sizeof(b), y));
	}
	fprintf(out, "<text x=\"14\" y=\"%d\" class=\"axis\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">", L_TOP + (int)ph / 2,
		L_TOP + (int)ph / 2);
	html_text(out, yunit);
	fputs("</text>\n", out);
	/* x ticks: up to five times, UTC; fewer over a few seconds, so that no two read the same */
	int nt = x1 - x0 >= 4 ? 4 : 1;
	for (int k = 0; k <= nt; k++) {
		double t = x0 + (x1 - x0) * k / nt;
		char b[64];
		time_label(b, sizeof(b), t, x1 - x0);
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" class=\"tick\">%s</text>", PX(t), L_H - L_BOTTOM + 16,
			k == 0 ? "start" : k == nt ? "end" : "middle", b);
	}
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"axis\">UTC</text>\n", L_W - L_RIGHT, L_H - 6);
	/* events: a dashed line and its label */
	for (size_t i = 0; i < nev; i++) {
		if (!isfinite(ev[i].x))
			continue;
		fprintf(out, "<g class=\"event\"><line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" y=\"%d\">", PX(ev[i].x),
			L_TOP - 6, PX(ev[i].x), L_TOP + ph, PX(ev[i].x) + 3, L_TOP - 8 + (int)(i % 2) * 10);
		html_text(out, ev[i].label);
		fputs("</text></g>\n", out);
	}
	for (size_t i = 0; i < ns; i++) {
		const char *c = chart_color(i);
		fprintf(out, "<g class=\"series\" data-series=\"");
		html_text(out, s[i].name);
		fprintf(out, "\"><polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", c);
		for (size_t j = 0; j < s[i].n; j++)
			if (isfinite(s[i].pts[j].x) && isfinite(s[i].pts[j].y))
				fprintf(out, "%.1f,%.1f ", PX(s[i].pts[j].x), PY(s[i].pts[j].y));
		fputs("\"/>", out);
		/* points: dots for a few, none for dense recordings (the line shows them) */
		bool dots = s[i].n <= 60;
		for (size_t j = 0; j < s[i].n; j++) {
			const chart_point *p = &s[i].pts[j];
			if (!isfinite(p->x) || !isfinite(p->y) || (!dots && !p->marked))
				continue;
			if (p->marked)
				fprintf(out, "<circle class=\"regression\" cx=\"%.1f\" cy=\"%.1f\" r=\"7\"/>", PX(p->x), PY(p->y));
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\">", PX(p->x), PY(p->y), c);
			if (p->tip) {
				fputs("<title>", out);
				html_text(out, p->tip);
				fputs("</title>", out);
			}
			fputs("</circle>", out);
		}
		fputs("</g>\n", out);
	}
#undef PX
#undef PY
	fputs("</svg>\n", out);
}
