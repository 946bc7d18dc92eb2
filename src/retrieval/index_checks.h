/* index_checks.h - the index files this serve's workers already checked
 * whole, so that each file is checked once, not once a worker.
 *
 * rindex_open compares an index file's checksum before it reads the file:
 * every byte, hundreds of megabytes for 100,000 snippets.  After a restart
 * every worker's first question of a dataset opened its file, and each of
 * them read all of it: eight workers, eight times the file.  The serve
 * master maps a table of checked files before it forks; a worker opening a
 * file another worker checked (the same device, inode, size, mtime and
 * ctime: a file written in place would differ) skips the checksum, and its
 * other checks (bounds, offsets, the document map) still run.  A worker
 * opening a file another worker is checking waits for that result instead
 * of reading the file too, and checks it itself should that worker die or
 * take longer than INDEX_CHECK_WAIT_MS.  Without the table (sluice work, the
 * tools, the unit tests but its own) every open checks. */
#ifndef SLUICE_INDEX_CHECKS_H
#define SLUICE_INDEX_CHECKS_H

#include <stdbool.h>

#include "retrieval/index.h"

#define INDEX_CHECKS_SLOTS 256
#define INDEX_CHECK_WAIT_MS 30000

/* In the serve master, before it forks.  0, or -1 (errno set). */
int index_checks_init(void);

/* Whether a process of this table checked f whole and found it good.
 * false: the caller checks it, then says what it found with
 * index_checks_done (others opening f wait for that). */
bool index_checks_known(const struct rindex_file *f);
void index_checks_done(const struct rindex_file *f, bool good);

#endif
