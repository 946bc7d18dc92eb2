/* mmr.h - maximal marginal relevance. */
#ifndef SLUICE_MMR_H
#define SLUICE_MMR_H

#include <stddef.h>

#include "retrieval/vec.h"

/* Choose top_n of the ncand candidate rows (indices into base) by MMR with
 * cosine similarity: the first pick is the candidate most similar to q; each
 * next pick maximises lambda*cos(q,d) - (1-lambda)*max cos(d, chosen).
 * Ties go to the earlier candidate.  out[i] keeps the candidate's own score
 * (cand[j].score), so the caller reports the metric's value.  Returns the
 * number written (min(top_n, ncand)). */
size_t mmr_select(const float *q, float qnorm, const float *base, const float *norms, size_t dim,
                  const struct vec_hit *cand, size_t ncand, double lambda_mult,
                  size_t top_n, struct vec_hit *out);

#endif
