/* pool.h - bounded shares of the worker pool.
 *
 * Some requests are costly for a reason the client controls: a wrong Basic
 * password costs a full PBKDF2 (half a second of a worker) each time.  Such
 * work may occupy at most a bounded number of workers at once; past it the
 * request is refused at once (429), so the rest of the pool keeps
 * answering.  The count lives in memory the serve master maps shared before
 * it forks: each worker marks its own slot, and the master clears the slot
 * of a worker that died holding a share. */
#ifndef SLUICE_POOL_H
#define SLUICE_POOL_H

#include <stdbool.h>

enum pool_share {
	POOL_PASSWORD_CHECKS,           /* PBKDF2 of a Basic password */
	POOL_CONNECTION_TESTS,          /* a source connection being tried */
	POOL_SHARES
};

/* The master, before fork: room for slots workers.  0 or -1. */
int pool_init(int slots);
/* A worker, after fork: the slot it runs in. */
void pool_slot_set(int slot);
/* The master, when slot's worker ended. */
void pool_slot_clear(int slot);

/* Take one of at most limit shares of kind s.  False when limit are taken
 * (or there is no pool: unit tests and admin commands always get one). */
bool pool_take(enum pool_share s, int limit);
void pool_give(enum pool_share s);

#endif
