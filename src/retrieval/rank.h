/* rank.h - the whole ranking of one question over an open index.
 *
 * filter mask -> exact vector top-k (the pool of k) -> when hybrid, fused
 * with BM25's top-k over the same mask by reciprocal rank fusion
 * (1/(60 + rank), summed) -> when mmr, MMR over the best fetch_k of the pool
 * -> top_n, listed best first by the metric's own value -> score_threshold
 * in the metric's own direction.  Hybrid and MMR choose which snippets are
 * returned; the metric orders them, so order and scores always agree. */
#ifndef SLUICE_RANK_H
#define SLUICE_RANK_H

#include <stdbool.h>
#include <stddef.h>

#include "retrieval/filter.h"
#include "retrieval/index.h"
#include "retrieval/vec.h"

#define RANK_RRF_K 60
/* The vector ranking's weight in the fusion (BM25's is 1): a learned
 * embedder's ranking counts as much as BM25's; the built-in one's only
 * orders what BM25 did not find (see rank.c for the measurements). */
#define RANK_VEC_WEIGHT_LEARNED 1.0
#define RANK_VEC_WEIGHT_BUILTIN 0.0

struct rank_params {
	enum vec_metric metric;   /* default VEC_COS */
	size_t k;                 /* nearest-neighbour pool, default 20, 1..1000 */
	bool mmr;                 /* maximal_marginal_relevance, default true */
	size_t fetch_k;           /* MMR candidates, default 10, 1..1000 */
	size_t top_n;             /* returned, default 3, 1..100 */
	bool hybrid;              /* fuse with BM25 by reciprocal rank fusion, default true */
	double vec_weight;        /* the vector ranking's fusion weight, default
	                           * RANK_VEC_WEIGHT_LEARNED */
	double lambda_mult;       /* default 0.5, 0..1 */
	bool has_threshold; double score_threshold;
	const struct meta_filter *filter;   /* NULL = none */
};

/* The documented defaults. */
void rank_params_default(struct rank_params *p);

/* hits best first; each hit's score is the metric's own value for that
 * snippet.  qvec has rindex_dim(ix) floats.  Returns the number written
 * (<= min(top_n, max)); 0 also when the filter excludes everything. */
size_t rank_question(const struct rindex *ix, const float *qvec, const char *question,
                     size_t qlen, const struct rank_params *p, struct vec_hit *out, size_t max);

#endif
