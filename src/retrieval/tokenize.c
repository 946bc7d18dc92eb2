/* tokenize.c - words for the embedder and BM25 (see tokenize.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <libstemmer.h>

#include "retrieval/tokenize.h"

#define CP_INVALID UINT32_MAX

/* One code point from [p, end): its length (>= 1), with *cp = CP_INVALID
 * for a byte that does not start a well-formed sequence (overlong forms,
 * surrogates and values above U+10FFFF included). */
static size_t utf8_decode(const unsigned char *p, const unsigned char *end,
                          uint32_t *cp)
{
	unsigned c = p[0];
	size_t n;
	uint32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xC2 && c <= 0xDF)
		n = 2, v = c & 0x1F, min = 0x80;
	else if (c >= 0xE0 && c <= 0xEF)
		n = 3, v = c & 0x0F, min = 0x800;
	else if (c >= 0xF0 && c <= 0xF4)
		n = 4, v = c & 0x07, min = 0x10000;
	else
		goto bad;
	if ((size_t)(end - p) < n)
		goto bad;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			goto bad;
		v = (v << 6) | (p[i] & 0x3F);
	}
	if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
		goto bad;
	*cp = v;
	return n;
bad:
	*cp = CP_INVALID;
	return 1;
}

/* Punctuation, symbols and spaces above ASCII: they separate words. */
static bool cp_is_separator(uint32_t cp)
{
	static const struct { uint32_t lo, hi; } seps[] = {
		{ 0x0080, 0x00BF },     /* C1 controls, Latin-1 punctuation */
		{ 0x00D7, 0x00D7 }, { 0x00F7, 0x00F7 },  /* x and divide */
		{ 0x2000, 0x206F },     /* general punctuation, spaces */
		{ 0x2190, 0x2BFF },     /* arrows, maths, boxes, shapes, dingbats */
		{ 0x2E00, 0x2E7F },     /* supplemental punctuation */
		{ 0x3000, 0x303F },     /* CJK symbols and punctuation */
		{ 0xFE30, 0xFE4F },     /* CJK compatibility forms */
		{ 0xFEFF, 0xFEFF },     /* byte order mark */
		{ 0xFF00, 0xFF0F }, { 0xFF1A, 0xFF20 },  /* full-width punctuation */
		{ 0xFF3B, 0xFF40 }, { 0xFF5B, 0xFF65 },
		{ 0x1F000, 0x1FAFF },   /* emoji and pictographs */
	};
	for (size_t i = 0; i < sizeof seps / sizeof seps[0]; i++)
		if (cp >= seps[i].lo && cp <= seps[i].hi)
			return true;
	return false;
}

/* U+00C0..U+00FF and U+0100..U+017F to ASCII; '*' marks the two-letter
 * forms handled in fold_latin(), '-' the separators x and divide. */
static const char latin1_fold[64 + 1] =
	"aaaaaa*ceeeeiiii" "dnooooo-ouuuuy**"
	"aaaaaa*ceeeeiiii" "dnooooo-ouuuuy*y";
static const char latin_ext_a_fold[128 + 1] =
	"aaaaaacccccccc" "dddd" "eeeeeeeeee" "gggggggg" "hhhh" "iiiiiiiiii"
	"**" "jj" "kkk" "llllllllll" "nnnnnnnnn" "oooooo" "**" "rrrrrr"
	"ssssssss" "tttttt" "uuuuuuuuuuuu" "ww" "yyy" "zzzzzz" "s";

/* ASCII for a Latin letter with a known folding, else NULL. */
static const char *fold_latin(uint32_t cp, size_t *len)
{
	static const struct { uint32_t cp; const char *s; } two[] = {
		{ 0x00C6, "ae" }, { 0x00E6, "ae" }, { 0x00DE, "th" }, { 0x00FE, "th" },
		{ 0x00DF, "ss" }, { 0x0132, "ij" }, { 0x0133, "ij" },
		{ 0x0152, "oe" }, { 0x0153, "oe" },
	};
	const char *c = NULL;

	if (cp >= 0xC0 && cp <= 0xFF)
		c = &latin1_fold[cp - 0xC0];
	else if (cp >= 0x100 && cp <= 0x17F)
		c = &latin_ext_a_fold[cp - 0x100];
	if (c == NULL)
		return NULL;
	if (*c == '*') {
		for (size_t i = 0; i < sizeof two / sizeof two[0]; i++)
			if (two[i].cp == cp) {
				*len = 2;
				return two[i].s;
			}
		return NULL;
	}
	*len = 1;
	return c;
}

void tok_init(struct tok_iter *it, const char *text, size_t len)
{
	it->p = text;
	it->end = text + len;
}

size_t tok_next(struct tok_iter *it, char buf[TOKEN_MAX])
{
	static const char lower[] = "abcdefghijklmnopqrstuvwxyz";
	size_t n = 0;
	bool full = false;

	while (it->p < it->end) {
		const unsigned char *p = (const unsigned char *)it->p;
		uint32_t cp;
		size_t cl = utf8_decode(p, (const unsigned char *)it->end, &cp);
		const char *piece = (const char *)p;
		size_t plen = cl;

		if (cp < 0x80) {
			if (cp >= 'A' && cp <= 'Z')
				piece = &lower[cp - 'A'], plen = 1;
			else if (!((cp >= 'a' && cp <= 'z') || (cp >= '0' && cp <= '9')))
				piece = NULL;
		} else if (cp == CP_INVALID || cp_is_separator(cp)) {
			piece = NULL;
		} else {
			size_t flen;
			const char *f = fold_latin(cp, &flen);
			if (f != NULL)
				piece = f, plen = flen;
		}
		it->p += cl;
		if (piece == NULL) {
			if (n > 0)
				return n;
			continue;
		}
		if (!full && n + plen <= TOKEN_MAX) {
			memcpy(buf + n, piece, plen);
			n += plen;
		} else {
			full = true;      /* the rest of a very long word is dropped */
		}
	}
	return n;
}

/* Stems already made, kept by the word's hash in a table of fixed size
 * (a newer word takes its slot): an index build stems every word of
 * every snippet twice (snippets, documents), and most are words seen
 * thousands of times, so this saves most of the stemmer's work in a
 * bounded 800 KB.  Only words of up to STEM_CACHE_WORD bytes: longer ones
 * are rare. */
#define STEM_CACHE_SLOTS 16384
#define STEM_CACHE_WORD 24
struct stem_slot {
	unsigned char len, stem_len;          /* len 0: empty */
	char word[STEM_CACHE_WORD], stem[STEM_CACHE_WORD];
};

static size_t stem_uncached(char buf[TOKEN_MAX], size_t n)
{
	/* One stemmer per process, made on first use, unlocked (see
	 * tokenize.h). */
	static struct sb_stemmer *stemmer;
	const sb_symbol *s;
	int len;

	if (stemmer == NULL && (stemmer = sb_stemmer_new("english", NULL)) == NULL)
		return n;                /* out of memory: the unstemmed word */
	s = sb_stemmer_stem(stemmer, (const sb_symbol *)buf, (int)n);
	if (s == NULL || (len = sb_stemmer_length(stemmer)) <= 0 ||
	    (size_t)len > TOKEN_MAX)
		return n;
	memcpy(buf, s, (size_t)len);
	return (size_t)len;
}

size_t tok_stem(char buf[TOKEN_MAX], size_t n)
{
	static struct stem_slot *cache;       /* made on first use, kept */
	uint32_t h = 2166136261u;              /* FNV-1a */
	struct stem_slot *e;

	if (n == 0 || n > STEM_CACHE_WORD)
		return stem_uncached(buf, n);
	if (cache == NULL && (cache = calloc(STEM_CACHE_SLOTS, sizeof *cache)) == NULL)
		return stem_uncached(buf, n);
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)buf[i]) * 16777619u;
	e = &cache[h & (STEM_CACHE_SLOTS - 1)];
	if (e->len == n && memcmp(e->word, buf, n) == 0) {
		memcpy(buf, e->stem, e->stem_len);
		return e->stem_len;
	}
	char word[STEM_CACHE_WORD];
	size_t len;

	memcpy(word, buf, n);
	if ((len = stem_uncached(buf, n)) > STEM_CACHE_WORD)
		return len;
	e->len = (unsigned char)n;
	e->stem_len = (unsigned char)len;
	memcpy(e->word, word, n);
	memcpy(e->stem, buf, len);
	return len;
}

void tok_words(struct tok_words *tw, const char *text, size_t len)
{
	struct tok_iter it;
	size_t n;

	tw->n = 0;
	tok_init(&it, text, len);
	while (tw->n < TOK_WORDS_MAX && (n = tok_next(&it, tw->w[tw->n])) > 0)
		tw->len[tw->n] = (unsigned char)tok_stem(tw->w[tw->n], n), tw->n++;
}

/* A word of at most 7 bytes as a number: its bytes, then zeros.  Tokens
 * hold no NUL, so two words are equal when their numbers are. */
static uint64_t word_bits(const char *tok, size_t len)
{
	uint64_t w = 0;

	memcpy(&w, tok, len);
	return w;
}

static int cmp_bits(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

bool tok_is_stopword(const char *tok, size_t len)
{
	static const char *const stop[] = {
		"a", "an", "and", "are", "as", "at", "be", "been", "but", "by",
		"can", "do", "for", "from", "had", "has", "have", "he", "her",
		"his", "i", "if", "in", "into", "is", "it", "its", "no", "not",
		"of", "on", "or", "so", "such", "that", "the", "their", "them",
		"then", "there", "these", "they", "this", "to", "was", "we",
		"were", "which", "will", "with", "would", "you",
	};
	enum { NSTOP = sizeof stop / sizeof stop[0] };
	/* Compared as numbers, not strings: every word of every text asks. */
	static uint64_t bits[NSTOP];
	static bool sorted;
	size_t lo = 0, hi = NSTOP;
	uint64_t w;

	if (len == 0 || len >= sizeof w)
		return false;
	if (!sorted) {
		for (size_t i = 0; i < NSTOP; i++)
			bits[i] = word_bits(stop[i], strlen(stop[i]));
		qsort(bits, NSTOP, sizeof bits[0], cmp_bits);
		sorted = true;
	}
	w = word_bits(tok, len);
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (bits[mid] < w)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < NSTOP && bits[lo] == w;
}
