/*
 * Statistics of benchmark repeats: every figure is the median of its repeats, reported with the
 * minimum and maximum and the spread (max/min) so that a noisy measurement shows itself.
 */
#ifndef GPUVET_BENCH_STATS_H
#define GPUVET_BENCH_STATS_H
#include <stdbool.h>
#include <stddef.h>

#define BENCH_STATS_KEEP 64

typedef struct bench_stats {
	size_t n;      /* repeats that produced a finite, positive value */
	double samples[BENCH_STATS_KEEP]; /* those values in the order measured (the first 64), so a
					   * spread can be told apart: one slow repeat, or a drift */
	size_t nsamples;
	double median; /* of those */
	double min, max, mean;
	double spread; /* max/min - 1 (0.03 is 3%); 0 with fewer than two samples */
} bench_stats;

/* Summarises v[0..n) (not modified). Samples that are NaN, infinite or <= 0 are ignored: a
 * timer that failed must not pull the median. Returns false when no sample is usable. */
bool stats_summarise(const double *v, size_t n, bench_stats *out);
/* Median of v[0..n) (any order; not modified); NaN when n is 0. Even n: mean of the middle two. */
double stats_median(const double *v, size_t n);

/* Converts per-repeat times (seconds) into rates (work/time) and summarises the rates, so that
 * the reported minimum rate comes from the slowest repeat. */
bool stats_rates(const double *seconds, size_t n, double work, bench_stats *out);
#endif
