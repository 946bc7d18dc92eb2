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

/* ---- d.c ------------------------------------------------------------------------ */

/* The kernels give d.c for a run of rows at once: one call per run, not
 * per row, and the loop over the rows inlines the product. */
#define RUN 16

/* Candidates whose float rows are fetched ahead of their exact scores. */
#define SCORE_AHEAD 4

typedef void (*idots_fn)(const int8_t *d, const int8_t *c, size_t stride, size_t rows,
                         int64_t *dc);

static void idots_portable(const int8_t *d, const int8_t *c, size_t stride, size_t rows,
                           int64_t *dc)
{
	for (size_t r = 0; r < rows; r++, c += stride) {
		int64_t s = 0;
		for (size_t j = 0; j < stride; j++)
			s += (int32_t)d[j] * c[j];
		dc[r] = s;
	}
}

#define AVX2 __attribute__((target("avx2,fma")))

/* maddubs multiplies unsigned by signed bytes: |d| by c with d's sign,
 * adjacent pairs added into 16 bits (at most 2 * 127 * 127: no
 * saturation), then pairs of those into 32 bits; a lane adds at most
 * stride / 8 such sums, far below 2^31 for any dim up to RINDEX_MAX_DIM.
 * One row at a time: two or four rows sharing the question's loads ran
 * slower here, the pass being bound by reading the codes. */
AVX2 static inline int64_t idot_avx2(const int8_t *d, const int8_t *c, size_t stride)
{
	const __m256i ones = _mm256_set1_epi16(1);
	__m256i a0 = _mm256_setzero_si256(), a1 = a0;
	size_t j = 0;

#define STEP(acc, at) do { \
		__m256i dv = _mm256_loadu_si256((const __m256i *)(d + (at))); \
		__m256i cv = _mm256_loadu_si256((const __m256i *)(c + (at))); \
		cv = _mm256_maddubs_epi16(_mm256_abs_epi8(dv), _mm256_sign_epi8(cv, dv)); \
		acc = _mm256_add_epi32(acc, _mm256_madd_epi16(cv, ones)); \
	} while (0)
	for (; j + 64 <= stride; j += 64) {
		STEP(a0, j);
		STEP(a1, j + 32);
	}
	if (j < stride)
		STEP(a0, j);
#undef STEP
	a0 = _mm256_add_epi32(a0, a1);
	__m128i s = _mm_add_epi32(_mm256_castsi256_si128(a0), _mm256_extracti128_si256(a0, 1));
	int32_t w[4];
	_mm_storeu_si128((__m128i *)w, s);
	return (int64_t)w[0] + w[1] + w[2] + w[3];
}

AVX2 static void idots_avx2(const int8_t *d, const int8_t *c, size_t stride, size_t rows,
                            int64_t *dc)
{
	for (size_t r = 0; r < rows; r++, c += stride)
		dc[r] = idot_avx2(d, c, stride);
}

#define VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vnni")))

/* vpdpbusd multiplies unsigned bytes by signed ones, four products added
 * into each 32-bit lane: one instruction for what takes AVX2 four.  The
 * row's codes are made unsigned by flipping their top bit (c + 128), so
 * the lanes add up to d.c + 128 sum(d), and sum(d) is taken once a call.
 * A lane adds at most stride / 16 products of 255 by 127: under 2^24.
 * The question's pass alone is bound by reading the codes either way;
 * questions ranked together (vec_topk_coded_many) read each run once, and
 * then this is what each of them costs. */
VNNI static void idots_vnni(const int8_t *d, const int8_t *c, size_t stride, size_t rows,
                            int64_t *dc)
{
	const __m512i flip = _mm512_set1_epi8(-128), ones = _mm512_set1_epi8(1);
	/* stride is a multiple of 32: the last 32 bytes may be half a load */
	const __mmask64 tail = 0xffffffffu;
	const size_t full = stride & ~(size_t)63;
	__m512i ds = _mm512_setzero_si512();
	size_t j;

	for (j = 0; j < full; j += 64)
		ds = _mm512_dpbusd_epi32(ds, ones, _mm512_loadu_si512(d + j));
	if (j < stride)
		ds = _mm512_dpbusd_epi32(ds, ones, _mm512_maskz_loadu_epi8(tail, d + j));
	const int64_t bias = 128 * (int64_t)_mm512_reduce_add_epi32(ds);

	for (size_t r = 0; r < rows; r++, c += stride) {
		__m512i p = _mm512_setzero_si512();

		for (j = 0; j < full; j += 64)
			p = _mm512_dpbusd_epi32(p, _mm512_xor_si512(_mm512_loadu_si512(c + j), flip),
			                        _mm512_loadu_si512(d + j));
		if (j < stride)
			p = _mm512_dpbusd_epi32(p, _mm512_xor_si512(
			        _mm512_maskz_loadu_epi8(tail, c + j), flip),
			        _mm512_maskz_loadu_epi8(tail, d + j));
		dc[r] = (int64_t)_mm512_reduce_add_epi32(p) - bias;
	}
}

/* ---- runs on their side, for questions ranked together ----------------------------
 *
 * Eight or more questions ranked together (TURN_MIN) take a run of RUN
 * rows turned on its side: word k (four codes) of the 16 rows in one
 * 64-byte vector, so that one vpdpbusd adds four products to each of the
 * 16 rows' sums.  The turn is paid once a run for all the questions, and
 * each question then pays stride / 4 vpdpbusd a run, with no flip and no
 * horizontal sum.  Eight at a time keep eight independent sums going;
 * four at a time waited on each sum's chain and ran slower than
 * idots_vnni (bench/vec_batch.c). */

/* The run's 16 rows (flipped, as idots_vnni flips them) on their side:
 * t[k] holds word k of every row.  A 16 x 16 transpose of words for each
 * 64 bytes of the rows; the last may be half (stride is a multiple of
 * 32), and then only its 8 words are kept. */
VNNI static void run_turn(const int8_t *c, size_t stride, __m512i *t)
{
	const __m512i flip = _mm512_set1_epi8(-128);

	for (size_t at = 0; at < stride; at += 64) {
		const __mmask64 m = stride - at >= 64 ? ~(__mmask64)0 : 0xffffffffu;
		__m512i a[16], b[16];

		#pragma GCC unroll 16
		for (size_t r = 0; r < 16; r++)
			a[r] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, c + r * stride + at), flip);
		/* within each 128 bits: rows 4i..4i+3's word j in a[4i + j] */
		#pragma GCC unroll 16
		for (size_t i = 0; i < 16; i += 2) {
			b[i] = _mm512_unpacklo_epi32(a[i], a[i + 1]);
			b[i + 1] = _mm512_unpackhi_epi32(a[i], a[i + 1]);
		}
		#pragma GCC unroll 16
		for (size_t i = 0; i < 16; i += 4) {
			a[i] = _mm512_unpacklo_epi64(b[i], b[i + 2]);
			a[i + 1] = _mm512_unpackhi_epi64(b[i], b[i + 2]);
			a[i + 2] = _mm512_unpacklo_epi64(b[i + 1], b[i + 3]);
			a[i + 3] = _mm512_unpackhi_epi64(b[i + 1], b[i + 3]);
		}
		/* then each 128 bits of word 4L + j to its place */
		#pragma GCC unroll 16
		for (size_t j = 0; j < 4; j++) {
			__m512i lo0 = _mm512_shuffle_i32x4(a[j], a[4 + j], _MM_SHUFFLE(1, 0, 1, 0));
			__m512i hi0 = _mm512_shuffle_i32x4(a[j], a[4 + j], _MM_SHUFFLE(3, 2, 3, 2));
			__m512i lo1 = _mm512_shuffle_i32x4(a[8 + j], a[12 + j], _MM_SHUFFLE(1, 0, 1, 0));
			__m512i hi1 = _mm512_shuffle_i32x4(a[8 + j], a[12 + j], _MM_SHUFFLE(3, 2, 3, 2));

			b[j] = _mm512_shuffle_i32x4(lo0, lo1, _MM_SHUFFLE(2, 0, 2, 0));
			b[4 + j] = _mm512_shuffle_i32x4(lo0, lo1, _MM_SHUFFLE(3, 1, 3, 1));
			b[8 + j] = _mm512_shuffle_i32x4(hi0, hi1, _MM_SHUFFLE(2, 0, 2, 0));
			b[12 + j] = _mm512_shuffle_i32x4(hi0, hi1, _MM_SHUFFLE(3, 1, 3, 1));
		}
		#pragma GCC unroll 16
		for (size_t k = 0; k < 16; k++)
			if (k < 8 || m == ~(__mmask64)0)
				_mm512_store_si512(t + at / 4 + k, b[k]);
	}
}

/* d.c of the 16 rows of t (words words) for G questions: w[g] is question
 * g's codes as words, bias[g] its 128 sum(d).  G independent sums, so
 * that each vpdpbusd need not wait for the one before. */
VNNI static inline __attribute__((always_inline)) void
turned_dots(const __m512i *t, size_t words, const uint32_t *const *w, const int64_t *bias,
            size_t G, int64_t (*dc)[RUN])
{
	__m512i acc[8];

	#pragma GCC unroll 16
	for (size_t g = 0; g < G; g++)
		acc[g] = _mm512_setzero_si512();
	for (size_t k = 0; k < words; k++) {
		const __m512i b = _mm512_load_si512(t + k);

		#pragma GCC unroll 16
		for (size_t g = 0; g < G; g++)
			acc[g] = _mm512_dpbusd_epi32(acc[g], b, _mm512_set1_epi32((int)w[g][k]));
	}
	#pragma GCC unroll 16
	for (size_t g = 0; g < G; g++) {
		const __m512i bs = _mm512_set1_epi64(bias[g]);

		_mm512_storeu_si512(dc[g], _mm512_sub_epi64(
			_mm512_cvtepi32_epi64(_mm512_castsi512_si256(acc[g])), bs));
		_mm512_storeu_si512(dc[g] + 8, _mm512_sub_epi64(
			_mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(acc[g], 1)), bs));
	}
}

VNNI static void turned_dots8(const __m512i *t, size_t words, const uint32_t *const *w,
                              const int64_t *bias, int64_t (*dc)[RUN])
{
	turned_dots(t, words, w, bias, 8, dc);
}

bool vec_have_vnni(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni");
}

static idots_fn idots_kernel(enum vec_kernel kern)
{
	static _Atomic idots_fn best;
	idots_fn f;

	if (kern == VEC_KERNEL_PORTABLE)
		return idots_portable;
	if (kern == VEC_KERNEL_AVX2)
		return vec_have_avx2() ? idots_avx2 : idots_portable;
	if ((f = atomic_load_explicit(&best, memory_order_relaxed)) == NULL) {
		f = vec_have_vnni() ? idots_vnni : vec_have_avx2() ? idots_avx2 : idots_portable;
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

/* The rows that can still be in p's top k, scored exactly, into its out;
 * false when out of memory. */
static bool pass_q_finish(struct pass_q *p, const float *base, const float *norms,
                          size_t dim)
{
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

/* The questions of a pass that take the runs on their side: every coded
 * one, when TURN_MIN or more are and the kernel is VNNI's.  They go in
 * groups of 8, the last of PAD_MIN to 7 padded to 8 with its last
 * question: turning a run and eight sums on it cost about what four
 * questions take by the per-row kernel, and the eight sums alone less
 * (bench/vec_batch.c). */
#define TURN_MIN 5
#define PAD_MIN 4

struct turned {
	void *t;                          /* a run on its side: words vectors */
	size_t words, n;
	size_t grouped;                   /* the first this many go in groups of 8 */
	size_t *idx;                      /* the questions, ps[idx[0..n)] */
	uint32_t **w;                     /* their codes as words, then the padding */
	int64_t *bias;                    /* 128 sum(d) each */
};

static void turned_free(struct turned *tn)
{
	for (size_t i = 0; tn->w != NULL && i < tn->n; i++)
		free(tn->w[i]);
	free(tn->w);
	free(tn->idx);
	free(tn->bias);
	free(tn->t);
}

/* False (nothing kept) when out of memory: the pass goes on without. */
static bool turned_start(struct turned *tn, const struct pass_q *ps, size_t nq,
                         size_t coded, size_t stride)
{
	*tn = (struct turned){ .words = stride / 4 };
	tn->t = aligned_alloc(64, stride * RUN);
	tn->idx = malloc(coded * sizeof *tn->idx);
	tn->w = calloc(coded + 7, sizeof *tn->w);
	tn->bias = malloc((coded + 7) * sizeof *tn->bias);
	if (tn->t == NULL || tn->idx == NULL || tn->w == NULL || tn->bias == NULL)
		goto oom;
	for (size_t i = 0; i < nq; i++) {
		int64_t sum = 0;

		if (!ps[i].coded)
			continue;
		if ((tn->w[tn->n] = malloc(stride)) == NULL)
			goto oom;
		memcpy(tn->w[tn->n], ps[i].x.d, stride);
		for (size_t j = 0; j < stride; j++)
			sum += ps[i].x.d[j];
		tn->bias[tn->n] = 128 * sum;
		tn->idx[tn->n++] = i;
	}
	/* A last group of PAD_MIN to 7 padded to 8 with its last question
	 * (the padding's codes are not its own: turned_free stops at n). */
	tn->grouped = tn->n % 8 >= PAD_MIN ? tn->n : tn->n - tn->n % 8;
	if (tn->grouped == tn->n)
		for (size_t j = tn->n; j % 8 != 0; j++) {
			tn->w[j] = tn->w[tn->n - 1];
			tn->bias[j] = tn->bias[tn->n - 1];
		}
	return true;
oom:
	turned_free(tn);
	*tn = (struct turned){ 0 };
	return false;
}

/* A full run (RUN rows from r0) for the turned questions: groups of 8
 * through the run on its side (the last one padded by turned_start); a
 * last one to PAD_MIN - 1 the way a question alone takes it. */
static void turned_run(struct turned *tn, struct pass_q *ps, idots_fn idots,
                       const struct vec_codes *vc, const float *norms, size_t r0,
                       size_t *coded)
{
	const int8_t *c = vc->code + r0 * vc->stride;
	int64_t dc[8][RUN];

	run_turn(c, vc->stride, tn->t);
	for (size_t i = 0, g; i < tn->n; i += g) {
		g = i >= tn->grouped ? 1 : tn->n - i < 8 ? tn->n - i : 8;
		if (i < tn->grouped)
			turned_dots8(tn->t, tn->words, (const uint32_t *const *)tn->w + i,
			             tn->bias + i, dc);
		else if (ps[tn->idx[i]].coded)
			idots(ps[tn->idx[i]].x.d, c, vc->stride, RUN, dc[0]);
		for (size_t j = 0; j < g; j++) {
			struct pass_q *p = &ps[tn->idx[i + j]];

			if (p->coded && !pass_q_run(p, dc[j], vc, norms, r0, RUN, true)) {
				pass_q_free(p);
				(*coded)--;
			}
		}
	}
}

static bool nothing_to_find(const struct vec_question *vq, size_t dim)
{
	return vq->k == 0 || dim == 0 || (unsigned)vq->m >= VEC_METRIC_COUNT;
}

void vec_topk_coded_many(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                         const float *base, const float *norms, const struct vec_codes *vc,
                         size_t n, size_t dim)
{
	idots_fn idots = idots_kernel(kern);
	size_t stride = vec_code_stride(dim), coded = 0;
	struct pass_q *ps = calloc(nq ? nq : 1, sizeof *ps);

	if (n > UINT32_MAX)
		n = UINT32_MAX;                   /* rows are uint32_t */
	for (size_t i = 0; i < nq; i++) {
		qs[i].got = 0;
		qs[i].cand = n;
		if (!nothing_to_find(&qs[i], dim) && ps != NULL &&
		    pass_q_start(&ps[i], &qs[i], vc, norms, dim, stride))
			coded++;
	}
	/* One pass for all: a run's codes are read from memory once, and
	 * stay in the cache for the other questions. */
	struct turned tn;
	bool turn = idots == idots_vnni && coded >= TURN_MIN &&
	            turned_start(&tn, ps, nq, coded, stride);

	for (size_t r0 = 0; coded > 0 && r0 < n; r0 += RUN) {
		size_t rows = n - r0 < RUN ? n - r0 : RUN;
		int64_t dc[RUN];

		if (turn && rows == RUN) {
			turned_run(&tn, ps, idots, vc, norms, r0, &coded);
			continue;
		}
		for (size_t i = 0; i < nq; i++) {
			if (!ps[i].coded)
				continue;
			idots(ps[i].x.d, vc->code + r0 * stride, stride, rows, dc);
			if (!pass_q_run(&ps[i], dc, vc, norms, r0, rows, idots == idots_vnni)) {
				pass_q_free(&ps[i]);
				coded--;
			}
		}
	}
	if (turn)
		turned_free(&tn);
	for (size_t i = 0; i < nq; i++) {
		struct vec_question *vq = &qs[i];

		if (nothing_to_find(vq, dim))
			continue;
		if (ps == NULL || !ps[i].coded || !pass_q_finish(&ps[i], base, norms, dim)) {
			vq->cand = n;
			vq->got = vec_topk(vq->m, vq->q, vq->qnorm, base, norms, n, dim, vq->keep,
			                   vq->k, vq->out);
		}
		if (ps != NULL)
			pass_q_free(&ps[i]);
	}
	free(ps);
}

/* ---- a pass split among threads --------------------------------------------------- */

/* One part's rows, from row first, with its questions' outs of their own. */
struct part {
	enum vec_kernel kern;
	struct vec_question *qs;
	size_t nq, first, n, dim;
	const float *base, *norms;
	struct vec_codes vc;
};

static void *part_run(void *arg)
{
	struct part *p = arg;

	vec_topk_coded_many(p->kern, p->qs, p->nq, p->base, p->norms, &p->vc, p->n, p->dim);
	return NULL;
}

/* Question i's top k from its parts' (pt[p].qs[i]), whose outs lie side by
 * side from the first part's: each part's top k are its rows' best, so the
 * best k of theirs together are the whole pass's, hit for hit (hits are
 * ordered by score, then row). */
static void parts_merge(struct vec_question *vq, const struct part *pt, size_t parts,
                        size_t i)
{
	struct vec_hit *all = pt[0].qs[i].out;
	size_t got = 0, cand = 0;

	for (size_t p = 0; p < parts; p++) {
		const struct vec_question *x = &pt[p].qs[i];

		/* all[got] never passes the hit it is copied from */
		for (size_t h = 0; h < x->got; h++)
			all[got++] = (struct vec_hit){ x->out[h].row + (uint32_t)pt[p].first,
			                               x->out[h].score };
		cand += x->cand;
	}
	vq->got = vec_hits_best(vq->m, all, got, vq->k);
	vq->cand = cand;
	memcpy(vq->out, all, vq->got * sizeof *all);
}

void vec_topk_coded_parts(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                          const float *base, const float *norms, const struct vec_codes *vc,
                          size_t n, size_t dim, size_t parts)
{
	struct part pt[VEC_PARTS_MAX];
	pthread_t th[VEC_PARTS_MAX];
	bool started[VEC_PARTS_MAX] = { false };
	struct vec_question *pq = NULL;
	struct vec_hit *hits = NULL, *h;
	size_t ks = 0;

	if (parts > VEC_PARTS_MAX)
		parts = VEC_PARTS_MAX;
	if (n > UINT32_MAX)
		n = UINT32_MAX;                   /* rows are uint32_t */
	for (size_t i = 0; i < nq; i++)
		ks += qs[i].k;
	if (parts < 2 || n < parts * VEC_PART_MIN_ROWS ||
	    (pq = calloc(parts * nq, sizeof *pq)) == NULL ||
	    (hits = malloc((ks > 0 ? parts * ks : 1) * sizeof *hits)) == NULL) {
		free(pq);
		vec_topk_coded_many(kern, qs, nq, base, norms, vc, n, dim);
		return;
	}
	/* Question i's parts' outs side by side, k hits of room each: the
	 * merge gathers them in place. */
	h = hits;
	for (size_t i = 0; i < nq; i++)
		for (size_t p = 0; p < parts; p++, h += qs[i].k) {
			size_t first = n * p / parts;

			pq[p * nq + i] = qs[i];
			pq[p * nq + i].keep = qs[i].keep != NULL ? qs[i].keep + first : NULL;
			pq[p * nq + i].out = h;
		}
	for (size_t p = 0; p < parts; p++) {
		size_t first = n * p / parts, end = n * (p + 1) / parts;

		pt[p] = (struct part){ kern, pq + p * nq, nq, first, end - first, dim,
		                       base + first * dim, norms != NULL ? norms + first : NULL,
		                       { vc->code + first * vc->stride, vc->stride,
		                         vc->scale + first, vc->err + first } };
	}
	/* This thread takes the first part; a helper that could not start
	 * has its part taken here too. */
	for (size_t p = 1; p < parts; p++)
		started[p] = thread_start(&th[p], part_run, &pt[p]);
	part_run(&pt[0]);
	for (size_t p = 1; p < parts; p++)
		if (started[p])
			pthread_join(th[p], NULL);
		else
			part_run(&pt[p]);
	for (size_t i = 0; i < nq; i++)
		parts_merge(&qs[i], pt, parts, i);
	free(hits);
	free(pq);
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
