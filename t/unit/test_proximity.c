/* test_proximity.c - neighbouring question words close together. */
#include <string.h>

#include "suites.h"
#include "retrieval/proximity.h"

static double prox(const char *q, const char *text)
{
	struct prox_query pq;

	prox_query_init(&pq, q, strlen(q));
	return prox_score(&pq, text, strlen(text));
}

static void test_pairs(void)
{
	struct prox_query pq;

	/* convert-a, a-string, string-to, to-an, an-integer */
	prox_query_init(&pq, "convert a string to an integer", 30);
	CU_ASSERT_EQUAL(pq.nstems, 6);
	CU_ASSERT_EQUAL(pq.npairs, 5);
	/* "cat cat dog": one pair, the repeated word is not one */
	prox_query_init(&pq, "cat cat dog", 11);
	CU_ASSERT_EQUAL(pq.nstems, 2);
	CU_ASSERT_EQUAL(pq.npairs, 1);
	prox_query_init(&pq, "", 0);
	CU_ASSERT_EQUAL(pq.npairs, 0);
	CU_ASSERT_DOUBLE_EQUAL(prox_score(&pq, "anything", 8), 0.0, 1e-12);
}

static void test_scores(void)
{
	const char *q = "convert a string to an integer";

	/* Inflected ("converts", "strings"): stems match; "the" stands
	 * between convert and string, within the window; a-string is missed
	 * (the text has no "a"), string-to, to-an and an-integer are there. */
	CU_ASSERT_DOUBLE_EQUAL(prox(q, "It converts the strings to an integer."), 3.0 / 5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox(q, "convert a string to an integer"), 1.0, 1e-12);
	/* The same words scattered, or in the other order: nothing. */
	CU_ASSERT_DOUBLE_EQUAL(prox(q, "integer one two three four an five six seven to "
	                              "eight nine ten eleven string"), 0.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", "apple red"), 0.0, 1e-12);
	/* The window: b at most PROX_WINDOW words after a. */
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", "red one two apple"), 1.0, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(prox("red apple", "red one two three apple"), 0.0, 1e-12);
	/* Case and accents fold as everywhere in retrieval. */
	CU_ASSERT_DOUBLE_EQUAL(prox("Crème brûlée", "CREME BRULEE"), 1.0, 1e-12);
}

int suite_proximity(void)
{
	static const struct test_case tests[] = {
		{ "the question's pairs", test_pairs },
		{ "scores: inflections, order, window", test_scores },
		{ NULL, NULL },
	};
	return suite_add("proximity", tests);
}
