/* rank.c - one question's ranking over an open index (see rank.h).
 *
 * Steps, each over the rows the filter keeps:
 *
 * 1. hybrid: the lexical candidates.  Every snippet sharing a stem with the
 *    question gets
 *
 *      lex = bm25(snippet) + w.doc * bm25(its document)
 *                          + w.head * bm25(its document's first snippet)
 *
 *    each BM25 divided by the most that index could give the question
 *    (bm25.h: `perfect`), so every term is on a 0..1 scale whatever the
 *    question.  That is BM25F in spirit: the document is the field that
 *    sees every word of the text (a question describing a document rarely
 *    finds all its words in one snippet), the first snippet the field where
 *    texts say what they are.  The best RANK_CANDIDATES (at least k) go on;
 *    with vec_search, or when they are fewer than k, the exact vector top-k
 *    joins them (its rows get lex too, often 0).
 * 2. the first k candidates add w.prox * proximity (proximity.c; deeper
 *    ones seldom reach the answer, and it is the costliest term), and each
 *    adds w.vec * its metric value scaled over the candidates to 0 (worst)
 *    .. 1 (best) in the metric's own direction, so the metric a caller
 *    picks decides the vector term.  Sorted by this sum; then each further snippet of a
 *    document already listed has its sum multiplied by w.repeat and the
 *    list is sorted again, so the answer covers documents before it
 *    repeats one (the ones after, with a large enough lead, still come
 *    first).  The list is cut to k.
 * 3. hybrid off: the exact vector top-k under the metric is the list.
 * 4. mmr: MMR (mmr.c) picks top_n of the first fetch_k of the list, in pick
 *    order; its relevance is the fused sum scaled so the best is 1 and the
 *    last 0 when hybrid, else cos(q, d); else the first top_n are taken.
 * 5. score_threshold drops those on the wrong side of it (a distance above
 *    it, a similarity below it).
 *
 * What each term earned (bench/retrieval_ablation.sh, known-item questions
 * on four corpora: manual pages of sections 1 and 3, Perl module
 * documentation, Debian package descriptions; MRR@10 against SQLite FTS5
 * bm25() with the porter tokenizer on the same snippets) is tabled in
 * docs/operations.md; in short the document, first-snippet and repeat
 * terms bring most of it, proximity and the built-in embedder's vector a
 * further point or so each.  With the built-in embedder, the exact vector
 * scan is skipped when the lexical candidates fill the pool: on those
 * corpora the snippets only the vector side found never reached the
 * answer, and the scan is most of a question's cost on a large dataset.
 *
 * Each hit's score is the metric's own value for that snippet; the answer
 * keeps the ranking's order (re-sorting by the metric would throw the
 * lexical evidence away). */
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>

#include "retrieval/bm25.h"
#include "retrieval/lexical.h"
#include "retrieval/mmr.h"
#include "retrieval/proximity.h"
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
	p->lambda_mult = RANK_LAMBDA_MULT;
	p->w = (struct rank_weights){ RANK_WEIGHT_DOC, RANK_WEIGHT_HEAD, RANK_WEIGHT_PROX,
	                              RANK_VEC_WEIGHT_LEARNED, RANK_WEIGHT_REPEAT };
	p->vec_search = true;
}

void rank_params_embedder(struct rank_params *p, bool builtin)
{
	p->w.vec = builtin ? RANK_VEC_WEIGHT_BUILTIN : RANK_VEC_WEIGHT_LEARNED;
	p->vec_search = !builtin;
}

/* The exact vector top-k: a pass over the rows' codes (a quarter of the
 * bytes of the rows), then the few rows that can be in it scored from the
 * floats; or the caller's, taken in a pass shared with other questions. */
static size_t vector_topk(const struct rindex *ix, const struct rank_params *p,
                          const float *q, float qnorm, const uint8_t *keep, size_t k,
                          const struct rank_vector *given, struct vec_hit *out)
{
	if (given != NULL) {
		size_t n = given->n < k ? given->n : k;

		if (n > 0)
			memcpy(out, given->hits, n * sizeof *out);
		return n;
	}
	return vec_topk_coded(p->metric, q, qnorm, rindex_vectors(ix), rindex_norms(ix),
	                      rindex_codes(ix), rindex_count(ix), rindex_dim(ix), keep, k,
	                      out, NULL);
}

bool rank_wants_vector(const struct rank_params *p, size_t rows, bool has_question,
                       size_t *k)
{
	bool hybrid = p->hybrid && has_question;

	if (rows == 0 || p->k == 0 || p->top_n == 0 || p->filter != NULL ||
	    (hybrid && !p->vec_search))
		return false;
	*k = p->k < rows ? p->k : rows;
	return true;
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

/* A candidate: its row, fused score and metric value. */
struct cand { uint32_t row; double fused; float metric; };

static bool cand_before(const struct cand *a, const struct cand *b)
{
	return a->fused != b->fused ? a->fused > b->fused : a->row < b->row;
}

/* Best first.  An insertion sort: the list comes nearly in order (by its
 * lexical part), where it takes about one comparison per candidate. */
static void sort_cands(struct cand *c, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct cand x = c[i];
		size_t j = i;
		for (; j > 0 && cand_before(&x, &c[j - 1]); j--)
			c[j] = c[j - 1];
		c[j] = x;
	}
}

static float metric_of(const struct rindex *ix, enum vec_metric m, const float *q,
                       float qnorm, uint32_t row)
{
	size_t dim = rindex_dim(ix);

	return vec_score(m, q, qnorm, rindex_vectors(ix) + (size_t)row * dim,
	                 rindex_norms(ix)[row], dim);
}

/* The hybrid list into pool (capacity k), best first, with each one's
 * fused score in rel; its length, or -1 when out of memory. */
static long hybrid_rank(const struct rindex *ix, const float *q, float qnorm,
                        const char *question, size_t qlen, const struct rank_params *p,
                        const uint8_t *keep, size_t k, const struct rank_vector *given,
                        struct vec_hit *pool, double *rel)
{
	size_t nc, ncap;
	const struct rank_weights *w = &p->w;
	struct tok_words *tw = NULL;
	struct lex_question lq;
	struct cand *c = NULL;
	struct vec_hit *best = NULL;
	uint8_t *seen = NULL;
	long rc = -1, nl;

	ncap = (k > RANK_CANDIDATES ? k : RANK_CANDIDATES) + k;
	if ((tw = malloc(sizeof *tw)) == NULL)
		goto out;
	tok_words(tw, question, qlen);
	lex_question_init(&lq, ix, tw, w->doc, w->head);
	if ((c = malloc(ncap * sizeof *c)) == NULL ||
	    (best = malloc(ncap * sizeof *best)) == NULL)
		goto out;
	if ((nl = lex_best(ix, &lq, keep, best, ncap - k)) < 0)
		goto out;
	for (nc = 0; nc < (size_t)nl; nc++)
		c[nc] = (struct cand){ best[nc].row, best[nc].score, 0 };
	/* The vector top-k joins when it may matter. */
	if (p->vec_search || nc < k) {
		size_t nv = vector_topk(ix, p, q, qnorm, keep, k, given, best);

		for (size_t i = 0; i < nv; i++) {
			size_t j = 0;
			while (j < (size_t)nl && c[j].row != best[i].row)
				j++;
			if (j == (size_t)nl)
				c[nc++] = (struct cand){ best[i].row, lex_row(ix, &lq, best[i].row), 0 };
		}
	}
	if (nc == 0) {
		rc = 0;
		goto out;
	}
	/* Proximity, and the metric scaled to 0..1 over the candidates. */
	struct prox_query pq;
	bool larger = vec_larger_is_better(p->metric);
	float lo = 0.0f, hi = 0.0f;

	if (w->prox != 0.0)
		prox_query_init(&pq, rindex_bm25(ix), tw);
	for (size_t i = 0; i < nc; i++) {
		uint32_t row = c[i].row;

		if (w->prox != 0.0 && i < RANK_PROX_ROWS) {
			size_t nw;
			const uint32_t *words = bm25_words(rindex_bm25(ix), row, &nw);
			c[i].fused += w->prox * prox_score(&pq, words, nw);
		}
		if (w->vec == 0.0)
			continue;                /* the metric of the k kept, below */
		c[i].metric = metric_of(ix, p->metric, q, qnorm, row);
		if (i == 0 || c[i].metric < lo)
			lo = c[i].metric;
		if (i == 0 || c[i].metric > hi)
			hi = c[i].metric;
	}
	for (size_t i = 0; i < nc && hi > lo; i++)
		c[i].fused += w->vec * (larger ? c[i].metric - lo : hi - c[i].metric) / (hi - lo);
	sort_cands(c, nc);
	/* A document's further snippets count w.repeat times. */
	if (w->repeat != 1.0) {
		if ((seen = calloc(rindex_doc_count(ix) + 1, 1)) == NULL)
			goto out;
		for (size_t i = 0; i < nc; i++) {
			uint32_t doc = rindex_row_doc(ix, c[i].row);
			if (seen[doc])
				c[i].fused *= w->repeat;
			seen[doc] = 1;
		}
		sort_cands(c, nc);
	}
	if (nc > k)
		nc = k;
	for (size_t i = 0; i < nc; i++) {
		rel[i] = c[i].fused;
		pool[i] = (struct vec_hit){ c[i].row, w->vec != 0.0 ? c[i].metric
		                            : metric_of(ix, p->metric, q, qnorm, c[i].row) };
	}
	rc = (long)nc;
out:
	free(tw);
	free(c);
	free(best);
	free(seen);
	return rc;
}

size_t rank_question(const struct rindex *ix, const float *qvec, const char *question,
                     size_t qlen, const struct rank_params *p, struct vec_hit *out, size_t max)
{
	return rank_question_given(ix, qvec, question, qlen, p, NULL, out, max);
}

size_t rank_question_given(const struct rindex *ix, const float *qvec, const char *question,
                           size_t qlen, const struct rank_params *p,
                           const struct rank_vector *given, struct vec_hit *out, size_t max)
{
	size_t n = rindex_count(ix), dim = rindex_dim(ix), k, top_n, np, nsel = 0, nout = 0;
	uint8_t *keep = NULL;
	struct vec_hit *pool = NULL, *sel = NULL;
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
	sel = malloc(top_n * sizeof *sel);
	rel = malloc(k * sizeof *rel);
	if (pool == NULL || sel == NULL || rel == NULL)
		goto out;
	bool hybrid = p->hybrid && question != NULL;

	if (hybrid) {
		long nf = hybrid_rank(ix, qvec, qnorm, question, qlen, p, keep, k, given, pool,
		                      rel);
		if (nf < 0)
			goto out;
		np = (size_t)nf;
	} else {
		np = vector_topk(ix, p, qvec, qnorm, keep, k, given, pool);
	}
	if (p->mmr) {
		size_t nc = p->fetch_k < np ? p->fetch_k : np;
		/* The fused scores scaled over MMR's candidates: 1 for the best,
		 * 0 for the last, so relevance spans what the cosine redundancy
		 * term does. */
		double top = nc > 0 ? rel[0] : 0.0, last = nc > 0 ? rel[nc - 1] : 0.0;
		for (size_t i = 0; hybrid && i < nc; i++)
			rel[i] = top > last ? (rel[i] - last) / (top - last) : 1.0;
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
	free(sel);
	free(rel);
	return nout;
}
