/* test_mmr.c - MMR against a worked example. */
#include <math.h>

#include "suites.h"
#include "retrieval/mmr.h"

/* Unit vectors in the plane at these angles; the query at 0 degrees.
 *   row 0 at -60: cos to q 0.5
 *   row 1 at +35:          0.81915
 *   row 2 at +15:          0.96593
 *   row 3 at  +5:          0.99619   (the best candidate)
 * Pairwise: 3-2 cos 10 = .98481, 3-1 cos 30 = .86603, 3-0 cos 65 = .42262,
 *           2-0 cos 75 = .25882, 1-0 cos 95 = -.08716.
 *
 * lambda 1: pure relevance, 3 2 1 0.
 * lambda 0: after 3, the least like 3 is 0 (.42262); then max-sim to {3,0}:
 *   row 1 .86603, row 2 .98481 -> 1, then 2.  Order 3 0 1 2.
 * lambda 0.5: after 3, 0.5*rel - 0.5*maxsim:
 *   row 2 .5*.96593 - .5*.98481 = -.00944
 *   row 1 .5*.81915 - .5*.86603 = -.02344
 *   row 0 .5*.5     - .5*.42262 = +.03869 -> 0
 *   then row 2 -.00944 beats row 1 -.02344.  Order 3 0 2 1. */
static void test_worked_example(void)
{
	const double deg[4] = { -60, 35, 15, 5 };
	float base[8], norms[4] = { 1, 1, 1, 1 };
	const float q[2] = { 1, 0 };
	/* Candidates in a scrambled order, scores passed through. */
	const struct vec_hit cand[4] = { { 1, 0.1f }, { 0, 0.2f }, { 3, 0.3f }, { 2, 0.4f } };
	const struct { double lambda; uint32_t want[4]; } cases[] = {
		{ 1.0, { 3, 2, 1, 0 } },
		{ 0.0, { 3, 0, 1, 2 } },
		{ 0.5, { 3, 0, 2, 1 } },
	};
	struct vec_hit out[4];

	for (int i = 0; i < 4; i++) {
		base[2 * i] = (float)cos(deg[i] * M_PI / 180);
		base[2 * i + 1] = (float)sin(deg[i] * M_PI / 180);
	}
	for (size_t c = 0; c < 3; c++) {
		size_t n = mmr_select(q, 1, base, norms, 2, cand, 4, cases[c].lambda, 4, out);
		CU_ASSERT_EQUAL_FATAL(n, 4);
		for (int i = 0; i < 4; i++)
			CU_ASSERT_EQUAL(out[i].row, cases[c].want[i]);
	}
	/* top_n cuts; each pick keeps its candidate's score. */
	CU_ASSERT_EQUAL(mmr_select(q, 1, base, norms, 2, cand, 4, 0.5, 2, out), 2);
	CU_ASSERT_EQUAL(out[0].row, 3);
	CU_ASSERT_EQUAL(out[0].score, 0.3f);
	CU_ASSERT_EQUAL(out[1].row, 0);
	CU_ASSERT_EQUAL(out[1].score, 0.2f);
	CU_ASSERT_EQUAL(mmr_select(q, 1, base, norms, 2, cand, 4, 0.5, 9, out), 4);
	CU_ASSERT_EQUAL(mmr_select(q, 1, base, norms, 2, cand, 0, 0.5, 3, out), 0);
	/* Only the first fetch_k candidates are considered: the caller passes
	 * two, the best of the rest is never picked. */
	CU_ASSERT_EQUAL(mmr_select(q, 1, base, norms, 2, cand, 2, 1.0, 3, out), 2);
	CU_ASSERT_EQUAL(out[0].row, 1);
	CU_ASSERT_EQUAL(out[1].row, 0);
}

int suite_mmr(void)
{
	static const struct test_case tests[] = {
		{ "worked example: lambda 1, 0.5, 0", test_worked_example },
		{ NULL, NULL },
	};
	return suite_add("mmr", tests);
}
