/* proximity.c - neighbouring question words close together in a text.
 *
 * "convert a string to an integer" has the pairs (convert, a), (a, string),
 * (string, to), (to, an), (an, integer); a text scores the share of them
 * it has in that order within PROX_WINDOW words, so "converts the string
 * to an integer" scores 3/5 (no "a") and a text with the same words
 * scattered 0.  BM25 counts words wherever they stand; this is the
 * evidence of phrases.  Words are compared as stems (tokenize.h), through
 * the term ids the snippets' BM25 index keeps in text order, so scoring a
 * snippet reads its ids once and never tokenises its text. */
#include <string.h>

#include "retrieval/proximity.h"
#include "retrieval/tokenize.h"

void prox_query_init(struct prox_query *q, const struct bm25 *b, const struct tok_words *w)
{
	int prev = -1;

	memset(q, 0, sizeof *q);
	memset(q->slot_id, 0xff, sizeof q->slot_id);
	for (size_t i = 0; i < w->n && i < PROX_MAX_WORDS; i++) {
		const char *tok = w->w[i];
		size_t s = 0, n = w->len[i];

		while (s < q->nterms && !(w->len[q->word[s]] == n &&
		                          memcmp(w->w[q->word[s]], tok, n) == 0))
			s++;
		if (s == q->nterms) {
			q->word[s] = (unsigned char)i;
			q->term[s] = bm25_term_id(b, tok, n);
			if (q->term[s] >= 0) {
				size_t h = (size_t)q->term[s] & (PROX_SLOTS - 1);
				while (q->slot_id[h] != PROX_EMPTY)
					h = (h + 1) & (PROX_SLOTS - 1);
				q->slot_id[h] = (uint32_t)q->term[s];
				q->slot_term[h] = (unsigned char)s;
			}
			q->nterms++;
		}
		if (prev >= 0 && (size_t)prev != s) {
			q->pair[q->npairs].a = (unsigned char)prev;
			q->pair[q->npairs].b = (unsigned char)s;
			q->ends[s] |= 1ull << q->npairs;
			q->npairs++;
		}
		prev = (int)s;
	}
}

double prox_score(const struct prox_query *q, const uint32_t *words, size_t n)
{
	long last[PROX_MAX_WORDS];          /* word position of each term's last use */
	uint64_t hit = 0, all;
	size_t nhit = 0;

	if (q->npairs == 0)
		return 0.0;
	all = (1ull << q->npairs) - 1;
	for (size_t i = 0; i < q->nterms; i++)
		last[i] = -PROX_WINDOW - 1;
	for (size_t pos = 0; pos < n; pos++) {
		uint32_t id = words[pos];
		size_t h = id & (PROX_SLOTS - 1), s;

		/* Most words are not the question's: an empty slot at once. */
		while (q->slot_id[h] != id && q->slot_id[h] != PROX_EMPTY)
			h = (h + 1) & (PROX_SLOTS - 1);
		if (q->slot_id[h] != id)
			continue;
		s = q->slot_term[h];
		for (uint64_t m = q->ends[s] & ~hit; m != 0; m &= m - 1) {
			int p = __builtin_ctzll(m);
			if ((long)pos - last[q->pair[p].a] <= PROX_WINDOW) {
				hit |= 1ull << p;
				nhit++;
			}
		}
		if (hit == all)
			break;
		last[s] = (long)pos;
	}
	return (double)nhit / (double)q->npairs;
}
