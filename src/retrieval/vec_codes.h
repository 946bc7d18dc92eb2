/* vec_codes.h - int8 codes of float32 rows, for an exact top-k that reads a
 * quarter of the bytes.
 *
 * A row v is coded as scale * c, c in [-127, 127]^dim, and its error
 * err >= |v - scale * c| (L2) is kept beside it.  With the question q coded
 * the same way (8 bits), q.v lies within a bound of the coded product
 * that needs only |q|, |v| and the two errors (Cauchy-Schwarz), so a pass
 * over the codes gives every row an interval that holds its exact score.
 * Rows whose best case cannot reach the k-th best worst case are out; the
 * rest are scored exactly from the float rows.  The result is vec_topk's,
 * hit for hit: the intervals carry a margin for float rounding. */
#ifndef SLUICE_VEC_CODES_H
#define SLUICE_VEC_CODES_H

#include <stddef.h>
#include <stdint.h>

#include "retrieval/vec.h"

/* The CPU has AVX-512 F, BW, DQ and VNNI: the kernel VEC_KERNEL_AUTO
 * picks for the pass over the codes. */
bool vec_have_vnni(void);

/* A coded row's length in bytes: dim rounded up to 32, zero padded. */
size_t vec_code_stride(size_t dim);

/* Code one finite row: stride bytes into code, its scale and its error. */
void vec_encode(const float *v, size_t dim, int8_t *code, float *scale, float *err);

/* Rows' codes are kept in runs of VEC_RUN rows turned on their side, as
 * the pass reads them: run R's word k (codes 4k .. 4k+3) of its rows 0..15
 * are the 64 bytes at R * VEC_RUN * stride + 64 k.  One load gives a word
 * of 16 rows, and a question's word multiplies all of them at once. */
#define VEC_RUN 16
/* The bytes of n rows' codes: n rounded up to a whole run (the last
 * run's missing rows are zero codes, never read as rows), times stride. */
size_t vec_codes_size(size_t n, size_t dim);
/* vec_encode into row's place among codes (vec_codes_size bytes, zeroed
 * beforehand); -1 (nothing written) for dim above VEC_CODES_MAX_DIM.  And
 * back: row's stride codes in order. */
#define VEC_CODES_MAX_DIM 4096
int vec_encode_row(const float *v, size_t dim, int8_t *codes, size_t row, float *scale,
                   float *err);
void vec_code_row(const int8_t *codes, size_t stride, size_t row, int8_t *code);

/* Rows' codes: row i's in runs from code (vec_encode_row), with scale[i]
 * and err[i]; code + first * stride is the codes of the rows from first,
 * when first is a multiple of VEC_RUN. */
struct vec_codes {
	const int8_t *code;
	size_t stride;
	const float *scale, *err;
};

/* vec_topk's contract and result, through the codes for L2, cos and dot
 * (L1 and max, and a question that is not finite or is zero, take
 * vec_topk's scan).  cand, when not NULL, is set to the number of rows
 * scored exactly. */
size_t vec_topk_coded(enum vec_metric m, const float *q, float qnorm,
                      const float *base, const float *norms, const struct vec_codes *vc,
                      size_t n, size_t dim, const uint8_t *keep, size_t k,
                      struct vec_hit *out, size_t *cand);
/* The same with an explicit kernel for the pass over the codes (tests,
 * the benchmark). */
size_t vec_topk_coded_with(enum vec_kernel kern, enum vec_metric m, const float *q,
                           float qnorm, const float *base, const float *norms,
                           const struct vec_codes *vc, size_t n, size_t dim,
                           const uint8_t *keep, size_t k, struct vec_hit *out,
                           size_t *cand);

/* Several questions' top k over the same rows in one pass over the codes:
 * each question's result is vec_topk_coded's for it, hit for hit, but
 * the codes are read from memory once for all of them (the pass of a
 * question alone is bound by reading them).  In: m, q, qnorm, keep, k and
 * out (k hits of room); out: got (hits written) and cand (rows scored
 * exactly, n for the float scan). */
struct vec_question {
	enum vec_metric m;
	const float *q;
	float qnorm;
	const uint8_t *keep;
	size_t k;
	struct vec_hit *out;
	size_t got, cand;
};
void vec_topk_coded_many(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                         const float *base, const float *norms, const struct vec_codes *vc,
                         size_t n, size_t dim);

/* The same pass split among threads, the caller's among them (parts in
 * all): the pass is bound by reading the codes, and a batch's questions
 * wait for it together.  Each thread reads its own part of the rows, in
 * blocks of VEC_PART_BLOCK, then takes the blocks the others have not
 * reached yet, so a thread that starts late or loses its CPU for a while
 * does less and the threads end together.  The result is
 * vec_topk_coded_many's, hit for hit.  Fewer than VEC_PART_MIN_ROWS rows
 * a thread, or a single part, take one pass on the caller's thread. */
#define VEC_PARTS_MAX 8
#define VEC_PART_MIN_ROWS 16384
#define VEC_PART_BLOCK (64 * VEC_RUN)   /* 1,024 rows: 384 KB of codes at 384 */
void vec_topk_coded_parts(enum vec_kernel kern, struct vec_question *qs, size_t nq,
                          const float *base, const float *norms, const struct vec_codes *vc,
                          size_t n, size_t dim, size_t parts);

#endif
