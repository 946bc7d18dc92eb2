/* proximity.c - neighbouring question words close together in a text.
 *
 * "convert a string to an integer" has the pairs (convert, a), (a, string),
 * (string, to), (to, an), (an, integer); a text scores the share of them
 * it has in that order within PROX_WINDOW words, so "converts the string
 * to an integer" scores 4/5 and a text with the same words scattered 0.
 * BM25 counts words wherever they stand; this is the evidence of phrases.
 *
 * Cost: the text is tokenised once, and only words whose first two letters
 * begin one of the question's stems are stemmed (Snowball keeps the first
 * two letters of every word but a few irregular forms such as "dying" ->
 * "die", which are then not matched: a missed bonus, never a false one). */
#include <stdbool.h>
#include <string.h>

#include "retrieval/proximity.h"

/* Index of stem s among q's stems, or -1. */
static int stem_index(const struct prox_query *q, const char *s, size_t n)
{
	for (size_t i = 0; i < q->nstems; i++)
		if (q->len[i] == n && memcmp(q->stem[i], s, n) == 0)
			return (int)i;
	return -1;
}

void prox_query_init(struct prox_query *q, const char *question, size_t qlen)
{
	struct tok_iter it;
	char tok[TOKEN_MAX];
	size_t n, words = 0;
	int prev = -1;

	memset(q, 0, sizeof *q);
	tok_init(&it, question, qlen);
	while (words < PROX_MAX_WORDS && (n = tok_next(&it, tok)) > 0) {
		int s;

		n = tok_stem(tok, n);
		if ((s = stem_index(q, tok, n)) < 0) {
			s = (int)q->nstems++;
			memcpy(q->stem[s], tok, n);
			q->len[s] = n;
		}
		if (prev >= 0 && prev != s) {
			q->pair[q->npairs].a = (unsigned char)prev;
			q->pair[q->npairs].b = (unsigned char)s;
			q->npairs++;
		}
		prev = s;
		words++;
	}
}

/* Could a word starting with tok[0..n) stem to one of q's stems? */
static bool may_match(const struct prox_query *q, const char *tok, size_t n)
{
	size_t m = n < 2 ? n : 2;

	for (size_t i = 0; i < q->nstems; i++)
		if (q->len[i] >= m && memcmp(q->stem[i], tok, m) == 0)
			return true;
	return false;
}

double prox_score(const struct prox_query *q, const char *text, size_t len)
{
	long last[PROX_MAX_WORDS];          /* word position of each stem's last use */
	bool hit[PROX_MAX_WORDS] = { false };
	struct tok_iter it;
	char tok[TOKEN_MAX];
	size_t n, nhit = 0;
	long pos = 0;

	if (q->npairs == 0)
		return 0.0;
	for (size_t i = 0; i < q->nstems; i++)
		last[i] = -PROX_WINDOW - 1;
	tok_init(&it, text, len);
	for (; (n = tok_next(&it, tok)) > 0 && nhit < q->npairs; pos++) {
		int s;

		if (!may_match(q, tok, n) || (s = stem_index(q, tok, tok_stem(tok, n))) < 0)
			continue;
		for (size_t p = 0; p < q->npairs; p++)
			if (!hit[p] && q->pair[p].b == s && pos - last[q->pair[p].a] <= PROX_WINDOW) {
				hit[p] = true;
				nhit++;
			}
		last[s] = pos;
	}
	return (double)nhit / (double)q->npairs;
}
