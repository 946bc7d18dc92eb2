/* proximity.h - how many of a question's neighbouring words stand close
 * together in a text, on the stems of tokenize.h. */
#ifndef SLUICE_PROXIMITY_H
#define SLUICE_PROXIMITY_H

#include <stddef.h>

#include "retrieval/tokenize.h"

#define PROX_MAX_WORDS 64      /* question words looked at */
#define PROX_WINDOW 3          /* "b" counts within this many words after "a" */

struct prox_query {
	char stem[PROX_MAX_WORDS][TOKEN_MAX];
	size_t len[PROX_MAX_WORDS];
	size_t nstems;                       /* distinct stems */
	struct { unsigned char a, b; } pair[PROX_MAX_WORDS];
	size_t npairs;                       /* neighbouring words, two stems */
};

/* The question's first PROX_MAX_WORDS words. */
void prox_query_init(struct prox_query *q, const char *question, size_t qlen);

/* The share (0..1) of the question's neighbouring word pairs "a b" for
 * which the text has b within PROX_WINDOW words after a; 0 when the
 * question has no such pair. */
double prox_score(const struct prox_query *q, const char *text, size_t len);

#endif
