/* test_proximity.c - neighbouring question words close together, on the
 * term ids of a BM25 index. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "retrieval/bm25.h"
#include "retrieval/proximity.h"

static const char *const texts[] = {
	"It converts the strings to an integer.",                          /* 0 */
	"convert a string to an integer",                                  /* 1 */
	"integer one two three four an five six seven to eight string",    /* 2 */
	"apple red",                                                       /* 3 */
	"red one two apple",                                               /* 4 */
	"red one two three apple",                                         /* 5 */
	"CRÈME BRÛLÉE",                                                    /* 6 */
};
#define NT (sizeof texts / sizeof texts[0])

static struct bm25 *b;

static void query(struct prox_query *pq, const char *q)
{
	static struct tok_words tw;

	tok_words(&tw, q, strlen(q));
	prox_query_init(pq, b, &tw);
}

static double prox(const char *q, size_t doc)
{
	struct prox_query pq;
	const uint32_t *w;
	size_t n;

	query(&pq, q);
	w = bm25_words(b, doc, &n);
	return prox_score(&pq, w, n);
}

static void test_pairs(void)
{
	struct prox_query pq;
	size_t lens[NT], n;

	for (size_t i = 0; i < NT; i++)
		lens[i] = strlen(texts[i]);
	b = bm25_build(texts, lens, NT, true);
	CU_ASSERT_FATAL(b != NULL);
	/* The words in text order, as stems: "it convert the string ..." */
	const uint32_t *w = bm25_words(b, 0, &n);
	CU_ASSERT_EQUAL_FATAL(n, 7);
	CU_ASSERT_EQUAL(w[1], bm25_term_id(b, "convert", 7));
	CU_ASSERT_EQUAL(w[3], bm25_term_id(b, "string", 6));
	CU_ASSERT_EQUAL(bm25_term_id(b, "zebra", 5), -1);

	/* convert-a, a-string, string-to, to-an, an-integer */
	query(&pq, "convert a string to an integer");
	CU_ASSERT_EQUAL(pq.nterms, 6);
	CU_ASSERT_EQUAL(pq.npairs, 5);
	/* "cat cat dog": one pair, the repeated word is not one; unknown
	 * words still make pairs, which no text has. */
	query(&pq, "cat cat dog");
	CU_ASSERT_EQUAL(pq.nterms, 2);
	CU_ASSERT_EQUAL(pq.npairs, 1);
	CU_ASSERT_EQUAL(pq.term[0], -1);
	query(&pq, "");
	CU_ASSERT_EQUAL(pq.npairs, 0);
	CU_ASSERT_DOUBLE_EQUAL(prox_score(&pq, w, n), 0.0, 1e-12);
}

static void test_scores(void)
{
	const char *q = "convert a string to an integer";

	/* Inflected ("converts", "strings"): stems match; "the" stands
	 * between convert and string, within the window; a-string is missed
	 * (the text has no "a"), string-to, to-an and an-integer are there. */
	CU_ASSERT_DOUBLE_EQUAL(prox(q, 0), 3.0 / 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox(q, 1), 1.0, 1e-12);
	/* The same words scattered, or in the other order: nothing. */
	CU_ASSERT_DOUBLE_EQUAL(prox(q, 2), 0.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", 3), 0.0, 1e-12);
	/* The window: b at most PROX_WINDOW words after a. */
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", 4), 1.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", 5), 0.0, 1e-12);
	/* Case and accents fold as everywhere in retrieval. */
	CU_ASSERT_DOUBLE_EQUAL(prox("Crème brûlée", 6), 1.0, 1e-12);
	bm25_free(b);
	b = NULL;
}

/* The share of pairs by definition: b at most PROX_WINDOW words after
 * some a, for each of the question's pairs. */
static double prox_reference(const struct prox_query *q, const uint32_t *w, size_t n)
{
	size_t hit = 0;

	for (size_t p = 0; p < q->npairs; p++) {
		long a = q->term[q->pair[p].a], bt = q->term[q->pair[p].b];
		bool found = false;

		for (size_t j = 0; j < n && !found; j++)
			for (size_t i = j >= PROX_WINDOW ? j - PROX_WINDOW : 0; i < j && !found; i++)
				found = (long)w[i] == a && (long)w[j] == bt;
		hit += found;
	}
	return q->npairs > 0 ? (double)hit / (double)q->npairs : 0.0;
}

/* More terms than the question's hash has slots, so that ids collide and
 * probe: random texts and questions over 700 words score as defined. */
static void test_many_terms(void)
{
	enum { VOCAB = 700, NTEXT = 40, TEXT_WORDS = 120, QUESTIONS = 300 };
	static char texts_buf[NTEXT][TEXT_WORDS * 8];
	const char *tx[NTEXT];
	size_t lens[NTEXT];
	unsigned seed = 12345;

	for (size_t t = 0; t < NTEXT; t++) {
		size_t off = 0;
		for (size_t i = 0; i < TEXT_WORDS; i++) {
			/* the first text spreads over the vocabulary; the others
			 * repeat its first 40 words */
			seed = seed * 1103515245u + 12345u;
			unsigned v = t == 0 ? (unsigned)(i * VOCAB / TEXT_WORDS) : (seed >> 16) % 40;
			off += (size_t)snprintf(texts_buf[t] + off, sizeof texts_buf[t] - off, "zq%u ", v);
		}
		tx[t] = texts_buf[t];
		lens[t] = off;
	}
	/* the second names every word of the vocabulary */
	static char all[VOCAB * 8];
	size_t off = 0;
	for (unsigned v = 0; v < VOCAB; v++)
		off += (size_t)snprintf(all + off, sizeof all - off, "zq%u ", v);
	tx[1] = all;
	lens[1] = off;
	b = bm25_build(tx, lens, NTEXT, true);
	CU_ASSERT_FATAL(b != NULL);
	for (size_t k = 0; k < QUESTIONS; k++) {
		char q[256];
		size_t qo = 0, nw = 2 + k % 12;
		struct prox_query pq;
		size_t n, doc = 2 + k % (NTEXT - 2);

		for (size_t i = 0; i < nw; i++) {
			seed = seed * 1103515245u + 12345u;
			/* mostly words the texts repeat, some far ids, one unknown */
			unsigned v = (seed >> 16) % 50;
			unsigned word = v < 40 ? v : (seed >> 8) % VOCAB;
			qo += (size_t)snprintf(q + qo, sizeof q - qo, v < 49 ? "zq%u " : "nope%u ", word);
		}
		query(&pq, q);
		const uint32_t *w = bm25_words(b, doc, &n);
		CU_ASSERT_DOUBLE_EQUAL(prox_score(&pq, w, n), prox_reference(&pq, w, n), 1e-12);
	}
	bm25_free(b);
	b = NULL;
}

int suite_proximity(void)
{
	static const struct test_case tests[] = {
		{ "the question's pairs and the words kept", test_pairs },
		{ "scores: inflections, order, window", test_scores },
		{ "many terms: colliding ids score as defined", test_many_terms },
		{ NULL, NULL },
	};
	return suite_add("proximity", tests);
}
