/* proximity.h - how many of a question's neighbouring words stand close
 * together in a text, on the term ids of the snippets' BM25 index. */
#ifndef SLUICE_PROXIMITY_H
#define SLUICE_PROXIMITY_H

#include <stddef.h>
#include <stdint.h>

#include "retrieval/bm25.h"
#include "retrieval/tokenize.h"

#define PROX_MAX_WORDS 64      /* question words looked at */
#define PROX_WINDOW 3          /* "b" counts within this many words after "a" */
#define PROX_SLOTS 256         /* hash slots of the known terms: a power of 2, >> PROX_MAX_WORDS */
#define PROX_EMPTY UINT32_MAX  /* no term id (bm25 ids count from 0) */

struct prox_query {
	long term[PROX_MAX_WORDS];           /* each distinct stem's id, -1 unknown */
	unsigned char word[PROX_MAX_WORDS];  /* and its first word in the question */
	size_t nterms;
	uint32_t slot_id[PROX_SLOTS];        /* the known terms' ids by hash (linear
	                                      * probing), PROX_EMPTY where none */
	unsigned char slot_term[PROX_SLOTS]; /* and which term each is */
	struct { unsigned char a, b; } pair[PROX_MAX_WORDS];
	uint64_t ends[PROX_MAX_WORDS];       /* bit p: pair p's second word is this term */
	size_t npairs;                       /* neighbouring words of two stems, < 64 */
};

/* The question's first PROX_MAX_WORDS words, as terms of b. */
void prox_query_init(struct prox_query *q, const struct bm25 *b, const struct tok_words *w);

/* The share (0..1) of the question's neighbouring word pairs "a b" for
 * which the text (its term ids in order: bm25_words) has b within
 * PROX_WINDOW words after a; 0 when the question has no such pair. */
double prox_score(const struct prox_query *q, const uint32_t *words, size_t n);

#endif
