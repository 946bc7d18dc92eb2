/* embed.c - the built-in embedder: hashed sparse features, folded into a
 * dense vector.
 *
 * What it is.  The text is split into words by tokenize.c (lower-cased,
 * Latin letters folded to ASCII).  Each word gives three kinds of feature:
 *
 *   the word itself                       weight 1.0
 *   the pair (previous word, word)        weight 0.5   (word order, phrases)
 *   its character 3- and 4-grams, taken   weight 0.25 each
 *   over code points of "<word>"
 *
 * Frequent English function words ("the", "of", ...) have all their
 * features weighted by 0.2.  A feature seen tf times counts
 * (1 + ln tf) times its weight (sublinear TF).  Each feature is hashed
 * (64-bit FNV-1a, then a murmur3 finaliser) to one of dim buckets, with a
 * sign from another bit of the hash so that collisions cancel on average
 * instead of piling up (the "hashing trick").  The vector is L2-normalised,
 * so cos and dot agree and L2 is a monotone function of them.
 *
 * What it captures: shared words and word pairs, and - through character
 * n-grams - inflections, derivations, compounds and spelling variants
 * ("index", "indexes", "indexing" share most n-grams), plus accent-less
 * spellings.  What it does not: synonyms or paraphrase with no shared
 * letters ("car" and "automobile" are unrelated), negation, or meaning
 * beyond the words.  There is no IDF: each text is embedded alone, so a
 * corpus statistic would make a snippet's vector depend on the rest of the
 * dataset (and change with every upload); the fixed function-word list is
 * the dataset-independent stand-in, and BM25 (hybrid ranking) supplies real
 * IDF.  Deterministic: the same text and dim give the same bits on every
 * machine (integer hashing, features summed in sorted order).  Only the
 * first EMBED_MAX_BYTES of a text are read. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/embed.h"
#include "retrieval/tokenize.h"

#define EMBED_MAX_BYTES (1u << 20)

#define W_WORD 1.0f
#define W_BIGRAM 0.5f
#define W_CHARGRAM 0.25f
#define W_STOP 0.2f

/* Seeds keep the feature kinds apart: "ab" the word is not "ab" the n-gram. */
#define SEED_WORD 0x9e3779b97f4a7c15ull
#define SEED_BIGRAM 0xc2b2ae3d27d4eb4full
#define SEED_GRAM 0x165667b19e3779f9ull

struct feat { uint64_t h; float w; };
struct feats { struct feat *v; size_t n, cap; };

static uint64_t fnv1a(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fmix64(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

static int feats_add(struct feats *f, uint64_t h, float w)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 256;
		struct feat *v = realloc(f->v, cap * sizeof *v);
		if (v == NULL)
			return -1;
		f->v = v;
		f->cap = cap;
	}
	f->v[f->n].h = fmix64(h);
	f->v[f->n].w = w;
	f->n++;
	return 0;
}

/* Character 3- and 4-grams of "<tok>", over code points. */
static int add_chargrams(struct feats *f, const char *tok, size_t len, float w)
{
	char b[TOKEN_MAX + 2];
	size_t starts[TOKEN_MAX + 3], nc = 0;

	b[0] = '<';
	memcpy(b + 1, tok, len);
	b[len + 1] = '>';
	for (size_t i = 0; i < len + 2; i++)
		if (((unsigned char)b[i] & 0xC0) != 0x80)
			starts[nc++] = i;
	starts[nc] = len + 2;                    /* end of the last code point */
	for (size_t n = 3; n <= 4; n++)
		for (size_t i = 0; i + n <= nc; i++) {
			size_t off = starts[i];
			uint64_t h = fnv1a(SEED_GRAM ^ n, b + off, starts[i + n] - off);
			if (feats_add(f, h, w) != 0)
				return -1;
		}
	return 0;
}

/* Sort by h: an LSD radix sort, one byte a pass (qsort's comparisons were
 * half of ingesting a snippet).  The order of equal h does not matter: a
 * run's weights are a few floats summed in a double, which is exact in any
 * order, so every vector keeps the bits it had. */
static int feats_sort(struct feats *f)
{
	struct feat *tmp = malloc(f->n * sizeof *tmp), *src = f->v, *dst = tmp;

	if (tmp == NULL)
		return -1;
	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, at = 0;

		for (size_t i = 0; i < f->n; i++)
			count[(src[i].h >> shift) & 0xff]++;
		if (count[(src[0].h >> shift) & 0xff] == f->n)
			continue;                /* every key has this byte */
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < f->n; i++)
			dst[count[(src[i].h >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == f->v ? tmp : f->v;
	}
	if (src != f->v)
		memcpy(f->v, src, f->n * sizeof *src);
	free(tmp);
	return 0;
}

static int collect(const char *text, size_t len, struct feats *f)
{
	struct tok_iter it;
	char tok[TOKEN_MAX], prev[TOKEN_MAX];
	size_t n, prevlen = 0;
	bool prevstop = false;

	tok_init(&it, text, len);
	while ((n = tok_next(&it, tok)) > 0) {
		bool stop = tok_is_stopword(tok, n);
		float s = stop ? W_STOP : 1.0f;

		if (feats_add(f, fnv1a(SEED_WORD, tok, n), W_WORD * s) != 0)
			return -1;
		if (prevlen > 0) {
			uint64_t h = fnv1a(SEED_BIGRAM, prev, prevlen);
			h = fnv1a(h, "\x1f", 1);
			h = fnv1a(h, tok, n);
			if (feats_add(f, h, W_BIGRAM * (stop && prevstop ? W_STOP : 1.0f)) != 0)
				return -1;
		}
		if (add_chargrams(f, tok, n, W_CHARGRAM * s) != 0)
			return -1;
		memcpy(prev, tok, n);
		prevlen = n;
		prevstop = stop;
	}
	return 0;
}

int embed_builtin(const char *text, size_t len, float *out, size_t dim)
{
	struct feats f = { NULL, 0, 0 };
	double *acc = NULL, norm = 0.0;
	int rc = -1;

	if (dim == 0 || dim > EMBED_DIM_MAX)
		return -1;
	if (len > EMBED_MAX_BYTES)
		len = EMBED_MAX_BYTES;
	acc = calloc(dim, sizeof *acc);
	if (acc == NULL || (len > 0 && collect(text, len, &f) != 0))
		goto out;
	if (f.n > 1 && feats_sort(&f) != 0)
		goto out;
	for (size_t i = 0; i < f.n;) {
		size_t j = i;
		double wsum = 0.0;
		for (; j < f.n && f.v[j].h == f.v[i].h; j++)
			wsum += f.v[j].w;
		double tf = (double)(j - i);
		double v = wsum / tf * (1.0 + log(tf));
		uint64_t h = f.v[i].h;
		acc[(h & 0x7fffffffffffffffull) % dim] += (h >> 63) ? -v : v;
		i = j;
	}
	for (size_t i = 0; i < dim; i++)
		norm += acc[i] * acc[i];
	norm = sqrt(norm);
	for (size_t i = 0; i < dim; i++)
		out[i] = norm > 0.0 ? (float)(acc[i] / norm) : 0.0f;
	rc = 0;
out:
	free(f.v);
	free(acc);
	return rc;
}
