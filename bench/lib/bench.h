/* bench/lib/bench.h - the clock and the sort order the build-against-BASE
 * bench programs (index_write.c, vec_questions.c) share; bench/lib/ab.sh's
 * ab_build puts this directory on their include path. */
#ifndef SLUICE_BENCH_H
#define SLUICE_BENCH_H

#include <time.h>

static inline double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* qsort's order of doubles, ascending. */
static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

#endif
