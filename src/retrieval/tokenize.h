/* tokenize.h - the one word tokeniser of retrieval, shared by the built-in
 * embedder and BM25 so that both see the same words.
 *
 * A token is a maximal run of letters and digits.  ASCII is lower-cased;
 * Latin-1 and Latin Extended-A letters are folded to ASCII ("Élan" ->
 * "elan", "straße" -> "strasse", "Łódź" -> "lodz"); other code points at or
 * above U+0080 count as letters (Greek, Cyrillic, CJK, ... kept as they are,
 * not case-folded) except the Unicode punctuation and space blocks listed in
 * tokenize.c.  Invalid UTF-8 bytes separate tokens.  Tokens are cut at
 * TOKEN_MAX bytes, on a code-point boundary.
 *
 * The stemmer, its cache and the stopword table (and the embedder's table
 * of 1 + ln tf) are made on first use and kept per process, unlocked: one
 * thread at a time may tokenise.  Ingestion's preparing thread does while
 * it runs, and the main thread waits for it before it builds an index; the
 * index file's writer tokenises on its helper thread only. */
#ifndef SLUICE_TOKENIZE_H
#define SLUICE_TOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#define TOKEN_MAX 64

struct tok_iter { const char *p, *end; };

void tok_init(struct tok_iter *it, const char *text, size_t len);
/* The next token, folded, into buf (not NUL-terminated); its length, or 0
 * at the end of the text. */
size_t tok_next(struct tok_iter *it, char buf[TOKEN_MAX]);

/* The token's English Snowball stem ("running" -> "run"), in place; its
 * new length.  BM25 indexes and queries stems, so a question finds the
 * word in any of its inflections. */
size_t tok_stem(char buf[TOKEN_MAX], size_t n);

/* A question's first TOK_WORDS_MAX words, stemmed, in order: tokenised
 * once for every part of the ranking that reads them. */
#define TOK_WORDS_MAX 256
struct tok_words {
	size_t n;
	unsigned char len[TOK_WORDS_MAX];
	char w[TOK_WORDS_MAX][TOKEN_MAX];
};
void tok_words(struct tok_words *tw, const char *text, size_t len);

/* A frequent English function word ("the", "of", ...): the embedder gives
 * these little weight. */
bool tok_is_stopword(const char *tok, size_t len);

#endif
