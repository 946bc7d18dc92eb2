/* test_vec.c - distances against hand-computed values, best-first order
 * per metric, the AVX2 kernels against the portable ones, and the top-k
 * through 8-bit codes against the float scan.  Each kernel
 * is tested on its own; on a CPU without AVX2 and FMA the AVX2 tests are
 * reported skipped (vec_topk_with would quietly run the portable code). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "retrieval/vec.h"
#include "retrieval/vec_codes.h"

/* The score of row b against query a under one kernel. */
static float score1(enum vec_kernel kern, enum vec_metric m, const float *a,
                    const float *b, size_t dim)
{
	struct vec_hit h = { 99, NAN };
	float na = 0, nb = 0;
	for (size_t i = 0; i < dim; i++) {
		na += a[i] * a[i];
		nb += b[i] * b[i];
	}
	na = sqrtf(na);
	nb = sqrtf(nb);
	CU_ASSERT_EQUAL_FATAL(vec_topk_with(kern, m, a, na, b, &nb, 1, dim, NULL, 1, &h), 1);
	CU_ASSERT_EQUAL(h.row, 0);
	return h.score;
}

struct dist_case { size_t dim; float want[VEC_METRIC_COUNT]; };

static void fill_case(size_t dim, float *a, float *b)
{
	if (dim == 4) {                   /* a = (1,2,3,4), b = (2,0,3,8) */
		static const float va[] = { 1, 2, 3, 4 }, vb[] = { 2, 0, 3, 8 };
		for (size_t i = 0; i < 4; i++)
			a[i] = va[i], b[i] = vb[i];
	} else if (dim == 19) {           /* a_i = i + 1, b_i = 1 */
		for (size_t i = 0; i < 19; i++)
			a[i] = (float)(i + 1), b[i] = 1;
	} else {                          /* 40: a_i = 0.5, b_i = -0.5, b_39 = 2.5 */
		for (size_t i = 0; i < 40; i++)
			a[i] = 0.5f, b[i] = -0.5f;
		b[39] = 2.5f;
	}
}

static void distances_with(enum vec_kernel kern)
{
	/* dim 4: diff (-1,2,0,-4): L2 = sqrt(21), L1 = 7, max = 4,
	 *   dot = 2+0+9+32 = 43, cos = 43 / (sqrt(30) sqrt(77)).
	 * dim 19: diff 0..18: L2 = sqrt(sum i^2) = sqrt(2109), L1 = 171,
	 *   max = 18, dot = 190, cos = 190 / (sqrt(2470) sqrt(19)).
	 * dim 40 (past the 32-float AVX2 block): diff 1 x 39 and -2:
	 *   L2 = sqrt(43), L1 = 41, max = 2, dot = 39 * -0.25 + 1.25 = -8.5,
	 *   cos = -8.5 / (sqrt(10) * 4). */
	const struct dist_case cases[] = {
		{ 4, { [VEC_L2] = 4.58257569f, [VEC_L1] = 7, [VEC_MAX] = 4,
		       [VEC_COS] = 0.89466916f, [VEC_DOT] = 43 } },
		{ 19, { [VEC_L2] = 45.92385f, [VEC_L1] = 171, [VEC_MAX] = 18,
		        [VEC_COS] = 0.87705802f, [VEC_DOT] = 190 } },
		{ 40, { [VEC_L2] = 6.55743852f, [VEC_L1] = 41, [VEC_MAX] = 2,
		        [VEC_COS] = -0.67198400f, [VEC_DOT] = -8.5f } },
	};
	float a[40], b[40];

	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		fill_case(cases[c].dim, a, b);
		for (int m = 0; m < VEC_METRIC_COUNT; m++) {
			float got = score1(kern, (enum vec_metric)m, a, b, cases[c].dim);
			CU_ASSERT_DOUBLE_EQUAL(got, cases[c].want[m],
			                       1e-5 * fabs(cases[c].want[m]) + 1e-6);
		}
		/* vec_score gives the same values. */
		float na = vec_norm(a, cases[c].dim), nb = vec_norm(b, cases[c].dim);
		for (int m = 0; m < VEC_METRIC_COUNT; m++)
			CU_ASSERT_DOUBLE_EQUAL(vec_score((enum vec_metric)m, a, na, b, nb, cases[c].dim),
			                       cases[c].want[m], 1e-5 * fabs(cases[c].want[m]) + 1e-6);
	}
	/* A zero vector has no direction: cos 0, not NaN. */
	float z[4] = { 0 };
	CU_ASSERT_EQUAL(vec_score(VEC_COS, z, 0, b, 1, 4), 0.0f);
}

static void test_distances_portable(void) { distances_with(VEC_KERNEL_PORTABLE); }
static void test_distances_avx2(void) { distances_with(VEC_KERNEL_AVX2); }

static void test_names(void)
{
	const char *wire[] = { "L2", "L1", "max", "cos", "dot" };
	enum vec_metric m;

	for (int i = 0; i < VEC_METRIC_COUNT; i++) {
		CU_ASSERT_EQUAL(vec_metric_parse(wire[i], &m), 0);
		CU_ASSERT_EQUAL(m, (enum vec_metric)i);
		CU_ASSERT_STRING_EQUAL(vec_metric_name(m), wire[i]);
	}
	CU_ASSERT_EQUAL(vec_metric_parse("l2", &m), -1);
	CU_ASSERT_EQUAL(vec_metric_parse("cosine", &m), -1);
	CU_ASSERT_EQUAL(vec_metric_parse("", &m), -1);
	CU_ASSERT_EQUAL(vec_metric_parse(NULL, &m), -1);
	CU_ASSERT_FALSE(vec_larger_is_better(VEC_L2));
	CU_ASSERT_FALSE(vec_larger_is_better(VEC_L1));
	CU_ASSERT_FALSE(vec_larger_is_better(VEC_MAX));
	CU_ASSERT_TRUE(vec_larger_is_better(VEC_COS));
	CU_ASSERT_TRUE(vec_larger_is_better(VEC_DOT));
	CU_ASSERT_TRUE(vec_better(VEC_L2, 1, 2));
	CU_ASSERT_TRUE(vec_better(VEC_DOT, 2, 1));
}

/* q = (1,0); rows r0 (1,0), r1 (0,1), r2 (2,0), r3 (-1,0), r4 (.5,.5).
 *   L2:  0, 1.414, 1, 2, 0.707      -> 0 4 2 1 3
 *   L1:  0, 2, 1, 2, 1              -> 0 2 4 1 3  (ties by row)
 *   max: 0, 1, 1, 2, 0.5            -> 0 4 1 2 3
 *   cos: 1, 0, 1, -1, 0.707         -> 0 2 4 1 3
 *   dot: 1, 0, 2, -1, 0.5           -> 2 0 4 1 3  (largest first) */
static void order_with(enum vec_kernel kern)
{
	const float q[2] = { 1, 0 };
	const float base[] = { 1, 0, 0, 1, 2, 0, -1, 0, 0.5f, 0.5f };
	float norms[5];
	const uint32_t want[VEC_METRIC_COUNT][5] = {
		[VEC_L2] = { 0, 4, 2, 1, 3 }, [VEC_L1] = { 0, 2, 4, 1, 3 },
		[VEC_MAX] = { 0, 4, 1, 2, 3 }, [VEC_COS] = { 0, 2, 4, 1, 3 },
		[VEC_DOT] = { 2, 0, 4, 1, 3 },
	};
	struct vec_hit h[5];

	for (int i = 0; i < 5; i++)
		norms[i] = vec_norm(base + 2 * i, 2);
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		for (size_t k = 1; k <= 5; k++) {
			size_t n = vec_topk_with(kern, (enum vec_metric)m, q, 1, base, norms,
			                         5, 2, NULL, k, h);
			CU_ASSERT_EQUAL_FATAL(n, k);
			for (size_t i = 0; i < n; i++)
				CU_ASSERT_EQUAL(h[i].row, want[m][i]);
			for (size_t i = 1; i < n; i++)
				CU_ASSERT_FALSE(vec_better((enum vec_metric)m, h[i].score, h[i - 1].score));
		}
		/* The keep mask drops rows, the order of the rest holds. */
		const uint8_t keep[5] = { 1, 1, 0, 1, 1 };
		size_t n = vec_topk_with(kern, (enum vec_metric)m, q, 1, base, norms, 5, 2,
		                         keep, 5, h);
		CU_ASSERT_EQUAL(n, 4);
		for (size_t i = 0, j = 0; i < 5; i++)
			if (want[m][i] != 2)
				CU_ASSERT_EQUAL(h[j++].row, want[m][i]);
	}
	CU_ASSERT_EQUAL(vec_topk(VEC_L2, q, 1, base, norms, 5, 2, NULL, 0, h), 0);
}

static void test_order_portable(void) { order_with(VEC_KERNEL_PORTABLE); }
static void test_order_avx2(void) { order_with(VEC_KERNEL_AVX2); }

static void test_nan_skipped(void)
{
	const float q[2] = { 1, 0 };
	const float base[] = { NAN, 0, 1, 0 };
	const float norms[] = { NAN, 1 };
	struct vec_hit h[2];

	/* max skips NaN components instead (maxps keeps the accumulator), so
	 * rindex_write refuses non-finite vectors in the first place. */
	for (int m = 0; m < VEC_METRIC_COUNT; m++) {
		if (m == VEC_MAX)
			continue;
		CU_ASSERT_EQUAL(vec_topk((enum vec_metric)m, q, 1, base, norms, 2, 2, NULL, 2, h), 1);
		CU_ASSERT_EQUAL(h[0].row, 1);
	}
}

static void test_hits_best(void)
{
	struct vec_hit h[] = { { 0, 3 }, { 1, 1 }, { 2, 5 }, { 3, 1 }, { 4, 4 } };

	CU_ASSERT_EQUAL(vec_hits_best(VEC_L2, h, 5, 3), 3);
	CU_ASSERT_EQUAL(h[0].row, 1);
	CU_ASSERT_EQUAL(h[1].row, 3);
	CU_ASSERT_EQUAL(h[2].row, 0);
	CU_ASSERT_EQUAL(vec_hits_best(VEC_DOT, h, 3, 10), 3);
	CU_ASSERT_EQUAL(h[0].row, 0);
	CU_ASSERT_EQUAL(h[1].row, 1);
}

/* Random rows, dim 100 (three AVX2 blocks, one 8-block, a scalar tail). */
static void test_avx2_agrees(void)
{
	const size_t n = 3000, dim = 100, k = 10;
	float *base, *norms, q[100];
	struct vec_hit hp[10], ha[10];

	base = malloc(n * dim * sizeof *base);
	norms = malloc(n * sizeof *norms);
	CU_ASSERT_FATAL(base != NULL && norms != NULL);
	srand(7);
	for (size_t i = 0; i < n * dim; i++)
		base[i] = (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < n; i++)
		norms[i] = vec_norm(base + i * dim, dim);
	for (int t = 0; t < 5; t++) {
		for (size_t i = 0; i < dim; i++)
			q[i] = (float)rand() / RAND_MAX * 2 - 1;
		float qn = vec_norm(q, dim);
		for (int m = 0; m < VEC_METRIC_COUNT; m++) {
			size_t a = vec_topk_with(VEC_KERNEL_PORTABLE, (enum vec_metric)m, q, qn, base,
			                         norms, n, dim, NULL, k, hp);
			size_t b = vec_topk_with(VEC_KERNEL_AVX2, (enum vec_metric)m, q, qn, base,
			                         norms, n, dim, NULL, k, ha);
			CU_ASSERT_EQUAL(a, b);
			for (size_t i = 0; i < a; i++) {
				CU_ASSERT_EQUAL(hp[i].row, ha[i].row);
				CU_ASSERT_DOUBLE_EQUAL(hp[i].score, ha[i].score,
				                       1e-5 * fabs(hp[i].score) + 1e-5);
			}
		}
	}
	free(base);
	free(norms);
}

/* A row's code: within its error bound of the row (checked in double),
 * codes in [-127, 127], the padding zero. */
static void test_encode(void)
{
	enum { DIM = 37 };
	float v[DIM], scale, err;
	int8_t code[64];

	CU_ASSERT_EQUAL_FATAL(vec_code_stride(DIM), 64);
	CU_ASSERT_EQUAL(vec_code_stride(32), 32);
	srand(5);
	for (int t = 0; t < 50; t++) {
		for (size_t j = 0; j < DIM; j++)
			v[j] = ((float)rand() / RAND_MAX * 2 - 1) * (t % 5 == 0 ? 1e6f : 1.0f);
		memset(code, 0x55, sizeof code);
		vec_encode(v, DIM, code, &scale, &err);
		double e2 = 0;
		for (size_t j = 0; j < DIM; j++) {
			double d = (double)v[j] - (double)scale * code[j];
			e2 += d * d;
			CU_ASSERT(code[j] >= -127 && code[j] <= 127);
		}
		CU_ASSERT(sqrt(e2) <= err);
		CU_ASSERT(err < 0.01 * scale * 127 * sqrt(DIM));    /* not vacuous */
		for (size_t j = DIM; j < sizeof code; j++)
			CU_ASSERT_EQUAL(code[j], 0);
	}
	memset(v, 0, sizeof v);
	vec_encode(v, DIM, code, &scale, &err);
	CU_ASSERT_EQUAL(scale, 0.0f);
	CU_ASSERT_EQUAL(err, 0.0f);
	/* Subnormal values (127 / the largest is beyond float's range): each
	 * code is the nearest, with its value's sign. */
	for (size_t j = 0; j < DIM; j++)
		v[j] = (j % 2 ? -1.0f : 1.0f) * 1e-40f * (float)(j + 1) / DIM;
	vec_encode(v, DIM, code, &scale, &err);
	CU_ASSERT(scale > 0.0f);
	for (size_t j = 0; j < DIM; j++) {
		CU_ASSERT(code[j] == 0 || (code[j] > 0) == (v[j] > 0));
		CU_ASSERT(fabs((double)v[j] - (double)scale * code[j]) <= 0.5 * scale + 2e-43);
	}
	CU_ASSERT_EQUAL(code[DIM - 1], -127 + 254 * ((DIM - 1) % 2 == 0));
}

/* Codes in runs: row r's codes 4k .. 4k+3 at (r / 16) * 16 * stride + 64 k
 * + (r % 16) * 4, as vec_codes.h documents them (the layout the kernels
 * and the index file depend on), read back as vec_encode gives them, and
 * a last run's missing rows left as they were. */
static void test_codes_in_runs(void)
{
	enum { DIM = 70, STRIDE = 96, ROWS = 21 };
	float v[ROWS][DIM], scale, err, s2, e2;
	int8_t want[STRIDE], back[STRIDE];
	static int8_t codes[2 * VEC_RUN * STRIDE];

	CU_ASSERT_EQUAL_FATAL(vec_code_stride(DIM), STRIDE);
	CU_ASSERT_EQUAL(vec_codes_size(0, DIM), 0);
	CU_ASSERT_EQUAL(vec_codes_size(1, DIM), VEC_RUN * STRIDE);
	CU_ASSERT_EQUAL(vec_codes_size(VEC_RUN, DIM), VEC_RUN * STRIDE);
	CU_ASSERT_EQUAL_FATAL(vec_codes_size(ROWS, DIM), sizeof codes);
	srand(7);
	for (size_t i = 0; i < ROWS; i++)
		for (size_t j = 0; j < DIM; j++)
			v[i][j] = (float)rand() / RAND_MAX * 2 - 1;
	memset(codes, 0x55, sizeof codes);
	for (size_t i = 0; i < ROWS; i++)
		CU_ASSERT_EQUAL(vec_encode_row(v[i], DIM, codes, i, &s2, &e2), 0);
	for (size_t i = 0; i < ROWS; i++) {
		vec_encode(v[i], DIM, want, &scale, &err);
		vec_code_row(codes, STRIDE, i, back);
		CU_ASSERT(memcmp(want, back, STRIDE) == 0);
		for (size_t j = 0; j < STRIDE; j++)
			CU_ASSERT_EQUAL(codes[i / 16 * 16 * STRIDE + j / 4 * 64 + i % 16 * 4 + j % 4],
			                want[j]);
	}
	/* rows 21 .. 31 of the second run: not written */
	for (size_t k = 0; k < STRIDE / 4; k++)
		for (size_t r = ROWS % 16; r < 16; r++)
			CU_ASSERT_EQUAL(codes[16 * STRIDE + k * 64 + r * 4], 0x55);
	CU_ASSERT_EQUAL(vec_encode_row(v[0], VEC_CODES_MAX_DIM + 1, codes, 0, &s2, &e2), -1);
}

/* The top k through the codes is vec_topk's, hit for hit and bit for bit,
 * for every metric, with and without a keep mask, for k of 1, 12 and more
 * than the rows.  Two sets of rows, dim 37 (a padded code):
 * - mixed: clusters of near twins (a few units in the last place apart),
 *   exact twins (equal scores, ordered by row), a zero row and rows a
 *   million times longer than the rest;
 * - adversarial: every component 0.49 of a code step off its code, each
 *   row's errors all with or all against question 2 (components +-1, so
 *   Cauchy-Schwarz is nearly tight), and the rows whose errors are against
 *   it ahead by their codes: the coded products misorder the rows by most
 *   of the error bound.  A bound of 0.8 of Cauchy-Schwarz's loses hits
 *   here (checked), and few rows can be left out. */
enum { CN = 2001, CDIM = 37, CNQ = 8 };

static void coded_rows(bool adversarial, float *base, float q[CNQ][CDIM])
{
	srand(adversarial ? 17 : 13);
	for (size_t t = 0; t < CNQ; t++)
		for (size_t j = 0; j < CDIM; j++)
			q[t][j] = adversarial && t == 2 ? (rand() % 2 ? 1.0f : -1.0f)
			                                : (float)rand() / RAND_MAX * 2 - 1;
	for (size_t i = 0; i < CN; i++) {
		float *r = base + i * CDIM;
		if (adversarial) {
			/* Rows off by -0.49 a step get 26 codes one step up along
			 * q2 (+26 to their coded product): they lead by the codes
			 * and trail in truth (0.49 * 2 * 36 - 26 = 9.3). */
			bool up = rand() % 2;
			float side = up ? 0.49f : -0.49f;
			r[0] = 127.0f;                       /* the scale is 1 */
			for (size_t j = 1; j < CDIM; j++) {
				float sg = q[2][j] >= 0 ? 1.0f : -1.0f;
				r[j] = (float)(rand() % 3 - 1) + (!up && j <= 26 ? sg : 0.0f) +
				       sg * side;
			}
			continue;
		}
		for (size_t j = 0; j < CDIM; j++)
			r[j] = (float)rand() / RAND_MAX * 2 - 1;
		if (i % 10 == 3)                 /* a near twin of the row before */
			for (size_t j = 0; j < CDIM; j++)
				r[j] = nextafterf(r[(ptrdiff_t)j - CDIM], (j & 1) ? INFINITY : -INFINITY);
		if (i % 97 == 5)                 /* an exact twin of row 4 */
			memcpy(r, base + 4 * CDIM, CDIM * sizeof *r);
		if (i % 250 == 7)
			for (size_t j = 0; j < CDIM; j++)
				r[j] *= 1e6f;
		if (i == 9)
			memset(r, 0, CDIM * sizeof *r);
	}
	if (!adversarial) {
		memcpy(q[0], base + 4 * CDIM, sizeof q[0]);        /* row 4 and its twins */
		for (size_t j = 0; j < CDIM; j++)
			q[1][j] = nextafterf(base[13 * CDIM + j], 1.0f);
	}
}

/* The rows' norms and codes (a stride of 64, in runs), and a mask keeping
 * two rows in three. */
#define CCODES ((CN + VEC_RUN - 1) / VEC_RUN * VEC_RUN * 64)
static void coded_codes(const float *base, int8_t *codes, float *norms, float *scale,
                        float *err, uint8_t *keep)
{
	CU_ASSERT_EQUAL_FATAL(vec_codes_size(CN, CDIM), CCODES);
	for (size_t i = 0; i < CN; i++) {
		norms[i] = vec_norm(base + i * CDIM, CDIM);
		CU_ASSERT_EQUAL(vec_encode_row(base + i * CDIM, CDIM, codes, i, &scale[i], &err[i]), 0);
		keep[i] = i % 3 != 1;
	}
}

static void coded_set(enum vec_kernel kern, bool adversarial)
{
	static float base[CN * CDIM], q[CNQ][CDIM];
	static int8_t codes[CCODES];
	static float norms[CN], scale[CN], err[CN];
	static uint8_t keep[CN];
	static struct vec_hit want[CN + 5], got[CN + 5];
	const size_t ks[] = { 1, 12, CN + 5 };
	size_t pruned = 0, runs = 0;

	coded_rows(adversarial, base, q);
	coded_codes(base, codes, norms, scale, err, keep);
	const struct vec_codes vc = { codes, 64, scale, err };
	for (size_t t = 0; t < CNQ; t++) {
		float qn = vec_norm(q[t], CDIM);
		for (int m = 0; m < VEC_METRIC_COUNT; m++)
			for (size_t ki = 0; ki < 3; ki++)
				for (int masked = 0; masked < 2; masked++) {
					const uint8_t *kp = masked ? keep : NULL;
					size_t cand = 0;
					size_t a = vec_topk((enum vec_metric)m, q[t], qn, base, norms, CN,
					                    CDIM, kp, ks[ki], want);
					size_t b = vec_topk_coded_with(kern, (enum vec_metric)m, q[t], qn,
					                               base, norms, &vc, CN, CDIM, kp,
					                               ks[ki], got, &cand);
					CU_ASSERT_EQUAL(a, b);
					CU_ASSERT(memcmp(want, got, (a < b ? a : b) * sizeof *got) == 0);
					if (m == VEC_L1 || m == VEC_MAX) {
						CU_ASSERT_EQUAL(cand, CN);    /* the float scan */
					} else if (ks[ki] == 12) {
						runs++;
						pruned += cand < CN / 4;
					}
				}
	}
	if (adversarial)
		return;
	/* The codes did the pruning: most L2, cos and dot runs scored under a
	 * quarter of the rows exactly. */
	CU_ASSERT(pruned * 2 > runs);
	/* Question 0 is row 4: its exact twins tie with it, in row order (near
	 * twins may round to a score as high). */
	size_t n = vec_topk_coded_with(kern, VEC_COS, q[0], vec_norm(q[0], CDIM), base, norms,
	                               &vc, CN, CDIM, NULL, 8, got, NULL);
	const uint32_t twins[] = { 4, 5, 102 };
	size_t at[3] = { 99, 99, 99 };
	for (size_t i = 0; i < n; i++)
		for (size_t t = 0; t < 3; t++)
			if (got[i].row == twins[t])
				at[t] = i;
	CU_ASSERT(at[0] < at[1] && at[1] < at[2] && at[2] < n);
	if (at[2] < n)
		CU_ASSERT(got[at[0]].score == got[at[2]].score);
	/* A zero question, and codes of another stride, take the float scan. */
	float zero[CDIM] = { 0 };
	size_t cand = 0;
	CU_ASSERT_EQUAL(vec_topk_coded_with(kern, VEC_DOT, zero, 0.0f, base, norms, &vc, CN,
	                                    CDIM, NULL, 5, got, &cand), 5);
	CU_ASSERT_EQUAL(cand, CN);
	const struct vec_codes other = { codes, 32, scale, err };
	CU_ASSERT_EQUAL(vec_topk_coded_with(kern, VEC_COS, q[2], vec_norm(q[2], CDIM), base,
	                                    norms, &other, CN, CDIM, NULL, 5, got, &cand), 5);
	CU_ASSERT_EQUAL(cand, CN);
}

/* Questions ranked together in one pass get what each gets alone: every
 * metric (L1 and max take the float scan), k of 1, 12 and more than the
 * rows, with and without a keep mask, and a zero question among them
 * (the float scan too), over both sets of rows. */
static void coded_many_set(enum vec_kernel kern, bool adversarial)
{
	enum { NQ = (CNQ + 1) * VEC_METRIC_COUNT };
	static float base[CN * CDIM], q[CNQ + 1][CDIM];
	static int8_t codes[CCODES];
	static float norms[CN], scale[CN], err[CN];
	static uint8_t keep[CN];
	static struct vec_hit want[CN + 5], got[NQ][CN + 5];
	struct vec_question qs[NQ];
	const size_t ks[] = { 1, 12, CN + 5 };

	coded_rows(adversarial, base, q);
	memset(q[CNQ], 0, sizeof q[CNQ]);
	coded_codes(base, codes, norms, scale, err, keep);
	const struct vec_codes vc = { codes, 64, scale, err };
	for (size_t i = 0; i < NQ; i++) {
		size_t t = i / VEC_METRIC_COUNT;
		qs[i] = (struct vec_question){ (enum vec_metric)(i % VEC_METRIC_COUNT), q[t],
		                               vec_norm(q[t], CDIM), i % 2 ? keep : NULL,
		                               ks[i % 3], got[i], 99, 99 };
	}
	vec_topk_coded_many(kern, qs, NQ, base, norms, &vc, CN, CDIM);
	for (size_t i = 0; i < NQ; i++) {
		size_t cand = 0;
		size_t a = vec_topk_coded_with(kern, qs[i].m, qs[i].q, qs[i].qnorm, base, norms,
		                               &vc, CN, CDIM, qs[i].keep, qs[i].k, want, &cand);
		CU_ASSERT_EQUAL(qs[i].got, a);
		CU_ASSERT_EQUAL(qs[i].cand, cand);
		CU_ASSERT(a > 0 && memcmp(want, got[i], a * sizeof *want) == 0);
	}
	/* No question, and a question that wants nothing. */
	vec_topk_coded_many(kern, qs, 0, base, norms, &vc, CN, CDIM);
	qs[0].k = 0;
	vec_topk_coded_many(kern, qs, 1, base, norms, &vc, CN, CDIM);
	CU_ASSERT_EQUAL(qs[0].got, 0);
}

static void coded_with(enum vec_kernel kern)
{
	coded_set(kern, false);
	coded_set(kern, true);
	coded_many_set(kern, false);
	coded_many_set(kern, true);
}

/* The kernel's d.c at every shape of row: a stride of 32, 96, 384 and
 * 4,096 (8 to 1,024 words a run): the same rows scored exactly and the
 * same hits as the portable kernel's, alone and in batches of 2, 3, 5 and
 * 7 (one group of that size), 8, 11, 12 and 13 (a group of eight, then
 * one of three to five) and 16 (two of eight), over 300 rows (18 full
 * runs and 12 rows of a run). */
static void coded_dims(enum vec_kernel kern)
{
	enum { BQ = 16 };
	const size_t dims[] = { 20, 90, 384, 4096 }, rows = 300;
	const size_t batches[] = { 2, 3, 5, 7, 8, 11, 12, 13, 16 };

	srand(29);
	for (size_t di = 0; di < sizeof dims / sizeof *dims; di++) {
		size_t dim = dims[di], stride = vec_code_stride(dim);
		float *base = malloc(rows * dim * sizeof *base), *q = malloc(dim * sizeof *q);
		float *norms = malloc(rows * sizeof *norms), *scale = malloc(rows * sizeof *scale);
		float *err = malloc(rows * sizeof *err);
		int8_t *codes = calloc(1, vec_codes_size(rows, dim));
		struct vec_hit want[10], got[10];

		CU_ASSERT_FATAL(base && q && norms && scale && err && codes);
		for (size_t i = 0; i < rows * dim; i++)
			base[i] = (float)rand() / RAND_MAX * 2 - 1;
		for (size_t j = 0; j < dim; j++)
			q[j] = (float)rand() / RAND_MAX * 2 - 1;
		for (size_t i = 0; i < rows; i++) {
			norms[i] = vec_norm(base + i * dim, dim);
			CU_ASSERT(vec_encode_row(base + i * dim, dim, codes, i, &scale[i], &err[i]) == 0);
		}
		const struct vec_codes vc = { codes, stride, scale, err };
		float qn = vec_norm(q, dim);
		size_t ca = 0, cb = 0;
		size_t a = vec_topk_coded_with(VEC_KERNEL_PORTABLE, VEC_DOT, q, qn, base, norms, &vc,
		                               rows, dim, NULL, 10, want, &ca);
		size_t b = vec_topk_coded_with(kern, VEC_DOT, q, qn, base, norms, &vc, rows, dim,
		                               NULL, 10, got, &cb);
		CU_ASSERT_EQUAL(a, 10);
		CU_ASSERT_EQUAL(b, a);
		CU_ASSERT_EQUAL(cb, ca);
		CU_ASSERT(ca < rows);           /* the codes pruned: their products mattered */
		CU_ASSERT(memcmp(want, got, sizeof want) == 0);
		/* Batches: question i is q with its components turned by i, a
		 * metric of each kind that the codes take. */
		for (size_t bi = 0; bi < sizeof batches / sizeof *batches; bi++) {
			static const enum vec_metric ms[] = { VEC_DOT, VEC_COS, VEC_L2 };
			struct vec_question vq[BQ];
			struct vec_hit bgot[BQ][10];
			float *bq = malloc(BQ * dim * sizeof *bq);

			CU_ASSERT_FATAL(bq != NULL);
			for (size_t i = 0; i < batches[bi]; i++) {
				for (size_t j = 0; j < dim; j++)
					bq[i * dim + j] = q[(j + i * 7) % dim];
				vq[i] = (struct vec_question){ ms[i % 3], bq + i * dim,
				                               vec_norm(bq + i * dim, dim), NULL, 10,
				                               bgot[i], 99, 99 };
			}
			vec_topk_coded_many(kern, vq, batches[bi], base, norms, &vc, rows, dim);
			for (size_t i = 0; i < batches[bi]; i++) {
				size_t cw = 0;
				size_t w = vec_topk_coded_with(VEC_KERNEL_PORTABLE, vq[i].m, vq[i].q,
				                               vq[i].qnorm, base, norms, &vc, rows, dim,
				                               NULL, 10, want, &cw);
				CU_ASSERT_EQUAL(w, 10);
				CU_ASSERT_EQUAL(vq[i].got, w);
				CU_ASSERT_EQUAL(vq[i].cand, cw);
				CU_ASSERT(memcmp(want, bgot[i], sizeof want) == 0);
			}
			free(bq);
		}
		free(base);
		free(q);
		free(norms);
		free(scale);
		free(err);
		free(codes);
	}
}

/* A pass split among threads (vec_topk_coded_parts) gets the one pass's
 * hits, hit for hit: 2, 3 and more than VEC_PARTS_MAX threads over rows
 * that are not whole blocks, every metric (L1 and max take the float scan
 * block by block), with and without a keep mask, a zero question, and
 * twins of the first question's row on both sides of blocks' first rows,
 * whose tie only the row breaks.  Too few rows a thread, or one part, is
 * the one pass. */
static void test_coded_parts(void)
{
	enum { PDIM = 24, PQ = 2 * VEC_METRIC_COUNT + 1, PK = 40 };
	const size_t rows = 3 * VEC_PART_MIN_ROWS + 7, stride = vec_code_stride(PDIM);
	const size_t parts[] = { 2, 3, VEC_PARTS_MAX + 5, 1 };
	float *base = malloc(rows * PDIM * sizeof *base), q[PQ][PDIM];
	float *norms = malloc(rows * sizeof *norms), *scale = malloc(rows * sizeof *scale);
	float *err = malloc(rows * sizeof *err);
	int8_t *codes = calloc(1, vec_codes_size(rows, PDIM));
	uint8_t *keep = malloc(rows);
	static struct vec_hit want[PQ][PK], got[PQ][PK];
	struct vec_question one[PQ], split[PQ];

	CU_ASSERT_FATAL(base && norms && scale && err && codes && keep);
	srand(31);
	for (size_t i = 0; i < rows * PDIM; i++)
		base[i] = (float)rand() / RAND_MAX * 2 - 1;
	/* Twins on both sides of every fifth block's first row and of 2 and 3
	 * parts' first rows: which thread takes a block is not known, so their
	 * tie is broken across threads. */
	const size_t blocks = (rows + VEC_PART_BLOCK - 1) / VEC_PART_BLOCK;
	size_t twin_blocks[16], nt = 0;
	for (size_t b = 5; b < blocks && nt < 13; b += 5)
		twin_blocks[nt++] = b;
	twin_blocks[nt++] = blocks / 2;
	twin_blocks[nt++] = blocks / 3;
	twin_blocks[nt++] = blocks * 2 / 3;
	for (size_t t = 0; t < nt; t++) {
		size_t first = twin_blocks[t] * VEC_PART_BLOCK;

		memcpy(base + first * PDIM, base + 11 * PDIM, PDIM * sizeof *base);
		memcpy(base + (first - 1) * PDIM, base + 11 * PDIM, PDIM * sizeof *base);
	}
	for (size_t i = 0; i < rows; i++) {
		norms[i] = vec_norm(base + i * PDIM, PDIM);
		CU_ASSERT(vec_encode_row(base + i * PDIM, PDIM, codes, i, &scale[i], &err[i]) == 0);
		keep[i] = i % 3 != 1;
	}
	for (size_t i = 0; i < PQ - 1; i++)
		for (size_t j = 0; j < PDIM; j++)
			q[i][j] = i < VEC_METRIC_COUNT ? base[11 * PDIM + j]
			          : (float)rand() / RAND_MAX * 2 - 1;
	memset(q[PQ - 1], 0, sizeof q[PQ - 1]);
	const struct vec_codes vc = { codes, stride, scale, err };
	for (size_t i = 0; i < PQ; i++)
		one[i] = (struct vec_question){ (enum vec_metric)(i % VEC_METRIC_COUNT), q[i],
		                                vec_norm(q[i], PDIM), i % 2 ? keep : NULL,
		                                i == 1 ? 1 : PK, want[i], 99, 99 };
	vec_topk_coded_many(VEC_KERNEL_AUTO, one, PQ, base, norms, &vc, rows, PDIM);
	/* Question 0 (L2) is row 11: it and its twins lead, in row order. */
	CU_ASSERT(one[0].got == PK && want[0][0].row == 11 &&
	          want[0][1].row == 5 * VEC_PART_BLOCK - 1);
	size_t twins = 1;
	while (twins < one[0].got && want[0][twins].score == want[0][0].score)
		twins++;
	CU_ASSERT_EQUAL(twins, 1 + 2 * nt);          /* the twin blocks are distinct */
	/* Each split three times: the blocks fall to the threads differently. */
	for (size_t pi = 0; pi < 3 * (sizeof parts / sizeof *parts); pi++) {
		memcpy(split, one, sizeof split);
		for (size_t i = 0; i < PQ; i++) {
			split[i].out = got[i];
			split[i].got = split[i].cand = 99;
		}
		vec_topk_coded_parts(VEC_KERNEL_AUTO, split, PQ, base, norms, &vc, rows, PDIM,
		                     parts[pi % (sizeof parts / sizeof *parts)]);
		for (size_t i = 0; i < PQ; i++) {
			CU_ASSERT_EQUAL(split[i].got, one[i].got);
			CU_ASSERT(memcmp(got[i], want[i], one[i].got * sizeof want[0][0]) == 0);
			/* The float scan scores every row, in parts or not. */
			if (one[i].cand == rows)
				CU_ASSERT_EQUAL(split[i].cand, rows);
		}
	}
	/* Fewer than VEC_PART_MIN_ROWS rows a part: the one pass, cand and all. */
	memcpy(split, one, sizeof split);
	for (size_t i = 0; i < PQ; i++)
		split[i].out = got[i];
	vec_topk_coded_parts(VEC_KERNEL_AUTO, split, PQ, base, norms, &vc, 2 * VEC_PART_MIN_ROWS - 1,
	                     PDIM, 2);
	vec_topk_coded_many(VEC_KERNEL_AUTO, one, PQ, base, norms, &vc, 2 * VEC_PART_MIN_ROWS - 1,
	                    PDIM);
	for (size_t i = 0; i < PQ; i++) {
		CU_ASSERT_EQUAL(split[i].cand, one[i].cand);
		CU_ASSERT(split[i].got == one[i].got &&
		          memcmp(got[i], want[i], one[i].got * sizeof want[0][0]) == 0);
	}
	free(base);
	free(norms);
	free(scale);
	free(err);
	free(codes);
	free(keep);
}

static void test_coded_portable(void) { coded_with(VEC_KERNEL_PORTABLE); }
static void test_coded_avx2(void)
{
	coded_with(VEC_KERNEL_AVX2);
	coded_dims(VEC_KERNEL_AVX2);
}
static void test_coded_vnni(void)
{
	coded_with(VEC_KERNEL_AUTO);
	coded_dims(VEC_KERNEL_AUTO);
}

int suite_vec(void)
{
	static const struct test_case tests[] = {
		{ "distances against hand-computed values (portable)", test_distances_portable },
		{ "metric names and directions", test_names },
		{ "best first for every metric, dot included (portable)", test_order_portable },
		{ "NaN rows skipped", test_nan_skipped },
		{ "vec_hits_best", test_hits_best },
		{ "a row's 8-bit code within its error bound", test_encode },
		{ "codes kept in runs of 16 rows on their side", test_codes_in_runs },
		{ "a pass split among threads gets the one pass's hits", test_coded_parts },
		{ "top k through the codes is the float scan's, alone and together (portable)",
		  test_coded_portable },
		{ NULL, NULL },
	};
	static const struct test_case avx2_tests[] = {
		{ "distances against hand-computed values (AVX2)", test_distances_avx2 },
		{ "best first for every metric, dot included (AVX2)", test_order_avx2 },
		{ "AVX2 and portable kernels agree", test_avx2_agrees },
		{ "top k through the codes is the float scan's, alone and together (AVX2)",
		  test_coded_avx2 },
		{ NULL, NULL },
	};

	if (suite_add("vec", tests) != 0)
		return -1;
	static const struct test_case vnni_tests[] = {
		{ "top k through the codes is the float scan's, alone and together (AVX-512 VNNI)",
		  test_coded_vnni },
		{ NULL, NULL },
	};
	if (!vec_have_avx2()) {
		if (suite_add_skipped("vec AVX2", avx2_tests, "this CPU lacks AVX2 or FMA") != 0)
			return -1;
	} else if (suite_add("vec AVX2", avx2_tests) != 0) {
		return -1;
	}
	/* VEC_KERNEL_AUTO is the VNNI kernel where the CPU has it. */
	if (!vec_have_vnni())
		return suite_add_skipped("vec AVX-512 VNNI", vnni_tests,
		                         "this CPU lacks AVX-512 F, BW or VNNI");
	return suite_add("vec AVX-512 VNNI", vnni_tests);
}
