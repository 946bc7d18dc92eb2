/* vec.h - distances and exact top-k over float32 rows.
 *
 * Five metrics.  L2, L1 and max (Chebyshev) are distances: smaller is
 * better.  cos and dot are similarities: larger is better.  Every score this
 * module reports is the metric's own value, never a negated or inverted one. */
#ifndef SLUICE_VEC_H
#define SLUICE_VEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum vec_metric { VEC_L2, VEC_L1, VEC_MAX, VEC_COS, VEC_DOT };
#define VEC_METRIC_COUNT 5

/* Wire names "L2", "L1", "max", "cos", "dot" (exact case).  0, or -1. */
int vec_metric_parse(const char *wire, enum vec_metric *out);
const char *vec_metric_name(enum vec_metric m);
bool vec_larger_is_better(enum vec_metric m);                    /* cos, dot */

float vec_norm(const float *a, size_t dim);

/* The metric's own value: a distance for L2/L1/max, a similarity for cos/dot.
 * norm_a and norm_b are only read for cos (a zero norm gives 0). */
float vec_score(enum vec_metric m, const float *a, float norm_a,
                const float *b, float norm_b, size_t dim);

/* true when score a ranks strictly before score b under metric m. */
bool vec_better(enum vec_metric m, float a, float b);

struct vec_hit { uint32_t row; float score; };

/* Best-first exact top-k over n rows (row i at base + i*dim, norms[i] its L2
 * norm), skipping row i when keep != NULL && !keep[i].  Equal scores are
 * ordered by row, so the result is deterministic.  Returns the number of hits
 * written (<= k).  Uses the AVX2+FMA kernels when the CPU has them. */
size_t vec_topk(enum vec_metric m, const float *q, float qnorm,
                const float *base, const float *norms, size_t n, size_t dim,
                const uint8_t *keep, size_t k, struct vec_hit *out);

/* Kernel choice, for tests and the benchmark: VEC_KERNEL_AUTO picks AVX2
 * when the CPU supports AVX2 and FMA, else the portable code; for the pass
 * over 8-bit codes (vec_codes.h) it picks AVX-512 VNNI first, where the
 * CPU has it (VEC_KERNEL_AVX2 asks for AVX2 there too). */
enum vec_kernel { VEC_KERNEL_AUTO, VEC_KERNEL_PORTABLE, VEC_KERNEL_AVX2 };
bool vec_have_avx2(void);
/* As vec_topk with an explicit kernel; AVX2 falls back to portable when the
 * CPU lacks it. */
size_t vec_topk_with(enum vec_kernel kern, enum vec_metric m, const float *q,
                     float qnorm, const float *base, const float *norms,
                     size_t n, size_t dim, const uint8_t *keep, size_t k,
                     struct vec_hit *out);
/* Sort hits best first (ties by row). */
void vec_hits_sort(enum vec_metric m, struct vec_hit *h, size_t n);
/* Move the best k of h[0..n) to the front, sorted best first; returns
 * min(n, k).  O(n log k). */
size_t vec_hits_best(enum vec_metric m, struct vec_hit *h, size_t n, size_t k);

#endif
