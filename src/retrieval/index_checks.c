/* index_checks.c - the table of index files checked whole (see
 * index_checks.h).  A slot goes FREE -> CHECKING (a worker reads the file)
 * -> GOOD, or back to FREE when the checksum did not match.  GOOD slots are
 * reused least recently used first; CHECKING ones only when their worker
 * is gone. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "retrieval/index_checks.h"
#include "util/proc.h"
#include "util/shm.h"
#include "util/timeutil.h"

#define CHECK_POLL_MS 2

enum check_state { CHECK_FREE, CHECK_CHECKING, CHECK_GOOD };

struct check {
	enum check_state state;
	pid_t pid;                       /* CHECKING: the worker reading it */
	unsigned long long used;         /* the table's clock when last used */
	struct rindex_file file;
};

struct table {
	pthread_mutex_t lock;
	unsigned long long clock;
	struct check slot[INDEX_CHECKS_SLOTS];
};

static struct table *table;

int index_checks_init(void)
{
	struct table *t;

	if (table != NULL)
		return 0;
	if ((t = shm_map(sizeof *t)) == NULL)
		return -1;
	if (shm_mutex_init(&t->lock) != 0) {
		munmap(t, sizeof *t);
		errno = EINVAL;
		return -1;
	}
	table = t;
	return 0;
}

/* Under the lock. */
static struct check *find(const struct rindex_file *f)
{
	for (size_t i = 0; i < INDEX_CHECKS_SLOTS; i++)
		if (table->slot[i].state != CHECK_FREE &&
		    rindex_file_same(&table->slot[i].file, f))
			return &table->slot[i];
	return NULL;
}

/* A free slot, else the least recently used GOOD one; NULL when every slot
 * is being checked.  Under the lock. */
static struct check *slot_for_new(void)
{
	struct check *lru = NULL;

	for (size_t i = 0; i < INDEX_CHECKS_SLOTS; i++) {
		struct check *c = &table->slot[i];

		if (c->state == CHECK_FREE)
			return c;
		if (c->state == CHECK_GOOD && (lru == NULL || c->used < lru->used))
			lru = c;
	}
	return lru;
}

bool index_checks_known(const struct rindex_file *f)
{
	double deadline = time_mono_ms() + INDEX_CHECK_WAIT_MS;
	struct timespec poll = { 0, CHECK_POLL_MS * 1000000L };

	if (table == NULL)
		return false;
	for (;;) {
		struct check *c;

		shm_mutex_lock(&table->lock);
		c = find(f);
		if (c != NULL && c->state == CHECK_GOOD) {
			c->used = ++table->clock;
			shm_mutex_unlock(&table->lock);
			return true;
		}
		/* Nobody has it, or its checker is gone or slow: this process
		 * checks it (a slow checker's result, when it comes, is dropped). */
		if (c == NULL || proc_gone(c->pid) || time_mono_ms() >= deadline) {
			if (c == NULL)
				c = slot_for_new();
			if (c != NULL) {
				c->state = CHECK_CHECKING;
				c->pid = getpid();
				c->used = ++table->clock;
				c->file = *f;
			}
			shm_mutex_unlock(&table->lock);
			return false;
		}
		shm_mutex_unlock(&table->lock);
		nanosleep(&poll, NULL);
	}
}

void index_checks_done(const struct rindex_file *f, bool good)
{
	struct check *c;

	if (table == NULL)
		return;
	shm_mutex_lock(&table->lock);
	if ((c = find(f)) != NULL && c->state == CHECK_CHECKING && c->pid == getpid())
		c->state = good ? CHECK_GOOD : CHECK_FREE;
	shm_mutex_unlock(&table->lock);
}
