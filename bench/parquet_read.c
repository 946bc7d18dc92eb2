/* parquet_read.c - one read of a Parquet file's rows through tab_read, as
 * a link load or the file_storage connector reads it, with a sink that
 * touches every cell (its bytes are summed, so nothing is optimised away).
 *
 *   parquet_read FILE          prints "seconds rows cells bytes peak_rss_kb"
 *
 * Built and run by bench/parquet.sh against build/libsluice.a. */
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "tabular/tabular.h"

struct touch {
	long long cells, bytes;
};

static int touch_row(void *arg, const struct tab_cell *cells, size_t n)
{
	struct touch *t = arg;

	for (size_t i = 0; i < n; i++) {
		t->cells++;
		t->bytes += (long long)cells[i].len + (cells[i].len ? cells[i].text[0] & 1 : 0);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct touch t = { 0, 0 };
	struct tab_sink sink = { NULL, touch_row, &t };
	struct tab_stats st;
	struct timespec a, b;
	struct rusage ru;
	char err[512] = "";

	if (argc != 2) {
		fprintf(stderr, "usage: parquet_read FILE\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	if (tab_read(argv[1], TAB_PARQUET, NULL, &sink, &st, err, sizeof err) != 0) {
		fprintf(stderr, "parquet_read: %s\n", err);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.3f %lld %lld %lld %ld\n", (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9,
	       st.rows, t.cells, t.bytes, ru.ru_maxrss);
	return 0;
}
