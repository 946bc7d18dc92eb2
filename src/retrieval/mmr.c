/* mmr.c - maximal marginal relevance (Carbonell and Goldstein, 1998).
 *
 * The usual definition, as the common Python wrappers compute it: the first
 * pick is the candidate most similar to the query, whatever lambda is; each
 * next pick maximises
 *
 *     lambda * cos(q, d) - (1 - lambda) * max over chosen c of cos(d, c)
 *
 * so lambda = 1 returns the candidates by relevance and lambda = 0 each
 * time the one least like anything chosen.  The redundancy term is kept per
 * candidate and updated with each pick: O(top_n * ncand * dim). */
#include <stdbool.h>
#include <stdlib.h>

#include "retrieval/mmr.h"

size_t mmr_select(const float *q, float qnorm, const float *base, const float *norms, size_t dim,
                  const struct vec_hit *cand, size_t ncand, double lambda_mult,
                  size_t top_n, struct vec_hit *out)
{
	double *rel = NULL, *redund = NULL;
	bool *taken = NULL;
	size_t n = 0;

	if (top_n > ncand)
		top_n = ncand;
	if (top_n == 0)
		return 0;
	if (lambda_mult < 0.0)
		lambda_mult = 0.0;
	if (lambda_mult > 1.0)
		lambda_mult = 1.0;
	rel = malloc(ncand * sizeof *rel);
	redund = malloc(ncand * sizeof *redund);
	taken = calloc(ncand, sizeof *taken);
	if (rel == NULL || redund == NULL || taken == NULL)
		goto out;
	for (size_t i = 0; i < ncand; i++) {
		const float *d = base + (size_t)cand[i].row * dim;
		rel[i] = vec_score(VEC_COS, q, qnorm, d, norms[cand[i].row], dim);
		redund[i] = -1.0;                /* below any cosine */
	}
	while (n < top_n) {
		size_t best = ncand;
		double best_v = 0.0;
		for (size_t i = 0; i < ncand; i++) {
			if (taken[i])
				continue;
			double v = n == 0 ? rel[i]
			                  : lambda_mult * rel[i] - (1.0 - lambda_mult) * redund[i];
			if (best == ncand || v > best_v) {
				best = i;
				best_v = v;
			}
		}
		taken[best] = true;
		out[n++] = cand[best];
		const float *c = base + (size_t)cand[best].row * dim;
		float cn = norms[cand[best].row];
		for (size_t i = 0; i < ncand; i++) {
			if (taken[i])
				continue;
			const float *d = base + (size_t)cand[i].row * dim;
			double s = vec_score(VEC_COS, d, norms[cand[i].row], c, cn, dim);
			if (s > redund[i])
				redund[i] = s;
		}
	}
out:
	free(rel);
	free(redund);
	free(taken);
	return n;
}
