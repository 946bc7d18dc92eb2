/* pool.c - bounded shares of the worker pool (see pool.h).
 *
 * No counter that a dying worker could leave raised: a share is a flag in
 * the taker's own slot, and the number taken is the count of flags.  A
 * taker sets its flag first, then counts; over the limit it clears it
 * again.  Two takers racing for the last share may both back off, never
 * both keep it (sequentially consistent atomics). */
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>

#include "http/pool.h"

struct slot {
	atomic_uchar held[POOL_SHARES];
};

static struct slot *slots;
static int nslots;
static int mine = -1;

int pool_init(int n)
{
	void *p = mmap(NULL, (size_t)n * sizeof *slots, PROT_READ | PROT_WRITE,
	               MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return -1;
	slots = p;
	nslots = n;
	return 0;
}

void pool_slot_set(int slot)
{
	mine = slot >= 0 && slot < nslots ? slot : -1;
}

void pool_slot_clear(int slot)
{
	if (slots == NULL || slot < 0 || slot >= nslots)
		return;
	for (int s = 0; s < POOL_SHARES; s++)
		atomic_store(&slots[slot].held[s], 0);
}

bool pool_take(enum pool_share s, int limit)
{
	int taken = 0;

	if (slots == NULL || mine < 0)
		return true;
	atomic_store(&slots[mine].held[s], 1);
	for (int i = 0; i < nslots; i++)
		taken += atomic_load(&slots[i].held[s]) != 0;
	if (taken <= limit)
		return true;
	atomic_store(&slots[mine].held[s], 0);
	return false;
}

void pool_give(enum pool_share s)
{
	if (slots != NULL && mine >= 0)
		atomic_store(&slots[mine].held[s], 0);
}
