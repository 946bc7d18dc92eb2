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

/* ---- dispatch ---------------------------------------------------------------- */

typedef float (*vec_kernel_fn)(const float *, const float *, size_t);

struct kernel_set { vec_kernel_fn dot, l2sq, l1, max; };

static const struct kernel_set portable_set = {
	dot_portable, l2sq_portable, l1_portable, max_portable,
};
static const struct kernel_set avx2_set = {
	dot_avx2, l2sq_avx2, l1_avx2, max_avx2,
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
