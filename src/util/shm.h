/* shm.h - memory that processes forked afterwards share, and a lock in it.
 *
 * The serve master maps such a region before it forks its workers; each
 * worker then reads and writes the same pages.  The lock is a robust,
 * process-shared mutex: a worker killed while holding it does not wedge
 * the others (the next locker takes it over). */
#ifndef SLUICE_SHM_H
#define SLUICE_SHM_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* size zero-filled bytes of an anonymous MAP_SHARED mapping; NULL on
 * failure (errno set).  Released with munmap(p, size). */
void *shm_map(size_t size);
/* 0, or -1 when the mutex could not be made process-shared and robust. */
int shm_mutex_init(pthread_mutex_t *m);
void shm_mutex_lock(pthread_mutex_t *m);
void shm_mutex_unlock(pthread_mutex_t *m);

/* A wake aimed at one process, through a word in such a region (a futex).
 * shm_sleep() returns at once if *word is no longer seen, else when
 * shm_wake(word) is called or after ms, and early on a signal: the caller
 * looks again either way.  Read seen and change *word under the region's
 * lock, and call shm_wake() once it is released, so that the woken
 * process does not wait for the lock. */
void shm_sleep(const uint32_t *word, uint32_t seen, int ms);
void shm_wake(uint32_t *word);

#endif
