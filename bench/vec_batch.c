/* vec_batch.c - exact top-k of many questions in one pass (vec_topk_many)
 * against one scan per question (vec_topk), in queries per second on one
 * thread.
 *
 *   vec_batch rows dim reps k out_dir batch...
 *
 * The rows and 256 queries are random floats (the same seed as
 * bench/vec_batch.py reads back: both are written to out_dir as raw
 * float32, base.f32 and queries.f32, so FAISS searches the same bytes).
 * For each batch size b, every repetition answers the 256 queries in
 * batches of b with the cos metric; the median repetition is printed.
 * Run by bench/vec_batch.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "retrieval/vec.h"

#define NQ 256
#define MAX_REPS 51

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int dump(const char *dir, const char *name, const float *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	if ((f = fopen(path, "wb")) == NULL || fwrite(p, sizeof *p, n, f) != n) {
		perror(path);
		return -1;
	}
	return fclose(f);
}

int main(int argc, char **argv)
{
	if (argc < 7) {
		fprintf(stderr, "usage: vec_batch rows dim reps k out_dir batch...\n");
		return 2;
	}
	size_t rows = strtoul(argv[1], NULL, 10), dim = strtoul(argv[2], NULL, 10);
	int reps = atoi(argv[3]);
	size_t k = strtoul(argv[4], NULL, 10);
	float *base = malloc(rows * dim * sizeof *base), *norms = malloc(rows * sizeof *norms);
	float *q = malloc(NQ * dim * sizeof *q), qn[NQ];
	struct vec_hit *hits = malloc(NQ * k * sizeof *hits);
	struct vec_query qs[NQ];
	static double t[MAX_REPS];
	volatile float sink = 0;

	if (rows == 0 || dim == 0 || k == 0 || reps < 1 || reps > MAX_REPS || base == NULL ||
	    norms == NULL || q == NULL || hits == NULL) {
		fprintf(stderr, "vec_batch: bad arguments or out of memory\n");
		return 2;
	}
	srand(1);
	for (size_t i = 0; i < rows * dim; i++)
		base[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < NQ * dim; i++)
		q[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < rows; i++)
		norms[i] = vec_norm(base + i * dim, dim);
	for (size_t j = 0; j < NQ; j++)
		qn[j] = vec_norm(q + j * dim, dim);
	if (dump(argv[5], "base.f32", base, rows * dim) != 0 ||
	    dump(argv[5], "queries.f32", q, NQ * dim) != 0)
		return 1;
	printf("rows %zu, dim %zu, k %zu, %d queries, cos, one thread, median of %d\n",
	       rows, dim, k, NQ, reps);
	for (int a = 6; a < argc; a++) {
		size_t b = strtoul(argv[a], NULL, 10);

		if (b == 0 || b > NQ)
			continue;
		for (int r = 0; r < reps; r++) {
			double t0 = now_s();

			for (size_t j0 = 0; j0 + b <= NQ; j0 += b) {
				for (size_t j = 0; j < b; j++)
					qs[j] = (struct vec_query){ VEC_COS, q + (j0 + j) * dim, qn[j0 + j],
					                            NULL, k, hits + (j0 + j) * k, 0 };
				if (b == 1)
					qs[0].nout = vec_topk(VEC_COS, qs[0].q, qs[0].qnorm, base, norms,
					                      rows, dim, NULL, k, qs[0].out);
				else if (vec_topk_many(qs, b, base, norms, rows, dim) != 0)
					return 1;
				sink += qs[0].out[0].score;
			}
			t[r] = now_s() - t0;
		}
		qsort(t, (size_t)reps, sizeof *t, cmp_double);
		double m = t[reps / 2], done = (double)(NQ / b * b);
		printf("sluice batch %3zu: %8.1f queries/s (%.2f ms a query)\n", b, done / m,
		       m / done * 1e3);
	}
	free(base);
	free(norms);
	free(q);
	free(hits);
	return sink == 12345.0f ? 3 : 0;
}
