/* test_bm25.c - BM25 against a worked example, the keep mask, and the
 * serialised form. */
#include <stdlib.h>
#include <string.h>

#include "suites.h"
#include "retrieval/bm25.h"

/* d0 "the cat sat" (3 tokens), d1 "the dog sat down" (4), d2 "cat cat cat"
 * (3): N = 3, avgdl = 10/3.  k1 = 1.2, b = 0.75.
 *   K(dl=3) = 1.2 * (0.25 + 0.75 * 3 / (10/3)) = 1.11
 *   K(dl=4) = 1.2 * (0.25 + 0.75 * 4 / (10/3)) = 1.38
 * "cat": df 2, idf = ln(1 + 1.5/2.5) = ln 1.6 = 0.4700036
 *   d2: 0.4700036 * 3 * 2.2 / (3 + 1.11) = 0.7547502
 *   d0: 0.4700036 * 1 * 2.2 / (1 + 1.11) = 0.4900512
 * "dog sat": idf(dog) = ln(1 + 2.5/1.5) = 0.9808293, idf(sat) = 0.4700036
 *   d1: (0.9808293 + 0.4700036) * 2.2 / (1 + 1.38) = 1.3411060
 *   d0: 0.4900512 (sat only) */
static const char *const docs[] = { "the cat sat", "the dog sat down", "cat cat cat" };

static struct bm25 *build(void)
{
	size_t lens[3];
	for (int i = 0; i < 3; i++)
		lens[i] = strlen(docs[i]);
	return bm25_build(docs, lens, 3, true);
}

static void check_example(const struct bm25 *b)
{
	struct vec_hit h[3];

	CU_ASSERT_EQUAL(bm25_count(b), 3);
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "cat", 3, NULL, 3, h), 2);
	CU_ASSERT_EQUAL(h[0].row, 2);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 0.7547502, 1e-5);
	CU_ASSERT_EQUAL(h[1].row, 0);
	CU_ASSERT_DOUBLE_EQUAL(h[1].score, 0.4900512, 1e-5);
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "Dog, SAT!", 9, NULL, 3, h), 2);
	CU_ASSERT_EQUAL(h[0].row, 1);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 1.3411060, 1e-5);
	CU_ASSERT_EQUAL(h[1].row, 0);
	CU_ASSERT_DOUBLE_EQUAL(h[1].score, 0.4900512, 1e-5);
	/* A repeated query word counts once; k cuts; unknown words find nothing. */
	CU_ASSERT_EQUAL(bm25_topk(b, "cat cat", 7, NULL, 1, h), 1);
	CU_ASSERT_DOUBLE_EQUAL(h[0].score, 0.7547502, 1e-5);
	CU_ASSERT_EQUAL(bm25_topk(b, "zebra", 5, NULL, 3, h), 0);
	CU_ASSERT_EQUAL(bm25_topk(b, "", 0, NULL, 3, h), 0);
	/* The keep mask. */
	const uint8_t keep[3] = { 1, 1, 0 };
	CU_ASSERT_EQUAL_FATAL(bm25_topk(b, "cat", 3, keep, 3, h), 1);
	CU_ASSERT_EQUAL(h[0].row, 0);

	/* Every score, and the most a document could score: "dog sat zebra"
	 * perfect = (idf(dog) + idf(sat)) * 2.2, zebra unknown. */
	struct bm25_scores s;
	CU_ASSERT_EQUAL_FATAL(bm25_score(b, "dog sat zebra", 13, NULL, &s), 0);
	CU_ASSERT_DOUBLE_EQUAL(s.perfect, (0.9808293 + 0.4700036) * 2.2, 1e-5);
	CU_ASSERT_EQUAL(s.ntouched, 2);
	CU_ASSERT_DOUBLE_EQUAL(s.score[1], 1.3411060, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(s.score[0], 0.4900512, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(s.score[2], 0.0, 1e-12);
	CU_ASSERT_TRUE(s.score[1] / s.perfect < 1.0);
	bm25_scores_free(&s);
	CU_ASSERT_PTR_NULL(s.score);
	CU_ASSERT_EQUAL_FATAL(bm25_score(b, "zebra", 5, NULL, &s), 0);
	CU_ASSERT_EQUAL(s.ntouched, 0);
	CU_ASSERT_DOUBLE_EQUAL(s.perfect, 0.0, 1e-12);
	bm25_scores_free(&s);
}

static void test_example(void)
{
	struct bm25 *b = build();
	CU_ASSERT_FATAL(b != NULL);
	check_example(b);
	bm25_free(b);
}

static void test_serialise(void)
{
	struct bm25 *b = build(), *l;
	size_t n = bm25_serialized_size(b);
	uint64_t *buf = malloc(n + 8);                 /* 8-aligned */

	CU_ASSERT_FATAL(buf != NULL);
	bm25_serialize(b, buf);
	l = bm25_load(buf, n);
	CU_ASSERT_FATAL(l != NULL);
	check_example(l);
	bm25_free(l);
	/* Short, long, misaligned, or a posting outside the documents: refused. */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n - 1));
	CU_ASSERT_PTR_NULL(bm25_load(buf, 8));
	CU_ASSERT_PTR_NULL(bm25_load((char *)buf + 4, n - 4));
	((uint32_t *)buf)[1] = 2;                      /* ndocs 3 -> 2 */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n));
	bm25_serialize(b, buf);
	((uint32_t *)buf)[0] ^= 1;                     /* magic */
	CU_ASSERT_PTR_NULL(bm25_load(buf, n));
	free(buf);
	bm25_free(b);
	/* No documents at all. */
	b = bm25_build(NULL, NULL, 0, true);
	CU_ASSERT_FATAL(b != NULL);
	struct vec_hit h[1];
	CU_ASSERT_EQUAL(bm25_topk(b, "cat", 3, NULL, 1, h), 0);
	bm25_free(b);
}

int suite_bm25(void)
{
	static const struct test_case tests[] = {
		{ "worked example", test_example },
		{ "serialised form round trip and refusal", test_serialise },
		{ NULL, NULL },
	};
	return suite_add("bm25", tests);
}
