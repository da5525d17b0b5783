#include "bench/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double stats_median(const double *v, size_t n)
{
	if (n == 0)
		return NAN;
	double *s = xmalloc(n * sizeof(*s));
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	double m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

bool stats_summarise(const double *v, size_t n, bench_stats *out)
{
	memset(out, 0, sizeof(*out));
	out->median = out->min = out->max = out->mean = NAN;
	double *ok = xmalloc((n ? n : 1) * sizeof(*ok));
	size_t k = 0;
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		if (isfinite(v[i]) && v[i] > 0) {
			if (k < BENCH_STATS_KEEP)
				out->samples[out->nsamples++] = v[i];
			ok[k++] = v[i];
			sum += v[i];
		}
	if (k == 0) {
		free(ok);
		return false;
	}
	qsort(ok, k, sizeof(*ok), cmp_double);
	out->n = k;
	out->min = ok[0];
	out->max = ok[k - 1];
	out->median = k % 2 ? ok[k / 2] : (ok[k / 2 - 1] + ok[k / 2]) / 2;
	out->mean = sum / (double)k;
	out->spread = k > 1 ? out->max / out->min - 1 : 0;
	free(ok);
	return true;
}

bool stats_rates(const double *seconds, size_t n, double work, bench_stats *out)
{
	double *r = xmalloc((n ? n : 1) * sizeof(*r));
	for (size_t i = 0; i < n; i++)
		r[i] = seconds[i] > 0 && isfinite(seconds[i]) ? work / seconds[i] : NAN;
	bool ok = stats_summarise(r, n, out);
	free(r);
	return ok;
}
