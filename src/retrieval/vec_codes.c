/* vec_codes.c - int8 codes of float32 rows and the exact top-k through them.
 *
 * Why it is exact.  For a row v coded as s*c with error e >= |v - s*c| and
 * the question q coded as t*d (8 bits) with error f >= |q - t*d|:
 *
 *   q.v - (t*d).(s*c) = q.(v - s*c) + (q - t*d).(s*c)
 *   |q.v - st (d.c)| <= |q| e + f |s*c| <= |q| e + f (|v| + e)
 *
 * d.c is an exact integer.  The bound gets a margin for what float rounding
 * adds: the exact scorer's own sum over dim products (at most dim units
 * in the last place of |q||v|), the stored norms, and this file's few
 * operations.  L2's distance follows from q.v (|q-v|^2 = |q|^2 + |v|^2 -
 * 2 q.v), and cos divides by the norms the exact scorer divides by.  So
 * every row gets an interval [lo, hi] that holds the score vec_topk
 * computes for it.  With L the k-th best lo, a row whose hi is worse than
 * L cannot be in the top k; every other row is scored exactly, in row
 * order, and vec_hits_best keeps the best k with vec_topk's order: the
 * same hits.
 *
 * The pass reads 1 byte per component instead of 4, so a question alone
 * (bound by memory bandwidth) takes about a quarter of the float scan.
 * What the bound costs is the rows scored again: tens to a few hundred
 * of 100,000 for a top 20 of the built-in embedder's vectors, thousands
 * where a passage recurs (twins tie, and ties are ordered by their exact
 * scores); bench/vec_speed.c prints the count for random rows,
 * bench/vec_questions.c for real text. */
#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/vec_codes.h"
#include "util/thread.h"

#define CODE_MAX 127
#define CODE_ALIGN 32

size_t vec_code_stride(size_t dim)
{
	return (dim + CODE_ALIGN - 1) & ~(size_t)(CODE_ALIGN - 1);
}

/* A float a hair above x: the errors are bounds, so they round up. */
static float round_up(double x)
{
	float f = (float)x;
	return (double)f >= x ? f : nextafterf(f, INFINITY);
}

/* Codes of v scaled so that the largest |v_j| is CODE_MAX; the error |v -
 * scale * code| in double.  Returns the scale (0 for a zero row). */
static float encode_with(const float *v, size_t dim, int8_t *code, double *err)
{
	float amax = 0.0f, scale;
	double inv, e2[4] = { 0 };

	for (size_t j = 0; j < dim; j++)
		amax = fabsf(v[j]) > amax ? fabsf(v[j]) : amax;
	scale = amax / (float)CODE_MAX;
	/* In double: for a row of subnormal values CODE_MAX / amax is beyond
	 * float's range, and an infinite x has no int. */
	inv = scale > 0.0f ? CODE_MAX / (double)amax : 0.0;
	/* Any code is correct, as its error is measured: the nearest one by a
	 * multiplication and a truncation (no libm call), and the error summed
	 * in four lanes (no chain of dependent additions). */
	for (size_t j = 0; j < dim; j++) {
		double x = v[j] * inv;
		int c = (int)(x + copysign(0.5, x));
		c = c > CODE_MAX ? CODE_MAX : c < -CODE_MAX ? -CODE_MAX : c;
		code[j] = (int8_t)c;
		double d = (double)v[j] - (double)scale * c;
		e2[j % 4] += d * d;
	}
	*err = sqrt((e2[0] + e2[1]) + (e2[2] + e2[3]));
	return scale;
}

void vec_encode(const float *v, size_t dim, int8_t *code, float *scale, float *err)
{
	double e;

	memset(code, 0, vec_code_stride(dim));
	*scale = encode_with(v, dim, code, &e);
	*err = round_up(e);
}

/* ---- codes in runs ------------------------------------------------------------- */

#define RUN VEC_RUN
/* A run's word of 16 rows: 64 bytes, one AVX-512 load. */
#define RUN_WORD (4 * RUN)

size_t vec_codes_size(size_t n, size_t dim)
{
	return (n + RUN - 1) / RUN * RUN * vec_code_stride(dim);
}

/* Where row's word k lies among codes. */
static size_t word_at(size_t stride, size_t row, size_t k)
{
	return row / RUN * RUN * stride + k * RUN_WORD + row % RUN * 4;
}

int vec_encode_row(const float *v, size_t dim, int8_t *codes, size_t row, float *scale,
                   float *err)
{
	int8_t code[VEC_CODES_MAX_DIM];
	size_t stride = vec_code_stride(dim);

	if (stride > sizeof code)
		return -1;
	vec_encode(v, dim, code, scale, err);
	for (size_t k = 0; k < stride / 4; k++)
		memcpy(codes + word_at(stride, row, k), code + 4 * k, 4);
	return 0;
}

void vec_code_row(const int8_t *codes, size_t stride, size_t row, int8_t *code)
{
	for (size_t k = 0; k < stride / 4; k++)
		memcpy(code + 4 * k, codes + word_at(stride, row, k), 4);
}

/* ---- d.c ------------------------------------------------------------------------ */

/* Questions a kernel call takes at once: eight independent sums, so that
 * each multiply-add need not wait for the one before. */
#define GROUP 8

/* Candidates whose float rows are fetched ahead of their exact scores. */
#define SCORE_AHEAD 4

/* d.c of a run's 16 rows for g <= GROUP questions: run is the run's
 * words, w[i] question i's codes as words (stride / 4 of them), bias[i]
 * 128 sum(d) (for the VNNI kernel), dc[i][r] row r's sum. */
typedef void (*run_dots_fn)(const int8_t *run, size_t words, const uint32_t *const *w,
                            const int64_t *bias, size_t g, int64_t (*dc)[RUN]);

static void run_dots_portable(const int8_t *run, size_t words, const uint32_t *const *w,
                              const int64_t *bias, size_t g, int64_t (*dc)[RUN])
{
	(void)bias;
	for (size_t i = 0; i < g; i++) {
		const int8_t *d = (const int8_t *)w[i];

		for (size_t r = 0; r < RUN; r++) {
			int64_t s = 0;

			for (size_t k = 0; k < words; k++)
				for (size_t b = 0; b < 4; b++)
					s += (int32_t)d[4 * k + b] * run[k * RUN_WORD + 4 * r + b];
			dc[i][r] = s;
		}
	}
}

#define AVX2 __attribute__((target("avx2,fma")))

/* maddubs multiplies unsigned by signed bytes: |d| by c with d's sign,
 * adjacent pairs added into 16 bits (at most 2 * 127 * 127: no
 * saturation), then the two pairs of a row's word into its 32-bit lane;
 * a lane adds at most stride / 4 such sums, far below 2^31 for any dim
 * up to RINDEX_MAX_DIM.  Eight rows a vector; the run (6 KB for 384
 * dimensions) stays in the cache for the next question. */
AVX2 static void run_dots_avx2(const int8_t *run, size_t words, const uint32_t *const *w,
                               const int64_t *bias, size_t g, int64_t (*dc)[RUN])
{
	const __m256i ones = _mm256_set1_epi16(1);

	(void)bias;
	for (size_t i = 0; i < g; i++) {
		__m256i a0 = _mm256_setzero_si256(), a1 = a0;

		for (size_t k = 0; k < words; k++) {
			const __m256i dv = _mm256_set1_epi32((int)w[i][k]), ad = _mm256_abs_epi8(dv);
			const int8_t *c = run + k * RUN_WORD;
			__m256i c0 = _mm256_loadu_si256((const __m256i *)c);
			__m256i c1 = _mm256_loadu_si256((const __m256i *)(c + 32));

			a0 = _mm256_add_epi32(a0, _mm256_madd_epi16(
				_mm256_maddubs_epi16(ad, _mm256_sign_epi8(c0, dv)), ones));
			a1 = _mm256_add_epi32(a1, _mm256_madd_epi16(
				_mm256_maddubs_epi16(ad, _mm256_sign_epi8(c1, dv)), ones));
		}
		_mm256_storeu_si256((__m256i *)dc[i], _mm256_cvtepi32_epi64(
			_mm256_castsi256_si128(a0)));
		_mm256_storeu_si256((__m256i *)(dc[i] + 4), _mm256_cvtepi32_epi64(
			_mm256_extracti128_si256(a0, 1)));
		_mm256_storeu_si256((__m256i *)(dc[i] + 8), _mm256_cvtepi32_epi64(
			_mm256_castsi256_si128(a1)));
		_mm256_storeu_si256((__m256i *)(dc[i] + 12), _mm256_cvtepi32_epi64(
			_mm256_extracti128_si256(a1, 1)));
	}
}

#define VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni")))

/* vpdpbusd multiplies unsigned bytes by signed ones, four products added
 * into each 32-bit lane: here a word of each of the 16 rows by the
 * question's word, so one instruction adds four products to every row's
 * sum, with no horizontal sum at the end.  The rows' codes are made
 * unsigned by flipping their top bit (c + 128), once a word for all the
 * questions, so the lanes add up to d.c + 128 sum(d).  A lane adds at
 * most stride / 4 products of 255 by 127: under 2^31 for any dim up to
 * RINDEX_MAX_DIM. */
VNNI static inline __attribute__((always_inline)) void
vnni_dots(const int8_t *run, size_t words, const uint32_t *const *w, const int64_t *bias,
          size_t g, int64_t (*dc)[RUN])
{
	const __m512i flip = _mm512_set1_epi8(-128);
	__m512i acc[GROUP];

	#pragma GCC unroll 8
	for (size_t i = 0; i < g; i++)
		acc[i] = _mm512_setzero_si512();
	for (size_t k = 0; k < words; k++) {
		const __m512i b = _mm512_xor_si512(_mm512_loadu_si512(run + k * RUN_WORD), flip);

		#pragma GCC unroll 8
		for (size_t i = 0; i < g; i++)
			acc[i] = _mm512_dpbusd_epi32(acc[i], b, _mm512_set1_epi32((int)w[i][k]));
	}
	#pragma GCC unroll 8
	for (size_t i = 0; i < g; i++) {
		const __m512i bs = _mm512_set1_epi64(bias[i]);

		_mm512_storeu_si512(dc[i], _mm512_sub_epi64(
			_mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[i])), bs));
		_mm512_storeu_si512(dc[i] + 8, _mm512_sub_epi64(
			_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[i], 1)), bs));
	}
}

/* One body a group size, its sums unrolled. */
VNNI static void run_dots_vnni(const int8_t *run, size_t words, const uint32_t *const *w,
                               const int64_t *bias, size_t g, int64_t (*dc)[RUN])
{
	switch (g) {
	case 1: vnni_dots(run, words, w, bias, 1, dc); break;
	case 2: vnni_dots(run, words, w, bias, 2, dc); break;
	case 3: vnni_dots(run, words, w, bias, 3, dc); break;
	case 4: vnni_dots(run, words, w, bias, 4, dc); break;
	case 5: vnni_dots(run, words, w, bias, 5, dc); break;
	case 6: vnni_dots(run, words, w, bias, 6, dc); break;
	case 7: vnni_dots(run, words, w, bias, 7, dc); break;
	default: vnni_dots(run, words, w, bias, GROUP, dc); break;
	}
}

bool vec_have_vnni(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

static run_dots_fn run_dots_kernel(enum vec_kernel kern)
{
	static _Atomic run_dots_fn best;
	run_dots_fn f;

	if (kern == VEC_KERNEL_PORTABLE)
		return run_dots_portable;
	if (kern == VEC_KERNEL_AVX2)
		return vec_have_avx2() ? run_dots_avx2 : run_dots_portable;
	if ((f = atomic_load_explicit(&best, memory_order_relaxed)) == NULL) {
		f = vec_have_vnni() ? run_dots_vnni :
		    vec_have_avx2() ? run_dots_avx2 : run_dots_portable;
		atomic_store_explicit(&best, f, memory_order_relaxed);
	}
	return f;
}

/* ---- the pass ---------------------------------------------------------------------- */

/* The question coded, and what turns a row's d.c into its interval. */
struct coded_q {
	enum vec_metric m;
	int8_t *d;                    /* stride codes */
	float t;                      /* q ~ t * d */
	double qn, f;                 /* |q| (computed here), |q - t*d| */
	float qnorm;                  /* the caller's, as cos divides by it */
	double rel;                   /* the rounding margin, relative */
};

/* A row's goodness interval (larger is better, so L2 ranks by minus its
 * squared distance): false as soon as its hi is below floor, the k-th
 * best lo so far, where most rows end; lo only for the others. */
static bool interval(const struct coded_q *x, int64_t dc, float s, float e, float n,
                     double floor, double *lo, double *hi)
{
	double a = (double)dc * ((double)s * x->t);
	double w = (double)n + e;
	double b = x->qn * e + x->f * w + x->rel * (x->qn + x->f) * w;

	switch (x->m) {
	case VEC_DOT:
		*hi = a + b;
		if (*hi < floor)                         /* NaN stays a candidate */
			return false;
		*lo = a - b;
		return true;
	case VEC_COS: {
		if (n == 0.0f) {                     /* the scorer's 0 */
			*lo = *hi = 0.0;
			return !(0.0 < floor);
		}
		double c = (double)x->qnorm * n;
		/* the scorer's product of norms and its division */
		double slack = 4 * x->rel * (1.0 + (fabs(a) + b) / c);
		*hi = (a + b) / c + slack;
		if (*hi < floor)
			return false;
		*lo = (a - b) / c - slack;
		return true;
	}
	default: {                                   /* VEC_L2 */
		double base = x->qn * x->qn + (double)n * n;
		double pad = 4 * x->rel * base;
		*hi = -(base - 2 * (a + b) - pad);
		if (*hi < floor)
			return false;
		*lo = -(base - 2 * (a - b) + pad);
		return true;
	}
	}
}

/* may[r]: whether row r of a run can pass interval() against floor, the
 * k-th best lo at the run's start (interval() sees the same or higher).
 * Most rows end here, so the test has no division and no branch but the
 * metric's.  L2's and dot's hi is interval()'s; cos's is interval()'s
 * times c = qnorm * n > 0: hi * c = a + b + 4 rel (c + |a| + b) against
 * floor * c.  Each gives way by a slop of 1e-12 of its terms' size, a
 * thousand times what rounding (or a compiler's fused multiply-add) can
 * move the two forms apart, so a row ruled out here is ruled out by
 * interval() too.  A zero row, and NaN anywhere, are left to interval(). */
static void run_may(const struct coded_q *x, const int64_t *dc, const float *s,
                    const float *e, const float *nr, size_t rows, double floor, uint8_t *may)
{
	const double t = x->t, qn = x->qn, f = x->f, rel = x->rel, rq = rel * (qn + f);

#define AB \
		double a = (double)dc[r] * ((double)s[r] * t); \
		double w = (double)nr[r] + e[r]; \
		double b = qn * e[r] + f * w + rq * w
	if (x->m == VEC_DOT) {
		for (size_t r = 0; r < rows; r++) {
			AB;
			may[r] = !(a + b < floor - 1e-12 * (fabs(a) + b + fabs(floor)));
		}
	} else if (x->m == VEC_COS) {
		for (size_t r = 0; r < rows; r++) {
			AB;
			double c = (double)x->qnorm * nr[r];
			double lhs = a + b + 4 * rel * (c + fabs(a) + b);
			double rhs = floor * c;
			double slop = 1e-12 * (fabs(a) + b + c + fabs(rhs));
			may[r] = nr[r] == 0.0f || !(lhs < rhs - slop);
		}
	} else {                                      /* VEC_L2 */
		for (size_t r = 0; r < rows; r++) {
			AB;
			double base = qn * qn + (double)nr[r] * nr[r];
			double hi = -(base - 2 * (a + b) - 4 * rel * base);
			may[r] = !(hi < floor - 1e-12 * (base + 2 * (fabs(a) + b) + fabs(floor)));
		}
	}
#undef AB
}

/* run_may for a full run, 8 rows a vector, as a mask of the rows that
 * may pass: the same terms in the same order, which the slop covers
 * however the compiler fuses them.  Where the pass takes the VNNI kernel
 * (whose CPUs have AVX-512 DQ), most of the time of questions ranked
 * together was this test row by row. */
VNNI static uint32_t run_may16(const struct coded_q *x, const int64_t *dc, const float *s,
                               const float *e, const float *nr, double floor)
{
	const __m512d t = _mm512_set1_pd((double)x->t), qn = _mm512_set1_pd(x->qn);
	const __m512d f = _mm512_set1_pd(x->f), rq = _mm512_set1_pd(x->rel * (x->qn + x->f));
	const __m512d fl = _mm512_set1_pd(floor), tiny = _mm512_set1_pd(1e-12);
	const __m512d fl_abs = _mm512_set1_pd(fabs(floor)), rel4 = _mm512_set1_pd(4 * x->rel);
	uint32_t may = 0;

	for (size_t h = 0; h < RUN; h += 8) {
		__m512d sv = _mm512_cvtps_pd(_mm256_loadu_ps(s + h));
		__m512d ev = _mm512_cvtps_pd(_mm256_loadu_ps(e + h));
		__m512d nv = _mm512_cvtps_pd(_mm256_loadu_ps(nr + h));
		__m512d a = _mm512_mul_pd(_mm512_cvtepi64_pd(_mm512_loadu_si512(dc + h)),
		                          _mm512_mul_pd(sv, t));
		__m512d w = _mm512_add_pd(nv, ev);
		__m512d b = _mm512_add_pd(_mm512_add_pd(_mm512_mul_pd(qn, ev), _mm512_mul_pd(f, w)),
		                          _mm512_mul_pd(rq, w));
		__m512d abs_a = _mm512_abs_pd(a);
		__mmask8 m;

		if (x->m == VEC_DOT) {
			__m512d slop = _mm512_mul_pd(tiny, _mm512_add_pd(_mm512_add_pd(abs_a, b), fl_abs));
			m = _mm512_cmp_pd_mask(_mm512_add_pd(a, b), _mm512_sub_pd(fl, slop), _CMP_NLT_UQ);
		} else if (x->m == VEC_COS) {
			__m512d c = _mm512_mul_pd(_mm512_set1_pd((double)x->qnorm), nv);
			__m512d lhs = _mm512_add_pd(_mm512_add_pd(a, b), _mm512_mul_pd(rel4,
			                  _mm512_add_pd(_mm512_add_pd(c, abs_a), b)));
			__m512d rhs = _mm512_mul_pd(fl, c);
			__m512d slop = _mm512_mul_pd(tiny, _mm512_add_pd(_mm512_add_pd(
			                   _mm512_add_pd(abs_a, b), c), _mm512_abs_pd(rhs)));
			m = _mm512_cmp_pd_mask(nv, _mm512_setzero_pd(), _CMP_EQ_OQ) |
			    _mm512_cmp_pd_mask(lhs, _mm512_sub_pd(rhs, slop), _CMP_NLT_UQ);
		} else {                                      /* VEC_L2 */
			__m512d base = _mm512_add_pd(_mm512_mul_pd(qn, qn), _mm512_mul_pd(nv, nv));
			__m512d two = _mm512_set1_pd(2.0);
			__m512d hi = _mm512_sub_pd(_mm512_setzero_pd(), _mm512_sub_pd(_mm512_sub_pd(
			                 base, _mm512_mul_pd(two, _mm512_add_pd(a, b))),
			                 _mm512_mul_pd(rel4, base)));
			__m512d slop = _mm512_mul_pd(tiny, _mm512_add_pd(_mm512_add_pd(base,
			                   _mm512_mul_pd(two, _mm512_add_pd(abs_a, b))), fl_abs));
			m = _mm512_cmp_pd_mask(hi, _mm512_sub_pd(fl, slop), _CMP_NLT_UQ);
		}
		may |= (uint32_t)m << h;
	}
	return may;
}

/* A min-heap of the k best lower bounds: its root is L. */
struct lows { double *v; size_t n, k; };

static void lows_offer(struct lows *h, double x)
{
	size_t i;

	if (h->n < h->k) {
		for (i = h->n++; i > 0 && h->v[(i - 1) / 2] > x; i = (i - 1) / 2)
			h->v[i] = h->v[(i - 1) / 2];
		h->v[i] = x;
		return;
	}
	if (!(x > h->v[0]))
		return;
	for (i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		double wv = x;
		if (l < h->n && h->v[l] < wv)
			w = l, wv = h->v[l];
		if (r < h->n && h->v[r] < wv)
			w = r;
		if (w == i)
			break;
		h->v[i] = h->v[w];
		i = w;
	}
	h->v[i] = x;
}

static double lows_floor(const struct lows *h)
{
	return h->n < h->k ? -INFINITY : h->v[0];
}

struct cand { uint32_t row; double hi; };

struct cands { struct cand *c; size_t n, cap; };

static bool cands_add(struct cands *cs, uint32_t row, double hi)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? 2 * cs->cap : 1024;
		struct cand *c = realloc(cs->c, cap * sizeof *c);
		if (c == NULL)
			return false;
		cs->c = c;
		cs->cap = cap;
	}
	cs->c[cs->n++] = (struct cand){ row, hi };
	return true;
}

/* Code the question; false when it is not finite or is zero. */
static bool code_question(struct coded_q *x, enum vec_metric m, const float *q, float qnorm,
                          size_t dim)
{
	double qn2 = 0.0, f;

	for (size_t j = 0; j < dim; j++) {
		if (!isfinite(q[j]))
			return false;
		qn2 += (double)q[j] * q[j];
	}
	if (qn2 == 0.0 || (m == VEC_COS && !(qnorm > 0.0f)))
		return false;
	x->m = m;
	x->qn = sqrt(qn2);
	x->qnorm = qnorm;
	x->t = encode_with(q, dim, x->d, &f);
	x->f = f;
	/* The scorer's sum of dim products and the stored norm: dim + 16
	 * units of float rounding, doubled. */
	x->rel = 2.0 * ((double)dim + 16.0) * FLT_EPSILON;
	return true;
}

/* One question's part of a pass: its coded form, the k best lower bounds
 * so far and the rows that can still be in its top k. */
struct pass_q {
	struct vec_question *vq;
	struct coded_q x;
	struct lows lw;
	struct cands cs;
	bool coded;                       /* false: it takes vec_topk's scan */
	bool lost;                        /* out of memory mid-pass */
};

static void pass_q_free(struct pass_q *p)
{
	free(p->x.d);
	free(p->lw.v);
	free(p->cs.c);
	p->x.d = NULL;
	p->lw.v = NULL;
	p->cs.c = NULL;
	p->coded = false;
}

/* Set up p for vq: false when it takes the float scan (L1 and max, a
 * question that is not finite or is zero, codes of another stride, out of
 * memory). */
static bool pass_q_start(struct pass_q *p, struct vec_question *vq,
                         const struct vec_codes *vc, const float *norms, size_t dim,
                         size_t stride)
{
	*p = (struct pass_q){ .vq = vq, .lw = { NULL, 0, vq->k } };
	p->x.d = calloc(stride, sizeof *p->x.d);
	p->lw.v = malloc(vq->k * sizeof *p->lw.v);
	p->coded = vc != NULL && vc->stride == stride && norms != NULL && p->x.d != NULL &&
	           p->lw.v != NULL &&
	           (vq->m == VEC_L2 || vq->m == VEC_COS || vq->m == VEC_DOT) &&
	           code_question(&p->x, vq->m, vq->q, vq->qnorm, dim);
	if (!p->coded)
		pass_q_free(p);
	return p->coded;
}

/* Rows r0 .. r0 + rows (one run, d.c in dc) for p: its candidates and
 * bounds; false when out of memory. */
static bool pass_q_run(struct pass_q *p, const int64_t *dc, const struct vec_codes *vc,
                       const float *norms, size_t r0, size_t rows, bool wide)
{
	const uint8_t *keep = p->vq->keep;
	uint32_t may = 0;

	if (wide && rows == RUN) {
		may = run_may16(&p->x, dc, vc->scale + r0, vc->err + r0, norms + r0,
		                lows_floor(&p->lw));
	} else {
		uint8_t m[RUN];

		run_may(&p->x, dc, vc->scale + r0, vc->err + r0, norms + r0, rows,
		        lows_floor(&p->lw), m);
		for (size_t r = 0; r < rows; r++)
			may |= (uint32_t)m[r] << r;
	}
	for (; may != 0; may &= may - 1) {
		size_t r = (size_t)__builtin_ctz(may), row = r0 + r;
		double lo, hi;

		if (keep != NULL && !keep[row])
			continue;
		if (!interval(&p->x, dc[r], vc->scale[row], vc->err[row], norms[row],
		              lows_floor(&p->lw), &lo, &hi))
			continue;
		if (!cands_add(&p->cs, (uint32_t)row, hi))
			return false;
		lows_offer(&p->lw, lo);
	}
	return true;
}

/* The rows a pass reads: the file's vectors, their norms and their codes. */
struct rows {
	const float *base, *norms;
	const struct vec_codes *vc;
	size_t n, dim;
};

static struct rows rows_of(const float *base, const float *norms, const struct vec_codes *vc,
                           size_t n, size_t dim)
{
	/* rows are uint32_t */
	return (struct rows){ base, norms, vc, n > UINT32_MAX ? UINT32_MAX : n, dim };
}

/* The rows that can still be in p's top k, scored exactly, into its out;
 * false when out of memory. */
static bool pass_q_finish(struct pass_q *p, const struct rows *rw)
{
	const float *base = rw->base, *norms = rw->norms;
	size_t dim = rw->dim;
	struct vec_question *vq = p->vq;
	struct cands *cs = &p->cs;
	double floor = lows_floor(&p->lw);
	struct vec_hit *hits = malloc((cs->n ? cs->n : 1) * sizeof *hits);
	size_t live = 0, got = 0;

	if (hits == NULL)
		return false;
	for (size_t j = 0; j < cs->n; j++)
		if (!(cs->c[j].hi < floor))
			cs->c[live++] = cs->c[j];
	/* Rows far apart in a file larger than the caches: each is fetched a
	 * few rows ahead, so that their reads overlap instead of each waiting
	 * for the last (in the service, with other processes between, these
	 * scores took a tenth of the CPU). */
	for (size_t j = 0; j < live; j++) {
		if (j + SCORE_AHEAD < live) {
			const char *a = (const char *)(base + (size_t)cs->c[j + SCORE_AHEAD].row * dim);
			for (size_t at = 0; at < dim * sizeof *base; at += 64)
				__builtin_prefetch(a + at);
		}
		uint32_t row = cs->c[j].row;
		float sc = vec_score(vq->m, vq->q, vq->qnorm, base + (size_t)row * dim, norms[row],
		                     dim);
		if (!isnan(sc))
			hits[got++] = (struct vec_hit){ row, sc };
	}
	vq->cand = got;
	vq->got = vec_hits_best(vq->m, hits, got, vq->k);
	memcpy(vq->out, hits, vq->got * sizeof *vq->out);
	free(hits);
	return true;
}

/* The coded questions of a pass, as the kernels take them: in groups of
 * up to GROUP, each question's codes read as words (their memory is
 * untyped, written byte by byte) with its 128 sum(d).  A question that
 * runs out of memory mid-pass is only marked (coded false): its codes
 * stay until the pass ends, as its group goes on. */
struct groups {
	size_t n;
	size_t *idx;                      /* the questions, ps[idx[0..n)] */
	const uint32_t **w;               /* their codes as words */
	int64_t *bias;                    /* 128 sum(d) each */
};

static void groups_free(struct groups *gr)
{
	free(gr->w);
	free(gr->idx);
	free(gr->bias);
	*gr = (struct groups){ 0 };
}

/* False when out of memory. */
static bool groups_start(struct groups *gr, const struct pass_q *ps, size_t nq,
                         size_t coded, size_t stride)
{
	*gr = (struct groups){ 0 };
	gr->idx = malloc(coded * sizeof *gr->idx);
	gr->w = malloc(coded * sizeof *gr->w);
	gr->bias = malloc(coded * sizeof *gr->bias);
	if (gr->idx == NULL || gr->w == NULL || gr->bias == NULL) {
		groups_free(gr);
		return false;
	}
	for (size_t i = 0; i < nq; i++) {
		int64_t sum = 0;

		if (!ps[i].coded)
			continue;
		for (size_t j = 0; j < stride; j++)
			sum += ps[i].x.d[j];
		gr->w[gr->n] = (const uint32_t *)(const void *)ps[i].x.d;
		gr->bias[gr->n] = 128 * sum;
		gr->idx[gr->n++] = i;
	}
	return true;
}

static bool nothing_to_find(const struct vec_question *vq, size_t dim)
{
	return vq->k == 0 || dim == 0 || (unsigned)vq->m >= VEC_METRIC_COUNT;
}

/* The float scan of every row, for a question a pass could not take. */
static void whole_float_scan(struct vec_question *vq, const struct rows *rw)
{
	vq->cand = rw->n;
	vq->got = nothing_to_find(vq, rw->dim) ? 0
	          : vec_topk(vq->m, vq->q, vq->qnorm, rw->base, rw->norms, rw->n, rw->dim,
	                     vq->keep, vq->k, vq->out);
}

/* A pass of questions as one thread runs it: begun once, given its rows
 * (all of them, or the blocks its thread takes from a split pass), then
 * ended.  Rows are the file's, whatever rows a thread is given. */
struct pass {
	run_dots_fn dots;
	bool wide;                        /* run_may16's AVX-512 too */
	struct vec_question *qs;
	size_t nq, coded;
	struct rows rw;
	struct pass_q *ps;
	struct groups gr;
	struct vec_hit *merge;            /* the float scan's hits and a block's */
};

static void pass_free(struct pass *pa)
{
	groups_free(&pa->gr);
	for (size_t i = 0; pa->ps != NULL && i < pa->nq; i++)
		pass_q_free(&pa->ps[i]);
	free(pa->ps);
	free(pa->merge);
	pa->ps = NULL;
	pa->merge = NULL;
}

/* False when out of memory: the pass is then not begun. */
static bool pass_begin(struct pass *pa, enum vec_kernel kern, struct vec_question *qs,
                       size_t nq, const struct rows *rw)
{
	size_t stride = vec_code_stride(rw->dim), kmax = 0;

	*pa = (struct pass){ .dots = run_dots_kernel(kern), .qs = qs, .nq = nq, .rw = *rw };
	pa->wide = pa->dots == run_dots_vnni;
	for (size_t i = 0; i < nq; i++)
		kmax = qs[i].k > kmax ? qs[i].k : kmax;
	pa->ps = calloc(nq ? nq : 1, sizeof *pa->ps);
	pa->merge = malloc((kmax ? 2 * kmax : 1) * sizeof *pa->merge);
	if (pa->ps == NULL || pa->merge == NULL) {
		pass_free(pa);
		return false;
	}
	for (size_t i = 0; i < nq; i++) {
		qs[i].got = qs[i].cand = 0;
		if (!nothing_to_find(&qs[i], rw->dim) &&
		    pass_q_start(&pa->ps[i], &qs[i], rw->vc, rw->norms, rw->dim, stride))
			pa->coded++;
	}
	if (pa->coded > 0 && !groups_start(&pa->gr, pa->ps, nq, pa->coded, stride)) {
		pass_free(pa);
		return false;
	}
	return true;
}

/* The float scan of rows from .. to for a question the codes cannot take,
 * kept with its best of the rows before. */
static void pass_floats(struct pass *pa, struct vec_question *vq, size_t from, size_t to)
{
	const struct rows *rw = &pa->rw;
	size_t got = vq->got, more;

	memcpy(pa->merge, vq->out, got * sizeof *vq->out);
	more = vec_topk(vq->m, vq->q, vq->qnorm, rw->base + from * rw->dim,
	                rw->norms != NULL ? rw->norms + from : NULL, to - from, rw->dim,
	                vq->keep != NULL ? vq->keep + from : NULL, vq->k, pa->merge + got);
	for (size_t h = got; h < got + more; h++)
		pa->merge[h].row += (uint32_t)from;
	vq->got = vec_hits_best(vq->m, pa->merge, got + more, vq->k);
	memcpy(vq->out, pa->merge, vq->got * sizeof *vq->out);
	vq->cand += to - from;
}

/* Rows from .. to, from a run's first: one pass for all the coded
 * questions (a run's codes are read from memory once, and stay in the
 * cache for the others), and the float scan for the rest.  A coded
 * question that runs out of memory is lost: its codes stay until the pass
 * ends, as its group goes on, and pass_end says so. */
static void pass_rows(struct pass *pa, size_t from, size_t to)
{
	const struct vec_codes *vc = pa->rw.vc;
	struct groups *gr = &pa->gr;

	for (size_t r0 = from; pa->coded > 0 && r0 < to; r0 += RUN) {
		size_t rows = to - r0 < RUN ? to - r0 : RUN;
		int64_t dc[GROUP][RUN];

		for (size_t i = 0, g; i < gr->n; i += g) {
			g = gr->n - i < GROUP ? gr->n - i : GROUP;
			pa->dots(vc->code + r0 * vc->stride, vc->stride / 4, gr->w + i, gr->bias + i,
			         g, dc);
			for (size_t j = 0; j < g; j++) {
				struct pass_q *p = &pa->ps[gr->idx[i + j]];

				if (p->coded && !pass_q_run(p, dc[j], vc, pa->rw.norms, r0, rows, pa->wide)) {
					p->coded = false;
					p->lost = true;
					pa->coded--;
				}
			}
		}
	}
	for (size_t i = 0; i < pa->nq; i++) {
		struct vec_question *vq = &pa->qs[i];

		if (nothing_to_find(vq, pa->rw.dim))
			vq->cand += to - from;
		else if (!pa->ps[i].coded && !pa->ps[i].lost)
			pass_floats(pa, vq, from, to);
	}
}

/* Each coded question's candidates scored into its out; lost[i] (or, with
 * lost NULL, the float scan of every row here) for a question lost on
 * the way.  The pass is freed. */
static void pass_end(struct pass *pa, bool *lost)
{
	for (size_t i = 0; i < pa->nq; i++) {
		struct pass_q *p = &pa->ps[i];
		struct vec_question *vq = &pa->qs[i];

		if (p->coded && !pass_q_finish(p, &pa->rw))
			p->lost = true;
		if (lost != NULL)
			lost[i] = p->lost;
		else if (p->lost)
			whole_float_scan(vq, &pa->rw);
	}
	pass_free(pa);
}

/* The one pass of vec_topk_coded_many, on the caller's thread. */
static void one_pass(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                     const struct rows *rw)
{
	struct pass pa;

	if (!pass_begin(&pa, kern, qs, nq, rw)) {
		for (size_t i = 0; i < nq; i++)
			whole_float_scan(&qs[i], rw);
		return;
	}
	pass_rows(&pa, 0, rw->n);
	pass_end(&pa, NULL);
}

void vec_topk_coded_many(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                         const float *base, const float *norms, const struct vec_codes *vc,
                         size_t n, size_t dim)
{
	struct rows rw = rows_of(base, norms, vc, n, dim);

	one_pass(kern, qs, nq, &rw);
}

/* ---- a pass split among threads --------------------------------------------------- */

/* One thread's share of a split pass: its own part of the rows, in blocks,
 * then the blocks others have not taken yet, into its own copy of the
 * questions, whose outs are its own. */
struct part {
	enum vec_kernel kern;
	struct vec_question *qs;
	bool *lost;
	size_t nq;
	const struct rows *rw;
	_Atomic uint64_t *left;           /* each part's blocks not taken, shared */
	size_t self, parts;
};

/* A part's blocks not taken yet are [front, back), front in the high half
 * of one word, so that a take is one compare-and-swap: its own thread
 * takes them from the front, another from the back. */
static bool block_take(_Atomic uint64_t *left, bool front, size_t *block)
{
	uint64_t was = atomic_load_explicit(left, memory_order_relaxed), now;

	do {
		uint32_t f = (uint32_t)(was >> 32), b = (uint32_t)was;

		if (f >= b)
			return false;
		*block = front ? f : b - 1;
		now = front ? (uint64_t)(f + 1) << 32 | b : (uint64_t)f << 32 | (b - 1);
	} while (!atomic_compare_exchange_weak_explicit(left, &was, now, memory_order_relaxed,
	                                                memory_order_relaxed));
	return true;
}

static void block_rows(struct part *p, struct pass *pa, size_t block)
{
	size_t from = block * VEC_PART_BLOCK, n = p->rw->n;

	pass_rows(pa, from, n - from < VEC_PART_BLOCK ? n : from + VEC_PART_BLOCK);
}

/* The part's own blocks in the order the codes lie (a pass with few
 * questions is bound by reading them, and one stream a thread reads
 * fastest), then the others' last blocks: a thread that started late,
 * or was kept off its CPU, leaves the end of its part to the others, so
 * that the threads end together. */
static void part_take(struct part *p, struct pass *pa)
{
	size_t block;

	while (block_take(&p->left[p->self], true, &block))
		block_rows(p, pa, block);
	for (size_t o = 1; o < p->parts; o++)
		while (block_take(&p->left[(p->self + o) % p->parts], false, &block))
			block_rows(p, pa, block);
	pass_end(pa, p->lost);
}

/* A helper without the memory for its pass takes no block. */
static void *part_run(void *arg)
{
	struct part *p = arg;
	struct pass pa;

	if (pass_begin(&pa, p->kern, p->qs, p->nq, p->rw))
		part_take(p, &pa);
	return NULL;
}

/* Question i's top k from its parts' (pt[p].qs[i]), whose outs lie side by
 * side from the first part's: each part's top k are its rows' best, so the
 * best k of theirs together are the whole pass's, hit for hit (hits are
 * ordered by score, then row).  A question a part lost takes the float
 * scan of every row. */
static void parts_merge(struct vec_question *vq, const struct part *pt, size_t parts,
                        size_t i)
{
	struct vec_hit *all = pt[0].qs[i].out;
	size_t got = 0, cand = 0;

	for (size_t p = 0; p < parts; p++) {
		const struct vec_question *x = &pt[p].qs[i];

		if (pt[p].lost[i]) {
			whole_float_scan(vq, pt[0].rw);
			return;
		}
		/* all[got] never passes the hit it is copied from */
		memmove(all + got, x->out, x->got * sizeof *all);
		got += x->got;
		cand += x->cand;
	}
	vq->got = vec_hits_best(vq->m, all, got, vq->k);
	vq->cand = cand;
	memcpy(vq->out, all, vq->got * sizeof *all);
}

/* A split pass's buffers: each part's copy of the questions (part p's
 * question i at pq[p * nq + i]), whether the part lost it, and k hits of
 * room for each. */
struct split {
	struct vec_question *pq;
	bool *lost;
	struct vec_hit *hits;
};

/* The split pass itself, into sp; false when the leading thread has no
 * memory for its pass. */
static bool parts_run(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                      const struct rows *rw, size_t parts, const struct split *sp)
{
	struct part pt[VEC_PARTS_MAX];
	pthread_t th[VEC_PARTS_MAX];
	bool started[VEC_PARTS_MAX] = { false };
	_Atomic uint64_t left[VEC_PARTS_MAX];
	size_t blocks = (rw->n + VEC_PART_BLOCK - 1) / VEC_PART_BLOCK;
	struct vec_question *pq = sp->pq;
	struct vec_hit *h = sp->hits;
	struct pass pa;

	/* Question i's parts' outs side by side, k hits of room each: the
	 * merge gathers them in place. */
	for (size_t i = 0; i < nq; i++)
		for (size_t p = 0; p < parts; p++, h += qs[i].k) {
			pq[p * nq + i] = qs[i];
			pq[p * nq + i].out = h;
			pq[p * nq + i].got = pq[p * nq + i].cand = 0;
		}
	for (size_t p = 0; p < parts; p++) {
		atomic_init(&left[p], (uint64_t)(blocks * p / parts) << 32 |
		                      blocks * (p + 1) / parts);
		pt[p] = (struct part){ kern, pq + p * nq, sp->lost + p * nq, nq, rw, left, p,
		                       parts };
	}
	if (!pass_begin(&pa, kern, pq, nq, rw))
		return false;
	/* A helper that could not start leaves its blocks to the others. */
	for (size_t p = 1; p < parts; p++)
		started[p] = thread_start(&th[p], part_run, &pt[p]);
	part_take(&pt[0], &pa);
	for (size_t p = 1; p < parts; p++)
		if (started[p])
			pthread_join(th[p], NULL);
	for (size_t i = 0; i < nq; i++)
		parts_merge(&qs[i], pt, parts, i);
	return true;
}

void vec_topk_coded_parts(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                          const float *base, const float *norms, const struct vec_codes *vc,
                          size_t n, size_t dim, size_t parts)
{
	struct rows rw = rows_of(base, norms, vc, n, dim);
	struct split sp = { NULL, NULL, NULL };
	bool split = false;
	size_t ks = 0;

	if (parts > VEC_PARTS_MAX)
		parts = VEC_PARTS_MAX;
	for (size_t i = 0; i < nq; i++)
		ks += qs[i].k;
	if (parts >= 2 && rw.n >= parts * VEC_PART_MIN_ROWS &&
	    (sp.pq = calloc(parts * nq, sizeof *sp.pq)) != NULL &&
	    (sp.lost = calloc(parts * nq, sizeof *sp.lost)) != NULL &&
	    (sp.hits = malloc((ks > 0 ? parts * ks : 1) * sizeof *sp.hits)) != NULL)
		split = parts_run(kern, qs, nq, &rw, parts, &sp);
	free(sp.hits);
	free(sp.lost);
	free(sp.pq);
	if (!split)
		one_pass(kern, qs, nq, &rw);
}

size_t vec_topk_coded_with(enum vec_kernel kern, enum vec_metric m, const float *q,
                           float qnorm, const float *base, const float *norms,
                           const struct vec_codes *vc, size_t n, size_t dim,
                           const uint8_t *keep, size_t k, struct vec_hit *out,
                           size_t *cand)
{
	struct vec_question vq = { m, q, qnorm, keep, k, out, 0, 0 };

	vec_topk_coded_many(kern, &vq, 1, base, norms, vc, n, dim);
	if (cand != NULL)
		*cand = vq.cand;
	return vq.got;
}

size_t vec_topk_coded(enum vec_metric m, const float *q, float qnorm,
                      const float *base, const float *norms, const struct vec_codes *vc,
                      size_t n, size_t dim, const uint8_t *keep, size_t k,
                      struct vec_hit *out, size_t *cand)
{
	return vec_topk_coded_with(VEC_KERNEL_AUTO, m, q, qnorm, base, norms, vc, n, dim,
	                           keep, k, out, cand);
}
