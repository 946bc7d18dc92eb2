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
 * machine (integer hashing, each bucket's features summed in ascending hash
 * order).  Only the first EMBED_MAX_BYTES of a text are read. */
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

struct feat { uint64_t h; float w; uint32_t bucket; };
struct feats {
	struct feat *v;
	size_t n, cap, dim;
	__uint128_t dim_m;       /* see bucket_of */
};

/* h (its top bit cleared) mod dim without a division, which was half of
 * adding a feature: Lemire, Kaser and Kurz's direct remainder ("Faster
 * remainder by direct computation", 2019), exact for every 64-bit h and
 * dim, with m = 2^128 / dim rounded up. */
static __uint128_t bucket_m(size_t dim)
{
	return ~(__uint128_t)0 / dim + 1;
}

static uint32_t bucket_of(const struct feats *f, uint64_t h)
{
	__uint128_t low = f->dim_m * (h & 0x7fffffffffffffffull);
	__uint128_t hi = (low >> 64) * f->dim, lo = (uint64_t)low * (__uint128_t)f->dim;

	return (uint32_t)((hi + (lo >> 64)) >> 64);
}

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
	h = fmix64(h);
	f->v[f->n].h = h;
	f->v[f->n].w = w;
	f->v[f->n].bucket = bucket_of(f, h);
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

/* Sort v[0..n) by h: an LSD radix sort, one byte a pass, through tmp (as
 * large).  (qsort's comparisons were once half of ingesting a snippet.) */
static void radix_sort(struct feat *v, size_t n, struct feat *tmp)
{
	struct feat *src = v, *dst = tmp;

	for (unsigned shift = 0; shift < 64; shift += 8) {
		size_t count[256] = { 0 }, at = 0;

		for (size_t i = 0; i < n; i++)
			count[(src[i].h >> shift) & 0xff]++;
		if (count[(src[0].h >> shift) & 0xff] == n)
			continue;                /* every key has this byte */
		for (size_t b = 0; b < 256; b++) {
			size_t c = count[b];

			count[b] = at;
			at += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[count[(src[i].h >> shift) & 0xff]++] = src[i];
		dst = src;
		src = src == v ? tmp : v;
	}
	if (src != v)
		memcpy(v, src, n * sizeof *src);
}

/* Put each bucket's features in ascending h: all a bucket's sum sees, so
 * sorting by bucket, then by h within each, gives every vector the bits a
 * full sort by h gives it.  That is a counting sort by bucket and an
 * insertion sort of each bucket: at 384 dimensions a snippet's 1,000 or so
 * features put 3 in a bucket on average, and a text is embedded in about
 * 0.8 of the time a radix sort of every key took (bench/embed_speed.sh,
 * which also checks the bits).  Buckets fuller than BUCKET_MEAN_MAX
 * on average (few dimensions, a long text) are radix sorted whole as
 * before, and so is a bucket of more than BUCKET_INSERTION_MAX (a text
 * made to fill one): no text costs more than the radix sort's passes.  The
 * order of equal h does not matter: a run's weights are a few floats
 * summed in a double, which is exact in any order. */
#define BUCKET_MEAN_MAX 8
#define BUCKET_INSERTION_MAX 32

static int feats_order(struct feats *f)
{
	struct feat *tmp = malloc(f->n * sizeof *tmp);
	size_t *first;

	if (tmp == NULL)
		return -1;
	if (f->n > BUCKET_MEAN_MAX * f->dim ||
	    (first = calloc(f->dim + 1, sizeof *first)) == NULL) {
		radix_sort(f->v, f->n, tmp);
		free(tmp);
		return 0;
	}
	for (size_t i = 0; i < f->n; i++)
		first[f->v[i].bucket + 1]++;
	for (size_t b = 0; b < f->dim; b++)
		first[b + 1] += first[b];
	/* Each feature to its bucket's place; first[b] then holds b's end. */
	for (size_t i = 0; i < f->n; i++)
		tmp[first[f->v[i].bucket]++] = f->v[i];
	for (size_t b = 0, start = 0; b < f->dim; start = first[b++]) {
		struct feat *v = tmp + start;
		size_t n = first[b] - start;

		if (n > BUCKET_INSERTION_MAX) {
			radix_sort(v, n, f->v + start);  /* f->v is free now */
			continue;
		}
		for (size_t i = 1; i < n; i++) {
			struct feat x = v[i];
			size_t j = i;

			for (; j > 0 && v[j - 1].h > x.h; j--)
				v[j] = v[j - 1];
			v[j] = x;
		}
	}
	free(first);
	free(f->v);
	f->v = tmp;
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

/* 1 + ln tf; the first TF_CACHED values computed once (log is a good part
 * of embedding a text: its character n-grams repeat).  1 + ln 1 is 1. */
#define TF_CACHED 64

static double sublinear_tf(size_t tf)
{
	static double cached[TF_CACHED];

	if (tf >= TF_CACHED)
		return 1.0 + log((double)tf);
	if (cached[tf] == 0.0)
		cached[tf] = 1.0 + log((double)tf);
	return cached[tf];
}

int embed_builtin(const char *text, size_t len, float *out, size_t dim)
{
	struct feats f = { NULL, 0, 0, dim, 0 };
	double *acc = NULL, norm = 0.0;
	int rc = -1;

	if (dim == 0 || dim > EMBED_DIM_MAX)
		return -1;
	if (len > EMBED_MAX_BYTES)
		len = EMBED_MAX_BYTES;
	f.dim_m = bucket_m(dim);
	acc = calloc(dim, sizeof *acc);
	if (acc == NULL || (len > 0 && collect(text, len, &f) != 0))
		goto out;
	if (f.n > 1 && feats_order(&f) != 0)
		goto out;
	for (size_t i = 0; i < f.n;) {
		size_t j = i;
		double wsum = 0.0;
		for (; j < f.n && f.v[j].h == f.v[i].h; j++)
			wsum += f.v[j].w;
		double v = j - i == 1 ? wsum : wsum / (double)(j - i) * sublinear_tf(j - i);
		acc[f.v[i].bucket] += (f.v[i].h >> 63) ? -v : v;
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
