/* bm25.h - lexical ranking over the same snippets (Okapi BM25, k1 = 1.2,
 * b = 0.75), on the tokens of tokenize.h. */
#ifndef SLUICE_BM25_H
#define SLUICE_BM25_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "retrieval/vec.h"

#define BM25_K1 1.2
#define BM25_B 0.75

struct bm25;
/* keep_words: also keep each document's terms in text order (bm25_words).
 * NULL on allocation failure or more than UINT32_MAX documents. */
struct bm25 *bm25_build(const char *const *texts, const size_t *lens, size_t n,
                        bool keep_words);
/* The index bm25_build (keep_words false) makes of groups of consecutive
 * rows, each group's texts joined by '\n', from the rows' words (rows was
 * built with them) instead of tokenising again: a word never spans two
 * rows, so the groups have the rows' terms in the same order.  Group g is
 * rows first[g] .. first[g + 1] - 1; first[ngroups] is the rows' count.
 * When every group is one row, the result reads the rows' memory: free it
 * first, or with rows.  NULL on allocation failure or inconsistent groups. */
struct bm25 *bm25_build_groups(const struct bm25 *rows, const uint32_t *first,
                               size_t ngroups);
void bm25_free(struct bm25 *b);
size_t bm25_count(const struct bm25 *b);            /* documents */
/* The id of a (stemmed) term, or -1 when no document has it. */
long bm25_term_id(const struct bm25 *b, const char *stem, size_t n);
/* A posting: a document holding the term, and the term's BM25 in it
 * before idf, tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)). */
struct bm25_post { uint32_t doc; float impact; };
/* For a term id (from bm25_term_id): its idf, its postings (*n of them,
 * by document), and its impact in one document (0 when absent; a binary
 * search). */
float bm25_idf(const struct bm25 *b, uint32_t term);
const struct bm25_post *bm25_postings(const struct bm25 *b, uint32_t term, size_t *n);
float bm25_impact(const struct bm25 *b, uint32_t term, uint32_t doc);
/* Document doc's term ids in text order, *n of them; NULL (and *n = 0)
 * when the index was built without words. */
const uint32_t *bm25_words(const struct bm25 *b, size_t doc, size_t *n);
/* Top-k documents for the query, skipping row i when keep && !keep[i];
 * only documents sharing a term with the query are returned.
 * score = BM25, larger better; ties by row. */
size_t bm25_topk(const struct bm25 *b, const char *query, size_t qlen,
                 const uint8_t *keep, size_t k, struct vec_hit *out);

/* Every document's score for one query (bm25_score): score[d] for all d
 * (0 where no query term occurs), touched[0..ntouched) the documents with a
 * term in common, in no particular order, and perfect = the sum over the
 * query's distinct terms known to the index of idf * (k1 + 1), the most a
 * document can score, so score / perfect is in [0, 1) on every index.
 * The caller frees with bm25_scores_free. */
struct bm25_scores {
	float *score;
	uint32_t *touched;
	size_t ntouched;
	double perfect;
};
/* 0, or -1 when out of memory (*out is then empty). */
int bm25_score(const struct bm25 *b, const char *query, size_t qlen,
               const uint8_t *keep, struct bm25_scores *out);
void bm25_scores_free(struct bm25_scores *s);

/* Serialised form, stored in the index file (little-endian, self-checking
 * on load).  bm25_serialized_size tells how many bytes bm25_serialize
 * writes.  bm25_load reads len bytes at p without copying the postings
 * (p must outlive the result) and refuses anything inconsistent: NULL. */
size_t bm25_serialized_size(const struct bm25 *b);
void bm25_serialize(const struct bm25 *b, void *dst);
/* The same bytes as two pieces of the index's own memory, to be written
 * one after the other without a copy (an index file's writer). */
struct bm25_part { const void *p; size_t len; };
void bm25_serialized_parts(const struct bm25 *b, struct bm25_part part[2]);
struct bm25 *bm25_load(const void *p, size_t len);

#endif
