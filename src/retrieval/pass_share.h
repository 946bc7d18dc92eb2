/* pass_share.h - serve workers' questions ranked in passes they share.
 *
 * A worker's exact vector top-k alone is one pass over an index file's
 * codes, bound by reading them from memory; at 16 clients eight workers
 * each read the same 40 MB at once.  Instead a worker posts its question
 * to a board the serve master maps before it forks, and one of the
 * waiting workers runs a pass for every question posted for that index
 * file, split among the CPUs (vec_topk_coded_parts); the others wait for
 * their results.  One pass of a file runs at a time; passes of different
 * files run side by side.
 *
 * A waiter is woken alone, when its result is written or when it is to
 * lead the file's next pass.  A worker killed in its pass does not wedge
 * the others: a waiter also wakes every PASS_TICK_MS, and a question
 * taken by a process that is gone is posted again (and one posted by a
 * process that is gone is dropped).
 * A waiter whose result has not come within PASS_WAIT_MAX_MS (a passing
 * worker stopped, not killed) withdraws its question and ranks it alone.
 *
 * Not for threads of one process: a worker ranks one question at a time. */
#ifndef SLUICE_PASS_SHARE_H
#define SLUICE_PASS_SHARE_H

#include <stdbool.h>
#include <stddef.h>

#include "retrieval/index.h"
#include "retrieval/vec.h"

#define PASS_SLOTS 64          /* questions on the board at once */
#define PASS_DIM_MAX 1024      /* a question with more dimensions ranks alone */
#define PASS_K_MAX 256         /* so does one with a larger k */
#define PASS_TICK_MS 50
#define PASS_WAIT_MAX_MS 5000

struct config;

/* Map the board (the serve master, before it forks).  0, or -1 (errno):
 * every question is then ranked alone. */
int pass_share_init(void);

/* q's exact top k (at most PASS_K_MAX) by metric m over ix's rows, taken in
 * a shared pass: true with out[0..*got), the hits vec_topk_coded gives for
 * q, in its order.  false when the question was not ranked (no board, too
 * many dimensions, too large a k, a full board, or no result in time): the
 * caller ranks it alone.  cfg is for the test hooks only. */
bool pass_share_rank(const struct config *cfg, const struct rindex *ix, enum vec_metric m,
                     const float *q, size_t k, struct vec_hit *out, size_t *got);

/* For the tests: passes run and questions they ranked since the board was
 * mapped, and of those passes the ones led by a worker whose wait ended
 * on the tick instead of a wake (a worker gone, or a wake lost); questions
 * posted and taken now, and the pids of the workers in a pass now (up to
 * max; the number returned). */
struct pass_share_stats {
	unsigned long long passes, questions, led_on_tick;
	size_t posted, taken;
};
size_t pass_share_stats(struct pass_share_stats *st, long *passing, size_t max);

#endif
