/* vec_speed.c - exact top-k scan time per metric against the memory read
 * bound, measured in the same process on the same bytes.
 *
 *   vec_speed [rows] [dim] [reps]        defaults 100000 384 9
 *
 * The rows are random floats in one 64-byte aligned block, larger than the
 * last-level cache at the default size, so both loops stream from DRAM.
 * Each repetition times, in this order, one read of all the bytes (a sum
 * over them: AVX2 with eight independent accumulators when the CPU has it,
 * so the bound is not flattered by a slow reader) and one vec_topk(k = 10)
 * per metric with the run-time kernel, then the portable kernel, then
 * vec_topk_coded (the pass over the rows' 8-bit codes, then the rows that
 * can still be in the top 10 scored from the floats) for L2, cos and dot.
 * Medians of the repetitions are printed, with scan / read per metric (for
 * the coded pass still against reading the float rows: what it replaces)
 * and the rows the coded pass scored exactly.  Built and run by
 * bench/retrieval_speed.sh. */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"

#define K 10
#define MAX_REPS 101

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((target("avx2")))
static float read_avx2(const float *p, size_t n)
{
	__m256 s[8];
	size_t i = 0;

	for (int j = 0; j < 8; j++)
		s[j] = _mm256_setzero_ps();
	for (; i + 64 <= n; i += 64)
		for (int j = 0; j < 8; j++)
			s[j] = _mm256_add_ps(s[j], _mm256_load_ps(p + i + 8 * j));
	for (int j = 1; j < 8; j++)
		s[0] = _mm256_add_ps(s[0], s[j]);
	float out[8], r = 0;
	_mm256_storeu_ps(out, s[0]);
	for (int j = 0; j < 8; j++)
		r += out[j];
	for (; i < n; i++)
		r += p[i];
	return r;
}

static float read_portable(const float *p, size_t n)
{
	float s[16] = { 0 }, r = 0;
	size_t i = 0;

	for (; i + 16 <= n; i += 16)
		for (int j = 0; j < 16; j++)
			s[j] += p[i + j];
	for (int j = 0; j < 16; j++)
		r += s[j];
	for (; i < n; i++)
		r += p[i];
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	size_t rows = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;
	size_t dim = argc > 2 ? strtoul(argv[2], NULL, 10) : 384;
	int reps = argc > 3 ? atoi(argv[3]) : 9;
	static double t_read[MAX_REPS], t_scan[3][VEC_METRIC_COUNT][MAX_REPS];
	size_t cand[VEC_METRIC_COUNT] = { 0 };
	bool avx2 = vec_have_avx2();
	volatile float sink = 0;
	struct vec_hit hits[K];

	if (rows == 0 || dim == 0 || reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: vec_speed [rows] [dim] [reps 1..%d]\n", MAX_REPS);
		return 2;
	}
	size_t n = rows * dim, bytes = n * sizeof(float);
	float *base = aligned_alloc(64, (bytes + 63) / 64 * 64);
	float *norms = malloc(rows * sizeof *norms), *q = malloc(dim * sizeof *q);
	if (base == NULL || norms == NULL || q == NULL) {
		fprintf(stderr, "vec_speed: out of memory\n");
		return 1;
	}
	srand(1);
	for (size_t i = 0; i < n; i++)
		base[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < rows; i++)
		norms[i] = vec_norm(base + i * dim, dim);
	for (size_t i = 0; i < dim; i++)
		q[i] = (float)rand() / RAND_MAX * 2 - 1;
	float qn = vec_norm(q, dim);
	size_t stride = vec_code_stride(dim);
	int8_t *codes = calloc(1, vec_codes_size(rows, dim));
	float *scale = malloc(rows * sizeof *scale), *cerr = malloc(rows * sizeof *cerr);
	if (codes == NULL || scale == NULL || cerr == NULL) {
		fprintf(stderr, "vec_speed: out of memory\n");
		return 1;
	}
	for (size_t i = 0; i < rows; i++)
		(void)vec_encode_row(base + i * dim, dim, codes, i, &scale[i], &cerr[i]);
	const struct vec_codes vc = { codes, stride, scale, cerr };

	for (int r = 0; r < reps; r++) {
		double t0 = now_s();
		sink += avx2 ? read_avx2(base, n) : read_portable(base, n);
		t_read[r] = now_s() - t0;
		for (int kern = 0; kern < 2; kern++)
			for (int m = 0; m < VEC_METRIC_COUNT; m++) {
				t0 = now_s();
				vec_topk_with(kern == 0 ? VEC_KERNEL_AUTO : VEC_KERNEL_PORTABLE,
				              (enum vec_metric)m, q, qn, base, norms, rows, dim, NULL, K,
				              hits);
				t_scan[kern][m][r] = now_s() - t0;
				sink += hits[0].score;
			}
		for (int m = 0; m < VEC_METRIC_COUNT; m++) {
			t0 = now_s();
			vec_topk_coded((enum vec_metric)m, q, qn, base, norms, &vc, rows, dim, NULL,
			               K, hits, &cand[m]);
			t_scan[2][m][r] = now_s() - t0;
			sink += hits[0].score;
		}
	}
	double rd = median(t_read, reps);
	printf("rows %zu, dim %zu, %.1f MB, %d repetitions, medians\n", rows, dim,
	       bytes / 1e6, reps);
	printf("read bound (%s sum): %.2f ms, %.2f GB/s\n", avx2 ? "AVX2" : "portable",
	       rd * 1e3, bytes / rd / 1e9);
	printf("%-6s %-10s %10s %12s %8s\n", "metric", "kernel", "top-10 ms", "GB/s", "ratio");
	for (int kern = 0; kern < 2; kern++)
		for (int m = 0; m < VEC_METRIC_COUNT; m++) {
			double t = median(t_scan[kern][m], reps);
			printf("%-6s %-10s %10.2f %12.2f %8.2f\n", vec_metric_name((enum vec_metric)m),
			       kern == 0 ? (avx2 ? "avx2" : "portable") : "portable", t * 1e3,
			       bytes / t / 1e9, t / rd);
		}
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		double t = median(t_scan[2][m], reps);
		if (m == VEC_L1 || m == VEC_MAX)
			continue;                       /* the float scan */
		printf("%-6s %-10s %10.2f %12.2f %8.2f   %zu rows scored exactly\n",
		       vec_metric_name((enum vec_metric)m), "coded", t * 1e3, bytes / t / 1e9,
		       t / rd, cand[m]);
	}
	free(codes);
	free(scale);
	free(cerr);
	free(base);
	free(norms);
	free(q);
	return sink == 12345.0f ? 3 : 0;
}
