/* shm.c - shared mappings and robust process-shared mutexes (see shm.h). */
#include <errno.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/shm.h"

void *shm_map(size_t size)
{
	void *p;

	if (size == 0) {
		errno = EINVAL;
		return NULL;
	}
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int shm_mutex_init(pthread_mutex_t *m)
{
	pthread_mutexattr_t at;
	int rc = -1;

	if (pthread_mutexattr_init(&at) != 0)
		return -1;
	if (pthread_mutexattr_setpshared(&at, PTHREAD_PROCESS_SHARED) == 0 &&
	    pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST) == 0 &&
	    pthread_mutex_init(m, &at) == 0)
		rc = 0;
	pthread_mutexattr_destroy(&at);
	return rc;
}

void shm_mutex_lock(pthread_mutex_t *m)
{
	/* The holder died: what it guarded is a few words, still usable. */
	if (pthread_mutex_lock(m) == EOWNERDEAD)
		pthread_mutex_consistent(m);
}

void shm_mutex_unlock(pthread_mutex_t *m)
{
	pthread_mutex_unlock(m);
}

/* Not FUTEX_PRIVATE_FLAG: the word is shared between processes. */
void shm_sleep(const uint32_t *word, uint32_t seen, int ms)
{
	struct timespec rel = { ms / 1000, (long)(ms % 1000) * 1000000L };

	syscall(SYS_futex, word, FUTEX_WAIT, seen, &rel, NULL, 0);
}

void shm_wake(uint32_t *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, 1, NULL, NULL, 0);
}
