/* vec.c - distances and exact top-k over float32 rows.
 *
 * Two kernels per metric, same arithmetic shape:
 *
 * - portable C for the auto-vectoriser: VEC_LANES independent float
 *   accumulators, so no reassociation (no -ffast-math) is needed to use SIMD
 *   registers.  With the project's -O2 (GCC 12, very-cheap cost model),
 *   -fopt-info-vec-optimized reports "loop vectorized using 16 byte
 *   vectors" for each kernel's lane loop, and objdump shows the steady
 *   state as, per 8 floats, four movups and two subps+mulps+addps (dot,
 *   L2), subps+andps+addps (L1) or subps+andps+maxps (max), accumulators
 *   in xmm registers.  SSE2 is the baseline ISA, hence 16 bytes.
 * - AVX2+FMA intrinsics (target attribute, so the rest of the binary keeps
 *   the baseline ISA), 4 x 8 lanes per step, chosen at run time with
 *   __builtin_cpu_supports.  Loads are unaligned (loadu): rows are only
 *   64-byte aligned when dim is a multiple of 16.
 *
 * Both kernels sum lanes in a fixed order, so a kernel always gives the same
 * result for the same input; the two kernels may differ in the last bits
 * (FMA rounds once).
 *
 * Top-k keeps a bounded max-heap of the k best seen so far, whose root is
 * the worst of them: one comparison per row once the heap is full.  NaN
 * scores (a corrupt or hostile vector) are skipped: they have no order.
 * max ignores NaN components rather than propagating them (maxps keeps
 * the accumulator); rindex_write refuses non-finite vectors anyway. */
#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/vec.h"

#define VEC_LANES 8

static const char *const metric_names[VEC_METRIC_COUNT] = {
	[VEC_L2] = "L2", [VEC_L1] = "L1", [VEC_MAX] = "max",
	[VEC_COS] = "cos", [VEC_DOT] = "dot",
};

int vec_metric_parse(const char *wire, enum vec_metric *out)
{
	if (wire == NULL)
		return -1;
	for (int m = 0; m < VEC_METRIC_COUNT; m++)
		if (strcmp(wire, metric_names[m]) == 0) {
			*out = (enum vec_metric)m;
			return 0;
		}
	return -1;
}

const char *vec_metric_name(enum vec_metric m)
{
	return (unsigned)m < VEC_METRIC_COUNT ? metric_names[m] : "?";
}

bool vec_larger_is_better(enum vec_metric m)
{
	return m == VEC_COS || m == VEC_DOT;
}

bool vec_better(enum vec_metric m, float a, float b)
{
	return vec_larger_is_better(m) ? a > b : a < b;
}

/* ---- portable kernels ------------------------------------------------------ */

/* Pairwise, fixed order: the result does not depend on the compiler. */
static float lanes_sum(const float acc[VEC_LANES])
{
	return ((acc[0] + acc[4]) + (acc[1] + acc[5])) +
	       ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

static float lanes_max(const float acc[VEC_LANES])
{
	float r = acc[0];
	for (int j = 1; j < VEC_LANES; j++)
		r = acc[j] > r ? acc[j] : r;
	return r;
}

static float dot_portable(const float *restrict a, const float *restrict b,
                          size_t dim)
{
	float acc[VEC_LANES] = { 0 };
	size_t i = 0;

	for (; i + VEC_LANES <= dim; i += VEC_LANES)
		for (size_t j = 0; j < VEC_LANES; j++)
			acc[j] += a[i + j] * b[i + j];
	float s = lanes_sum(acc);
	for (; i < dim; i++)
		s += a[i] * b[i];
	return s;
}

static float l2sq_portable(const float *restrict a, const float *restrict b,
                           size_t dim)
{
	float acc[VEC_LANES] = { 0 };
	size_t i = 0;

	for (; i + VEC_LANES <= dim; i += VEC_LANES)
		for (size_t j = 0; j < VEC_LANES; j++) {
			float d = a[i + j] - b[i + j];
			acc[j] += d * d;
		}
	float s = lanes_sum(acc);
	for (; i < dim; i++) {
		float d = a[i] - b[i];
		s += d * d;
	}
	return s;
}

static float l1_portable(const float *restrict a, const float *restrict b,
                         size_t dim)
{
	float acc[VEC_LANES] = { 0 };
	size_t i = 0;

	for (; i + VEC_LANES <= dim; i += VEC_LANES)
		for (size_t j = 0; j < VEC_LANES; j++)
			acc[j] += fabsf(a[i + j] - b[i + j]);
	float s = lanes_sum(acc);
	for (; i < dim; i++)
		s += fabsf(a[i] - b[i]);
	return s;
}

static float max_portable(const float *restrict a, const float *restrict b,
                          size_t dim)
{
	float acc[VEC_LANES] = { 0 };
	size_t i = 0;

	/* d > acc ? d : acc is exactly maxps's operand order.  Two loops of
	 * four: GCC 12 keeps one 8-lane conditional loop's accumulators in
	 * memory (store/reload per step), but two 4-lane ones in registers. */
	for (; i + VEC_LANES <= dim; i += VEC_LANES) {
		for (size_t j = 0; j < VEC_LANES / 2; j++) {
			float d = fabsf(a[i + j] - b[i + j]);
			acc[j] = d > acc[j] ? d : acc[j];
		}
		for (size_t j = VEC_LANES / 2; j < VEC_LANES; j++) {
			float d = fabsf(a[i + j] - b[i + j]);
			acc[j] = d > acc[j] ? d : acc[j];
		}
	}
	float s = lanes_max(acc);
	for (; i < dim; i++) {
		float d = fabsf(a[i] - b[i]);
		s = d > s ? d : s;
	}
	return s;
}

/* ---- AVX2 + FMA kernels ---------------------------------------------------- */

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AVX2 static inline float hmax256(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AVX2 static float dot_avx2(const float *a, const float *b, size_t dim)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 32 <= dim; i += 32) {
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
		s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
		s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
		s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
	}
	for (; i + 8 <= dim; i += 8)
		s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
	float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < dim; i++)
		s += a[i] * b[i];
	return s;
}

AVX2 static float l2sq_avx2(const float *a, const float *b, size_t dim)
{
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	for (; i + 32 <= dim; i += 32) {
		__m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		__m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
		__m256 d2 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16));
		__m256 d3 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24));
		s0 = _mm256_fmadd_ps(d0, d0, s0);
		s1 = _mm256_fmadd_ps(d1, d1, s1);
		s2 = _mm256_fmadd_ps(d2, d2, s2);
		s3 = _mm256_fmadd_ps(d3, d3, s3);
	}
	for (; i + 8 <= dim; i += 8) {
		__m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
		s0 = _mm256_fmadd_ps(d, d, s0);
	}
	float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < dim; i++) {
		float d = a[i] - b[i];
		s += d * d;
	}
	return s;
}

AVX2 static float l1_avx2(const float *a, const float *b, size_t dim)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

#define ABSDIFF(off) _mm256_andnot_ps(sign, _mm256_sub_ps(_mm256_loadu_ps(a + i + (off)), \
	                                                  _mm256_loadu_ps(b + i + (off))))
	for (; i + 32 <= dim; i += 32) {
		s0 = _mm256_add_ps(s0, ABSDIFF(0));
		s1 = _mm256_add_ps(s1, ABSDIFF(8));
		s2 = _mm256_add_ps(s2, ABSDIFF(16));
		s3 = _mm256_add_ps(s3, ABSDIFF(24));
	}
	for (; i + 8 <= dim; i += 8)
		s0 = _mm256_add_ps(s0, ABSDIFF(0));
	float s = hsum256(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
	for (; i < dim; i++)
		s += fabsf(a[i] - b[i]);
	return s;
}

AVX2 static float max_avx2(const float *a, const float *b, size_t dim)
{
	const __m256 sign = _mm256_set1_ps(-0.0f);
	__m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
	size_t i = 0;

	/* max_ps(d, acc) keeps acc when d is NaN, as the portable code does. */
	for (; i + 32 <= dim; i += 32) {
		s0 = _mm256_max_ps(ABSDIFF(0), s0);
		s1 = _mm256_max_ps(ABSDIFF(8), s1);
		s2 = _mm256_max_ps(ABSDIFF(16), s2);
		s3 = _mm256_max_ps(ABSDIFF(24), s3);
	}
	for (; i + 8 <= dim; i += 8)
		s0 = _mm256_max_ps(ABSDIFF(0), s0);
#undef ABSDIFF
	float s = hmax256(_mm256_max_ps(_mm256_max_ps(s0, s1), _mm256_max_ps(s2, s3)));
	for (; i < dim; i++) {
		float d = fabsf(a[i] - b[i]);
		s = d > s ? d : s;
	}
	return s;
}

/* ---- tiles of four queries by two rows ------------------------------------------------
 *
 * d[r][j] = the dot product of row r (r0 or r1) and query q[j].  A row is
 * loaded once for four queries, and eight independent sums keep both FMA
 * units busy: a scan of many queries is bound by arithmetic, not by
 * reading the rows again for each. */

#define TILE_Q 4

AVX2 static void tile_avx2(const float *const q[TILE_Q], const float *r0, const float *r1,
                           size_t dim, float d[2][TILE_Q])
{
	__m256 a00 = _mm256_setzero_ps(), a01 = a00, a02 = a00, a03 = a00;
	__m256 a10 = a00, a11 = a00, a12 = a00, a13 = a00;
	size_t i = 0;

	for (; i + 8 <= dim; i += 8) {
		__m256 x0 = _mm256_loadu_ps(r0 + i), x1 = _mm256_loadu_ps(r1 + i), y;

		y = _mm256_loadu_ps(q[0] + i);
		a00 = _mm256_fmadd_ps(x0, y, a00);
		a10 = _mm256_fmadd_ps(x1, y, a10);
		y = _mm256_loadu_ps(q[1] + i);
		a01 = _mm256_fmadd_ps(x0, y, a01);
		a11 = _mm256_fmadd_ps(x1, y, a11);
		y = _mm256_loadu_ps(q[2] + i);
		a02 = _mm256_fmadd_ps(x0, y, a02);
		a12 = _mm256_fmadd_ps(x1, y, a12);
		y = _mm256_loadu_ps(q[3] + i);
		a03 = _mm256_fmadd_ps(x0, y, a03);
		a13 = _mm256_fmadd_ps(x1, y, a13);
	}
	d[0][0] = hsum256(a00); d[0][1] = hsum256(a01);
	d[0][2] = hsum256(a02); d[0][3] = hsum256(a03);
	d[1][0] = hsum256(a10); d[1][1] = hsum256(a11);
	d[1][2] = hsum256(a12); d[1][3] = hsum256(a13);
	for (; i < dim; i++)
		for (size_t j = 0; j < TILE_Q; j++) {
			d[0][j] += r0[i] * q[j][i];
			d[1][j] += r1[i] * q[j][i];
		}
}

/* The rows stay in the first-level cache across the four queries. */
static void tile_portable(const float *const q[TILE_Q], const float *r0, const float *r1,
                          size_t dim, float d[2][TILE_Q])
{
	for (size_t j = 0; j < TILE_Q; j++) {
		d[0][j] = dot_portable(r0, q[j], dim);
		d[1][j] = dot_portable(r1, q[j], dim);
	}
}

/* ---- dispatch ---------------------------------------------------------------- */

typedef float (*vec_kernel_fn)(const float *, const float *, size_t);

typedef void (*vec_tile_fn)(const float *const q[TILE_Q], const float *r0,
                            const float *r1, size_t dim, float d[2][TILE_Q]);

struct kernel_set { vec_kernel_fn dot, l2sq, l1, max; vec_tile_fn tile; };

static const struct kernel_set portable_set = {
	dot_portable, l2sq_portable, l1_portable, max_portable, tile_portable,
};
static const struct kernel_set avx2_set = {
	dot_avx2, l2sq_avx2, l1_avx2, max_avx2, tile_avx2,
};

bool vec_have_avx2(void)
{
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

/* The CPU check once per process: a question scores dozens of vectors. */
static const struct kernel_set *kernels(enum vec_kernel kern)
{
	static const struct kernel_set *_Atomic best;
	const struct kernel_set *ks;

	if (kern == VEC_KERNEL_PORTABLE)
		return &portable_set;
	if ((ks = atomic_load_explicit(&best, memory_order_relaxed)) == NULL) {
		ks = vec_have_avx2() ? &avx2_set : &portable_set;
		atomic_store_explicit(&best, ks, memory_order_relaxed);
	}
	return ks;
}

static float score_with(const struct kernel_set *ks, enum vec_metric m,
                        const float *a, float norm_a, const float *b,
                        float norm_b, size_t dim)
{
	switch (m) {
	case VEC_L2:
		return sqrtf(ks->l2sq(a, b, dim));
	case VEC_L1:
		return ks->l1(a, b, dim);
	case VEC_MAX:
		return ks->max(a, b, dim);
	case VEC_COS:
		if (norm_a == 0.0f || norm_b == 0.0f)      /* no direction */
			return 0.0f;
		return ks->dot(a, b, dim) / (norm_a * norm_b);
	case VEC_DOT:
		return ks->dot(a, b, dim);
	}
	return NAN;
}

float vec_norm(const float *a, size_t dim)
{
	return sqrtf(kernels(VEC_KERNEL_AUTO)->dot(a, a, dim));
}

float vec_score(enum vec_metric m, const float *a, float norm_a,
                const float *b, float norm_b, size_t dim)
{
	return score_with(kernels(VEC_KERNEL_AUTO), m, a, norm_a, b, norm_b, dim);
}

/* ---- ordering and the bounded heap -------------------------------------------- */

/* a ranks strictly before b: better score, or equal score and lower row. */
static bool hit_before(bool larger, const struct vec_hit *a, const struct vec_hit *b)
{
	if (a->score != b->score)
		return larger ? a->score > b->score : a->score < b->score;
	return a->row < b->row;
}

static int cmp_larger(const void *pa, const void *pb)
{
	const struct vec_hit *a = pa, *b = pb;
	return hit_before(true, a, b) ? -1 : hit_before(true, b, a) ? 1 : 0;
}

static int cmp_smaller(const void *pa, const void *pb)
{
	const struct vec_hit *a = pa, *b = pb;
	return hit_before(false, a, b) ? -1 : hit_before(false, b, a) ? 1 : 0;
}

void vec_hits_sort(enum vec_metric m, struct vec_hit *h, size_t n)
{
	if (n > 1)
		qsort(h, n, sizeof *h, vec_larger_is_better(m) ? cmp_larger : cmp_smaller);
}

/* Max-heap on "ranks later": h[0] is the worst kept hit. */
struct heap { struct vec_hit *h; size_t n, k; bool larger; };

static void heap_sift_down(struct heap *hp, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, w = i;
		if (l < hp->n && hit_before(hp->larger, &hp->h[w], &hp->h[l]))
			w = l;
		if (r < hp->n && hit_before(hp->larger, &hp->h[w], &hp->h[r]))
			w = r;
		if (w == i)
			return;
		struct vec_hit t = hp->h[i];
		hp->h[i] = hp->h[w];
		hp->h[w] = t;
		i = w;
	}
}

static void heap_offer(struct heap *hp, uint32_t row, float score)
{
	struct vec_hit x = { row, score };

	if (hp->n < hp->k) {
		size_t i = hp->n++;
		while (i > 0) {
			size_t p = (i - 1) / 2;
			if (!hit_before(hp->larger, &hp->h[p], &x))
				break;
			hp->h[i] = hp->h[p];
			i = p;
		}
		hp->h[i] = x;
		return;
	}
	if (!hit_before(hp->larger, &x, &hp->h[0]))
		return;
	hp->h[0] = x;
	heap_sift_down(hp, 0);
}

size_t vec_hits_best(enum vec_metric m, struct vec_hit *h, size_t n, size_t k)
{
	struct heap hp = { h, 0, k, vec_larger_is_better(m) };

	/* The heap grows in h's own prefix: h[i] is read before h[n] changes. */
	for (size_t i = 0; i < n; i++)
		heap_offer(&hp, h[i].row, h[i].score);
	vec_hits_sort(m, h, hp.n);
	return hp.n;
}

size_t vec_topk_with(enum vec_kernel kern, enum vec_metric m, const float *q,
                     float qnorm, const float *base, const float *norms,
                     size_t n, size_t dim, const uint8_t *keep, size_t k,
                     struct vec_hit *out)
{
	const struct kernel_set *ks = kernels(kern);
	struct heap hp = { out, 0, k, vec_larger_is_better(m) };

	if (k == 0 || dim == 0 || (unsigned)m >= VEC_METRIC_COUNT)
		return 0;
	if (n > UINT32_MAX)
		n = UINT32_MAX;                   /* rows are uint32_t */
	for (size_t i = 0; i < n; i++) {
		if (keep != NULL && !keep[i])
			continue;
		float s = score_with(ks, m, q, qnorm, base + i * dim,
		                     norms != NULL ? norms[i] : 0.0f, dim);
		if (isnan(s))
			continue;
		heap_offer(&hp, (uint32_t)i, s);
	}
	vec_hits_sort(m, out, hp.n);
	return hp.n;
}

size_t vec_topk(enum vec_metric m, const float *q, float qnorm,
                const float *base, const float *norms, size_t n, size_t dim,
                const uint8_t *keep, size_t k, struct vec_hit *out)
{
	return vec_topk_with(VEC_KERNEL_AUTO, m, q, qnorm, base, norms, n, dim,
	                     keep, k, out);
}

/* ---- many queries in one pass ------------------------------------------------------- */

/* Scored through a dot product: the metrics a tile serves. */
static bool via_dot(enum vec_metric m)
{
	return m == VEC_L2 || m == VEC_COS || m == VEC_DOT;
}

/* What a dot query ranks rows by until its heap of 2k is full, then the
 * score a row must beat to enter it (inline: most rows fail this one
 * comparison).  L2 ranks by its square expanded, |q|^2 + |r|^2 - 2 q.r,
 * and cos by q.r / |q| / |r|, both exact up to rounding; the kept rows are
 * scored again with the metric's own kernel. */
struct dot_query {
	struct heap hp;
	enum vec_metric m;
	float inv_qn, qn2, lim;
	const uint8_t *keep;
};

/* Row row's dot product with x's query is d: into x's metric, then into
 * its heap when it beats the heap's worst (most rows fail that one
 * comparison). */
static void dot_offer(struct dot_query *x, uint32_t row, float d, float rn, float inv_rn)
{
	float sc;

	if (x->m == VEC_DOT)
		sc = d;
	else if (x->m == VEC_COS)
		sc = d * x->inv_qn * inv_rn;       /* 0 when either norm is 0 */
	else
		sc = x->qn2 + rn * rn - 2.0f * d;
	/* Equal is not better: rows come in order, the kept one is lower. */
	if (!(x->hp.larger ? sc > x->lim : sc < x->lim))
		return;                          /* NaN too */
	if (x->keep != NULL && !x->keep[row])
		return;
	heap_offer(&x->hp, row, sc);
	if (x->hp.n == x->hp.k)
		x->lim = x->hp.h[0].score;
}

/* Every dot query against every row, two rows and four queries at a time:
 * two rows stay in the first-level cache while all the queries pass. */
static void scan_tiles(const struct kernel_set *ks, struct dot_query *dq, size_t ndot,
                       const struct vec_query *qs, const size_t *idx, const float *base,
                       const float *norms, size_t n, size_t dim)
{
	for (size_t i = 0; i < n; i += 2) {
		const float *r0 = base + i * dim, *r1 = i + 1 < n ? r0 + dim : r0;
		size_t rows = i + 1 < n ? 2 : 1;
		float rn[2] = { norms[i], norms[i + rows - 1] }, inv_rn[2];

		for (size_t r = 0; r < 2; r++)
			inv_rn[r] = rn[r] != 0.0f ? 1.0f / rn[r] : 0.0f;
		for (size_t g = 0; g < ndot; g += TILE_Q) {
			const float *q[TILE_Q];
			float d[2][TILE_Q];
			size_t nt = ndot - g < TILE_Q ? ndot - g : TILE_Q;

			for (size_t t = 0; t < TILE_Q; t++)    /* a short tile repeats its first */
				q[t] = qs[idx[g + (t < nt ? t : 0)]].q;
			ks->tile(q, r0, r1, dim, d);
			for (size_t t = 0; t < nt; t++)
				for (size_t r = 0; r < rows; r++)
					dot_offer(&dq[g + t], (uint32_t)(i + r), d[r][t], rn[r],
					          inv_rn[r]);
		}
	}
}

int vec_topk_many_with(enum vec_kernel kern, struct vec_query *qs, size_t nq,
                       const float *base, const float *norms, size_t n, size_t dim)
{
	const struct kernel_set *ks = kernels(kern);
	struct dot_query *dq = NULL;
	struct vec_hit *pool = NULL;
	size_t *idx = NULL, ndot = 0, cap = 0;

	if (n > UINT32_MAX)
		n = UINT32_MAX;                   /* rows are uint32_t */
	for (size_t j = 0; j < nq; j++) {
		qs[j].nout = 0;
		if (qs[j].k > 0 && dim > 0 && (unsigned)qs[j].metric < VEC_METRIC_COUNT &&
		    via_dot(qs[j].metric) && norms != NULL)
			cap += 2 * qs[j].k, ndot++;
	}
	if (ndot > 0 && ((dq = calloc(ndot, sizeof *dq)) == NULL ||
	    (idx = calloc(ndot, sizeof *idx)) == NULL ||
	    (pool = calloc(cap, sizeof *pool)) == NULL)) {
		free(dq);
		free(idx);
		return -1;
	}
	/* The others one by one; each dot query a heap of 2k. */
	cap = 0;
	ndot = 0;
	for (size_t j = 0; j < nq; j++) {
		struct vec_query *x = &qs[j];
		bool larger = vec_larger_is_better(x->metric);

		if (x->k == 0 || dim == 0 || (unsigned)x->metric >= VEC_METRIC_COUNT)
			continue;
		if (!via_dot(x->metric) || norms == NULL) {
			x->nout = vec_topk_with(kern, x->metric, x->q, x->qnorm, base, norms, n,
			                        dim, x->keep, x->k, x->out);
			continue;
		}
		dq[ndot] = (struct dot_query){ { pool + cap, 0, 2 * x->k, larger }, x->metric,
		        x->qnorm != 0.0f ? 1.0f / x->qnorm : 0.0f, x->qnorm * x->qnorm,
		        larger ? -INFINITY : INFINITY, x->keep };
		idx[ndot++] = j;
		cap += 2 * x->k;
	}
	if (ndot > 0)
		scan_tiles(ks, dq, ndot, qs, idx, base, norms, n, dim);
	/* The kept rows scored exactly, the best k of them out. */
	for (size_t h = 0; h < ndot; h++) {
		struct vec_query *x = &qs[idx[h]];
		struct heap *hp = &dq[h].hp;
		size_t m = 0;

		for (size_t e = 0; e < hp->n; e++) {
			uint32_t row = hp->h[e].row;
			float sc = score_with(ks, x->metric, x->q, x->qnorm,
			                      base + (size_t)row * dim, norms[row], dim);
			if (!isnan(sc))
				hp->h[m++] = (struct vec_hit){ row, sc };
		}
		m = vec_hits_best(x->metric, hp->h, m, x->k);
		memcpy(x->out, hp->h, m * sizeof *x->out);
		x->nout = m;
	}
	free(dq);
	free(idx);
	free(pool);
	return 0;
}

int vec_topk_many(struct vec_query *qs, size_t nq, const float *base,
                  const float *norms, size_t n, size_t dim)
{
	return vec_topk_many_with(VEC_KERNEL_AUTO, qs, nq, base, norms, n, dim);
}
