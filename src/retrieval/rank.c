/* rank.c - one question's ranking over an open index (see rank.h).
 *
 * Steps, each over the rows the filter keeps:
 *
 * 1. the exact vector top-k under the metric: the pool;
 * 2. hybrid: BM25's top-k of the question's (stemmed) words, fused with the
 *    pool by weighted reciprocal rank fusion, score(d) = 1 / (RANK_RRF_K +
 *    lexical rank) + vec_weight / (RANK_RRF_K + vector rank), rank from 1,
 *    RANK_RRF_K = 60 (Cormack, Clarke and Buettcher, 2009): ranks only, so a
 *    BM25 score and a distance never need a common scale; ties go to the
 *    vector ranking.  The fused list is cut back to k; a document found only
 *    by BM25 gets its metric value computed.  vec_weight is 1 for a learned
 *    embedder and 0 for the built-in one: on bench/retrieval_quality.sh
 *    (300 man pages, known item, MMR off) the built-in embedder fused with
 *    weight 1, 0.5 or 0.25 ranked below BM25 alone (MRR@10 0.714, 0.722,
 *    0.730 against 0.760, unstemmed), and with stemmed BM25 weight 0.2 gave
 *    0.760 against 0.785: hashed word features carry little that BM25 does
 *    not.  At 0, BM25 orders what it finds and the vector ranking orders the
 *    rest of the pool after it;
 * 3. mmr: MMR (mmr.c) picks top_n of the first fetch_k of that list, in
 *    pick order; its relevance is the fused score (scaled so the best is 1)
 *    when hybrid, else cos(q, d); else the first top_n are taken;
 * 4. score_threshold drops those on the wrong side of it (a distance above
 *    it, a similarity below it).
 *
 * The answer keeps the ranking's order: best first is the metric's order
 * when hybrid and mmr are off, the fused order with hybrid, the pick order
 * with mmr.  Re-sorting the picks by the metric would throw the lexical
 * evidence away again (measured: bench/retrieval_quality.sh).  Each hit's
 * score is still the metric's own value for that snippet. */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "retrieval/bm25.h"
#include "retrieval/mmr.h"
#include "retrieval/rank.h"

void rank_params_default(struct rank_params *p)
{
	memset(p, 0, sizeof *p);
	p->metric = VEC_COS;
	p->k = 20;
	p->mmr = true;
	p->fetch_k = 10;
	p->top_n = 3;
	p->hybrid = true;
	p->lambda_mult = 0.5;
	p->vec_weight = RANK_VEC_WEIGHT_LEARNED;
}

/* keep[i] = the filter matches row i's metadata; the number kept, or -1. */
static long filter_mask(const struct rindex *ix, const struct meta_filter *f, uint8_t *keep)
{
	long kept = 0;

	for (size_t i = 0; i < rindex_count(ix); i++) {
		struct json_object *m = json_tokener_parse(rindex_metadata(ix, i));
		keep[i] = meta_filter_match(f, m);
		kept += keep[i];
		json_object_put(m);
	}
	return kept;
}

struct fused { uint32_t row; double rrf; size_t vrank; };

static int cmp_fused(const void *pa, const void *pb)
{
	const struct fused *a = pa, *b = pb;
	if (a->rrf != b->rrf)
		return a->rrf > b->rrf ? -1 : 1;
	if (a->vrank != b->vrank)                /* then the vector ranking */
		return a->vrank < b->vrank ? -1 : 1;
	return a->row < b->row ? -1 : a->row > b->row;
}

/* Fuse pool[0..np) and lex[0..nl) into pool (capacity cap); returns the
 * fused length, at most cap, or -1. */
static long fuse(const struct rindex *ix, enum vec_metric m, const float *q, float qnorm,
                 struct vec_hit *pool, size_t np, const struct vec_hit *lex, size_t nl,
                 size_t cap, double vec_weight, double *rel)
{
	struct fused *f = malloc((np + nl) * sizeof *f);
	size_t nf = 0, dim = rindex_dim(ix);

	if (f == NULL)
		return -1;
	for (size_t i = 0; i < np; i++)
		f[nf++] = (struct fused){ pool[i].row,
		                          vec_weight / (RANK_RRF_K + (double)(i + 1)), i };
	for (size_t i = 0; i < nl; i++) {
		double r = 1.0 / (RANK_RRF_K + (double)(i + 1));
		size_t j = 0;
		while (j < np && f[j].row != lex[i].row)
			j++;
		if (j < np)
			f[j].rrf += r;
		else
			f[nf++] = (struct fused){ lex[i].row, r, SIZE_MAX };
	}
	qsort(f, nf, sizeof *f, cmp_fused);
	if (nf > cap)
		nf = cap;
	/* Scores: from the pool when the row was there, else computed. */
	struct vec_hit *out = malloc((nf ? nf : 1) * sizeof *out);
	if (out == NULL) {
		free(f);
		return -1;
	}
	for (size_t i = 0; i < nf; i++) {
		/* Min-max over the list: 1 for the best, 0 for the last, so MMR's
		 * relevance spans what its cosine redundancy term does. */
		double lo = f[nf - 1].rrf, hi = f[0].rrf;
		rel[i] = hi > lo ? (f[i].rrf - lo) / (hi - lo) : 1.0;
		out[i].row = f[i].row;
		if (f[i].vrank != SIZE_MAX)
			out[i].score = pool[f[i].vrank].score;
		else
			out[i].score = vec_score(m, q, qnorm, rindex_vectors(ix) + (size_t)f[i].row * dim,
			                         rindex_norms(ix)[f[i].row], dim);
	}
	memcpy(pool, out, nf * sizeof *out);
	free(out);
	free(f);
	return (long)nf;
}

size_t rank_question(const struct rindex *ix, const float *qvec, const char *question,
                     size_t qlen, const struct rank_params *p, struct vec_hit *out, size_t max)
{
	size_t n = rindex_count(ix), dim = rindex_dim(ix), k, top_n, np, nl, nsel = 0, nout = 0;
	uint8_t *keep = NULL;
	struct vec_hit *pool = NULL, *lex = NULL, *sel = NULL;
	double *rel = NULL;                      /* fused relevance, hybrid only */
	float qnorm = vec_norm(qvec, dim);

	if (n == 0 || p->k == 0 || p->top_n == 0 || max == 0)
		return 0;
	if (p->filter != NULL) {
		if ((keep = malloc(n)) == NULL)
			goto out;
		if (filter_mask(ix, p->filter, keep) <= 0)
			goto out;                /* nothing matches: an empty answer */
	}
	k = p->k < n ? p->k : n;                 /* no pool larger than the rows */
	top_n = p->top_n < k ? p->top_n : k;
	pool = malloc(k * sizeof *pool);
	lex = malloc(k * sizeof *lex);
	sel = malloc(top_n * sizeof *sel);
	rel = malloc(k * sizeof *rel);
	if (pool == NULL || lex == NULL || sel == NULL || rel == NULL)
		goto out;
	bool hybrid = p->hybrid && question != NULL;

	nl = hybrid ? bm25_topk(rindex_bm25(ix), question, qlen, keep, k, lex) : 0;
	/* With vec_weight 0 the vector ranking only orders what comes after
	 * BM25's hits: when those fill the pool, the scan cannot change the
	 * answer and is skipped (fuse computes each hit's metric value). */
	if (hybrid && p->vec_weight == 0.0 && nl >= k)
		np = 0;
	else
		np = vec_topk(p->metric, qvec, qnorm, rindex_vectors(ix), rindex_norms(ix),
		              n, dim, keep, k, pool);
	if (hybrid) {
		long nf = fuse(ix, p->metric, qvec, qnorm, pool, np, lex, nl, k,
		               p->vec_weight, rel);
		if (nf < 0)
			goto out;
		np = (size_t)nf;
	}
	if (p->mmr) {
		size_t nc = p->fetch_k < np ? p->fetch_k : np;
		if (hybrid)
			nsel = mmr_select_rel(rindex_vectors(ix), rindex_norms(ix), dim, pool, rel,
			                      nc, p->lambda_mult, top_n, sel);
		else
			nsel = mmr_select(qvec, qnorm, rindex_vectors(ix), rindex_norms(ix), dim,
			                  pool, nc, p->lambda_mult, top_n, sel);
	} else {
		nsel = top_n < np ? top_n : np;
		memcpy(sel, pool, nsel * sizeof *sel);
	}
	for (size_t i = 0; i < nsel && nout < max; i++) {
		if (p->has_threshold) {
			bool larger = vec_larger_is_better(p->metric);
			if (larger ? sel[i].score < p->score_threshold
			           : sel[i].score > p->score_threshold)
				continue;
		}
		out[nout++] = sel[i];
	}
out:
	free(keep);
	free(pool);
	free(lex);
	free(sel);
	free(rel);
	return nout;
}
