/* thread.h - the helper threads sluice starts.
 *
 * sluice's processes are single-threaded but for a helper that overlaps
 * CPU work with waiting on MariaDB or the disk: ingestion's preparing
 * thread, which chunks and embeds a group while the group before is
 * stored (ingest.c), and the index file's, which builds the BM25 indexes
 * while the rows' sections are written (index.c); and the parts of a
 * pass over the codes that a batch of questions shares (vec_codes.c).
 * A helper touches only what it was handed (and the tokeniser's
 * per-process state, see tokenize.h), and its starter joins it before
 * using any of that again. */
#ifndef SLUICE_THREAD_H
#define SLUICE_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/* Start fn(arg) on a new thread with every signal blocked, so that signals
 * (SIGTERM: work_stopping) keep reaching the main thread.  false when no
 * thread could be made: the caller then runs fn itself. */
bool thread_start(pthread_t *th, void *(*fn)(void *), void *arg);

#endif
