/* vec_batch.c - sluice's exact top-k, one question at a time, as sluice
 * answers them: the float scan (vec_topk) and the pass over the rows'
 * 8-bit codes (vec_topk_coded), in queries per second on one thread.
 *
 *   vec_batch rows dim reps k out_dir
 *
 * The rows and 256 queries are random floats (the same seed as
 * bench/vec_batch.py reads back: both are written to out_dir as raw
 * float32, base.f32 and queries.f32, so FAISS searches the same bytes).
 * Every repetition answers the 256 queries with the cos metric; the
 * median repetition is printed, and for the codes the rows scored from the
 * floats per query.  Then the codes again in batches of 2 to 16
 * queries, each batch one pass over them, on one thread and split between
 * two (vec_topk_coded_parts, as sluice work ranks a batch), whose hits
 * must be the ones of one at a time.  Run by bench/vec_batch.sh, which runs
 * FAISS's batches beside it.
 *
 * COPIES (environment, default 1): the batches read COPIES copies of the
 * codes in turn, so that with enough of them (their total well past the
 * last-level cache) each pass reads its codes from memory, as a pass in
 * the service does once other processes have had the cache, instead of
 * from the cache the previous pass left them in. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"

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
	if (argc != 6) {
		fprintf(stderr, "usage: vec_batch rows dim reps k out_dir\n");
		return 2;
	}
	size_t rows = strtoul(argv[1], NULL, 10), dim = strtoul(argv[2], NULL, 10);
	int reps = atoi(argv[3]);
	size_t k = strtoul(argv[4], NULL, 10);
	float *base = malloc(rows * dim * sizeof *base), *norms = malloc(rows * sizeof *norms);
	float *q = malloc(NQ * dim * sizeof *q), qn[NQ];
	struct vec_hit *hits = malloc(NQ * k * sizeof *hits);
	size_t stride = vec_code_stride(dim), cand = 0;
	int8_t *codes = calloc(1, vec_codes_size(rows, dim));
	float *scale = malloc(rows * sizeof *scale), *cerr = malloc(rows * sizeof *cerr);
	static double t[MAX_REPS];
	volatile float sink = 0;

	if (rows == 0 || dim == 0 || k == 0 || reps < 1 || reps > MAX_REPS || base == NULL ||
	    norms == NULL || q == NULL || hits == NULL || codes == NULL || scale == NULL ||
	    cerr == NULL) {
		fprintf(stderr, "vec_batch: bad arguments or out of memory\n");
		return 2;
	}
	srand(1);
	for (size_t i = 0; i < rows * dim; i++)
		base[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < NQ * dim; i++)
		q[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < rows; i++) {
		norms[i] = vec_norm(base + i * dim, dim);
		(void)vec_encode_row(base + i * dim, dim, codes, i, &scale[i], &cerr[i]);
	}
	const struct vec_codes vc = { codes, stride, scale, cerr };
	for (size_t j = 0; j < NQ; j++)
		qn[j] = vec_norm(q + j * dim, dim);
	if (dump(argv[5], "base.f32", base, rows * dim) != 0 ||
	    dump(argv[5], "queries.f32", q, NQ * dim) != 0)
		return 1;
	printf("rows %zu, dim %zu, k %zu, %d queries, cos, one thread, median of %d\n",
	       rows, dim, k, NQ, reps);
	for (int coded = 0; coded < 2; coded++) {
		size_t scored = 0;

		for (int r = 0; r < reps; r++) {
			double t0 = now_s();

			scored = 0;
			for (size_t j = 0; j < NQ; j++) {
				struct vec_hit *h = hits + j * k;

				if (coded)
					vec_topk_coded(VEC_COS, q + j * dim, qn[j], base, norms, &vc, rows, dim,
					               NULL, k, h, &cand);
				else
					vec_topk(VEC_COS, q + j * dim, qn[j], base, norms, rows, dim, NULL, k, h);
				scored += coded ? cand : rows;
				sink += h[0].score;
			}
			t[r] = now_s() - t0;
		}
		qsort(t, (size_t)reps, sizeof *t, cmp_double);
		double m = t[reps / 2];
		printf("sluice %-6s one at a time: %8.1f queries/s (%.2f ms a query, %zu rows "
		       "scored from the floats a query)\n", coded ? "codes" : "floats", NQ / m,
		       m / NQ * 1e3, scored / NQ);
	}
	/* The codes in batches: one pass over them for each batch of
	 * questions, on one thread and on two (vec_topk_coded_parts, as
	 * sluice work ranks the questions it takes together); the hits must
	 * be the ones above. */
	static const size_t batches[] = { 2, 4, 5, 6, 7, 8, 11, 12, 16 };
	struct vec_hit *one = malloc(NQ * k * sizeof *one);
	struct vec_question vq[16];
	if (one == NULL) {
		fprintf(stderr, "vec_batch: out of memory\n");
		return 1;
	}
	memcpy(one, hits, NQ * k * sizeof *one);
	size_t copies = getenv("COPIES") ? strtoul(getenv("COPIES"), NULL, 10) : 1;
	size_t csize = vec_codes_size(rows, dim);
	int8_t *cc = copies > 1 ? malloc(copies * csize) : codes;
	if (copies == 0 || cc == NULL) {
		fprintf(stderr, "vec_batch: bad COPIES or out of memory\n");
		return 1;
	}
	for (size_t c = 0; copies > 1 && c < copies; c++)
		memcpy(cc + c * csize, codes, csize);
	if (copies > 1)
		printf("the batches read %zu copies of the codes in turn (%.0f MB)\n", copies,
		       copies * csize / 1e6);
	for (size_t parts = 1; parts <= 2; parts++)
	for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
		size_t b = batches[bi], same = 0;

		for (int r = 0; r < reps; r++) {
			double t0 = now_s();

			for (size_t j = 0; j < NQ; j += b) {
				size_t nb = NQ - j < b ? NQ - j : b;     /* the last may be short */

				for (size_t i = 0; i < nb; i++)
					vq[i] = (struct vec_question){ VEC_COS, q + (j + i) * dim, qn[j + i],
					                               NULL, k, hits + (j + i) * k, 0, 0 };
				const struct vec_codes vcc = { cc + (j / b % copies) * csize, stride,
				                               scale, cerr };

				vec_topk_coded_parts(VEC_KERNEL_AUTO, vq, nb, base, norms, &vcc, rows, dim,
				                     parts);
				sink += hits[j * k].score;
			}
			t[r] = now_s() - t0;
		}
		same = memcmp(one, hits, NQ * k * sizeof *one) == 0;
		qsort(t, (size_t)reps, sizeof *t, cmp_double);
		double m = t[reps / 2];
		printf("sluice codes  batch %3zu, %zu thread%s: %8.1f queries/s (%.2f ms a query)%s\n",
		       b, parts, parts > 1 ? "s" : " ", NQ / m, m / NQ * 1e3,
		       same ? "" : "  HITS DIFFER FROM ONE AT A TIME");
		if (!same)
			return 1;
	}
	free(one);
	if (cc != codes)
		free(cc);
	free(codes);
	free(scale);
	free(cerr);
	free(base);
	free(norms);
	free(q);
	free(hits);
	return sink == 12345.0f ? 3 : 0;
}
