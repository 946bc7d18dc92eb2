/* bm25.c - Okapi BM25 over the snippets of one dataset.
 *
 *   score(d, q) = sum over distinct query terms t present in d of
 *                 idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))
 *   idf(t)      = ln(1 + (N - df + 0.5) / (df + 0.5))
 *
 * with k1 = 1.2 and b = 0.75 (the usual defaults, as in Lucene and SQLite
 * FTS5), N documents, df(t) documents containing t, tf the count of t in d,
 * |d| d's length in tokens.  This idf (Lucene's) never goes negative, so a
 * term in most documents still counts a little instead of penalising.
 * Tokens come from tokenize.c, the same words the embedder sees.
 *
 * Everything but the query is known when the index is built, so each
 * posting stores its impact, tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| /
 * avgdl)), and each term its idf: a query multiplies and adds, with no
 * division or logarithm per posting.
 *
 * The index is one flat little blob, built once and never changed, which
 * is also its serialised form in the index file (native byte order: the
 * index header records it), so opening an index costs one validation pass
 * and no copying:
 *
 *   header                 struct bm25_hdr
 *   doc lengths            uint32_t[ndocs]                 (padded to 8)
 *   hash slots             uint32_t[nslots], term + 1 or 0 (padded to 8)
 *   terms                  struct bm25_term[nterms]
 *   postings               struct bm25_post[npostings], per term by doc
 *                          (doc and impact)
 *   term text              char[strbytes]                  (padded to 8)
 *   with words: word offs  uint64_t[ndocs + 1], into words
 *               words      uint32_t[total_len]: each document's terms in
 *                          text order (proximity.c reads them)
 *
 * The slots are an open-addressing table (linear probing, power-of-two
 * size, at most half full) keyed by the term's hash. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "retrieval/bm25.h"
#include "retrieval/tokenize.h"
#include "util/pages.h"

#define BM25_MAGIC 0x35324d42u          /* "BM25" */
#define BM25_MAX_QUERY_TERMS 1024

struct bm25_hdr {
	uint32_t magic, ndocs, nterms, nslots;
	uint64_t npostings, strbytes, total_len, nwords;   /* nwords: 0 or total_len */
};
struct bm25_term { uint64_t post_off; uint32_t str_off, str_len, df; float idf; };

struct bm25 {
	const unsigned char *blob;
	size_t len;
	unsigned char *owned;           /* blob, when built here */
	const struct bm25_hdr *hdr;     /* blob's, or own_hdr */
	struct bm25_hdr own_hdr;        /* a view's header (rows_without_words) */
	const uint32_t *doclen, *slots;
	const struct bm25_term *terms;
	const struct bm25_post *posts;
	const char *strs;
	const uint64_t *word_off;        /* NULL without words */
	const uint32_t *words;
};

struct layout { size_t doclen, slots, terms, posts, strs, word_off, words, total; };

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

/* Section offsets for these counts; -1 when they do not fit in size_t. */
static int layout_of(uint64_t ndocs, uint64_t nslots, uint64_t nterms,
                     uint64_t npostings, uint64_t strbytes, uint64_t nwords,
                     struct layout *l)
{
	if (npostings > SIZE_MAX / 16 || strbytes > SIZE_MAX / 4 || nwords > SIZE_MAX / 8)
		return -1;
	l->doclen = sizeof(struct bm25_hdr);
	l->slots = l->doclen + pad8(ndocs * 4);
	l->terms = l->slots + pad8(nslots * 4);
	l->posts = l->terms + nterms * sizeof(struct bm25_term);
	l->strs = l->posts + npostings * sizeof(struct bm25_post);
	if (l->strs < l->posts || strbytes > SIZE_MAX / 2 - l->strs)
		return -1;
	l->word_off = l->strs + pad8(strbytes);
	l->words = l->word_off + (nwords > 0 ? (ndocs + 1) * 8 : 0);
	if (nwords * 4 > SIZE_MAX / 2 - l->words)
		return -1;
	l->total = l->words + nwords * 4;
	return 0;
}

static uint64_t term_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* b reads the blob's sections as header h tells (h is the blob's own
 * header, except in a view). */
static void bind_with(struct bm25 *b, const struct bm25_hdr *h, const unsigned char *blob,
                      size_t len)
{
	struct layout l;

	layout_of(h->ndocs, h->nslots, h->nterms, h->npostings, h->strbytes, h->nwords, &l);
	b->blob = blob;
	b->len = len;
	b->hdr = h;
	b->doclen = (const uint32_t *)(blob + l.doclen);
	b->slots = (const uint32_t *)(blob + l.slots);
	b->terms = (const struct bm25_term *)(blob + l.terms);
	b->posts = (const struct bm25_post *)(blob + l.posts);
	b->strs = (const char *)(blob + l.strs);
	b->word_off = h->nwords > 0 ? (const uint64_t *)(blob + l.word_off) : NULL;
	b->words = h->nwords > 0 ? (const uint32_t *)(blob + l.words) : NULL;
}

static void bind(struct bm25 *b, const unsigned char *blob, size_t len)
{
	bind_with(b, (const struct bm25_hdr *)blob, blob, len);
}

/* Term index of s, or -1. */
static long term_find(const struct bm25 *b, const char *s, size_t n)
{
	uint32_t mask = b->hdr->nslots - 1;

	if (b->hdr->nslots == 0)
		return -1;
	for (uint32_t i = (uint32_t)term_hash(s, n) & mask;; i = (i + 1) & mask) {
		uint32_t v = b->slots[i];
		if (v == 0)
			return -1;
		const struct bm25_term *t = &b->terms[v - 1];
		if (t->str_len == n && memcmp(b->strs + t->str_off, s, n) == 0)
			return (long)(v - 1);
	}
}

/* ---- build ---------------------------------------------------------------------- */

/* The growing state of a build: a term table and, per document, its
 * distinct terms with counts (docs in order, so postings come out sorted). */
struct builder {
	char *strs; size_t strbytes, strcap;
	struct bm25_term *terms; uint64_t *hashes; size_t nterms, termcap;
	uint32_t *map; size_t mapcap;                /* term + 1, or 0 */
	struct pair { uint32_t term, tf; } *pairs; size_t npairs, paircap;
	uint32_t *doclen;
	uint64_t total_len;
	bool keep_words;
	uint32_t *words; size_t wordcap;             /* every document's terms, in order */
	/* Per term: the last document it was counted in (+ 1) and its count
	 * there, so a document's distinct terms are counted in one pass. */
	struct term_count { uint32_t doc, tf; } *counts; size_t countcap;
};

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(p, c * elem);
	if (q != NULL) {
		pages_populate((char *)q + *cap * elem, (c - *cap) * elem);
		*cap = c;
	}
	return q;
}

static int map_rehash(struct builder *bd, size_t cap)
{
	uint32_t *m = calloc(cap, sizeof *m);
	if (m == NULL)
		return -1;
	for (size_t t = 0; t < bd->nterms; t++) {
		size_t i = bd->hashes[t] & (cap - 1);
		while (m[i] != 0)
			i = (i + 1) & (cap - 1);
		m[i] = (uint32_t)(t + 1);
	}
	free(bd->map);
	bd->map = m;
	bd->mapcap = cap;
	return 0;
}

/* Term id of tok, added when new; -1 on allocation failure. */
static long builder_term(struct builder *bd, const char *tok, size_t n)
{
	uint64_t h = term_hash(tok, n);
	size_t i = h & (bd->mapcap - 1);
	void *p;

	for (; bd->map[i] != 0; i = (i + 1) & (bd->mapcap - 1)) {
		const struct bm25_term *t = &bd->terms[bd->map[i] - 1];
		if (t->str_len == n && memcmp(bd->strs + t->str_off, tok, n) == 0)
			return (long)(bd->map[i] - 1);
	}
	if (bd->nterms >= UINT32_MAX - 1 || bd->strbytes + n > UINT32_MAX)
		return -1;
	size_t tc = bd->termcap;
	if ((p = grow(bd->terms, &tc, bd->nterms + 1, sizeof *bd->terms)) == NULL)
		return -1;
	bd->terms = p;
	tc = bd->termcap;
	if ((p = grow(bd->hashes, &tc, bd->nterms + 1, sizeof *bd->hashes)) == NULL)
		return -1;
	bd->hashes = p;
	bd->termcap = tc;
	if ((p = grow(bd->strs, &bd->strcap, bd->strbytes + n, 1)) == NULL)
		return -1;
	bd->strs = p;
	memcpy(bd->strs + bd->strbytes, tok, n);
	bd->terms[bd->nterms] = (struct bm25_term){ 0, (uint32_t)bd->strbytes, (uint32_t)n, 0, 0 };
	bd->hashes[bd->nterms] = h;
	bd->strbytes += n;
	bd->map[i] = (uint32_t)(bd->nterms + 1);
	bd->nterms++;
	if (bd->nterms * 2 > bd->mapcap && map_rehash(bd, bd->mapcap * 2) != 0)
		return -1;
	return (long)(bd->nterms - 1);
}

/* Document d is the nids term ids at ids, in text order: note its length
 * (and its words), then append its distinct terms with counts. */
static int builder_count(struct builder *bd, size_t d, const uint32_t *ids, size_t nids)
{
	void *p;

	if (nids > UINT32_MAX)
		return -1;
	bd->doclen[d] = (uint32_t)nids;
	if (bd->keep_words && nids > 0) {     /* grow() of nothing gives NULL */
		if ((p = grow(bd->words, &bd->wordcap, bd->total_len + nids, sizeof *bd->words)) == NULL)
			return -1;
		bd->words = p;
		memcpy(bd->words + bd->total_len, ids, nids * sizeof *ids);
	}
	bd->total_len += nids;
	if (bd->countcap < bd->nterms) {
		size_t was = bd->countcap;

		if ((p = grow(bd->counts, &bd->countcap, bd->nterms, sizeof *bd->counts)) == NULL)
			return -1;
		bd->counts = p;
		memset(bd->counts + was, 0, (bd->countcap - was) * sizeof *bd->counts);
	}
	/* The distinct terms, in order of first use (postings need no order
	 * within a document), then their counts. */
	size_t first = bd->npairs;
	for (size_t i = 0; i < nids; i++) {
		struct term_count *c = &bd->counts[ids[i]];

		if (c->doc == (uint32_t)d + 1) {
			c->tf++;
			continue;
		}
		*c = (struct term_count){ (uint32_t)d + 1, 1 };
		if ((p = grow(bd->pairs, &bd->paircap, bd->npairs + 1, sizeof *bd->pairs)) == NULL)
			return -1;
		bd->pairs = p;
		bd->pairs[bd->npairs++] = (struct pair){ ids[i], 0 };
		bd->terms[ids[i]].df++;
	}
	for (size_t i = first; i < bd->npairs; i++)
		bd->pairs[i].tf = bd->counts[bd->pairs[i].term].tf;
	return 0;
}

/* Tokenise document d into its term ids, then count them. */
static int builder_doc(struct builder *bd, size_t d, const char *text, size_t len,
                       uint32_t **ids, size_t *idcap)
{
	struct tok_iter it;
	char tok[TOKEN_MAX];
	size_t n, nids = 0;
	void *p;

	tok_init(&it, text, len);
	while ((n = tok_next(&it, tok)) > 0) {
		long t = builder_term(bd, tok, tok_stem(tok, n));
		if (t < 0 || (p = grow(*ids, idcap, nids + 1, sizeof **ids)) == NULL)
			return -1;
		*ids = p;
		(*ids)[nids++] = (uint32_t)t;
	}
	return builder_count(bd, d, *ids, nids);
}

static void builder_free(struct builder *bd)
{
	free(bd->strs);
	free(bd->terms);
	free(bd->hashes);
	free(bd->map);
	free(bd->pairs);
	free(bd->doclen);
	free(bd->words);
	free(bd->counts);
}

/* Lay the builder out as the blob. */
static unsigned char *builder_blob(struct builder *bd, size_t n, const size_t *pair_start,
                                   size_t *lenp)
{
	size_t nslots = 16;
	struct layout l;

	while (nslots < bd->nterms * 2 + 1)
		nslots *= 2;
	uint64_t nwords = bd->keep_words ? bd->total_len : 0;
	if (layout_of(n, nslots, bd->nterms, bd->npairs, bd->strbytes, nwords, &l) != 0)
		return NULL;
	unsigned char *blob = calloc(1, l.total ? l.total : 1);
	if (blob == NULL)
		return NULL;
	pages_populate(blob, l.total);
	struct bm25_hdr *h = (struct bm25_hdr *)blob;
	*h = (struct bm25_hdr){ BM25_MAGIC, (uint32_t)n, (uint32_t)bd->nterms,
	                        (uint32_t)nslots, bd->npairs, bd->strbytes, bd->total_len,
	                        nwords };
	memcpy(blob + l.doclen, bd->doclen, n * 4);
	uint32_t *slots = (uint32_t *)(blob + l.slots);
	struct bm25_term *terms = (struct bm25_term *)(blob + l.terms);
	struct bm25_post *posts = (struct bm25_post *)(blob + l.posts);
	uint64_t off = 0;
	double avgdl = n > 0 && bd->total_len > 0 ? (double)bd->total_len / (double)n : 1.0;
	for (size_t t = 0; t < bd->nterms; t++) {
		size_t i = bd->hashes[t] & (nslots - 1);
		while (slots[i] != 0)
			i = (i + 1) & (nslots - 1);
		slots[i] = (uint32_t)(t + 1);
		terms[t] = bd->terms[t];
		terms[t].post_off = off;
		terms[t].idf = (float)log(1.0 + ((double)n - terms[t].df + 0.5) / (terms[t].df + 0.5));
		off += terms[t].df;
	}
	/* Counting sort by term; documents in order keep each list sorted. */
	uint64_t *fill = calloc(bd->nterms ? bd->nterms : 1, sizeof *fill);
	if (fill == NULL) {
		free(blob);
		return NULL;
	}
	for (size_t d = 0; d < n; d++)
		for (size_t i = pair_start[d]; i < pair_start[d + 1]; i++) {
			const struct pair *pp = &bd->pairs[i];
			double tf = pp->tf, norm = BM25_K1 * (1.0 - BM25_B + BM25_B * bd->doclen[d] / avgdl);
			posts[terms[pp->term].post_off + fill[pp->term]++] =
				(struct bm25_post){ (uint32_t)d, (float)(tf * (BM25_K1 + 1.0) / (tf + norm)) };
		}
	free(fill);
	if (bd->strbytes > 0)
		memcpy(blob + l.strs, bd->strs, bd->strbytes);
	if (nwords > 0) {
		uint64_t *woff = (uint64_t *)(blob + l.word_off);
		woff[0] = 0;
		for (size_t d = 0; d < n; d++)
			woff[d + 1] = woff[d] + bd->doclen[d];
		memcpy(blob + l.words, bd->words, nwords * sizeof *bd->words);
	}
	*lenp = l.total;
	return blob;
}

/* The index of the builder's n documents, whose pairs start at
 * pair_start[0..n] (NULL when out of memory); frees the builder and
 * pair_start either way. */
static struct bm25 *builder_finish(struct builder *bd, size_t n, size_t *pair_start)
{
	size_t len = 0;
	unsigned char *blob = builder_blob(bd, n, pair_start, &len);
	struct bm25 *b = blob != NULL ? calloc(1, sizeof *b) : NULL;

	if (b != NULL) {
		b->owned = blob;
		bind(b, blob, len);
	} else {
		free(blob);
	}
	free(pair_start);
	builder_free(bd);
	return b;
}

struct bm25 *bm25_build(const char *const *texts, const size_t *lens, size_t n,
                        bool keep_words)
{
	struct builder bd = { .keep_words = keep_words };
	size_t *pair_start = NULL, idcap = 0;
	uint32_t *ids = NULL;

	if (n >= UINT32_MAX)
		return NULL;
	bd.doclen = calloc(n ? n : 1, sizeof *bd.doclen);
	pair_start = calloc(n + 1, sizeof *pair_start);
	if (bd.doclen == NULL || pair_start == NULL || map_rehash(&bd, 1024) != 0)
		goto fail;
	for (size_t d = 0; d < n; d++) {
		pair_start[d] = bd.npairs;
		if (builder_doc(&bd, d, texts[d] ? texts[d] : "", texts[d] ? lens[d] : 0,
		                &ids, &idcap) != 0)
			goto fail;
	}
	free(ids);
	pair_start[n] = bd.npairs;
	return builder_finish(&bd, n, pair_start);
fail:
	free(ids);
	free(pair_start);
	builder_free(&bd);
	return NULL;
}

/* The rows' index without their words: what bm25_build_groups makes when
 * every group is one row, byte for byte (the same terms in the same order,
 * counts, lengths and so impacts), without counting every word again.  A
 * view: its own header, whose layout ends before the words, over the
 * rows' blob, so no byte of the postings is copied. */
static struct bm25 *rows_without_words(const struct bm25 *rows)
{
	const struct bm25_hdr *rh = rows->hdr;
	struct bm25 *b;
	struct layout l;

	if (layout_of(rh->ndocs, rh->nslots, rh->nterms, rh->npostings, rh->strbytes, 0,
	              &l) != 0 || (b = calloc(1, sizeof *b)) == NULL)
		return NULL;
	b->own_hdr = *rh;
	b->own_hdr.nwords = 0;
	bind_with(b, &b->own_hdr, rows->blob, l.total);
	return b;
}

struct bm25 *bm25_build_groups(const struct bm25 *rows, const uint32_t *first,
                               size_t ngroups)
{
	const struct bm25_hdr *rh = rows->hdr;
	size_t nterms = rh->nterms ? rh->nterms : 1;
	struct builder bd = { 0 };
	size_t *pair_start = NULL;
	bool single = true;

	/* rows without words: built without them, or with none to keep */
	if ((rows->words == NULL && rh->total_len > 0) || ngroups >= UINT32_MAX ||
	    first[0] != 0 || first[ngroups] != rh->ndocs)
		return NULL;
	for (size_t g = 0; g < ngroups; g++) {
		if (first[g] > first[g + 1])
			return NULL;
		single = single && first[g + 1] == first[g] + 1;
	}
	if (single)
		return rows_without_words(rows);
	/* The rows' terms, in their order, with nothing counted yet. */
	bd.nterms = bd.termcap = rh->nterms;
	bd.strbytes = bd.strcap = rh->strbytes;
	bd.strs = malloc(rh->strbytes ? rh->strbytes : 1);
	bd.terms = malloc(nterms * sizeof *bd.terms);
	bd.hashes = malloc(nterms * sizeof *bd.hashes);
	bd.doclen = calloc(ngroups ? ngroups : 1, sizeof *bd.doclen);
	pair_start = calloc(ngroups + 1, sizeof *pair_start);
	if (bd.strs == NULL || bd.terms == NULL || bd.hashes == NULL || bd.doclen == NULL ||
	    pair_start == NULL)
		goto fail;
	memcpy(bd.strs, rows->strs, rh->strbytes);
	for (size_t t = 0; t < rh->nterms; t++) {
		const struct bm25_term *rt = &rows->terms[t];

		bd.terms[t] = (struct bm25_term){ 0, rt->str_off, rt->str_len, 0, 0 };
		bd.hashes[t] = term_hash(rows->strs + rt->str_off, rt->str_len);
	}
	/* A group's words are its rows' words, one after the other. */
	for (size_t g = 0; g < ngroups; g++) {
		uint64_t from = 0, to = 0;

		if (rows->words != NULL)
			from = rows->word_off[first[g]], to = rows->word_off[first[g + 1]];
		pair_start[g] = bd.npairs;
		if (builder_count(&bd, g, rows->words != NULL ? rows->words + from : NULL,
		                  (size_t)(to - from)) != 0)
			goto fail;
	}
	pair_start[ngroups] = bd.npairs;
	return builder_finish(&bd, ngroups, pair_start);
fail:
	free(pair_start);
	builder_free(&bd);
	return NULL;
}

void bm25_free(struct bm25 *b)
{
	if (b == NULL)
		return;
	free(b->owned);
	free(b);
}

size_t bm25_count(const struct bm25 *b)
{
	return b->hdr->ndocs;
}

long bm25_term_id(const struct bm25 *b, const char *stem, size_t n)
{
	return term_find(b, stem, n);
}

float bm25_idf(const struct bm25 *b, uint32_t term)
{
	return b->terms[term].idf;
}

const struct bm25_post *bm25_postings(const struct bm25 *b, uint32_t term, size_t *n)
{
	*n = b->terms[term].df;
	return b->posts + b->terms[term].post_off;
}

float bm25_impact(const struct bm25 *b, uint32_t term, uint32_t doc)
{
	size_t n, lo = 0;
	const struct bm25_post *p = bm25_postings(b, term, &n);

	while (n > 0) {                          /* the first posting with p.doc >= doc */
		size_t half = n / 2;
		if (p[lo + half].doc < doc) {
			lo += half + 1;
			n -= half + 1;
		} else {
			n = half;
		}
	}
	return lo < b->terms[term].df && p[lo].doc == doc ? p[lo].impact : 0.0f;
}

const uint32_t *bm25_words(const struct bm25 *b, size_t doc, size_t *n)
{
	if (b->words == NULL || doc >= b->hdr->ndocs) {
		*n = 0;
		return NULL;
	}
	*n = b->word_off[doc + 1] - b->word_off[doc];
	return b->words + b->word_off[doc];
}

/* ---- serialised form --------------------------------------------------------------- */

size_t bm25_serialized_size(const struct bm25 *b)
{
	return b->len;
}

void bm25_serialized_parts(const struct bm25 *b, struct bm25_part part[2])
{
	part[0] = (struct bm25_part){ b->hdr, sizeof *b->hdr };
	part[1] = (struct bm25_part){ b->blob + sizeof *b->hdr, b->len - sizeof *b->hdr };
}

void bm25_serialize(const struct bm25 *b, void *dst)
{
	struct bm25_part part[2];

	bm25_serialized_parts(b, part);
	memcpy(dst, part[0].p, part[0].len);
	memcpy((unsigned char *)dst + part[0].len, part[1].p, part[1].len);
}

/* Every count, offset and index checked, so a query never reads outside
 * the blob whatever its bytes are. */
struct bm25 *bm25_load(const void *p, size_t len)
{
	const unsigned char *blob = p;
	struct bm25_hdr h;
	struct layout l;
	struct bm25 *b;

	if (((uintptr_t)p & 7) != 0 || len < sizeof h)
		return NULL;
	memcpy(&h, blob, sizeof h);
	if (h.magic != BM25_MAGIC || h.nslots == 0 || (h.nslots & (h.nslots - 1)) != 0 ||
	    h.nterms >= h.nslots || h.npostings > len || h.strbytes > len ||
	    (h.nwords != 0 && h.nwords != h.total_len) ||
	    layout_of(h.ndocs, h.nslots, h.nterms, h.npostings, h.strbytes, h.nwords, &l) != 0 ||
	    l.total != len)
		return NULL;
	const uint32_t *slots = (const uint32_t *)(blob + l.slots);
	const struct bm25_term *terms = (const struct bm25_term *)(blob + l.terms);
	const struct bm25_post *posts = (const struct bm25_post *)(blob + l.posts);
	size_t empty = 0;
	for (size_t i = 0; i < h.nslots; i++) {
		if (slots[i] > h.nterms)
			return NULL;
		empty += slots[i] == 0;
	}
	if (empty == 0)
		return NULL;                     /* a probe must be able to stop */
	for (size_t t = 0; t < h.nterms; t++) {
		const struct bm25_term *tm = &terms[t];
		if (tm->str_len == 0 || tm->str_len > TOKEN_MAX ||
		    (uint64_t)tm->str_off + tm->str_len > h.strbytes ||
		    tm->post_off > h.npostings || tm->df > h.npostings - tm->post_off ||
		    !(tm->idf > 0.0f && tm->idf < 64.0f))
			return NULL;
	}
	for (size_t i = 0; i < h.npostings; i++)
		if (posts[i].doc >= h.ndocs || !(posts[i].impact > 0.0f &&
		                                  posts[i].impact <= BM25_K1 + 1.0))
			return NULL;
	if (h.nwords > 0) {
		const uint32_t *doclen = (const uint32_t *)(blob + l.doclen);
		const uint64_t *off = (const uint64_t *)(blob + l.word_off);
		const uint32_t *words = (const uint32_t *)(blob + l.words);
		if (off[0] != 0)
			return NULL;
		for (size_t d = 0; d < h.ndocs; d++)
			if (off[d + 1] != off[d] + doclen[d])
				return NULL;
		if (off[h.ndocs] != h.nwords)
			return NULL;
		for (size_t i = 0; i < h.nwords; i++)
			if (words[i] >= h.nterms)
				return NULL;
	}
	if ((b = calloc(1, sizeof *b)) == NULL)
		return NULL;
	bind(b, blob, len);
	return b;
}

/* ---- query --------------------------------------------------------------------------- */

int bm25_score(const struct bm25 *b, const char *query, size_t qlen,
               const uint8_t *keep, struct bm25_scores *out)
{
	const double N = b->hdr->ndocs;
	long qterms[BM25_MAX_QUERY_TERMS];
	size_t nq = 0, n;
	struct tok_iter it;
	char tok[TOKEN_MAX];

	memset(out, 0, sizeof *out);
	tok_init(&it, query, qlen);
	while (nq < BM25_MAX_QUERY_TERMS && (n = tok_next(&it, tok)) > 0) {
		long t = term_find(b, tok, tok_stem(tok, n));
		bool seen = false;
		for (size_t i = 0; i < nq && !seen; i++)
			seen = qterms[i] == t;
		if (t >= 0 && !seen)
			qterms[nq++] = t;
	}
	out->score = calloc(N > 0 ? N : 1, sizeof *out->score);
	out->touched = malloc((N > 0 ? N : 1) * sizeof *out->touched);
	if (out->score == NULL || out->touched == NULL) {
		bm25_scores_free(out);
		return -1;
	}
	for (size_t q = 0; q < nq; q++) {
		const struct bm25_term *t = &b->terms[qterms[q]];

		out->perfect += t->idf * (BM25_K1 + 1.0);
		for (uint64_t i = t->post_off; i < t->post_off + t->df; i++) {
			const struct bm25_post *p = &b->posts[i];
			if (keep != NULL && !keep[p->doc])
				continue;
			if (out->score[p->doc] == 0.0f)
				out->touched[out->ntouched++] = p->doc;
			out->score[p->doc] += t->idf * p->impact;
		}
	}
	return 0;
}

void bm25_scores_free(struct bm25_scores *s)
{
	free(s->score);
	free(s->touched);
	memset(s, 0, sizeof *s);
}

size_t bm25_topk(const struct bm25 *b, const char *query, size_t qlen,
                 const uint8_t *keep, size_t k, struct vec_hit *out)
{
	struct bm25_scores s;
	struct vec_hit *h;
	size_t n = 0;

	if (k == 0 || b->hdr->ndocs == 0 || bm25_score(b, query, qlen, keep, &s) != 0)
		return 0;
	if ((h = malloc((s.ntouched ? s.ntouched : 1) * sizeof *h)) != NULL) {
		for (size_t i = 0; i < s.ntouched; i++)
			h[i] = (struct vec_hit){ s.touched[i], s.score[s.touched[i]] };
		n = vec_hits_best(VEC_DOT, h, s.ntouched, k);
		memcpy(out, h, n * sizeof *out);
		free(h);
	}
	bm25_scores_free(&s);
	return n;
}
