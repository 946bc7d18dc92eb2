/* lexical.h - the lexical side of the hybrid ranking: every snippet that
 * shares a word with the question scores
 *
 *   lex = (bm25(snippet) + w_head * bm25(its document's first snippet)) / row_perfect
 *         + w_doc * bm25(its document) / doc_perfect
 *
 * where each perfect is the most that index could give the question
 * (the sum of its terms' idf * (k1 + 1)), so each part is on a 0..1 scale.
 * One pass over each index's postings of the question's words, into
 * accumulators kept between questions (no per-question allocation beyond
 * a filter's document mask).  A word in more than 1 / LEX_COMMON_SHARE of
 * the snippets ("the", "of") adds to the snippets the rarer words found
 * (and their documents' first snippets) but makes none a candidate of its
 * own: listing and ranking every snippet that says "the" is most of the
 * cost of such a question, and none of them gets far on "the" alone.
 * When fewer than asked share a rarer word, common words list too. */
#ifndef SLUICE_LEXICAL_H
#define SLUICE_LEXICAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "retrieval/index.h"
#include "retrieval/tokenize.h"
#include "retrieval/vec.h"

#define LEX_MAX_TERMS TOK_WORDS_MAX
#define LEX_COMMON_SHARE 8

/* One distinct question word: its term id in the snippets' index and in
 * the documents' (-1: absent), their idf, and how many snippets hold it. */
struct lex_term { long row, doc; float row_idf, doc_idf; size_t df; };

struct lex_question {
	struct lex_term t[LEX_MAX_TERMS];
	size_t n;
	double row_perfect, doc_perfect;
	double w_doc, w_head;
};

/* The question's distinct words (tokenize.h) known to the index. */
void lex_question_init(struct lex_question *q, const struct rindex *ix,
                       const struct tok_words *w, double w_doc, double w_head);

/* The best max snippets by lex among those sharing a word with the
 * question and kept (keep NULL: all), best first (ties by row), each
 * hit's score its lex.  Their number, or -1 when out of memory. */
long lex_best(const struct rindex *ix, const struct lex_question *q, const uint8_t *keep,
              struct vec_hit *out, size_t max);

/* One snippet's lex by binary searches, for a snippet found otherwise. */
double lex_row(const struct rindex *ix, const struct lex_question *q, uint32_t row);

#endif
