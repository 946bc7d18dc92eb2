/* embed.h - the built-in embedder (no model download).
 *
 * A bag of hashed features, not a language model: see embed.c for what it
 * captures (shared words, word pairs and word pieces, so inflections and
 * compounds match) and what it does not (synonyms, paraphrase). */
#ifndef SLUICE_EMBED_H
#define SLUICE_EMBED_H

#include <stddef.h>

#define EMBED_DIM_DEFAULT 384
#define EMBED_DIM_MAX 4096

/* Deterministic; writes dim floats, L2-normalised (all zero for text with no
 * features).  0, or -1 when dim is 0 or above EMBED_DIM_MAX. */
int embed_builtin(const char *text, size_t len, float *out, size_t dim);

#endif
