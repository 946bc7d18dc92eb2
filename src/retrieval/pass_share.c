/* pass_share.c - the board of shared passes (see pass_share.h).
 *
 * A slot goes FREE -> POSTED (a worker's question) -> TAKEN (a pass has
 * it) -> DONE (its hits written) -> FREE (its worker copied them).  All
 * of it is read and written under the board's lock, which no pass holds:
 * a pass copies its questions out when it takes them and writes each
 * result back only into the slot it took (the same ticket), so a
 * question withdrawn meanwhile, or its slot posted again, loses nothing.
 *
 * A waiting worker sleeps on its own slot's wake word, and is woken alone:
 * when its result is written, or when it is to lead the file's next pass
 * (the oldest question posted during the pass that just ended).  A
 * broadcast would wake every waiter at the end of each pass and have them
 * queue on the lock one after another: at 16 clients that was three wakes
 * between workers a question, most of them for nothing. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "retrieval/pass_share.h"
#include "retrieval/vec_codes.h"
#include "util/config.h"
#include "util/shm.h"
#include "util/test_hooks.h"
#include "util/timeutil.h"

enum slot_state { SLOT_FREE, SLOT_POSTED, SLOT_TAKEN, SLOT_DONE };

struct slot {
	enum slot_state state;
	pid_t owner;                     /* the worker waiting for the result */
	pid_t taker;                     /* TAKEN: the worker whose pass has it */
	unsigned long long ticket;       /* new at each post */
	uint32_t wake;                   /* changed when owner is to look (shm_sleep) */
	struct rindex_file file;
	enum vec_metric m;
	size_t dim, k, got;
	float qnorm;
	float q[PASS_DIM_MAX];
	struct vec_hit hits[PASS_K_MAX];
};

struct board {
	pthread_mutex_t lock;
	unsigned long long tickets, passes, questions, led_on_tick;
	struct slot slot[PASS_SLOTS];
};

static struct board *board;

int pass_share_init(void)
{
	struct board *b;

	if (board != NULL)
		return 0;
	if ((b = shm_map(sizeof *b)) == NULL)
		return -1;
	if (shm_mutex_init(&b->lock) != 0) {
		errno = EINVAL;
		return -1;
	}
	board = b;
	return 0;
}

/* A zombie still counts as there: its parent reaps it within a tick. */
static bool gone(pid_t pid)
{
	return kill(pid, 0) != 0 && errno == ESRCH;
}

/* Drop the slots of workers that are gone, and post again the questions
 * taken by passes whose workers are gone (their workers woken to lead
 * them: rare, so under the lock).  Under the lock. */
static void reap(void)
{
	for (size_t i = 0; i < PASS_SLOTS; i++) {
		struct slot *s = &board->slot[i];

		if (s->state == SLOT_FREE)
			continue;
		if (gone(s->owner)) {
			s->state = SLOT_FREE;
		} else if (s->state == SLOT_TAKEN && gone(s->taker)) {
			s->state = SLOT_POSTED;
			s->wake++;
			shm_wake(&s->wake);
		}
	}
}

static struct slot *free_slot(void)
{
	for (size_t i = 0; i < PASS_SLOTS; i++)
		if (board->slot[i].state == SLOT_FREE)
			return &board->slot[i];
	return NULL;
}

/* Whether a pass over file runs now. */
static bool passing(const struct rindex_file *file)
{
	for (size_t i = 0; i < PASS_SLOTS; i++)
		if (board->slot[i].state == SLOT_TAKEN &&
		    rindex_file_same(&board->slot[i].file, file))
			return true;
	return false;
}

/* This process's copies of a pass's questions and results: a worker is in
 * one pass at a time. */
static struct taken {
	struct slot *slot;
	unsigned long long ticket;
	float q[PASS_DIM_MAX];
	struct vec_hit hits[PASS_K_MAX];
} taken[PASS_SLOTS];

/* Take slot s into this process's pass as its n-th question. */
static void take(struct slot *s, size_t n, pid_t me, struct vec_question *vq)
{
	s->state = SLOT_TAKEN;
	s->taker = me;
	taken[n].slot = s;
	taken[n].ticket = s->ticket;
	memcpy(taken[n].q, s->q, s->dim * sizeof *s->q);
	vq[n] = (struct vec_question){ s->m, taken[n].q, s->qnorm, NULL, s->k, taken[n].hits,
	                               0, 0 };
}

/* Run one pass over ix for own, which is posted, and every question posted
 * for the same file.  Called and returns with the lock held; the pass
 * itself runs without it.  The slots whose workers are to be woken once
 * the lock is released go to wake[0..*nwake). */
static void lead(const struct config *cfg, const struct rindex *ix, struct slot *own,
                 struct slot **wake, size_t *nwake)
{
	struct vec_question vq[PASS_SLOTS];
	size_t n = 0, dim = rindex_dim(ix);
	pid_t me = getpid();

	take(own, n++, me, vq);           /* the file's pass is this one from now */
#ifdef SLUICE_TEST_HOOKS
	/* The test hook pauses twice: while other questions come, so that a
	 * test knows this pass takes them, and with them taken. */
	if (cfg->rag_test_pass_pause_ms > 0) {
		shm_mutex_unlock(&board->lock);
		test_hook_pause(cfg->rag_test_pass_pause_ms);
		shm_mutex_lock(&board->lock);
	}
#endif
	for (size_t i = 0; i < PASS_SLOTS; i++) {
		struct slot *s = &board->slot[i];

		if (s->state == SLOT_POSTED && s->dim == dim &&
		    rindex_file_same(&s->file, rindex_file(ix)))
			take(s, n++, me, vq);
	}
	shm_mutex_unlock(&board->lock);
	TEST_HOOK_PAUSE(cfg, rag_test_pass_pause_ms);
	(void)cfg;
	vec_topk_coded_parts(VEC_KERNEL_AUTO, vq, n, rindex_vectors(ix), rindex_norms(ix),
	                     rindex_codes(ix), rindex_count(ix), dim,
	                     (size_t)sysconf(_SC_NPROCESSORS_ONLN));
	shm_mutex_lock(&board->lock);
	for (size_t j = 0; j < n; j++) {
		struct slot *s = taken[j].slot;

		if (s->state != SLOT_TAKEN || s->ticket != taken[j].ticket || s->taker != me)
			continue;             /* withdrawn, or taken again after a reap */
		memcpy(s->hits, taken[j].hits, vq[j].got * sizeof *s->hits);
		s->got = vq[j].got;
		s->state = SLOT_DONE;
		if (s != own) {
			s->wake++;
			wake[(*nwake)++] = s;
		}
	}
	board->passes++;
	board->questions += n;
	/* The oldest question posted during the pass leads the next one. */
	struct slot *next = NULL;

	for (size_t i = 0; i < PASS_SLOTS; i++) {
		struct slot *s = &board->slot[i];

		if (s->state == SLOT_POSTED && rindex_file_same(&s->file, rindex_file(ix)) &&
		    (next == NULL || s->ticket < next->ticket))
			next = s;
	}
	if (next != NULL) {
		next->wake++;
		wake[(*nwake)++] = next;
	}
}

/* Sleep until me's worker is woken or a tick passes, the lock released
 * meanwhile.  false on the tick. */
static bool sleep_on(struct slot *me)
{
	uint32_t seen = me->wake;

	shm_mutex_unlock(&board->lock);
	shm_sleep(&me->wake, seen, PASS_TICK_MS);
	shm_mutex_lock(&board->lock);
	return me->wake != seen;
}

bool pass_share_rank(const struct config *cfg, const struct rindex *ix, enum vec_metric m,
                     const float *q, size_t k, struct vec_hit *out, size_t *got)
{
	size_t dim = rindex_dim(ix);
	double deadline = time_mono_ms() + PASS_WAIT_MAX_MS;
	unsigned long long ticket;
	struct slot *me, *wake[PASS_SLOTS];
	size_t nwake = 0;
	bool ok = false, ticked = false;

	if (board == NULL || dim == 0 || dim > PASS_DIM_MAX || k == 0 || k > PASS_K_MAX)
		return false;
	shm_mutex_lock(&board->lock);
	if ((me = free_slot()) == NULL) {
		reap();
		me = free_slot();
	}
	if (me == NULL) {
		shm_mutex_unlock(&board->lock);
		return false;
	}
	me->state = SLOT_POSTED;
	me->owner = getpid();
	me->ticket = ticket = ++board->tickets;
	me->file = *rindex_file(ix);
	me->m = m;
	me->dim = dim;
	me->k = k;
	me->qnorm = vec_norm(q, dim);
	memcpy(me->q, q, dim * sizeof *q);
	/* Only this process frees its slot while it lives: the ticket checks
	 * that it is still its own all the same. */
	while (me->ticket == ticket) {
		if (me->state == SLOT_DONE) {
			memcpy(out, me->hits, me->got * sizeof *out);
			*got = me->got;
			me->state = SLOT_FREE;
			ok = true;
			break;
		}
		if (me->state == SLOT_POSTED && !passing(&me->file)) {
			board->led_on_tick += ticked;
			lead(cfg, ix, me, wake, &nwake);
			continue;
		}
		if (time_mono_ms() >= deadline) {
			me->state = SLOT_FREE;        /* ranked alone: a late pass skips it */
			break;
		}
		if ((ticked = !sleep_on(me)))
			reap();
	}
	shm_mutex_unlock(&board->lock);
	for (size_t i = 0; i < nwake; i++)
		shm_wake(&wake[i]->wake);
	return ok;
}

size_t pass_share_stats(struct pass_share_stats *st, long *passing_pids, size_t max)
{
	size_t n = 0;

	memset(st, 0, sizeof *st);
	if (board == NULL)
		return 0;
	shm_mutex_lock(&board->lock);
	st->passes = board->passes;
	st->questions = board->questions;
	st->led_on_tick = board->led_on_tick;
	for (size_t i = 0; i < PASS_SLOTS; i++) {
		const struct slot *s = &board->slot[i];
		size_t j = 0;

		st->posted += s->state == SLOT_POSTED;
		st->taken += s->state == SLOT_TAKEN;
		if (s->state != SLOT_TAKEN)
			continue;
		while (j < n && passing_pids[j] != (long)s->taker)
			j++;
		if (j == n && n < max)
			passing_pids[n++] = (long)s->taker;
	}
	shm_mutex_unlock(&board->lock);
	return n;
}
