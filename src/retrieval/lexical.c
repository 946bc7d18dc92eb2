/* lexical.c - the hybrid ranking's lexical candidates (see lexical.h).
 *
 * The accumulators (a float per snippet and per document, and the lists
 * of those touched) belong to the thread and are all zero between
 * questions: each question clears only what it touched.  They grow with
 * the largest index ranked, a few bytes per snippet. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/bm25.h"
#include "retrieval/lexical.h"

struct accum {
	float *row, *doc;
	uint32_t *row_touched, *doc_touched;
	size_t row_cap, doc_cap;
};

static _Thread_local struct accum acc;

/* Zeroed arrays of n floats and n touched slots; -1 when out of memory. */
static int grow(float **v, uint32_t **touched, size_t *cap, size_t n)
{
	float *nv;
	uint32_t *nt;

	if (n <= *cap)
		return 0;
	if ((nv = calloc(n, sizeof *nv)) == NULL)
		return -1;
	if ((nt = malloc(n * sizeof *nt)) == NULL) {
		free(nv);
		return -1;
	}
	free(*v);
	free(*touched);
	*v = nv;
	*touched = nt;
	*cap = n;
	return 0;
}

void lex_question_init(struct lex_question *q, const struct rindex *ix,
                       const struct tok_words *w, double w_doc, double w_head)
{
	const struct bm25 *rows = rindex_bm25(ix), *docs = rindex_bm25_docs(ix);

	q->n = 0;                                    /* t[] is filled as far as n */
	q->row_perfect = q->doc_perfect = 0.0;
	q->w_doc = w_doc;
	q->w_head = w_head;
	for (size_t i = 0; i < w->n && q->n < LEX_MAX_TERMS; i++) {
		long row = bm25_term_id(rows, w->w[i], w->len[i]);
		bool seen = false;

		for (size_t j = 0; j < q->n && !seen; j++)
			seen = q->t[j].row == row;
		if (row < 0 || seen)
			continue;                        /* in no snippet, or twice */
		struct lex_term *t = &q->t[q->n++];
		t->row = row;
		t->doc = bm25_term_id(docs, w->w[i], w->len[i]);
		t->row_idf = bm25_idf(rows, (uint32_t)row);
		t->doc_idf = t->doc >= 0 ? bm25_idf(docs, (uint32_t)t->doc) : 0.0f;
		bm25_postings(rows, (uint32_t)row, &t->df);
		q->row_perfect += t->row_idf * (BM25_K1 + 1.0);
		q->doc_perfect += t->doc_idf * (BM25_K1 + 1.0);
	}
}

/* Adds the question's words of one kind (common or not) over one index
 * into v.  touch: an entry they make non-zero is listed in touched
 * (after the nt listed); else they only add to entries already listed.
 * idf and impacts are > 0 (bm25_load checks), so an entry still 0 has not
 * been listed.  The new count listed. */
static size_t pass(const struct bm25 *b, const struct lex_question *q, const bool *common,
                   bool kind, bool touch, bool docs, const uint8_t *keep, float *v,
                   uint32_t *touched, size_t nt)
{
	for (size_t i = 0; i < q->n; i++) {
		const struct lex_term *t = &q->t[i];
		long id = docs ? t->doc : t->row;
		float idf = docs ? t->doc_idf : t->row_idf;
		size_t np;

		if (common[i] != kind || id < 0)
			continue;
		const struct bm25_post *p = bm25_postings(b, (uint32_t)id, &np);
		if (!touch) {
			/* Entries listed already passed keep: the common words'
			 * loop, kept to the few instructions a posting needs. */
			for (size_t j = 0; j < np; j++) {
				float x = v[p[j].doc];
				if (x != 0.0f)
					v[p[j].doc] = x + idf * p[j].impact;
			}
			continue;
		}
		for (size_t j = 0; j < np; j++) {
			uint32_t d = p[j].doc;

			if (keep != NULL && !keep[d])
				continue;
			if (v[d] == 0.0f)
				touched[nt++] = d;
			v[d] += idf * p[j].impact;
		}
	}
	return nt;
}

double lex_row(const struct rindex *ix, const struct lex_question *q, uint32_t row)
{
	const struct bm25 *rows = rindex_bm25(ix), *docs = rindex_bm25_docs(ix);
	uint32_t doc = rindex_row_doc(ix, row), first = (uint32_t)rindex_doc_first_row(ix, doc);
	double r = 0.0, d = 0.0;

	for (size_t i = 0; i < q->n; i++) {
		const struct lex_term *t = &q->t[i];

		float s = bm25_impact(rows, (uint32_t)t->row, row);
		if (q->w_head != 0.0)
			s += (float)q->w_head * (first == row ? s : bm25_impact(rows, (uint32_t)t->row, first));
		r += t->row_idf * s;
		if (q->w_doc != 0.0 && t->doc >= 0)
			d += t->doc_idf * bm25_impact(docs, (uint32_t)t->doc, doc);
	}
	return (q->row_perfect > 0.0 ? r / q->row_perfect : 0.0) +
	       (q->doc_perfect > 0.0 ? q->w_doc * d / q->doc_perfect : 0.0);
}

/* A min-heap of the best hits so far: the worst at h[0]. */
static bool worse(const struct vec_hit *a, const struct vec_hit *b)
{
	return a->score != b->score ? a->score < b->score : a->row > b->row;
}

/* x into h[i]'s place, sifted down the heap h[0..n). */
static void sift_down(struct vec_hit *h, size_t n, size_t i, struct vec_hit x)
{
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && worse(&h[c + 1], &h[c]))
			c++;
		if (!worse(&h[c], &x))
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

static void heap_push(struct vec_hit *h, size_t *n, size_t cap, struct vec_hit x)
{
	size_t i;

	if (*n == cap) {
		if (worse(&h[0], &x))
			sift_down(h, *n, 0, x);      /* x replaces the root */
		return;
	}
	for (i = (*n)++; i > 0 && worse(&x, &h[(i - 1) / 2]); i = (i - 1) / 2)
		h[i] = h[(i - 1) / 2];
	h[i] = x;
}

/* The heap h[0..n) best first: each worst in turn goes to the end. */
static void sort_best_first(struct vec_hit *h, size_t n)
{
	for (size_t end = n; end > 1; end--) {
		struct vec_hit x = h[end - 1];
		h[end - 1] = h[0];
		sift_down(h, end - 1, 0, x);
	}
}

/* The words in more than 1 / LEX_COMMON_SHARE of the snippets (none when
 * every word is); whether there are any. */
static bool mark_common(const struct lex_question *q, size_t nrows, bool *common)
{
	size_t n = 0;

	for (size_t i = 0; i < q->n; i++)
		n += common[i] = q->t[i].df * LEX_COMMON_SHARE > nrows;
	if (n == q->n)
		memset(common, 0, q->n * sizeof *common);
	return n > 0 && n < q->n;
}

long lex_best(const struct rindex *ix, const struct lex_question *q, const uint8_t *keep,
              struct vec_hit *out, size_t max)
{
	size_t nrows = rindex_count(ix), ndocs = rindex_doc_count(ix), nr, nd = 0, n = 0;
	const uint32_t *row_doc = rindex_row_docs(ix), *first = rindex_doc_first_rows(ix);
	bool common[LEX_MAX_TERMS];
	uint8_t *keep_docs = NULL;
	struct vec_hit *h = NULL;
	long rc = -1;

	if (max == 0 || q->n == 0)
		return 0;
	if (grow(&acc.row, &acc.row_touched, &acc.row_cap, nrows) != 0 ||
	    grow(&acc.doc, &acc.doc_touched, &acc.doc_cap, ndocs) != 0 ||
	    (h = malloc(max * sizeof *h)) == NULL)
		goto out;
	if (keep != NULL && q->w_doc != 0.0 && ndocs != nrows) {
		if ((keep_docs = calloc(ndocs, 1)) == NULL)
			goto out;
		for (size_t i = 0; i < nrows; i++)
			keep_docs[row_doc[i]] |= keep[i];
	}
	/* The rarer words list the candidates; the common ones only add to
	 * them, unless fewer than max share a rarer word. */
	bool some = mark_common(q, nrows, common);
	nr = pass(rindex_bm25(ix), q, common, false, true, false, keep, acc.row, acc.row_touched, 0);
	bool touch = nr < max;
	/* A candidate's score reads its document's first snippet's, which the
	 * common words must reach too. */
	for (size_t i = 0, n0 = nr; some && !touch && q->w_head != 0.0 && i < n0; i++) {
		uint32_t f = first[row_doc[acc.row_touched[i]]];
		if (acc.row[f] == 0.0f && (keep == NULL || keep[f])) {
			acc.row[f] = FLT_MIN;
			acc.row_touched[nr++] = f;
		}
	}
	if (some)
		nr = pass(rindex_bm25(ix), q, common, true, touch, false, keep, acc.row,
		          acc.row_touched, nr);
	/* Documents of one snippet each have the snippets' very postings:
	 * their pass would repeat this one. */
	float *doc_acc = ndocs == nrows ? acc.row : acc.doc;
	if (q->w_doc != 0.0 && ndocs != nrows) {
		nd = pass(rindex_bm25_docs(ix), q, common, false, true, true, keep_docs, acc.doc,
		          acc.doc_touched, 0);
		if (some)
			nd = pass(rindex_bm25_docs(ix), q, common, true, touch, true, keep_docs,
			          acc.doc, acc.doc_touched, nd);
	}
	float frp = q->row_perfect > 0.0 ? (float)(1.0 / q->row_perfect) : 0.0f;
	float fdp = q->doc_perfect > 0.0 ? (float)(q->w_doc / q->doc_perfect) : 0.0f;
	float wh = (float)q->w_head;
	for (size_t i = 0; i < nr; i++) {
		uint32_t row = acc.row_touched[i], doc = row_doc[row];
		float s = (acc.row[row] + wh * acc.row[first[doc]]) * frp + doc_acc[doc] * fdp;

		if (n < max || worse(&h[0], &(struct vec_hit){ row, s }))
			heap_push(h, &n, max, (struct vec_hit){ row, s });
	}
	sort_best_first(h, n);
	memcpy(out, h, n * sizeof *out);
	for (size_t i = 0; i < nr; i++)
		acc.row[acc.row_touched[i]] = 0.0f;
	for (size_t i = 0; i < nd; i++)
		acc.doc[acc.doc_touched[i]] = 0.0f;
	rc = (long)n;
out:
	free(keep_docs);
	free(h);
	return rc;
}
