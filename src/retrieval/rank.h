/* rank.h - the whole ranking of one question over an open index.
 *
 * filter mask -> hybrid: lexical candidates scored by BM25 over the snippet,
 * its document and its document's first snippet, word proximity, and the
 * vector metric, fused by weights (rank.c); or, hybrid off, the exact
 * vector top-k -> the pool of k -> when mmr, MMR over the best fetch_k of
 * the pool -> top_n, in ranking order -> score_threshold in the metric's
 * own direction.  Each hit's score is the metric's own value. */
#ifndef SLUICE_RANK_H
#define SLUICE_RANK_H

#include <stdbool.h>
#include <stddef.h>

#include "retrieval/filter.h"
#include "retrieval/index.h"
#include "retrieval/vec.h"

/* Lexical candidates the hybrid ranking keeps for the vector term (at
 * least k), and how many of the first of them get the proximity term
 * (40 and 20 scored as 50 and k did, within 0.001 MRR@10, for less). */
#define RANK_CANDIDATES 40
#define RANK_PROX_ROWS 20

/* The hybrid ranking's weights; rank.c says what each earned on the
 * known-item benchmarks.  Each term is on a 0..1 scale before its weight;
 * the snippet's own BM25 has weight 1. */
struct rank_weights {
	double doc;       /* BM25 of the snippet's whole document */
	double head;      /* BM25 of its document's first snippet */
	double prox;      /* question words close together in the snippet */
	double vec;       /* the metric's value, scaled 0..1 over the candidates */
	double repeat;    /* factor on a further snippet of a document ranked higher */
};
#define RANK_WEIGHT_DOC 0.8
#define RANK_WEIGHT_HEAD 0.8
#define RANK_WEIGHT_PROX 0.2
#define RANK_WEIGHT_REPEAT 0.5
/* The vector term's weight: the built-in embedder's (measured), and an
 * external model's, trusted as much as the snippet's BM25 (not measured
 * here: no model is downloaded). */
#define RANK_VEC_WEIGHT_BUILTIN 0.3
#define RANK_VEC_WEIGHT_LEARNED 1.0
/* MMR's default trade-off.  0.5 (LangChain's) gave up MRR@10 and recall@3
 * on every known-item corpus measured: it would pick a clearly less
 * relevant snippet over one merely similar to the first pick (packages and
 * manual pages of one family read alike).  0.7 still prefers another
 * document among near-equals and kept 0.2-0.8 points of MRR@10 and up to 2.4
 * of recall@3 (docs/operations.md). */
#define RANK_LAMBDA_MULT 0.7

struct rank_params {
	enum vec_metric metric;   /* default VEC_COS */
	size_t k;                 /* nearest-neighbour pool, default 20, 1..1000 */
	bool mmr;                 /* maximal_marginal_relevance, default true */
	size_t fetch_k;           /* MMR candidates, default 10, 1..1000 */
	size_t top_n;             /* returned, default 3, 1..100 */
	bool hybrid;              /* the fused lexical and vector ranking, default true */
	struct rank_weights w;    /* hybrid's weights, default the RANK_WEIGHT_* */
	bool vec_search;          /* hybrid: add the exact vector top-k to the candidates
	                           * (a learned embedder; default true); else the vector
	                           * scan runs only when the lexical candidates are
	                           * fewer than k */
	double lambda_mult;       /* default RANK_LAMBDA_MULT, 0..1 */
	bool has_threshold; double score_threshold;
	const struct meta_filter *filter;   /* NULL = none */
};

/* The documented defaults. */
void rank_params_default(struct rank_params *p);
/* The vector term's weight and search for a dataset's embedder: the
 * built-in one only re-scores the lexical candidates. */
void rank_params_embedder(struct rank_params *p, bool builtin);

/* hits best first; each hit's score is the metric's own value for that
 * snippet.  qvec has rindex_dim(ix) floats.  Returns the number written
 * (<= min(top_n, max)); 0 also when the filter excludes everything. */
size_t rank_question(const struct rindex *ix, const float *qvec, const char *question,
                     size_t qlen, const struct rank_params *p, struct vec_hit *out, size_t max);

/* Questions ranked together share one pass over the codes for their
 * exact vector top-k (vec_topk_coded_many).  rank_wants_vector: whether
 * rank_question takes that top-k for p (with no filter, over all rows,
 * and surely: not the built-in embedder's hybrid ranking, which takes it
 * only when the lexical candidates are too few), and its k.
 * rank_question_given: rank_question with that top-k given (its hits,
 * best first), which must be vec_topk_coded's for the question. */
struct rank_vector {
	const struct vec_hit *hits;
	size_t n;
};
bool rank_wants_vector(const struct rank_params *p, size_t rows, bool has_question,
                       size_t *k);
size_t rank_question_given(const struct rindex *ix, const float *qvec, const char *question,
                           size_t qlen, const struct rank_params *p,
                           const struct rank_vector *given, struct vec_hit *out, size_t max);

#endif
