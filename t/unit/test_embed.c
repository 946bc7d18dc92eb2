/* test_embed.c - the tokeniser and the built-in embedder. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "suites.h"
#include "retrieval/embed.h"
#include "retrieval/tokenize.h"
#include "retrieval/vec.h"

static void test_tokens(void)
{
	const char *text = "\xC3\x89lan, STRASSE stra\xC3\x9F" "e \xE6\x9D\xB1\xE4\xBA\xAC"
	                   "\xE3\x80\x82 don't \xFF x2\xE2\x80\x94y \xC5\x81\xC3\xB3" "d\xC5\xBA";
	const char *want[] = { "elan", "strasse", "strasse", "\xE6\x9D\xB1\xE4\xBA\xAC",
	                       "don", "t", "x2", "y", "lodz", NULL };
	struct tok_iter it;
	char buf[TOKEN_MAX];
	size_t n, i = 0;

	tok_init(&it, text, strlen(text));
	while ((n = tok_next(&it, buf)) > 0) {
		CU_ASSERT_FATAL(want[i] != NULL);
		CU_ASSERT_EQUAL(n, strlen(want[i]));
		CU_ASSERT(memcmp(buf, want[i], n) == 0);
		i++;
	}
	CU_ASSERT_PTR_NULL(want[i]);
}

static void test_long_token(void)
{
	char text[200], buf[TOKEN_MAX];
	struct tok_iter it;

	memset(text, 'a', 150);
	strcpy(text + 150, " b");
	tok_init(&it, text, strlen(text));
	CU_ASSERT_EQUAL(tok_next(&it, buf), TOKEN_MAX);
	CU_ASSERT_EQUAL(tok_next(&it, buf), 1);
	CU_ASSERT_EQUAL(buf[0], 'b');
	CU_ASSERT_EQUAL(tok_next(&it, buf), 0);
	/* A 3-byte letter never split at the cap: 21 fit in 64 bytes. */
	char cjk[3 * 30 + 1] = "";
	for (int i = 0; i < 30; i++)
		strcat(cjk, "\xE6\x9D\xB1");
	tok_init(&it, cjk, strlen(cjk));
	CU_ASSERT_EQUAL(tok_next(&it, buf), 63);
	CU_ASSERT_TRUE(tok_is_stopword("the", 3));
	CU_ASSERT_FALSE(tok_is_stopword("cat", 3));
	CU_ASSERT_FALSE(tok_is_stopword("thesaurus", 9));
}

static float cosine(const char *a, const char *b)
{
	float va[EMBED_DIM_DEFAULT], vb[EMBED_DIM_DEFAULT];
	CU_ASSERT_EQUAL(embed_builtin(a, strlen(a), va, EMBED_DIM_DEFAULT), 0);
	CU_ASSERT_EQUAL(embed_builtin(b, strlen(b), vb, EMBED_DIM_DEFAULT), 0);
	return vec_score(VEC_COS, va, 1, vb, 1, EMBED_DIM_DEFAULT);
}

static void test_embed(void)
{
	const char *t = "Exact vector search with five metrics.";
	float a[EMBED_DIM_DEFAULT], b[EMBED_DIM_DEFAULT], s[7];

	CU_ASSERT_EQUAL(embed_builtin(t, strlen(t), a, EMBED_DIM_DEFAULT), 0);
	CU_ASSERT_EQUAL(embed_builtin(t, strlen(t), b, EMBED_DIM_DEFAULT), 0);
	CU_ASSERT(memcmp(a, b, sizeof a) == 0);                 /* deterministic */
	CU_ASSERT_DOUBLE_EQUAL(vec_norm(a, EMBED_DIM_DEFAULT), 1.0, 1e-5);
	/* No features: all zero. */
	CU_ASSERT_EQUAL(embed_builtin(" ,.; ", 5, s, 7), 0);
	for (int i = 0; i < 7; i++)
		CU_ASSERT_EQUAL(s[i], 0.0f);
	CU_ASSERT_EQUAL(embed_builtin("", 0, s, 7), 0);
	CU_ASSERT_EQUAL(embed_builtin(t, strlen(t), s, 0), -1);
	/* Case and accents folded: the same vector. */
	CU_ASSERT_DOUBLE_EQUAL(cosine("Caf\xC3\xA9 CR\xC3\x88ME", "cafe creme"), 1.0, 1e-6);
	/* Morphology: word forms share character n-grams. */
	CU_ASSERT(cosine("indexing documents", "indexed document") >
	          cosine("indexing documents", "banana smoothie") + 0.3);
	/* Word overlap counts more than a shared function word. */
	CU_ASSERT(cosine("the cat sat on the mat", "a cat on a mat") >
	          cosine("the cat sat on the mat", "the dog ran to the park"));
	/* Not synonyms: no shared letters, little similarity. */
	CU_ASSERT(fabs(cosine("car", "automobile")) < 0.3);
}

/* The bits of a vector do not change with how features are sorted: a text
 * of repeated words, stopwords and n-grams shared across them (so runs of
 * equal features with different weights), against the FNV-1a of the
 * vector that qsort by (hash, weight) gave.  Stored snippets and new
 * questions must keep meeting in the same space.  Dimension 7 has every
 * feature radix sorted at once, 384 and 4096 bucket by bucket; and two
 * words repeated 100 times each fill a few of 4096 buckets past an
 * insertion sort's bound (each of those is radix sorted). */
static void test_embed_bits(void)
{
	static const struct { size_t dim; uint64_t fnv; } want[] = {
		{ 7, 0xd50981ce52cc1e79ull },
		{ EMBED_DIM_DEFAULT, 0xaa293e4db766d220ull },
		{ EMBED_DIM_MAX, 0x653194cffc4ced13ull },
	};
	static float v[EMBED_DIM_MAX];
	const unsigned char *p = (const unsigned char *)v;
	char text[4096];
	size_t n = 0;

	for (int i = 0; n < 3000; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "Word%d the other harbour%d "
		                      "ships grain, caf\xC3\xA9 %d; ", i % 37, i % 11, i);
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		uint64_t h = 0xcbf29ce484222325ull;

		CU_ASSERT_EQUAL_FATAL(embed_builtin(text, n, v, want[k].dim), 0);
		for (size_t i = 0; i < want[k].dim * sizeof *v; i++)
			h = (h ^ p[i]) * 0x100000001b3ull;
		CU_ASSERT_EQUAL(h, want[k].fnv);
	}
	n = 0;
	for (int i = 0; i < 200; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "harbour%s ", i % 2 ? "" : "s");
	CU_ASSERT_EQUAL_FATAL(embed_builtin(text, n, v, EMBED_DIM_MAX), 0);
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < EMBED_DIM_MAX * sizeof *v; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	CU_ASSERT_EQUAL(h, 0x218218c7a8461492ull);
}

int suite_embed(void)
{
	static const struct test_case tests[] = {
		{ "tokens: case, folding, scripts, separators", test_tokens },
		{ "long tokens cut on code points; stopwords", test_long_token },
		{ "embedder: deterministic, normalised, morphology", test_embed },
		{ "embedder: the same bits as sorting by (hash, weight)", test_embed_bits },
		{ NULL, NULL },
	};
	return suite_add("embed", tests);
}
